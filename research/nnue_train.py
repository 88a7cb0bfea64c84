"""Issue 56, F2: the NNUE evaluator learned TD-Gammon style from its own one-move-ahead agent's games.
RESULTS.md: "2026-12-06, 06:40-08:10 UTC" (issue 56 F2: the NNUE evaluator learned from its own games)
Verdict: F2 not reached at 500,000 games: held-out MSE 0.877 (bar 0.854), 0.724 +- 0.018 against
greedy (bar 0.78), flat since 100,000 games (with --threats; v1 alone: 1.01 and 0.39 at 100,000);
at 1,000,000 games 0.871 and 0.726: the stop rule (0.75, 0.85) fires, stop.

    python research/nnue_heldout.py --games 400 --out results/nnue_heldout.npz   # the yardstick, once
    nice -n 5 python research/nnue_train.py --out runs/nnue_f2 --games 500000      # resumable; Ctrl-C is safe
    python research/nnue_train.py --evaluate runs/nnue_f2/model.pt --match-deals 1000  # one checkpoint's figures

From a random init, rounds of (research/nnue.py):

1. play `--round-games` 2-player games of the one-move-ahead agent with the current weights in
   both seats (`nnue.play_games`, in numba, exploring with `--epsilon`), stored compactly (deal
   and actions) in ``OUT/games/round_NNNNN.npz``, each written whole (tmp + os.replace);
2. re-featurize the last `--window` games (`nnue.replay_records`: every seat's information set
   after every ply), their TD(`--lam`) targets from the current network's values
   (`nnue.td_targets`), and fit the torch network `--epochs` passes over them (Adam, minibatches
   of `--batch`, MSE of output r = 0);
3. log to ``OUT/log.csv`` (appended and flushed) the games so far, the play rate, the training
   loss, the held-out MSE (the mover's information set before each move of the search games of
   research/nnue_heldout.py against the mover's final search reward: the yardstick of
   research/evaluator_data.py, where today's full-state evaluator has 0.854), and every
   `--match-every` rounds the agent's score against `greedy` on `--match-deals` duplicate deals
   (played in numba: `nnue.match_vs_greedy`, both seatings, 95% normal interval), and replace
   ``OUT/model.pt`` (`nnue.save`). A rerun with the same OUT resumes after the last round logged.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nnue  # noqa: E402

FIELDS = ["round", "games", "seconds", "play_games_per_s", "fit_seconds", "rows", "train_mse", "heldout_mse",
          "vs_greedy", "vs_greedy_half_width", "match_games"]


def rows_of(deals, actions, lengths, threats: bool, players: int = 2):
    width = nnue.MAX_ACTIVE_THREATS if threats else nnue.MAX_ACTIVE
    rows = np.zeros((nnue.count_records(lengths, players), width), np.int16)
    game_of, seat_of = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    n = nnue.replay_records(deals, actions, lengths, players, threats, rows, game_of, seat_of)
    return rows[:n], game_of[:n], seat_of[:n]


def heldout_set(path: str, threats: bool):
    """The held-out rows: each search game's positions before every move, from the mover's
    information set (the rows whose seat is to move), with the mover's final search reward."""
    data = np.load(path)
    rows, game_of, seat_of = rows_of(data["deals"], data["actions"], data["lengths"], threats)
    to_move = (rows == nnue.TOMOVE).any(axis=1)  # relative seat 0 to move: the row's seat moves next
    targets = data["rewards"][game_of, seat_of]
    return torch.from_numpy(rows[to_move].astype(np.int64)), torch.from_numpy(targets[to_move]).float()


def values_of(model, rows: np.ndarray, batch: int = 65536) -> np.ndarray:
    out = np.zeros(len(rows), np.float64)
    with torch.no_grad():
        for i in range(0, len(rows), batch):
            out[i:i + batch] = model(torch.from_numpy(rows[i:i + batch].astype(np.int64)))[:, 0].numpy()
    return out


def play_round(seed: int, first: int, count: int, net, epsilon: float, ws, chunk: int = 250):
    deals = np.zeros((count, 40), np.int8)
    actions = np.zeros((count, nnue.MAX_PLIES), np.int16)
    lengths = np.zeros(count, np.int64)
    rewards = np.zeros((count, 4))
    with tqdm(total=count, desc=f"games {first}+", leave=False, mininterval=5) as bar:
        for i in range(0, count, chunk):
            j = min(count, i + chunk)
            nnue.play_games(seed, first + i, j - i, 2, net, epsilon, ws, deals[i:j], actions[i:j], lengths[i:j],
                            rewards[i:j])
            bar.update(j - i)
    return deals, actions, lengths, rewards


def save_round(path: str, deals, actions, lengths, rewards) -> None:
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, deals=deals, actions=actions, lengths=lengths, rewards=rewards)
    os.replace(tmp, path)


def evaluate(path: str, heldout: str, deals: int) -> None:
    model = nnue.load(path)
    rows, targets = heldout_set(heldout, model.threats)
    with torch.no_grad():
        held = float(torch.mean((model(rows)[:, 0] - targets) ** 2))
    scores = np.zeros(deals)
    start = time.time()
    nnue.match_vs_greedy(0, deals, nnue.export(model), nnue.new_workspace(model.hidden), scores)
    half = 1.96 * scores.std() / np.sqrt(deals)
    print(f"{path}: held-out MSE {held:.4f} on {len(rows)} positions (target variance {float(targets.var()):.3f}); "
          f"vs greedy {scores.mean():.3f} +- {half:.3f} over {2 * deals} games ({deals} duplicate deals, "
          f"{time.time() - start:.0f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="the run's folder (required unless --evaluate)")
    parser.add_argument("--evaluate", metavar="MODEL",
                        help="only print MODEL's held-out MSE and its score against greedy on --match-deals deals")
    parser.add_argument("--games", type=int, default=500_000, help="stop after this many games")
    parser.add_argument("--round-games", type=int, default=5000)
    parser.add_argument("--window", type=int, default=20_000, help="fit on the last this many games")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--lam", type=float, default=0.7)
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--threats", action="store_true",
                        help="with the threat features (research/nnue.py THREATS: the best placement now, mine and theirs)")
    parser.add_argument("--heldout", default="results/nnue_heldout.npz")
    parser.add_argument("--match-every", type=int, default=10)
    parser.add_argument("--match-deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for name in ("games", "round_games", "window", "batch", "hidden", "match_every", "match_deals", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if not (0.0 <= args.lam <= 1.0 and 0.0 <= args.epsilon <= 1.0 and args.epochs > 0 and args.lr > 0):
        parser.error("--lam and --epsilon must lie in [0, 1], --epochs and --lr above 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.evaluate:
        evaluate(args.evaluate, args.heldout, args.match_deals)
        return
    if not args.out:
        parser.error("--out is required (or --evaluate MODEL)")
    games_dir = os.path.join(args.out, "games")
    os.makedirs(games_dir, exist_ok=True)
    model_path, log_path = os.path.join(args.out, "model.pt"), os.path.join(args.out, "log.csv")

    done_rounds = 0
    if os.path.exists(log_path):
        with open(log_path) as f:
            done_rounds = sum(1 for _ in csv.DictReader(f))
    model = (nnue.load(model_path) if done_rounds and os.path.exists(model_path)
             else nnue.NNUE(args.hidden, 2, args.threats))
    if done_rounds and (model.hidden, model.threats) != (args.hidden, args.threats):
        parser.error(f"{model_path} has hidden {model.hidden} and threats {model.threats}, not the arguments'")
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    held_rows, held_targets = heldout_set(args.heldout, model.threats)
    print(f"held-out: {len(held_rows)} positions of {args.heldout}; resuming after round {done_rounds}"
          if done_rounds else f"held-out: {len(held_rows)} positions of {args.heldout}; a fresh run", flush=True)
    ws = nnue.new_workspace(model.hidden)
    new_log = not os.path.exists(log_path)
    log = open(log_path, "a", newline="")
    writer = csv.DictWriter(log, FIELDS)
    if new_log:
        writer.writeheader()
    window_rounds = max(1, args.window // args.round_games)
    start = time.time()
    rnd = done_rounds
    while rnd * args.round_games < args.games:
        net = nnue.export(model)
        first = rnd * args.round_games
        t0 = time.time()
        path = os.path.join(games_dir, f"round_{rnd:05d}.npz")
        if not os.path.exists(path):  # (a round played before a stop is reused)
            save_round(path, *play_round(args.seed, first, args.round_games, net, args.epsilon, ws))
        play_rate = args.round_games / (time.time() - t0)

        t1 = time.time()
        parts = [np.load(os.path.join(games_dir, f"round_{r:05d}.npz")) for r in range(max(0, rnd + 1 - window_rounds),
                                                                                          rnd + 1)]
        deals, actions, lengths, rewards = (np.concatenate([p[k] for p in parts])
                                            for k in ("deals", "actions", "lengths", "rewards"))
        rows, game_of, seat_of = rows_of(deals, actions, lengths, model.threats)
        targets = np.zeros(len(rows))
        nnue.td_targets(game_of, seat_of, values_of(model, rows), rewards, args.lam, targets)
        x_all, y_all = torch.from_numpy(rows.astype(np.int64)), torch.from_numpy(targets).float()
        steps = int(args.epochs * len(rows) / args.batch)
        order = torch.randperm(len(rows))
        losses = []
        model.train()
        for step in range(steps):
            k = order[(step * args.batch) % len(rows):][:args.batch]
            loss = torch.mean((model(x_all[k])[:, 0] - y_all[k]) ** 2)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        with torch.no_grad():
            model.embed.weight[nnue.PAD].zero_()
            held = float(torch.mean((model(held_rows)[:, 0] - held_targets) ** 2))
        fit_seconds = time.time() - t1
        rnd += 1
        row = {"round": rnd, "games": rnd * args.round_games, "seconds": round(time.time() - start, 1),
               "play_games_per_s": round(play_rate, 1), "fit_seconds": round(fit_seconds, 1), "rows": len(rows),
               "train_mse": round(float(np.mean(losses)) if losses else float("nan"), 4),
               "heldout_mse": round(held, 4), "vs_greedy": "", "vs_greedy_half_width": "", "match_games": ""}
        nnue.save(model, model_path)
        if rnd % args.match_every == 0 or rnd * args.round_games >= args.games:
            scores = np.zeros(args.match_deals)
            nnue.match_vs_greedy(0, args.match_deals, nnue.export(model), ws, scores)
            row.update(vs_greedy=round(float(scores.mean()), 4),
                       vs_greedy_half_width=round(float(1.96 * scores.std() / np.sqrt(len(scores))), 4),
                       match_games=2 * args.match_deals)
            nnue.save(model, os.path.join(args.out, f"model_{rnd * args.round_games}.pt"))
        writer.writerow(row)
        log.flush()
        print(" ".join(f"{k}={v}" for k, v in row.items() if v != ""), flush=True)
    log.close()


if __name__ == "__main__":
    main()
