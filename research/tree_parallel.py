"""Issue 73, item 3: is tree-parallel search (threads growing ONE tree) worth building?

RESULTS.md: "2026-12-07, 12:13-12:40 UTC"
Verdict: no-go. Gate 1 passes (2 threads 1.85-1.86x one thread's simulations a second, 1.80-1.83x
the shipped kernel's), but only with availability counted per thread; gate 2 fails: at equal wall
time 2 cores score 0.494 [0.467, 0.522] against 1 (bar 0.53): a move gets 1.6x the simulations,
and per simulation the shared tree is weaker (0.474 [0.447, 0.502] at equal simulations). Nothing
in the product.

What it measures. ``ismcts`` (greedy expansion, rollout leaf) run by T Python threads on one
shared tree (`ParallelTree`): every thread runs a numba kernel that releases the GIL
(`search_tp`, ``nogil=True``) with its own workspace (world, scratch), rng, path and node pool
(a disjoint index range of the node arrays). Gate 1 (issue 73): simulations a second with 2
threads at least 1.7x one thread, same positions; gate 2 (only if gate 1 passes): at equal
wall time 2 cores against 1, 0.53 or more over 1,000 games (0.525 if the interval is above 0.5).

    PYTHONPATH=. python research/tree_parallel.py check   # 1 thread = shipped; 2 threads: sound tree, legal moves
    PYTHONPATH=. python research/tree_parallel.py gate    # gate 1: simulations a second, 20 positions x 7 repeats
    python evaluate.py --import research.tree_parallel --agents tree-parallel:threads=2,time=0.01 \
        ismcts:time=0.01 --games 1000 --seed 731 --workers 1 --no-plots --out results/tree_parallel
    # why gate 2 fails: equal simulations, and two variants (OPTS: none, vloss=0, thread_avail=false)
    python evaluate.py --import research.tree_parallel --agents tree-parallel:threads=2,iterations=7000,OPTS \
        ismcts:iterations=7000 --games 1000 --seed 731 --workers 1 --no-plots --out results/tree_parallel_equal_sims

``gate`` and ``check`` first wait (30 s polls, up to 40 minutes) until no pytest, evaluate.py,
cold_start, train.py or web_load process runs (`wait_quiet`), and say at the end whether one
started meanwhile. The matches were started with the same check by hand.

Figures, 2026-12-07, machine A (AMD EPYC with AVX-512, 2 cores), numba 0.68.1, quiet (no such
process before, during or after each run; load only this work's):

* gate 1 (12:13-12:14 UTC, again 12:39-12:40 UTC), 20,000 simulations a move, 20 positions
  (2 players, greedy play to turns 0-30), median of 7 alternated repeats per position, all
  positions (total simulations / total time):

  ===================================================  ================  ================
  variant                                              sims/s 12:13      sims/s 12:39
  ===================================================  ================  ================
  shipped kernel (`core.search_greedy_rollout`)        434,870           422,029
  1 thread (`search_tp`, atomic visits)                427,958           410,950
  2 threads, one tree (this file's defaults)           796,415 (1.86x)   759,913 (1.85x)
  2 threads, the straightforward port (shared AVAIL    516,164 (1.21x)   476,670 (1.16x)
  written at every node, plain visits, unpadded rows)
  2 threads, plain (racy) visit counts                 807,828 (1.89x)   772,045 (1.88x)
  2 threads, AVAIL shared (written by both threads)    603,985 (1.41x)   563,336 (1.37x)
  control: 2 threads, 2 separate trees of half each    983,256 (2.30x)   943,335 (2.30x)
  ===================================================  ================  ================

  (x: to 1 thread). 2 threads / 1 thread per position: median 1.84, range 1.40-2.02 (the
  shortest simulations, turn 30, scale worst); per repeat 1.82-1.89; against the shipped
  kernel 1.83x / 1.80x. At the match budget (``time=0.01``, the whole move, threads
  dispatched and joined): 7,101 / 6,791 simulations a move for ``ismcts``, 11,617 / 10,792
  for ``tree-parallel:threads=2`` (1.64x / 1.59x).
  Unofficial probes at 12:08-12:10 UTC, between and during test runs of another user of the
  machine, had the shared-tree variants 2-3x slower than this (the straightforward port at
  0.42x one thread) while the 2-tree control was unchanged: traffic on shared cache lines is
  what costs, and it varies with what else runs.
* gate 2 (12:14-12:20 UTC): ``tree-parallel:threads=2,time=0.01`` against ``ismcts:time=0.01``,
  1,000 games, seed 731: 0.494 [0.467, 0.522] (W 486, D 17, L 497), margin -19.6
  [-29.3, -9.4] points. Fails (bar 0.53).
* why (12:20-12:39 UTC), at equal simulations, 7,000 a move, 1,000 games, seed 731, the
  2-thread tree against ``ismcts:iterations=7000``: defaults 0.474 [0.447, 0.502], margin -33.3
  [-43.7, -23.1]; ``vloss=0`` 0.500 [0.474, 0.525], margin -22.0 [-32.1, -12.0];
  ``thread_avail=false`` 0.521 [0.493, 0.549], margin -14.8 [-24.9, -5.1]. A simulation of the
  shared tree is worth less than one of a single thread (every variant's margin is below 0):
  the evidence points at the per-thread availability that buys gate 1's speed, and perhaps
  at virtual loss (the intervals of the variants overlap).
  (For scale: ``ismcts`` at twice the simulations scores 0.547, `budget_ladder.py`.)
* `check` (12:39 UTC): 1 thread gives the shipped kernel's root visits on 10 positions, bit
  for bit, in every variant; 2 threads, 200 searches of 5,000 from 40 positions and 8 games
  at time=0.01: every move legal, every tree sound (no orphan, no duplicate child, no lock
  left); plain visit counts lose 26.8 root visits a search on average (max 187, 3.7%) and the
  root children's sum falls short by up to 332 (6.6%); atomic ones lose none.

How the threads share the tree (what may race, and why it is benign):

* *Node slots.* Thread t takes new nodes only from its pool ``[1 + t * P, 1 + (t + 1) * P)``
  (its own counter, `pool`): no two threads ever write the same slot. A full pool is a
  full tree for that thread: it simulates from the node it reached (as `core.select_step`).
* *Structure.* The children of a node are a linked list, prepended to by one writer at a
  time: a thread that would add a child takes the node's LOCK (a 7th column of the node
  array) with a real compare-and-swap (`_cas`, an LLVM ``cmpxchg`` through a numba
  intrinsic: numba has no atomics of its own, LLVM does). It is a try-lock: a thread that
  loses it does not wait, it follows the best child it already scored (or simulates from
  the node if it has none). The winner scans the children prepended since its first scan
  (the list only grows at its head, so they are exactly those in front of the head it saw),
  so two threads never add the same action twice, and widening's limit is re-checked. The
  new node is written completely, then published by a compare-and-swap of the parent's
  FIRST_CHILD (sequentially consistent: neither the compiler nor the CPU moves the node's
  initialisation after it), then the lock is released by a plain store (after the CAS).
  Readers do not lock: a reader sees either the old head (misses the newest child this
  once) or the new one, fully written. So the tree is never corrupted: no lost child, no
  duplicate action, no cycle; `check` walks every tree it builds to confirm it.
* *Visits* are counted by an atomic add (`_fetch_add`, ``lock add``; ``atomic=false``: a
  plain one): none is lost, for about 1.5% of the speed (the cache line moves either way).
* *Value sums* are updated with plain read-modify-write. Two threads adding to the same node
  at the same instant can lose one addition: a reward missing from a node's sums, or a
  virtual loss not given back. Rare (a window of a few instructions, mostly at the root,
  whose own values no choice reads), bounded, and they only shade UCB's scores.
* *Availability (AVAIL).* The shipped search adds 1 to every legal child's AVAIL at every
  node of every path: with two threads those writes keep every hot node's children's cache
  lines moving between the cores (the straightforward port: 1.2x at best, 0.4x in a probe).
  At the root every child is legal in every world (the observer's own hand), so its AVAIL is
  computed from the root's visits since it was added (CREATED, an 8th column) and never
  written: exact. Below the root each thread counts in an array of its own and scores with
  twice its count (``thread_avail``; exact with one thread): no shared write, an estimate.
* *Virtual loss.* On the way down every node of the path gets its visit at once and the
  mover's value ``-vloss``; the backup adds the rewards and gives the ``vloss`` back. The
  young-leaf test and progressive widening read VISITS - 1, the visits before this
  simulation, as the shipped core does: with one thread this is the shipped search.
* *Layout.* Node rows are 8 int64 (one cache line), value rows padded to 8, every per-thread
  array on lines of its own (``padded``).

The rest is the shipped core's parts, reused: `core.deal_world`, `core.ucb`,
`core.expand_greedy`, `core.rollout_leaf`, `core._init_node`, `core._first_untried`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time as _time
from concurrent.futures import ThreadPoolExecutor

if __name__ == "__main__":  # run as a script: run the module as `research.tree_parallel`, the name numba's
    from research.tree_parallel import main  # cache and the agent registry know it by (registered once)

    sys.exit(main())

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from agents.base import make, register
from agents.parameters import boolean, number, positive_int
from agents.search import core
from agents.search import tree as parts
from agents.search.core import ACTION, FIRST_CHILD, NEXT_SIBLING, NO_NODE, PARENT, ROOT, VISITS, AVAIL
from agents.search.mcts import ISMCTSAgent, show_search_parameters
from engine import GameState, access, rules
from engine.determinize import unseen_tiles
from engine.kernels import apply_action, count_placements
from engine.view import PlayerView

LOCK = parts.NODE_FIELDS  # a 7th column of the node array: 1 while a thread adds a child there
CREATED = LOCK + 1  # an 8th: the parent's visits before the simulation that added the node (`lazy` root AVAIL)
NODE_FIELDS = CREATED + 1  # 8 int64: a row is one 64-byte cache line (padded layout)
LINE = 64
NEXT, END = 0, 1  # a thread's pool: the next free slot, one past its last
MAX_PATH = 128  # deepest path a simulation walks (a game has at most 49 placements and its passes)
_PASS = rules.PASS_ACTION
_MAX_VALUE = rules.MAX_VALUE
BUSY = "pytest|evaluate.py|cold_start|train.py|web_load"


# --- the atomics: compare-and-swap and add (LLVM, through numba intrinsics) ----------------------
@intrinsic
def _cas(typingctx, array, row, col, expected, new):
    """``array[row, col]``: if it equals `expected`, set it to `new`, atomically (LLVM
    ``cmpxchg``, sequentially consistent); returns the value it held."""
    if not (isinstance(array, types.Array) and array.ndim == 2 and array.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        arrty = signature.args[0]
        ary = context.make_array(arrty)(context, builder, args[0])
        index = [context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2)]
        ptr = cgutils.get_item_pointer(context, builder, arrty, ary, index, wraparound=False)
        old = context.cast(builder, args[3], signature.args[3], types.int64)
        value = context.cast(builder, args[4], signature.args[4], types.int64)
        pair = builder.cmpxchg(ptr, old, value, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return types.int64(array, row, col, expected, new), codegen


@intrinsic
def _fetch_add(typingctx, array, row, col, delta):
    """``array[row, col] += delta``, atomically (LLVM ``atomicrmw add``, monotonic: atomic,
    no ordering; x86 ``lock add``); returns the value it held."""
    if not (isinstance(array, types.Array) and array.ndim == 2 and array.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        arrty = signature.args[0]
        ary = context.make_array(arrty)(context, builder, args[0])
        index = [context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2)]
        ptr = cgutils.get_item_pointer(context, builder, arrty, ary, index, wraparound=False)
        value = context.cast(builder, args[3], signature.args[3], types.int64)
        return builder.atomic_rmw("add", ptr, value, "monotonic")

    return types.int64(array, row, col, delta), codegen


# --- the kernels ---------------------------------------------------------------------------------
@njit(inline="always")
def _ucb(tree, work, params, node, child, seat, avail):
    """`core.ucb` with the child's AVAIL given (`lazy` root: computed, not read)."""
    visits = tree.nodes[child, VISITS]
    logs = work.logs
    inv = core.INVERSES[visits] if visits < core.INVERSES.shape[0] else 1.0 / visits
    log_avail = logs[avail] if avail < logs.shape[0] else np.log(avail)
    return tree.values[child, seat] * inv + params.c * np.sqrt(log_avail * inv)


@njit(inline="always")
def _scan(tree, work, params, node, start, stop, seat, hand, num_legal, child_mask, available, best, best_score,
          lazy, avail, scale):
    """`core.select_step`'s scan of the children from `start` up to `stop` (exclusive): the
    ones legal in this world get AVAIL += 1 and a bit in `child_mask`, and are scored.
    `lazy` at the root: every root child is legal in every world (the observer's own hand),
    so its AVAIL is the root's visits since it was added, computed, never written (the
    root's children's rows are then only written by the thread that follows one).
    `scale` > 0 (per-thread AVAIL): below the root this thread counts availability in its
    own array `avail` and scores with ``scale * avail`` (scale: the threads), an estimate
    of the shared count that no other thread writes (exact with one thread)."""
    nodes = tree.nodes
    child = start
    root_lazy = lazy and node == ROOT and params.prior == 0.0
    while child != stop:
        a = nodes[child, ACTION]
        if (a == _PASS and num_legal == 0) or (a != _PASS and (hand >> (a % _MAX_VALUE + 1)) & 1):
            available += 1
            child_mask[a >> 6] |= np.int64(1) << (a & 63)
            if root_lazy:
                score = _ucb(tree, work, params, node, child, seat, nodes[ROOT, VISITS] - nodes[child, CREATED])
            elif scale > 0:
                avail[child] += 1
                score = _ucb(tree, work, params, node, child, seat, max(scale * avail[child], 1))
            else:
                nodes[child, AVAIL] += 1
                score = core.ucb(tree, work, params, node, child, seat)
            if score > best_score:
                best_score = score
                best = child
        child = nodes[child, NEXT_SIBLING]
    return available, best, best_score


@njit(inline="always")
def _add_child_locked(tree, pool, node, a, head, avail):
    """Take a slot of this thread's pool, write the child of `node` by action `a` in front
    of `head` (the parent's first child now), publish it by a CAS of FIRST_CHILD (never
    fails: the caller holds the node's lock), release the lock."""
    nodes = tree.nodes
    new = pool[NEXT]
    pool[NEXT] = new + 1
    core._init_node(nodes, tree.values, new, a, node, head)
    nodes[new, LOCK] = 0
    nodes[new, CREATED] = nodes[node, VISITS] - 1
    avail[new] = 1  # (read only with per-thread AVAIL)
    _cas(nodes, node, FIRST_CHILD, head, new)
    nodes[node, LOCK] = 0
    return new


@njit(inline="always")
def select_step_tp(tree, pool, work, params, node, rng, lazy, avail, scale):
    """`core.select_step` (greedy expansion) on a shared tree: returns (rng, the child to
    follow or the new child, whether the descent stops there). Adding a child takes the
    node's lock (try-lock; the loser follows its best child) and re-scans the children
    added since the first scan (module doc)."""
    nodes, meta = tree.nodes, tree.meta
    info = work.info
    child_mask = work.scratch[parts.SCRATCH_CHILD_MASK:parts.SCRATCH_CHILD_MASK + 8]
    seat = access.current_seat(info)
    hand = access.hand_values(info, seat)
    num_legal = count_placements(info)
    for w in range(8):
        child_mask[w] = 0
    head = nodes[node, FIRST_CHILD]
    available, best, best_score = _scan(tree, work, params, node, head, NO_NODE, seat, hand, num_legal, child_mask,
                                        0, NO_NODE, -np.inf, lazy, avail, scale)
    limit = max(num_legal, 1)
    if params.widen > 0.0:  # progressive widening, on the visits before this simulation's own
        limit = min(limit, 1 + np.int64(params.widen * np.sqrt(nodes[node, VISITS] - 1)))
    if available >= limit:
        return rng, best, False
    if pool[NEXT] >= pool[END]:
        return rng, node, True  # this thread's pool is full: simulate from here
    if _cas(nodes, node, LOCK, 0, 1) != 0:  # another thread is adding a child here
        if best != NO_NODE:
            return rng, best, False
        return rng, node, True
    now = nodes[node, FIRST_CHILD]  # read after the lock: children added since the scan are in front
    available, best, best_score = _scan(tree, work, params, node, now, head, seat, hand, num_legal, child_mask,
                                        available, best, best_score, lazy, avail, scale)
    if available >= limit:
        nodes[node, LOCK] = 0
        return rng, best, False
    if node == ROOT and meta[parts.ORDER_LEN] > 0:
        a = core._first_untried(tree.order, meta[parts.ORDER_LEN], child_mask)
    else:
        rng, a = core.expand_greedy(work, child_mask, np.int64(num_legal), rng)
    return rng, _add_child_locked(tree, pool, node, a, now, avail), True


@njit(inline="always")
def _enter(tree, path, depth, node, seat, vloss, atomic):
    """Put `node` on the path with its virtual loss: its visit now (`atomic`: by an atomic
    add, no visit is ever lost), `seat`'s value -vloss (seat -1: the root, no value)."""
    if atomic:
        _fetch_add(tree.nodes, node, VISITS, 1)
    else:
        tree.nodes[node, VISITS] += 1
    if seat >= 0:
        tree.values[node, seat] -= vloss
    path[0, depth] = node
    path[1, depth] = seat
    return depth + 1


@njit(inline="always")
def descend_tp(tree, pool, path, work, params, rng, vloss, lazy, avail, scale, atomic):
    """`core.descend` with virtual loss on a shared tree: returns (rng, the path's length)."""
    nodes = tree.nodes
    node = ROOT
    depth = _enter(tree, path, 0, ROOT, -1, vloss, atomic)
    while not access.is_over(work.info) and depth < MAX_PATH:
        if node != ROOT and nodes[node, VISITS] - 1 < params.expand_after:
            break  # a young leaf (its visits before this simulation's)
        seat = access.current_seat(work.info)
        rng, nxt, stop = select_step_tp(tree, pool, work, params, node, rng, lazy, avail, scale)
        if nxt != node:
            apply_action(work.grid, work.info, nodes[nxt, ACTION])
            depth = _enter(tree, path, depth, nxt, seat, vloss, atomic)
        node = nxt
        if stop:
            break
    return rng, depth


@njit(inline="always")
def backup_tp(tree, path, depth, reward, num_players, vloss):
    """Add the rewards along the path and give back its virtual losses (the visits were
    counted on the way down)."""
    values = tree.values
    for d in range(depth):
        node = path[0, d]
        for s in range(num_players):
            values[node, s] += reward[s]
        seat = path[1, d]
        if seat >= 0 and vloss != 0.0:
            values[node, seat] += vloss


@njit(nogil=True, cache=True, _nrt=False)
def search_tp(root_grid, root_info, observer, iterations, params, rng, tree, work, pool, path, vloss, lazy, avail,
              scale, atomic):
    """`iterations` simulations of `core.run` (deal_world, ucb, expand_greedy, rollout_leaf)
    on the shared tree, by one thread (its own work, pool, path, rng and `avail`; `lazy`:
    the root's AVAIL computed; `scale` > 0: per-thread AVAIL below the root, see `_scan`;
    `atomic`: visits counted by atomic adds). Returns the rng."""
    num_players = access.num_players(root_info)
    tiles = work.scratch[parts.SCRATCH_TILES:parts.SCRATCH_TILES + rules.NUM_TILES]
    num_unseen = np.int64(0)
    if observer >= 0:
        num_unseen = unseen_tiles(root_grid, root_info, observer,
                                  work.scratch[parts.SCRATCH_COUNTS:parts.SCRATCH_COUNTS + 11], tiles)
    for _ in range(iterations):
        rng = core.deal_world(root_grid, root_info, observer, tiles, num_unseen, work, None, rng)
        rng, depth = descend_tp(tree, pool, path, work, params, rng, vloss, lazy, avail, scale, atomic)
        rng = core.rollout_leaf(work, params, None, rng)
        backup_tp(tree, path, depth, work.reward, num_players, vloss)
    return rng


# --- the threads -------------------------------------------------------------------------------
def _thread_seed(seed, t: int) -> np.uint64:
    return np.uint64((int(seed) + t * 0x9E3779B97F4A7C15) % (1 << 64))


def _aligned(shape, dtype):
    """Zeros of `shape` starting on a cache line, padded to whole lines (no two threads'
    arrays share a line)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buffer = np.zeros(size + 2 * LINE, dtype=np.uint8)
    start = -buffer.ctypes.data % LINE
    return buffer[start:start + size].view(dtype).reshape(shape)


def _workspace():
    """`tree.new_workspace` on cache lines of its own (the ln table is shared, read only)."""
    shared = parts.new_workspace()
    return parts.Workspace(*(_aligned(a.shape, a.dtype) for a in shared[:4]), shared.logs)


class ParallelTree:
    """One tree of `threads` pools of `pool_size` nodes, the threads' scratch, and the
    threads (the caller's and `threads - 1` of a pool, kept between searches).
    `lazy_root`: the root children's AVAIL computed (`_scan`); `padded`: a node's row and its
    values' row each one cache line (values padded to 8 columns); `thread_avail`: AVAIL
    below the root counted per thread, scaled by the threads (`_scan`); `atomic`: visits
    counted by atomic adds (`_enter`)."""

    def __init__(self, threads: int, pool_size: int, vloss: float = 1.0, lazy_root: bool = True,
                 padded: bool = True, thread_avail: bool = True, atomic: bool = True) -> None:
        self.threads, self.pool_size, self.vloss = threads, pool_size, float(vloss)
        self.atomic = np.bool_(atomic)
        self.lazy = np.bool_(lazy_root)
        self.scale = np.int64(threads if thread_avail else 0)
        capacity = 1 + threads * pool_size
        if padded:
            nodes, values = _aligned((capacity, NODE_FIELDS), np.int64), _aligned((capacity, 8), np.float64)
        else:
            nodes, values = np.zeros((capacity, NODE_FIELDS), np.int64), np.zeros((capacity, 4), np.float64)
        self.tree = parts.Tree(nodes, values, np.zeros(parts.META_LEN, dtype=np.int64),
                               np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64),
                               np.zeros(rules.NUM_ACTIONS, dtype=np.float64))
        self.works = [_workspace() for _ in range(threads)]
        self.pools = [_aligned((8,), np.int64) for _ in range(threads)]
        for t, pool in enumerate(self.pools):
            pool[END] = 1 + (t + 1) * pool_size
        self.paths = [_aligned((2, MAX_PATH), np.int64) for _ in range(threads)]
        self.avails = [_aligned((capacity,), np.int64) for _ in range(threads)]
        self.executor = ThreadPoolExecutor(threads - 1) if threads > 1 else None
        self.done = [0] * threads

    def reset(self) -> None:
        """A lone root (the root order is left as it is); every pool empty."""
        tree = self.tree
        core.reset_tree(tree.nodes, tree.values, tree.meta)
        tree.nodes[ROOT, LOCK] = 0
        for t, pool in enumerate(self.pools):
            for avail in self.avails:  # the per-thread counts of the last search's nodes
                avail[1 + t * self.pool_size:pool[NEXT]] = 0
            pool[NEXT] = 1 + t * self.pool_size

    def _call(self, t, grid, info, observer, n, params, rng):
        return search_tp(grid, info, observer, n, params, np.uint64(rng), self.tree, self.works[t], self.pools[t],
                         self.paths[t], self.vloss, self.lazy, self.avails[t], self.scale, self.atomic)

    def _fixed(self, t, grid, info, observer, n, params, rng):
        self._call(t, grid, info, observer, n, params, rng)
        self.done[t] = n

    def _until(self, t, grid, info, observer, deadline, params, rng):
        """Simulate in growing chunks until `deadline` (`MCTSAgent._simulate_until`)."""
        done, chunk = 0, 16
        while True:
            start = _time.perf_counter()
            rng = self._call(t, grid, info, observer, chunk, params, rng)
            done += chunk
            now = _time.perf_counter()
            left = deadline - now
            if left <= 0:
                self.done[t] = done
                return
            per = max(now - start, 1e-7) / chunk
            chunk = int(max(1, min(4 * chunk, left / 4 / per)))

    def search(self, grid, info, observer, params, seed, iterations=None, seconds=None) -> int:
        """Search from a fresh tree: `iterations` split between the threads, or every thread
        until `seconds` from now. Returns the simulations run."""
        self.reset()
        observer = np.int64(observer)
        if seconds is None:
            shares = [iterations // self.threads + (t < iterations % self.threads) for t in range(self.threads)]
            jobs = [(self._fixed, np.int64(shares[t])) for t in range(self.threads)]
        else:
            deadline = _time.perf_counter() + seconds
            jobs = [(self._until, deadline) for _ in range(self.threads)]
        futures = [self.executor.submit(fn, t, grid, info, observer, arg, params, _thread_seed(seed, t))
                   for t, (fn, arg) in enumerate(jobs) if t > 0]
        fn, arg = jobs[0]
        fn(0, grid, info, observer, arg, params, _thread_seed(seed, 0))
        for f in futures:
            f.result()
        if self.lazy:  # write the root children's AVAIL that `_scan` computed
            nodes = self.tree.nodes
            kids = self.root_children()[3]
            nodes[kids, AVAIL] = nodes[ROOT, VISITS] - nodes[kids, CREATED]
        return sum(self.done)

    def root_children(self):
        """(actions, visits, value sums, nodes) of the root's children, by walking its list."""
        nodes, values = self.tree.nodes, self.tree.values
        kids = []
        child = nodes[ROOT, FIRST_CHILD]
        while child != NO_NODE:
            kids.append(child)
            child = nodes[child, NEXT_SIBLING]
        kids = np.array(kids, dtype=np.int64)
        return nodes[kids, ACTION], nodes[kids, VISITS], values[kids], kids


# --- the agent -----------------------------------------------------------------------------------
@register("tree-parallel")
class TreeParallelAgent(ISMCTSAgent):
    """``ismcts`` (greedy expansion, rollout leaf) on `threads` threads sharing one tree
    (module doc). `pool`: nodes per thread (default: the iterations, or 32,768 with `time`);
    `lazy`, `padded`, `thread_avail`, `atomic`: `ParallelTree`'s."""

    def __init__(self, threads: int = 2, vloss: float = 1.0, pool: int | None = None, lazy: bool = True,
                 padded: bool = True, thread_avail: bool = True, atomic: bool = True, settings=None,
                 **parameters) -> None:
        super().__init__(settings=settings, **parameters)
        if self._leaf != "rollout" or self.settings.expand != "greedy":
            raise ValueError("tree-parallel: greedy expansion and a rollout leaf only")
        self.threads = positive_int("threads", threads)
        self.vloss = number("vloss", vloss)
        size = pool or (self.iterations if self.time is None else 1 << 15)
        self._par = ParallelTree(self.threads, positive_int("pool", size), self.vloss, boolean("lazy", lazy),
                                 boolean("padded", padded), boolean("thread_avail", thread_avail),
                                 boolean("atomic", atomic))
        self._tree = self._par.tree

    def compile_parts(self) -> tuple[str, ...]:
        return ()  # compiled whole, by `warm_up`

    def _run(self, grid, info, observer, iterations, seconds, rng):
        done = self._par.search(grid, info, observer, self._params, rng, iterations=iterations, seconds=seconds)
        return rng, done

    def _root_stats(self, seat):
        actions, visits, values, _ = self._par.root_children()
        return actions, visits, values[:, seat]


show_search_parameters(TreeParallelAgent)


# --- checks and measurements ----------------------------------------------------------------------
def wait_quiet(poll: float = 30.0, limit: float = 2400.0) -> bool:
    """Poll until no busy process (BUSY) runs, up to `limit` seconds; True when quiet."""
    start = _time.time()
    while True:
        found = subprocess.run(["pgrep", "-af", BUSY], capture_output=True, text=True).stdout
        mine = str(os.getpid())
        busy = [line for line in found.splitlines() if line and not line.startswith(mine + " ") and "pgrep" not in line]
        if not busy:
            print(f"quiet at {_utc()} (load {os.getloadavg()[0]:.2f})", flush=True)
            return True
        if _time.time() - start > limit:
            print(f"NOT quiet after {limit:.0f} s: {busy}", flush=True)
            return False
        print(f"busy ({len(busy)}: {busy[0][:100]}), waiting", flush=True)
        _time.sleep(poll)


def _utc() -> str:
    return _time.strftime("%Y-%m-%d %H:%M:%S UTC", _time.gmtime())


def positions(count: int = 20, max_turn: int = 30, players: int = 2):
    """`count` positions: seeded deals played by `greedy` to turns spread over 0..max_turn
    (a game over before that: its last position), as the mover's view."""
    out = []
    greedy = make("greedy", seed=0)
    for i in range(count):
        state = GameState.new(players, seed=1000 + i)
        turn = round(i * max_turn / max(count - 1, 1))
        while state.turn < turn:
            before = state.clone()
            state.step(greedy.act(None, PlayerView(state, state.current_player)))
            if state.is_over:
                state = before
                break
        out.append(PlayerView(state, state.current_player))
    return out


def walk_tree(par: ParallelTree) -> dict:
    """Walk the tree from the root; check it is a tree (every used slot reached exactly once,
    parents consistent, no repeated action among siblings, no lock held). Returns counts."""
    nodes = par.tree.nodes
    seen = np.zeros(nodes.shape[0], dtype=bool)
    stack, reached, dup = [ROOT], 0, 0
    while stack:
        node = stack.pop()
        assert not seen[node], f"node {node} reached twice (a cycle or a shared child)"
        seen[node] = True
        reached += 1
        assert nodes[node, LOCK] == 0, f"node {node} left locked"
        child, actions = nodes[node, FIRST_CHILD], set()
        while child != NO_NODE:
            assert nodes[child, PARENT] == node, f"child {child} of {node} names parent {nodes[child, PARENT]}"
            dup += nodes[child, ACTION] in actions
            actions.add(int(nodes[child, ACTION]))
            stack.append(child)
            child = nodes[child, NEXT_SIBLING]
    used = 1 + sum(int(p[NEXT] - (1 + t * par.pool_size)) for t, p in enumerate(par.pools))
    return {"reached": reached, "used": used, "orphans": used - reached, "duplicates": dup}


def check(iterations: int = 5000, moves: int = 200) -> None:
    """1 thread: the shipped kernel's root visits (bit for bit at vloss 0), sums exact; 2
    threads: `moves` searches from varied positions, plain and atomic visit counts, the tree
    walked after each, lost visits counted; then whole games at time=0.01, every move legal."""
    views = positions(40, 34)
    for v, view in enumerate(views[:10]):
        _one_thread(view, iterations, np.uint64(77 + v), v)
    for atomic in ("false", "true"):
        _two_threads(make(f"tree-parallel:threads=2,iterations={iterations},atomic={atomic}", seed=3), views, moves)
    games(8)


def _one_thread(view, iterations, seed, label) -> None:
    """The shipped kernel against 1 thread of `search_tp` at (vloss, lazy root, per-thread AVAIL)."""
    grid, info = view.public_arrays()
    shipped = ISMCTSAgent(iterations=iterations)
    shipped.act_with_visits(view)  # sets the root order (as a move does), then search it again:
    shipped._run(grid, info, view.seat, iterations, None, seed)
    a0, n0, _ = shipped._root_stats(view.seat)
    same = []
    for vloss, lazy, own in ((0.0, False, False), (0.0, True, False), (0.0, True, True), (1.0, True, True)):
        par = ParallelTree(1, iterations, vloss, lazy, thread_avail=own)
        par.tree.order[:] = shipped._tree.order
        par.tree.meta[parts.ORDER_LEN] = shipped._tree.meta[parts.ORDER_LEN]
        par.search(grid, info, view.seat, shipped._params, seed, iterations=iterations)
        a1, n1, _, _ = par.root_children()
        same.append(dict(zip(a0.tolist(), n0.tolist())) == dict(zip(a1.tolist(), n1.tolist())))
        assert par.tree.nodes[ROOT, VISITS] == iterations and n1.sum() == iterations, "1 thread: visit sums"
        assert walk_tree(par)["orphans"] == 0
        assert same[-1] or vloss != 0.0, f"position {label}: 1 thread at vloss 0 differs from the shipped kernel"
    print(f"1 thread, position {label:2d} (turn {view.turn:2d}): root visits the shipped kernel's at "
          f"(vloss, lazy root, per-thread AVAIL) = (0, F, F) {same[0]}, (0, T, F) {same[1]}, (0, T, T) {same[2]}, "
          f"(1, T, T) {same[3]}; visit sums exact")


def _two_threads(agent, views, moves) -> None:
    """`moves` searches of `agent` (2 threads) over `views`: legal moves, the tree sound, and
    the visits lost: the root's against the simulations, its children's sum against them."""
    lost, short, illegal = [], [], 0
    for m in range(moves):
        view = views[m % len(views)]
        action, visits, _ = agent.act_with_visits(view)
        illegal += action not in view.legal_actions()
        counts = walk_tree(agent._par)
        assert counts["orphans"] == 0 and counts["duplicates"] == 0, counts
        if agent.last_iterations:  # (a forced move is not searched)
            lost.append(agent.last_iterations - int(agent._tree.nodes[ROOT, VISITS]))
            short.append(agent.last_iterations - int(visits.sum()))
    lost, short = np.array(lost), np.array(short)
    n = agent.iterations
    print(f"2 threads, atomic visits {agent._par.atomic}: {moves} moves ({len(lost)} searched) of {n} simulations: "
          f"illegal moves {illegal}, orphans 0, duplicate children 0; root visits lost: mean {lost.mean():.1f}, "
          f"max {lost.max()} ({lost.max() / n:.2%}); root children's sum short: mean {short.mean():.1f}, "
          f"max {short.max()} ({short.max() / n:.2%})")
    assert illegal == 0


def games(count: int) -> None:
    """Whole 2-player games, `tree-parallel:threads=2,time=0.01` against `greedy`; every move checked legal."""
    agent, other = make("tree-parallel:threads=2,time=0.01", seed=5), make("greedy", seed=6)
    moves = sims = 0
    for g in range(count):
        state = GameState.new(2, seed=500 + g)
        while not state.is_over:
            seat = state.current_player
            view = PlayerView(state, seat)
            player = agent if (seat + g) % 2 == 0 else other
            action = player.act(None, view)
            assert state.is_legal(action), state.illegal_message(action)
            if player is agent:
                moves, sims = moves + 1, sims + agent.last_iterations
                assert walk_tree(agent._par)["orphans"] == 0
            state.step(action)
    print(f"{count} games at time=0.01: {moves} moves, all legal, {sims / max(moves, 1):.0f} simulations a move "
          f"(both threads)")


class SeparateTrees(TreeParallelAgent):
    """The control: 2 threads, each on a tree of its own (nothing shared, half the
    simulations each): the speed-up two threads can reach on this machine at all."""

    def __init__(self, iterations: int) -> None:
        super().__init__(threads=1, iterations=iterations)
        self._other = ParallelTree(1, iterations)
        self._executor = ThreadPoolExecutor(1)

    def _run(self, grid, info, observer, iterations, seconds, rng):
        other = self._other.tree
        other.order[:] = self._tree.order
        other.meta[parts.ORDER_LEN] = self._tree.meta[parts.ORDER_LEN]
        half = iterations // 2
        future = self._executor.submit(self._other.search, grid, info, observer, self._params, _thread_seed(rng, 1),
                                       iterations=half)
        self._par.search(grid, info, observer, self._params, rng, iterations=iterations - half)
        future.result()
        return rng, iterations


# the variants timed by `gate`: (label, threads, tree-parallel parameters); None: the shipped kernel
VARIANTS = (("shipped", None, None), ("1T", 1, ""), ("2T", 2, ""),
            ("2T plain", 2, "lazy=false,padded=false,thread_avail=false,atomic=false"),
            ("2T racy", 2, "atomic=false"), ("2T shared AVAIL", 2, "thread_avail=false"), ("2 trees", None, "trees"))


def _runner(threads, options, iterations):
    if threads is None:
        return SeparateTrees(iterations) if options == "trees" else ISMCTSAgent(iterations=iterations)
    return make(f"tree-parallel:threads={threads},iterations={iterations}" + (f",{options}" if options else ""))


def gate(iterations: int = 20000, repeats: int = 7, count: int = 20) -> dict:
    """Simulations a second of each of `VARIANTS` (the shipped kernel, 1 thread, 2 threads
    and their variants, the control of 2 separate trees) on `count` positions, alternated
    (the order rotated at every position and repeat); the median time of each position."""
    views = positions(count, 30)
    runners = {label: _runner(threads, options, iterations) for label, threads, options in VARIANTS}
    for agent in runners.values():
        agent.seed(0)
        agent.act_with_visits(views[0])  # compile / load
    names = list(runners)
    times = {name: np.zeros((count, repeats)) for name in names}
    for r in range(repeats):
        for p, view in enumerate(views):
            grid, info = view.public_arrays()
            for k in range(len(names)):
                name = names[(k + r + p) % len(names)]
                agent = runners[name]
                agent._tree.meta[parts.ORDER_LEN] = 0
                agent._rank_root(view)
                start = _time.perf_counter()
                agent._run(grid, info, view.seat, iterations, None, np.uint64(1 + 100 * r + p))
                times[name][p, r] = _time.perf_counter() - start
        print(f"repeat {r + 1}/{repeats} done {_utc()}, load {os.getloadavg()[0]:.2f}", flush=True)
    total = _gate_table(views, iterations, repeats, names, times)
    at_budget(views, repeats)
    return total


def at_budget(views, repeats: int, seconds: float = 0.01) -> None:
    """Simulations a move at the match's budget (`time`: the whole move, threads started and
    joined), `ismcts` against `tree-parallel` with 2 threads, alternated; means."""
    agents = {"ismcts": make(f"ismcts:time={seconds}", seed=1), "tree-parallel": make(
        f"tree-parallel:threads=2,time={seconds}", seed=1)}
    sims = {name: [] for name in agents}
    for agent in agents.values():
        agent.act_with_visits(views[0])
    for r in range(repeats):
        for p, view in enumerate(views):
            for name in (list(agents) if (r + p) % 2 == 0 else list(agents)[::-1]):
                agents[name].act_with_visits(view)
                sims[name].append(agents[name].last_iterations)
    a, b = np.mean(sims["ismcts"]), np.mean(sims["tree-parallel"])
    print(f"at time={seconds} ({len(views)} positions x {repeats}): ismcts {a:.0f} simulations a move, "
          f"tree-parallel:threads=2 {b:.0f} ({b / a:.2f}x)")


def _gate_table(views, iterations, repeats, names, times) -> dict:
    """Print simulations a second per position and in all (the total simulations over the
    total of the median times); returns the totals."""
    rate = {name: iterations / np.median(t, axis=1) for name, t in times.items()}  # per position
    total = {name: iterations * len(views) / np.median(t, axis=1).sum() for name, t in times.items()}
    print(f"\nsimulations a second, {iterations} a move, {len(views)} positions (2 players, turns 0-30), the median "
          f"of {repeats} alternated repeats per position")
    print(f"{'position':>8} {'turn':>4} " + " ".join(f"{n:>15}" for n in names) + f" {'2T/1T':>6} {'2T/shipped':>10}")
    for p, view in enumerate(views):
        print(f"{p:>8} {view.turn:>4} " + " ".join(f"{rate[n][p]:>15.0f}" for n in names)
              + f" {rate['2T'][p] / rate['1T'][p]:>6.2f} {rate['2T'][p] / rate['shipped'][p]:>10.2f}")
    print(f"{'all':>8} {'':>4} " + " ".join(f"{total[n]:>15.0f}" for n in names)
          + f" {total['2T'] / total['1T']:>6.2f} {total['2T'] / total['shipped']:>10.2f}")
    print("ratios to 1T (all): " + ", ".join(f"{n} {total[n] / total['1T']:.2f}" for n in names))
    ratios = rate["2T"] / rate["1T"]
    print(f"2T/1T per position: median {np.median(ratios):.2f}, min {ratios.min():.2f}, max {ratios.max():.2f}")
    per_repeat = times["1T"].sum(axis=0) / times["2T"].sum(axis=0)
    print("2T/1T in each repeat (all positions): " + ", ".join(f"{x:.2f}" for x in per_repeat))
    ratio = total["2T"] / total["1T"]
    print(f"gate 1 (2 threads >= 1.7x one thread): {ratio:.2f}x, {'PASS' if ratio >= 1.7 else 'FAIL'}")
    return total


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["check", "gate"])
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)
    print(f"started {_utc()}", flush=True)
    if not args.no_wait:
        wait_quiet()
    if args.what == "check":
        check(args.iterations or 5000)
    else:
        gate(args.iterations or 20000, args.repeats)
    busy = subprocess.run(["pgrep", "-af", BUSY], capture_output=True, text=True).stdout.splitlines()
    busy = [line for line in busy if not line.startswith(f"{os.getpid()} ") and "pgrep" not in line]
    print(f"finished {_utc()}; at the end {'busy: ' + busy[0][:100] if busy else 'still quiet'}", flush=True)

