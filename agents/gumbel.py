"""The arithmetic of a Gumbel root (Danihelka, Guez, Schrittwieser & Silver, "Policy
improvement by planning with Gumbel", ICLR 2022), in numpy: a few dozen numbers a move.

* `gumbel_top_k`: k root actions sampled *without replacement* from softmax(logits), by
  adding independent Gumbel(0, 1) noise g to the logits and keeping the k largest
  (the Gumbel-top-k trick). The search then spends its budget on them by sequential
  halving (`agents.search.MCTSAgent`), ranking them between phases by
  g + logits + sigma(completed Q) and playing the best one left.
* `completed_q`: the root Q of every legal action, an unvisited one's completed with the
  mixed value v_mix (the paper's eq. 33, mctx's ``qtransform_completed_by_mix_value``).
* `sigma`: the monotone transform ``(c_visit + max_b N(b)) * c_scale * q``, q rescaled
  to [0, 1] over the legal actions; defaults c_visit = 50, c_scale = 0.1 (mctx's).
* `improved_policy`: softmax(logits + sigma(completed Q)), the policy target that improves
  on the network's policy whenever the Q values are right.

Here the search's values are rollout rewards for the mover, and the root's own value
(v_mix's "raw value", the network's value in the paper) is the root's mean reward over
the search: the search core never calls the network's value head.
"""

from __future__ import annotations

import numpy as np

C_VISIT = 50.0
C_SCALE = 0.1


def gumbel_top_k(logits: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(indices of `logits` sampled without replacement from softmax(logits), at most k,
    best g + logit first; the Gumbel noise g drawn for every entry)."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or not np.isfinite(logits).all():
        raise ValueError("logits must be a 1-d array of finite numbers")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    g = rng.gumbel(size=logits.shape)
    order = np.argsort(-(g + logits), kind="stable")
    return order[:k], g


def completed_q(q: np.ndarray, visits: np.ndarray, prior: np.ndarray, root_value: float) -> np.ndarray:
    """Every action's Q, an unvisited action's replaced by the mixed value
    v_mix = (root_value + N * sum_visited(prior * q) / sum_visited(prior)) / (1 + N),
    N the visits of all actions together (v_mix = root_value when nothing was visited)."""
    visited = visits > 0
    total = float(visits.sum())
    if total == 0:
        v_mix = float(root_value)
    else:
        p = np.maximum(prior, np.finfo(np.float64).tiny)[visited]
        v_mix = (root_value + total * float((p * q[visited]).sum() / p.sum())) / (1.0 + total)
    return np.where(visited, q, v_mix)


def sigma(completed: np.ndarray, visits: np.ndarray, c_visit: float = C_VISIT, c_scale: float = C_SCALE) -> np.ndarray:
    """(c_visit + max visits) * c_scale * completed Q rescaled to [0, 1] (min to max)."""
    lo, hi = float(completed.min()), float(completed.max())
    scaled = (completed - lo) / max(hi - lo, 1e-8)
    return (c_visit + float(visits.max())) * c_scale * scaled


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


def scores(logits: np.ndarray, q: np.ndarray, visits: np.ndarray, root_value: float, c_visit: float = C_VISIT,
           c_scale: float = C_SCALE) -> np.ndarray:
    """logits + sigma(completed Q) of each action (arrays over the same actions)."""
    logits = np.asarray(logits, dtype=np.float64)
    done = completed_q(np.asarray(q, dtype=np.float64), visits, softmax(logits), root_value)
    return logits + sigma(done, visits, c_visit, c_scale)


def improved_policy(logits: np.ndarray, q: np.ndarray, visits: np.ndarray, root_value: float,
                    c_visit: float = C_VISIT, c_scale: float = C_SCALE) -> np.ndarray:
    """softmax(logits + sigma(completed Q)) over the given actions."""
    return softmax(scores(logits, q, visits, root_value, c_visit, c_scale))
