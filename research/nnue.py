"""Issue 56, F2's machinery: a board-reading evaluator with an incrementally updated first layer (NNUE).
RESULTS.md: "2026-12-06, 06:40-08:35 UTC" (issue 56 F2: the NNUE evaluator learned from its own games)
Verdict: see the RESULTS section (machinery built; the F2 measurement's state is recorded there).

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
(`agents.search_kernels.simulation_rewards` with `MARGIN`). Because A is a sum of rows, a
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

import numpy as np
import torch
from numba import njit
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from engine import access, kernels, rules  # noqa: E402
from engine.layout import CELL_OF_PAD  # noqa: E402

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


@njit(cache=True)
def features_into(grid, info, p, full, hidden_draw, seen, out):
    """Write the active features of (grid, info) from seat p into out (int, >= MAX_ACTIVE);
    return how many. `full`: read every hand (else only p's). `hidden_draw` (1..10, 0 =
    none; information set only): a tile p just drew but does not know yet, left out of its
    hand and counted in the bag. `seen`: int64 scratch (11,)."""
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
    for r in range(seats):
        s = (p + r) % n_players
        for v in range(1, _MAX_VALUE + 1):
            c = access.hand_count(info, s, v)
            if r == 0 and v == hidden:
                c -= 1
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
    mine = access.score(info, p)
    for r in range(1, n_players):
        s = (p + r) % n_players
        out[n] = LEAD + (r - 1) * LEAD_BUCKETS + _lead_bucket(mine - access.score(info, s))
        n += 1
    out[n] = TOMOVE + (access.current_seat(info) - p) % n_players
    n += 1
    return n


@njit(cache=True)
def active_features(grid, info, p, full, out):
    """The active features of the state (grid, info) from seat p (module table) into out;
    returns how many (at most MAX_ACTIVE). `full`: the full-state variant (every hand)."""
    return features_into(grid, info, p, full, 0, np.zeros(_MAX_VALUE + 1, dtype=np.int64), out)


@njit(cache=True)
def _featurize(grid, info, persp, full, hidden_draw, out, counts):
    row = np.zeros(MAX_ACTIVE + 8, dtype=np.int64)
    seen = np.zeros(_MAX_VALUE + 1, dtype=np.int64)
    for i in range(grid.shape[0]):
        m = features_into(grid[i], info[i], persp[i], full, hidden_draw[i], seen, row)
        counts[i] = m
        for j in range(m):
            out[i, j] = row[j]
        for j in range(m, out.shape[1]):
            out[i, j] = PAD


def featurize(grid: np.ndarray, info: np.ndarray, persp: np.ndarray, full: bool,
              hidden_draw: np.ndarray | None = None) -> np.ndarray:
    """The active features of N stacked states (grid (N, 80, 10), info (N, INFO_LEN)) from the
    seats `persp` (N,): int16 (N, MAX_ACTIVE), each row padded with PAD (the torch model's
    input). `hidden_draw` (N,) as `features_into` (information set only)."""
    grid, info = np.ascontiguousarray(grid), np.ascontiguousarray(info)
    if grid.ndim != 3 or info.ndim != 2 or grid.shape[0] != info.shape[0]:
        raise ValueError(f"featurize: stacked states expected, got grid {grid.shape} and info {info.shape}")
    n = grid.shape[0]
    persp = np.asarray(persp, dtype=np.int64).reshape(-1)
    if persp.shape != (n,) or (n and (persp.min() < 0 or (persp >= info[:, 3]).any())):
        raise ValueError("featurize: persp must hold one seat of each game, below its player count")
    hidden = np.zeros(n, dtype=np.int64) if hidden_draw is None else np.asarray(hidden_draw, dtype=np.int64)
    out = np.empty((n, MAX_ACTIVE), dtype=np.int16)
    _featurize(grid, info, persp, bool(full), hidden, out, np.zeros(n, dtype=np.int64))
    return out


# --- the network (torch) ---------------------------------------------------------------------------
class NNUE(nn.Module):
    """Accumulator (EmbeddingBag sum over the active features + bias), clipped ReLU,
    H -> 32 -> 32 -> P. Input: int (N, MAX_ACTIVE) rows of feature indices padded with PAD;
    output (N, P): the value of each relative seat (r = 0 the perspective)."""

    def __init__(self, hidden: int = 128, players: int = 2) -> None:
        super().__init__()
        if hidden < 1 or players not in (2, 3, 4):
            raise ValueError(f"NNUE: hidden must be >= 1 and players 2..4, got {hidden}, {players}")
        self.hidden, self.players = int(hidden), int(players)
        self.embed = nn.EmbeddingBag(NUM_FEATURES + 1, self.hidden, mode="sum", padding_idx=PAD)
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
    torch.save({"encoding": ENCODING, "hidden": model.hidden, "players": model.players,
                "state": model.state_dict()}, tmp)
    os.replace(tmp, path)


def load(path: str) -> NNUE:
    """A model written by `save` (loaded with weights_only=True)."""
    blob = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(blob, dict) or blob.get("encoding") != ENCODING:
        raise ValueError(f"{path}: not an {ENCODING} NNUE checkpoint")
    model = NNUE(int(blob["hidden"]), int(blob["players"]))
    model.load_state_dict(blob["state"])
    return model


def export(model: NNUE) -> tuple[np.ndarray, ...]:
    """The weights as float32 numpy arrays for numba: (W0 (NUM_FEATURES + 1, H) with a zero PAD
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
    (NUM_FEATURES + 1,), all zero, and left so."""
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


def _python_features(grid, info, p, full, hidden_draw=0) -> set[int]:
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
    out.add(TOMOVE + (int(access.current_seat(info)) - p) % n_players)
    return out


def self_test(positions: int = 400, hidden: int = 64) -> None:
    """Check the encoding against a plain-Python rewrite, its bounds, and the numba forward
    against torch (refresh and incremental accumulators) on positions of random play."""
    grids, infos = random_positions(12345, positions)
    persp = np.arange(positions) % 2
    for full in (False, True):
        idx = featurize(grids, infos, persp, full)
        for i in range(positions):
            row = [int(f) for f in idx[i] if f != PAD]
            assert len(row) == len(set(row)), "a feature written twice"
            assert set(row) == _python_features(grids[i], infos[i], int(persp[i]), full), f"position {i}"
            assert all(0 <= f < NUM_FEATURES for f in row)
    hidden_draw = np.array([next((v for v in range(1, 11) if access.hand_count(infos[i], int(persp[i]), v)), 0)
                            for i in range(positions)])
    idx = featurize(grids, infos, persp, False, hidden_draw)
    for i in range(positions):
        row = {int(f) for f in idx[i] if f != PAD}
        assert row == _python_features(grids[i], infos[i], int(persp[i]), False, int(hidden_draw[i])), f"position {i}"
    print(f"encoding: {positions} positions x 3 variants (full, information set, with a hidden draw) agree with the Python rewrite "
          f"(at most {int((idx != PAD).sum(1).max())} of {MAX_ACTIVE} active)")

    torch.manual_seed(0)
    model = NNUE(hidden, 2)
    with torch.no_grad():  # make every layer matter
        for prm in model.parameters():
            prm.add_(0.1 * torch.randn_like(prm))
        model.embed.weight[PAD].zero_()
    path = "/tmp/nnue_self_test.pt"
    save(model, path)
    model = load(path)
    os.remove(path)
    net = export(model)
    idx = featurize(grids, infos, persp, False)
    with torch.no_grad():
        want = model(torch.from_numpy(idx.astype(np.int64))).numpy()
    feats = np.zeros(MAX_ACTIVE + 8, dtype=np.int64)
    prev = np.zeros(MAX_ACTIVE + 8, dtype=np.int64)
    mark = np.zeros(NUM_FEATURES + 1, dtype=np.int8)
    acc, acc_inc = np.zeros(hidden, np.float32), np.zeros(hidden, np.float32)
    scratch, out = new_scratch(hidden), np.zeros(2, np.float32)
    n_prev = 0
    refresh(net, prev, 0, acc_inc)
    worst = 0.0
    for i in range(positions):
        m = active_features(grids[i], infos[i], np.int64(persp[i]), False, feats)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the encoding and the numba network")
    args = parser.parse_args(argv)
    if args.self_test:
        self_test()
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
