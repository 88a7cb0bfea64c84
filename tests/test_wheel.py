"""The package as a user installs it: the wheel, not editable, in a new virtual environment,
run from an empty directory far from this checkout (README, "Install").

A core install plays `selfplay` (its networks found as package data), trains the quickstart
(its config found by name) and pulls none of the extras' libraries; a feature whose extra is
missing is a one-line error naming it; with the [web] extra the web game serves a game.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the libraries of the extras, none of which a core install may bring
EXTRAS_LIBRARIES = ("starlette", "uvicorn", "httptools", "ray", "tensorboard", "matplotlib")
# what a wheel is built from: the project less what is not the product
NOT_BUILT = (".git", "build", "dist", "runs", "results", "played", "*.egg-info", "__pycache__", ".venv", "tests",
             "research", "benchmarks", "notebooks", ".pytest_cache")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]  # one install, its tests in order


@dataclass
class Install:
    wheel: Path
    bin: Path  # the virtual environment's scripts
    home: Path  # an empty directory: the working directory of every command

    def run(self, *command: str, timeout: float = 300) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NUMBA_CACHE_DIR")}
        return subprocess.run([str(self.bin / command[0]), *command[1:]], cwd=self.home, env=env,
                              capture_output=True, text=True, timeout=timeout)

    def python(self, code: str) -> str:
        done = self.run("python", "-c", code)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Install:
    """Build the wheel from a copy of the sources, install it with torch (CPU) into a new
    virtual environment, without any extra."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_BUILT))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(work / "dist"), str(source)], check=True, timeout=300)
    (wheel,) = (work / "dist").glob("twentyfourseven-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=120)
    venv_pip = [str(work / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*venv_pip, "install", "torch==2.13.0", str(wheel)], check=True, timeout=600)
    home = work / "empty"
    home.mkdir()
    return Install(wheel, work / "venv" / "bin", home)


def test_a_core_install_pulls_no_extra_and_names_its_licence(install):
    found = install.python("import importlib.util as u; print(' '.join(m for m in %r if u.find_spec(m)))"
                           % (EXTRAS_LIBRARIES,))
    assert found == "", f"a core install brought {found}"
    meta = json.loads(install.python("import importlib.metadata as m, json; d = m.metadata('twentyfourseven'); "
                                     "print(json.dumps([d['License-Expression'], d.get_all('License-File')]))"))
    assert meta == ["Apache-2.0", ["LICENSE"]]
    assert install.python("import agents.shipped as s; print(s.folder('models'))").endswith("agents/shipped_models")


def test_selfplay_plays_from_an_empty_directory(install):
    done = install.run("twentyfourseven-evaluate", "--agents", "greedy", "selfplay", "--games", "4", "--out", "out")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len((install.home / "out" / "games.csv").read_text().splitlines()) == 1 + 4
    assert "skipped the tournament's plots: matplotlib is not installed" in done.stderr  # one line, no traceback
    assert "Traceback" not in done.stderr


def test_the_quickstart_trains_from_its_shipped_config(install):
    done = install.run("twentyfourseven-train", "--config", "quickstart", "--set", "iterations=1", "--runs", "runs")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (install.home / "runs" / "quickstart" / "best.pt").is_file()
    assert "next:" in done.stdout and "twentyfourseven-evaluate --agents checkpoint:runs/quickstart/best.pt" in done.stdout


def test_a_missing_extra_is_one_line_naming_it(install):
    done = install.run("twentyfourseven-play", "--web", "--port", "0")
    assert done.returncode == 2
    assert done.stderr.strip() == ('error: the web game (--web): starlette is not installed; '
                                   'pip install "twentyfourseven[web]"')


def test_with_the_web_extra_the_web_game_serves_a_game(install):
    install.run("python", "-m", "pip", "--disable-pip-version-check", "-q", "install", f"{install.wheel}[web]",
                timeout=600).check_returncode()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(install.home / "server.log", "wb")
    server = subprocess.Popen([str(install.bin / "twentyfourseven-play"), "--web", "--port", str(port),
                               "--workers", "1", "--hint", "greedy", "--save-dir", "played"],
                              cwd=install.home, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None, (install.home / "server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(base + "/api/ready", timeout=5):
                    break
            except OSError:  # not listening yet, or 503 while it warms up
                assert time.monotonic() < deadline, "the web game did not get ready"
                time.sleep(0.5)
        with urllib.request.urlopen(base + "/", timeout=30) as page:
            assert b"24/7" in page.read()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # its own cookie
        state = _post(browser, base + "/api/new", {"seed": 3})
        action = 490 if state["can_pass"] else next(int(c) * 10 + v[0] - 1 for c, v in state["legal"].items())
        after = _post(browser, base + "/api/move", {"game": state["game"], "action": action})
        assert after["game"] == state["game"] and after != state
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def _post(browser, url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with browser.open(request, timeout=120) as answer:
        return json.loads(answer.read())
