"""The facts of 24/7 as data: board, tiles, action ids and minutes.

This module is the single source of truth for every constant and encoding of the
game (RULES.md). Both engines (the plain-Python reference and the numba kernels),
the environments and the agents import from here.
"""

from __future__ import annotations

import numpy as np

# --- Material --------------------------------------------------------------------
BOARD_SIZE = 7
NUM_CELLS = BOARD_SIZE * BOARD_SIZE  # cell = row * 7 + col, 0..48
START_CELL = 3 * BOARD_SIZE + 3  # the centre, (3, 3)
DOUBLE_TIME_CELLS = (2, 11, 15, 20, 28, 33, 37, 46)  # the pinwheel of "2x" cells

MAX_VALUE = 10  # tiles are 1..10
COPIES_PER_VALUE = 4
NUM_TILES = MAX_VALUE * COPIES_PER_VALUE  # 40
NUM_REMOVED = 3  # removed face down at setup, never seen by anyone
LINE_CAP = 24  # no line may sum to more than this

MIN_PLAYERS, MAX_PLAYERS = 2, 4
HAND_SIZE = {2: 6, 3: 5, 4: 5}
TEAM_PLAYERS = 4  # the team variant ("Time and a Half") is for 4 players
TEAMS = ((0, 2), (1, 3))

# --- Actions -----------------------------------------------------------------------
# Placement: cell * 10 + (value - 1), 0..489. Pass: 490. In the team variant a seat may,
# before placing, show one tile value v to its partner: action SHOW_BASE + (v - 1).
NUM_PLACEMENT_ACTIONS = NUM_CELLS * MAX_VALUE  # 490
PASS_ACTION = NUM_PLACEMENT_ACTIONS  # 490
NUM_ACTIONS = PASS_ACTION + 1  # 491: the action space without the team variant
SHOW_BASE = NUM_ACTIONS  # 491..500
NUM_TEAM_ACTIONS = SHOW_BASE + MAX_VALUE  # 501: the action space of the team variant

# --- Minutes -----------------------------------------------------------------------
SUM7_MINUTES = 20  # a line of >= 2 tiles summing to 7
SUM24_MINUTES = 40  # a line summing to 24
SEVEN_TILES_BONUS = 60  # a 24 made of 7 tiles
BONUS_24_7 = 60  # per (24-line, 7-line) pair made by one placement
RUN_MINUTES = {3: 30, 4: 40, 5: 50, 6: 60}
SET_MINUTES = {3: 50, 4: 60}

# Axes in the order the breakdown lists them: (row step, col step).
AXES = ("row", "col", "diag", "anti")  # -, |, \, /
AXIS_STEPS = ((0, 1), (1, 0), (1, 1), (1, -1))


def action_id(cell: int, value: int) -> int:
    """The placement action putting a tile of `value` (1..10) on `cell` (0..48)."""
    return cell * MAX_VALUE + (value - 1)


def decode_action(action: int) -> tuple[int, int]:
    """(cell, value) of a placement action id."""
    return action // MAX_VALUE, action % MAX_VALUE + 1


def show_action(value: int) -> int:
    """The team-variant action showing a tile of `value` to the partner."""
    return SHOW_BASE + (value - 1)


def cell_of(row: int, col: int) -> int:
    return row * BOARD_SIZE + col


def hand_size(num_players: int) -> int:
    if num_players not in HAND_SIZE:
        raise ValueError(f"num_players must be 2, 3 or 4, got {num_players!r}")
    return HAND_SIZE[num_players]


def full_tile_set() -> np.ndarray:
    """The 40 tiles, sorted: four each of 1..10."""
    return np.repeat(np.arange(1, MAX_VALUE + 1, dtype=np.int8), COPIES_PER_VALUE)


def check_game_options(num_players: int, team: bool) -> None:
    """Raise ValueError for a player count or team flag the rules do not allow."""
    if isinstance(num_players, bool) or not isinstance(num_players, (int, np.integer)):
        raise ValueError(f"num_players must be an int in 2..4, got {num_players!r}")
    hand_size(int(num_players))
    if team and num_players != TEAM_PLAYERS:
        raise ValueError(f"the team variant needs 4 players, got {num_players}")


def check_deal(deal) -> np.ndarray:
    """Validate an explicit deal (40 tile values in draw order); return it as int8.

    Item 0 goes on the start cell, items 1-3 are removed, then each seat takes its
    hand in seat order; the rest is the bag, drawn from the front.
    """
    try:
        arr = np.asarray(deal)
    except Exception as exc:  # pragma: no cover - numpy raises many kinds
        raise ValueError(f"a deal must be a sequence of 40 ints, got {deal!r}") from exc
    if arr.ndim != 1 or arr.shape[0] != NUM_TILES:
        raise ValueError(f"a deal must hold exactly {NUM_TILES} tile values, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
            raise ValueError(f"a deal must hold integers 1..10, got dtype {arr.dtype}")
    values = arr.astype(np.int64)
    if values.min() < 1 or values.max() > MAX_VALUE:
        raise ValueError(f"tile values must be in 1..{MAX_VALUE}, got min {values.min()} max {values.max()}")
    counts = np.bincount(values, minlength=MAX_VALUE + 1)[1:]
    if not np.all(counts == COPIES_PER_VALUE):
        bad = {v + 1: int(c) for v, c in enumerate(counts) if c != COPIES_PER_VALUE}
        raise ValueError(f"a deal must hold four of each value 1..10; wrong counts {bad}")
    return values.astype(np.int8)
