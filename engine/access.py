"""Named reads of a game state's two arrays, for code outside the engine.

A game is ``grid`` (int16, one row per padded cell) and ``info`` (int64 scalars and
bitboards), laid out in `layout.py`. Other layers read them through the names here, never
through `layout` offsets, so the layout can change inside the engine alone:

* numba kernels (the env's step, the agents' rollouts and search) call the inlined
  accessors on one game's arrays; each compiles to the same single load as a direct
  index, so they cost nothing;
* vectorised numpy code over N stacked games reads whole columns with `movers`,
  `games_over` and `scores_of`;
* `new_arrays` allocates zeroed state arrays (a batch for an env, scratch for search).

Cells are padded indices (`layout.PAD_OF_CELL` / `CELL_OF_PAD` convert; `layout.ON_BOARD`
is the bitboard of board cells). Bitboards hold bit p for padded cell p; hand masks hold
bit v while the seat has a tile of value v.
"""

from __future__ import annotations

import numpy as np

from . import kernel_cache, rules
from .kernels import FITS_MASK, helper
from .layout import (
    BAG_POS, CAP, CELL_OF_PAD, CURRENT, DEAL, GRID_CELLS, GRID_CHANNELS, HAND, HAND_MASK, HAND_SIZE,
    HAND_STRIDE, INFO_LEN, LAST_ACTION, LEN_SHIFT, NUM_PLAYERS, OCCUPIED, OVER, RUN_AFTER,
    RUN_BEFORE, SCORE, SHOWN, SHOWN_THIS_TURN, SUM_MASK, TEAM, TIMEOUT, TURN, VAL,
)

kernel_cache.register(__name__, *kernel_cache.ENGINE)

_NUM_TILES = rules.NUM_TILES
_MAX_VALUE = rules.MAX_VALUE


def new_arrays(games: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Zeroed (grid, info) for one game, or stacked for `games` games (a leading axis).
    The engine's `reset` / `setup_position` / `copy_state` fill them."""
    lead = () if games is None else (int(games),)
    return (np.zeros(lead + (GRID_CELLS, GRID_CHANNELS), dtype=np.int16),
            np.zeros(lead + (INFO_LEN,), dtype=np.int64))


# --- N stacked games, in numpy (info of shape (N, INFO_LEN)) ----------------------------------
def movers(info: np.ndarray) -> np.ndarray:
    """The seat to move of every game (a view: copy it before the games move on)."""
    return info[:, CURRENT]


def games_over(info: np.ndarray) -> np.ndarray:
    """Bool per game: finished."""
    return info[:, OVER] != 0


def scores_of(info: np.ndarray, num_players: int) -> np.ndarray:
    """(N, num_players) minutes so far (a view)."""
    return info[:, SCORE:SCORE + num_players]


def bag_of(info: np.ndarray) -> np.ndarray:
    """One game's tiles still in the bag, in draw order (the next draw first). A view:
    reordering it reorders the bag (a chance node deciding the next draw)."""
    return info[DEAL + info[BAG_POS]:DEAL + _NUM_TILES]


# --- one game, inside numba kernels (inlined) ---------------------------------------------------
@helper
def num_players(info):
    return info[NUM_PLAYERS]


@helper
def is_team(info):
    """The team variant (seats 0 and 2 against 1 and 3)."""
    return info[TEAM] == 1


@helper
def current_seat(info):
    return info[CURRENT]


@helper
def is_over(info):
    return info[OVER] == 1


@helper
def turn(info):
    """Placements and passes made so far."""
    return info[TURN]


@helper
def bag_left(info):
    """Tiles still in the bag."""
    return _NUM_TILES - info[BAG_POS]


@helper
def last_action(info):
    """The last action id, -1 before the first."""
    return info[LAST_ACTION]


@helper
def score(info, seat):
    """The seat's minutes so far."""
    return info[SCORE + seat]


@helper
def hand_size(info, seat):
    return info[HAND_SIZE + seat]


@helper
def hand_count(info, seat, v):
    """How many tiles of value v (1..10) the seat holds."""
    return info[HAND + seat * HAND_STRIDE + v]


@helper
def hand_values(info, seat):
    """The values the seat holds, as a mask (bit v set for value v)."""
    return info[HAND_MASK + seat]


@helper
def shown_value(info, seat):
    """Team variant: the value the seat shows its partner, 0 for none."""
    return info[SHOWN + seat]


@helper
def shown_this_turn(info):
    """Team variant: 1 when the mover has already shown a tile this turn."""
    return info[SHOWN_THIS_TURN]


@helper
def occupied_cells(info):
    """Bitboard of the cells holding a tile."""
    return info[OCCUPIED]


@helper
def timeout_cells(info):
    """Bitboard of the Time Out stones."""
    return info[TIMEOUT]


@helper
def tile_value(grid, p):
    """The tile on padded cell p, 0 when empty."""
    return grid[p, VAL]


@helper
def capacity(grid, p):
    """The largest value that still fits on open cell p (0: a Time Out)."""
    return grid[p, CAP]


@helper
def values_that_fit(grid, p, values):
    """The values of the mask `values` that fit on open cell p, as a mask."""
    return values & FITS_MASK[grid[p, CAP]]


@helper
def run_before(grid, p, axis):
    """The packed tile run just before empty cell p on `axis` (index into rules.AXES):
    read it with `run_sum` and `run_length`."""
    return grid[p, RUN_BEFORE + 2 * axis]


@helper
def run_after(grid, p, axis):
    """The packed tile run just after empty cell p on `axis`."""
    return grid[p, RUN_AFTER + 2 * axis]


@helper
def run_sum(run):
    return run & SUM_MASK


@helper
def run_length(run):
    return run >> LEN_SHIFT


@helper
def placement_action(p, v):
    """The action id of placing value v on padded cell p (`rules.action_id` in kernels)."""
    return CELL_OF_PAD[p] * _MAX_VALUE + v - 1
