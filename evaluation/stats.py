"""Statistics of a tournament: pairwise outcomes, intervals and the sequential test.

Everything here is a pure function of plain data (no agents, no games), so it is
tested with hand-made inputs (tests/test_stats.py).

The unit of resampling is the *deal*: every seating of one deal is a duplicate set,
and its games are correlated (same tiles, same bag), so intervals come from a
bootstrap that resamples whole deals (``deal_bootstrap_weights``). The Wilson
interval, which assumes independent games, is reported beside it for reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from engine import rules

Z95 = 1.959963984540054  # two-sided 95% normal quantile


# --- pairwise outcomes ------------------------------------------------------------------
@dataclass
class Pairwise:
    """Every head-to-head comparison inside the games, one row each, oriented a < b.

    A 2-player game gives one row. A 3-4 player game gives one row per pair of seats
    held by different agents ("a beat b" = a finished ahead of b). A team game gives
    one row: team against team, on team minutes and team places.
    """

    deal: np.ndarray  # (n,) deal index of the game (the bootstrap unit)
    a: np.ndarray  # (n,) agent index, a < b
    b: np.ndarray  # (n,) agent index
    score: np.ndarray  # (n,) 1 if a finished ahead, 0.5 on equal places, 0 if behind
    minutes_a: np.ndarray  # (n,) minutes of a's seat (team: the team's minutes)
    minutes_b: np.ndarray  # (n,)

    @property
    def margin(self) -> np.ndarray:
        return self.minutes_a - self.minutes_b

    def __len__(self) -> int:
        return len(self.deal)


def effective_ranking(ranking: Sequence[int], forfeit: int | None, team: bool) -> list[int]:
    """Places with a forfeit made explicit: the forfeiting seat (its team) is last, strictly
    behind every other seat, and the others keep their order among themselves.
    (A raw ranking taken mid-game may put a player that was behind on minutes level
    with the forfeiter.)"""
    ranking = [int(p) for p in ranking]
    if forfeit is None or not ranking:
        return ranking
    n = len(ranking)
    losers = {forfeit, rules.partner(forfeit)} if team else {forfeit}
    others = [s for s in range(n) if s not in losers]
    if team:
        return [1 if s in losers else 0 for s in range(n)]
    return [n - 1 if s in losers else sum(ranking[o] < ranking[s] for o in others) for s in range(n)]


def game_sides(seating: Sequence[int], scores: Sequence[int], ranking: Sequence[int],
               team: bool) -> list[tuple[int, float, int]]:
    """(agent, minutes, place) of each side of one game: a seat, or a team of two seats."""
    if team:
        return [(seating[0], float(scores[0] + scores[2]), int(ranking[0])),
                (seating[1], float(scores[1] + scores[3]), int(ranking[1]))]
    return [(seating[s], float(scores[s]), int(ranking[s])) for s in range(len(seating))]


def pairwise(games: Iterable[tuple[int, Sequence[int], Sequence[int], Sequence[int], bool]]) -> Pairwise:
    """Pairwise rows from games given as (deal, seating, scores, ranking, team), where
    seating holds the agent index of each seat. Seats of the same agent are not compared."""
    rows = []
    for deal, seating, scores, ranking, team in games:
        sides = game_sides(seating, scores, ranking, team)
        for i in range(len(sides)):
            for j in range(i + 1, len(sides)):
                (ai, mi, pi), (aj, mj, pj) = sides[i], sides[j]
                if ai == aj:
                    continue
                s = 1.0 if pi < pj else 0.0 if pi > pj else 0.5
                if ai > aj:
                    ai, aj, mi, mj, s = aj, ai, mj, mi, 1.0 - s
                rows.append((deal, ai, aj, s, mi, mj))
    arr = np.array(rows, dtype=np.float64).reshape(-1, 6)
    return Pairwise(arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2].astype(np.int64),
                    arr[:, 3], arr[:, 4], arr[:, 5])


@dataclass
class PerDeal:
    """Per-deal sums, shape (num_deals, K, K) from row agent i's side against j."""

    games: np.ndarray  # comparisons of i against j
    points: np.ndarray  # wins + draws / 2 of i against j
    wins: np.ndarray
    draws: np.ndarray
    margin: np.ndarray  # sum of (minutes_i - minutes_j)
    minutes: np.ndarray  # sum of i's minutes in those comparisons

    def total(self, weights: np.ndarray | None = None) -> "PerDeal":
        """Sums over deals, each deal counted `weights[d]` times (default once): (K, K)."""
        if weights is None:
            return PerDeal(*(getattr(self, f).sum(0) for f in _PERDEAL_FIELDS))
        return PerDeal(*(np.tensordot(weights, getattr(self, f), axes=(-1, 0)) for f in _PERDEAL_FIELDS))


_PERDEAL_FIELDS = ("games", "points", "wins", "draws", "margin", "minutes")


def per_deal(pw: Pairwise, num_agents: int, num_deals: int) -> PerDeal:
    """Aggregate pairwise rows into per-deal (i vs j) sums, both orientations filled."""
    k = num_agents
    shape = (num_deals, k, k)
    out = PerDeal(*(np.zeros(shape) for _ in _PERDEAL_FIELDS))
    d, a, b, s = pw.deal, pw.a, pw.b, pw.score
    for (x, y, sc, ma, mb) in ((a, b, s, pw.minutes_a, pw.minutes_b), (b, a, 1.0 - s, pw.minutes_b, pw.minutes_a)):
        np.add.at(out.games, (d, x, y), 1.0)
        np.add.at(out.points, (d, x, y), sc)
        np.add.at(out.wins, (d, x, y), (sc == 1.0).astype(float))
        np.add.at(out.draws, (d, x, y), (sc == 0.5).astype(float))
        np.add.at(out.margin, (d, x, y), ma - mb)
        np.add.at(out.minutes, (d, x, y), ma)
    return out


# --- intervals ----------------------------------------------------------------------------
def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion (successes may be fractional: draws = 1/2).

    Assumes independent trials; games of one duplicate deal are not, so prefer the
    deal bootstrap for tournaments. Returns (0, 1) when n == 0.
    """
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def deal_bootstrap_weights(num_deals: int, resamples: int, seed: int = 0) -> np.ndarray:
    """(resamples, num_deals) counts: each row resamples the deals with replacement."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(0xB0075,)))
    if num_deals == 0:
        return np.zeros((resamples, 0))
    return rng.multinomial(num_deals, np.full(num_deals, 1.0 / num_deals), size=resamples).astype(np.float64)


def percentile_interval(samples: np.ndarray, level: float = 0.95, axis: int = 0) -> np.ndarray:
    """Percentile interval along `axis` (NaN samples ignored): array [..., 2] of (lo, hi)."""
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanpercentile(samples, [lo, hi], axis=axis)
    return np.moveaxis(q, 0, -1)


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def likelihood_of_superiority(wins: float, losses: float) -> float:
    """LOS: P(true strength of A > B) under the usual normal approximation; draws ignored."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


# --- sequential probability ratio test ---------------------------------------------------
def elo_to_score(elo: float) -> float:
    """Expected score of a player `elo` points stronger (logistic Elo)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def score_to_elo(score: float) -> float:
    score = min(max(score, 1e-12), 1 - 1e-12)
    return -400.0 * math.log10(1.0 / score - 1.0)


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's (lower, upper) bounds on the log-likelihood ratio."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def gsprt_llr(unit_scores: Sequence[float], elo0: float, elo1: float, prior_variance: float = 0.25) -> float:
    """Generalized SPRT log-likelihood ratio of H1 (elo = elo1) against H0 (elo = elo0).

    `unit_scores` are i.i.d. scores in [0, 1] of the first agent, one per duplicate set
    (for a 2-player duplicate pair: the mean of its two games, the "pentanomial" unit of
    fishtest). With mean m and variance v of the units, the normal approximation gives
    ``LLR = n (s1 - s0) (2 m - s0 - s1) / (2 v)``, where s0, s1 are the expected scores
    of elo0, elo1. The variance is regularized by one pseudo-unit of variance
    `prior_variance` (1/4, the largest a score in [0, 1] can have), which keeps the
    first few units from deciding on a spuriously tiny variance.
    """
    x = np.asarray(unit_scores, dtype=np.float64)
    n = len(x)
    if n == 0:
        return 0.0
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    mean = float(x.mean())
    var = (float(((x - mean) ** 2).sum()) + prior_variance) / (n + 1)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


@dataclass
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: str | None  # "H1" (elo >= elo1), "H0" (elo <= elo0) or None (undecided)
    units: int  # units (duplicate sets) seen when it decided, or in all

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Sprt:
    """Sequential test fed one duplicate-set score at a time; stops at the first crossing."""

    def __init__(self, elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05):
        if not elo1 > elo0:
            raise ValueError(f"SPRT needs elo0 < elo1, got {elo0}, {elo1}")
        self.elo0, self.elo1 = float(elo0), float(elo1)
        self.lower, self.upper = sprt_bounds(alpha, beta)
        self.scores: list[float] = []
        self.result = SprtResult(0.0, self.lower, self.upper, None, 0)

    def feed(self, unit_score: float) -> str | None:
        """Add one unit; return the decision once made (later units are ignored)."""
        if self.result.decision is None:
            self.scores.append(float(unit_score))
            llr = gsprt_llr(self.scores, self.elo0, self.elo1)
            decision = "H1" if llr >= self.upper else "H0" if llr <= self.lower else None
            self.result = SprtResult(llr, self.lower, self.upper, decision, len(self.scores))
        return self.result.decision


def sprt(unit_scores: Iterable[float], elo0: float, elo1: float, alpha: float = 0.05,
         beta: float = 0.05) -> SprtResult:
    """Run the sequential test over a whole sequence (stopping at the first decision)."""
    test = Sprt(elo0, elo1, alpha, beta)
    for x in unit_scores:
        if test.feed(x) is not None:
            break
    return test.result
