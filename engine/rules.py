"""The facts of 24/7 as data: board, tiles, action ids and minutes.

This module is the single source of truth for every constant and encoding of the
game (docs/rules.md). Both engines (the plain-Python reference and the numba kernels),
the environments and the agents import from here.
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from .validate import as_flag, as_int, as_int_array

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


@register_jitable
def partner(seat: int) -> int:
    """Team variant: the seat's partner, across the table (`TEAMS`). Callable from numba."""
    return (seat + 2) % TEAM_PLAYERS


def action_id(cell: int, value: int) -> int:
    """The placement action putting a tile of `value` (1..10) on `cell` (0..48)."""
    return cell * MAX_VALUE + (value - 1)


def decode_action(action: int) -> tuple[int, int]:
    """(cell, value) of a placement action id."""
    return action // MAX_VALUE, action % MAX_VALUE + 1


def action_text(action: int, team: bool | None = None) -> str:
    """An action in words, the one wording every front end uses: '7 at (2,3)' (row,
    col), 'pass', 'show 4'; an id outside the action space names the valid range: that of
    the game's own variant when `team` is given (0..490 without teams, 0..500 with), else
    of both."""
    action = int(action)
    if 0 <= action < PASS_ACTION:
        cell, value = decode_action(action)
        return f"{value} at ({cell // BOARD_SIZE},{cell % BOARD_SIZE})"
    if action == PASS_ACTION:
        return "pass"
    if SHOW_BASE <= action < NUM_TEAM_ACTIONS and team is not False:
        return f"show {action - SHOW_BASE + 1}"
    return f"action {action} (ids are 0..{num_actions(bool(team) if team is not None else True) - 1})"


def num_actions(team: bool) -> int:
    """The size of the action space: placements and pass, plus the shows of the team variant."""
    return NUM_TEAM_ACTIONS if team else NUM_ACTIONS


def show_action(value: int) -> int:
    """The team-variant action showing a tile of `value` to the partner."""
    return SHOW_BASE + (value - 1)


def cell_of(row: int, col: int) -> int:
    return row * BOARD_SIZE + col


def hand_size(num_players: int) -> int:
    if num_players not in HAND_SIZE:
        raise ValueError(f"num_players must be 2, 3 or 4, got {num_players!r}")
    return HAND_SIZE[num_players]


def check_game_options(num_players: int, team: bool) -> None:
    """Raise ValueError for a player count or team flag the rules do not allow. The
    team flag must be a real bool (numpy bools and the ints 0/1 too): "no" is refused."""
    if isinstance(num_players, (bool, np.bool_)) or not isinstance(num_players, (int, np.integer)):
        raise ValueError(f"num_players must be an int in 2..4, got {num_players!r}")
    hand_size(int(num_players))
    if as_flag(team, "team") and num_players != TEAM_PLAYERS:
        raise ValueError(f"the team variant needs 4 players, got {num_players}")


def check_deal(deal) -> np.ndarray:
    """Validate an explicit deal (40 tile values in draw order); return it as int8.

    Item 0 goes on the start cell, items 1-3 are removed, then each seat takes its
    hand in seat order; the rest is the bag, drawn from the front. Any integer dtype is
    accepted, and integral floats (not NaN, inf or 1.5); bools are refused.
    """
    try:
        arr = np.asarray(deal)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise ValueError(f"a deal must be a sequence of 40 ints, got {deal!r}") from exc
    if arr.ndim != 1 or arr.shape[0] != NUM_TILES:
        raise ValueError(f"a deal must hold exactly {NUM_TILES} tile values, got shape {arr.shape}")
    if arr.dtype.kind == "f":  # integral floats are accepted, as they always were
        ok = np.isfinite(arr) & (arr == np.round(arr)) & (arr >= 1) & (arr <= MAX_VALUE)
        if not ok.all():
            i = int(np.argmin(ok))
            raise ValueError(f"deal[{i}] = {arr[i]!r} is not a tile value 1..{MAX_VALUE}")
        arr = arr.astype(np.int64)
    values = as_int_array(arr, "deal", (NUM_TILES,), 1, MAX_VALUE)
    counts = np.bincount(values, minlength=MAX_VALUE + 1)[1:]
    if not np.all(counts == COPIES_PER_VALUE):
        bad = {v + 1: int(c) for v, c in enumerate(counts) if c != COPIES_PER_VALUE}
        raise ValueError(f"a deal must hold four of each value 1..10; wrong counts {bad}")
    return values.astype(np.int8)


def setup_bag_size(num_players: int) -> int:
    """Tiles in the bag right after the deal (24, 21, 16); it only shrinks from there."""
    return NUM_TILES - 1 - NUM_REMOVED - num_players * hand_size(num_players)


def check_position(board, hands, num_players: int, team: bool, current_player, bag, scores=None):
    """Validate a position given as `GameState.from_position` takes it against the rules;
    return it as arrays: ``(cells, values, hand_counts (4, 11), bag, current_player,
    scores or None)``.

    Checked: every value is an int (not a bool, float or string) in its range; board
    cells are (row, col) on the board holding 1..10; no line sums to more than 24 (the
    placement rule keeps every line there); each hand holds at most the dealt hand size;
    the bag holds at most the tiles left after the deal; no value appears more than 4
    times, and at most 37 tiles are in play (3 are always removed). Not checked: that
    the tiles are connected or that play could reach the position.
    """
    check_game_options(num_players, team)
    n = int(num_players)
    current = as_int(current_player, "current_player", 0, n - 1)
    cells, values = _board_cells(board)
    hand_counts = np.zeros((MAX_PLAYERS, MAX_VALUE + 1), dtype=np.int64)
    if not isinstance(hands, (list, tuple, np.ndarray)) or len(hands) != n:
        raise ValueError(f"hands must be a list of {n} hands (one per seat), got {hands!r}")
    limit = hand_size(n)
    for seat, hand in enumerate(hands):
        tiles = _tile_values(hand, f"hands[{seat}]")
        if len(tiles) > limit:
            raise ValueError(f"hands[{seat}] holds {len(tiles)} tiles; a hand holds at most {limit} "
                             f"with {n} players")
        np.add.at(hand_counts[seat], tiles, 1)
    bag_values = _tile_values(bag, "bag")
    if len(bag_values) > setup_bag_size(n):
        raise ValueError(f"the bag holds at most {setup_bag_size(n)} tiles with {n} players, "
                         f"got {len(bag_values)}")
    in_play = np.concatenate([values, bag_values, np.repeat(np.arange(MAX_VALUE + 1), hand_counts.sum(0))])
    counts = np.bincount(in_play, minlength=MAX_VALUE + 1)
    if counts.max() > COPIES_PER_VALUE:
        too_many = {v: int(c) for v, c in enumerate(counts) if c > COPIES_PER_VALUE}
        raise ValueError(f"at most {COPIES_PER_VALUE} tiles of a value exist; got {too_many}")
    if in_play.size > NUM_TILES - NUM_REMOVED:
        raise ValueError(f"at most {NUM_TILES - NUM_REMOVED} tiles are in play ({NUM_REMOVED} are "
                         f"removed), got {in_play.size}")
    if scores is not None:
        scores = as_int_array(scores, "scores", (n,), 0)
    return cells, values, hand_counts, bag_values, current, scores


def _board_cells(board) -> tuple[np.ndarray, np.ndarray]:
    """(cells, values) of a {(row, col): value} board, checked; every line <= 24."""
    if not isinstance(board, dict):
        raise ValueError(f"board must be a dict {{(row, col): value}}, got {type(board).__name__}")
    grid = np.zeros((BOARD_SIZE, BOARD_SIZE), dtype=np.int64)
    for key, value in board.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError(f"board keys must be (row, col) pairs, got {key!r}")
        row = as_int(key[0], f"row of board cell {key!r}", 0, BOARD_SIZE - 1)
        col = as_int(key[1], f"column of board cell {key!r}", 0, BOARD_SIZE - 1)
        grid[row, col] = as_int(value, f"board[{key!r}]", 1, MAX_VALUE)
    check_line_sums(grid)
    cells = np.flatnonzero(grid)
    return cells, grid.reshape(-1)[cells]


def _line_starts(dr: int, dc: int) -> tuple[tuple[int, int], ...]:
    """The cells where a full-board line of step (dr, dc) begins."""
    return tuple((r, c) for r in range(BOARD_SIZE) for c in range(BOARD_SIZE)
                 if not _on_board(r - dr, c - dc))


def check_line_sums(boards: np.ndarray) -> None:
    """Raise ValueError if on any board of `boards` (..., 7, 7) a line (a maximal run of
    tiles on one axis) sums to more than LINE_CAP: the placement rule keeps every line
    at 24 or less. Vectorised over the boards (a batch is checked at once)."""
    flat = np.asarray(boards, dtype=np.int64).reshape(-1, BOARD_SIZE, BOARD_SIZE)
    for axis, (dr, dc) in zip(AXES, AXIS_STEPS):
        for r0, c0 in _line_starts(dr, dc):
            run = np.zeros(flat.shape[0], dtype=np.int64)
            r, c = r0, c0
            while _on_board(r, c):
                tile = flat[:, r, c]
                run = (run + tile) * (tile > 0)
                if run.max() > LINE_CAP:
                    _raise_line_over_cap(flat, int(np.argmax(run > LINE_CAP)), axis, r, c, dr, dc)
                r, c = r + dr, c + dc


def _raise_line_over_cap(flat, game, axis, r, c, dr, dc):
    board = flat[game]
    while _on_board(r - dr, c - dc) and board[r - dr, c - dc]:
        r, c = r - dr, c - dc
    cells = []
    while _on_board(r, c) and board[r, c]:
        cells.append((r, c))
        r, c = r + dr, c + dc
    total = int(sum(board[cell] for cell in cells))
    where = f" on board {game}" if flat.shape[0] > 1 else ""
    raise ValueError(f"the {axis} line {cells}{where} sums to {total}; no line may sum to more than "
                     f"{LINE_CAP} (docs/rules.md, 'A turn')")


def _on_board(row: int, col: int) -> bool:
    return 0 <= row < BOARD_SIZE and 0 <= col < BOARD_SIZE


def _tile_values(values, name: str) -> np.ndarray:
    """A sequence of tile values 1..10 as an int64 array."""
    try:
        if isinstance(values, (str, bytes, dict, set)):
            raise TypeError
        size = len(values)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of tile values 1..{MAX_VALUE}, got {values!r}") from None
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return as_int_array(values, name, (size,), 1, MAX_VALUE)
