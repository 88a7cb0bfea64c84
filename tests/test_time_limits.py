"""No agent can stall a run: agent parameters are checked in one place before anything
is built (agents.check_spec / agents.make), and tournaments forfeit a seat that goes
over the per-move or per-game time limit, even one that never returns."""

from __future__ import annotations

import csv
import functools
import json
import os
import threading
import time
from pathlib import Path

import pytest

import agents
from agents.base import _REGISTRY, Agent, register
from agents.play import TimeLimits, play_game
from engine import GameState, random_deal
from engine.view import PlayerView

ROOT = Path(__file__).resolve().parents[1]
THIS = str(Path(__file__).resolve())  # tournament workers import this file for its agents
HELPERS = str(ROOT / "tests" / "test_evaluate_agents.py")  # registers "first"
NET = str(ROOT / "tests" / "fixtures" / "net_2p.pt")
BAD_TIMES = ["nan", "inf", "-1", "0", "-inf"]


def _register(name):
    def wrap(cls):
        return _REGISTRY[name] if name in _REGISTRY else register(name)(cls)

    return wrap


@_register("hang")
class HangingAgent(Agent):
    """Never returns from act(): what a stuck numba kernel looks like from outside."""

    def act(self, observation, view) -> int:
        threading.Event().wait()
        raise AssertionError("unreachable")


@_register("slow")
class SlowAgent(Agent):
    """Plays the lowest legal action after sleeping `seconds` (it always comes back)."""

    def __init__(self, seconds: float = 0.5) -> None:
        super().__init__()
        self.seconds = seconds

    def act(self, observation, view) -> int:
        time.sleep(self.seconds)
        return int(view.legal_actions()[0])


@_register("vanish")
class VanishingAgent(Agent):
    """Kills its own process on its first move (a segfault in a kernel, the OOM killer)."""

    def act(self, observation, view) -> int:
        os._exit(3)


# --- parameters: one rule, one message, for every agent -------------------------------------------
@pytest.mark.parametrize("time", BAD_TIMES)
@pytest.mark.parametrize("base", ["ismcts:", "pimc:", "cheat:", "br:target=greedy,", f"ismcts:net={NET},"])
def test_a_time_budget_must_be_finite_and_positive(base, time):
    spec = f"{base}time={time}"
    for check in (agents.check_spec, agents.make):
        with pytest.raises(ValueError, match=r"bad agent spec .*: time must be a finite number of seconds > 0"):
            check(spec)


@pytest.mark.parametrize("spec, message", [
    (f"ismcts:net={NET},iterations=0", "iterations must be a positive integer"),
    (f"ismcts:net={NET},iterations=2.5", "iterations must be a positive integer"),
    (f"ismcts:net={NET},c=-1", "c must be a finite non-negative number"),
    (f"ismcts:net={NET},c=nan", "c must be a finite"),
    (f"ismcts:net={NET},expand=sideways", "expand must be one of greedy, random"),
    (f"ismcts:net={NET},evaluator=3", "evaluator must be true or false"),
    ("ismcts:evaluator=false", "parameters of a network-guided search: give net=PATH"),
    (f"alphazero:{NET}", "replaced by ismcts:net=PATH"),
    (f"checkpoint:{NET},temperature=nan", "temperature must be a finite non-negative number"),
    (f"checkpoint:{NET},temperature=-1", "temperature must be a finite non-negative number"),
    ("ismcts:iterations=nan", "iterations must be a positive integer"),
    ("ismcts:c=inf", "c must be a finite non-negative number"),
    ("ismcts:rollout=nope", "rollout=nope was retired: use epsilon=0"),
    ("policy:epsilon=nan", "epsilon must be a finite non-negative number"),
    ("policy:epsilon=1.5", r"epsilon must be in \[0, 1\]"),
    ("pimc:determinizations=50,iterations=10", r"iterations \(10\) must be at least determinizations \(50\)"),
    ("ismcts:time=fast", "time must be a finite number of seconds"),
])
def test_bad_parameters_are_named_before_the_agent_is_built(spec, message):
    for check in (agents.check_spec, agents.make):
        with pytest.raises(ValueError, match=message):
            check(spec)


def test_check_spec_checks_checkpoint_files_without_building_the_agent(tmp_path, monkeypatch):
    from agents.search.mcts import ISMCTSAgent

    @functools.wraps(ISMCTSAgent.__init__)  # keeps the signature check_spec binds to
    def never(*args, **kwargs):
        raise AssertionError("check_spec built the agent")

    monkeypatch.setattr(ISMCTSAgent, "__init__", never)
    agents.check_spec(f"ismcts:net={NET},time=0.5,prior=1")
    agents.check_spec("ismcts:time=0.25")
    missing = str(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match=f"bad agent spec 'ismcts:net={missing}': checkpoint not found"):
        agents.check_spec(f"ismcts:net={missing}")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"bad agent spec 'checkpoint:.*junk\.pt'"):
        agents.check_spec(f"checkpoint:{junk}")
    with pytest.raises(ValueError, match="unknown agent 'nosuch'"):
        agents.check_spec("nosuch:time=1")
    with pytest.raises(ValueError, match="bad parameters in agent spec"):
        agents.check_spec("greedy:time=1")


def test_a_good_time_budget_is_kept():
    assert agents.make("ismcts:time=1").time == 1.0
    assert agents.make("ismcts:time=none").time is None
    assert agents.make("pimc:time=0.5,determinizations=4").time == 0.5


# --- the game loop: a late move forfeits ------------------------------------------------------------
def first_agent():
    """The `first` agent, its kernels loaded: its moves take microseconds, but the first
    legal-move query of a process loads engine kernels (can be a second on a loaded
    machine), which would put it over the short limits below instead of the slow agent."""
    from evaluation.executor import load_plugins

    load_plugins([HELPERS])
    agent = agents.make("first")
    agent.act(None, PlayerView(GameState.from_deal(random_deal(0), 2), 0))
    return agent


# The limits leave the fast seat (`first`, microseconds a move) a margin of a quarter of a
# second a move, which a loaded 2-core machine does not take from it, and put the slow
# seat's sleep well past its limit.
def test_a_move_over_the_move_limit_forfeits_in_the_game_loop():
    rec = play_game([first_agent(), agents.make("slow:seconds=0.6")], random_deal(1), 2,
                    limits=TimeLimits(move=0.25))
    assert rec.forfeit == 1 and rec.forfeit_reason == "move_time_limit"
    assert rec.error.startswith("move time limit: seat 1 (slow:seconds=0.6) took more than 0.25 s")
    assert "the move took" in rec.error and rec.ranking == [0, 1] and rec.rewards == [1.0, -1.0]
    assert len(rec.actions) == 1  # seat 0 moved; seat 1's late move was not played


def test_a_seat_over_its_game_clock_forfeits():
    rec = play_game([agents.make("slow:seconds=0.25"), first_agent()], random_deal(2), 2,
                    limits=TimeLimits(move=30, game=0.6))
    assert rec.forfeit == 0 and rec.forfeit_reason == "game_time_limit"
    assert rec.error.startswith("game time limit: seat 0 (slow:seconds=0.25) took more than")
    # seat 0's third move would bring its clock to 0.75 s: it had one or (usually) two moves
    assert 2 <= len(rec.actions) <= 4


def test_time_limits_are_checked():
    for bad in (float("nan"), float("inf"), 0, -1, "1"):
        with pytest.raises(ValueError, match="time limit must be a finite number of seconds > 0"):
            TimeLimits(move=bad)
        with pytest.raises(ValueError, match="time limit must be a finite number of seconds > 0"):
            TimeLimits(game=bad)
    assert TimeLimits(2, 5).budget(0) == (2, "move_time_limit")
    assert TimeLimits(2, 5).budget(4) == (pytest.approx(1), "game_time_limit")
    assert TimeLimits().budget(100) == (None, None)


# --- tournaments ---------------------------------------------------------------------------------------
def tournament(tmp_path, name="run", **kw):
    from evaluation import EvalConfig, run_evaluation

    base = dict(agents=["first", "hang"], games=2, seed=3, workers=1, out=str(tmp_path / name), bootstrap=20,
                plots=False, progress=False, imports=[HELPERS, THIS], move_time_limit=0.3)
    base.update(kw)
    cfg = EvalConfig.from_dict(base)
    return cfg, run_evaluation(cfg, echo=lambda *a: None)


def rows(cfg):
    return list(csv.DictReader(open(Path(cfg.out) / "games.csv")))


def test_an_agent_that_never_returns_forfeits_and_the_tournament_completes(tmp_path):
    cfg, res = tournament(tmp_path)
    assert res["games"] == 2 and res["void_games"] == 0
    assert res["ratings"]["hang"]["forfeits"] == 2
    assert res["ratings"]["hang"]["forfeit_reasons"] == {"move_time_limit": 2}
    assert res["ratings"]["first"]["forfeits"] == 0 and res["pairs"]["first vs hang"]["wins"] == 2
    assert res["time_limits"]["move"] == 0.3 and res["time_limits"]["game"] == 9.0
    table = rows(cfg)
    assert [(r["forfeit"], r["forfeit_reason"]) for r in table] == [("1", "move_time_limit"), ("0", "move_time_limit")]
    for r in table:
        seat = int(r["forfeit"])
        assert r[f"seat{seat}"] == "hang" and r["winner"] == "first" and r[f"rank{seat}"] == "1"
        assert r["error"] == f"move time limit: seat {seat} (hang) took more than 0.3 s for its move"
    assert table[0]["moves"] == "1" and table[1]["moves"] == "0"  # first moved before hang in game 0
    journal = [json.loads(line) for line in open(Path(cfg.out) / "games.jsonl")]
    assert all("never came back" in g["error"] for g in journal)  # stopped by the parent
    # the same run again resumes from the journal: nothing is replayed, nothing changes
    before = (Path(cfg.out) / "games.csv").read_text()
    _, again = tournament(tmp_path)
    assert (Path(cfg.out) / "games.csv").read_text() == before and again["ratings"] == res["ratings"]


def test_a_slow_agent_over_the_move_limit_forfeits_in_a_tournament(tmp_path):
    cfg, res = tournament(tmp_path, agents=["first", "slow:seconds=0.6"])
    assert res["ratings"]["slow:seconds=0.6"]["forfeit_reasons"] == {"move_time_limit": 2}
    journal = [json.loads(line) for line in open(Path(cfg.out) / "games.jsonl")]
    assert all("the move took" in g["error"] for g in journal)  # caught by the game loop, not a kill


def test_a_worker_that_dies_mid_move_is_a_forfeit_and_is_replaced(tmp_path):
    cfg, res = tournament(tmp_path, agents=["first", "vanish"])
    assert res["games"] == 2 and res["ratings"]["vanish"]["forfeit_reasons"] == {"crash": 2}
    assert all("exit code 3" in r["error"] for r in rows(cfg))


def test_normal_agents_play_the_same_games_under_limits(tmp_path, monkeypatch):
    """A tournament under (default) limits, in a worker process, plays exactly the games
    an unlimited in-process run plays."""
    import evaluation.run as run_module
    from evaluation.executor import SerialExecutor

    limited, res = tournament(tmp_path, "limited", agents=["random", "first", "greedy"], games=4,
                              move_time_limit=None)
    assert res["time_limits"] == {"move": 60.0, "game": 1800.0, "rule": res["time_limits"]["rule"]}
    assert all(r["forfeits"] == 0 for r in res["ratings"].values())
    monkeypatch.setattr(run_module, "make_executor", lambda *a, **k: SerialExecutor([HELPERS, THIS]))
    free, _ = tournament(tmp_path, "free", agents=["random", "first", "greedy"], games=4, move_time_limit=None)
    assert (Path(limited.out) / "games.csv").read_text() == (Path(free.out) / "games.csv").read_text()


# --- the config -------------------------------------------------------------------------------------
def test_config_time_limits_are_checked_and_defaulted(tmp_path):
    from evaluation import EvalConfig

    def config(**kw):
        return EvalConfig.from_dict(dict(agents=["random", "greedy"], **kw))

    for bad in (float("nan"), float("inf"), 0, -2):
        with pytest.raises(ValueError, match="move_time_limit must be a finite number of seconds > 0"):
            config(move_time_limit=bad).validate()
        with pytest.raises(ValueError, match="game_time_limit must be a finite number of seconds > 0"):
            config(game_time_limit=bad).validate()
    with pytest.raises(ValueError, match="config key 'move_time_limit' must be a number, got 'soon'"):
        config(move_time_limit="soon")
    with pytest.raises(ValueError, match=r"move_time_limit \(0.5 s\) must be above the agents' own per-move budget"):
        EvalConfig.from_dict(dict(agents=["random", "ismcts:time=1"], move_time_limit=0.5)).validate()
    assert config().validate().time_limits() == TimeLimits(60.0, 1800.0)
    assert config(move_time_limit=2).validate().time_limits() == TimeLimits(2.0, 60.0)
    assert config(move_time_limit=2, game_time_limit=7).validate().time_limits() == TimeLimits(2.0, 7.0)
    scaled = EvalConfig.from_dict(dict(agents=["random", "ismcts:time=10", "pimc:time=2"])).validate()
    assert scaled.time_limits() == TimeLimits(100.0, 3000.0)  # the budgets of the typed agents


def test_config_checks_every_spec_and_checkpoint_before_any_game(tmp_path):
    from evaluation import EvalConfig

    missing = tmp_path / "gone.pt"
    with pytest.raises(ValueError, match=f"bad agent spec 'checkpoint:{missing}': checkpoint not found"):
        EvalConfig.from_dict(dict(agents=["random", f"checkpoint:{missing}"])).validate()
    with pytest.raises(ValueError, match="bad agent spec 'ismcts:net=.*,time=nan'"):
        EvalConfig.from_dict(dict(agents=["random", f"ismcts:net={NET},time=nan"])).validate()
    EvalConfig.from_dict(dict(agents=["random", f"ismcts:net={NET},time=0.1"])).validate()


@pytest.mark.parametrize("spec", ["greedy", "policy:epsilon=0.3", "ismcts:iterations=30", "cheat:iterations=20",
                                  "pimc:determinizations=3,iterations=30", "br:target=greedy,iterations=30",
                                  f"ismcts:net={NET},iterations=30"])
def test_warm_up_does_not_change_how_an_agent_plays(spec):
    """Tournament workers warm every agent up before its first timed move."""
    games = []
    for warm in (False, True):
        agent = agents.make(spec, seed=5)
        if warm:
            agent.warm_up()
        record = play_game([agent, agents.make("random")], random_deal(4), 2, seeds=[6, 7])
        assert record.forfeit is None, record.error
        games.append(record.actions)
    assert games[0] == games[1]


def test_a_worker_whose_parent_is_killed_exits_mid_move(tmp_path):
    """A tournament worker outlives nothing: when the process that ran it is killed outright
    (SIGKILL, or Ray killing an actor), the worker stops even in a move that never returns."""
    import select
    import signal
    import subprocess
    import sys

    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from evaluation.executor import ProcessExecutor, GameJob
from evaluation.executor import load_plugins
from agents import parse_agent
ex = ProcessExecutor(1, imports=[{THIS!r}, {HELPERS!r}])
load_plugins([{THIS!r}, {HELPERS!r}])
seating = (parse_agent("hang"), parse_agent("first"))
records = ex.map_jobs([GameJob(job_id=0, deal_seed=1, seating=seating, seeds=(1, 2))])
import threading
threading.Thread(target=lambda: next(records), daemon=True).start()
import time
while not ex._workers or ex._workers[0].moving is None:  # until the hanging move has begun
    time.sleep(0.1)
print(ex._workers[0].process.pid, flush=True)
time.sleep(600)
"""
    from processes import exit_or_kill  # here: tournament workers import this file, without tests/ on their path

    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 120)
        assert ready, "the worker's hanging move did not start within 120 s"
        worker = int(parent.stdout.readline())
        time.sleep(1.0)
        os.kill(worker, 0)  # alive, stuck in its move
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert exit_or_kill([worker], 20), "the worker played on after its parent was killed"
    finally:
        parent.kill()
