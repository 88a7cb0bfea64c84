"""B searches in lockstep whose leaves a network evaluates in one batch (LEAF_VALUE).

The search is the one core (`agents.search_kernels`): each step `descend_batch` samples
a world per search, descends its tree (PUCT with the network's priors, or UCB) and
stops at a new leaf; this module encodes the B leaves and asks the network for their
priors and values in one call; `backup_values` stores the priors and backs the values
up. Used by ``ismcts:net=PATH,leaf=value`` (one search; `agents.search`).
"""

from __future__ import annotations

import time

import numpy as np

from engine import access, rules
from env.observation import OBS_SIZE

from . import features
from . import search_kernels as sk
from . import search_parts as parts
from .neural import NetPolicy, softmax


class LockstepSearch:
    """Search B roots at once, each over worlds sampled from its mover's information,
    with the network's priors and values at the leaves."""

    def __init__(self, policy: NetPolicy, batch: int, simulations: int, c_puct: float = 1.5,
                 max_nodes: int | None = None, selection: int = parts.SELECT_PUCT, margin: float = 0.0,
                 prior_weight: float = 0.0, widen: float = 0.0):
        if batch < 1 or simulations < 1:
            raise ValueError(f"batch and simulations must be positive, got {batch} and {simulations}")
        self.policy = policy
        self.simulations = simulations
        self.params = parts.parameters(c_puct, selection=selection, leaf=parts.LEAF_VALUE, margin=margin,
                                       expand_after=1, widen=widen, prior_weight=prior_weight)
        self.trees = parts.new_trees(batch, max_nodes or simulations + 1)
        self.works = parts.new_workspace(batch=batch)
        self._obs = np.zeros((batch, OBS_SIZE), dtype=np.float32)
        self._mask = np.zeros((batch, rules.NUM_TEAM_ACTIONS), dtype=np.bool_)
        self._priors = np.zeros((batch, rules.NUM_ACTIONS), dtype=np.float64)
        self._values = np.zeros((batch, 4), dtype=np.float64)

    def _evaluate(self, grid: np.ndarray, info: np.ndarray, active: np.ndarray) -> None:
        """The network's priors (over the search's actions) and values (slot 0 = the mover)
        of the active states, into self._priors / self._values."""
        rows = np.flatnonzero(active & ~access.games_over(info))
        if len(rows) == 0:
            return
        obs, mask = self._obs[: len(rows)], self._mask[: len(rows)]
        sk.encode_leaves(grid, info, rows, obs, mask)
        a = self.policy.num_actions
        exposure = (features.exposure(grid, info, rows, kind=self.policy.exposure_kind)[rows]
                    if self.policy.needs_exposure else None)
        logits, values = self.policy.logits_values(obs, mask[:, :a], exposure)
        width = min(a, rules.NUM_ACTIONS)
        self._priors[rows] = 0.0
        self._priors[rows, :width] = softmax(logits)[:, :width]
        self._values[rows] = values

    def run(self, root_grid: np.ndarray, root_info: np.ndarray, active: np.ndarray, rng_state: np.ndarray,
            rng: np.random.Generator | None = None, dirichlet: tuple[float, float] | None = None,
            deadline: float | None = None, with_values: bool = False, simulations: int | None = None):
        """Search every active root; returns the root visit counts (B, the network's
        number of actions), and with `with_values` also the root children's summed
        values for the root's mover (same shape).
        `rng_state` (uint64 per root) drives the world sampling and is advanced in place.
        `dirichlet` = (alpha, fraction) adds root noise to the prior (needs `rng`);
        `deadline` (time.perf_counter()) stops early, after at least one simulation;
        `simulations` overrides the constructor's number (a tree that fills up keeps
        evaluating its leaves without growing)."""
        trees, works = self.trees, self.works
        sk.reset_trees(trees.nodes, trees.values, trees.meta)
        self._evaluate(root_grid, root_info, active)
        trees.priors[:, 0] = self._priors
        if dirichlet is not None and rng is not None:
            self._add_root_noise(active, rng, *dirichlet)
        observer = access.movers(root_info).astype(np.int64)
        for _ in range(self.simulations if simulations is None else simulations):
            sk.descend_batch(root_grid, root_info, active, observer, self.params, rng_state, trees, works)
            self._evaluate(works.grid, works.info, active)
            sk.backup_values(active, self.params, trees, works, self._priors, self._values)
            if deadline is not None and time.perf_counter() >= deadline:
                break
        width = max(self.policy.num_actions, rules.NUM_ACTIONS)
        visits = np.zeros((len(active), width), dtype=np.int64)
        value_sums = np.zeros((len(active), width), dtype=np.float64)
        sk.root_stats(trees.nodes, trees.values, observer, visits, value_sums)
        a = self.policy.num_actions
        return (visits[:, :a], value_sums[:, :a]) if with_values else visits[:, :a]

    def _add_root_noise(self, active, rng, alpha, fraction):
        for b in np.flatnonzero(active):
            legal = np.flatnonzero(self.trees.priors[b, 0] > 0)
            if len(legal) > 1:
                noise = rng.dirichlet([alpha] * len(legal))
                self.trees.priors[b, 0, legal] = (1 - fraction) * self.trees.priors[b, 0, legal] + fraction * noise
