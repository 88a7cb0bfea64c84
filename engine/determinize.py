"""Sampling full worlds consistent with what one seat knows (for search agents).

A seat knows the board, its own hand, every hand size, the bag size, what every pass
told (`GameState.pass_facts`) and, in the team variant, the tile its partner shows.
Everything else (the other hands, the bag order, the 3 removed tiles) is an arrangement
of the *unseen tiles*: the 40 tiles minus the board, minus its own hand, minus the
partner's shown tile. A sampled world is a uniformly random arrangement *conditioned on
the passes*: a seat passes only when none of its tiles fits, so each seat with a pass
fact (cap, held) gets at least `held` tiles above `cap`. It is also conditioned on the
game going on: while it is not over and the seat cannot place, some other seat can.
(The worlds of a finished game are not conditioned on its end: search never asks.)

How the condition is met (exact conditional sampling, with a sound fallback):

* No seat has a pass fact and the seat can place (most positions): one Fisher-Yates
  shuffle, dealt in order, as if nothing else were known.
* Otherwise the constrained hands are drawn one after the other, highest cap first, each
  from the tiles still in the pool and conditioned on its own fact: the number of its
  tiles above its cap is drawn from the hypergeometric law truncated to >= held, then
  that many tiles above the cap and the rest below it, uniformly. The rest of the pool
  is shuffled into the other hands, the bag and the removed tiles. This proposal
  differs from the exact conditional law only by the factor prod Z_i over the hands
  drawn second and later (Z_i: the chance, before its draw, that hand i meets its fact
  from the pool the earlier hands left), so a world accepted with probability prod Z_i
  is an exact draw. With one constrained hand (always, in 2-player games) every world
  is accepted. A world in which nobody could place while the real game goes on is
  rejected as well, which keeps the draw exact.
* After `MAX_TRIES` rejections (several tight facts at once) the fallback deals each
  constrained hand exactly `held` random tiles above its cap, highest cap first (the
  sets of tiles above the caps are nested, so this never runs out while the state is
  consistent), then deals everything else at random. It honours every fact; it is
  exact whenever every constrained hand is wholly known to be above its cap (right after
  a pass) and slightly biased towards fewer high tiles otherwise. It does not retry for
  the game going on (a world where nobody can place just ends at its next turn).

`sample_world` reads only the public part of the state, so two states that differ
only in hidden information give the same worlds for the same random stream. Everything
runs in numba without allocating.
"""

from __future__ import annotations

import math

import numpy as np

from . import kernel_cache, rules
from .kernels import add_to_hand, can_place_now, copy_state, helper, ix, kernel, rng_below, rng_next
from .layout import (BAG_POS, DEAL, HAND, HAND_MASK, HAND_SIZE, NUM_PLAYERS, OVER, PAD_OF_CELL,
                     PASS_CAP, PASS_HELD, SHOWN, TEAM, VAL)

kernel_cache.register(__name__, *kernel_cache.ENGINE)

_NUM_TILES = rules.NUM_TILES
SCRATCH_LEN = 64  # int64 scratch a caller passes in, so the kernel allocates nothing
# Proposals tried before the fallback deal. A proposal costs about as much as a plain
# deal and is rejected only when two or more hands are constrained at once.
MAX_TRIES = 32
_TWO_TO_MINUS_53 = 1.0 / 2.0**53  # 53 random bits -> a uniform float in [0, 1)
# BINOMIAL[n, k] = n choose k, exact in float64 for n <= 40
BINOMIAL = np.array([[math.comb(n, k) for k in range(_NUM_TILES + 1)] for n in range(_NUM_TILES + 1)],
                    dtype=np.float64)


@helper
def unseen_counts_into(grid, info, seat, counts):
    """counts[v] = how many tiles of value v the seat has not seen (v = 1..10); for
    kernels (Python code calls `unseen_counts`). Reads only what the seat sees."""
    for v in range(1, 11):
        counts[v] = 4 - info[HAND + seat * 11 + v]
    counts[0] = 0
    for c in range(49):
        counts[grid[PAD_OF_CELL[c], VAL]] -= 1
    counts[0] = 0
    partner = rules.partner(seat)
    if info[TEAM] == 1 and info[SHOWN + partner] > 0:
        counts[info[SHOWN + partner]] -= 1


@helper
def unseen_tiles(grid, info, seat, counts, tiles):
    """Write the tiles `seat` has not seen into `tiles` (sorted); return how many.
    `counts` (length >= 11) is scratch. Reads only what the seat sees."""
    unseen_counts_into(grid, info, seat, counts)
    n = np.int64(0)  # typed, not the literal 0: a caller could pass it on as Literal[int](0), a signature more
    for v in range(1, 11):
        for _ in range(counts[v]):
            tiles[n] = v
            n += 1
    return n


@helper
def deal_unseen(grid, info, seat, tiles, n, rng, out_grid, out_info):
    """Copy the state into (out_grid, out_info) and deal the `n` unseen `tiles` afresh
    (they are reordered in place) to the other hands, the bag and the removed tiles,
    honouring the pass facts (see the module doc). The consumed part of the deal (initial
    hands and drawn tiles, hidden history) is zeroed. Returns the advanced rng. The copy
    is inlined into the caller; the deal is a kernel of its own (`deal_copied`): inlined,
    it cost every search kernel most of its compile time."""
    copy_state(grid, info, out_grid, out_info)
    return deal_copied(grid, info, seat, tiles, n, rng, out_info)


@kernel
def deal_copied(grid, info, seat, tiles, n, rng, out_info):
    """`deal_unseen` after the copy: out_info holds a copy of info."""
    # "the game is not over" is public too: if this seat cannot place, another can
    must_live = info[OVER] == 0 and not can_place_now(info, seat)
    if not must_live and _next_constrained(info, seat, np.int64(0)) < 0:
        k = _clear_other_hands(info, seat, out_info)
        rng = _shuffle(tiles, k, n, rng)
        _deal_rest(info, seat, tiles, k, out_info)
        return rng
    for _ in range(MAX_TRIES):
        rng, k, accept = _draw_constrained_hands(info, seat, tiles, n, rng, out_info)
        rng, bits = rng_next(rng)
        if np.float64(bits >> np.uint64(11)) * _TWO_TO_MINUS_53 < accept:
            rng = _shuffle(tiles, k, n, rng)
            _deal_rest(info, seat, tiles, k, out_info)
            if not must_live or _another_can_place(out_info, seat):
                return rng
    return _deal_fallback(info, seat, tiles, n, rng, out_info)


@kernel
def _deal_fallback(info, seat, tiles, n, rng, out_info):
    """The fallback deal (module doc): every constrained hand gets exactly its `held` tiles
    above its cap, highest cap first, then the rest is dealt at random. Returns the
    advanced rng. A kernel of its own, called rarely: inlined, it cost `deal_copied` about
    a fifth of its compile time."""
    k = _clear_other_hands(info, seat, out_info)
    done = np.int64(0)
    while True:
        other = _next_constrained(info, seat, done)
        if other < 0:
            break
        done |= 1 << other
        cap = info[PASS_CAP + other]
        rng, k = _pick(out_info, other, tiles, k, n, cap, True, _hand_need(info, seat, other), rng)
    rng = _shuffle(tiles, k, n, rng)
    _deal_rest(info, seat, tiles, k, out_info)
    return rng


@helper
def _another_can_place(info, seat):
    for other in range(info[NUM_PLAYERS]):
        if other != seat and can_place_now(info, other):
            return True
    return False


@helper
def _hand_need(info, seat, other):
    """How many of the tiles a world for `seat` deals to `other` must be above its pass
    cap: its pass fact, less the partner's shown tile if `seat` sees it (not dealt)."""
    held = info[PASS_HELD + other]
    cap = info[PASS_CAP + other]
    if held == 0 or cap == 0:  # nothing known, or "above 0" (no open cell at the pass)
        return 0
    slots = info[HAND_SIZE + other]
    shown = info[SHOWN + other]
    if info[TEAM] == 1 and other == rules.partner(seat) and shown > 0:
        slots -= 1
        if shown > cap:
            held -= 1
    return min(held, slots)


@helper
def _hand_slots(info, seat, other):
    """How many tiles of `other`'s hand a world for `seat` deals (a shown tile is kept)."""
    if info[TEAM] == 1 and other == rules.partner(seat) and info[SHOWN + other] > 0:
        return info[HAND_SIZE + other] - 1
    return info[HAND_SIZE + other]


@helper
def _next_constrained(info, seat, done):
    """The next seat (not `seat`, not in the bitmask `done`) whose hand must hold tiles
    above its pass cap: the highest cap first, then the most tiles; -1 when none."""
    best = -1
    best_need = 0
    for other in range(info[NUM_PLAYERS]):
        if other == seat or (done >> other) & 1:
            continue
        need = _hand_need(info, seat, other)
        if need > 0 and (best < 0 or info[PASS_CAP + other] > info[PASS_CAP + best] or (
                info[PASS_CAP + other] == info[PASS_CAP + best] and need > best_need)):
            best = other
            best_need = need
    return best


@helper
def _clear_other_hands(info, seat, out_info):
    """Empty every other hand of the world (keeping a partner's shown tile the seat
    sees, dropping one it does not). Returns 0, the first undealt tile."""
    num_players = info[NUM_PLAYERS]
    partner = rules.partner(seat) if info[TEAM] == 1 else -1
    for other in range(num_players):
        if other == seat:
            continue
        for v in range(11):
            out_info[HAND + other * 11 + v] = 0
        out_info[HAND_MASK + other] = 0
        out_info[HAND_SIZE + other] = 0
        if other == partner and info[SHOWN + other] > 0:
            add_to_hand(out_info, other, info[SHOWN + other])
        else:
            out_info[SHOWN + other] = 0  # an opponent's shown tile is not ours to see
    return 0


@helper
def _draw_constrained_hands(info, seat, tiles, n, rng, out_info):
    """One proposal (module doc): deal every constrained hand from tiles[k:n], moving its
    tiles to the front. Returns (rng, k = the first tile not dealt, the probability of
    accepting the proposal), 0 when a hand could not meet its fact."""
    k = _clear_other_hands(info, seat, out_info)
    accept = 1.0
    done = 0
    while True:
        other = _next_constrained(info, seat, done)
        if other < 0:
            return rng, k, accept
        cap = info[PASS_CAP + other]
        need = _hand_need(info, seat, other)
        slots = _hand_slots(info, seat, other)
        pool = n - k
        high = 0
        for i in range(k, n):
            if tiles[i] > cap:
                high += 1
        z = _tail(pool, high, slots, need)
        if z <= 0.0:
            return rng, k, 0.0
        if done != 0:  # the first hand's chance is the same for every proposal
            accept *= z
        done |= 1 << other
        rng, bits = rng_next(rng)
        u = np.float64(bits >> np.uint64(11)) * _TWO_TO_MINUS_53 * z
        count = min(slots, high)  # how many of its tiles are above the cap
        for x in range(need, min(slots, high) + 1):
            u -= _hypergeometric(pool, high, slots, x)
            if u < 0.0:
                count = x
                break
        rng, k = _pick(out_info, other, tiles, k, n, cap, True, count, rng)
        rng, k = _pick(out_info, other, tiles, k, n, cap, False, slots - count, rng)


@helper
def _hypergeometric(pool, high, draws, x):
    """P(x of `draws` tiles drawn from `pool` tiles are among its `high` ones)."""
    if x < 0 or x > high or draws - x > pool - high or draws > pool:
        return 0.0
    return BINOMIAL[high, x] * BINOMIAL[pool - high, draws - x] / BINOMIAL[pool, draws]


@helper
def _tail(pool, high, draws, need):
    """P(at least `need` of `draws` tiles from `pool` are among its `high` ones)."""
    total = 0.0
    for x in range(need, min(draws, high) + 1):
        total += _hypergeometric(pool, high, draws, x)
    return total


@helper
def _pick(out_info, other, tiles, k, n, cap, above, count, rng):
    """Move `count` tiles chosen uniformly among tiles[k:n] above `cap` (`above`) or not
    above it to tiles[k:k+count], adding each to `other`'s hand. Returns (rng, k + count);
    stops early if the pool runs out (only for inconsistent states)."""
    available = 0
    for i in range(k, n):
        if (tiles[i] > cap) == above:
            available += 1
    for _ in range(min(count, available)):
        rng, r = rng_below(rng, available)
        for i in range(k, n):
            if (tiles[i] > cap) == above:
                if r == 0:  # swap it to the front; the tile it displaces stays in the pool
                    t = tiles[i]
                    tiles[i] = tiles[k]
                    tiles[k] = t
                    add_to_hand(out_info, other, t)
                    k += 1
                    available -= 1
                    break
                r -= 1
    return rng, k


@helper
def _shuffle(tiles, lo, hi, rng):
    """Fisher-Yates shuffle of tiles[lo:hi]. Returns the advanced rng."""
    for i in range(hi - 1, lo, -1):
        rng, j = rng_below(rng, i - lo + 1)
        t = tiles[ix(i)]  # unsigned indices: no negative-index fix-up (a world deals every iteration)
        tiles[ix(i)] = tiles[ix(lo + j)]
        tiles[ix(lo + j)] = t
    return rng


@helper
def _deal_rest(info, seat, tiles, k, out_info):
    """Fill the other hands up to their sizes, then the bag and the removed tiles, from
    tiles[k:] in order; zero the consumed part of the deal (hidden history)."""
    num_players = info[NUM_PLAYERS]
    for other in range(num_players):
        if other == seat:
            continue
        for _ in range(info[HAND_SIZE + other] - out_info[HAND_SIZE + other]):
            add_to_hand(out_info, other, tiles[k])
            k += 1
    bag_pos = info[BAG_POS]
    for i in range(bag_pos, _NUM_TILES):  # the bag, in a fresh random order
        out_info[DEAL + i] = tiles[k]
        k += 1
    for i in range(1, 4):  # the removed tiles
        out_info[DEAL + i] = tiles[k]
        k += 1
    for i in range(4, bag_pos):  # hands dealt and tiles drawn: hidden history
        out_info[DEAL + i] = 0


@kernel
def deal_around_hands(grid, info, seat, hands, fixed, rng, out_grid, out_info, scratch):
    """A world for `seat` in which every seat of the bitmask `fixed` holds the hand
    `hands[s]` (counts per value, index 1..10): the state is copied, those hands are set,
    and the rest of the tiles `seat` has not seen are dealt uniformly at random to the
    other hands, the bag and the removed tiles (pass facts of the other hands are not
    conditioned on). The fixed hands must have the public hand sizes and fit within the
    unseen tiles. Returns (rng, True), or (rng, False) with the world unusable when they
    do not fit. `scratch`: int64, length >= SCRATCH_LEN. Used by searches that keep
    their own belief about some hands (`agents.search.best_response`)."""
    counts = scratch[:11]
    tiles = scratch[16:16 + _NUM_TILES]
    unseen_counts_into(grid, info, seat, counts)
    for other in range(info[NUM_PLAYERS]):
        if (fixed >> other) & 1 == 0:
            continue
        size = 0
        for v in range(1, 11):
            counts[v] -= hands[other, v]
            size += hands[other, v]
            if counts[v] < 0:
                return rng, False
        if size != info[HAND_SIZE + other]:
            return rng, False
    n = 0
    for v in range(1, 11):
        for _ in range(counts[v]):
            tiles[n] = v
            n += 1
    copy_state(grid, info, out_grid, out_info)
    k = _clear_other_hands(info, seat, out_info)
    for other in range(info[NUM_PLAYERS]):
        if (fixed >> other) & 1 == 0:
            continue
        out_info[SHOWN + other] = 0
        for v in range(1, 11):
            for _ in range(hands[other, v]):
                add_to_hand(out_info, other, v)
    rng = _shuffle(tiles, k, n, rng)
    _deal_rest(info, seat, tiles, k, out_info)
    return rng, True


@kernel
def deal_around_particle(grid, info, seat, hands, fixed, tiles, n, rng, out_grid, out_info, scratch):
    """A world for `seat` around one particle of `hands` (P, 4, 11), picked uniformly:
    the seats of the bitmask `fixed` get its hands (`deal_around_hands`). With no
    particle, or one that does not fit, a plain determinization of the `n` unseen `tiles`
    (`deal_unseen`). For searches that keep a belief about some hands as particles.
    Returns the advanced rng."""
    if hands.shape[0] > 0:
        rng, i = rng_below(rng, hands.shape[0])
        rng, ok = deal_around_hands(grid, info, seat, hands[i], fixed, rng, out_grid, out_info, scratch)
        if ok:
            return rng
    return deal_unseen(grid, info, seat, tiles, n, rng, out_grid, out_info)


@kernel
def sample_world(grid, info, seat, rng, out_grid, out_info, scratch):
    """Write into (out_grid, out_info) a world consistent with `seat`'s information:
    the other hands, the bag and the removed tiles dealt at random from the unseen
    tiles. Returns the advanced rng (uint64)."""
    counts = scratch[:11]
    tiles = scratch[16:16 + _NUM_TILES]
    n = unseen_tiles(grid, info, seat, counts, tiles)
    return deal_unseen(grid, info, seat, tiles, n, rng, out_grid, out_info)


def unseen_counts(state, seat: int) -> np.ndarray:
    """Per value 1..10 (index v-1): tiles `seat` has not seen (other hands, bag, removed)."""
    counts = np.zeros(11, dtype=np.int64)
    grid, info = state.arrays
    _unseen_counts_py(grid, info, seat, counts)
    return counts[1:]


@kernel
def _unseen_counts_py(grid, info, seat, counts):
    unseen_counts_into(grid, info, seat, counts)
