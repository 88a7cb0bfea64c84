"""Sampling full worlds consistent with what one seat knows (for search agents).

A seat knows the board, its own hand, every hand size, the bag size and, in the team
variant, the tile its partner shows. Everything else (the other hands, the bag order,
the 3 removed tiles) is a uniformly random arrangement of the *unseen tiles*: the 40
tiles minus the board, minus its own hand, minus the partner's shown tile.

`sample_world` reads only that public part of the state, so two states that differ
only in hidden information give the same worlds for the same random stream.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import rules
from .kernels import add_to_hand, copy_state, kernel, rng_below
from .layout import (BAG_POS, DEAL, HAND, HAND_MASK, HAND_SIZE, NUM_PLAYERS, PAD_OF_CELL,
                     SHOWN, TEAM, VAL)

_NUM_TILES = rules.NUM_TILES
SCRATCH_LEN = 64  # int64 scratch a caller passes in, so the kernel allocates nothing


@njit(inline="always", cache=True)
def unseen_counts_into(grid, info, seat, counts):
    """counts[v] = how many tiles of value v the seat has not seen (v = 1..10); for
    kernels (Python code calls `unseen_counts`). Reads only what the seat sees."""
    for v in range(1, 11):
        counts[v] = 4 - info[HAND + seat * 11 + v]
    counts[0] = 0
    for c in range(49):
        counts[grid[PAD_OF_CELL[c], VAL]] -= 1
    counts[0] = 0
    partner = (seat + 2) % 4
    if info[TEAM] == 1 and info[SHOWN + partner] > 0:
        counts[info[SHOWN + partner]] -= 1


@njit(inline="always", cache=True)
def unseen_tiles(grid, info, seat, counts, tiles):
    """Write the tiles `seat` has not seen into `tiles` (sorted); return how many.
    `counts` (length >= 11) is scratch. Reads only what the seat sees."""
    unseen_counts_into(grid, info, seat, counts)
    n = 0
    for v in range(1, 11):
        for _ in range(counts[v]):
            tiles[n] = v
            n += 1
    return n


@njit(inline="always", cache=True)
def deal_unseen(grid, info, seat, tiles, n, rng, out_grid, out_info):
    """Copy the state into (out_grid, out_info) and deal the `n` unseen `tiles` afresh
    (they are shuffled in place) to the other hands, the bag and the removed tiles.
    The consumed part of the deal (initial hands and drawn tiles, hidden history) is
    zeroed. Returns the advanced rng."""
    copy_state(grid, info, out_grid, out_info)
    for i in range(n - 1, 0, -1):  # Fisher-Yates
        rng, j = rng_below(rng, i + 1)
        t = tiles[i]
        tiles[i] = tiles[j]
        tiles[j] = t
    k = 0
    num_players = info[NUM_PLAYERS]
    partner = (seat + 2) % 4 if info[TEAM] == 1 else -1
    for other in range(num_players):
        if other == seat:
            continue
        size = info[HAND_SIZE + other]
        for v in range(11):
            out_info[HAND + other * 11 + v] = 0
        out_info[HAND_MASK + other] = 0
        out_info[HAND_SIZE + other] = 0
        if other == partner and info[SHOWN + other] > 0:
            add_to_hand(out_info, other, info[SHOWN + other])
            size -= 1
        else:
            out_info[SHOWN + other] = 0  # an opponent's shown tile is not ours to see
        for _ in range(size):
            add_to_hand(out_info, other, tiles[k])
            k += 1
    bag_pos = info[BAG_POS]
    for i in range(bag_pos, _NUM_TILES):  # the bag, in a fresh random order
        out_info[DEAL + i] = tiles[k]
        k += 1
    for i in range(1, 4):  # the removed tiles
        out_info[DEAL + i] = tiles[k]
        k += 1
    for i in range(4, bag_pos):  # hands dealt and tiles drawn: hidden history
        out_info[DEAL + i] = 0
    return rng


@kernel
def sample_world(grid, info, seat, rng, out_grid, out_info, scratch):
    """Write into (out_grid, out_info) a world consistent with `seat`'s information:
    the other hands, the bag and the removed tiles dealt at random from the unseen
    tiles. Returns the advanced rng (uint64)."""
    counts = scratch[:11]
    tiles = scratch[16:16 + _NUM_TILES]
    n = unseen_tiles(grid, info, seat, counts, tiles)
    return deal_unseen(grid, info, seat, tiles, n, rng, out_grid, out_info)


def unseen_counts(state, seat: int) -> np.ndarray:
    """Per value 1..10 (index v-1): tiles `seat` has not seen (other hands, bag, removed)."""
    counts = np.zeros(11, dtype=np.int64)
    grid, info = state.arrays
    _unseen_counts_py(grid, info, seat, counts)
    return counts[1:]


@kernel
def _unseen_counts_py(grid, info, seat, counts):
    unseen_counts_into(grid, info, seat, counts)
