"""The parts of the one search core (`agents.search_kernels`), chosen by named constants,
and the arrays a search works on.

A search is configured by one record, a float64 array indexed by the ``P_*`` constants
(`parameters` builds and checks it; `agents.settings.SearchSettings.kernel_parameters`
fills it from an agent's settings), so the numba kernels take one argument for all
settings instead of a dozen:

============== =================================================================
P_C            UCB's exploration constant
P_LEAF         LEAF_ROLLOUT: roll out to the game's end, score the result;
               LEAF_HEURISTIC: roll out at most P_DEPTH placements, score the position
               as if the game ended there;
               LEAF_EVALUATOR: the same cut rollout, scored by a learned numba MLP
               (`agents.value_kernels`, the workspace's ``evaluator``)
P_DEPTH        placements of a cut rollout (LEAF_HEURISTIC, LEAF_EVALUATOR)
P_EPSILON      the rollout policy's random-move probability, out of 2**32
P_MARGIN       weight of tanh(score lead / 100) added to a result's rewards
P_EXPAND       order of new children below the root: EXPAND_GREEDY (the rollout
               policy's preference) or EXPAND_RANDOM; the root's order is the tree's
               ``root order`` when one is set (the greedy ranking or a network's policy)
P_EXPAND_AFTER a node grows children once visited this often (the root always)
P_WIDEN        progressive widening: at most 1 + widen * sqrt(visits) children
P_PRIOR_WEIGHT weight of the root prior (a network's policy) as a progressive bias
============== =================================================================

Greedy rollouts always break ties among non-scoring moves toward safe ones
(`policy_kernels.safe_values`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import layout, rules

from .value_kernels import NO_EVALUATOR, NUM_FEATURES

LEAF_ROLLOUT, LEAF_HEURISTIC, LEAF_EVALUATOR = 0, 1, 2
LEAVES = {"rollout": LEAF_ROLLOUT, "heuristic": LEAF_HEURISTIC, "evaluator": LEAF_EVALUATOR}
EXPAND_RANDOM, EXPAND_GREEDY = 0, 1

(P_C, P_LEAF, P_DEPTH, P_EPSILON, P_MARGIN, P_EXPAND, P_EXPAND_AFTER, P_WIDEN, P_PRIOR_WEIGHT) = range(9)
NUM_PARAMETERS = 9
_NAMES = ("c", "leaf", "depth", "epsilon", "margin", "expand", "expand_after", "widen", "prior_weight")

# the tree's meta array
COUNT = 0  # nodes in use
ORDER_LEN = 1  # length of the root's expansion order (0: none)
META_LEN = 2

# int64 workspace scratch: unseen counts and tiles, the child bitmask
SCRATCH_COUNTS = 0
SCRATCH_TILES = 16
SCRATCH_CHILD_MASK = 64  # 8 words: bit a = action a has a child
SCRATCH_LEN = SCRATCH_CHILD_MASK + 8

NODE_FIELDS = 6


def parameters(c: float, leaf: int = LEAF_HEURISTIC, depth: int = 4, epsilon: int = 0, margin: float = 0.5,
               expand: int = EXPAND_GREEDY, expand_after: int = 40, widen: float = 0.5,
               prior_weight: float = 0.0) -> np.ndarray:
    """The parameter record of a search (see the module doc)."""
    if leaf not in LEAVES.values():
        raise ValueError(f"leaf must be one of {sorted(LEAVES.values())}, got {leaf!r}")
    if expand not in (EXPAND_RANDOM, EXPAND_GREEDY):
        raise ValueError(f"expand must be EXPAND_RANDOM or EXPAND_GREEDY, got {expand!r}")
    values = (c, leaf, depth, epsilon, margin, expand, expand_after, widen, prior_weight)
    record = np.array(values, dtype=np.float64)
    if not np.isfinite(record).all():
        bad = [name for name, v in zip(_NAMES, record) if not np.isfinite(v)]
        raise ValueError(f"search parameters must be finite: {', '.join(bad)}")
    return record


class Tree(NamedTuple):
    """A preallocated search tree (node 0 is the root; children form a linked list).

    nodes  int64   (N, NODE_FIELDS)  ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL
    values float64 (N, 4)            the summed backed-up reward of every seat
    meta   int64   (META_LEN,)       COUNT, ORDER_LEN
    order  int64   (NUM_PLACEMENT_ACTIONS,) the root's expansion order (meta[ORDER_LEN] long)
    prior  float64 (NUM_ACTIONS,)    the root prior (a network's policy; 0 without one)
    """

    nodes: np.ndarray
    values: np.ndarray
    meta: np.ndarray
    order: np.ndarray
    prior: np.ndarray


class Workspace(NamedTuple):
    """Scratch a search writes: the simulated world, int64 scratch, the leaf's rewards,
    ln(n) table, the learned evaluator (an empty `net` when there is none) and its
    scratch."""

    grid: np.ndarray
    info: np.ndarray
    scratch: np.ndarray
    reward: np.ndarray
    logs: np.ndarray
    net: np.ndarray
    features: np.ndarray
    hidden: np.ndarray
    best: np.ndarray


def log_table(size: int = 1 << 16) -> np.ndarray:
    """ln(n) for n < size (index 0 unused): UCB reads it instead of calling log."""
    table = np.zeros(size, dtype=np.float64)
    table[1:] = np.log(np.arange(1, size, dtype=np.float64))
    return table


_LOGS = log_table()


def new_tree(capacity: int) -> Tree:
    """Arrays for a tree of at most `capacity` nodes (`search_kernels.reset_tree` before
    each search)."""
    return Tree(np.zeros((capacity, NODE_FIELDS), dtype=np.int64), np.zeros((capacity, 4), dtype=np.float64),
                np.zeros(META_LEN, dtype=np.int64), np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64),
                np.zeros(rules.NUM_ACTIONS, dtype=np.float64))


def grown(tree: Tree, capacity: int) -> Tree:
    """A copy of `tree` with room for `capacity` nodes."""
    new = new_tree(capacity)
    count = int(tree.meta[COUNT])
    new.nodes[:count] = tree.nodes[:count]
    new.values[:count] = tree.values[:count]
    new.meta[:] = tree.meta
    new.order[:] = tree.order
    new.prior[:] = tree.prior
    return new


def new_workspace(evaluator: np.ndarray | None = None) -> Workspace:
    """Scratch for one search; `evaluator`: a packed `agents.value_kernels` MLP."""
    net = NO_EVALUATOR if evaluator is None else np.ascontiguousarray(evaluator, dtype=np.float64)
    width = int(max(net[1], net[2], net[3])) if len(net) else 1
    return Workspace(np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16),
                     np.zeros(layout.INFO_LEN, dtype=np.int64), np.zeros(SCRATCH_LEN, dtype=np.int64),
                     np.zeros(4, dtype=np.float64), _LOGS, net, np.zeros(NUM_FEATURES, dtype=np.float64),
                     np.zeros((3, width), dtype=np.float64), np.zeros(4, dtype=np.int64))
