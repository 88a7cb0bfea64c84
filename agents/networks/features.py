"""Per-move features a network may read beside the observation.

`exposure`: for every legal placement of the mover, how many minutes the move leaves
open to the others, / 100, from the public state only. Three kinds:

* ``worst``: the most any value the mover has not seen could score on an open cell after
  the placement (the greedy agent's second key, `policy_kernels.greedy_action`);
* ``expected``: the next seat's expected best placement after it, each unseen value's
  threat weighted by the chance that it is the best the next hand holds
  (`policy_kernels.expected_exposure_after_placements`);
* ``outlook``: the expected exposure minus `FOLLOW_UP` x the most the mover's remaining
  tiles would score after the move.

A one-move lookahead (~20-50 us a position) too costly for every observation of the
vector env: networks that read it (`NetConfig.exposure_skip`) get it from here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import kernel_cache, rules

from agents.policy_kernels import SCRATCH_LEN, expected_exposure_after_placements, exposure_after_placements

kernel_cache.register(__name__, "the agents' features and evaluators", 6)

NUM_FEATURES = rules.NUM_PLACEMENT_ACTIONS
EXPOSURES = ("worst", "expected", "outlook")
FOLLOW_UP = 0.5  # weight of the mover's own best follow-up in the ``outlook`` kind


# One kernel per kind, each compiling only its own chain (`exposure_after_placements` and
# `expected_exposure_after_placements` take seconds each on a cold cache; a network reads one kind).
@njit(cache=True)
def _worst_rows(grid, info, rows, out):
    sg = np.zeros((grid.shape[1], grid.shape[2]), dtype=np.int16)
    si = np.zeros(info.shape[1], dtype=np.int64)
    scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
    actions = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
    keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
    for i in range(rows.shape[0]):
        b = rows[i]
        exposure_after_placements(grid[b], info[b], sg, si, scratch, actions, keys, out[b])


@njit(cache=True)
def _expected_rows(grid, info, rows, follow_up, out):
    sg = np.zeros((grid.shape[1], grid.shape[2]), dtype=np.int16)
    si = np.zeros(info.shape[1], dtype=np.int64)
    scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
    actions = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
    cell_points = np.zeros((grid.shape[1], rules.MAX_VALUE + 1), dtype=np.int64)
    for i in range(rows.shape[0]):
        b = rows[i]
        expected_exposure_after_placements(grid[b], info[b], sg, si, scratch, actions, cell_points, follow_up, out[b])


def exposure(grid: np.ndarray, info: np.ndarray, rows: np.ndarray | None = None,
             out: np.ndarray | None = None, kind: str = "worst") -> np.ndarray:
    """Exposure features (float32, (B, 490)) of a batch of states (B, ...) for the seat
    to move in each; only `rows` are computed (the others are left as they are / 0).
    `kind`: ``worst``, ``expected`` or ``outlook`` (module doc)."""
    if kind not in EXPOSURES:
        raise ValueError(f"exposure kind must be one of {EXPOSURES}, got {kind!r}")
    if grid.ndim == 2:
        return exposure(grid[None], info[None], rows, None if out is None else out[None], kind)[0]
    if out is None:
        out = np.zeros((len(grid), NUM_FEATURES), dtype=np.float32)
    rows = np.arange(len(grid)) if rows is None else np.asarray(rows, dtype=np.int64)
    if kind == "worst":
        _worst_rows(grid, info, rows.astype(np.int64), out)
    else:
        _expected_rows(grid, info, rows.astype(np.int64), FOLLOW_UP if kind == "outlook" else 0.0, out)
    return out
