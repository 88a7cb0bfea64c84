"""Shared test setup: with pytest-xdist, compile the numba kernels once before the workers
start, instead of once in every worker; in CI, a skipped test fails the run.

On a cold numba cache every xdist worker would compile every kernel its tests reach, the
same kernels in each worker. Here the controller first runs two warm-up processes side by
side (engine and envs; agents), which compile the kernels into numba's on-disk cache; the
workers then load them from it. Runs without ``-n`` (one process) skip this: they compile
only what their tests reach. A warm-up that fails is reported and the tests compile for
themselves.

No silent skips in CI: with the ``[test]`` extras installed (and Debian's chromium, which
.ci/run installs) every test runs, so a skip there means a broken install (an
``importorskip`` whose import failed, a browser that is missing; every ``importorskip`` passes
``exc_type=ImportError``, so a module that is installed but broken skips too, as it did
before pytest 9.1). When the environment
variable ``CI`` is ``true``, ``1`` or ``yes`` (CI services set it; .ci/run does), every skip is
listed at the end and the run exits with status 1 even if all else passed. Outside CI a
skip stays a skip, and ``-rs`` (pyproject.toml) prints its reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WARM_UP_TIMEOUT = 1200  # seconds; a cold warm-up takes about one minute on 2 cores

# Each group runs in its own process; together they reach every cached kernel the tests use.
WARM_UP = {
    "engine and envs": """
import numpy as np, gymnasium, engine, env
from engine.batch import BatchState, play_random_games_parallel, play_random_games_serial
from env.observation import encode
from training.opponents import batch_greedy_actions
g = engine.GameState.new(2, seed=0)
g.step(g.legal_actions()[0]); g.legal_action_mask(); g.rewards(); g.ranking(); encode(g, 0)
b = BatchState.new(4, 2, seed=0)
batch_greedy_actions(b.grid, b.info, np.ones(4, dtype=np.bool_), np.zeros(4, dtype=np.int64))
b.step(b.legal_mask().argmax(axis=1)); b.random_playout(0)
play_random_games_serial(2, 0, 2); play_random_games_parallel(4, 0, 2, 2)
e = env.env(); e.reset(seed=0); e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
gymnasium.make("TwentyFourSeven-v0").reset(seed=0)
v = gymnasium.make_vec("TwentyFourSeven-v0", num_envs=4)
obs, _ = v.reset(seed=0)
v.step(obs["action_mask"].argmax(axis=1))
""",
    "agents": """
import agents, engine
from agents.networks.features import exposure
model = "tests/fixtures/net_2p.pt"
for spec in ["greedy", "ismcts", "pimc", "cheat", f"ismcts:net={model}",
             "br:target=greedy"]:
    agents.make(spec, seed=0).warm_up()
exposure(*engine.GameState.new(2, seed=0).arrays)
""",
}


def skips_fail_the_run() -> bool:
    """Whether a skip fails the run (see the module doc)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config) -> bool:
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


def warm_up_kernels(report) -> None:
    """Run the `WARM_UP` groups in parallel processes over this checkout; `report(line)`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    report(f"warming numba's kernel cache in {len(WARM_UP)} processes (slow only on a cold cache) ...")
    procs = {name: subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, code in WARM_UP.items()}
    for name, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=max(1.0, WARM_UP_TIMEOUT - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            report(f"  {name}: still compiling after {WARM_UP_TIMEOUT} s, stopped; the tests compile it")
            continue
        if proc.returncode != 0:
            report(f"  {name}: warm-up failed (the tests compile for themselves):\n{err.strip()[-2000:]}")
        else:
            report(f"  {name}: ready after {time.perf_counter() - start:.0f} s")


def pytest_configure(config):
    if not _is_xdist_controller(config) or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    capture = config.pluginmanager.getplugin("capturemanager")

    def report(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(line, file=sys.stderr, flush=True)

    warm_up_kernels(report)


# --- no silent skips in CI ---------------------------------------------------------------------
# Under pytest-xdist the controller receives every worker's reports (skipped collections
# included), so counting here, in the process that ends the run, sees them all.
_skips: list[str] = []


def _note_skip(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):  # an xfail is reported as a skip
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
        _skips.append(f"{report.nodeid or report.fspath}: {reason}")


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):
    _note_skip(report)  # a module-level importorskip skips its whole file at collection


def pytest_terminal_summary(terminalreporter):
    if _skips and skips_fail_the_run() and not _is_xdist_worker(terminalreporter.config):
        terminalreporter.section("skipped tests fail a CI run", sep="=", red=True, bold=True)
        terminalreporter.line("CI is set and every test must run here (a skip means a broken install):")
        for line in _skips:
            terminalreporter.line(f"  {line}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if _skips and skips_fail_the_run() and not _is_xdist_worker(session.config) \
            and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
