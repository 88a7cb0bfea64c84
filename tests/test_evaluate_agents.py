"""Tiny agents for the evaluation tests, and checks of how a tournament treats them.

The tests load this file into worker processes with ``--import tests/test_evaluate_agents.py``
(`evaluation.executor.load_plugins`), so registration is guarded: loading twice is fine.
"""

from __future__ import annotations

import agents
from agents.base import Agent, _REGISTRY, register
from agents.play import play_game
from engine import random_deal


def _register(name):
    def wrap(cls):
        if name in _REGISTRY:
            return _REGISTRY[name]
        return register(name)(cls)

    return wrap


@_register("first")
class FirstLegalAgent(Agent):
    """Always the lowest legal action id (deterministic, no randomness)."""

    def act(self, observation, view) -> int:
        return int(view.legal_actions()[0])


@_register("crasher")
class CrasherAgent(Agent):
    """Plays first-legal, then raises on its move number `after` (0 = the first move)."""

    def __init__(self, after: int = 2) -> None:
        super().__init__()
        self.after = after
        self.moves = 0

    def reset(self, seat, num_players, team=False) -> None:
        self.moves = 0

    def act(self, observation, view) -> int:
        if self.moves >= self.after:
            raise RuntimeError("crasher agent gives up")
        self.moves += 1
        return int(view.legal_actions()[0])


@_register("illegal")
class IllegalAgent(Agent):
    """Returns an action that is never legal."""

    def act(self, observation, view) -> int:
        return 999


def test_helper_agents_are_registered():
    assert {"first", "crasher", "illegal"} <= set(agents.registered())


def test_crasher_and_illegal_forfeit():
    for spec, seat in (("crasher:after=1", 1), ("illegal", 0)):
        players = [agents.make("first"), agents.make(spec)] if seat else [agents.make(spec), agents.make("first")]
        rec = play_game(players, random_deal(3), 2, seeds=[1, 2])
        assert rec.forfeit == seat and rec.error
        assert rec.rewards[seat] == -1.0 and rec.ranking[seat] == 1
