"""Issue 68, item 2: skill and luck per variant, after Dreef, Borm and van der Genugten
("Measuring skill in games", Mathematical Methods of Operations Research, 2004).

A game's outcome moves between three players: a *beginner*, the *optimal* player, and a
*fictive* player who plays well and knows the chance outcomes in advance. The *learning
effect* LE is what the optimal player gains over the beginner; the *random effect* RE
what the fictive player gains over the optimal one. Relative skill = LE / (LE + RE): 0
for a game of pure chance, 1 for a game of pure skill.

Proxies here, each scored against the same field, the shipped search at 1x
(`selfplay:iterations=3500`, what 0.01 s a move bought when issues 62 and 70 measured):

* beginner: `random` (and `greedy`, a beginner who takes the points in front of them);
* optimal: the best player we have, the shipped search at 32x (`selfplay:iterations=112000`),
  read from the budget ladder (research/budget_ladder.py, results/ladder/...-32x), and the
  shipped agent itself at 1x (0.5 by symmetry);
* fictive: `cheat:iterations=28000`, UCT on the true state (the other hands and the bag
  order: every chance outcome), at 8 times the field's simulations.

A score is the pairwise score against the field (2 players: every seating on duplicate
deals; 4 players: one seat against three field seats; teams: a team of two against a team
of two). The shares reported: relative skill with 32x as the optimal player, and the
share of the whole spread (fictive minus beginner) that lies between the shipped agent
and 32x: skill a better agent could still collect (a lower bound: 32x is not optimal).

    python research/skill_luck.py run --players 2 --games 400
    python research/skill_luck.py run --players 4 --games 400
    python research/skill_luck.py run --players 4 --team --games 400
    python research/skill_luck.py summary            # the table, from results/skill_luck and results/ladder

RESULTS.md: "2026-12-07, 04:45-05:10 UTC"
Verdict: relative skill 72% (2 players), 88% (4 players), 60% (teams); 13%, 8% and 8% of
the spread lie between the shipped agent and its 32x search.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

FIELD = "selfplay:iterations=3500"
PLAYERS = {"random": "random", "greedy": "greedy", "cheat": "cheat:iterations=28000"}
VARIANTS = {"2p": (2, False), "4p": (4, False), "team": (4, True)}


def variant_name(players: int, team: bool) -> str:
    return "team" if team else f"{players}p"


def run_match(spec: str, players: int, team: bool, games: int, seed: int, workers: int, out: Path) -> dict:
    from evaluation import EvalConfig, run_evaluation

    cfg = EvalConfig.from_dict({
        "agents": [spec, FIELD], "players": players, "team": team, "games": games, "seed": seed,
        "workers": workers, "one_vs_rest": players > 2 and not team, "plots": False, "progress": False,
        "out": str(out), "move_time_limit": 120.0, "game_time_limit": 3600.0,
    })
    return run_evaluation(cfg)


def score(results: Path) -> dict | None:
    """The first agent's pairwise score against the second, with its interval and games."""
    if not results.is_file():
        return None
    res = json.loads(results.read_text())
    a, b = res["labels"][:2]
    pair = res["pairs"][f"{a} vs {b}"]
    return {"spec": a, "games": res["games"], "score": pair["win_rate"], "ci95": pair["win_rate_ci95"]}


def summary(out: Path, ladder: Path) -> list[dict]:
    rows = []
    for variant in VARIANTS:
        s = {name: score(out / variant / name / "results.json") for name in PLAYERS}
        s["32x"] = score(ladder / f"selfplay-{variant}-32x" / "results.json")
        if any(v is None for v in s.values()):
            continue
        beginner, best, fictive, shipped = s["random"]["score"], s["32x"]["score"], s["cheat"]["score"], 0.5
        learning, chance = best - beginner, fictive - best
        rows.append({"variant": variant, "scores": s, "learning_effect": learning, "random_effect": chance,
                     "relative_skill": learning / (learning + chance) if learning + chance > 0 else float("nan"),
                     "left_share": (best - shipped) / (fictive - beginner)})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| variant | random | greedy | shipped (1x) | 32x | cheat (8x, sees all) | learning effect | "
             "random effect | relative skill | left for a better agent |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["scores"]
        cell = lambda k: f"{s[k]['score']:.3f} [{s[k]['ci95'][0]:.3f}, {s[k]['ci95'][1]:.3f}] ({s[k]['games']:,})"
        lines.append(f"| {r['variant']} | {cell('random')} | {cell('greedy')} | 0.500 | {cell('32x')} | {cell('cheat')} | "
                     f"{r['learning_effect']:.3f} | {r['random_effect']:.3f} | {r['relative_skill']:.0%} | "
                     f"{r['left_share']:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--players", type=int, choices=(2, 4), default=2)
    run.add_argument("--team", action="store_true")
    run.add_argument("--games", type=int, default=400)
    run.add_argument("--seed", type=int, default=682)
    run.add_argument("--workers", type=int, default=1)
    run.add_argument("--only", nargs="+", choices=sorted(PLAYERS), default=list(PLAYERS))
    run.add_argument("--out", type=Path, default=Path("results/skill_luck"))
    show = sub.add_parser("summary")
    show.add_argument("--out", type=Path, default=Path("results/skill_luck"))
    show.add_argument("--ladder", type=Path, default=Path("results/ladder"))
    a = p.parse_args(argv)
    if a.command == "run":
        variant = variant_name(a.players, a.team)
        for name in a.only:
            run_match(PLAYERS[name], a.players, a.team, a.games, a.seed, a.workers, a.out / variant / name)
    else:
        rows = summary(a.out, a.ladder)
        print(markdown(rows))
        (a.out / "skill_luck.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
