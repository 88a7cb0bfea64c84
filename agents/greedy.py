"""The greedy agent: the most minutes now, without handing the others easy minutes.

Ties on minutes (common: most moves score nothing) are broken by, in order:
the fewest minutes left open to the others (after the move, the most that any value the
mover has not seen could score on an open cell), then playing the value the mover holds
most copies of, then the lowest action id. The choice is deterministic and costs a few
microseconds (`agents.policy_kernels.greedy_action`). Team show actions are never used.
"""

from __future__ import annotations

import numpy as np

from engine import access, kernel_cache, rules

from .base import Agent, PolicyModel, register, warm_up_view
from .policy_kernels import SCRATCH_LEN, epsilon_threshold, greedy_action, policy_action


@register("greedy")
class GreedyAgent(Agent):
    """Plays the placement scoring the most minutes now (tie-breaks in the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._grid, self._info = access.new_arrays()
        self._scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
        self._actions = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
        self._keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)

    def warm_up(self) -> None:
        self.act(None, warm_up_view())  # compiles the greedy kernel before the first timed move

    def compile_parts(self) -> tuple[str, ...]:
        """Its move (`greedy_action`, seconds of compiling on a cold cache), unless cached."""
        return () if kernel_cache.is_cached(greedy_action) else ("move",)

    def compile_part(self, name: str) -> None:
        if name != "move":
            super().compile_part(name)  # raises: no such part
        self.warm_up()

    def policy_model(self, num_players: int, team: bool) -> PolicyModel:
        return PolicyModel("greedy")

    def act(self, observation, view) -> int:
        grid, info = view.public_arrays()
        return int(greedy_action(grid, info, self._grid, self._info, self._scratch, self._actions, self._keys))


@register("policy")
class RolloutPolicyAgent(Agent):
    """Plays the MCTS rollout policy: with probability `epsilon` a random placement,
    else the most minutes now, ties broken at random among *safe* placements (that open
    no 7 or 24 next to the new tile) when `safe`, else among all. A cheap greedy."""

    def __init__(self, epsilon: float = 0.0, safe: bool = True) -> None:
        super().__init__()
        self._epsilon = epsilon_threshold(epsilon)
        self._safe = bool(safe)

    @property
    def epsilon_threshold(self) -> int:
        """The random-move probability as the kernels take it (out of 2**32)."""
        return self._epsilon

    @property
    def safe(self) -> bool:
        return self._safe

    def policy_model(self, num_players: int, team: bool) -> PolicyModel:
        return PolicyModel("policy", epsilon_threshold=self._epsilon, safe=self._safe)

    def warm_up(self) -> None:
        rng, self.rng = self.rng, np.random.default_rng(0)  # compiles the policy kernel; keeps the stream
        try:
            self.act(None, warm_up_view())
        finally:
            self.rng = rng

    def act(self, observation, view) -> int:
        grid, info = view.public_arrays()
        _, action = policy_action(grid, info, np.uint64(self.rng.integers(0, 2**63)), self._epsilon, self._safe)
        return int(action)
