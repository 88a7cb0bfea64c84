"""Issue 56, F2's machinery: a board-reading evaluator with an incrementally updated first layer (NNUE).
RESULTS.md: "2026-12-06, 06:40-08:10 UTC" (issue 56 F2: the NNUE evaluator learned from its own games)
Verdict: F2 not reached: at 520,000 games of its own one-move-ahead agent (with the threat features)
the information-set evaluator's held-out MSE is 0.877 (bar 0.854) and the agent scores 0.724 against
greedy (bar 0.78); v1 alone stalled at 1.01 and 0.39. Both curves flat after 100,000 games; at
1,000,000 games 0.871 and 0.726 (0.709-0.726 on three sets of deals): the stop rule fires, stop.

    python research/nnue.py --self-test        # encoding, torch == numba, incremental == refresh

The input encoding is /work/nnue_spec.md (v1), shared with helper f1 (issue 56 F1, offline fits):
a position is read from a **perspective seat p**, as sparse binary features at fixed offsets:

==========  =====  ====================================================================
block       size   active feature
==========  =====  ====================================================================
BOARD       539    ``c * 11 + (v - 1)`` for a tile v on cell c (= row * 7 + col),
                   ``c * 11 + 10`` for a Time Out stone on c
HANDS       160    ``HANDS + (r * 10 + (v - 1)) * 4 + (k - 1)`` while relative seat r
                   (= (seat - p) mod P) holds at least k tiles of value v (k = 1..4);
                   the full-state variant reads every seat, the information-set one r = 0
POOL        40     ``POOL + (v - 1) * 4 + (k - 1)``: at least k tiles of value v unseen
                   (full: not on the board nor in any hand; information set: not on the
                   board nor in p's hand)
BAG         41     ``BAG + min(tiles left in the bag, 40)``
LEAD        93     ``LEAD + (r - 1) * 31 + clip((score[p] - score[r]) // 10 + 15, 0, 30)``, r = 1..P-1
TOMOVE      4      ``TOMOVE + (seat to move - p) mod P``
==========  =====  ====================================================================

A position activates at most MAX_ACTIVE of the NUM_FEATURES features. `active_features`
writes them (a numba full refresh), `featurize` does it for N stacked states.

The network (`NNUE`, torch) is Stockfish's shape at a smaller size: the accumulator
A = b0 + the sum of W0's rows of the active features (an `EmbeddingBag` in mode "sum"),
clipped to [0, 1], then dense layers H -> 32 -> 32 -> P with clipped ReLUs; output r is
the value of relative seat r, in the units of the search reward
(`agents.search.core.simulation_rewards` with `MARGIN`). Because A is a sum of rows, a
move changes it by adding and subtracting a few rows (`add_row`, `sub_row`): the numba side
keeps it incrementally (`update_accumulator`) and checks itself against a refresh.

Information-set afterstates (the one-move-ahead agent's view after its own placement, before
its draw): the drawn tile is unknown to the mover, so `hidden_draw` = that tile is left out
of the mover's hand and counted in the bag (it stays in the pool).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from numba import njit
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.policy_kernels import greedy_action  # noqa: E402
from agents.search.core import simulation_rewards  # noqa: E402
from agents.settings import MARGIN  # noqa: E402
from engine import access, kernels, rules  # noqa: E402
from engine.layout import CELL_OF_PAD, GRID_CELLS, GRID_CHANNELS, INFO_LEN  # noqa: E402

# --- the encoding (v1) ---------------------------------------------------------------------------
ENCODING = "nnue-v1"
_MAX_VALUE = rules.MAX_VALUE  # 10
_COPIES = 4  # tiles of each value
_CELL_STRIDE = _MAX_VALUE + 1  # 10 tile values and the Time Out stone
TIMEOUT_SLOT = _MAX_VALUE  # c * 11 + 10
BOARD = 0
HANDS = BOARD + rules.NUM_CELLS * _CELL_STRIDE  # 539
POOL = HANDS + 4 * _MAX_VALUE * _COPIES  # 699
BAG = POOL + _MAX_VALUE * _COPIES  # 739
BAG_CAP = 40
LEAD = BAG + BAG_CAP + 1  # 780
LEAD_BUCKETS = 31
LEAD_STEP = 10  # minutes per bucket
TOMOVE = LEAD + 3 * LEAD_BUCKETS  # 873
NUM_FEATURES = TOMOVE + 4  # 877
PAD = NUM_FEATURES  # the padding index of `featurize`'s rows (a zero row of the embedding)
# board cells (tiles + stones <= 49), hands + pool (<= 40 tiles), bag, 3 leads, to move
MAX_ACTIVE = rules.NUM_CELLS + rules.NUM_TILES + 1 + 3 + 1  # 94
# The threats extension (not in the shared v1 spec; `threats=True`): the most minutes one placement
# scores now with a value p holds (MINE) and with a value p cannot see (THEIRS: another hand, the
# bag or the removed tiles), in buckets of 10 minutes, one block each for "p to move" and "another
# seat to move": ``THREATS + (to move != p) * 32 + (0 for MINE, 16 for THEIRS) + min(minutes // 10, 15)``.
# The blocks sit past PAD, so v1 rows and PAD keep their indices.
THREATS = PAD + 1  # 878
THREAT_BUCKETS = 16
NUM_ROWS_THREATS = THREATS + 4 * THREAT_BUCKETS  # 942 embedding rows of a threats network
MAX_ACTIVE_THREATS = MAX_ACTIVE + 2
MAX_ROWS = NUM_ROWS_THREATS  # scratch sizes that serve both
HIDDEN2 = 32
HIDDEN3 = 32

_CELL_OF_PAD = CELL_OF_PAD


@njit(inline="always", cache=True)
def _lead_bucket(diff):
    b = diff // LEAD_STEP + 15
    if b < 0:
        return 0
    if b > LEAD_BUCKETS - 1:
        return LEAD_BUCKETS - 1
    return b


@njit(inline="always", cache=True)
def _best_minutes(grid, info, mine, theirs):
    """The most minutes one placement scores now with a value of the mask `mine`, and with
    one of `theirs` (0 when nothing scores)."""
    best_mine = 0
    best_theirs = 0
    cells = kernels.open_cells(info)
    while cells:
        q = kernels.lowest_bit_index(cells)
        cells = kernels.without_lowest_bit(cells)
        fits = access.values_that_fit(grid, q, mine | theirs)
        if fits == 0:
            continue
        r0, r1, r2, r3, run_set, scoring = kernels.scoring_setup(grid, q, fits)
        while scoring:
            v = kernels.lowest_bit_index(scoring)
            scoring = kernels.without_lowest_bit(scoring)
            points = kernels.placement_points(grid, q, v, r0, r1, r2, r3, run_set)
            if (mine >> v) & 1 and points > best_mine:
                best_mine = points
            if (theirs >> v) & 1 and points > best_theirs:
                best_theirs = points
    return best_mine, best_theirs


@njit(cache=True)
def features_into(grid, info, p, full, hidden_draw, threats, seen, out):
    """Write the active features of (grid, info) from seat p into out (int, >= MAX_ACTIVE,
    MAX_ACTIVE_THREATS with `threats`); return how many. `full`: read every hand (else only
    p's). `hidden_draw` (1..10, 0 = none; information set only): a tile p just drew but does
    not know yet, left out of its hand and counted in the bag. `threats`: add the threat
    features (THREATS). `seen`: int64 scratch (11,)."""
    n_players = access.num_players(info)
    n = 0
    board = seen
    for v in range(_MAX_VALUE + 1):
        board[v] = 0
    cells = access.occupied_cells(info)
    while cells:
        q = kernels.lowest_bit_index(cells)
        cells = kernels.without_lowest_bit(cells)
        v = access.tile_value(grid, q)
        board[v] += 1
        out[n] = BOARD + _CELL_OF_PAD[q] * _CELL_STRIDE + v - 1
        n += 1
    cells = access.timeout_cells(info)
    while cells:
        q = kernels.lowest_bit_index(cells)
        cells = kernels.without_lowest_bit(cells)
        out[n] = BOARD + _CELL_OF_PAD[q] * _CELL_STRIDE + TIMEOUT_SLOT
        n += 1
    if not full:
        hidden = hidden_draw
    else:
        hidden = 0
    seen = board  # board, then every hand read
    seats = n_players if full else 1
    mine = 0
    for r in range(seats):
        s = (p + r) % n_players
        for v in range(1, _MAX_VALUE + 1):
            c = access.hand_count(info, s, v)
            if r == 0 and v == hidden:
                c -= 1
            if r == 0 and c > 0:
                mine |= np.int64(1) << v
            seen[v] += c
            for k in range(min(c, _COPIES)):
                out[n] = HANDS + (r * _MAX_VALUE + v - 1) * _COPIES + k
                n += 1
    for v in range(1, _MAX_VALUE + 1):
        for k in range(_COPIES - seen[v]):
            out[n] = POOL + (v - 1) * _COPIES + k
            n += 1
    bag = access.bag_left(info) + (1 if hidden > 0 else 0)
    out[n] = BAG + min(bag, BAG_CAP)
    n += 1
    my_score = access.score(info, p)
    for r in range(1, n_players):
        s = (p + r) % n_players
        out[n] = LEAD + (r - 1) * LEAD_BUCKETS + _lead_bucket(my_score - access.score(info, s))
        n += 1
    to_move = (access.current_seat(info) - p) % n_players
    out[n] = TOMOVE + to_move
    n += 1
    if threats:
        theirs = 0
        if full:
            for r in range(1, n_players):
                theirs |= access.hand_values(info, (p + r) % n_players)
        else:
            for v in range(1, _MAX_VALUE + 1):
                if seen[v] < _COPIES:
                    theirs |= np.int64(1) << v
        best_mine, best_theirs = _best_minutes(grid, info, mine, theirs)
        base = THREATS + (0 if to_move == 0 else 2 * THREAT_BUCKETS)
        out[n] = base + min(best_mine // 10, THREAT_BUCKETS - 1)
        out[n + 1] = base + THREAT_BUCKETS + min(best_theirs // 10, THREAT_BUCKETS - 1)
        n += 2
    return n


@njit(cache=True)
def active_features(grid, info, p, full, out):
    """The active features of the state (grid, info) from seat p (module table) into out;
    returns how many (at most MAX_ACTIVE). `full`: the full-state variant (every hand)."""
    return features_into(grid, info, p, full, 0, False, np.zeros(_MAX_VALUE + 1, dtype=np.int64), out)


@njit(cache=True)
def _featurize(grid, info, persp, full, hidden_draw, threats, out, counts):
    row = np.zeros(MAX_ACTIVE_THREATS + 8, dtype=np.int64)
    seen = np.zeros(_MAX_VALUE + 1, dtype=np.int64)
    for i in range(grid.shape[0]):
        m = features_into(grid[i], info[i], persp[i], full, hidden_draw[i], threats, seen, row)
        counts[i] = m
        for j in range(m):
            out[i, j] = row[j]
        for j in range(m, out.shape[1]):
            out[i, j] = PAD


def featurize(grid: np.ndarray, info: np.ndarray, persp: np.ndarray, full: bool,
              hidden_draw: np.ndarray | None = None, threats: bool = False) -> np.ndarray:
    """The active features of N stacked states (grid (N, 80, 10), info (N, INFO_LEN)) from the
    seats `persp` (N,): int16 (N, MAX_ACTIVE), each row padded with PAD (the torch model's
    input). `hidden_draw` (N,) as `features_into` (information set only); `threats`: with the
    threat features (rows of MAX_ACTIVE_THREATS)."""
    grid, info = np.ascontiguousarray(grid), np.ascontiguousarray(info)
    if grid.ndim != 3 or info.ndim != 2 or grid.shape[0] != info.shape[0]:
        raise ValueError(f"featurize: stacked states expected, got grid {grid.shape} and info {info.shape}")
    n = grid.shape[0]
    persp = np.asarray(persp, dtype=np.int64).reshape(-1)
    if persp.shape != (n,) or (n and (persp.min() < 0 or (persp >= info[:, 3]).any())):
        raise ValueError("featurize: persp must hold one seat of each game, below its player count")
    hidden = np.zeros(n, dtype=np.int64) if hidden_draw is None else np.asarray(hidden_draw, dtype=np.int64)
    out = np.empty((n, MAX_ACTIVE_THREATS if threats else MAX_ACTIVE), dtype=np.int16)
    _featurize(grid, info, persp, bool(full), hidden, bool(threats), out, np.zeros(n, dtype=np.int64))
    return out


# --- the network (torch) ---------------------------------------------------------------------------
class NNUE(nn.Module):
    """Accumulator (EmbeddingBag sum over the active features + bias), clipped ReLU,
    H -> 32 -> 32 -> P. Input: int (N, MAX_ACTIVE) rows of feature indices padded with PAD;
    output (N, P): the value of each relative seat (r = 0 the perspective)."""

    def __init__(self, hidden: int = 128, players: int = 2, threats: bool = False) -> None:
        super().__init__()
        if hidden < 1 or players not in (2, 3, 4):
            raise ValueError(f"NNUE: hidden must be >= 1 and players 2..4, got {hidden}, {players}")
        self.hidden, self.players, self.threats = int(hidden), int(players), bool(threats)
        rows = NUM_ROWS_THREATS if self.threats else NUM_FEATURES + 1
        self.embed = nn.EmbeddingBag(rows, self.hidden, mode="sum", padding_idx=PAD)
        self.bias = nn.Parameter(torch.zeros(self.hidden))
        self.l1 = nn.Linear(self.hidden, HIDDEN2)
        self.l2 = nn.Linear(HIDDEN2, HIDDEN3)
        self.out = nn.Linear(HIDDEN3, self.players)
        with torch.no_grad():  # about 30 features are active: keep the accumulator's start in [0, 1]
            self.embed.weight.normal_(0.0, 0.5 / np.sqrt(30.0))
            self.embed.weight[PAD].zero_()
            self.bias.fill_(0.5)

    def accumulator(self, idx: torch.Tensor) -> torch.Tensor:
        return self.embed(idx.long()) + self.bias

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = torch.clamp(self.accumulator(idx), 0.0, 1.0)
        x = torch.clamp(self.l1(x), 0.0, 1.0)
        x = torch.clamp(self.l2(x), 0.0, 1.0)
        return self.out(x)


def save(model: NNUE, path: str) -> None:
    """Write the model (its state dict and sizes), replacing the file whole."""
    tmp = f"{path}.tmp"
    torch.save({"encoding": ENCODING, "hidden": model.hidden, "players": model.players, "threats": model.threats,
                "state": model.state_dict()}, tmp)
    os.replace(tmp, path)


def load(path: str) -> NNUE:
    """A model written by `save` (loaded with weights_only=True)."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(blob, dict) or blob.get("encoding") != ENCODING:
        raise ValueError(f"{path}: not an {ENCODING} NNUE checkpoint")
    model = NNUE(int(blob["hidden"]), int(blob["players"]), bool(blob.get("threats", False)))
    model.load_state_dict(blob["state"])
    return model


def export(model: NNUE) -> tuple[np.ndarray, ...]:
    """The weights as float32 numpy arrays for numba: (W0 (embedding rows, H) with a zero PAD
    row, b0 (H,), W1 (H, 32), b1, W2 (32, 32), b2, W3 (32, P), b3), the dense ones transposed
    to (in, out)."""
    def f32(t):
        return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float32)
    return (f32(model.embed.weight), f32(model.bias), f32(model.l1.weight.T), f32(model.l1.bias),
            f32(model.l2.weight.T), f32(model.l2.bias), f32(model.out.weight.T), f32(model.out.bias))


# --- the network (numba) ---------------------------------------------------------------------------
@njit(inline="always", cache=True)
def add_row(acc, w0, f):
    """acc += W0[f] (feature f became active)."""
    row = w0[f]
    for j in range(acc.shape[0]):
        acc[j] += row[j]


@njit(inline="always", cache=True)
def sub_row(acc, w0, f):
    """acc -= W0[f] (feature f became inactive)."""
    row = w0[f]
    for j in range(acc.shape[0]):
        acc[j] -= row[j]


@njit(cache=True)
def refresh(net, feats, count, acc):
    """acc = b0 + the rows of the `count` active features `feats` (a full refresh)."""
    w0, b0 = net[0], net[1]
    for j in range(acc.shape[0]):
        acc[j] = b0[j]
    for i in range(count):
        add_row(acc, w0, feats[i])


@njit(cache=True)
def update_accumulator(net, old, n_old, new, n_new, mark, acc):
    """acc (the accumulator of the feature set old[:n_old]) becomes that of new[:n_new]:
    only the rows that differ are added or subtracted. `mark` is int8 scratch
    (MAX_ROWS,), all zero, and left so."""
    w0 = net[0]
    for i in range(n_old):
        mark[old[i]] = 1
    for i in range(n_new):
        f = new[i]
        if mark[f] == 1:
            mark[f] = 2  # in both
        else:
            add_row(acc, w0, f)
    for i in range(n_old):
        f = old[i]
        if mark[f] == 1:
            sub_row(acc, w0, f)
        mark[f] = 0


@njit(inline="always", cache=True)
def _dense_clipped(x, w, b, out):
    """out = clip(b + x @ w, 0, 1), x clipped already."""
    for j in range(out.shape[0]):
        out[j] = b[j]
    for i in range(x.shape[0]):
        xi = x[i]
        if xi != 0.0:
            row = w[i]
            for j in range(out.shape[0]):
                out[j] += xi * row[j]


@njit(cache=True)
def forward(net, acc, scratch, out):
    """out[r] = the network's value of relative seat r, from the accumulator acc.
    scratch float32 (3, max(H, 32))."""
    hidden = acc.shape[0]
    x = scratch[0, :hidden]
    for j in range(hidden):
        a = acc[j]
        x[j] = 0.0 if a < 0.0 else (1.0 if a > 1.0 else a)
    h1 = scratch[1, :HIDDEN2]
    _dense_clipped(x, net[2], net[3], h1)
    for j in range(HIDDEN2):
        h1[j] = min(max(h1[j], 0.0), 1.0)
    h2 = scratch[2, :HIDDEN3]
    _dense_clipped(h1, net[4], net[5], h2)
    for j in range(HIDDEN3):
        h2[j] = min(max(h2[j], 0.0), 1.0)
    w3, b3 = net[6], net[7]
    for r in range(out.shape[0]):
        out[r] = b3[r]
    for i in range(HIDDEN3):
        for r in range(out.shape[0]):
            out[r] += h2[i] * w3[i, r]


def new_scratch(hidden: int) -> np.ndarray:
    return np.zeros((3, max(int(hidden), HIDDEN2, HIDDEN3)), dtype=np.float32)


# --- the one-move-ahead agent ----------------------------------------------------------------------
MAX_PLIES = 128  # placements (at most 36) and passes of one game, with room to spare
MAX_LEGAL = rules.NUM_PLACEMENT_ACTIONS
PASS = rules.PASS_ACTION
DEAL_BASE = 10**6  # match deal d is engine.random_deal(DEAL_BASE + d), as research/duplicate_deals.py


def new_workspace(hidden: int) -> tuple:
    """Scratch arrays of the agent's kernels (`afterstate_values`), allocated once per process."""
    after_grid, after_info = access.new_arrays()
    return (np.zeros(MAX_LEGAL, np.int64), np.zeros(MAX_LEGAL, np.float32), after_grid, after_info,
            np.zeros(MAX_ACTIVE_THREATS + 8, np.int64), np.zeros(MAX_ACTIVE_THREATS + 8, np.int64),
            np.zeros(_MAX_VALUE + 1, np.int64), np.zeros(MAX_ROWS, np.int8), np.zeros(hidden, np.float32), np.zeros(hidden, np.float32),
            new_scratch(hidden), np.zeros(4, np.float32), np.zeros(4, np.float64), np.zeros(_MAX_VALUE + 1, np.int64))



@njit(inline="always", cache=True)
def _drawn_tile(before, after_info, p, action):
    """The tile seat p drew with `action`, from its hand counts `before` the move and after
    it (0 when it drew nothing: a pass, or the bag was empty)."""
    if action >= PASS:
        return 0
    placed = action % _MAX_VALUE + 1
    for v in range(1, _MAX_VALUE + 1):
        expected = before[v] - (1 if v == placed else 0)
        if access.hand_count(after_info, p, v) > expected:
            return v
    return 0


@njit(cache=True)
def afterstate_values(grid, info, net, ws):
    """For the seat to move p, every legal placement (ws[0][:m], increasing ids; the pass
    alone when nothing fits) and its afterstate's value for p (ws[1][:m]): output r = 0 of
    the information-set network from p, p's fresh draw unknown (`hidden_draw`), or the
    exact search reward (`simulation_rewards` with `MARGIN`) when the move ends the game.
    The accumulator is refreshed once for the position and updated per move. Returns m."""
    (legal, values, after_grid, after_info, feats, feats_after, seen, mark, acc_now, acc, scratch, out,
     rewards, before) = ws
    p = access.current_seat(info)
    m = kernels.legal_placements(grid, info, legal)
    if m == 0:
        legal[0] = PASS
        m = 1
    threats = net[0].shape[0] > NUM_FEATURES + 1
    n_now = features_into(grid, info, p, False, 0, threats, seen, feats)
    refresh(net, feats, n_now, acc_now)
    for v in range(_MAX_VALUE + 1):
        before[v] = access.hand_count(info, p, v)
    hidden = acc.shape[0]
    for j in range(m):
        kernels.copy_state(grid, info, after_grid, after_info)
        kernels.apply_action(after_grid, after_info, legal[j])
        if access.is_over(after_info):
            simulation_rewards(after_info, rewards, MARGIN)
            values[j] = rewards[p]
            continue
        drawn = _drawn_tile(before, after_info, p, legal[j])
        n_after = features_into(after_grid, after_info, p, False, drawn, threats, seen, feats_after)
        for k in range(hidden):
            acc[k] = acc_now[k]
        update_accumulator(net, feats, n_now, feats_after, n_after, mark, acc)
        forward(net, acc, scratch, out)
        values[j] = out[0]
    return m


@njit(cache=True)
def agent_action(grid, info, net, epsilon, rng, ws):
    """The one-move-ahead agent's action for the seat to move: with probability `epsilon` a
    uniform legal placement, else the placement of the highest afterstate value (the
    first on ties); the pass when nothing fits. Returns (rng, action)."""
    legal, values = ws[0], ws[1]
    if not kernels.mover_can_place(info):
        return rng, PASS
    if epsilon > 0.0:
        rng, z = kernels.rng_next(rng)
        if (z >> np.uint64(11)) * (1.0 / 9007199254740992.0) < epsilon:
            m = kernels.legal_placements(grid, info, legal)
            rng, j = kernels.rng_below(rng, m)
            return rng, legal[j]
    m = afterstate_values(grid, info, net, ws)
    best = 0
    for j in range(1, m):
        if values[j] > values[best]:
            best = j
    return rng, legal[best]


@njit(inline="always", cache=True)
def game_stream(seed, game):
    """The random stream of game number `game` of a run seeded `seed`: the same game
    whatever the chunking."""
    rng = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(game)
    rng, _ = kernels.rng_next(rng)
    rng, _ = kernels.rng_next(rng)
    return rng


@njit(cache=True)
def play_games(seed, first, count, players, net, epsilon, ws, deals, actions, lengths, rewards):
    """The data engine: games first .. first + count - 1 of run `seed`, the one-move-ahead
    agent (exploring with `epsilon`) in every seat. Writes row g (0..count-1) of deals
    (int8 (count, 40)), actions (int16 (count, MAX_PLIES)), lengths, and rewards (float64
    (count, 4): every seat's final search reward)."""
    grid, info = ws[2].copy(), ws[3].copy()
    deal = np.zeros(rules.NUM_TILES, dtype=np.int64)
    final = np.zeros(4, dtype=np.float64)
    for g in range(count):
        rng = game_stream(seed, first + g)
        rng, z = kernels.rng_next(rng)
        kernels.shuffle_deal(np.int64(z >> np.uint64(2)), deal)
        kernels.reset(grid, info, deal, players, 0)
        for i in range(rules.NUM_TILES):
            deals[g, i] = deal[i]
        t = 0
        while not access.is_over(info):
            rng, a = agent_action(grid, info, net, epsilon, rng, ws)
            actions[g, t] = a
            t += 1
            kernels.apply_action(grid, info, a)
        lengths[g] = t
        for t2 in range(t, actions.shape[1]):
            actions[g, t2] = 0
        simulation_rewards(info, final, MARGIN)
        for s in range(4):
            rewards[g, s] = final[s]


@njit(cache=True)
def count_records(lengths, players):
    return int(lengths.sum()) * players + lengths.shape[0] * players


@njit(cache=True)
def replay_records(deals, actions, lengths, players, threats, out, game_of, seat_of):
    """Re-featurize stored games: for each game, its start and the state after each ply
    that does not end it, from every seat's information set (the mover's fresh draw
    hidden from it: what the one-move-ahead agent evaluates). Row i of out (int16
    (R, MAX_ACTIVE), PAD-padded) is game game_of[i]'s position from seat seat_of[i];
    rows are in game order, then ply order, then seat order. Returns the row count."""
    grid = np.zeros((GRID_CELLS, GRID_CHANNELS), np.int16)
    info = np.zeros(INFO_LEN, np.int64)
    deal = np.zeros(rules.NUM_TILES, np.int64)
    row = np.zeros(MAX_ACTIVE_THREATS + 8, np.int64)
    seen = np.zeros(_MAX_VALUE + 1, np.int64)
    before = np.zeros(_MAX_VALUE + 1, np.int64)
    r = 0
    for g in range(deals.shape[0]):
        for i in range(rules.NUM_TILES):
            deal[i] = deals[g, i]
        kernels.reset(grid, info, deal, players, 0)
        for t in range(-1, lengths[g]):
            drawn = 0
            mover = -1
            if t >= 0:
                mover = access.current_seat(info)
                for v in range(_MAX_VALUE + 1):
                    before[v] = access.hand_count(info, mover, v)
                a = np.int64(actions[g, t])
                kernels.apply_action(grid, info, a)
                if access.is_over(info):
                    break
                drawn = _drawn_tile(before, info, mover, a)
            for s in range(players):
                m = features_into(grid, info, s, False, drawn if s == mover else 0, threats, seen, row)
                for j in range(m):
                    out[r, j] = row[j]
                for j in range(m, out.shape[1]):
                    out[r, j] = PAD
                game_of[r] = g
                seat_of[r] = s
                r += 1
    return r


@njit(cache=True)
def td_targets(game_of, seat_of, values, rewards, lam, out):
    """TD(lambda) targets of `replay_records`' rows (TD-Gammon): along each seat's rows of a
    game, G_t = (1 - lam) V(x_t+1) + lam G_t+1, with V(x_T) = G_T = the seat's final reward
    past its last row. values: the network's value of each row (its seat's output r = 0);
    rewards (games, 4). lam = 1 gives the final rewards."""
    g_next = np.zeros(4)
    v_next = np.zeros(4)
    current = -1
    for i in range(game_of.shape[0] - 1, -1, -1):
        g = game_of[i]
        if g != current:
            current = g
            for s in range(4):
                g_next[s] = rewards[g, s]
                v_next[s] = rewards[g, s]
        s = seat_of[i]
        target = (1.0 - lam) * v_next[s] + lam * g_next[s]
        out[i] = target
        g_next[s] = target
        v_next[s] = values[i]


@njit(cache=True)
def match_vs_greedy(first, count, net, ws, scores):
    """The one-move-ahead agent (no exploration) against `greedy` on 2-player duplicate deals
    first .. first + count - 1 (deal d = engine.random_deal(DEAL_BASE + d)), each played in
    both seatings: scores[d] = the agent's mean result mapped to [0, 1] (a draw is half)."""
    grid, info = ws[2].copy(), ws[3].copy()
    g_grid, g_info = ws[2].copy(), ws[3].copy()
    g_scratch = np.zeros(128, np.int64)
    g_actions = np.zeros(MAX_LEGAL, np.int64)
    g_keys = np.zeros(MAX_LEGAL, np.int64)
    deal = np.zeros(rules.NUM_TILES, np.int64)
    final = np.zeros(4)
    for d in range(count):
        kernels.shuffle_deal(DEAL_BASE + first + d, deal)
        total = 0.0
        for me in range(2):
            kernels.reset(grid, info, deal, 2, 0)
            rng = np.uint64(1)
            while not access.is_over(info):
                if access.current_seat(info) == me:
                    rng, a = agent_action(grid, info, net, 0.0, rng, ws)
                else:
                    a = greedy_action(grid, info, g_grid, g_info, g_scratch, g_actions, g_keys)
                kernels.apply_action(grid, info, a)
            kernels.rewards(info, final)
            total += (final[me] + 1.0) / 2.0
        scores[d] = total / 2.0


# --- self-test -------------------------------------------------------------------------------------
@njit(cache=True)
def _random_positions(seed, count, plies_max, grids, infos):
    """count 2-player positions, each after a uniform number of random plies of a fresh deal
    (finished games kept as they ended)."""
    deal = np.zeros(rules.NUM_TILES, dtype=np.int64)
    legal = np.zeros(512, dtype=np.int64)
    rng = np.uint64(seed)
    for i in range(count):
        rng, z = kernels.rng_next(rng)
        kernels.shuffle_deal(np.int64(z >> np.uint64(2)), deal)
        kernels.reset(grids[i], infos[i], deal, 2, 0)
        rng, plies = kernels.rng_below(rng, plies_max)
        for _ in range(plies):
            if access.is_over(infos[i]):
                break
            m = kernels.legal_placements(grids[i], infos[i], legal)
            if m == 0:
                kernels.apply_action(grids[i], infos[i], rules.PASS_ACTION)
            else:
                rng, j = kernels.rng_below(rng, m)
                kernels.apply_action(grids[i], infos[i], legal[j])


def random_positions(seed: int, count: int, plies_max: int = 60) -> tuple[np.ndarray, np.ndarray]:
    grids, infos = access.new_arrays(count)
    _random_positions(np.uint64(seed), count, plies_max, grids, infos)
    return grids, infos


def _python_features(grid, info, p, full, hidden_draw=0, threats=False) -> set[int]:
    """The encoding written out again in plain Python from the public accessors (the self-test's
    second opinion on `features_into`)."""
    n_players = int(info[3])
    out = set()
    seen = np.zeros(11, dtype=np.int64)
    for cell in range(rules.NUM_CELLS):
        pad = int(np.flatnonzero(CELL_OF_PAD == cell)[0])
        v = int(grid[pad, 0])
        if v:
            out.add(cell * 11 + v - 1)
            seen[v] += 1
        elif (int(info[2]) >> pad) & 1:
            out.add(cell * 11 + 10)
    for r in range(n_players if full else 1):
        s = (p + r) % n_players
        for v in range(1, 11):
            c = int(access.hand_count(info, s, v)) - (1 if (r == 0 and v == hidden_draw and not full) else 0)
            seen[v] += c
            out.update(HANDS + (r * 10 + v - 1) * 4 + k for k in range(c))
    for v in range(1, 11):
        out.update(POOL + (v - 1) * 4 + k for k in range(4 - seen[v]))
    out.add(BAG + min(int(access.bag_left(info)) + (1 if (hidden_draw and not full) else 0), 40))
    for r in range(1, n_players):
        diff = int(access.score(info, p)) - int(access.score(info, (p + r) % n_players))
        out.add(LEAD + (r - 1) * 31 + min(max(diff // 10 + 15, 0), 30))
    to_move = (int(access.current_seat(info)) - p) % n_players
    out.add(TOMOVE + to_move)
    if threats:
        mine = {v for v in range(1, 11)
                if access.hand_count(info, p, v) - (1 if (v == hidden_draw and not full) else 0) > 0}
        if full:
            theirs = {v for v in range(1, 11) for r in range(1, n_players)
                      if access.hand_count(info, (p + r) % n_players, v) > 0}
        else:
            theirs = {v for v in range(1, 11) if seen[v] < 4}
        best = {"mine": 0, "theirs": 0}
        cells = int(kernels.open_cells(info))
        for pad in range(80):
            if not (cells >> pad) & 1:
                continue
            for v in range(1, 11):
                if access.capacity(grid, pad) >= v:
                    points = int(kernels.points_if_placed(grid, pad, v))
                    for name, values in (("mine", mine), ("theirs", theirs)):
                        if v in values:
                            best[name] = max(best[name], points)
        base = THREATS + (0 if to_move == 0 else 32)
        out.add(base + min(best["mine"] // 10, 15))
        out.add(base + 16 + min(best["theirs"] // 10, 15))
    return out


def _python_drawn(before_info, after_info, p, action) -> int:
    """The tile p drew with `action` (0: none), from its hand before and after."""
    for v in range(1, 11):
        placed = 1 if (action < PASS and v == action % 10 + 1) else 0
        if access.hand_count(after_info, p, v) > access.hand_count(before_info, p, v) - placed:
            return v
    return 0


def self_test(positions: int = 400, hidden: int = 64, threats: bool = False) -> None:
    """Check the encoding against a plain-Python rewrite, its bounds, and the numba forward
    against torch (refresh and incremental accumulators) on positions of random play; the
    agent's afterstate values against torch; the data engine's replay and TD targets."""
    print(f"-- threats={threats}")
    grids, infos = random_positions(12345, positions)
    persp = np.arange(positions) % 2
    limit = NUM_ROWS_THREATS if threats else NUM_FEATURES
    for full in (False, True):
        idx = featurize(grids, infos, persp, full, threats=threats)
        for i in range(positions):
            row = [int(f) for f in idx[i] if f != PAD]
            assert len(row) == len(set(row)), "a feature written twice"
            assert set(row) == _python_features(grids[i], infos[i], int(persp[i]), full, 0, threats), f"position {i}"
            assert all(0 <= f < limit for f in row)
    hidden_draw = np.array([next((v for v in range(1, 11) if access.hand_count(infos[i], int(persp[i]), v)), 0)
                            for i in range(positions)])
    idx = featurize(grids, infos, persp, False, hidden_draw, threats)
    for i in range(positions):
        row = {int(f) for f in idx[i] if f != PAD}
        assert row == _python_features(grids[i], infos[i], int(persp[i]), False, int(hidden_draw[i]), threats), i
    print(f"encoding: {positions} positions x 3 variants (full, information set, with a hidden draw) agree with "
          f"the Python rewrite (at most {int((idx != PAD).sum(1).max())} of {idx.shape[1]} active)")

    torch.manual_seed(0)
    model = NNUE(hidden, 2, threats)
    with torch.no_grad():  # make every layer matter
        for prm in model.parameters():
            prm.add_(0.1 * torch.randn_like(prm))
        model.embed.weight[PAD].zero_()
    path = "/tmp/nnue_self_test.pt"
    save(model, path)
    model = load(path)
    os.remove(path)
    net = export(model)
    idx = featurize(grids, infos, persp, False, threats=threats)
    with torch.no_grad():
        want = model(torch.from_numpy(idx.astype(np.int64))).numpy()
    feats = np.zeros(MAX_ACTIVE_THREATS + 8, dtype=np.int64)
    prev = np.zeros(MAX_ACTIVE_THREATS + 8, dtype=np.int64)
    mark = np.zeros(MAX_ROWS, dtype=np.int8)
    seen = np.zeros(11, dtype=np.int64)
    acc, acc_inc = np.zeros(hidden, np.float32), np.zeros(hidden, np.float32)
    scratch, out = new_scratch(hidden), np.zeros(2, np.float32)
    n_prev = 0
    refresh(net, prev, 0, acc_inc)
    worst = 0.0
    for i in range(positions):
        m = features_into(grids[i], infos[i], np.int64(persp[i]), False, 0, threats, seen, feats)
        refresh(net, feats, m, acc)
        update_accumulator(net, prev, n_prev, feats, m, mark, acc_inc)  # from the previous position's set
        assert not mark.any()
        np.testing.assert_allclose(acc_inc, acc, atol=1e-4)
        forward(net, acc, scratch, out)
        np.testing.assert_allclose(out, want[i], atol=1e-4)
        worst = max(worst, float(np.abs(out - want[i]).max()))
        prev[:m], n_prev = feats[:m], m
    print(f"network: numba refresh == incremental == torch on {positions} positions (worst {worst:.1e}); "
          "save/load round trip")

    # the agent: each afterstate's value == torch on the afterstate re-featurized from scratch
    ws = new_workspace(hidden)
    checked = 0
    for i in range(0, positions, 8):
        grid, info = grids[i], infos[i]
        if access.is_over(info):
            continue
        m = afterstate_values(grid, info, net, ws)
        legal, values = ws[0][:m].copy(), ws[1][:m].copy()
        want_legal = [a for a in range(rules.NUM_PLACEMENT_ACTIONS) if kernels.is_legal(grid, info, a)] or [PASS]
        assert list(legal) == want_legal, f"position {i}: legal moves"
        p = int(access.current_seat(info))
        for a, value in zip(legal, values):
            g2, i2 = grid.copy(), info.copy()
            kernels.apply_action(g2, i2, int(a))
            if access.is_over(i2):
                r = np.zeros(4)
                simulation_rewards(i2, r, MARGIN)
                assert abs(value - r[p]) < 1e-6
                continue
            drawn = _python_drawn(info, i2, p, int(a))
            x = featurize(g2[None], i2[None], [p], False, [drawn], threats)
            with torch.no_grad():
                assert abs(value - float(model(torch.from_numpy(x.astype(np.int64)))[0, 0])) < 1e-4, f"position {i}"
            checked += 1
    print(f"agent: {checked} afterstate values (incremental from the position's accumulator) == torch")

    # the data engine: same seed, same games, whatever the chunking; replayed rows == fresh features
    count = 6
    bufs = [(np.zeros((count, 40), np.int8), np.zeros((count, MAX_PLIES), np.int16), np.zeros(count, np.int64),
             np.zeros((count, 4))) for _ in range(2)]
    play_games(7, 0, count, 2, net, 0.1, ws, *bufs[0])
    play_games(7, 0, 2, 2, net, 0.1, ws, *(b[:2] for b in bufs[1]))
    play_games(7, 2, count - 2, 2, net, 0.1, ws, *(b[2:] for b in bufs[1]))
    for a, b in zip(*bufs):
        np.testing.assert_array_equal(a, b)
    deals, actions, lengths, rewards = bufs[0]
    rows = np.zeros((count_records(lengths, 2), MAX_ACTIVE_THREATS if threats else MAX_ACTIVE), np.int16)
    game_of, seat_of = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    n = replay_records(deals, actions, lengths, 2, threats, rows, game_of, seat_of)
    assert n == 2 * int(lengths.sum()), n  # the start and every ply but the last, from both seats
    grid, info = access.new_arrays()
    k = 0
    for g in range(count):
        kernels.reset(grid, info, deals[g].astype(np.int64), 2, 0)
        for t in range(-1, int(lengths[g]) - 1):
            hidden, mover = [0, 0], -1
            if t >= 0:
                mover = int(access.current_seat(info))
                before = info.copy()
                a = int(actions[g, t])
                kernels.apply_action(grid, info, a)
                hidden[mover] = _python_drawn(before, info, mover, a)
            for s in range(2):
                want = _python_features(grid, info, s, False, hidden[s], threats)
                assert {int(f) for f in rows[k] if f != PAD} == want and (game_of[k], seat_of[k]) == (g, s)
                k += 1
        kernels.apply_action(grid, info, int(actions[g, lengths[g] - 1]))
        assert access.is_over(info)
        final = np.zeros(4)
        simulation_rewards(info, final, MARGIN)
        np.testing.assert_allclose(final, rewards[g])
    targets = np.zeros(n)
    values = np.random.default_rng(0).normal(size=n)
    td_targets(game_of[:n], seat_of[:n], values, rewards, 1.0, targets)
    np.testing.assert_allclose(targets, rewards[game_of[:n], seat_of[:n]])
    td_targets(game_of[:n], seat_of[:n], values, rewards, 0.0, targets)
    nxt = np.arange(n) + 2  # 2 players: a seat's next row of the same game, if any
    same = (nxt < n) & (game_of[np.minimum(nxt, n - 1)] == game_of[:n])
    np.testing.assert_allclose(targets[same], values[nxt[same]])
    np.testing.assert_allclose(targets[~same], rewards[game_of[:n][~same], seat_of[:n][~same]])
    print(f"data engine: {count} games, chunking changes nothing, replayed rows == fresh features, TD targets")


def speed(games: int, hidden: int) -> None:
    """Print the data engine's games a second on one core (after a warm-up)."""
    torch.manual_seed(0)
    net, ws = export(NNUE(hidden, 2)), new_workspace(hidden)
    bufs = (np.zeros((games, 40), np.int8), np.zeros((games, MAX_PLIES), np.int16), np.zeros(games, np.int64),
            np.zeros((games, 4)))
    play_games(1, 0, 2, 2, net, 0.05, ws, *(b[:2] for b in bufs))
    start = time.perf_counter()
    play_games(1, 0, games, 2, net, 0.05, ws, *bufs)
    seconds = time.perf_counter() - start
    rows = np.zeros((count_records(bufs[2], 2), MAX_ACTIVE), np.int16)
    start = time.perf_counter()
    replay_records(*bufs[:3], 2, False, rows, np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64))
    replay = time.perf_counter() - start
    print(f"H={hidden}: {games / seconds:.0f} games/s ({bufs[2].mean():.1f} plies a game); "
          f"re-featurized at {games / replay:.0f} games/s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the encoding and the numba network")
    parser.add_argument("--speed", type=int, default=0, metavar="GAMES",
                        help="time the data engine: GAMES games of a random network (--hidden), epsilon 0.05")
    parser.add_argument("--hidden", type=int, default=64)
    args = parser.parse_args(argv)
    if args.self_test:
        self_test(threats=False)
        self_test(threats=True)
    elif args.speed > 0:
        speed(args.speed, args.hidden)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
