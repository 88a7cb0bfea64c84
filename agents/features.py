"""Per-move features a network may read beside the observation.

`exposure`: for every legal placement of the mover, the most minutes a value the mover
has not seen (a tile another seat may hold) could score on an open cell after that
placement, / 100: the greedy agent's second key (`policy_kernels.greedy_action`). It
is a one-move lookahead over the board the observation already shows, too costly to
put in every observation of the vector env (~20 us per position), so networks that use
it (`NetConfig.exposure_skip`) get it from here, computed from the public state only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import rules

from .policy_kernels import exposure_after_placements

NUM_FEATURES = rules.NUM_PLACEMENT_ACTIONS
_SCRATCH = 128


@njit(cache=True)
def _exposure_rows(grid, info, rows, out):
    sg = np.zeros((grid.shape[1], grid.shape[2]), dtype=np.int16)
    si = np.zeros(info.shape[1], dtype=np.int64)
    scratch = np.zeros(_SCRATCH, dtype=np.int64)
    actions = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
    keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
    for i in range(rows.shape[0]):
        b = rows[i]
        exposure_after_placements(grid[b], info[b], sg, si, scratch, actions, keys, out[b])


def exposure(grid: np.ndarray, info: np.ndarray, rows: np.ndarray | None = None,
             out: np.ndarray | None = None) -> np.ndarray:
    """Exposure features (float32, (B, 490)) of a batch of states (B, ...) for the seat
    to move in each; only `rows` are computed (the others are left as they are / 0)."""
    if grid.ndim == 2:
        return exposure(grid[None], info[None], rows, None if out is None else out[None])[0]
    if out is None:
        out = np.zeros((len(grid), NUM_FEATURES), dtype=np.float32)
    rows = np.arange(len(grid)) if rows is None else np.asarray(rows, dtype=np.int64)
    _exposure_rows(grid, info, rows.astype(np.int64), out)
    return out

