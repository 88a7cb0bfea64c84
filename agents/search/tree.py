"""The arrays the one search core (`agents.search.core`) works on: the tree, the
workspace and the fast evaluator's data. The parameter record is the settings'
(`agents.settings.SearchSettings.kernel_parameters`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import layout, rules

from agents.networks.evaluator import NUM_FEATURES

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
    """Scratch a search writes: the simulated world, int64 scratch, the leaf's rewards and
    the ln(n) table."""

    grid: np.ndarray
    info: np.ndarray
    scratch: np.ndarray
    reward: np.ndarray
    logs: np.ndarray


class Evaluator(NamedTuple):
    """The data of `core.evaluator_leaf`: a packed `agents.networks.evaluator` MLP and
    the scratch of `agents.networks.evaluator.evaluate_position`."""

    net: np.ndarray
    features: np.ndarray
    hidden: np.ndarray
    best: np.ndarray


_LOGS = np.log(np.maximum(np.arange(1 << 16, dtype=np.float64), 1.0))  # ln(n) (0 at n = 0): UCB reads it


def new_tree(capacity: int) -> Tree:
    """Arrays for a tree of at most `capacity` nodes (`core.reset_tree` before
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


def new_workspace() -> Workspace:
    """Scratch for one search."""
    return Workspace(np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16),
                     np.zeros(layout.INFO_LEN, dtype=np.int64), np.zeros(SCRATCH_LEN, dtype=np.int64),
                     np.zeros(4, dtype=np.float64), _LOGS)


def new_evaluator(packed: np.ndarray) -> Evaluator:
    """The data of the evaluator leaf for a packed `agents.networks.evaluator` MLP."""
    net = np.ascontiguousarray(packed, dtype=np.float64)
    width = int(max(net[1], net[2], net[3]))
    return Evaluator(net, np.zeros(NUM_FEATURES, dtype=np.float64), np.zeros((3, width), dtype=np.float64),
                     np.zeros(4, dtype=np.int64))
