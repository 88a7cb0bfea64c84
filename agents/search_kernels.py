"""The one search core: Monte Carlo tree search in numba over a preallocated array tree
(mctx-style), with pluggable selection, expansion order and leaf evaluation chosen by
the named constants of `agents.search_parts` (where the tree, the workspace and the
parameter record are laid out).

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
   child's legality only depends on the mover's hand in this world.

   - SELECT_UCB: the availability-count UCB of single-observer ISMCTS (Cowling, Powley
     & Whitehouse 2012), ``Q + c * sqrt(ln AVAIL / VISITS)``, where AVAIL (how often
     the child was legal when its parent was visited) replaces the parent's visits so
     that an action legal in few worlds is not over-explored; at the root plus the
     progressive bias (Chaslot et al. 2008) ``prior_weight * prior[a] / (1 + VISITS)``.
     A node gets a new child while it has fewer than its legal actions (with
     progressive widening at most ``1 + widen * sqrt(VISITS)``); new children come in
     a fixed order: at the root the tree's root order (the greedy ranking or a
     network's policy), below it the rollout policy's preference (most minutes now,
     then safe moves, ties at random), the learned evaluator's best afterstate for the
     mover in this world (EXPAND_EVALUATOR), or uniformly at random.
   - Sequential halving at the root (with SELECT_UCB, P_ROOT_HALVING = k > 0): the
     root's candidates are the first k actions of its order, and a simulation goes to
     the least-visited one; the caller runs the phases, halving k and reordering the
     candidates by their mean reward in between (Karnin, Koren & Somekh 2013; the root
     of Gumbel AlphaZero, Danihelka et al. 2022). Below the root, UCB as above.
   - SELECT_PUCT: AlphaZero's ``Q + c * P(a) * sqrt(VISITS(node) + 1) / (1 + VISITS(a))``
     over every action legal in this world, an action without a child counting as
     Q = 0 and VISITS = 0; choosing one expands it.

2. *Leaf evaluation.* LEAF_ROLLOUT / LEAF_HEURISTIC / LEAF_EVALUATOR: the epsilon-greedy
   rollout (`policy_kernels.rollout`) to the end or for at most P_DEPTH placements, an
   unfinished position scored by the learned evaluator (LEAF_EVALUATOR) or as if the
   game had ended there. LEAF_VALUE: the descent stops at the leaf and returns; the
   caller evaluates the leaves of B lockstep searches with a network in one call.
3. *Backup* (`backup`): every node on the path gets VISITS += 1 and every seat's
   reward added: the rewards of docs/rules.md (+1/-1/0; 3-4 players: the mean against
   each other seat; teams: the team's result), plus ``margin * tanh(lead / 100)``
   where ``lead`` is the seat's minutes minus the mean of the other seats' (teams: own
   team minus the other team): a graded signal that separates moves far better than
   win/loss alone when a simulation budget is small; or the network's values.

`search` runs whole simulations (rollout leaves); `descend_batch` and `backup_values`
are the two halves of a LEAF_VALUE step for B stacked trees.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import access, rules
from engine.determinize import deal_unseen, unseen_tiles
from engine.kernels import (
    apply_action, copy_state, count_placements, kernel, legal_mask, legal_placements, lines_through, lowest_bit_index,
    open_cells, placement_points, rewards, rng_below, run_set_candidates, without_lowest_bit,
)
from engine.layout import CELL_OF_PAD
from env.observation import encode_into

from .policy_kernels import rollout, safe_values
from .search_parts import (
    COUNT, EXPAND_EVALUATOR, EXPAND_GREEDY, LEAF, LEAF_EVALUATOR, LEAF_IS_NEW, LEAF_ROLLOUT, ORDER_LEN, P_C,
    P_DEPTH, P_EPSILON, P_EXPAND, P_EXPAND_AFTER, P_LEAF, P_MARGIN, P_PRIOR_WEIGHT, P_ROOT_HALVING, P_SAFE,
    P_SELECTION, P_WIDEN, SCRATCH_CANDIDATES, SCRATCH_CHILD_MASK, SCRATCH_COUNTS, SCRATCH_LEGAL, SCRATCH_TILES,
    SELECT_UCB, VALUE_ROWS, Tree, Workspace,
)
from .value_kernels import evaluate_position

ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL, VALUE_ROW = range(7)
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
    meta[VALUE_ROWS] = 0


@kernel
def reset_trees(nodes, values, meta):
    """`reset_tree` for each of B stacked trees."""
    for b in range(nodes.shape[0]):
        reset_tree(nodes[b], values[b], meta[b])


@njit(inline="always", cache=True)
def _init_node(nodes, values, n, action, parent, next_sibling):
    nodes[n, ACTION] = action
    nodes[n, PARENT] = parent
    nodes[n, FIRST_CHILD] = NO_NODE
    nodes[n, NEXT_SIBLING] = next_sibling
    nodes[n, VISITS] = 0
    nodes[n, AVAIL] = 1
    nodes[n, VALUE_ROW] = -1
    for s in range(4):
        values[n, s] = 0.0


# `_pick_untried`, `descend` and the rollout run once per simulation: compiled kernels
# called from the loop, not inlined into it (each inlined loop adds seconds to its compile
# time); the selection steps, run at every level of the tree, are inlined into `descend`.
# `rollout_leaf`, a few lines around the rollout kernel, is inlined into `search`: a call
# per simulation is a measurable share of a short perfect-information simulation (pimc,
# cheat), worth a few more seconds of compile time (benchmarks/RESULTS.md).
@kernel
def _pick_untried(tree, node, work, child_mask, num_legal, expand, margin, rng):
    """A legal action of the world `work.grid/info` at `node` that has no child yet, by
    `expand`: EXPAND_GREEDY the one the greedy rollout policy prefers (the most minutes
    now, then a safe one, see `policy_kernels.safe_values`), EXPAND_EVALUATOR the one whose
    afterstate the workspace's evaluator values most for the mover (`_move_value`),
    EXPAND_RANDOM any; ties uniformly at random."""
    if num_legal == 0:
        return rng, _PASS
    grid, info = work.grid, work.info
    seat = access.current_seat(info)
    hand = access.hand_values(info, seat)
    greedy = expand == EXPAND_GREEDY
    by_value = expand == EXPAND_EVALUATOR
    row = -1
    if by_value:
        row = _value_row(tree, node, work.move_values)
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
                elif by_value:
                    score = _move_value(work, row, a, seat, margin)
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
def _value_row(tree, node, move_values):
    """The node's row of `move_values` (a fresh one, all NaN, the first time), or -1 when
    the table is full (its moves are then scored afresh at every expansion)."""
    row = tree.nodes[node, VALUE_ROW]
    if row < 0 and tree.meta[VALUE_ROWS] < move_values.shape[0]:
        row = tree.meta[VALUE_ROWS]
        tree.meta[VALUE_ROWS] = row + 1
        tree.nodes[node, VALUE_ROW] = row
        move_values[row, :] = np.nan
    return row


@njit(inline="always", cache=True)
def _move_value(work, row, action, seat, margin):
    """`seat`'s `afterstate_value` of `action` in the world `work.grid/info`, played on the
    workspace's second world. Kept in the node's `row` of `work.move_values` and read from
    it later: a node's move is scored in the first world that offers it, which spares the
    search most evaluations (the scores of one move differ little between worlds)."""
    if row >= 0 and not np.isnan(work.move_values[row, action]):
        return work.move_values[row, action]
    value = afterstate_value(work.grid, work.info, action, seat, margin, work.net, work.after_grid, work.after_info,
                             work.features, work.hidden, work.best, work.reward)
    if row >= 0:
        work.move_values[row, action] = value
    return value


@njit(inline="always", cache=True)
def afterstate_value(grid, info, action, seat, margin, net, after_grid, after_info, features, hidden, best, values):
    """`seat`'s value of the state (grid, info) after `action`: the packed evaluator `net`
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


@njit(inline="always", cache=True)
def _has_child(child_mask, a):
    return (child_mask[a >> 6] >> (a & 63)) & 1 == 1


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
def _ucb_step(tree, work, params, node, rng):
    """One UCB step of the descent at `node` (see the module doc): returns (rng, the
    child to follow or the new child, whether the descent stops there)."""
    if node == ROOT and params[P_ROOT_HALVING] > 0:
        nxt, stop = _halving_step(tree, work, np.int64(params[P_ROOT_HALVING]))
        return rng, nxt, stop
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
                score += prior_weight * tree.priors[0, a] / (1.0 + visits)
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
            expand = np.int64(params[P_EXPAND])
            if expand == EXPAND_EVALUATOR and work.net.shape[0] == 0:
                expand = EXPAND_GREEDY  # no evaluator to score the afterstates
            # np.int64(node): one signature (the root's node would otherwise be a literal 0, a second compile)
            rng, a = _pick_untried(tree, np.int64(node), work, child_mask, np.int64(num_legal), expand,
                                   params[P_MARGIN], rng)
        return rng, _add_child(tree, node, a), True
    return rng, best, False


@njit(inline="always", cache=True)
def _halving_step(tree, work, k):
    """The root's step in a phase of sequential halving (P_ROOT_HALVING = k): the first
    of the candidates (the first k actions of the root order) without a child is
    expanded, else the least-visited candidate is followed (the first such child on
    ties). Every root action is legal in every world (the observer's hand is known), so
    no UCB statistics are needed. Returns (the child to follow or the new child, whether
    the descent stops there)."""
    nodes, meta, order = tree.nodes, tree.meta, tree.order
    k = min(k, meta[ORDER_LEN])
    candidates = work.scratch[SCRATCH_CANDIDATES:SCRATCH_CANDIDATES + 8]
    child_mask = work.scratch[SCRATCH_CHILD_MASK:SCRATCH_CHILD_MASK + 8]
    for w in range(8):
        candidates[w] = 0
        child_mask[w] = 0
    for i in range(k):
        a = order[i]
        candidates[a >> 6] |= np.int64(1) << (a & 63)
    fewest = NO_NODE
    child = nodes[ROOT, FIRST_CHILD]
    while child != NO_NODE:
        a = nodes[child, ACTION]
        child_mask[a >> 6] |= np.int64(1) << (a & 63)
        if _has_child(candidates, a) and (fewest == NO_NODE or nodes[child, VISITS] < nodes[fewest, VISITS]):
            fewest = child
        child = nodes[child, NEXT_SIBLING]
    for i in range(k):
        a = order[i]
        if not _has_child(child_mask, a):
            if meta[COUNT] >= nodes.shape[0]:
                return ROOT, True  # the tree is full: simulate from here
            return _add_child(tree, ROOT, a), True
    return fewest, False


@njit(inline="always", cache=True)
def _puct_step(tree, work, params, node):
    """One PUCT step of the descent at `node`: (the child to follow or the new child,
    whether the descent stops there)."""
    nodes, values, meta, priors = tree.nodes, tree.values, tree.meta, tree.priors
    info = work.info
    child_mask = work.scratch[SCRATCH_CHILD_MASK:SCRATCH_CHILD_MASK + 8]
    legal = work.scratch[SCRATCH_LEGAL:]
    seat = access.current_seat(info)
    num_legal = legal_placements(work.grid, info, legal)
    if num_legal == 0:
        legal[0] = _PASS
        num_legal = 1
    uniform = node >= priors.shape[0]  # no network prior for this node: all actions alike
    row = 0 if uniform else node
    scale = params[P_C] * np.sqrt(nodes[node, VISITS] + 1.0)
    hand = access.hand_values(info, seat)
    for w in range(8):
        child_mask[w] = 0
    best = NO_NODE
    best_score = -np.inf
    child = nodes[node, FIRST_CHILD]
    while child != NO_NODE:
        a = nodes[child, ACTION]
        if (a == _PASS and legal[0] == _PASS) or (a != _PASS and (hand >> (a % _MAX_VALUE + 1)) & 1):
            nodes[child, AVAIL] += 1
            child_mask[a >> 6] |= np.int64(1) << (a & 63)
            n = nodes[child, VISITS]
            p = 1.0 / num_legal if uniform else priors[row, a]
            score = values[child, seat] / max(n, 1) + scale * p / (1.0 + n)
            if score > best_score:
                best_score = score
                best = child
        child = nodes[child, NEXT_SIBLING]
    new_a = -1
    for i in range(num_legal):  # an action without a child: Q = 0, VISITS = 0
        a = legal[i]
        if not _has_child(child_mask, a):
            score = scale * (1.0 / num_legal if uniform else priors[row, a])
            if score > best_score:
                best_score = score
                new_a = a
    if new_a < 0:
        return best, False
    if meta[COUNT] >= nodes.shape[0]:
        return node, True  # the tree is full: evaluate here
    return _add_child(tree, node, new_a), True


@njit(inline="always", cache=True)
def _add_child(tree, node, a):
    nodes, meta = tree.nodes, tree.meta
    new = meta[COUNT]
    meta[COUNT] = new + 1
    _init_node(nodes, tree.values, new, a, node, nodes[node, FIRST_CHILD])
    nodes[node, FIRST_CHILD] = new
    return new


@njit(inline="always", cache=True)
def select_step(tree, work, params, node, rng, ucb):
    """One step of the descent at `node` by the search's selection (UCB when `ucb`, else
    PUCT): returns (rng, the child to follow or the new child, whether the descent
    stops there). The world `work.grid/info` is at `node`; nothing is applied to it."""
    if ucb:
        return _ucb_step(tree, work, params, node, rng)
    nxt, stop = _puct_step(tree, work, params, node)
    return rng, nxt, stop


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
def descend(tree, work, params, rng):
    """Walk the simulated world `work.grid/info` from the root to a leaf, expanding at
    most one node; plays the path's actions on the world. Returns (rng, leaf node)."""
    nodes = tree.nodes
    expand_after = np.int64(params[P_EXPAND_AFTER])
    ucb = params[P_SELECTION] == SELECT_UCB
    node = ROOT
    while not access.is_over(work.info):
        if node != ROOT and nodes[node, VISITS] < expand_after:
            break  # a young leaf: evaluate it, grow its children later
        rng, nxt, stop = select_step(tree, work, params, node, rng, ucb)
        if nxt != node:
            apply_action(work.grid, work.info, nodes[nxt, ACTION])
        node = nxt
        if stop:
            break
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
    LEAF_EVALUATOR) into work.reward; returns the rng."""
    leaf = params[P_LEAF]
    depth = np.int64(0) if leaf == LEAF_ROLLOUT else np.int64(params[P_DEPTH])
    rng, _ = rollout(work.grid, work.info, rng, np.int64(params[P_EPSILON]), params[P_SAFE] != 0.0, depth)
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


@kernel
def descend_batch(root_grid, root_info, active, observer, params, rng, trees, works):
    """LEAF_VALUE, first half of a step: for every active search b, sample a world of
    observer[b]'s information set (-1: its root state as it is), descend tree b to a leaf
    and leave the leaf's world in works.grid[b]/info[b] for the caller to evaluate."""
    for b in range(root_grid.shape[0]):
        if not active[b]:
            continue
        tree = Tree(trees.nodes[b], trees.values[b], trees.meta[b], trees.order[b], trees.priors[b])
        work = Workspace(works.grid[b], works.info[b], works.scratch[b], works.reward[b], works.logs, works.net,
                         works.features, works.hidden, works.best, works.after_grid, works.after_info,
                         works.move_values)
        if observer[b] >= 0:
            tiles = work.scratch[SCRATCH_TILES:SCRATCH_TILES + rules.NUM_TILES]
            n = unseen_tiles(root_grid[b], root_info[b], observer[b],
                             work.scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11], tiles)
            rng[b] = deal_unseen(root_grid[b], root_info[b], observer[b], tiles, n, rng[b], work.grid, work.info)
        else:
            copy_state(root_grid[b], root_info[b], work.grid, work.info)
        count = tree.meta[COUNT]
        r, node = descend(tree, work, params, rng[b])
        rng[b] = r
        tree.meta[LEAF] = node
        tree.meta[LEAF_IS_NEW] = 1 if tree.meta[COUNT] > count else 0


@kernel
def backup_values(active, params, trees, works, leaf_priors, leaf_values):
    """LEAF_VALUE, second half of a step: for every active search b, store the network's
    prior of a new leaf (leaf_priors[b], over all actions) and back up its values
    (leaf_values[b], rotated so slot 0 is the leaf's mover), or a finished game's
    rewards (`simulation_rewards`)."""
    margin = params[P_MARGIN]
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        tree = Tree(trees.nodes[b], trees.values[b], trees.meta[b], trees.order[b], trees.priors[b])
        info = works.info[b]
        reward = works.reward[b]
        n = access.num_players(info)
        node = tree.meta[LEAF]
        if access.is_over(info):
            simulation_rewards(info, reward, margin)
        else:
            mover = access.current_seat(info)
            for k in range(n):
                reward[(mover + k) % n] = leaf_values[b, k]
            if tree.meta[LEAF_IS_NEW] == 1 and node < tree.priors.shape[0]:
                for a in range(leaf_priors.shape[1]):
                    tree.priors[node, a] = leaf_priors[b, a]
        backup(tree, node, reward, n)


@kernel
def root_stats(nodes, values, seats, visits, value_sums):
    """visits[b, a] and value_sums[b, a] (summed reward of seats[b]) of root child `a`
    of each of B stacked trees (0 where the root has no such child)."""
    for b in range(nodes.shape[0]):
        visits[b, :] = 0
        value_sums[b, :] = 0.0
        child = nodes[b, ROOT, FIRST_CHILD]
        while child != NO_NODE:
            a = nodes[b, child, ACTION]
            visits[b, a] = nodes[b, child, VISITS]
            value_sums[b, a] = values[b, child, seats[b]]
            child = nodes[b, child, NEXT_SIBLING]


@kernel
def encode_leaves(grid, info, rows, obs, masks):
    """obs[i] and masks[i]: the observation and legal mask of game rows[i], from the seat
    to move there (LEAF_VALUE: what the network reads), one core, no thread pool."""
    for i in range(rows.shape[0]):
        b = rows[i]
        encode_into(grid[b], info[b], access.current_seat(info[b]), obs[i])
        legal_mask(grid[b], info[b], masks[i])
