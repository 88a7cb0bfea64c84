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


def layout_is_symmetric() -> bool:
    """Whether every quarter turn maps the start cell and the Double Time cells onto themselves."""
    doubles = set(rules.DOUBLE_TIME_CELLS)
    return all(TURNED[k, rules.START_CELL] == rules.START_CELL and {int(TURNED[k, c]) for c in doubles} == doubles
               for k in range(NUM_TURNS))


def turn_action(action: int, turns: int) -> int:
    """The action `action` becomes after `turns` quarter turns (pass and show actions stay)."""
    action = int(action)
    if not 0 <= action < rules.NUM_PLACEMENT_ACTIONS:
        return action
    cell, value = rules.decode_action(action)
    return rules.action_id(int(TURNED[turns % NUM_TURNS, cell]), value)


def turn_cell_rows(rows: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """Turn per-cell rows: `rows` (B, ..., 49) with the cell last, row b by `turns[b]`
    quarter turns; a new array."""
    source = SOURCE[np.asarray(turns) % NUM_TURNS]  # (B, 49)
    index = source.reshape(source.shape[:1] + (1,) * (rows.ndim - 2) + source.shape[1:])
    return np.take_along_axis(rows, np.broadcast_to(index, rows.shape), axis=-1)


def turn_action_rows(rows: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """Turn per-action rows: `rows` (B, A) indexed by action id (A >= 490: a mask, a policy,
    move features), row b by `turns[b]` quarter turns; the placement columns move with their
    cell, the others (pass, show) stay. A new array."""
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] < rules.NUM_PLACEMENT_ACTIONS:
        raise ValueError(f"turn_action_rows: expected (batch, >= {rules.NUM_PLACEMENT_ACTIONS}) rows, "
                         f"got shape {rows.shape}")
    out = rows.copy()
    placements = rows[:, :rules.NUM_PLACEMENT_ACTIONS].reshape(len(rows), rules.NUM_CELLS, rules.MAX_VALUE)
    turned = turn_cell_rows(placements.transpose(0, 2, 1), turns).transpose(0, 2, 1)
    out[:, :rules.NUM_PLACEMENT_ACTIONS] = turned.reshape(len(rows), rules.NUM_PLACEMENT_ACTIONS)
    return out
