"""Tournaments on Ray (evaluation/ray_executor.py), on a real local Ray instance started
once for the module: the same games as a serial run, resume, workers that die or hang.

Tournament workers load this file with ``--import`` for its agents (`killer`, `stall`).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agents.base import _REGISTRY, Agent, register

ray = pytest.importorskip("ray")
# one Ray start per module: under pytest-xdist, `--dist loadgroup` keeps these tests on one worker
pytestmark = pytest.mark.xdist_group("ray")

ROOT = Path(__file__).resolve().parents[1]
THIS = str(Path(__file__).resolve())
HELPERS = str(ROOT / "tests" / "test_evaluate_agents.py")  # registers "first"


def _register(name):
    def wrap(cls):
        return _REGISTRY[name] if name in _REGISTRY else register(name)(cls)

    return wrap


@_register("killer")
class ActorKillingAgent(Agent):
    """Plays the lowest legal action. If the file `trigger` exists, the first instance to
    delete it kills the process that started its own (a Ray actor: what a lost node looks
    like) and then itself; every other move, and every rerun, plays normally."""

    def __init__(self, trigger: str = "") -> None:
        super().__init__()
        self.trigger = trigger

    def act(self, observation, view) -> int:
        if self.trigger:
            try:
                os.unlink(self.trigger)
            except FileNotFoundError:
                pass
            else:
                os.kill(os.getppid(), signal.SIGKILL)
                os._exit(1)
        return int(view.legal_actions()[0])


@_register("stall")
class StallingAgent(Agent):
    """Never returns from act()."""

    def act(self, observation, view) -> int:
        threading.Event().wait()
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def config(tmp_path, name, **kw):
    from evaluation import EvalConfig

    base = dict(agents=["random", "first", "greedy"], games=2, seed=3, workers=2, executor="ray",
                out=str(tmp_path / name), bootstrap=20, plots=False, progress=False, imports=[HELPERS, THIS])
    base.update(kw)
    return EvalConfig.from_dict(base)


def run(cfg):
    from evaluation import run_evaluation

    return run_evaluation(cfg, echo=lambda *a: None)


def serial_csv(tmp_path, monkeypatch, name, **kw) -> str:
    """games.csv of the same tournament played in this process, one game after another."""
    import evaluation.run as run_module
    from evaluation.executor import SerialExecutor

    with monkeypatch.context() as patch:
        patch.setattr(run_module, "make_executor", lambda *a, **k: SerialExecutor([HELPERS, THIS]))
        cfg = config(tmp_path, name, executor="process", workers=1, **kw)
        run(cfg)
    return (Path(cfg.out) / "games.csv").read_text()


def journal_ids(cfg) -> list[int]:
    return [json.loads(line)["game"] for line in open(Path(cfg.out) / "games.jsonl")]


# --- tournaments --------------------------------------------------------------------------------
@pytest.mark.slow
def test_ray_plays_the_serial_games_reruns_a_lost_one_and_resumes(cluster, tmp_path, monkeypatch):
    """One actor is killed mid-game (the `killer` agent's first move); its game is played
    again and every other game is kept: the file is the serial run's. A run killed after
    two games (its journal cut mid-line) resumes to the same file."""
    trigger = tmp_path / "kill-once"
    trigger.touch()
    agents = ["random", "first", f"killer:trigger={trigger}"]
    cfg = config(tmp_path, "ray", agents=agents)
    res = run(cfg)
    assert not trigger.exists()  # an actor was killed...
    assert res["games"] == 6 and res["void_games"] == 0 and all(r["forfeits"] == 0 for r in res["ratings"].values())
    assert journal_ids(cfg) == list(range(6))  # ...and its game played again, once
    expected = serial_csv(tmp_path, monkeypatch, "serial", agents=agents)
    games_csv = Path(cfg.out) / "games.csv"
    assert games_csv.read_text() == expected

    journal = Path(cfg.out) / "games.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:2]) + lines[2][:20])
    games_csv.unlink()
    again = run(cfg)
    assert games_csv.read_text() == expected and again["ratings"] == res["ratings"]
    assert journal_ids(cfg) == list(range(6))


def test_a_move_that_never_returns_forfeits_on_ray_as_in_a_process(cluster, tmp_path):
    cfg = config(tmp_path, "ray", agents=["first", "stall"], move_time_limit=0.5)
    res = run(cfg)
    assert res["games"] == 2 and res["ratings"]["stall"]["forfeit_reasons"] == {"move_time_limit": 2}
    rows = list(csv.DictReader(open(Path(cfg.out) / "games.csv")))
    assert [(r["forfeit"], r["forfeit_reason"]) for r in rows] == [("1", "move_time_limit"), ("0", "move_time_limit")]
    journal = [json.loads(line) for line in open(Path(cfg.out) / "games.jsonl")]
    assert all("never came back" in g["error"] for g in journal)  # stopped by the actor's watchdog


@pytest.mark.slow
def test_a_killed_driver_resumes(cluster, tmp_path, monkeypatch):
    """evaluate.py on the running cluster, killed with SIGKILL after its first games; the
    same run again finishes with the games a serial run plays."""
    out = tmp_path / "ray"
    cmd = [sys.executable, str(ROOT / "evaluate.py"), "--agents", "first", "slowfirst", "--games", "8",
           "--seed", "3", "--workers", "2", "--executor", "ray", "--ray-address", cluster, "--out", str(out),
           "--bootstrap", "20", "--no-plots", "--no-progress", "--import", HELPERS, "--import", THIS]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / "games.jsonl"
    deadline = time.monotonic() + 300
    while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "no game finished in 300 s"
        time.sleep(0.1)
    proc.kill()
    proc.wait(30)
    kept = len(journal.read_text().splitlines())
    assert kept < 8
    # the dead driver's actors are gone, so the rerun on the same 2 CPUs gets its workers
    again = config(tmp_path, "ray", agents=["first", "slowfirst"], games=8)
    messages = []
    from evaluation import run_evaluation

    run_evaluation(again, echo=messages.append)
    assert any("resuming" in m for m in messages)
    expected = serial_csv(tmp_path, monkeypatch, "serial", agents=["first", "slowfirst"], games=8)
    assert (out / "games.csv").read_text() == expected


@_register("slowfirst")
class SlowFirstAgent(Agent):
    """The lowest legal action, a little slowly (so a run can be killed midway)."""

    def act(self, observation, view) -> int:
        time.sleep(0.05)
        return int(view.legal_actions()[0])


# --- the generic pool ---------------------------------------------------------------------------
def thread_settings(job):
    """What a pool worker's thread pools are limited to."""
    import numba
    import torch

    from evaluation.ray_executor import THREAD_VARS

    return {var: os.environ.get(var) for var in THREAD_VARS}, numba.config.NUMBA_NUM_THREADS, \
        torch.get_num_threads()


def die_on_negative(job):
    """Squares a job after sleeping that many seconds; a negative job kills its process."""
    if job < 0:
        os._exit(1)
    time.sleep(job)
    return job * job


def identity_factory(handler):
    return handler


def test_pool_workers_pin_their_threads_rerun_lost_jobs_and_give_up_clearly(cluster):
    import functools

    from evaluation.ray_executor import THREAD_VARS, RayJobPool

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test
    with RayJobPool(functools.partial(identity_factory, thread_settings), size=1) as pool:
        ((_, (env, numba_threads, torch_threads)),) = pool.map_unordered([0])
    assert env == {var: "1" for var in THREAD_VARS} and numba_threads == 1 and torch_threads == 1

    with RayJobPool(functools.partial(identity_factory, die_on_negative), size=1, max_retries=1) as pool:
        with pytest.raises(RuntimeError, match=r"job -1 was lost 2 time\(s\): its Ray worker died"):
            list(pool.map_unordered([2, -1, 3]))
        assert pool.replaced == 2
        assert dict(pool.map_unordered([0.0, 1])) == {0.0: 0.0, 1: 1}  # the pool goes on

    with RayJobPool(functools.partial(identity_factory, die_on_negative), size=1, max_retries=0,
                    call_timeout=4) as pool:
        with pytest.raises(RuntimeError, match=r"job 60 was lost 1 time\(s\): it ran more than 4 s"):
            list(pool.map_unordered([60]))


# --- arguments ------------------------------------------------------------------------------------
def test_executor_arguments_are_checked(tmp_path):
    from evaluation import EvalConfig
    from evaluation.ray_executor import RayJobPool, check_reachable

    with pytest.raises(ValueError, match="executor must be one of"):
        config(tmp_path, "x", executor="dask").validate()
    with pytest.raises(ValueError, match="ray_address .* is for executor: ray"):
        config(tmp_path, "x", executor="process", ray_address="auto").validate()
    with pytest.raises(ValueError, match="must be a string"):
        EvalConfig.from_dict({"ray_address": 6379})
    with pytest.raises(ValueError, match="nothing answers at the Ray address"):
        check_reachable("127.0.0.1:1", timeout=5)
    with pytest.raises(ValueError, match="size must be an integer >= 1"):
        RayJobPool(identity_factory, size=0)
    with pytest.raises(TypeError, match="factory must be a callable"):
        RayJobPool("not callable", size=1)


def test_cli_spells_the_executor_options():
    import evaluate

    args = evaluate.run_parser().parse_args(["--agents", "a", "b", "--executor", "ray", "--ray-address", "auto"])
    assert args.executor == "ray" and args.ray_address == "auto"
    with pytest.raises(SystemExit):
        evaluate.run_parser().parse_args(["--executor", "threads"])
