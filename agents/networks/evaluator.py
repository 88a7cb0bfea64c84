"""A fast learned evaluator for search: position features and a small MLP, in numba.

`evaluate_position` scores a cut rollout's position by every seat's expected final
*search reward* (`agents.search.core.simulation_rewards` of an ended game), learned from
finished games, instead of as if the game had ended there. One evaluation costs well
under a microsecond, so the search keeps most of its simulation rate.

Features (`mover_features`), seat-rotated from the seat to move (slot 0 = the mover,
slot k = the seat k places after it):

=========  ==============================================================
index      meaning
=========  ==============================================================
0-3        score of slot k / 100
4-7        tiles in the hand of slot k / 6
8-11       the most minutes slot k could score with one placement now / 100
12-51      tiles of value v in the hand of slot k / 4, at 12 + 10 k + v - 1
52         (my score - the mean of the others') / 100
53         tiles left in the bag / 24
54         turns played / 50
55-64      open cells on which at most c fits / 10, at 54 + c (c = 1..10)
65         open cells / 20
66         Time Out stones / 10
67         tiles on the board / 49
68-70      one-hot player count 2, 3, 4
71         the team variant is on
=========  ==============================================================

The MLP (`agents.networks.Evaluator`, trained in torch by the self-play learner,
`training.learner`) maps the mover's features to one output per slot; a slot's value is
its output minus the mean of the other slots' outputs (team variant: half the difference
of the two teams' sums), so the values are zero-sum by construction. Its weights travel
to numba as one flat float64 array (`pack_mlp`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import kernel_cache, kernels, rules
from engine.access import (bag_left, current_seat, hand_count, hand_size, hand_values, is_team,
                           num_players, occupied_cells, score, timeout_cells, turn, values_that_fit)
from engine.kernels import helper, lowest_bit_index, open_cells, open_cells_with_capacity, without_lowest_bit

kernel_cache.register(__name__, "the agents' features and evaluators", 6)

NUM_FEATURES = 72
F_SCORE, F_HAND_SIZE, F_BEST, F_HAND = 0, 4, 8, 12
F_LEAD, F_BAG, F_TURN, F_CAPACITY, F_OPEN, F_TIMEOUTS, F_TILES, F_PLAYERS, F_TEAM = (
    52, 53, 54, 54, 65, 66, 67, 68, 71)  # capacity c (1..10) is at F_CAPACITY + c

HEADER = 4  # a packed MLP: [inputs, hidden1, hidden2, outputs, W1, b1, W2, b2, W3, b3]
_MAX_VALUE = rules.MAX_VALUE


@helper
def _best_points(grid, info, best):
    """best[seat] = the most minutes `seat` could score with one placement now."""
    n = num_players(info)
    held = 0
    for s in range(n):
        best[s] = 0
        held |= hand_values(info, s)
    cells = open_cells(info)
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = values_that_fit(grid, p, held)
        if fits == 0:
            continue
        r0, r1, r2, r3, run_set, scoring = kernels.scoring_setup(grid, p, fits)
        while scoring:
            v = lowest_bit_index(scoring)
            scoring = without_lowest_bit(scoring)
            points = kernels.placement_points(grid, p, v, r0, r1, r2, r3, run_set)
            for s in range(n):
                if (hand_values(info, s) >> v) & 1 and points > best[s]:
                    best[s] = points


@helper
def _features(grid, info, best, out):
    """The mover's features (module table) into out, given `_best_points`."""
    n = num_players(info)
    seat = current_seat(info)
    for k in range(NUM_FEATURES):
        out[k] = 0.0
    total = 0
    for k in range(n):
        s = seat + k
        if s >= n:
            s -= n
        total += score(info, s)
        out[F_SCORE + k] = score(info, s) / 100.0
        out[F_HAND_SIZE + k] = hand_size(info, s) / 6.0
        out[F_BEST + k] = best[s] / 100.0
        for v in range(1, _MAX_VALUE + 1):
            out[F_HAND + 10 * k + v - 1] = hand_count(info, s, v) / 4.0
    mine = score(info, seat)
    out[F_LEAD] = (mine - (total - mine) / (n - 1)) / 100.0
    out[F_BAG] = bag_left(info) / 24.0
    out[F_TURN] = turn(info) / 50.0
    num_open = 0
    for c in range(1, _MAX_VALUE + 1):
        k = open_cells_with_capacity(info, c)
        out[F_CAPACITY + c] = k / 10.0
        num_open += k
    out[F_OPEN] = num_open / 20.0
    out[F_TIMEOUTS] = kernels.popcount64(timeout_cells(info)) / 10.0
    out[F_TILES] = kernels.popcount64(occupied_cells(info)) / 49.0
    out[F_PLAYERS + n - 2] = 1.0
    out[F_TEAM] = 1.0 if is_team(info) else 0.0


@kernels.kernel
def _mover_features_into(grid, info, best, out):
    _best_points(grid, info, best)
    _features(grid, info, best, out)


def mover_features(grid: np.ndarray, info: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The features (float32, NUM_FEATURES) of the seat to move in the full state (grid, info)."""
    features = np.zeros(NUM_FEATURES, dtype=np.float64)
    _mover_features_into(grid, info, np.zeros(4, dtype=np.int64), features)
    if out is None:
        return features.astype(np.float32)
    out[:] = features
    return out


@njit(cache=True)
def batch_mover_features(grid, info, out):
    """out[i] = `mover_features` of game i (grid (N, ...), info (N, ...), out (N, NUM_FEATURES))."""
    best = np.zeros(4, dtype=np.int64)
    row = np.zeros(NUM_FEATURES, dtype=np.float64)
    for i in range(grid.shape[0]):
        _mover_features_into(grid[i], info[i], best, row)
        for k in range(NUM_FEATURES):
            out[i, k] = row[k]


@helper
def _affine(net, weights, bias, x, num_in, num_out, relu, out):
    """out = bias + (ReLU of, if `relu`) x @ W, W stored row-major at net[weights:]; zero
    inputs are skipped (most features are 0: empty seats, values not held)."""
    w = net[weights:weights + num_in * num_out]  # a view indexed from 0: LLVM can prove the
    b = net[bias:bias + num_out]                 # indices non-negative and vectorize the rows
    for j in range(num_out):
        out[j] = b[j]
    for i in range(num_in):
        xi = x[i]
        if relu and xi < 0.0:
            xi = 0.0
        if xi != 0.0:
            row = i * num_out
            for j in range(num_out):
                out[j] += xi * w[row + j]


@helper
def _forward(net, x, h1, h2, out):
    """out[k] = output k of the packed MLP (see `pack_mlp`) on the features x; h1, h2
    are scratch rows of at least the hidden widths."""
    num_in = np.int64(net[0])
    n1 = np.int64(net[1])
    n2 = np.int64(net[2])
    n3 = np.int64(net[3])
    w1 = HEADER
    b1 = w1 + num_in * n1
    w2 = b1 + n1
    b2 = w2 + n1 * n2
    w3 = b2 + n2
    b3 = w3 + n2 * n3
    _affine(net, w1, b1, x, num_in, n1, False, h1)
    _affine(net, w2, b2, h1, n1, n2, True, h2)
    _affine(net, w3, b3, h2, n2, n3, True, out)


@kernels.kernel
def evaluate_position(grid, info, net, features, hidden, best, out):
    """Every seat's value (out[s], absolute seats) of the world (grid, info) by the packed
    MLP `net`, read from the mover's features. Scratch: features float64
    (NUM_FEATURES,), hidden float64 (3, width), best int64 (4,)."""
    n = num_players(info)
    mover = current_seat(info)
    _mover_features_into(grid, info, best, features)
    slot = hidden[2]
    _forward(net, features, hidden[0], hidden[1], slot)
    if is_team(info):  # slots 0 and 2 are the mover's team
        lead = 0.5 * ((slot[0] + slot[2]) - (slot[1] + slot[3]))
        for k in range(4):
            s = (mover + k) % 4
            out[s] = lead if k % 2 == 0 else -lead
        return
    total = 0.0
    for k in range(n):
        total += slot[k]
    for k in range(n):  # each slot minus the mean of the others': zero-sum
        s = mover + k
        if s >= n:
            s -= n
        out[s] = (n * slot[k] - total) / (n - 1)


def pack_mlp(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, w3: np.ndarray,
             b3: np.ndarray) -> np.ndarray:
    """The flat float64 array `evaluate_position` reads: ``[inputs, hidden1, hidden2,
    outputs, W1, b1, W2, b2, W3, b3]`` with w1 (inputs, hidden1), w2 (hidden1, hidden2),
    w3 (hidden2, outputs) (torch's Linear weights transposed)."""
    num_in, n1 = w1.shape
    n2, n3 = w3.shape
    if w2.shape != (n1, n2) or b1.shape != (n1,) or b2.shape != (n2,) or b3.shape != (n3,):
        raise ValueError("inconsistent MLP shapes")
    return np.concatenate([[num_in, n1, n2, n3], w1.ravel(), b1, w2.ravel(), b2, w3.ravel(), b3]).astype(np.float64)


@kernels.kernel
def _evaluate_into(grid, info, net, features, hidden, best, out):
    evaluate_position(grid, info, net, features, hidden, best, out)


def evaluate(grid: np.ndarray, info: np.ndarray, net: np.ndarray) -> np.ndarray:
    """Every seat's value (float64 (4,), absolute seats; 0 beyond the player count) of
    the full state (grid, info) by the packed MLP `net` (for tests and inspection)."""
    if len(net) < HEADER:
        raise ValueError("no evaluator: the packed MLP is empty")
    width = int(max(net[1], net[2], net[3]))
    out = np.zeros(4, dtype=np.float64)
    _evaluate_into(grid, info, net, np.zeros(NUM_FEATURES), np.zeros((3, width)), np.zeros(4, dtype=np.int64), out)
    return out
