"""The board's symmetries: the quarter turns that map the game onto itself.

Every rule is blind to how the board is turned. Legality reads the 8 neighbours and the
sums of the 4 lines through a cell; scoring reads each line's sum, length and its
stretches of equal values or of +1 or -1 steps, checked in both directions (docs/rules.md).
A quarter turn maps rows onto columns and one diagonal onto the other, and reverses some
lines, so it keeps every line, every sum and every score. Only the layout could break
the symmetry, and it does not: the start cell is the centre, and the Double Time cells
form a pinwheel, which a quarter turn maps onto itself (a mirror does not: the pinwheel
is chiral). So the game has four symmetries, the turns by 0, 90, 180 and 270 degrees:
a game played on the turned board, every placement turned, is the same game, with the
same minutes and the same rewards (tests/test_symmetry.py plays them side by side).

A learner may therefore show its network each position turned by any of them (AlphaGo
Zero's data augmentation, here four-fold): the turned position's policy target is the
turned policy, its value target the same value.
"""

from __future__ import annotations

import numpy as np

from . import rules

NUM_TURNS = 4  # quarter turns clockwise: 0, 90, 180, 270 degrees


def _turned_once(cell: int) -> int:
    """Where `cell` goes when the board is turned a quarter clockwise: (r, c) -> (c, 6 - r)."""
    row, col = divmod(cell, rules.BOARD_SIZE)
    return rules.cell_of(col, rules.BOARD_SIZE - 1 - row)


def _turn_tables() -> np.ndarray:
    """TURNED[k, cell]: the cell that `cell` becomes after k quarter turns clockwise."""
    tables = np.zeros((NUM_TURNS, rules.NUM_CELLS), dtype=np.int64)
    tables[0] = np.arange(rules.NUM_CELLS)
    for k in range(1, NUM_TURNS):
        tables[k] = [_turned_once(int(c)) for c in tables[k - 1]]
    return tables


TURNED = _turn_tables()
# SOURCE[k, cell]: the cell whose content lands on `cell` after k quarter turns
SOURCE = np.argsort(TURNED, axis=1)


def turn_action(action: int, turns: int) -> int:
    """The action `action` becomes after `turns` quarter turns (pass and show actions stay)."""
    action = int(action)
    if not 0 <= action < rules.NUM_PLACEMENT_ACTIONS:
        return action
    cell, value = rules.decode_action(action)
    return rules.action_id(int(TURNED[turns % NUM_TURNS, cell]), value)


def cell_column_sources(columns_per_cell: int, extra: int = 0) -> np.ndarray:
    """SOURCE-style column tables for rows laid out as `columns_per_cell` blocks of 49 cells
    (block-major: column = block * 49 + cell) followed by `extra` columns that do not move:
    table[k, column] is the column whose value lands there after k quarter turns."""
    blocks = np.arange(columns_per_cell)[None, :, None] * rules.NUM_CELLS
    cells = (blocks + SOURCE[:, None, :]).reshape(NUM_TURNS, -1)
    start = columns_per_cell * rules.NUM_CELLS
    return np.concatenate([cells, np.broadcast_to(np.arange(start, start + extra), (NUM_TURNS, extra))], axis=1)


def _action_sources(num_actions: int) -> np.ndarray:
    """table[k, action]: the action whose value lands on `action` after k quarter turns
    (placement c * 10 + v - 1 moves with its cell; pass and show actions stay)."""
    table = np.tile(np.arange(num_actions), (NUM_TURNS, 1))
    cells, values = np.divmod(np.arange(rules.NUM_PLACEMENT_ACTIONS), rules.MAX_VALUE)
    table[:, :rules.NUM_PLACEMENT_ACTIONS] = SOURCE[:, cells] * rules.MAX_VALUE + values
    return table


ACTION_SOURCES = _action_sources(rules.NUM_TEAM_ACTIONS)  # the widest action space; narrower ones are its prefix


def turn_columns(rows: np.ndarray, turns, sources: np.ndarray) -> np.ndarray:
    """rows (B, W), row b turned by `turns[b]` quarter turns through a column table
    `sources` (NUM_TURNS, >= W); a new array."""
    return np.take_along_axis(rows, sources[np.asarray(turns) % NUM_TURNS, :rows.shape[1]], axis=1)


def turn_action_rows(rows: np.ndarray, turns) -> np.ndarray:
    """Turn per-action rows: `rows` (B, A) indexed by action id (490 <= A <= 501: a mask, a
    policy, move features), row b by `turns[b]` quarter turns; the placement columns move
    with their cell, the others (pass, show) stay. A new array."""
    rows = np.asarray(rows)
    if rows.ndim != 2 or not rules.NUM_PLACEMENT_ACTIONS <= rows.shape[1] <= rules.NUM_TEAM_ACTIONS:
        raise ValueError(f"turn_action_rows: expected (batch, {rules.NUM_PLACEMENT_ACTIONS}.."
                         f"{rules.NUM_TEAM_ACTIONS}) rows, got shape {rows.shape}")
    return turn_columns(rows, turns, ACTION_SOURCES)
