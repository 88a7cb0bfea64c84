"""The MCTS simulation loop in numba, over a preallocated array tree (mctx-style).

One kernel, `search`, runs `iterations` of Monte Carlo tree search; Python only builds
the tree arrays, slices a time budget into calls, and reads the root's children.

Tree (capacity N nodes; node 0 is the root; children form a linked list):

    nodes   int64   (N, NODE_FIELDS)  ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL
    values  float64 (N, 4)            sum of the backed-up reward of every seat
    meta    int64   (META_LEN,)       COUNT = nodes in use

A node is an action sequence from the root. Its ACTION is the action leading to it,
VISITS the simulations through it and AVAIL how often it was *available* (legal in the
simulation's world) when its parent was visited: the availability count of
single-observer ISMCTS (Cowling, Powley & Whitehouse 2012), which replaces the parent's
visit count in UCB1 so that an action legal in few worlds is not over-explored:

    UCB(child) = values[child, mover] / VISITS + c * sqrt(ln AVAIL / VISITS)

Each iteration:

1. *World.* With ``observer >= 0`` (ISMCTS) a new determinization is sampled from the
   root: the observer's view is kept, the other hands, the bag order and the removed
   tiles are dealt afresh from the unseen tiles (`engine.determinize.sample_world`);
   chance (the draws) is thereby part of the world. With ``observer = -1`` the root
   state is searched as it is (UCT on one perfect-information world: PIMC, cheating).
2. *Select.* From the root, while the game is not over and the node is not a young
   leaf (visited fewer than `expand_after` times; the root never is): the children
   legal in this world get AVAIL += 1; if fewer of them exist than the node may have
   (all legal actions of this world, or with progressive widening at most
   ``1 + widen * sqrt(VISITS)``), one more is *expanded* (a new node) and selection
   stops; otherwise the legal child with the best UCB is followed. New children come
   in a fixed order of preference: at the root the caller's `root_order` (the greedy
   agent's ranking), below it the rollout policy's (most minutes now, then safe moves,
   ties at random), or uniformly at random. Since placements name their cell and
   value, the board is a function of the action path: a child's legality only depends
   on the mover's hand in this world. A caller with a prior over the root's actions
   (a policy network's) can add a *progressive bias* (Chaslot et al. 2008) to the root
   children's UCB, ``prior_weight * root_prior[a] / (1 + VISITS)``: it steers the
   first simulations and fades as the rollouts' evidence accumulates.
3. *Rollout* with the epsilon-greedy policy (`policy_kernels.rollout`) to the end, or
   for at most `max_placements` placements (then the position is scored as if the game
   ended there).
4. *Backup.* Every node on the path gets VISITS += 1 and every seat's reward added:
   the rewards of docs/rules.md (+1/-1/0; 3-4 players: the mean against each other seat;
   teams: the team's result) of the final (or cut-off) position, plus
   ``margin * tanh(lead / 100)`` where ``lead`` is the seat's minutes minus the mean of
   the other seats' (teams: own team minus the other team): a graded signal that
   separates moves far better than win/loss alone when a simulation budget is small.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import access, rules
from engine.determinize import deal_unseen, unseen_tiles
from engine.kernels import (
    apply_action, copy_state, count_placements, kernel, lowest_bit_index, open_cells,
    points_if_placed, rewards, rng_below, without_lowest_bit,
)
from engine.layout import CELL_OF_PAD

from .policy_kernels import rollout, safe_values
from .value_kernels import evaluate_position

ACTION, PARENT, FIRST_CHILD, NEXT_SIBLING, VISITS, AVAIL = range(6)
NODE_FIELDS = 6
COUNT = 0
META_LEN = 2
ROOT = 0
NO_NODE = -1
MARGIN_SCALE = 100.0  # minutes; the margin term is margin * tanh(lead / MARGIN_SCALE)
MARGIN = 0.5  # the search agents' default margin weight (the fast evaluator learns rewards with it)

# int64 scratch layout: unseen counts and tiles, the child bitmask, the untried list
_COUNTS = 0
_TILES = 16
_CHILD_MASK = 64  # 8 words: bit a = action a has a child
SCRATCH_LEN = 72

_PASS = rules.PASS_ACTION
_MAX_VALUE = rules.MAX_VALUE


def log_table(size: int = 1 << 16) -> np.ndarray:
    """ln(n) for n < size (index 0 unused): UCB reads it instead of calling log."""
    table = np.zeros(size, dtype=np.float64)
    table[1:] = np.log(np.arange(1, size, dtype=np.float64))
    return table


def new_tree(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays for a tree of at most `capacity` nodes (`reset_tree` before each search)."""
    return (np.zeros((capacity, NODE_FIELDS), dtype=np.int64),
            np.zeros((capacity, 4), dtype=np.float64),
            np.zeros(META_LEN, dtype=np.int64))


@kernel
def reset_tree(nodes, values, meta):
    """Make the tree a lone root."""
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


# `_pick_untried` and `simulation_rewards` run once per simulation: compiled kernels called from
# `search`, not inlined into it (each inlined loop adds seconds to its compile time).
@kernel
def _pick_untried(grid, info, child_mask, num_legal, greedy, rng):
    """A legal action of this world that has no child yet: with `greedy`, the one the
    greedy rollout policy prefers (the most minutes now, then a safe one, see
    `policy_kernels.safe_values`; ties uniformly at random), else a uniformly random one."""
    if num_legal == 0:
        return rng, _PASS
    hand = access.hand_values(info, access.current_seat(info))
    best = -1
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
        safe = safe_values(grid, p) if greedy else 0
        while fits:
            v = lowest_bit_index(fits)
            fits = without_lowest_bit(fits)
            a = base + v
            if (child_mask[a >> 6] >> (a & 63)) & 1 == 0:
                pts = 2 * points_if_placed(grid, p, v) + ((safe >> v) & 1) if greedy else 0
                if pts > best:
                    best = pts
                    best_a = a
                    ties = 1
                elif pts == best:
                    ties += 1
                    rng, r = rng_below(rng, ties)
                    if r == 0:
                        best_a = a
    return rng, best_a


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


@kernel
def search(root_grid, root_info, observer, iterations, c, epsilon, safe, max_placements, margin, greedy_expand,
           expand_after, widen, root_order, root_order_len, root_prior, prior_weight, rng, nodes, values, meta,
           sim_grid, sim_info, scratch, reward, logs, value_net, value_features, value_hidden, value_best):
    """Run `iterations` MCTS iterations on the tree (see the module doc).

    observer: the seat whose information set is searched (ISMCTS: a fresh world per
    iteration), or -1 to search the root state itself. root_prior (float64 per action)
    and prior_weight: the progressive bias of the root's children, see the module doc
    (prior_weight 0: none). epsilon: the rollout policy's
    random-move probability out of 2**32. logs: `log_table()`. scratch: int64 of
    SCRATCH_LEN; reward: float64 (4,). value_net: a packed `agents.value_kernels` MLP that
    scores rollouts cut before the end (empty: score them as ended games), with its
    scratch value_features, value_hidden and value_best. Returns the advanced rng (uint64)."""
    num_players = access.num_players(root_info)
    capacity = nodes.shape[0]
    child_mask = scratch[_CHILD_MASK:_CHILD_MASK + 8]
    tiles = scratch[_TILES:_TILES + rules.NUM_TILES]
    num_unseen = 0
    if observer >= 0:
        num_unseen = unseen_tiles(root_grid, root_info, observer, scratch[_COUNTS:_COUNTS + 11], tiles)
    num_logs = logs.shape[0]
    for _ in range(iterations):
        if observer >= 0:
            rng = deal_unseen(root_grid, root_info, observer, tiles, num_unseen, rng, sim_grid, sim_info)
        else:
            copy_state(root_grid, root_info, sim_grid, sim_info)
        node = ROOT
        while not access.is_over(sim_info):
            if node != ROOT and nodes[node, VISITS] < expand_after:
                break  # a young leaf: simulate from it, grow its children later
            seat = access.current_seat(sim_info)
            hand = access.hand_values(sim_info, seat)
            num_legal = count_placements(sim_info)
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
                    inv = 1.0 / nodes[child, VISITS]
                    log_avail = logs[avail] if avail < num_logs else np.log(avail)
                    score = values[child, seat] * inv + c * np.sqrt(log_avail * inv)
                    if node == ROOT:
                        score += prior_weight * root_prior[a] / (1.0 + nodes[child, VISITS])
                    if score > best_score:
                        best_score = score
                        best = child
                child = nodes[child, NEXT_SIBLING]
            limit = max(num_legal, 1)
            if widen > 0.0:  # progressive widening
                limit = min(limit, 1 + np.int64(widen * np.sqrt(nodes[node, VISITS])))
            if available < limit:  # an action of this world has no child yet
                if meta[COUNT] < capacity:
                    if node == ROOT and root_order_len > 0:
                        a = _first_untried(root_order, root_order_len, child_mask)
                    else:
                        rng, a = _pick_untried(sim_grid, sim_info, child_mask, np.int64(num_legal), greedy_expand, rng)
                    new = meta[COUNT]
                    meta[COUNT] = new + 1
                    _init_node(nodes, values, new, a, node, nodes[node, FIRST_CHILD])
                    nodes[node, FIRST_CHILD] = new
                    apply_action(sim_grid, sim_info, a)
                    node = new
                break
            apply_action(sim_grid, sim_info, nodes[best, ACTION])
            node = best
        rng, _ = rollout(sim_grid, sim_info, rng, epsilon, safe, max_placements)
        if not access.is_over(sim_info) and value_net.shape[0] > 0:
            evaluate_position(sim_grid, sim_info, value_net, value_features, value_hidden, value_best, reward)
        else:
            simulation_rewards(sim_info, reward, margin)
        while node != NO_NODE:
            nodes[node, VISITS] += 1
            for s in range(num_players):
                values[node, s] += reward[s]
            node = nodes[node, PARENT]
    return rng
