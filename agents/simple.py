"""The simplest agents: uniformly random over the legal actions."""

from __future__ import annotations

from .base import Agent, PolicyModel, register


@register("random")
class RandomAgent(Agent):
    """Plays a uniformly random legal action (team shows are never chosen)."""

    def act(self, observation, view) -> int:
        legal = view.legal_actions()
        return int(legal[self.rng.integers(len(legal))])

    def policy_model(self, num_players: int, team: bool) -> PolicyModel:
        return PolicyModel("random")
