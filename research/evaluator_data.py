"""What limits the fast evaluator: its data, its width, or its targets?

RESULTS.md: "2026-12-05, 01:06-02:00 UTC" (what limits the fast evaluator)
Verdict: TD(lambda) targets fit better (held-out MSE 0.8487 against 0.8542) but play the same (0.502);
width does not help; data has diminishing returns at the loop's size: nothing adopted.

    python research/evaluator_data.py runs/selfplay_2p                 # about 7 minutes on 2 cores
    python research/evaluator_data.py runs/NAME --shares 0.25,1 --widths 32 --lambdas 0.7 --out DIR

The evaluator (`agents.networks.Evaluator`) is where a network-guided search gets its strength
(`ismcts:net=PATH` scores its cut rollouts with it), and the self-play loop fits it to the
final search reward of every position of every generation's games. This script reads a
run's stored games (``runs/NAME/games/gen_*/``), holds out `--held` whole games, and fits
fresh evaluators the loop's way (minibatches of 512, Adam annealed from 1e-3 to 0) on:

* a share of the other games (`--shares`; the first games of a fixed shuffle, so a smaller
  share is part of every larger one), at each width in `--widths`, to final targets;
* all of them with TD(lambda) targets for each lambda in `--lambdas` (Sutton 1988; the
  targets of TD-Gammon): G_t = (1 - lambda) V(s_t+1) + lambda G_t+1 along each game, with G
  at a game's last position its final reward, V the final-target fit of the first width,
  then once more V the lambda fit itself.

It prints each fit's mean squared error on the held-out positions against their final
rewards: the loop's own target, so a lower figure is a better estimate of a position's
expected result. With `--out DIR`, every fit is also written as a checkpoint, the run's
last generation with its evaluator replaced, for a match: ``python evaluate.py --agents
"ismcts:net=DIR/final_w32_s1.pt,prior=3,time=0.01" "ismcts:net=DIR/final_w32_s0.25.pt,..."``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.networks import Evaluator, load_net, save_checkpoint  # noqa: E402
from agents.search.core import simulation_rewards  # noqa: E402
from agents.settings import MARGIN  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from training.learner import rotated_to_movers, slot_seats  # noqa: E402
from training.teacher import TeacherGames  # noqa: E402

BATCH = 512
LEARNING_RATE = 1e-3


@dataclass
class Positions:
    """Every stored position of a run, in game order (a game's positions are consecutive)."""

    features: np.ndarray  # float32 (N, value_kernels.NUM_FEATURES): the mover's full-state features
    game: np.ndarray  # int64 (N,): the game of each position, numbered over the whole run
    mover: np.ndarray  # int64 (N,)
    final: np.ndarray  # float32 (N, 4): every seat's final search reward, slot 0 = the mover
    num_players: int
    team: bool


def load_positions(run: Path) -> Positions:
    """Every generation's stored games of `run` (its config.yaml gives the player count)."""
    config = yaml.safe_load((run / "config.yaml").read_text())
    n, team = int(config.get("num_players", 2)), bool(config.get("team", False))
    chunks = sorted((run / "games").glob("gen_*/*.npz"))
    if not chunks:
        raise SystemExit(f"no stored self-play games under {run / 'games'}")
    features, game, mover, final = [], [], [], []
    games_so_far = 0
    for path in chunks:
        part = TeacherGames.load(path)
        rewards = np.zeros((len(part.final_info), 4))
        for g, info in enumerate(part.final_info):
            simulation_rewards(info, rewards[g], MARGIN)
        features.append(part.state_features.astype(np.float32))
        game.append(part.game + games_so_far)
        mover.append(part.mover)
        final.append(rotated_to_movers(rewards, part.game, part.mover, n))  # the loop's evaluator targets
        games_so_far += len(part.final_info)
    return Positions(np.concatenate(features), np.concatenate(game), np.concatenate(mover),
                     np.concatenate(final), n, team)


def lambda_returns(values: np.ndarray, final: np.ndarray, game: np.ndarray, mover: np.ndarray,
                   num_players: int, lam: float) -> np.ndarray:
    """TD(lambda) targets (N, 4), slot 0 = each row's mover: G_t = (1 - lam) V_t+1 + lam G_t+1
    within a game, G = the final reward at its last position. `values` and `final` are
    per slot from each row's mover, rows in game order."""
    n = num_players
    seats = slot_seats(mover, n)
    rows = np.arange(len(game))[:, None]
    v_abs, f_abs = np.zeros((len(game), n)), np.zeros((len(game), n))  # per seat
    v_abs[rows, seats], f_abs[rows, seats] = values[:, :n], final[:, :n]
    g_abs = f_abs.copy()
    continues = np.r_[game[1:] == game[:-1], False]  # the next row is the same game's next position
    for i in range(len(game) - 2, -1, -1):  # backward; a game's last row keeps its final reward
        if continues[i]:
            g_abs[i] = (1.0 - lam) * v_abs[i + 1] + lam * g_abs[i + 1]
    out = np.zeros((len(game), 4), dtype=np.float32)
    out[:, :n] = g_abs[rows, seats]
    return out


def fit(data: Positions, targets: np.ndarray, rows: np.ndarray, hidden: int, steps: int, seed: int) -> Evaluator:
    """A fresh evaluator fitted to `targets` on `rows` for `steps` annealed minibatch steps."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    evaluator = Evaluator(hidden)
    optimizer = torch.optim.Adam(evaluator.parameters(), lr=LEARNING_RATE)
    x, y, n = torch.as_tensor(data.features), torch.as_tensor(targets), data.num_players
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = LEARNING_RATE * 0.5 * (1 + np.cos(np.pi * step / steps))
        batch = torch.as_tensor(rng.choice(rows, BATCH))
        loss = F.mse_loss(evaluator(x[batch], n, data.team)[:, :n], y[batch, :n])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return evaluator.eval()


def predict(evaluator: Evaluator, data: Positions) -> np.ndarray:
    with torch.no_grad():
        return evaluator(torch.as_tensor(data.features), data.num_players, data.team).numpy()


def held_out_error(evaluator: Evaluator, data: Positions, rows: np.ndarray) -> float:
    """Mean squared error against the final rewards on `rows` (every seat slot in play)."""
    n = data.num_players
    with torch.no_grad():
        values = evaluator(torch.as_tensor(data.features[rows]), n, data.team).numpy()
    return float(((values[:, :n] - data.final[rows, :n]) ** 2).mean())


def write_checkpoint(run: Path, evaluator: Evaluator, path: Path) -> None:
    """The run's last generation with `evaluator` in place of its own (any width)."""
    last = sorted((run / "generations").glob("gen_*.pt"))[-1]
    net = load_net(last)
    net.config.evaluator_hidden = evaluator.layers[0].out_features
    net.evaluator = evaluator
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, net)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a self-play run directory with stored games (runs/NAME)")
    p.add_argument("--shares", default="0.0625,0.25,1", help="shares of the training games, comma-separated")
    p.add_argument("--widths", default="32,64,128", help="evaluator widths (all shares at the first; "
                   "the others at the full data)")
    p.add_argument("--lambdas", default="0.7", help="TD(lambda) fits at the first width, all data ('' = none)")
    p.add_argument("--steps", type=int, default=40_000, help="minibatch steps per fit")
    p.add_argument("--held", type=int, default=1000, help="games held out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write every fit as a checkpoint here")
    a = p.parse_args(argv)
    shares = [float(s) for s in a.shares.split(",")]
    widths = [int(w) for w in a.widths.split(",")]
    lambdas = [float(x) for x in a.lambdas.split(",") if x.strip()]
    if not all(0 < s <= 1 for s in shares) or not all(w >= 1 for w in widths) or not all(
            0 <= x <= 1 for x in lambdas) or a.steps < 1:
        p.error("shares must be in (0, 1], widths >= 1, lambdas in [0, 1], steps >= 1")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    data = load_positions(a.run)
    num_games = int(data.game.max()) + 1
    if a.held < 1 or a.held >= num_games:
        p.error(f"--held must be between 1 and the run's games less one ({num_games - 1})")
    order = np.random.default_rng(a.seed).permutation(num_games)
    held_rows = np.flatnonzero(np.isin(data.game, order[:a.held]))
    print(f"{describe()}\n{a.run}: {num_games} games, {len(data.game)} positions, {data.num_players} players"
          f"{' (teams)' if data.team else ''}; {a.held} games held out ({len(held_rows)} positions); "
          f"{a.steps} steps a fit", flush=True)

    def train_rows(share: float) -> np.ndarray:
        return np.flatnonzero(np.isin(data.game, order[a.held:a.held + max(1, round(share * (num_games - a.held)))]))

    results = []

    def report(target: str, hidden: int, share: float, evaluator: Evaluator, rows: np.ndarray, start: float):
        row = {"target": target, "width": hidden, "share": share, "games": len(np.unique(data.game[rows])),
               "positions": len(rows), "held_out_mse": held_out_error(evaluator, data, held_rows),
               "seconds": time.perf_counter() - start}
        results.append(row)
        print(f"  {target:<12} width {hidden:>4}  share {share:<7g} {row['games']:>7} games  held-out MSE "
              f"{row['held_out_mse']:.4f}  ({row['seconds']:.0f} s)", flush=True)
        if a.out is not None:
            write_checkpoint(a.run, evaluator, a.out / f"{target.replace('=', '')}_w{hidden}_s{share:g}.pt")

    all_rows, first = train_rows(1.0), None
    for share in shares:
        start = time.perf_counter()
        evaluator = fit(data, data.final, train_rows(share), widths[0], a.steps, a.seed + 1)
        report("final", widths[0], share, evaluator, train_rows(share), start)
        first = evaluator if share == 1.0 else first
    for hidden in widths[1:]:
        start = time.perf_counter()
        report("final", hidden, 1.0, fit(data, data.final, all_rows, hidden, a.steps, a.seed + 1), all_rows, start)
    for lam in lambdas:
        start = time.perf_counter()
        values = predict(first if first is not None else fit(data, data.final, all_rows, widths[0], a.steps,
                                                             a.seed + 1), data)
        for round_ in range(2):  # bootstrapped from the final-target fit, then from itself
            targets = lambda_returns(values, data.final, data.game, data.mover, data.num_players, lam)
            evaluator = fit(data, targets, all_rows, widths[0], a.steps, a.seed + 2 + round_)
            values = predict(evaluator, data)
        report(f"lambda={lam:g}", widths[0], 1.0, evaluator, all_rows, start)
    return results


if __name__ == "__main__":
    main()
