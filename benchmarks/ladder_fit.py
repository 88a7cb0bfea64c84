#!/usr/bin/env python
"""How long the Elo ladder's refit takes at the size of a long self-play run, and how
well it recovers known ratings.

A synthetic ladder: G generations whose true Elo rises by STEP a generation, each playing
the previous K generations and two anchors, N games a match (both seatings of N/2 deals),
outcomes drawn from the Bradley-Terry model of the true ratings. Prints the seconds of one
refit (Bradley-Terry fit with B bootstrap resamples, ladder.json and ladder.png written)
and the largest error of the fitted Elo against the truth.

    python benchmarks/ladder_fit.py [--generations 20] [--previous 2] [--games 200] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import describe  # noqa: E402
from evaluation.ladder import GAMES_FILE, load_ladder_games, write_outputs  # noqa: E402

STEP = 40.0  # true Elo gained per generation
ANCHORS = {"greedy": 0.0, "ismcts:time=0.01": 300.0}  # true Elo of the anchors


def synthetic_journal(generations: int, previous: int, games: int, bootstrap: int,
                      seed: int = 0) -> tuple[list[dict], dict[str, float]]:
    rng = np.random.default_rng(seed)
    true = dict(ANCHORS, **{f"gen{g}": -200.0 + STEP * g for g in range(generations)})
    records = [{"kind": "ladder", "players": 2, "team": False, "seed": seed, "anchors": list(ANCHORS),
                "bootstrap": bootstrap, "prior_draws": 1.0}]
    for g in range(generations):
        opponents = [f"gen{h}" for h in range(max(0, g - previous), g)] + list(ANCHORS)
        records.append({"kind": "generation", "generation": g, "spec": f"checkpoint:gen{g}.pt", "wall_s": 600.0 * g,
                        "games_per_pair": games, "opponents": opponents})
        for opponent in opponents:
            p_win = 1.0 / (1.0 + 10.0 ** ((true[opponent] - true[f"gen{g}"]) / 400.0))
            for n in range(games):
                labels = [f"gen{g}", opponent][:: 1 - 2 * (n % 2)]
                won = rng.random() < p_win
                ranking = [0, 1] if won == (labels[0] == f"gen{g}") else [1, 0]
                records.append({"kind": "game", "generation": g, "opponent": opponent, "game": n,
                                "deal_index": n // 2, "labels": labels, "scores": [100 - 50 * r for r in ranking],
                                "ranking": ranking, "forfeit": None})
    return records, true


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--generations", type=int, default=20)
    p.add_argument("--previous", type=int, default=2)
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--bootstrap", type=int, default=1000)
    args = p.parse_args()
    records, true = synthetic_journal(args.generations, args.previous, args.games, args.bootstrap)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        (run / GAMES_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
        write_outputs(run, load_ladder_games(run))  # imports matplotlib once, outside the timing
        start = time.perf_counter()
        summary = write_outputs(run, load_ladder_games(run))
        seconds = time.perf_counter() - start
    fitted = {f"gen{g['generation']}": g["elo"] for g in summary["generations"]}
    fitted.update({a: v["elo"] for a, v in summary["anchors"].items()})
    error = max(abs((fitted[k] - fitted["greedy"]) - (true[k] - true["greedy"])) for k in true)
    covered = np.mean([g["elo_ci95"][0] <= true[f"gen{g['generation']}"] <= g["elo_ci95"][1]
                       for g in summary["generations"]])
    print(f"machine: {describe()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{args.generations} generations x {len(ANCHORS) + min(args.previous, args.generations)} matches x "
          f"{args.games} games = {summary['games']} games, {args.bootstrap} bootstrap resamples")
    print(f"refit (load journal, fit, bootstrap, ladder.json, ladder.png): {seconds:.2f} s")
    print(f"largest |fitted - true| Elo: {error:.0f}; true Elo inside the 95% interval: {covered:.0%} of generations")


if __name__ == "__main__":
    main()
