"""Memory layout of one game state for the numba kernels.

A game is two small arrays, so that copying a state (for search) is two memcpy's:

* ``grid``: int16 ``(GRID_CELLS, GRID_CHANNELS)``, one row per cell of a padded board.
  Cells are indexed ``pad = (row + 1) * 8 + (col + 1)``: the 7x7 board sits inside a
  border of always-empty "sink" cells, so walking off a line needs no bounds test, and
  every board cell has an index 9..63, so a set of cells fits in one 64-bit word. The
  padded order is the cell-id order, so bit order gives sorted action ids.
  Channels per cell:

  ====================  ==========================================================
  ``VAL``               the tile value on the cell, 0 when empty
  ``CAP``               the largest value that still fits there, clipped to 0..10
                        (only meaningful for empty frontier cells; 0 = Time Out)
  ``RUN_BEFORE + 2a``   for an empty cell: the tile run just before it on axis a,
                        packed ``sum | length << 8`` (so two runs merge with one add)
  ``RUN_AFTER + 2a``    the same for the run just after it
  ====================  ==========================================================

* ``info``: int64 ``(INFO_LEN,)``, the bitboards and every scalar, at the named
  offsets below.

The batch API stacks these: ``grid (N, GRID_CELLS, GRID_CHANNELS)``, ``info (N, INFO_LEN)``.
"""

from __future__ import annotations

import numpy as np

from . import rules

# --- the padded board ----------------------------------------------------------------
PAD_WIDTH = 8
GRID_CELLS = 80  # 10 padded rows of 8; the lowest-right walk off the board lands on 72
GRID_CHANNELS = 10
VAL, CAP = 0, 1
RUN_BEFORE, RUN_AFTER = 2, 3  # + 2 * axis
LEN_SHIFT = 8  # a packed run is sum | length << LEN_SHIFT
SUM_MASK = (1 << LEN_SHIFT) - 1
MAX_CAP = rules.MAX_VALUE

# Padded step for each axis of rules.AXES: row (0,1), col (1,0), diag (1,1), anti (1,-1).
AXIS_STEP = tuple(dr * PAD_WIDTH + dc for dr, dc in rules.AXIS_STEPS)  # (1, 8, 9, 7)


def pad_of(cell: int) -> int:
    row, col = divmod(cell, rules.BOARD_SIZE)
    return (row + 1) * PAD_WIDTH + col + 1


PAD_OF_CELL = np.array([pad_of(c) for c in range(rules.NUM_CELLS)], dtype=np.int64)
CELL_OF_PAD = np.full(GRID_CELLS, -1, dtype=np.int64)
CELL_OF_PAD[PAD_OF_CELL] = np.arange(rules.NUM_CELLS)
ON_BOARD = int(sum(1 << int(p) for p in PAD_OF_CELL)) - (1 << 64)  # as a signed int64
IS_DOUBLE_TIME = np.zeros(GRID_CELLS, dtype=np.int8)
IS_DOUBLE_TIME[PAD_OF_CELL[list(rules.DOUBLE_TIME_CELLS)]] = 1

# --- info: bitboards and scalars ---------------------------------------------------------
OCCUPIED = 0  # bitboard of cells holding a tile
FRONTIER = 1  # bitboard of empty cells touching a tile (Time Outs included)
TIMEOUT = 2  # bitboard of Time Out stones
NUM_PLAYERS = 3
TEAM = 4  # 1 in the team variant
CURRENT = 5  # seat to move
TURN = 6  # placements + passes made so far
BAG_POS = 7  # index into DEAL of the next tile to draw (40 = empty bag)
OVER = 8  # 1 once no seat has a legal placement
SHOWN_THIS_TURN = 9  # team variant: the mover already showed a tile this turn
LAST_POINTS = 10
LAST_ACTION = 11  # -1 at the start
SCORE = 12  # + seat
HAND_SIZE = 16  # + seat
SHOWN = 20  # + seat: value shown to the partner, 0 = none
HAND_MASK = 24  # + seat: bit v set while the seat holds a tile of value v
HAND = 28  # + seat * 11 + v: count of value v in the seat's hand
HAND_STRIDE = rules.MAX_VALUE + 1  # the 11 of HAND: counts of values 0..10 per seat (0 unused)
CAP_COUNTS = HAND + 4 * 11  # open cells per capacity 1..10, packed 6 bits each (kernels.CAP_UNIT)
DEAL = CAP_COUNTS + 1  # + i: the 40 tile values in draw order
# Breakdown of the last placement: per axis 6 numbers, then the 24/7 pair count and
# the Double Time flag.
BREAKDOWN = DEAL + rules.NUM_TILES
BD_SUM7, BD_SUM24, BD_IN7, BD_RUN_UP, BD_RUN_DOWN, BD_SET = range(6)
BD_PER_AXIS = 6
BD_PAIRS = BREAKDOWN + 4 * BD_PER_AXIS  # a * b of the 24/7 bonus
BD_DOUBLE = BD_PAIRS + 1  # 1 when doubled
# What the seats' passes made public (a seat passes only when none of its tiles fits):
# at its last pass every tile of the seat was above PASS_CAP (the largest capacity of an
# open cell then), and at least PASS_HELD of its current tiles are tiles of that hand.
# A placement of a tile above PASS_CAP may have used one of them, so it lowers PASS_HELD
# by one; a smaller tile cannot have been one. PASS_HELD = 0 (PASS_CAP 0): nothing known.
PASS_CAP = BD_DOUBLE + 1  # + seat
PASS_HELD = PASS_CAP + 4  # + seat
INFO_LEN = PASS_HELD + 4
