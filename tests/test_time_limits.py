"""No agent can stall a run: agent parameters are checked in one place before anything
is built (agents.check_spec / agents.make), and tournaments forfeit a seat that goes
over the per-move or per-game time limit, even one that never returns."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import agents
from agents.alphazero import AlphaZeroAgent

ROOT = Path(__file__).resolve().parents[1]
NET = str(ROOT / "models" / "alphazero_2p_best.pt")
BAD_TIMES = ["nan", "inf", "-1", "0", "-inf"]


# --- parameters: one rule, one message, for every agent -------------------------------------------
@pytest.mark.parametrize("time", BAD_TIMES)
@pytest.mark.parametrize("base", ["ismcts:", "pimc:", "cheat:", f"alphazero:{NET},",
                                  f"alphazero:{NET},leaf=rollout,"])
def test_a_time_budget_must_be_finite_and_positive(base, time):
    spec = f"{base}time={time}"
    for check in (agents.check_spec, agents.make):
        with pytest.raises(ValueError, match=r"bad agent spec .*: time must be a finite number of seconds > 0"):
            check(spec)


@pytest.mark.parametrize("spec, message", [
    (f"alphazero:{NET},iterations=0", "iterations must be a positive integer"),
    (f"alphazero:{NET},iterations=2.5", "iterations must be a positive integer"),
    (f"alphazero:{NET},c=0", "c must be a finite positive number"),
    (f"alphazero:{NET},c=nan", "c must be a finite"),
    (f"alphazero:{NET},leaf=sideways", "leaf must be one of value, rollout"),
    (f"alphazero:{NET},prior=0.5", "parameters of leaf=rollout"),
    (f"checkpoint:{NET},temperature=nan", "temperature must be a finite non-negative number"),
    (f"checkpoint:{NET},temperature=-1", "temperature must be a finite non-negative number"),
    ("ismcts:iterations=nan", "iterations must be a positive integer"),
    ("ismcts:c=inf", "c must be a finite non-negative number"),
    ("ismcts:rollout=nope", "rollout must be one of random, greedy, epsilon"),
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
    @functools.wraps(AlphaZeroAgent.__init__)  # keeps the signature check_spec binds to
    def never(*args, **kwargs):
        raise AssertionError("check_spec built the agent")

    monkeypatch.setattr(AlphaZeroAgent, "__init__", never)
    agents.check_spec(f"alphazero:{NET},time=0.5,leaf=rollout,prior=1")
    agents.check_spec("ismcts:time=0.25")
    missing = str(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match=f"bad agent spec 'alphazero:{missing}': checkpoint not found"):
        agents.check_spec(f"alphazero:{missing}")
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
