"""The package's metadata and its optional parts (pyproject.toml, engine/extras.py,
agents/shipped.py); tests/test_wheel.py installs the wheel itself."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agents import shipped
from engine import extras

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PRODUCT = ("engine", "env", "agents", "evaluation", "training", "humanplay")


def test_the_wheel_lists_every_package_of_the_product():
    """pyproject names the packages one by one (two of them are data folders mapped in):
    a new subpackage that is not listed would be missing from the wheel."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for top in PRODUCT for p in (ROOT / top).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert folders == listed - {"agents.shipped_models", "agents.shipped_configs"}
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"agents.shipped_models": "models",
                                                              "agents.shipped_configs": "configs"}


def test_the_licence_and_the_console_commands():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert project["scripts"] == {"twentyfourseven-train": "training.cli:run",
                                  "twentyfourseven-evaluate": "evaluation.cli:main",
                                  "twentyfourseven-play": "humanplay.cli:main"}
    assert project["version"] in (ROOT / "CHANGELOG.md").read_text()


def test_the_core_names_no_library_of_an_extra_and_every_extra_is_known():
    core = " ".join(PYPROJECT["project"]["dependencies"]).lower()
    for library in ("starlette", "uvicorn", "httptools", "ray", "tensorboard", "matplotlib", "open-spiel", "stable-baselines3"):
        assert library not in core
    named = {extra for extra in extras.EXTRAS.values()}
    assert named <= set(PYPROJECT["project"]["optional-dependencies"])


def test_a_missing_library_is_one_line_naming_its_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    with pytest.raises(extras.MissingExtra) as caught:
        extras.require("matplotlib", "the plots")
    assert str(caught.value) == 'the plots: matplotlib is not installed; pip install "twentyfourseven[plots]"'
    assert extras.optional("matplotlib", "a picture nobody asked for") is None
    assert extras.optional("matplotlib", "a picture nobody asked for") is None  # said once
    assert capsys.readouterr().err.splitlines() == [
        'skipped a picture nobody asked for: matplotlib is not installed; pip install "twentyfourseven[plots]"']
    with pytest.raises(ImportError) as other:  # a module of no extra is a plain ImportError
        extras.require("no_such_module_anywhere", "x")
    assert not isinstance(other.value, extras.MissingExtra)


def test_the_web_game_without_its_extra_says_which_one():
    code = ("import sys; sys.modules['starlette'] = None; sys.argv = ['play.py']; "
            "from humanplay.cli import main; sys.exit(main(['--web', '--port', '0']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == 'error: the web game (--web): starlette is not installed; pip install "twentyfourseven[web]"'


def test_a_config_by_path_or_by_its_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # far from the checkout's configs/
    assert shipped.config_file("quickstart") == shipped.folder("configs") / "quickstart.yaml"
    assert shipped.config_file("quickstart.yaml").is_file()
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\n")
    assert shipped.config_file(own) == own and shipped.config_file("mine.yaml") == Path("mine.yaml")
    with pytest.raises(ValueError, match="config file not found: nothere.*quickstart, selfplay_2p"):
        shipped.config_file("nothere")
    with pytest.raises(ValueError, match="config file not found"):
        shipped.config_file("some/folder/quickstart.yaml")
    with pytest.raises(ValueError, match="no shipped files of kind"):
        shipped.folder("weights")
    assert {"selfplay_2p.pt", "selfplay_4p.pt", "selfplay_team.pt"} <= {p.name for p in shipped.folder("models").iterdir()}


def test_the_scripts_name_the_command_the_user_typed(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/twentyfourseven-train"])
    assert extras.command("evaluate") == "twentyfourseven-evaluate"
    monkeypatch.setattr(sys, "argv", ["train.py"])
    assert extras.command("evaluate") == "python evaluate.py"
