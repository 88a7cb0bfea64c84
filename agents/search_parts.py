"""The parts of the one search core (`agents.search_kernels`), chosen by named constants,
and the arrays a search works on.

A search is configured by one record, a float64 array indexed by the ``P_*`` constants
(`parameters` builds and checks it), so the numba kernels take one argument for all
settings instead of a dozen:

============== =================================================================
P_C            exploration constant (UCB's c, or PUCT's c_puct)
P_SELECTION    SELECT_UCB: UCB1 with availability counts (single-observer ISMCTS);
               SELECT_PUCT: AlphaZero's PUCT with a prior per action
P_LEAF         LEAF_ROLLOUT: roll out to the game's end, score the result;
               LEAF_HEURISTIC: roll out at most P_DEPTH placements, score the position
               as if the game ended there;
               LEAF_EVALUATOR: the same cut rollout, scored by a learned numba MLP
               (`agents.value_kernels`, the workspace's ``evaluator``);
               LEAF_VALUE: stop at the new leaf; the caller evaluates the leaves of B
               lockstep searches in one batch and backs the values up (`backup_values`)
P_DEPTH        placements of a cut rollout (LEAF_HEURISTIC, LEAF_EVALUATOR)
P_EPSILON      the rollout policy's random-move probability, out of 2**32
P_SAFE         1: greedy rollouts prefer safe moves among non-scoring ones
P_MARGIN       weight of tanh(score lead / 100) added to a result's rewards
P_EXPAND       order of new children below the root: EXPAND_GREEDY (the rollout
               policy's preference), EXPAND_RANDOM, or EXPAND_EVALUATOR (the mover's
               best afterstate by the workspace's ``evaluator`` in the simulated world;
               greedy without one); the root's order is the tree's ``root order`` when
               one is set (the greedy ranking or a network's policy)
P_EXPAND_AFTER a node grows children once visited this often (the root always)
P_WIDEN        progressive widening (UCB): at most 1 + widen * sqrt(visits) children
P_PRIOR_WEIGHT UCB only: weight of the root prior as a progressive bias
P_ROOT_HALVING UCB only: k > 0 = a phase of sequential halving at the root: only the
               first k actions of the root order are candidates, and the root
               simulates its least-visited candidate (the caller sets k per phase and
               reorders the candidates between phases, `agents.search.MCTSAgent`);
               0 = UCB at the root too
============== =================================================================

The root prior (row 0 of the tree's ``priors``) is what a network's policy says about
the root's actions: the progressive bias of UCB, the prior of PUCT. With LEAF_VALUE
every evaluated node n also gets its prior in row n; PUCT without a network's priors
below the root uses a uniform prior there.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import layout, rules

from .value_kernels import NO_EVALUATOR, NUM_FEATURES

SELECT_UCB, SELECT_PUCT = 0, 1
SELECTIONS = {"ucb": SELECT_UCB, "puct": SELECT_PUCT}
LEAF_ROLLOUT, LEAF_HEURISTIC, LEAF_EVALUATOR, LEAF_VALUE = 0, 1, 2, 3
LEAVES = {"rollout": LEAF_ROLLOUT, "heuristic": LEAF_HEURISTIC, "evaluator": LEAF_EVALUATOR, "value": LEAF_VALUE}
EXPAND_RANDOM, EXPAND_GREEDY, EXPAND_EVALUATOR = 0, 1, 2

(P_C, P_SELECTION, P_LEAF, P_DEPTH, P_EPSILON, P_SAFE, P_MARGIN, P_EXPAND, P_EXPAND_AFTER, P_WIDEN,
 P_PRIOR_WEIGHT, P_ROOT_HALVING) = range(12)
NUM_PARAMETERS = 12
_NAMES = ("c", "selection", "leaf", "depth", "epsilon", "safe", "margin", "expand", "expand_after", "widen",
          "prior_weight", "root_halving")

# the tree's meta array
COUNT = 0  # nodes in use
ORDER_LEN = 1  # length of the root's expansion order (0: none)
LEAF = 2  # LEAF_VALUE: the node the last descent stopped at
LEAF_IS_NEW = 3  # LEAF_VALUE: 1 if that node was created by the descent (its prior is unknown)
VALUE_ROWS = 4  # EXPAND_EVALUATOR: rows of the workspace's ``move_values`` table in use
META_LEN = 5
MOVE_VALUE_ROWS = 1024  # EXPAND_EVALUATOR: nodes whose moves' afterstate values are kept

# int64 workspace scratch: unseen counts and tiles, the child bitmask, a legal-action list
SCRATCH_COUNTS = 0
SCRATCH_TILES = 16
SCRATCH_CHILD_MASK = 64  # 8 words: bit a = action a has a child
SCRATCH_CANDIDATES = 72  # 8 words: bit a = action a is a candidate of sequential halving
SCRATCH_LEGAL = 80
SCRATCH_LEN = SCRATCH_LEGAL + rules.NUM_PLACEMENT_ACTIONS

NODE_FIELDS = 7


def parameters(c: float, selection: int = SELECT_UCB, leaf: int = LEAF_HEURISTIC, depth: int = 4,
               epsilon: int = 0, safe: bool = True, margin: float = 0.5, expand: int = EXPAND_GREEDY,
               expand_after: int = 40, widen: float = 0.5, prior_weight: float = 0.0) -> np.ndarray:
    """The parameter record of a search (see the module doc)."""
    if selection not in SELECTIONS.values():
        raise ValueError(f"selection must be one of {sorted(SELECTIONS.values())}, got {selection!r}")
    if leaf not in LEAVES.values():
        raise ValueError(f"leaf must be one of {sorted(LEAVES.values())}, got {leaf!r}")
    if expand not in (EXPAND_RANDOM, EXPAND_GREEDY, EXPAND_EVALUATOR):
        raise ValueError(f"expand must be EXPAND_RANDOM, EXPAND_GREEDY or EXPAND_EVALUATOR, got {expand!r}")
    values = (c, selection, leaf, depth, epsilon, float(bool(safe)), margin, expand, expand_after, widen,
              prior_weight, 0)  # P_ROOT_HALVING: set per phase by the caller
    record = np.array(values, dtype=np.float64)
    if not np.isfinite(record).all():
        bad = [name for name, v in zip(_NAMES, record) if not np.isfinite(v)]
        raise ValueError(f"search parameters must be finite: {', '.join(bad)}")
    return record


class Tree(NamedTuple):
    """A preallocated search tree (node 0 is the root; children form a linked list).

    nodes  int64   (N, NODE_FIELDS)  ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL,
                                     VALUE_ROW (EXPAND_EVALUATOR: the node's row of the
                                     workspace's move_values, -1 none)
    values float64 (N, 4)            the summed backed-up reward of every seat
    meta   int64   (META_LEN,)       COUNT, ORDER_LEN, LEAF, LEAF_IS_NEW, VALUE_ROWS
    order  int64   (NUM_PLACEMENT_ACTIONS,) the root's expansion order (meta[ORDER_LEN] long)
    priors float64 (R, NUM_ACTIONS)  row 0: the root prior; rows 1..: the priors of
                                     evaluated nodes (R = N with LEAF_VALUE, else 1)
    """

    nodes: np.ndarray
    values: np.ndarray
    meta: np.ndarray
    order: np.ndarray
    priors: np.ndarray


class Workspace(NamedTuple):
    """Scratch a search writes: the simulated world, int64 scratch, the leaf's rewards,
    ln(n) table, the learned evaluator (an empty `net` when there is none) and its
    scratch; for EXPAND_EVALUATOR a second world (``after``) where a move is played to score
    it, and ``move_values``, the afterstate values of a node's moves (a row per node that
    grows children, NaN = not scored yet; no rows unless the search orders by the evaluator)."""

    grid: np.ndarray
    info: np.ndarray
    scratch: np.ndarray
    reward: np.ndarray
    logs: np.ndarray
    net: np.ndarray
    features: np.ndarray
    hidden: np.ndarray
    best: np.ndarray
    after_grid: np.ndarray
    after_info: np.ndarray
    move_values: np.ndarray


def log_table(size: int = 1 << 16) -> np.ndarray:
    """ln(n) for n < size (index 0 unused): UCB reads it instead of calling log."""
    table = np.zeros(size, dtype=np.float64)
    table[1:] = np.log(np.arange(1, size, dtype=np.float64))
    return table


_LOGS = log_table()


def new_tree(capacity: int, node_priors: bool = False) -> Tree:
    """Arrays for a tree of at most `capacity` nodes (`search_kernels.reset_tree` before
    each search); `node_priors`: a prior row per node (LEAF_VALUE), else the root's only."""
    return Tree(np.zeros((capacity, NODE_FIELDS), dtype=np.int64), np.zeros((capacity, 4), dtype=np.float64),
                np.zeros(META_LEN, dtype=np.int64), np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64),
                np.zeros((capacity if node_priors else 1, rules.NUM_ACTIONS), dtype=np.float64))


def grown(tree: Tree, capacity: int) -> Tree:
    """A copy of `tree` with room for `capacity` nodes."""
    new = new_tree(capacity, node_priors=tree.priors.shape[0] > 1)
    count = int(tree.meta[COUNT])
    new.nodes[:count] = tree.nodes[:count]
    new.values[:count] = tree.values[:count]
    new.meta[:] = tree.meta
    new.order[:] = tree.order
    rows = min(count, tree.priors.shape[0])
    new.priors[:rows] = tree.priors[:rows]
    return new


def new_trees(batch: int, capacity: int) -> Tree:
    """B trees of `capacity` nodes with a prior row per node, stacked (leading axis b):
    the lockstep searches of LEAF_VALUE."""
    return Tree(np.zeros((batch, capacity, NODE_FIELDS), dtype=np.int64),
                np.zeros((batch, capacity, 4), dtype=np.float64), np.zeros((batch, META_LEN), dtype=np.int64),
                np.zeros((batch, rules.NUM_PLACEMENT_ACTIONS), dtype=np.int64),
                np.zeros((batch, capacity, rules.NUM_ACTIONS), dtype=np.float64))


def new_workspace(evaluator: np.ndarray | None = None, batch: int | None = None,
                  move_value_rows: int = 0) -> Workspace:
    """Scratch for one search (or, with `batch`, the world, scratch and reward of B
    lockstep searches stacked on a leading axis); `evaluator`: a packed
    `agents.value_kernels` MLP; `move_value_rows`: rows of the ``move_values`` table
    (EXPAND_EVALUATOR; `MOVE_VALUE_ROWS` for a search that orders by the evaluator)."""
    net = NO_EVALUATOR if evaluator is None else np.ascontiguousarray(evaluator, dtype=np.float64)
    width = int(max(net[1], net[2], net[3])) if len(net) else 1
    lead = () if batch is None else (batch,)
    return Workspace(np.zeros(lead + (layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16),
                     np.zeros(lead + (layout.INFO_LEN,), dtype=np.int64),
                     np.zeros(lead + (SCRATCH_LEN,), dtype=np.int64), np.zeros(lead + (4,), dtype=np.float64),
                     _LOGS, net, np.zeros(NUM_FEATURES, dtype=np.float64),
                     np.zeros((3, width), dtype=np.float64), np.zeros(4, dtype=np.int64),
                     np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16),
                     np.zeros(layout.INFO_LEN, dtype=np.int64),
                     np.zeros((move_value_rows, rules.NUM_PLACEMENT_ACTIONS)))
