#!/usr/bin/env python
"""How strong is `evaluate.py analyze`'s reference as a player? It plays the move it
rates best (`evaluation.analysis.rank_candidates`, default budget) against an opponent
on duplicate deals (each deal twice, seats swapped), 2 players.

    python benchmarks/analysis_reference.py --opponent selfplay:time=0.01 --deals 20

A reference that loses to an agent cannot say much about that agent's errors: its
judgement, not the agent's play, would be what the error measures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agents  # noqa: E402
from agents.base import Agent  # noqa: E402
from agents.play import play_game  # noqa: E402
from engine import random_deal  # noqa: E402
from evaluation.analysis import Reference, rank_candidates  # noqa: E402


class ReferencePlayer(Agent):
    """Plays the reference's best candidate (no move played to keep)."""

    name = "reference"

    def __init__(self, reference: Reference) -> None:
        super().__init__()
        self.reference = reference
        self.tools = None
        self.moves = 0

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        self.tools = self.reference.tools(num_players, team)

    def act(self, observation, view) -> int:
        legal = view.legal_actions()
        if len(legal) == 1:
            return legal[0]
        self.moves += 1
        key = (self.reference.seed, int(self.rng.integers(2**31)), view.turn)
        return rank_candidates(view, self.reference, self.tools, key)[0].action


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--opponent", default="selfplay:time=0.01", metavar="SPEC")
    p.add_argument("--deals", type=int, default=20, metavar="D", help="deals, each played twice (default 20)")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    args = p.parse_args(argv)
    opponent = agents.parse_agent(args.opponent)
    player = ReferencePlayer(Reference().validate())
    scores, start = [], time.perf_counter()
    for d in range(args.deals):
        deal = random_deal(args.seed * 100_003 + d)
        pair = []
        for seat in (0, 1):
            other = opponent.build(seed=d * 2 + seat)
            seats = [player, other] if seat == 0 else [other, player]
            player.seed(d * 2 + seat)
            record = play_game(seats, deal)
            pair.append((record.rewards[seat] + 1) / 2)  # 1 win, 0.5 draw, 0 loss
        scores.append(np.mean(pair))
        print(f"deal {d}: {pair}", flush=True)
    scores = np.array(scores)
    rng = np.random.default_rng(0)
    boot = [rng.choice(scores, len(scores)).mean() for _ in range(2000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    seconds = time.perf_counter() - start
    print(f"reference against {args.opponent}: {scores.mean():.3f} [{lo:.3f}, {hi:.3f}] over {2 * len(scores)} games "
          f"({len(scores)} deals, deal-bootstrap 95%); {seconds:.0f} s, {player.moves} reference moves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
