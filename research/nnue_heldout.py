"""Issue 56, F2's yardstick: a held-out set of the shipped search's 2-player games for research/nnue.py's trainer.
RESULTS.md: "2026-12-06, 06:40-08:10 UTC" (issue 56 F2: the NNUE evaluator learned from its own games)
Verdict: a tool of the F2 measurement (its held-out positions), no finding of its own.

    python research/nnue_heldout.py --games 300 --out results/nnue_heldout.npz     # a few minutes

Plays `--games` games of `--spec` (default ``selfplay:iterations=1000,prior=3``, the search that
plays the self-play loop's games, as research/f0_headroom.py does) in both seats, deal i =
`engine.random_deal(2 * 10**6 + i)` (apart from the trainer's and the matches' deals), and writes
per game the deal, the actions and every seat's final search reward (`simulation_rewards` with
`MARGIN`), the npz replaced whole every 25 games; a rerun resumes after the games already there.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from tqdm import tqdm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents import make  # noqa: E402
from agents.play import play_game  # noqa: E402
from agents.search.core import simulation_rewards  # noqa: E402
from agents.settings import MARGIN  # noqa: E402
from engine import access, kernels, random_deal  # noqa: E402

MAX_PLIES = 128
DEAL_BASE = 2 * 10**6


def final_search_rewards(deal, actions, players: int = 2) -> np.ndarray:
    grid, info = access.new_arrays()
    kernels.reset(grid, info, np.asarray(deal, dtype=np.int64), players, 0)
    for a in actions:
        kernels.apply_action(grid, info, int(a))
    if not access.is_over(info):
        raise RuntimeError("a stored game did not end")
    out = np.zeros(4)
    simulation_rewards(info, out, MARGIN)
    return out


def write(path: str, deals, actions, lengths, rewards, spec: str) -> None:
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, deals=np.array(deals, dtype=np.int8), actions=np.array(actions, dtype=np.int16),
             lengths=np.array(lengths, dtype=np.int64), rewards=np.array(rewards, dtype=np.float64), spec=spec)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--spec", default="selfplay:iterations=1000,prior=3")
    parser.add_argument("--out", default="results/nnue_heldout.npz")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be positive")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    deals, actions, lengths, rewards = [], [], [], []
    if os.path.exists(args.out):
        old = np.load(args.out)
        if str(old["spec"]) != args.spec:
            parser.error(f"{args.out} holds games of {old['spec']}, not {args.spec}")
        deals, actions = list(old["deals"]), list(old["actions"])
        lengths, rewards = list(old["lengths"]), list(old["rewards"])
    agents = [make(args.spec, seed=0), make(args.spec, seed=1)]
    for i in tqdm(range(len(deals), args.games), desc="held-out games", initial=len(deals), total=args.games):
        deal = random_deal(DEAL_BASE + i)
        record = play_game(agents, deal, 2, seeds=[2 * i, 2 * i + 1])
        if record.forfeit is not None:
            raise RuntimeError(f"game {i}: seat {record.forfeit} forfeited: {record.error}")
        row = np.zeros(MAX_PLIES, dtype=np.int16)
        row[:len(record.actions)] = record.actions
        deals.append(deal)
        actions.append(row)
        lengths.append(len(record.actions))
        rewards.append(final_search_rewards(deal, record.actions))
        if len(deals) % 25 == 0 or len(deals) == args.games:
            write(args.out, deals, actions, lengths, rewards, args.spec)


if __name__ == "__main__":
    main()
