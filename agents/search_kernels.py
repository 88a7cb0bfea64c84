"""The one search core: Monte Carlo tree search in numba over a preallocated array tree
(mctx-style), with its expansion order and leaf evaluation chosen by the named constants
of `agents.search_parts` (where the tree, the workspace and the parameter record are
laid out).

Every simulation runs the same three steps, written once:

1. *World and descent* (`descend`). With ``observer >= 0`` (ISMCTS) a new
   determinization is sampled from the root: the observer's view is kept, the other
   hands, the bag order and the removed tiles are dealt afresh from the unseen tiles
   (`engine.determinize`); chance (the draws) is thereby part of the world. With
   ``observer = -1`` the root state is searched as it is (one perfect-information
   world: PIMC, cheating). From the root, while the game is not over and the node is not
   a young leaf (visited fewer than P_EXPAND_AFTER times; the root never is), the
   children legal in this world get AVAIL += 1 and either one more child is *expanded*
   (a new node; the descent stops there) or the best legal child is followed. Since
   placements name their cell and value, the board is a function of the action path: a
   child's legality only depends on the mover's hand in this world. A seat whose moves
   are modelled (the target of a best response, `agents.br_kernels`) is not chosen for:
   `descend` takes the model's move there (`child_with_action`).

   Selection is the availability-count UCB of single-observer ISMCTS (Cowling, Powley &
   Whitehouse 2012), ``Q + c * sqrt(ln AVAIL / VISITS)``, where AVAIL (how often the
   child was legal when its parent was visited) replaces the parent's visits so that an
   action legal in few worlds is not over-explored; at the root plus the progressive
   bias (Chaslot et al. 2008) ``prior_weight * prior[a] / (1 + VISITS)``. A node gets a
   new child while it has fewer than its legal actions (with progressive widening at
   most ``1 + widen * sqrt(VISITS)``); new children come in a fixed order: at the root
   the tree's root order (the greedy ranking or a network's policy), below it the
   rollout policy's preference (most minutes now, then safe moves, ties at random), or
   uniformly at random.

2. *Leaf evaluation.* LEAF_ROLLOUT / LEAF_HEURISTIC / LEAF_EVALUATOR: the epsilon-greedy
   rollout (`policy_kernels.rollout`) to the end or for at most P_DEPTH placements, an
   unfinished position scored by the learned evaluator (LEAF_EVALUATOR) or as if the
   game had ended there.
3. *Backup* (`backup`): every node on the path gets VISITS += 1 and every seat's
   reward added: the rewards of docs/rules.md (+1/-1/0; 3-4 players: the mean against
   each other seat; teams: the team's result), plus ``margin * tanh(lead / 100)``
   where ``lead`` is the seat's minutes minus the mean of the other seats' (teams: own
   team minus the other team): a graded signal that separates moves far better than
   win/loss alone when a simulation budget is small.

`search` runs whole simulations.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import access, rules
from engine.determinize import deal_unseen, unseen_tiles
from engine.kernels import (
    apply_action, copy_state, count_placements, kernel, lines_through, lowest_bit_index, open_cells,
    placement_points, rewards, rng_below, run_set_candidates, without_lowest_bit,
)
from engine.layout import CELL_OF_PAD

from .policy_kernels import rollout, safe_values
from .search_parts import (
    COUNT, EXPAND_GREEDY, LEAF_EVALUATOR, LEAF_ROLLOUT, ORDER_LEN, P_C, P_DEPTH, P_EPSILON, P_EXPAND, P_EXPAND_AFTER,
    P_LEAF, P_MARGIN, P_PRIOR_WEIGHT, P_WIDEN, SCRATCH_CHILD_MASK, SCRATCH_COUNTS, SCRATCH_TILES,
)
from .value_kernels import evaluate_position

ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL = range(6)
ROOT = 0
NO_NODE = -1
MARGIN_SCALE = 100.0  # minutes; the margin term is margin * tanh(lead / MARGIN_SCALE)
MARGIN = 0.5  # the search agents' default margin weight (the fast evaluator learns rewards with it)

_PASS = rules.PASS_ACTION
_MAX_VALUE = rules.MAX_VALUE
# INVERSES[n] = 1 / n (the same correctly rounded float as a division; inf for n = 0): UCB
# scores every legal child at every step of the descent, and a division there is a
# visible share of an iteration.
_NUM_INVERSES = 1024
with np.errstate(divide="ignore"):
    INVERSES = 1.0 / np.arange(_NUM_INVERSES, dtype=np.float64)


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


# `_pick_untried`, `descend` and the rollout run once per simulation: compiled kernels
# called from the loop, not inlined into it (each inlined loop adds seconds to its compile
# time); the selection steps, run at every level of the tree, are inlined into `descend`.
# `rollout_leaf`, a few lines around the rollout kernel, is inlined into `search`: a call
# per simulation is a measurable share of a short perfect-information simulation (pimc,
# cheat), worth a few more seconds of compile time (benchmarks/RESULTS.md).
@kernel
def _pick_untried(work, child_mask, num_legal, expand, rng):
    """A legal action of the world `work.grid/info` that has no child yet, by `expand`:
    EXPAND_GREEDY the one the greedy rollout policy prefers (the most minutes now, then a
    safe one, see `policy_kernels.safe_values`), EXPAND_RANDOM any; ties uniformly at
    random."""
    if num_legal == 0:
        return rng, _PASS
    grid, info = work.grid, work.info
    seat = access.current_seat(info)
    hand = access.hand_values(info, seat)
    greedy = expand == EXPAND_GREEDY
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


@njit(inline="always", cache=True)
def afterstate_value(grid, info, action, seat, margin, net, after_grid, after_info, features, hidden, best, values):
    """`seat`'s value of the state (grid, info) after `action` (`agents.afterstate`): the packed evaluator `net`
    on the position reached (copied to after_grid/after_info), or the exact search reward
    with `margin` where the move ends the game. Scratch: features, hidden, best as
    `value_kernels.evaluate_position`; values float64 (4,)."""
    copy_state(grid, info, after_grid, after_info)
    apply_action(after_grid, after_info, action)
    if access.is_over(after_info):
        simulation_rewards(after_info, values, margin)
    else:
        evaluate_position(after_grid, after_info, net, features, hidden, best, values)
    return values[seat]


@njit(inline="always", cache=True)
def _first_untried(order, length, child_mask):
    """The first action of `order` that has no child yet."""
    for i in range(length):
        a = order[i]
        if (child_mask[a >> 6] >> (a & 63)) & 1 == 0:
            return a
    return order[0]  # not reached: the root's untried actions are all in the order


@kernel
def simulation_rewards(info, out, margin):
    """Every seat's reward at the end of a simulation, ended or cut (see the module doc)."""
    rewards(info, out)
    if margin == 0.0:
        return
    n = access.num_players(info)
    if access.is_team(info):
        lead = float((access.score(info, 0) + access.score(info, 2))
                     - (access.score(info, 1) + access.score(info, 3)))
        bonus = margin * np.tanh(lead / MARGIN_SCALE)
        for s in range(4):
            out[s] += bonus if s % 2 == 0 else -bonus
        return
    total = 0
    for s in range(n):
        total += access.score(info, s)
    for s in range(n):
        lead = access.score(info, s) - (total - access.score(info, s)) / (n - 1)
        out[s] += margin * np.tanh(lead / MARGIN_SCALE)


@njit(inline="always", cache=True)
def select_step(tree, work, params, node, rng):
    """One UCB step of the descent at `node` (see the module doc): returns (rng, the
    child to follow or the new child, whether the descent stops there)."""
    nodes, values, meta = tree.nodes, tree.values, tree.meta
    grid, info = work.grid, work.info
    child_mask = work.scratch[SCRATCH_CHILD_MASK:SCRATCH_CHILD_MASK + 8]
    c = params[P_C]
    prior_weight = params[P_PRIOR_WEIGHT]
    logs = work.logs
    num_logs = logs.shape[0]
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
            avail = nodes[child, AVAIL] + 1
            nodes[child, AVAIL] = avail
            child_mask[a >> 6] |= np.int64(1) << (a & 63)
            visits = nodes[child, VISITS]
            inv = INVERSES[visits] if visits < _NUM_INVERSES else 1.0 / visits
            log_avail = logs[avail] if avail < num_logs else np.log(avail)
            score = values[child, seat] * inv + c * np.sqrt(log_avail * inv)
            if node == ROOT and prior_weight != 0.0:  # else the bias adds 0 (finite priors)
                score += prior_weight * tree.prior[a] / (1.0 + visits)
            if score > best_score:
                best_score = score
                best = child
        child = nodes[child, NEXT_SIBLING]
    limit = max(num_legal, 1)
    widen = params[P_WIDEN]
    if widen > 0.0:  # progressive widening
        limit = min(limit, 1 + np.int64(widen * np.sqrt(nodes[node, VISITS])))
    if available < limit:  # an action of this world has no child yet
        if meta[COUNT] >= nodes.shape[0]:
            return rng, node, True  # the tree is full: simulate from here
        if node == ROOT and meta[ORDER_LEN] > 0:
            a = _first_untried(tree.order, meta[ORDER_LEN], child_mask)
        else:
            rng, a = _pick_untried(work, child_mask, np.int64(num_legal), np.int64(params[P_EXPAND]), rng)
        return rng, _add_child(tree, node, a), True
    return rng, best, False


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


@kernel
def descend_from(tree, work, params, node, rng, modelled):
    """Walk the simulated world `work.grid/info` from `node` down to a leaf, expanding at
    most one node; plays the path's actions on the world. `modelled`: a bitmask of
    seats whose moves the caller chooses (a best response's target; 0 for none): the
    walk returns where such a seat is to move. Returns (rng, node, whether the walk
    ended: False = stopped at a modelled seat's turn)."""
    nodes = tree.nodes
    expand_after = np.int64(params[P_EXPAND_AFTER])
    while not access.is_over(work.info):
        if node != ROOT and nodes[node, VISITS] < expand_after:
            break  # a young leaf: evaluate it, grow its children later
        if (modelled >> access.current_seat(work.info)) & 1:
            return rng, node, False
        rng, nxt, stop = select_step(tree, work, params, node, rng)
        if nxt != node:
            apply_action(work.grid, work.info, nodes[nxt, ACTION])
        node = nxt
        if stop:
            break
    return rng, node, True


@njit(inline="always", cache=True)
def follow(tree, work, node, action):
    """Follow (or add) the child of `node` reached by a modelled seat's `action` and play
    it on the world: returns (the node reached, whether the walk stops there)."""
    nxt, stop = child_with_action(tree, node, action)
    if nxt != node:
        apply_action(work.grid, work.info, action)
    return nxt, stop


@njit(inline="always", cache=True)
def descend(tree, work, params, rng):
    """`descend_from` the root with no modelled seat: returns (rng, leaf node)."""
    rng, node, _ = descend_from(tree, work, params, ROOT, rng, np.int64(0))
    return rng, node


@njit(inline="always", cache=True)
def backup(tree, node, reward, num_players):
    """Add a simulation's rewards to every node from `node` up to the root."""
    nodes, values = tree.nodes, tree.values
    while node != NO_NODE:
        nodes[node, VISITS] += 1
        for s in range(num_players):
            values[node, s] += reward[s]
        node = nodes[node, PARENT]


@njit(inline="always", cache=True)
def rollout_leaf(work, params, rng):
    """Score the world reached by the descent with a rollout (LEAF_ROLLOUT, LEAF_HEURISTIC,
    LEAF_EVALUATOR) into work.reward; returns the rng. Greedy rollouts are always safe."""
    leaf = params[P_LEAF]
    depth = np.int64(0) if leaf == LEAF_ROLLOUT else np.int64(params[P_DEPTH])
    rng, _ = rollout(work.grid, work.info, rng, np.int64(params[P_EPSILON]), True, depth)
    if not access.is_over(work.info) and leaf == LEAF_EVALUATOR and work.net.shape[0] > 0:
        evaluate_position(work.grid, work.info, work.net, work.features, work.hidden, work.best, work.reward)
    else:
        simulation_rewards(work.info, work.reward, params[P_MARGIN])
    return rng


@kernel
def search(root_grid, root_info, observer, iterations, params, rng, tree, work):
    """Run `iterations` simulations with rollout leaves (see the module doc).

    observer: the seat whose information set is searched (ISMCTS: a fresh world per
    simulation), or -1 to search the root state itself. params: `search_parts.parameters`.
    Returns the advanced rng (uint64)."""
    num_players = access.num_players(root_info)
    tiles = work.scratch[SCRATCH_TILES:SCRATCH_TILES + rules.NUM_TILES]
    num_unseen = 0
    if observer >= 0:
        num_unseen = unseen_tiles(root_grid, root_info, observer, work.scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11],
                                  tiles)
    for _ in range(iterations):
        if observer >= 0:
            rng = deal_unseen(root_grid, root_info, observer, tiles, num_unseen, rng, work.grid, work.info)
        else:
            copy_state(root_grid, root_info, work.grid, work.info)
        rng, node = descend(tree, work, params, rng)
        rng = rollout_leaf(work, params, rng)
        backup(tree, node, work.reward, num_players)
    return rng
