"""Ratings: Bradley-Terry maximum likelihood on the whole crosstable, on the Elo scale.

Bradley-Terry says agent i beats j with probability ``1 / (1 + 10**((r_j - r_i) / 400))``.
Unlike online Elo it does not depend on the order of the games: the ratings maximize
the likelihood of all pairwise results at once (draws count half a win each way).

A prior of `prior_draws` virtual draws between every pair that met keeps the estimate
finite when one agent won every game (with 0 it diverges); with thousands of games it
moves ratings by a few Elo at most. Ratings are relative: one anchor agent is pinned
to 0 (or, with anchor=None, the mean is 0).

For 3-4 players, `openskill_ratings` also fits a Plackett-Luce model (Weng-Lin,
openskill) on the full finishing orders; it is online, so the games are fed in
job-id order to keep it reproducible.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)


def bradley_terry(points: np.ndarray, prior_draws: float = 1.0, anchor: int | None = 0,
                  tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """Elo ratings maximizing the Bradley-Terry likelihood of a crosstable.

    points[i, j]: points of i against j (wins + draws / 2); the games between i and j
    are ``points[i, j] + points[j, i]``. Returns (K,) Elo, anchor at 0 (None: mean 0).
    Raises ValueError if the agents do not form one connected group of opponents.
    """
    w = np.array(points, dtype=np.float64)
    k = w.shape[0]
    if w.shape != (k, k):
        raise ValueError(f"points must be a square matrix, got shape {w.shape}")
    np.fill_diagonal(w, 0.0)
    met = (w + w.T) > 0
    w = w + met * (prior_draws / 2.0)
    n = w + w.T
    if k == 1:
        return np.zeros(1)
    if not _connected(n > 0):
        raise ValueError("Bradley-Terry needs every agent connected to the others by games")
    pin = 0 if anchor is None else int(anchor)
    free = np.arange(k) != pin
    theta = np.zeros(k)

    def loglik(t):
        d = t[:, None] - t[None, :]
        return float((w * -np.logaddexp(0.0, -d)).sum())

    ll = loglik(theta)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        grad = (w - n * p).sum(1)
        c = n * p * (1.0 - p)
        hess = c.copy()  # d2 LL / d theta_i d theta_j for i != j
        np.fill_diagonal(hess, -c.sum(1))
        g, h = grad[free], hess[np.ix_(free, free)]
        try:
            step = np.linalg.solve(-h, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(-h, g, rcond=None)[0]
        scale = 1.0
        while True:  # backtracking: the log-likelihood is concave, so this ends
            cand = theta.copy()
            cand[free] += scale * step
            new = loglik(cand)
            if new >= ll - 1e-12 or scale < 1e-8:
                break
            scale *= 0.5
        theta, improved, ll = cand, new - ll, new
        if np.max(np.abs(scale * step)) < tol or (0 <= improved < tol * 1e-3):
            break
    if anchor is None:
        theta = theta - theta.mean()
    return theta * ELO_PER_NAT


def _connected(adj: np.ndarray) -> bool:
    k = adj.shape[0]
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j in np.nonzero(adj[i])[0]:
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    return len(seen) == k


def openskill_ratings(games: Iterable[tuple[Sequence[int], Sequence[int]]], num_agents: int) -> list[dict] | None:
    """Plackett-Luce (openskill) ratings from games given as (seating, ranking) in order.

    Each seat is its own team of one. Returns per agent {mu, sigma, ordinal = mu - 3 sigma},
    or None when openskill is missing or a table seats the same agent twice (one rating
    cannot take two places in one update).
    """
    try:
        from openskill.models import PlackettLuce
    except ImportError:  # pragma: no cover - openskill is a dependency
        return None
    model = PlackettLuce()
    ratings = [model.rating(name=str(i)) for i in range(num_agents)]
    any_game = False
    for seating, ranking in games:
        if len(set(seating)) != len(seating):
            return None
        new = model.rate([[ratings[a]] for a in seating], ranks=[float(r) for r in ranking])
        for a, team in zip(seating, new):
            ratings[a] = team[0]
        any_game = True
    if not any_game:
        return None
    return [{"mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()} for r in ratings]
