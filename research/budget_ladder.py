"""Issue 68, item 1: the budget ladder. How much does a search gain from thinking longer,
in each variant? Each rung is the search at a fixed number of simulations, m times what
0.01 s a move buys (m = 2, 4, 8, 32), against its own 1x on duplicate deals:

* 2 players: the rung against 1x, every seating (1,000 games a rung, 500 at 32x);
* 4 players: one rung seat against three 1x seats (`--one-vs-rest`; the pairwise score);
* teams: a team of two rung seats against a team of two 1x seats.

Elo per doubling for a rung scoring s at m x: 400 log10(s / (1 - s)) / log2(m), its 95%
interval from the score's (paired by deal). Steps:

    python research/budget_ladder.py measure --agent selfplay --players 2       # 1x: median simulations
    python research/budget_ladder.py run --agent selfplay --players 2 --base 3500 --rungs 2 4 8 --games 1000
    python research/budget_ladder.py run --agent selfplay --players 2 --base 3500 --rungs 32 --games 500
    python research/budget_ladder.py summary --out results/ladder        # table (markdown) and ladder.png

Each rung is an ordinary tournament (`evaluation.run_evaluation`) in
results/ladder/<agent>-<variant>-<m>x, so a stopped run resumes where it stopped. 1x is
3,500 simulations, the figure issues 62 and 70 measured for `selfplay:time=0.01` (`measure`
found about 6,000 on a quiet core of machine A on 2026-12-07: 1x is then about 0.006 s).

RESULTS.md: "2026-12-07, 01:35-03:07 UTC"
Verdict: 2 players, the shipped search: 32x scores 0.609 [0.567, 0.649] against 1x (+77 Elo
[+47, +107]); 2x +30, 4x +44, 8x +42 Elo; strength is left (32x >= 0.60), but Elo per
doubling falls from +30 to +15. 4 players (one seat against three 1x seats): 32x 0.551
[0.523, 0.581], +35 Elo, +7 a doubling. Teams: 2x 0.554, 4x 0.536, 8x 0.557, 32x 0.573 (500 games).
Plain ismcts, 2 players: 0.547 / 0.590 / 0.616 / 0.660 (+33 / +63 / +82 / +115 Elo).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

import agents
from engine import GameState
from engine.deal import random_deal
from engine.view import PlayerView

VARIANTS = {"2p": (2, False), "4p": (4, False), "team": (4, True)}


def variant_name(players: int, team: bool) -> str:
    return "team" if team else f"{players}p"


def measure(agent: str, players: int, team: bool, games: int, seed: int = 0) -> int:
    """The median simulations a searched move of `AGENT:time=0.01` runs here."""
    seats = [agents.make(f"{agent}:time=0.01", seed=seed + s) for s in range(players)]
    for seat in seats:
        seat.warm_up()
    counts = []
    for g in range(games):
        state = GameState.from_deal(random_deal(3 * 10**6 + g), players, team)
        for s, seat in enumerate(seats):
            seat.reset(s, players, team)
        while not state.is_over:
            mover = state.current_player
            action = seats[mover].act(None, PlayerView(state, mover))
            search = getattr(seats[mover], "current", None) or seats[mover]
            if getattr(search, "last_iterations", 0):
                counts.append(search.last_iterations)
            state.step(action)
    return int(np.median(counts))


def rung_dir(out: Path, agent: str, players: int, team: bool, multiple: int) -> Path:
    return out / f"{agent}-{variant_name(players, team)}-{multiple}x"


def run_rung(agent: str, players: int, team: bool, base: int, multiple: int, games: int, seed: int,
             workers: int, out: Path) -> dict:
    from evaluation import EvalConfig, run_evaluation

    strong, weak = f"{agent}:iterations={multiple * base}", f"{agent}:iterations={base}"
    cfg = EvalConfig.from_dict({
        "agents": [strong, weak], "players": players, "team": team, "games": games, "seed": seed,
        "workers": workers, "one_vs_rest": players > 2 and not team, "plots": False,
        "out": str(rung_dir(out, agent, players, team, multiple)),
        # a 32x move of the 4-player search takes seconds: generous limits, never a forfeit
        "move_time_limit": 120.0, "game_time_limit": 3600.0,
    })
    return run_evaluation(cfg)


def elo(score: float) -> float:
    score = min(max(score, 1e-4), 1 - 1e-4)
    return 400 * math.log10(score / (1 - score))


def summary(out: Path) -> list[dict]:
    """Every finished rung under `out`: its score, Elo and Elo per doubling with intervals."""
    rows = []
    for results in sorted(out.glob("*-*x/results.json")):
        res = json.loads(results.read_text())
        strong, weak = res["labels"][:2]
        pair = res["pairs"][f"{strong} vs {weak}"]
        agent, variant, multiple = results.parent.name.rsplit("-", 2)
        m = int(multiple.removesuffix("x"))
        lo, hi = pair["win_rate_ci95"]
        # games played (at 4 players the pair counts each game three times, once per opponent)
        rows.append({"agent": agent, "variant": variant, "multiple": m, "strong": strong, "weak": weak,
                     "games": res["games"], "score": pair["win_rate"], "score_ci95": [lo, hi],
                     "elo": round(elo(pair["win_rate"]), 1), "elo_ci95": [round(elo(lo), 1), round(elo(hi), 1)],
                     "elo_per_doubling": round(elo(pair["win_rate"]) / math.log2(m), 1),
                     "elo_per_doubling_ci95": [round(elo(lo) / math.log2(m), 1), round(elo(hi) / math.log2(m), 1)],
                     "margin": pair["mean_margin"], "margin_ci95": pair["margin_ci95"],
                     "seconds": res.get("seconds")})
    rows.sort(key=lambda r: (r["agent"], r["variant"], r["multiple"]))
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| search, variant | rung | games | score vs 1x | Elo | Elo per doubling | margin (minutes) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['agent']}`, {r['variant']} | {r['multiple']}x (`{r['strong']}`) | {r['games']:,} | "
                     f"{r['score']:.3f} [{r['score_ci95'][0]:.3f}, {r['score_ci95'][1]:.3f}] | "
                     f"{r['elo']:+.0f} [{r['elo_ci95'][0]:+.0f}, {r['elo_ci95'][1]:+.0f}] | "
                     f"{r['elo_per_doubling']:+.0f} [{r['elo_per_doubling_ci95'][0]:+.0f}, "
                     f"{r['elo_per_doubling_ci95'][1]:+.0f}] | "
                     f"{r['margin']:+.1f} [{r['margin_ci95'][0]:+.1f}, {r['margin_ci95'][1]:+.1f}] |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for key in sorted({(r["agent"], r["variant"]) for r in rows}):
        mine = [r for r in rows if (r["agent"], r["variant"]) == key]
        xs = [1] + [r["multiple"] for r in mine]
        ys = [0.0] + [r["elo"] for r in mine]
        lo = [0.0] + [r["elo"] - r["elo_ci95"][0] for r in mine]
        hi = [0.0] + [r["elo_ci95"][1] - r["elo"] for r in mine]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=f"{key[0]}, {key[1]}")
    ax.set_xscale("log", base=2)
    bases = sorted({r["weak"].partition("iterations=")[2] for r in rows})
    ax.set(xlabel=f"simulations a move, as a multiple of 1x ({', '.join(bases)} simulations)",
           ylabel="Elo against its own 1x",
           title="How much a search gains from thinking longer (95% intervals)")
    ax.axhline(0, color="grey", lw=0.8, ls="--")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("measure", "run"):
        q = sub.add_parser(name)
        q.add_argument("--agent", choices=("selfplay", "ismcts"), default="selfplay")
        q.add_argument("--players", type=int, choices=(2, 3, 4), default=2)
        q.add_argument("--team", action="store_true")
        q.add_argument("--seed", type=int, default=68)
    sub.choices["measure"].add_argument("--games", type=int, default=10)
    run = sub.choices["run"]
    run.add_argument("--base", type=int, required=True, help="1x: the simulations 0.01 s buys (measure)")
    run.add_argument("--rungs", type=int, nargs="+", default=[2, 4, 8, 32])
    run.add_argument("--games", type=int, default=1000)
    run.add_argument("--workers", type=int, default=2)
    run.add_argument("--out", type=Path, default=Path("results/ladder"))
    show = sub.add_parser("summary")
    show.add_argument("--out", type=Path, default=Path("results/ladder"))
    show.add_argument("--plot", type=Path, default=None, help="also draw the ladder here (PNG)")
    a = p.parse_args(argv)
    if a.command == "measure":
        print(f"{a.agent}:time=0.01, {variant_name(a.players, a.team)}: median "
              f"{measure(a.agent, a.players, a.team, a.games, a.seed)} simulations a searched move")
    elif a.command == "run":
        for multiple in a.rungs:
            run_rung(a.agent, a.players, a.team, a.base, multiple, a.games, a.seed, a.workers, a.out)
    else:
        rows = summary(a.out)
        print(markdown(rows))
        (a.out / "ladder.json").write_text(json.dumps(rows, indent=1) + "\n")
        if a.plot:
            plot(rows, a.plot)


if __name__ == "__main__":
    main()
