"""Built-in opponents for a batch of games, without a Python loop over games."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from agents.policy_kernels import greedy_action
from engine import kernel_cache, layout, rules

kernel_cache.register(__name__, "training's batched opponents", 30)


@njit(parallel=True, cache=True)
def batch_greedy_actions(grid, info, which, out):
    """out[i] = the greedy agent's action in game i, for the games where which[i]."""
    for i in prange(grid.shape[0]):
        if which[i]:
            scratch_grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
            scratch_info = np.zeros(layout.INFO_LEN, dtype=np.int64)
            scratch = np.zeros(128, dtype=np.int64)
            actions = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
            keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
            out[i] = greedy_action(grid[i], info[i], scratch_grid, scratch_info, scratch, actions, keys)


def random_actions(mask: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action for each row in `rows` of an (N, A) mask."""
    sub = mask[rows].astype(np.float64)
    u = rng.random(len(rows))[:, None] * sub.sum(axis=1, keepdims=True)
    return (sub.cumsum(axis=1) <= u).sum(axis=1)
