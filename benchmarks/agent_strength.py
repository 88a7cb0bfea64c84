"""Duplicate match between two agent specs in 2-player games.

    python benchmarks/agent_strength.py greedy random --deals 500
    python benchmarks/agent_strength.py ismcts:iterations=1000 greedy --deals 200 --workers 2

Each deal (random_deal(seed + i)) is played twice, A in seat 0 and then A in seat 1, so
both agents get the same tiles: 2 * deals games. A game is a win for A when A ranks
first (more minutes, then fewer tiles in hand). Prints A's wins / draws / losses, its
win rate (draws count half) with a 95% Wilson interval, the strict win rate with its
interval, and A's mean minutes margin. Agents are reseeded per game from (seed, deal,
seat), so a run is reproducible for iteration budgets.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from multiprocessing import get_context

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents import make  # noqa: E402
from benchmarks.machine import describe, machine_info  # noqa: E402
from agents.play import play_game  # noqa: E402
from engine.deal import random_deal  # noqa: E402

_AGENTS = {}


def wilson(successes: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (successes may be fractional)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _init(spec_a: str, spec_b: str) -> None:
    _AGENTS["a"] = make(spec_a)
    _AGENTS["b"] = make(spec_b)


def play_pair(task: tuple[int, int]) -> list[dict]:
    """Both games of one deal: A in seat 0, then A in seat 1. Returns A's results."""
    seed, index = task
    deal = random_deal(seed + index)
    a, b = _AGENTS["a"], _AGENTS["b"]
    out = []
    for a_seat in (0, 1):
        agents = [a, b] if a_seat == 0 else [b, a]
        seeds = [(seed * 1_000_003 + index) * 4 + 2 * a_seat + s for s in range(2)]
        record = play_game(agents, deal, 2, seeds=seeds)
        if record.forfeit is not None:
            raise RuntimeError(f"deal {index}: seat {record.forfeit} forfeited: {record.error}")
        out.append({"deal": index, "a_seat": a_seat, "reward": record.rewards[a_seat],
                    "margin": record.scores[a_seat] - record.scores[1 - a_seat]})
    return out


def summarize(results: list[dict], spec_a: str, spec_b: str, seconds: float) -> dict:
    n = len(results)
    wins = sum(r["reward"] > 0 for r in results)
    draws = sum(r["reward"] == 0 for r in results)
    score = wins + 0.5 * draws
    return {
        "a": spec_a, "b": spec_b, "games": n, "wins": wins, "draws": draws, "losses": n - wins - draws,
        "win_rate": score / n, "win_rate_ci95": wilson(score, n),
        "strict_win_rate": wins / n, "strict_win_rate_ci95": wilson(wins, n),
        "mean_margin": sum(r["margin"] for r in results) / n,
        "both_games_won_deals": sum(1 for i in range(0, n, 2)
                                    if results[i]["reward"] > 0 and results[i + 1]["reward"] > 0),
        "seconds": seconds,
        "machine": machine_info(),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="agent spec A (the one whose win rate is reported)")
    parser.add_argument("b", help="agent spec B")
    parser.add_argument("--deals", type=int, default=500, help="deals; each is played twice")
    parser.add_argument("--seed", type=int, default=0, help="deal i is random_deal(seed + i)")
    parser.add_argument("--workers", type=int, default=1, help="processes (each plays whole deals)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    tasks = [(args.seed, i) for i in range(args.deals)]
    start = time.perf_counter()
    results: list[dict] = []
    if args.workers > 1:
        _init(args.a, args.b)  # compile (or load the numba cache) once before forking
        play_pair((args.seed, 0))
        with get_context("fork").Pool(args.workers, _init, (args.a, args.b)) as pool:
            for pair in pool.imap(play_pair, tasks, chunksize=4):
                results.extend(pair)
    else:
        _init(args.a, args.b)
        for task in tasks:
            results.extend(play_pair(task))
    summary = summarize(results, args.a, args.b, time.perf_counter() - start)
    if args.json:
        print(json.dumps(summary))
    else:
        lo, hi = summary["win_rate_ci95"]
        slo, shi = summary["strict_win_rate_ci95"]
        print(f"{args.a} vs {args.b}: {summary['games']} games ({args.deals} deals x 2 seats, "
              f"seed {args.seed}), {summary['seconds']:.0f} s, {args.workers} worker(s)")
        print(f"  machine: {describe()}, load average {summary['machine']['load_average']:.2f}")
        print(f"  A wins {summary['wins']}, draws {summary['draws']}, losses {summary['losses']}")
        print(f"  win rate (draws half) {summary['win_rate']:.3f}  95% CI [{lo:.3f}, {hi:.3f}]")
        print(f"  strict win rate       {summary['strict_win_rate']:.3f}  95% CI [{slo:.3f}, {shi:.3f}]")
        print(f"  mean margin (A - B minutes) {summary['mean_margin']:+.1f}; "
              f"deals won from both seats {summary['both_games_won_deals']}/{args.deals}")
    return summary


if __name__ == "__main__":
    main()
