"""Issue 61 item 4: how well a network's raw policy at a temperature models a search agent.
RESULTS.md: "2026-12-06, 15:00-16:40 UTC" (a search target's model for the best response)
Verdict: top-1 0.51 (`selfplay:time=0.01`) and 0.44 (`ismcts:time=0.01`); temperature 1 is the most likely.

The best response (`br`) models its target inside its tree and weights its guesses of the
target's hands by the target's reach. A search target (`selfplay:time=0.01`) has no
closed-form policy; its own network's raw policy softened to a temperature T is the
cheap model. This script reads stored games (`evaluate.py --save-games`) and, for every
move of the chosen agent, the raw policy's logits over the legal placements at that
position (what the seat saw): the top-1 agreement, and the mean log-likelihood of the
moves played for each T. The T of the highest likelihood is the model's temperature.

    python research/search_target_model.py results/luck_2p_a --agent selfplay:time=0.01
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.search.guide import NetworkGuide  # noqa: E402
from agents.search.selfplay import shipped_network  # noqa: E402
from engine import GameState, rules  # noqa: E402
from engine.view import PlayerView  # noqa: E402


def move_logits(games: list[dict], agent: str, guide: NetworkGuide):
    """(legal-move logits, index of the move played) for each of `agent`'s free choices."""
    rows = []
    for g in games:
        state = GameState.from_deal(g["deal"], g["num_players"], g["team"])
        for action in g["actions"]:
            seat = state.current_player
            if g["seats"][seat] == agent and action < rules.PASS_ACTION:
                legal, logits = guide.root_logits(PlayerView(state, seat))
                if len(legal) > 1:
                    rows.append((logits.copy(), int(np.flatnonzero(legal == action)[0])))
            state.step(action)
    return rows


def log_likelihood(rows, temperature: float) -> float:
    total = 0.0
    for logits, i in rows:
        z = logits / temperature
        z = z - z.max()
        total += z[i] - np.log(np.exp(z).sum())
    return total / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--agent", default="selfplay:time=0.01")
    ap.add_argument("--temperatures", nargs="+", type=float, default=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0])
    args = ap.parse_args()
    games = [json.loads(x) for run in args.runs for x in (run / "games.jsonl").read_text().splitlines() if x]
    g0 = games[0]
    guide = NetworkGuide(str(shipped_network(g0["num_players"], g0["team"])))
    rows = move_logits(games, args.agent, guide)
    top1 = np.mean([int(np.argmax(logits) == i) for logits, i in rows])
    print(f"{args.agent}: {len(rows)} moves with a choice in {len(games)} games; raw policy top-1 agreement {top1:.3f}")
    for t in args.temperatures:
        print(f"  T {t:g}: mean log-likelihood {log_likelihood(rows, t):.4f}")


if __name__ == "__main__":
    main()
