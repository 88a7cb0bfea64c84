"""Duplicate deals between two in-process agents, for research scripts whose players are built
in the script itself (not by spec, so `evaluate.py` cannot seat them).

RESULTS.md: "2026-12-04, 17:35-19:35 UTC" (hand_inference.py's matches)
RESULTS.md: "2026-12-04, 20:10-21:45 UTC" (afterstate_policy.py's matches)
Verdict: a helper of the two scripts above (their duplicate-deal matches), no finding of its own.

Deal `seed` is `random_deal(10**6 + seed)`, played once in each seating with fixed agent
seeds; a deal's score is the first agent's mean reward mapped to [0, 1] (a draw is half).
"""

from __future__ import annotations

import numpy as np

from agents.play import play_game
from engine import random_deal


def deal_scores(me, other, seeds) -> list[float]:
    """`me`'s score on each 2-player duplicate deal of `seeds` against `other`. A forfeit
    (an agent's error or time-out) raises instead of counting as a loss."""
    scores = []
    for seed in seeds:
        deal = random_deal(10**6 + seed)
        first = play_game([me, other], deal, 2, seeds=[3 * seed, 3 * seed + 1])
        second = play_game([other, me], deal, 2, seeds=[3 * seed + 2, 3 * seed])
        for record in (first, second):
            if record.forfeit is not None:
                raise RuntimeError(f"deal {seed}: seat {record.forfeit} forfeited: {record.error}")
        scores.append(((first.rewards[0] + 1) / 2 + (second.rewards[1] + 1) / 2) / 2)
    return scores


def mean_and_half_width(scores) -> tuple[float, float]:
    """(mean, half-width of its normal 95% interval) of per-deal scores."""
    scores = np.asarray(scores, dtype=np.float64)
    return float(scores.mean()), float(1.96 * scores.std() / np.sqrt(len(scores)))
