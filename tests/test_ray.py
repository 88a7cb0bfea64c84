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

from agents.base import _REGISTRY, Agent, parse_agent, register

# one Ray start per module: under pytest-xdist, `--dist loadgroup` keeps these tests on one worker.
# Only the tests that need Ray import it (the `cluster` and `ray_module` fixtures): the
# settings checks below run without it. A skip here fails a CI run (tests/conftest.py).
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
def ray_module():
    return pytest.importorskip("ray", exc_type=ImportError)


@pytest.fixture(scope="module")
def cluster(ray_module):
    ray = ray_module
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


def test_pool_workers_pin_their_threads_rerun_lost_jobs_and_give_up_clearly(cluster, ray_module):
    import functools

    from evaluation.ray_executor import THREAD_VARS, RayJobPool

    ray_module.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test
    with RayJobPool(functools.partial(identity_factory, thread_settings), size=1) as pool:
        ((_, (env, numba_threads, torch_threads)),) = pool.map_unordered([0])
    assert env == {var: "1" for var in THREAD_VARS} and numba_threads == 1 and torch_threads == 1

    with RayJobPool(functools.partial(identity_factory, die_on_negative), size=1, max_retries=1) as pool:
        results = {}
        with pytest.raises(RuntimeError, match=r"job -1 was lost 2 time\(s\): its Ray worker died"):
            # job 0.0 returns just before the next job kills the actor: a result, not a loss
            for job, result in pool.map_unordered([0.0, -1, 3]):
                results[job] = result
        assert results.get(0.0) == 0.0 and pool.replaced == 2
        assert dict(pool.map_unordered([0.0, 1])) == {0.0: 0.0, 1: 1}  # the pool goes on

    with RayJobPool(functools.partial(identity_factory, die_on_negative), size=1, max_retries=0,
                    call_timeout=4) as pool:
        with pytest.raises(RuntimeError, match=r"job 60 was lost 1 time\(s\): it ran more than 4 s"):
            list(pool.map_unordered([60]))


# --- arguments ------------------------------------------------------------------------------------
def test_executor_settings_are_checked(tmp_path):
    from evaluation import EvalConfig

    with pytest.raises(ValueError, match="config key 'executor' must be 'process' or 'ray'"):
        config(tmp_path, "x", executor="dask").validate()
    with pytest.raises(ValueError, match="ray_address .* is for executor: ray"):
        config(tmp_path, "x", executor="process", ray_address="auto").validate()
    with pytest.raises(ValueError, match="must be a string"):
        EvalConfig.from_dict({"ray_address": 6379})


def test_executor_arguments_are_checked(ray_module):
    from evaluation.ray_executor import RayJobPool, check_reachable

    with pytest.raises(ValueError, match="nothing answers at the Ray address"):
        check_reachable("127.0.0.1:1", timeout=5)
    with pytest.raises(ValueError, match="size must be an integer >= 1"):
        RayJobPool(identity_factory, size=0)
    with pytest.raises(TypeError, match="factory must be a callable"):
        RayJobPool("not callable", size=1)


def test_cli_spells_the_executor_options():
    from evaluation import cli as evaluate

    args = evaluate.run_parser().parse_args(["--agents", "a", "b", "--executor", "ray", "--ray-address", "auto"])
    assert args.executor == "ray" and args.ray_address == "auto"
    with pytest.raises(SystemExit):
        evaluate.run_parser().parse_args(["--executor", "threads"])


# --- self-play --------------------------------------------------------------------------------------
def stored_chunks(folder: Path) -> dict[str, dict]:
    """Every stored chunk of a generation's folder: {file name: {field: array}}."""
    import numpy as np

    out = {}
    for path in sorted(folder.glob("chunk_*.npz")):
        with np.load(path, allow_pickle=False) as data:
            out[path.name] = {key: data[key] for key in data.files}
    return out


def assert_same_chunks(a: dict, b: dict) -> None:
    import numpy as np

    assert a.keys() == b.keys() and a
    for name in a:
        assert a[name].keys() == b[name].keys()
        for key in a[name]:
            np.testing.assert_array_equal(a[name][key], b[name][key], err_msg=f"{name}: {key}")


def tiny_selfplay_config(tmp_path, **changes) -> Path:
    import yaml

    from tests.test_selfplay import TINY

    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["selfplay"].update(changes)
    path = tmp_path / f"tiny_{len(list(tmp_path.glob('tiny_*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow
def test_selfplay_on_ray_stores_the_local_games_and_resumes_a_local_kill(cluster, tmp_path):
    """Two generations (the warm start, then generation 0's network-guided search): the
    local run, and a Ray run killed during generation 1 after its first chunk (played
    locally) and resumed on Ray. The Ray run plays only the missing chunk, and every stored
    chunk equals the local run's."""
    from training import cli as train
    from training import teacher
    from training.config import load_config
    from training.selfplay import generation_file

    local = train.main(["--config", str(tiny_selfplay_config(tmp_path)), "--runs", str(tmp_path / "local")])
    config = tiny_selfplay_config(tmp_path, executor="ray", ray_address=cluster, workers=2)
    run = train.main(["--config", str(config), "--runs", str(tmp_path / "ray"), "--set", "iterations=1"])
    assert_same_chunks(stored_chunks(run / "games" / "gen_000"), stored_chunks(local / "games" / "gen_000"))

    cfg = load_config(run / "config.yaml")
    spec = f"ismcts:net={generation_file(run, 0)},{cfg.selfplay.search}"
    teacher.teacher_games(parse_agent(spec), 16, cfg.seed * 10_007 + 1, 2, workers=1, progress=False,
                          store=run / "games" / "gen_001")  # the first chunk, then the kill
    (first,) = (run / "games" / "gen_001").glob("chunk_*.npz")
    kept = first.stat().st_mtime_ns
    train.main(["--resume", str(run), "--set", "iterations=2"])
    assert first.stat().st_mtime_ns == kept  # loaded, not played again
    assert generation_file(run, 1).is_file()
    for g in ("gen_000", "gen_001"):
        assert_same_chunks(stored_chunks(run / "games" / g), stored_chunks(local / "games" / g))


class ChunkPlayerKilledOnce:
    """A chunk handler whose first chunk, if the file `trigger` exists, kills its own Ray
    worker after playing (the result never comes back: a worker lost mid-chunk)."""

    def __init__(self, trigger: str, copies: dict):
        from training.teacher import ChunkPlayer

        self.player, self.trigger = ChunkPlayer(copies), trigger

    def __call__(self, job):
        games = self.player(job)
        try:
            os.unlink(self.trigger)
        except FileNotFoundError:
            return games
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_selfplay_worker_lost_mid_chunk_loses_no_chunk(cluster, ray_module, tmp_path, monkeypatch):
    import functools

    from training import teacher

    ray_module.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test
    trigger = tmp_path / "kill-once"
    trigger.touch()
    monkeypatch.setattr(teacher, "ChunkPlayer", functools.partial(ChunkPlayerKilledOnce, str(trigger)))
    args = (parse_agent("ismcts:iterations=4"), teacher.GAMES_PER_CHUNK + 4, 5, 2)
    on_ray = teacher.teacher_games(*args, workers=2, progress=False, store=tmp_path / "ray", executor="ray")
    assert not trigger.exists()  # a worker was killed, and its chunk played again
    local = teacher.teacher_games(*args, workers=1, progress=False, store=tmp_path / "local")
    assert_same_chunks(stored_chunks(tmp_path / "ray"), stored_chunks(tmp_path / "local"))
    import numpy as np

    np.testing.assert_array_equal(on_ray.policy, local.policy)
    np.testing.assert_array_equal(on_ray.final_info, local.final_info)


@pytest.mark.slow
def test_the_ladder_plays_its_matches_on_ray_as_locally(cluster, tmp_path):
    from evaluation.ladder import Ladder, load_ladder_games

    def games(executor, workers):
        ladder = Ladder(tmp_path / executor, anchors=["random", "first"], games_per_pair=2, seed=4,
                        workers=workers, imports=[HELPERS], executor=executor, bootstrap=20)
        ladder.add_generation(0, parse_agent("greedy"), 0.0)
        return sorted((g["opponent"], g["game"], g["seeds"], g["scores"], g["moves"], g["ranking"])
                      for g in load_ladder_games(tmp_path / executor).games)

    on_ray = games("ray", 2)
    assert len(on_ray) == 4 and on_ray == games("process", 1)
    with pytest.raises(ValueError, match="ray_address .* is for executor: ray"):
        Ladder(tmp_path / "x", anchors=["random"], ray_address="auto")


def test_selfplay_executor_settings_are_checked(tmp_path):
    from training import teacher
    from training.config import load_config
    from training.teacher import with_local_network

    with pytest.raises(ValueError, match="config key 'selfplay.executor' must be 'process' or 'ray'"):
        load_config(tiny_selfplay_config(tmp_path, executor="dask"))
    with pytest.raises(ValueError, match="selfplay.ray_address.*is for selfplay.executor: ray"):
        load_config(tiny_selfplay_config(tmp_path, ray_address="auto"))
    with pytest.raises(ValueError, match="must not be empty"):
        load_config(tiny_selfplay_config(tmp_path, executor="ray", ray_address=" "))
    cfg = load_config(tiny_selfplay_config(tmp_path, executor="ray", ray_address="auto"))
    assert (cfg.selfplay.executor, cfg.selfplay.ray_address) == ("ray", "auto")
    assert load_config(tiny_selfplay_config(tmp_path)).selfplay.ray_address is None
    with pytest.raises(ValueError, match="executor must be 'process' or 'ray'"):
        teacher.teacher_games("ismcts:iterations=4", 1, 0, executor="dask", store=tmp_path / "none")
    assert not (tmp_path / "none").exists()
    from agents.search.mcts import GuidedSearch
    from agents.settings import SearchSettings

    settings = SearchSettings(iterations=8, prior=3.0)
    assert with_local_network(GuidedSearch("/a/g.pt", settings), {"/a/g.pt": "/tmp/x.pt"}) \
        == GuidedSearch("/tmp/x.pt", settings)
    assert with_local_network("ismcts:iterations=8", {}) == "ismcts:iterations=8"
