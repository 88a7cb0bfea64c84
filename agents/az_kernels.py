"""Batched PUCT search over determinized worlds, for AlphaZero-style agents.

B searches run in lockstep, one per game (self-play) or one in total (an agent). Each
simulation of search b samples a world consistent with the root mover's information
(`engine.determinize.sample_world`), descends the tree by PUCT over the actions legal in
that world, and stops at a new node, whose observation (from the seat to move there)
and legal mask are written out. Python evaluates all B leaves with the network in one
batch, then `expand_and_backup` stores the priors and backs the value up the path.
This is single-observer information-set MCTS (one tree keyed by action sequences) with
network priors and leaf values instead of rollouts.

Tree storage is dense per node (mctx style): ``child``, ``visits``, ``value_sum`` and
``prior`` are (B, max_nodes, num_actions) arrays; node 0 is the root. ``value_sum`` of
an edge holds the total value *for the seat that chose that edge*.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import kernels, rules
from engine.determinize import sample_world
from engine.access import current_seat, is_over, num_players
from env.observation import encode_into

UNEXPANDED = -1
MAX_DEPTH = 128


@njit(cache=True)
def reset_trees(child, visits, value_sum, prior, node_count, node_visits, expanded):
    child[:] = -1
    visits[:] = 0
    value_sum[:] = 0
    prior[:] = 0
    node_count[:] = 1
    node_visits[:] = 0
    expanded[:] = False


@njit(inline="always", cache=True)
def _select(child, visits, value_sum, prior, node_visits, b, node, legal, num_legal, c_puct):
    """The PUCT choice among the actions legal in this world."""
    sqrt_n = np.sqrt(node_visits[b, node] + 1.0)
    best = -1e30
    best_a = legal[0]
    for k in range(num_legal):
        a = legal[k]
        n = visits[b, node, a]
        q = value_sum[b, node, a] / n if n > 0 else 0.0
        u = q + c_puct * prior[b, node, a] * sqrt_n / (1.0 + n)
        if u > best:
            best = u
            best_a = a
    return best_a


@njit(cache=True)
def select_leaves(root_grid, root_info, active, rng, child, visits, value_sum, prior, node_count,
                  node_visits, expanded, c_puct, sim_grid, sim_info, legal, path_nodes, path_actions,
                  path_movers, path_len, leaf, leaf_obs, leaf_mask, terminal_values, scratch):
    """One simulation step for every active search b: sample a world, descend, and write
    the leaf to evaluate (or the terminal rewards when the world's game is over)."""
    for b in range(root_grid.shape[0]):
        if not active[b]:
            continue
        seat = current_seat(root_info[b])
        rng[b] = sample_world(root_grid[b], root_info[b], seat, rng[b], sim_grid[b], sim_info[b], scratch[b])
        g = sim_grid[b]
        info = sim_info[b]
        node = 0
        depth = 0
        terminal_values[b, 0] = np.nan
        while True:
            if is_over(info):
                kernels.rewards(info, terminal_values[b])
                break
            if not expanded[b, node]:
                break
            n = kernels.legal_placements(g, info, legal[b])
            if n == 0:
                legal[b, 0] = rules.PASS_ACTION
                n = 1
            a = _select(child, visits, value_sum, prior, node_visits, b, node, legal[b], n, c_puct)
            path_nodes[b, depth] = node
            path_actions[b, depth] = a
            path_movers[b, depth] = current_seat(info)
            depth += 1
            kernels.apply_action(g, info, a)
            nxt = child[b, node, a]
            if nxt < 0:
                if node_count[b] < child.shape[1] and depth < MAX_DEPTH:
                    nxt = node_count[b]
                    node_count[b] += 1
                    child[b, node, a] = nxt
                else:  # the tree is full: evaluate this world's state without a new node
                    node = -1
                    break
            node = nxt
        path_len[b] = depth
        leaf[b] = node
        encode_into(g, info, current_seat(info), leaf_obs[b])
        kernels.legal_mask(g, info, leaf_mask[b])


@njit(cache=True)
def expand_and_backup(active, child, visits, value_sum, prior, node_visits, expanded, leaf, leaf_priors,
                      leaf_values, terminal_values, path_nodes, path_actions, path_movers, path_len,
                      sim_info):
    """Store the leaf priors and back the leaf's value up the path of every active search.
    leaf_values (B, 4) are seat-rotated from the leaf's mover (slot 0 = mover)."""
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        n = num_players(sim_info[b])
        values = np.zeros(4)
        if not np.isnan(terminal_values[b, 0]):
            for s in range(n):
                values[s] = terminal_values[b, s]
        else:
            mover = current_seat(sim_info[b])
            for k in range(n):
                values[(mover + k) % n] = leaf_values[b, k]
            node = leaf[b]
            if node >= 0 and not expanded[b, node]:
                for a in range(leaf_priors.shape[1]):
                    prior[b, node, a] = leaf_priors[b, a]
                expanded[b, node] = True
        # who chose each edge: replay the movers along the path from the root's mover
        for d in range(path_len[b]):
            node = path_nodes[b, d]
            a = path_actions[b, d]
            chooser = path_movers[b, d]
            visits[b, node, a] += 1
            value_sum[b, node, a] += values[chooser]
            node_visits[b, node] += 1
