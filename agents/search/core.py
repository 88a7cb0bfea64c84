"""The one search core: Monte Carlo tree search in numba over a preallocated array tree
(mctx-style, laid out in `agents.search.tree`), its parts passed in as numba functions.
`run` is the algorithm (docs/architecture.md has the overview); every simulation:

1. *World and descent.* ``world`` deals the simulation's world into ``work.grid/info``.
   `descend` walks from the root while the game is not over and the node is not a young
   leaf (visited fewer than ``expand_after`` times; never the root): a seat's move that
   ``model`` gives is followed (`child_with_action`); elsewhere the children legal in
   this world get AVAIL += 1 and either one more child is expanded (the walk stops
   there; at the root the first untried action of the tree's root order, when one is
   set, else the one ``expand`` picks) or the child ``select`` scores best is followed.
   Progressive widening: a node has at most ``1 + widen * sqrt(VISITS)`` children.
2. *Leaf evaluation.* ``leaf`` writes every seat's value of the world reached into
   ``work.reward``.
3. *Backup* (`backup`): every node on the path gets VISITS += 1 and every seat's value.

=========  ===========================================================  ==================
part       arguments -> result                                          shipped
=========  ===========================================================  ==================
world      root_grid, root_info, observer, tiles, num_unseen, work,     `deal_world`
           data, rng -> rng
select     tree, work, params, node, child, seat -> score               `ucb`
expand     work, child_mask, num_legal, rng -> (rng, action)            `expand_greedy`,
                                                                        `expand_random`
leaf       work, params, data, rng -> rng                               `rollout_leaf`,
                                                                        `playout_leaf`,
                                                                        `evaluator_leaf`
model      data, node, work, rng -> (rng, the seat's action, or -1)     `no_model`
=========  ===========================================================  ==================

``params`` is the settings' record (`agents.settings.SearchSettings.kernel_parameters`,
read by name: ``params.c``), ``data`` whatever the agent's parts need. Each combination
of parts is a kernel of a few lines that calls `run` (`SEARCHES`; `PARTS` names its
parts): numba compiles only the parts it uses, inlined, and caches it like any kernel.
The kernels a part calls are compiled on their own (not inlined: `rollout`, `deal_copied`,
the expansions), so on a cold cache each part can be compiled in another process first
(`compile_part`), side by side, and the search kernel then loads them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine import access, kernel_cache, rules
from engine.determinize import deal_unseen, unseen_tiles
from engine.kernels import (
    apply_action, copy_state, count_placements, kernel, lines_through, lowest_bit_index, open_cells,
    placement_points, random_playout, rewards, rng_below, run_set_candidates, seat_margin, without_lowest_bit,
)
from engine.layout import CELL_OF_PAD

from agents.networks.evaluator import evaluate_position
from agents.policy_kernels import rollout, safe_values

from .tree import COUNT, ORDER_LEN, SCRATCH_CHILD_MASK, SCRATCH_COUNTS, SCRATCH_TILES

kernel_cache.register(__name__, "the search agents (ismcts, pimc, cheat)", 10)

ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL = range(6)
ROOT = 0
NO_NODE = -1

_PASS = rules.PASS_ACTION
_MAX_VALUE = rules.MAX_VALUE
# INVERSES[n] = 1 / n (the same correctly rounded float as a division; inf for n = 0): UCB
# scores every legal child at every step of the descent, and a division there is a
# visible share of an iteration.
_NUM_INVERSES = 1024
with np.errstate(divide="ignore"):
    INVERSES = 1.0 / np.arange(_NUM_INVERSES, dtype=np.float64)


# --- the tree -----------------------------------------------------------------------------
@kernel
def reset_tree(nodes, values, meta):
    """Make the tree a lone root (the root order and prior are left as they are)."""
    _init_node(nodes, values, ROOT, -1, NO_NODE, NO_NODE)
    meta[COUNT] = 1


@njit(inline="always", cache=True)
def _init_node(nodes, values, n, action, parent, next_sibling):
    nodes[n, ACTION] = action
    nodes[n, PARENT] = parent
    nodes[n, FIRST_CHILD] = NO_NODE
    nodes[n, NEXT_SIBLING] = next_sibling
    nodes[n, VISITS] = 0
    nodes[n, AVAIL] = 1
    for s in range(4):
        values[n, s] = 0.0


@njit(inline="always", cache=True)
def _add_child(tree, node, a):
    nodes, meta = tree.nodes, tree.meta
    new = meta[COUNT]
    meta[COUNT] = new + 1
    _init_node(nodes, tree.values, new, a, node, nodes[node, FIRST_CHILD])
    nodes[node, FIRST_CHILD] = new
    return new


@njit(inline="always", cache=True)
def child_with_action(tree, node, action):
    """The child of `node` reached by `action`, added if there is none yet: returns (the
    child, whether it is new). A full tree returns (node, True): simulate from `node`.
    For moves the search does not choose (a modelled opponent's)."""
    nodes = tree.nodes
    child = nodes[node, FIRST_CHILD]
    while child != NO_NODE:
        if nodes[child, ACTION] == action:
            nodes[child, AVAIL] += 1
            return child, False
        child = nodes[child, NEXT_SIBLING]
    if tree.meta[COUNT] >= nodes.shape[0]:
        return node, True
    return _add_child(tree, node, action), True


@njit(inline="always", cache=True)
def backup(tree, node, reward, num_players):
    """Add a simulation's rewards to every node from `node` up to the root."""
    nodes, values = tree.nodes, tree.values
    while node != NO_NODE:
        nodes[node, VISITS] += 1
        for s in range(num_players):
            values[node, s] += reward[s]
        node = nodes[node, PARENT]


@kernel
def simulation_rewards(info, out, margin):
    """Every seat's reward at the end of a simulation, ended or cut: the rewards of
    docs/rules.md plus ``margin`` times the seat's margin, ``tanh(lead / 100)``
    (`engine.kernels.seat_margin`: the seat's minutes minus the mean of the others';
    teams: own team minus the other), a graded signal that separates moves far better
    than win/loss alone on a small budget."""
    rewards(info, out)
    if margin == 0.0:
        return
    for s in range(access.num_players(info)):
        out[s] += margin * seat_margin(info, s)


# --- the shipped parts ----------------------------------------------------------------------
# The expansion and the rollout are kernels of their own (each inlined loop adds seconds to
# a search's compile time); the selection rule and the few lines of a leaf are inlined.
@njit(inline="always", cache=True)
def deal_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """The world of a simulation: a determinization of `observer`'s information set
    (`tiles`: the `num_unseen` tiles it has not seen), or the root itself (observer -1)."""
    if observer >= 0:
        return deal_unseen(root_grid, root_info, observer, tiles, num_unseen, rng, work.grid, work.info)
    copy_state(root_grid, root_info, work.grid, work.info)
    return rng


@njit(inline="always", cache=True)
def no_model(data, node, work, rng):
    """No seat's moves are modelled: the search chooses every move."""
    return rng, NO_NODE


@njit(inline="always", cache=True)
def ucb(tree, work, params, node, child, seat):
    """The availability-count UCB of `child` for `seat`: ``Q + c * sqrt(ln AVAIL / VISITS)``
    (AVAIL: how often it was legal when its parent was visited), at the root plus the
    progressive bias (Chaslot et al. 2008) ``prior * prior[a] / (1 + VISITS)``."""
    visits = tree.nodes[child, VISITS]
    avail = tree.nodes[child, AVAIL]
    logs = work.logs
    inv = INVERSES[visits] if visits < _NUM_INVERSES else 1.0 / visits
    log_avail = logs[avail] if avail < logs.shape[0] else np.log(avail)
    score = tree.values[child, seat] * inv + params.c * np.sqrt(log_avail * inv)
    if node == ROOT and params.prior != 0.0:  # else the bias adds 0 (finite priors)
        score += params.prior * tree.prior[tree.nodes[child, ACTION]] / (1.0 + visits)
    return score


@njit(inline="always", cache=True)
def _pick_untried(work, child_mask, num_legal, greedy, rng):
    """A legal action of the world `work.grid/info` that has no child yet: with `greedy`
    the one the greedy rollout policy prefers (the most minutes now, then a safe one, see
    `policy_kernels.safe_values`), else any; ties uniformly at random."""
    if num_legal == 0:
        return rng, _PASS
    grid, info = work.grid, work.info
    seat = access.current_seat(info)
    hand = access.hand_values(info, seat)
    best = -np.inf
    best_a = -1
    ties = 0
    cells = open_cells(info)
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = access.values_that_fit(grid, p, hand)
        if fits == 0:
            continue
        base = CELL_OF_PAD[p] * _MAX_VALUE - 1
        safe = 0
        r0 = r1 = r2 = r3 = run_set = 0
        if greedy:  # the cell's lines, read once for all its values
            safe = safe_values(grid, p)
            r0, r1, r2, r3 = lines_through(grid, p)
            run_set = run_set_candidates(grid, p, r0, r1, r2, r3)
        while fits:
            v = lowest_bit_index(fits)
            fits = without_lowest_bit(fits)
            a = base + v
            if (child_mask[a >> 6] >> (a & 63)) & 1 == 0:
                score = 0.0
                if greedy:
                    score = float(2 * placement_points(grid, p, v, r0, r1, r2, r3, run_set) + ((safe >> v) & 1))
                if score > best:
                    best = score
                    best_a = a
                    ties = 1
                elif score == best:
                    ties += 1
                    rng, r = rng_below(rng, ties)
                    if r == 0:
                        best_a = a
    return rng, best_a


@kernel
def expand_greedy(work, child_mask, num_legal, rng):
    """The untried action the greedy rollout policy prefers (`_pick_untried`)."""
    return _pick_untried(work, child_mask, num_legal, True, rng)


@kernel
def expand_random(work, child_mask, num_legal, rng):
    """An untried action, uniformly at random."""
    return _pick_untried(work, child_mask, num_legal, False, rng)


@njit(inline="always", cache=True)
def rollout_leaf(work, params, data, rng):
    """Roll out (at most params.depth placements, 0 = to the end) and score the position
    as if the game had ended there. Greedy rollouts are always safe: `np.bool_(True)`, a
    typed value, since numba compiles a callee again for each literal argument it gets
    (seconds of compiling for `rollout` and `policy_placement`)."""
    rng, _ = rollout(work.grid, work.info, rng, params.epsilon, np.bool_(True), params.depth)
    simulation_rewards(work.info, work.reward, params.margin)
    return rng


@njit(inline="always", cache=True)
def playout_leaf(work, params, data, rng):
    """`rollout_leaf` at epsilon 1 and no depth limit: a uniformly random game to the end,
    by the engine's own playout (faster than the policy's loop)."""
    rng, _ = random_playout(work.grid, work.info, rng)
    simulation_rewards(work.info, work.reward, params.margin)
    return rng


@njit(inline="always", cache=True)
def evaluator_leaf(work, params, data, rng):
    """`rollout_leaf`, an unfinished position scored by the learned evaluator `data`
    (`tree.Evaluator`)."""
    rng, _ = rollout(work.grid, work.info, rng, params.epsilon, np.bool_(True), params.depth)
    if not access.is_over(work.info):
        evaluate_position(work.grid, work.info, data.net, data.features, data.hidden, data.best, work.reward)
    else:
        simulation_rewards(work.info, work.reward, params.margin)
    return rng


# --- the loop --------------------------------------------------------------------------------
@njit(inline="always")
def _first_untried(order, length, child_mask):
    """The first action of `order` that has no child yet."""
    for i in range(length):
        a = order[i]
        if (child_mask[a >> 6] >> (a & 63)) & 1 == 0:
            return a
    return order[0]  # not reached: the root's untried actions are all in the order


@njit(inline="always")
def select_step(tree, work, params, node, rng, select, expand):
    """One step of the descent at `node` (see the module doc): returns (rng, the child to
    follow or the new child, whether the descent stops there)."""
    nodes, meta = tree.nodes, tree.meta
    info = work.info
    child_mask = work.scratch[SCRATCH_CHILD_MASK:SCRATCH_CHILD_MASK + 8]
    seat = access.current_seat(info)
    hand = access.hand_values(info, seat)
    num_legal = count_placements(info)
    for w in range(8):
        child_mask[w] = 0
    available = 0
    best = NO_NODE
    best_score = -np.inf
    child = nodes[node, FIRST_CHILD]
    while child != NO_NODE:
        a = nodes[child, ACTION]
        if (a == _PASS and num_legal == 0) or (a != _PASS and (hand >> (a % _MAX_VALUE + 1)) & 1):
            available += 1
            nodes[child, AVAIL] += 1
            child_mask[a >> 6] |= np.int64(1) << (a & 63)
            score = select(tree, work, params, node, child, seat)
            if score > best_score:
                best_score = score
                best = child
        child = nodes[child, NEXT_SIBLING]
    limit = max(num_legal, 1)
    if params.widen > 0.0:  # progressive widening
        limit = min(limit, 1 + np.int64(params.widen * np.sqrt(nodes[node, VISITS])))
    if available < limit:  # an action of this world has no child yet
        if meta[COUNT] >= nodes.shape[0]:
            return rng, node, True  # the tree is full: simulate from here
        if node == ROOT and meta[ORDER_LEN] > 0:
            a = _first_untried(tree.order, meta[ORDER_LEN], child_mask)
        else:
            rng, a = expand(work, child_mask, np.int64(num_legal), rng)
        return rng, _add_child(tree, node, a), True
    return rng, best, False


@njit(inline="always")
def descend(tree, work, params, data, rng, select, expand, model):
    """Walk the simulated world `work.grid/info` from the root down to a leaf, expanding
    at most one node; plays the path's actions on the world. Returns (rng, leaf node).
    (The parts are only called, never passed on to a function that is not inlined: numba
    cannot cache a kernel that passes a function as a value.)"""
    nodes = tree.nodes
    node = ROOT
    while not access.is_over(work.info):
        if node != ROOT and nodes[node, VISITS] < params.expand_after:
            break  # a young leaf: evaluate it, grow its children later
        rng, action = model(data, node, work, rng)
        if action >= 0:  # a modelled seat's move
            nxt, stop = child_with_action(tree, node, action)
        else:
            rng, nxt, stop = select_step(tree, work, params, node, rng, select, expand)
        if nxt != node:
            apply_action(work.grid, work.info, nodes[nxt, ACTION])
        node = nxt
        if stop:
            break
    return rng, node


@njit(inline="always")
def run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, world, select, expand, leaf,
        model):
    """Run `iterations` simulations with the given parts (see the module doc).

    observer: the seat whose information set is searched (ISMCTS: a fresh world per
    simulation), or -1 to search the root state itself. params: the settings' kernel
    record. Returns the advanced rng (uint64)."""
    num_players = access.num_players(root_info)
    tiles = work.scratch[SCRATCH_TILES:SCRATCH_TILES + rules.NUM_TILES]
    num_unseen = np.int64(0)  # not the literal 0: deal_copied compiles for int64 once
    if observer >= 0:
        num_unseen = unseen_tiles(root_grid, root_info, observer, work.scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11],
                                  tiles)
    for _ in range(iterations):
        rng = world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng)
        rng, node = descend(tree, work, params, data, rng, select, expand, model)
        rng = leaf(work, params, data, rng)
        backup(tree, node, work.reward, num_players)
    return rng


# --- the searches of ismcts, pimc and cheat: one kernel per expansion order and leaf ----------
@kernel
def search_greedy_rollout(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_greedy, rollout_leaf, no_model)


@kernel
def search_random_rollout(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_random, rollout_leaf, no_model)


@kernel
def search_greedy_evaluator(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_greedy, evaluator_leaf, no_model)


@kernel
def search_random_evaluator(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_random, evaluator_leaf, no_model)


@kernel
def search_greedy_playout(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_greedy, playout_leaf, no_model)


@kernel
def search_random_playout(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, deal_world, ucb,
               expand_random, playout_leaf, no_model)


class Parts(NamedTuple):
    """The parts a search kernel passes to `run` that call kernels of their own (what
    `compile_part` compiles ahead): world, expansion, leaf."""

    world: object
    expand: object
    leaf: object


# by (the settings' expand, the leaf: rollout, playout or evaluator)
SEARCHES = {("greedy", "rollout"): search_greedy_rollout, ("random", "rollout"): search_random_rollout,
            ("greedy", "playout"): search_greedy_playout, ("random", "playout"): search_random_playout,
            ("greedy", "evaluator"): search_greedy_evaluator, ("random", "evaluator"): search_random_evaluator}
PARTS = {(expand, leaf): Parts(deal_world, {"greedy": expand_greedy, "random": expand_random}[expand],
                               {"rollout": rollout_leaf, "playout": playout_leaf, "evaluator": evaluator_leaf}[leaf])
         for expand, leaf in SEARCHES}


# --- compiling one part on its own ---------------------------------------------------------------
# Not cached: each exists to compile, and so cache, the kernels one part calls, with the argument
# types `run` gives them; a search kernel compiled afterwards loads them from the cache.
@njit
def _call_world(world, root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    return world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng)


@njit
def _call_expand(expand, work, child_mask, num_legal, rng):
    return expand(work, child_mask, num_legal, rng)


@njit
def _call_leaf(leaf, work, params, data, rng):
    return leaf(work, params, data, rng)


def compile_part(parts: Parts, name: str, grid, info, observer: int, params, work, data) -> None:
    """Compile the kernels that part `name` ("world", "expand" or "leaf") of `parts` calls,
    by calling it once on the position (grid, info) as `run` would (observer: the seat
    searched, -1 for the root itself); the workspace `work` is scratch."""
    rng = np.uint64(1)
    work.grid[:] = grid
    work.info[:] = info
    if name == "world":
        tiles = work.scratch[SCRATCH_TILES:SCRATCH_TILES + rules.NUM_TILES]
        counts = work.scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11]
        num_unseen = np.int64(unseen_tiles(grid, info, observer, counts, tiles) if observer >= 0 else 0)
        _call_world(parts.world, grid, info, np.int64(observer), tiles, num_unseen, work, data, rng)
    elif name == "expand":
        child_mask = work.scratch[SCRATCH_CHILD_MASK:SCRATCH_CHILD_MASK + 8]
        child_mask[:] = 0
        _call_expand(parts.expand, work, child_mask, np.int64(count_placements(work.info)), rng)
    elif name == "leaf":
        _call_leaf(parts.leaf, work, params, data, rng)
