"""Issue 56, F1: does a board-reading (NNUE-shaped) evaluator's held-out error fall faster per doubling of data?
RESULTS.md: "2026-12-06, 06:41-08:10 UTC: F1"
Verdict: faster per doubling than the MLP under the same early stopping (0.007-0.016), but not because
it reads the board: the same shapes without the board fall as fast, and the board costs error at every
share (at 14,400 games NNUE 0.99, NNUE + 72 features 0.874, the MLP 0.849): no-go at this volume.

    nice -n 5 python research/search_games.py --games 20000 --workers 2     # the games (results/search_games/)
    python research/f1_data_curve.py --build --chunks 1000     # replay + featurize -> results/f1_positions.npz
    python research/f1_data_curve.py --self-test                             # the turned features
    python research/f1_data_curve.py --shares 1 --models nnue_turns --widths 64,128,256   # the width check
    F="python research/f1_data_curve.py --widths 256 --nnue-steps 20000 --every 200 --patience 6"
    $F --models mlp,nnue --out results/f1_a.json        # (and side by side:)
    $F --models mlp_es,nnue_turns,nnue72_turns --out results/f1_b.json
    python research/f1_data_curve.py --analyse results/f1_a.json results/f1_b.json   # the merged table
    python research/f1_data_curve.py --analyse results/f1_b.json results/f1_e_seed7.json:seed7   # a model twice

Positions: every decision of every stored game of research/search_games.py (the shipped
network's search `iterations=1000,prior=3` in both seats, as the self-play loop's games),
rebuilt by replaying the game's actions from its deal (each replay must reproduce the stored
final state). For each position, the mover's

* 72 full-state features (`agents.networks.evaluator.batch_mover_features`, what the loop stores),
  with the loop's evaluator targets: every seat's final search reward
  (`simulation_rewards` with `MARGIN`) rotated so slot 0 is the mover
  (`training.learner.rotated_to_movers`), exactly as research/evaluator_data.py reads them;
* NNUE active features (research/nnue.py's `featurize`, the full-state variant, perspective =
  the mover); target: the perspective seat's final reward (slot 0 of the same targets).

A fixed 10% of the games (`--held`, a shuffle from `--seed`) is held out whole; the training
shares are the first games of the same shuffle's rest, so a smaller share is part of every
larger one. Fits, each seeded:

* ``mlp``: `agents.networks.Evaluator` (width 32) fitted by research/evaluator_data.py's `fit`
  (minibatches of 512, Adam annealed 1e-3 -> 0 on a cosine, 40,000 steps whatever the share:
  the loop's rule of a fixed step count);
* ``nnue``: research/nnue.py's `NNUE` (accumulator width `--widths`), the same batch, Adam and
  annealing (cosine over `--nnue-steps`), stopped early: every tenth game of the share is kept
  out of its fit as a validation set, measured every `--every` steps, the best weights kept, the
  fit stopped after `--patience` measures without a better one (without it the board's 539
  cell-by-value features learn the training games by heart within a few hundred steps);
* ``nnue_turns``: the same with every training row turned by a random quarter turn of the
  board (`engine.symmetry.TURNED` applied to the board features' cells: c * 11 + slot ->
  TURNED[k, c] * 11 + slot; hands, pool, bag, leads and turn kept), i.e. the four turns as
  extra training data (`--self-test` checks the turned features against the turned game's);
* ``nnue72_turns``: ``nnue_turns`` with today's 72 features as a dense side input into the
  second layer (the spec's option; `NNUE72`, an adapter here);
* ``nnue_noboard``: ``nnue`` with the board's 539 features left out (a probe: what the board adds);
* ``mlp_es``: the 72-feature MLP fitted by the NNUE's early-stopped loop (the same validation
  games), to separate the shape from the stopping rule.

It prints each fit's held-out MSE against the mover's final reward (slot 0; in 2 players the MLP's
centred zero-sum output makes this its mean over both slots, the figure research/evaluator_data.py
prints), with the bag empty and not, the slope of the MSE per doubling of the training games
(least squares on log2 of the games), and bootstrap 95% intervals over held-out games for
the differences between the models at the largest share. torch runs on one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.networks import evaluator as vk  # noqa: E402
from agents.networks import Evaluator  # noqa: E402
from agents.search.core import simulation_rewards  # noqa: E402
from agents.settings import MARGIN  # noqa: E402
from engine import layout, rules  # noqa: E402
from engine.symmetry import NUM_TURNS, TURNED  # noqa: E402
from research import nnue  # noqa: E402
from research.evaluator_data import BATCH, LEARNING_RATE, Positions  # noqa: E402
from research.evaluator_data import fit as fit_mlp  # noqa: E402
from research.search_games import NUM_PLAYERS, load_games, replay  # noqa: E402
from training.learner import rotated_to_movers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("mlp", "mlp_es", "nnue", "nnue_turns", "nnue72_turns", "nnue_noboard")
MLP_WIDTH = 32
MLP_STEPS = 40_000  # research/evaluator_data.py's default


# --- positions -------------------------------------------------------------------------------------

FIELDS = ("features", "nnue_idx", "game", "mover", "final", "bag", "move")


def featurize_chunk(path: Path) -> dict:
    """Every position of one stored chunk of games, replayed (each replay must reproduce the
    stored final state), with its features and targets; `game` numbered within the chunk."""
    from research.search_games import SearchGames

    games = SearchGames.load(path)
    rewards = np.zeros((len(games), 4))
    for g in range(len(games)):
        simulation_rewards(games.final_info[g], rewards[g], MARGIN)
    feats, idx, game, mover, bag, move = [], [], [], [], [], []
    for g in range(len(games)):
        snaps: list = []
        end = replay(games.deal[g], games.game_actions(g), snaps)
        assert end.is_over and np.array_equal(end.arrays[1], games.final_info[g]), f"{path} game {g}: replay differs"
        grid = np.stack([s.arrays[0] for s in snaps])
        info = np.stack([s.arrays[1] for s in snaps])
        movers = np.array([s.current_player for s in snaps], dtype=np.int64)
        f = np.zeros((len(snaps), vk.NUM_FEATURES), dtype=np.float32)
        vk.batch_mover_features(grid, info, f)
        feats.append(f)
        idx.append(nnue.featurize(grid, info, movers, full=True))
        game.append(np.full(len(snaps), g, dtype=np.int64))
        mover.append(movers)
        bag.append(np.array([s.bag_size for s in snaps], dtype=np.int16))
        move.append(np.arange(len(snaps), dtype=np.int16))
    game_a, mover_a = np.concatenate(game), np.concatenate(mover)
    final = rotated_to_movers(rewards, game_a, mover_a, NUM_PLAYERS)  # the loop's evaluator targets, slot 0 = mover
    return {"features": np.concatenate(feats), "nnue_idx": np.concatenate(idx), "game": game_a, "mover": mover_a,
            "final": final, "bag": np.concatenate(bag), "move": np.concatenate(move), "games": len(games)}


def build(games_dir: Path, cache: Path, limit: int | None = None) -> None:
    """Featurize every stored chunk (each kept under `cache`'s stem folder, so a later build
    only adds the new chunks) and write the first `limit` chunks' positions to `cache`."""
    from tqdm import tqdm

    files = sorted(games_dir.glob("chunk_*.npz"))[:limit]
    if not files:
        raise SystemExit(f"no stored games under {games_dir}")
    parts_dir = cache.with_suffix("")
    parts_dir.mkdir(parents=True, exist_ok=True)
    parts, offset = {k: [] for k in FIELDS}, 0
    for path in tqdm(files, desc="replaying and featurizing chunks", mininterval=10, file=sys.stdout):
        part_path = parts_dir / path.name
        if not part_path.is_file():
            part = featurize_chunk(path)
            tmp = part_path.with_name(part_path.stem + ".tmp.npz")
            np.savez(tmp, **part)
            os.replace(tmp, part_path)
        with np.load(part_path) as part:
            for k in FIELDS:
                parts[k].append(part[k] + offset if k == "game" else part[k])
            offset += int(part["games"])
    tmp = cache.with_name(cache.stem + ".tmp.npz")
    np.savez(tmp, **{k: np.concatenate(v) for k, v in parts.items()}, games=offset)
    os.replace(tmp, cache)
    print(f"{len(files)} chunks, {offset} games replayed (every final state reproduced), "
          f"{sum(len(x) for x in parts['game'])} positions -> {cache}")


# --- the NNUE fit -----------------------------------------------------------------------------------

def turn_board_features(idx: torch.Tensor, turns: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rows of active features (B, MAX_ACTIVE) with the board's cells turned by `turns` (B,)
    quarter turns: board feature c * 11 + slot -> TURNED[k, c] * 11 + slot; others kept."""
    board = idx < nnue.HANDS
    cell, slot = torch.div(idx, nnue._CELL_STRIDE, rounding_mode="floor"), idx % nnue._CELL_STRIDE
    turned = table[turns[:, None].expand_as(idx), cell.clamp(max=rules.NUM_CELLS - 1)] * nnue._CELL_STRIDE + slot
    return torch.where(board, turned, idx)


class NNUE72(nnue.NNUE):
    """research/nnue.py's NNUE with today's 72 features (`agents.networks.evaluator`) as a dense side
    input into its second layer (the spec's option): h1 = clip(l1(clip(A)) + side(f), 0, 1).
    An adapter here: research/nnue.py (helper nnue's) has no side input."""

    def __init__(self, hidden: int, players: int) -> None:
        super().__init__(hidden, players)
        self.side = nn.Linear(vk.NUM_FEATURES, nnue.HIDDEN2, bias=False)

    def forward(self, idx: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        x = torch.clamp(self.accumulator(idx), 0.0, 1.0)
        x = torch.clamp(self.l1(x) + self.side(features), 0.0, 1.0)
        x = torch.clamp(self.l2(x), 0.0, 1.0)
        return self.out(x)


class EarlyStoppedMLP(nn.Module):
    """The 72-feature MLP (`agents.networks.Evaluator`) with NNUE72's call signature, to fit it by
    `fit_nnue`'s early-stopped loop (model ``mlp_es``; the board features are ignored)."""

    def __init__(self, hidden: int = MLP_WIDTH) -> None:
        super().__init__()
        self.evaluator = Evaluator(hidden)

    def forward(self, idx: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        return self.evaluator(features, NUM_PLAYERS, False)


def fit_nnue(idx: np.ndarray, target: np.ndarray, rows: np.ndarray, valid: np.ndarray, hidden: int, steps: int,
             seed: int, turns: bool, held: np.ndarray, every: int, patience: int,
             features: np.ndarray | None = None, mlp: bool = False, lr: float = LEARNING_RATE,
             weight_decay: float = 0.0, log=print) -> tuple[nn.Module, list, int]:
    """A fresh NNUE fitted to target[:, 0] on `rows` the loop's way (batch 512, Adam, cosine
    annealing from 1e-3 over `steps`), stopped early on the validation rows `valid` (games of
    the training share kept out of `rows`): every `every` steps their MSE is measured, the best
    weights kept, and the fit stops after `patience` measures without a better one. The curve
    lists (step, validation MSE, held-out MSE) (the held-out one is only printed, never used);
    returns the best weights and their step. With `features` (N, 72): the `NNUE72` shape, or with
    `mlp` the 72-feature MLP (`EarlyStoppedMLP`) stopped the same way. `weight_decay`: decoupled
    (AdamW) on the NNUE's first layer (the embedding) only."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = EarlyStoppedMLP(hidden) if mlp else nnue.NNUE(hidden, NUM_PLAYERS) if features is None \
        else NNUE72(hidden, NUM_PLAYERS)
    side = None if features is None else torch.as_tensor(features)
    if weight_decay > 0 and not mlp:
        first = [model.embed.weight]
        rest = [q for q in model.parameters() if q is not model.embed.weight]
        optimizer = torch.optim.AdamW([{"params": first, "weight_decay": weight_decay},
                                       {"params": rest, "weight_decay": 0.0}], lr=lr)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x, y = torch.as_tensor(idx.astype(np.int64)), torch.as_tensor(target[:, 0].astype(np.float32))
    table = torch.as_tensor(TURNED)
    curve, best, best_step, waited = [], float("inf"), 0, 0
    best_state = {k: v.clone() for k, v in model.state_dict().items()}
    start = time.perf_counter()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = lr * 0.5 * (1 + np.cos(np.pi * step / steps))
        batch = torch.as_tensor(rng.choice(rows, BATCH))
        xb = x[batch]
        if turns:
            xb = turn_board_features(xb, torch.as_tensor(rng.integers(NUM_TURNS, size=BATCH)), table)
        out = model(xb) if side is None else model(xb, side[batch])
        loss = F.mse_loss(out[:, 0], y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % every == 0 or step + 1 == steps:
            v = float(((predict_nnue(model, idx, valid, features) - target[valid, 0]) ** 2).mean())
            h = float("nan")
            if v < best:  # the held-out error only at a new best (printed, never used to choose)
                h = float(((predict_nnue(model, idx, held, features) - target[held, 0]) ** 2).mean())
                best, best_step, waited = v, step + 1, 0
                best_state = {k: t.clone() for k, t in model.state_dict().items()}
            else:
                waited += 1
            model.train()
            curve.append((step + 1, v, h))
            log(f"      step {step + 1:>6}: validation MSE {v:.4f}"
                f"{f', held-out {h:.4f} (best)' if best_step == step + 1 else ''}"
                f"  ({time.perf_counter() - start:.0f} s)")
            if waited >= patience:
                break
    model.load_state_dict(best_state)
    return model.eval(), curve, best_step


def self_test(games_dir: Path, count: int = 8) -> None:
    """The quarter turn of the board features equals the features of the game played on the
    turned board (`engine.symmetry`: the same deal, every placement turned), at every position
    of the first `count` stored games, for each turn."""
    from engine.symmetry import turn_action

    games = load_games(games_dir, 1)
    table = torch.as_tensor(TURNED)
    checked = 0
    for g in range(min(count, len(games))):
        snaps: list = []
        replay(games.deal[g], games.game_actions(g), snaps)
        grid, info = np.stack([s.arrays[0] for s in snaps]), np.stack([s.arrays[1] for s in snaps])
        movers = np.array([s.current_player for s in snaps])
        idx = torch.as_tensor(nnue.featurize(grid, info, movers, full=True).astype(np.int64))
        for k in range(NUM_TURNS):
            turned_snaps: list = []
            replay(games.deal[g], [turn_action(int(x), k) for x in games.game_actions(g)], turned_snaps)
            tg, ti = np.stack([s.arrays[0] for s in turned_snaps]), np.stack([s.arrays[1] for s in turned_snaps])
            want = nnue.featurize(tg, ti, movers, full=True)
            got = turn_board_features(idx, torch.full((len(idx),), k), table).numpy()
            assert np.array_equal(np.sort(got, axis=1), np.sort(want.astype(np.int64), axis=1)), (g, k)
            checked += len(idx)
    print(f"self-test: turned features == features of the turned game at {checked} (position, turn) pairs")


def predict_nnue(model: nnue.NNUE, idx: np.ndarray, rows: np.ndarray,
                 features: np.ndarray | None = None) -> np.ndarray:
    """The model's value for the perspective seat (output 0) at `rows`."""
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(rows), 65536):
            r = rows[i:i + 65536]
            x = torch.as_tensor(idx[r].astype(np.int64))
            out.append((model(x) if features is None else model(x, torch.as_tensor(features[r])))[:, 0].numpy())
    return np.concatenate(out)


def predict_mlp(model, features: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.as_tensor(features), NUM_PLAYERS, False)[:, 0].numpy()


# --- figures ----------------------------------------------------------------------------------------

def game_sums(sq: np.ndarray, game: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per held-out game: the sum of squared errors and the position count."""
    uniq, inv = np.unique(game, return_inverse=True)
    return np.bincount(inv, weights=sq), np.bincount(inv).astype(float)


def bootstrap_difference(sq_a: np.ndarray, sq_b: np.ndarray, game: np.ndarray, boot: int = 2000,
                         seed: int = 0) -> dict:
    """MSE(a) - MSE(b) on the same held-out positions, and its 95% interval over held-out games."""
    sa, count = game_sums(sq_a, game)
    sb, _ = game_sums(sq_b, game)
    draws = np.random.default_rng(seed).integers(len(count), size=(boot, len(count)))
    diffs = (sa[draws].sum(1) - sb[draws].sum(1)) / count[draws].sum(1)
    return {"mean": float((sa.sum() - sb.sum()) / count.sum()),
            "ci95": [float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))]}


def _order(key: tuple) -> tuple:
    base, _, label = key[0].partition("@")
    return (MODELS.index(base) if base in MODELS else len(MODELS), label, key[1])


def summarize(results: dict, sq: dict, held_game: np.ndarray, seed: int = 0, boot: int = 2000) -> None:
    """The table by share; each model's slope of the MSE per doubling of the training games
    (least squares on log2 of the games, all shares) and over its last doubling, with 95%
    bootstrap intervals over held-out games (the same draws for every model, so the slopes'
    differences are paired); at the largest share every pair's difference with its interval."""
    top = max(r["share"] for r in results["fits"])
    results["slopes"], results["differences"], results["slope_differences"] = {}, {}, {}
    uniq, inv = np.unique(held_game, return_inverse=True)
    count = np.bincount(inv).astype(float)
    draws = np.random.default_rng(seed).integers(len(uniq), size=(boot, len(uniq)))
    n_draw = count[draws].sum(1)
    print(f"\nheld-out MSE (target variance {results['target_variance']:.4f}; bag empty / not at each share):")
    keys = sorted({(r["model"], r["width"]) for r in results["fits"]}, key=_order)
    boot_slopes, boot_last = {}, {}
    interval = lambda x: [float(np.percentile(x, 2.5)), float(np.percentile(x, 97.5))]  # noqa: E731
    for key in keys:
        fits = sorted([r for r in results["fits"] if (r["model"], r["width"]) == key], key=lambda r: r["share"])
        name = f"{key[0]}_w{key[1]}"
        line = f"  {key[0]:<12} width {key[1]:>4}: " + "  ".join(
            f"{r['share']:g} ({r['games']} games): {r['mse']:.4f} ({r['mse_bag_empty']:.4f} / {r['mse_bag_left']:.4f})"
            for r in fits)
        if len(fits) >= 2:
            x = np.log2([r["games"] for r in fits])
            xc = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
            per_game = np.stack([np.bincount(inv, weights=sq[(key[0], key[1], r["share"])]) for r in fits])
            mse = per_game[:, draws].sum(-1).T / n_draw[:, None]  # (boot, shares)
            boot_slopes[name] = mse @ xc
            boot_last[name] = mse[:, -1] - mse[:, -2]
            slope = float(np.dot(xc, [r["mse"] for r in fits]))
            last = fits[-1]["mse"] - fits[-2]["mse"]
            results["slopes"][name] = {"all": slope, "all_ci95": interval(boot_slopes[name]),
                                       "last_doubling": last, "last_ci95": interval(boot_last[name])}
            line += (f"\n  {'':<12} slope per doubling {slope:+.4f} {_ci(interval(boot_slopes[name]))}; "
                     f"last doubling {last:+.4f} {_ci(interval(boot_last[name]))}")
        print(line)
    for i, ka in enumerate(keys):
        for kb in keys[i + 1:]:
            a_name, b_name = f"{ka[0]}_w{ka[1]}", f"{kb[0]}_w{kb[1]}"
            if (ka + (top,)) in sq and (kb + (top,)) in sq:
                diff = bootstrap_difference(sq[kb + (top,)], sq[ka + (top,)], held_game, seed=seed)
                name = f"{b_name} - {a_name} at share {top:g}"
                results["differences"][name] = diff
                print(f"  {name}: {diff['mean']:+.4f} {_ci(diff['ci95'])}")
            if a_name in boot_slopes and b_name in boot_slopes and len(boot_slopes[a_name]) == len(boot_slopes[b_name]):
                d_all = results["slopes"][b_name]["all"] - results["slopes"][a_name]["all"]
                d_last = results["slopes"][b_name]["last_doubling"] - results["slopes"][a_name]["last_doubling"]
                ci_all = interval(boot_slopes[b_name] - boot_slopes[a_name])
                ci_last = interval(boot_last[b_name] - boot_last[a_name])
                results["slope_differences"][f"{b_name} - {a_name}"] = {"all": d_all, "all_ci95": ci_all,
                                                                       "last": d_last, "last_ci95": ci_last}
                print(f"  slope {b_name} - {a_name}: {d_all:+.4f} {_ci(ci_all)} per doubling; "
                      f"last doubling {d_last:+.4f} {_ci(ci_last)}")


def _ci(ci: list) -> str:
    return f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"


def analyse(outs: list[str], cache: Path) -> dict:
    """Merge the results of several runs (each --out JSON and its NAME.errors.npz of held-out
    squared errors, on the same cache and held-out games) and print the figures. A file named
    ``PATH:LABEL`` has its models renamed MODEL@LABEL (to set runs of one model side by side)."""
    d = np.load(cache)
    merged: dict | None = None
    sq: dict = {}
    for spec in outs:
        path, _, label = spec.partition(":")
        out = Path(path)
        part = json.loads(out.read_text())
        errors = np.load(out.with_suffix(".errors.npz"))
        suffix = f"@{label}" if label else ""
        for r in part["fits"]:
            r["model"] += suffix
        if merged is None:
            merged, held = part, errors["held"]
        else:
            assert np.array_equal(errors["held"], held), f"{out}: other held-out games"
            merged["fits"] += part["fits"]
        for key in errors.files:
            if key != "held":
                m, w, sh = key.split("|")
                sq[(m + suffix, int(w), float(sh))] = errors[key]
    summarize(merged, sq, d["game"][held])
    return merged


def main(argv: list[str] | None = None) -> dict | None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games-dir", type=Path, default=ROOT / "results" / "search_games")
    p.add_argument("--cache", type=Path, default=ROOT / "results" / "f1_positions.npz")
    p.add_argument("--build", action="store_true", help="replay and featurize the stored games into --cache")
    p.add_argument("--chunks", type=int, help="with --build: only the first CHUNKS stored chunks")
    p.add_argument("--shares", default="0.125,0.25,0.5,1")
    p.add_argument("--models", default="mlp,nnue,nnue_turns", help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--widths", default="128", help="NNUE accumulator widths (each at every share)")
    p.add_argument("--nnue-steps", type=int, default=40_000)
    p.add_argument("--mlp-steps", type=int, default=MLP_STEPS)
    p.add_argument("--nnue-lr", type=float, default=LEARNING_RATE, help="the early-stopped fits' peak learning rate")
    p.add_argument("--no-board", action="store_true", help="leave the board's features out of the one model run "
                   "(a probe: label its file with --analyse PATH:noboard)")
    p.add_argument("--weight-decay", type=float, default=0.0, help="the NNUE's first layer's decoupled decay")
    p.add_argument("--every", type=int, default=250, help="NNUE: measure the validation MSE every this many steps")
    p.add_argument("--patience", type=int, default=6, help="NNUE: stop after this many measures without a better one")
    p.add_argument("--held", type=float, default=0.1, help="share of the games held out")
    p.add_argument("--seed", type=int, default=0, help="the held-out games' shuffle (fits: seed + 1)")
    p.add_argument("--fit-seed", type=int, help="the fits' seed instead of seed + 1 (their own noise)")
    p.add_argument("--out", type=Path, help="write the results (JSON, replaced whole) here, and the held-out "
                   "squared errors beside it (NAME.errors.npz)")
    p.add_argument("--self-test", action="store_true", help="check the quarter turns of the features")
    p.add_argument("--analyse", nargs="+", help="only merge and print these --out files' figures")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.self_test:
        self_test(a.games_dir)
        return None
    if a.analyse:
        return analyse(a.analyse, a.cache)
    if a.build:
        build(a.games_dir, a.cache, a.chunks)
        return None
    shares = [float(s) for s in a.shares.split(",")]
    fit_seed = a.seed + 1 if a.fit_seed is None else a.fit_seed
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    widths = [int(w) for w in a.widths.split(",")]
    if not all(0 < s <= 1 for s in shares) or any(m not in MODELS for m in models) or not all(w >= 1 for w in widths) \
            or not 0 < a.held < 1 or a.nnue_steps < 1 or a.mlp_steps < 1 or a.every < 1 or a.patience < 1 or a.weight_decay < 0:
        p.error(f"shares in (0, 1], models of {MODELS}, widths >= 1, held in (0, 1), steps >= 1")
    from benchmarks.machine import describe

    d = np.load(a.cache)
    features, idx, game, final, bag = d["features"], d["nnue_idx"], d["game"], d["final"], d["bag"]
    if "nnue_noboard" in models or a.no_board:
        if len(models) > 1:
            p.error("nnue_noboard and --no-board run one model alone (its rows drop the board features)")
        idx = np.where(idx < nnue.HANDS, nnue.PAD, idx).astype(idx.dtype)
    num_games = int(d["games"])
    order = np.random.default_rng(a.seed).permutation(num_games)
    n_held = round(a.held * num_games)
    held = np.flatnonzero(np.isin(game, order[:n_held]))
    rest = order[n_held:]
    print(f"{describe()}, load average {os.getloadavg()[0]:.2f}\n{a.cache}: {num_games} games, {len(game)} positions; "
          f"{n_held} games held out ({len(held)} positions, {int((bag[held] == 0).sum())} with the bag empty); "
          f"target variance (held out) {final[held, 0].var():.4f}", flush=True)
    data = Positions(features, game, d["mover"], final, NUM_PLAYERS, False)
    empty = bag[held] == 0
    results: dict = {"games": num_games, "positions": int(len(game)), "held_games": n_held,
                     "held_positions": int(len(held)), "machine": describe(), "args": vars(a) | {
                         "games_dir": str(a.games_dir), "cache": str(a.cache), "out": str(a.out)},
                     "target_variance": float(final[held, 0].var()), "fits": []}
    sq: dict = {}

    def record(name: str, width: int, share: float, rows: np.ndarray, pred: np.ndarray, seconds: float,
               curve: dict | None = None):
        err = (pred - final[held, 0]) ** 2
        n_games = int(round(share * len(rest)))
        row = {"model": name, "width": width, "share": share, "games": n_games, "positions": int(len(rows)),
               "mse": float(err.mean()), "mse_bag_empty": float(err[empty].mean()),
               "mse_bag_left": float(err[~empty].mean()), "seconds": seconds, "early_stopping": curve}
        results["fits"].append(row)
        sq[(name, width, share)] = err
        print(f"  {name:<10} width {width:>4}  share {share:<6g} {n_games:>6} games {len(rows):>7} positions: "
              f"held-out MSE {row['mse']:.4f} (bag empty {row['mse_bag_empty']:.4f}, not {row['mse_bag_left']:.4f})"
              + (f", best step {curve['best_step']}" if curve else "") + f"  ({seconds:.0f} s)", flush=True)
        if a.out is not None:
            tmp = a.out.with_name(a.out.name + ".tmp")
            tmp.write_text(json.dumps(results, indent=1))
            os.replace(tmp, a.out)
            tmp = a.out.with_name(a.out.stem + ".errors.tmp.npz")
            np.savez(tmp, held=held, **{f"{m}|{w}|{sh:g}": v for (m, w, sh), v in sq.items()})
            os.replace(tmp, a.out.with_suffix(".errors.npz"))

    for share in shares:
        share_games = rest[:max(1, round(share * len(rest)))]
        rows = np.flatnonzero(np.isin(game, share_games))  # the MLP's: all of the share's games
        # the NNUE's: every tenth game of the share kept out to stop it early (validation)
        fit_rows = np.flatnonzero(np.isin(game, share_games[np.arange(len(share_games)) % 10 != 9]))
        valid_rows = np.flatnonzero(np.isin(game, share_games[np.arange(len(share_games)) % 10 == 9]))
        for name in models:
            for width in ([MLP_WIDTH] if name.startswith("mlp") else widths):
                start = time.perf_counter()
                print(f"  fitting {name} width {width} on share {share:g} ...", flush=True)
                if name == "mlp":
                    model = fit_mlp(data, final, rows, width, a.mlp_steps, fit_seed)
                    record(name, width, share, rows, predict_mlp(model, features[held]), time.perf_counter() - start)
                else:
                    side = features if name in ("nnue72_turns", "mlp_es") else None
                    model, curve, best_step = fit_nnue(idx, final, fit_rows, valid_rows, width, a.nnue_steps,
                                                       fit_seed, name.endswith("_turns"), held, a.every,
                                                       a.patience, side, mlp=name == "mlp_es", lr=a.nnue_lr,
                                                       weight_decay=a.weight_decay)
                    record(name, width, share, fit_rows, predict_nnue(model, idx, held, side),
                           time.perf_counter() - start, {"curve": curve, "best_step": best_step,
                                                         "validation_positions": int(len(valid_rows))})
    summarize(results, sq, game[held], a.seed)
    if a.out is not None:
        tmp = a.out.with_name(a.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        os.replace(tmp, a.out)
    return results


if __name__ == "__main__":
    main()
