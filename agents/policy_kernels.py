"""Numba kernels for move policies: scoring a placement without making it, the greedy
choice, and the rollout policies MCTS plays its simulations with.

Placements are scored without being made, from the incremental run data of the target
cell (the packed ``sum | length << 8`` runs just before and after it on each axis, see
engine/layout.py) with the engine's `lines_through` / `placement_points`, in a few
nanoseconds; only the values that could score on a cell at all (`sum_candidates` and
`run_set_candidates`) are scored, and only those that could make a run or a set read
the board.

Rollout policies (`rollout`): ``epsilon`` is the probability of a uniformly random
placement, otherwise the placement scoring the most minutes now (ties broken uniformly
at random). epsilon = 1 is the random rollout, 0 the greedy rollout.
"""

from __future__ import annotations

import numpy as np

from engine import kernel_cache, rules
from engine.access import (capacity, current_seat, hand_count, hand_size, hand_values, is_over, num_players,
                           placement_action, run_after, run_before, run_length, run_sum, tile_value,
                           values_that_fit)
from engine.determinize import BINOMIAL, unseen_counts_into
from engine.kernels import (
    POPCOUNT, apply_action, copy_state, helper, kernel, legal_placements, lowest_bit_index, open_cells, pass_turn,
    placement_points, random_placement, random_playout, rng_below, rng_next, scoring_setup,
    without_lowest_bit,
)
from engine.layout import AXIS_STEP, ON_BOARD, PAD_OF_CELL

kernel_cache.register(__name__, "the greedy and rollout policies", 5)

_MAX_VALUE = rules.MAX_VALUE
_PASS = rules.PASS_ACTION
EPSILON_SCALE = 1 << 32  # epsilon is passed to kernels as an integer threshold out of 2**32
SCRATCH_LEN = 128  # the greedy kernels' int64 scratch (cell threats, unseen counts)


def epsilon_threshold(epsilon: float) -> int:
    """The integer form of a probability that `rollout` and `policy_placement` take."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
    return int(round(epsilon * EPSILON_SCALE))


# --- scoring without placing ---------------------------------------------------------------
@kernel
def _cell_best(grid, p, values):
    """The most minutes any value of the bitmask `values` (bit v = value v) that fits
    on open cell p would score there."""
    fits = values_that_fit(grid, p, values)
    best = 0
    if fits == 0:
        return best
    r0, r1, r2, r3, run_set, fits = scoring_setup(grid, p, fits)  # the others score 0
    while fits:
        v = lowest_bit_index(fits)
        fits = without_lowest_bit(fits)
        pts = placement_points(grid, p, v, r0, r1, r2, r3, run_set)
        if pts > best:
            best = pts
    return best


@kernel
def scoring_cells(grid, info, counts):
    """counts[v] for v = 1..10: the open cells where value v fits and would score now
    (`counts` int64, length 11; what a team search weighs before showing a value,
    `agents.search.mcts.MCTSAgent.show_before`)."""
    counts[:] = 0
    cells = open_cells(info)
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = values_that_fit(grid, p, _ALL_VALUES)
        if fits == 0:
            continue
        r0, r1, r2, r3, run_set, fits = scoring_setup(grid, p, fits)  # the others score 0
        while fits:
            v = lowest_bit_index(fits)
            fits = without_lowest_bit(fits)
            if placement_points(grid, p, v, r0, r1, r2, r3, run_set) > 0:
                counts[v] += 1


# --- the greedy placement, as a rollout policy ------------------------------------------------

# Safe values: after v goes on p, an open cell e just past an end of one of p's lines
# lets the next player complete that line to 7 (its sum is 1..6) or to 24 (14..23).
# SAFE_VALUES[t] = the values v with t + v outside both ranges, t = the line's sum
# without v plus the run beyond e.
_ALL_VALUES = ((1 << (_MAX_VALUE + 1)) - 1) & ~1
SAFE_VALUES = np.array([sum(1 << v for v in range(1, _MAX_VALUE + 1)
                            if not (1 <= t + v <= 6 or 14 <= t + v <= 23)) for t in range(80)],
                       dtype=np.int64)
_ON_BOARD64 = np.int64(ON_BOARD)
_STEP0, _STEP1, _STEP2, _STEP3 = AXIS_STEP  # padded step of each axis of rules.AXES


@helper
def _axis_safe(grid, p, axis, step):
    """Values that open no 7 or 24 for the next player at either end of this axis."""
    rb = run_before(grid, p, axis)
    ra = run_after(grid, p, axis)
    base = run_sum(rb) + run_sum(ra)
    m = _ALL_VALUES
    e1 = p - step * (run_length(rb) + 1)  # 0 <= e1 < 64
    if (_ON_BOARD64 >> e1) & 1 and capacity(grid, e1) > 0:
        m &= SAFE_VALUES[base + run_sum(run_before(grid, e1, axis))]
    e2 = p + step * (run_length(ra) + 1)
    if e2 < 64 and (_ON_BOARD64 >> e2) & 1 and capacity(grid, e2) > 0:
        m &= SAFE_VALUES[base + run_sum(run_after(grid, e2, axis))]
    return m


@helper
def safe_values(grid, p):
    """Values that, placed on p, leave the next player no new sum of 7 or 24 next to
    the lines through p (a cheap stand-in for the greedy agent's threat count; runs,
    sets and the other lines through the end cells are ignored)."""
    return (_axis_safe(grid, p, 0, _STEP0) & _axis_safe(grid, p, 1, _STEP1)
            & _axis_safe(grid, p, 2, _STEP2) & _axis_safe(grid, p, 3, _STEP3))


@kernel
def greedy_choice(grid, info, rng, safe):
    """The mover's placement scoring the most minutes now, ties broken uniformly at
    random; when nothing scores and `safe`, a uniform *safe* placement (`safe_values`).
    Returns (rng, padded cell, value), cell -1 when neither exists (then every legal
    placement ties: the greedy move is a uniformly random one).

    Only the values that could score on a cell are scored (`sum_candidates` and
    `run_set_candidates`)."""
    mask = hand_values(info, current_seat(info))
    cells = open_cells(info)
    best = 0
    best_p = -1
    best_v = 0
    ties = 0
    safe_total = 0
    safe_p = -1
    safe_v = 0
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = values_that_fit(grid, p, mask)
        if fits == 0:
            continue
        r0, r1, r2, r3, run_set, scoring = scoring_setup(grid, p, fits)
        while scoring:
            v = lowest_bit_index(scoring)
            scoring = without_lowest_bit(scoring)
            pts = placement_points(grid, p, v, r0, r1, r2, r3, run_set)
            if pts > best:
                best = pts
                best_p = p
                best_v = v
                ties = 1
            elif pts == best and pts > 0:
                ties += 1
                rng, r = rng_below(rng, ties)
                if r == 0:
                    best_p = p
                    best_v = v
        if safe and best == 0:  # no scoring move yet: keep a uniform safe one in reserve
            safe_fits = fits & safe_values(grid, p)
            k = POPCOUNT[safe_fits]
            if k:
                safe_total += k
                rng, r = rng_below(rng, safe_total)
                if r < k:  # this cell's block replaces the reserve with prob k / total
                    for _ in range(r):
                        safe_fits = without_lowest_bit(safe_fits)
                    safe_p = p
                    safe_v = lowest_bit_index(safe_fits)
    if best > 0:
        return rng, best_p, best_v
    return rng, safe_p, safe_v


@kernel
def policy_placement(grid, info, rng, epsilon, safe):
    """Epsilon-greedy: a uniformly random placement with probability epsilon / 2**32,
    else the greedy one (`greedy_choice`, with its safety tie-break when `safe`), or a
    uniformly random one when no placement scores (nor is safe). Returns (rng, padded
    cell, value); cell -1 = pass. A compiled call shared by every rollout and policy
    kernel: inlined, its scoring loops cost each caller seconds of compile time."""
    explore = epsilon >= EPSILON_SCALE
    if epsilon > 0 and not explore:
        rng, z = rng_next(rng)
        explore = np.int64(z >> np.uint64(32)) < epsilon
    if not explore:
        rng, p, v = greedy_choice(grid, info, rng, safe)
        if p >= 0:
            return rng, p, v
    return random_placement(grid, info, rng)


@kernel
def rollout(grid, info, rng, epsilon, safe, max_placements):
    """Play the epsilon-greedy policy (`policy_placement`) until the game ends, or
    until `max_placements` placements were made (0 = no limit). Returns (rng, placements made).
    Not inlined into callers: one call per simulation costs nothing, and inlining the
    whole engine into every search kernel would multiply their compile time."""
    placements = 0
    while not is_over(info):
        if max_placements > 0 and placements >= max_placements:
            break
        rng, p, v = policy_placement(grid, info, rng, epsilon, safe)
        if p < 0:
            pass_turn(info)
        else:
            apply_action(grid, info, placement_action(p, v))
            placements += 1
    return rng, placements


@kernel
def repeated_rollouts(grid, info, sim_grid, sim_info, rng, epsilon, safe, count):
    """Play `count` rollouts from (grid, info) on a scratch copy (benchmarks).
    Returns (rng, total placements)."""
    total = 0
    for _ in range(count):
        copy_state(grid, info, sim_grid, sim_info)
        if epsilon >= EPSILON_SCALE:  # what a search's random rollout to the end plays (`core.playout_leaf`)
            rng, k = random_playout(sim_grid, sim_info, rng)
        else:
            rng, k = rollout(sim_grid, sim_info, rng, epsilon, safe, np.int64(0))  # not a literal: one compiled rollout
        total += k
    return rng, total


# --- the greedy agent's choice ------------------------------------------------------------
_KEY_POINTS = 1 << 24
_MAX_THREAT = (1 << 19) - 1


# _ranking, _threat_after and _cell_best are kernels, not inlined helpers: inlined, the
# whole chain (with `place`) would be compiled again into each caller, for no speed.
# Callers pass np.bool_ flags, not literals, since numba compiles a callee once per
# literal argument value.
@kernel
def _ranking(grid, info, scratch_grid, scratch_info, scratch, actions, keys, best_only):
    """Write the mover's legal placements (increasing ids) and their greedy keys;
    return how many (0 = pass). With `best_only`, only those scoring the most minutes."""
    seat = current_seat(info)
    mask = hand_values(info, seat)
    best = -1
    if best_only:
        cells = open_cells(info)
        while cells:
            p = lowest_bit_index(cells)
            cells = without_lowest_bit(cells)
            if values_that_fit(grid, p, mask):
                best = max(best, _cell_best(grid, p, mask))
    # values the others may hold: those the mover has not seen
    counts = scratch[96:107]
    unseen_counts_into(grid, info, seat, counts)
    unseen = np.int64(0)
    for v in range(1, _MAX_VALUE + 1):
        if counts[v] > 0:
            unseen |= np.int64(1) << v
    # the threat of every open cell now (cells a move does not touch keep theirs)
    threat = scratch[:80]
    open_now = open_cells(info)
    cells = open_now
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        threat[p] = _cell_best(grid, p, unseen)
    n = 0
    cells = open_now
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = values_that_fit(grid, p, mask)
        if fits == 0:
            continue
        r0, r1, r2, r3, run_set, _ = scoring_setup(grid, p, fits)  # every fitting value: keys rank them all
        while fits:
            v = lowest_bit_index(fits)
            fits = without_lowest_bit(fits)
            pts = placement_points(grid, p, v, r0, r1, r2, r3, run_set)
            if best_only and pts != best:
                continue
            t = _threat_after(grid, info, p, v, threat, open_now, unseen, scratch_grid, scratch_info)
            actions[n] = placement_action(p, v)
            keys[n] = (pts * _KEY_POINTS + (_MAX_THREAT - min(t, _MAX_THREAT)) * 16
                       + hand_count(info, seat, v))
            n += 1
    return n


@kernel
def greedy_ranking(grid, info, scratch_grid, scratch_info, scratch, actions, keys):
    """Every legal placement of the mover (increasing ids) with its greedy key: the
    larger the key, the more the greedy agent likes the move (see `greedy_action`).
    Returns how many were written (0: only pass is legal)."""
    return _ranking(grid, info, scratch_grid, scratch_info, scratch, actions, keys, np.bool_(False))


@kernel
def greedy_action(grid, info, scratch_grid, scratch_info, scratch, actions, keys):
    """The greedy agent's action for the seat to move (reads only the board and the
    mover's own hand). Keys, in order:

    1. the most minutes now;
    2. the fewest minutes left open to the others: after the move, the most any value
       the mover has not seen (a tile someone else may hold) would score on an open cell;
    3. playing the value the mover holds most copies of (keeps the hand varied);
    4. the lowest action id.

    Returns the pass action when no placement is legal. `scratch` is int64 of length
    >= SCRATCH_LEN; `scratch_grid`/`scratch_info` hold a copy;
    `actions`/`keys` (int64, 490) receive the moves that score the most.
    """
    n = _ranking(grid, info, scratch_grid, scratch_info, scratch, actions, keys, np.bool_(True))
    if n == 0:
        return _PASS
    best = 0
    for i in range(1, n):
        if keys[i] > keys[best]:
            best = i
    return actions[best]


@kernel
def exposure_after_placements(grid, info, scratch_grid, scratch_info, scratch, actions, keys, out):
    """out[a] (float32, length >= 490) = for each legal placement a of the mover, the
    most minutes a value the mover has not seen could score on an open cell after it
    (the greedy key's second part) / 100; 0 for every other action."""
    for a in range(out.shape[0]):
        out[a] = 0.0
    n = _ranking(grid, info, scratch_grid, scratch_info, scratch, actions, keys, np.bool_(False))
    for i in range(n):
        left_open = _MAX_THREAT - ((keys[i] % _KEY_POINTS) >> 4)
        out[actions[i]] = left_open / 100.0


@kernel
def expected_exposure_after_placements(grid, info, scratch_grid, scratch_info, scratch, actions, cell_points,
                                       follow_up, out):
    """out[a] (float32, length >= 490) = for each legal placement a of the mover, the
    minutes the next seat is expected to score with its best placement after it, / 100:
    for every value the mover has not seen, the most it would score on an open cell
    then, weighted by the chance that the next seat's hand (as many tiles as it holds,
    drawn from the unseen ones) has that value as its best scoring one; minus
    `follow_up` x the most the mover's remaining tiles would score on the board after
    the move, / 100 (what the move keeps for the mover's next turn). 0 for every other
    action. The worst case over the unseen values is `exposure_after_placements`; this
    one weighs a threat by how likely it is. `cell_points` is int64 scratch of
    (>= 80, 11): the minutes per open cell and value now."""
    for a in range(out.shape[0]):
        out[a] = 0.0
    seat = current_seat(info)
    counts = scratch[96:107]
    unseen_counts_into(grid, info, seat, counts)
    total = 0
    unseen = np.int64(0)
    for u in range(1, _MAX_VALUE + 1):
        total += counts[u]
        if counts[u] > 0:
            unseen |= np.int64(1) << u
    replier = seat + 1 if seat + 1 < num_players(info) else 0
    held = min(hand_size(info, replier), total)
    mine = hand_values(info, seat) if follow_up != 0.0 else np.int64(0)
    open_now = open_cells(info)
    cells = open_now
    while cells:
        q = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        _value_points(grid, q, unseen | mine, cell_points[q])
    n = legal_placements(grid, info, actions)
    best = scratch[:11]
    after = scratch[16:27]
    for i in range(n):
        a = actions[i]
        p = PAD_OF_CELL[a // _MAX_VALUE]
        v = a % _MAX_VALUE + 1
        kept = mine & ~(np.int64(1) << v) if hand_count(info, seat, v) == 1 else mine
        copy_state(grid, info, scratch_grid, scratch_info)
        apply_action(scratch_grid, scratch_info, a)
        touched = _line_ends(scratch_grid, p)
        for u in range(_MAX_VALUE + 1):
            best[u] = 0
        rest = open_now & ~touched
        while rest:
            q = lowest_bit_index(rest)
            rest = without_lowest_bit(rest)
            for u in range(1, _MAX_VALUE + 1):
                if cell_points[q, u] > best[u]:
                    best[u] = cell_points[q, u]
        ends = touched & open_cells(scratch_info)
        while ends:
            q = lowest_bit_index(ends)
            ends = without_lowest_bit(ends)
            _value_points(scratch_grid, q, unseen | mine, after)
            for u in range(1, _MAX_VALUE + 1):
                if after[u] > best[u]:
                    best[u] = after[u]
        own = 0
        for u in range(1, _MAX_VALUE + 1):
            if (kept >> u) & 1 and best[u] > own:
                own = best[u]
        out[a] = (_expected_best(best, counts, total, held) - follow_up * own) / 100.0


@kernel
def _value_points(grid, q, values, out):
    """out[u] = the minutes value u would score on open cell q, for the values of the
    bitmask `values` (bit u = value u); 0 for the others and where u does not fit. A
    kernel, not inlined: `expected_exposure_after_placements` calls it at two places, and
    compiles cold in 1.8 s with it (this kernel included) against 4.3 s with it inlined."""
    for u in range(_MAX_VALUE + 1):
        out[u] = 0
    fits = values_that_fit(grid, q, values)
    if fits == 0:
        return
    r0, r1, r2, r3, run_set, scoring = scoring_setup(grid, q, fits)  # the others score 0
    while scoring:
        u = lowest_bit_index(scoring)
        scoring = without_lowest_bit(scoring)
        out[u] = placement_points(grid, q, u, r0, r1, r2, r3, run_set)


@helper
def _line_ends(grid, p):
    """Bitboard of p and the cells just past both ends of the four lines through p (the
    only cells whose minutes a tile on p changes)."""
    touched = np.int64(1) << p
    for step in AXIS_STEP:
        q = p - step
        while tile_value(grid, q) != 0:
            q -= step
        q2 = p + step
        while tile_value(grid, q2) != 0:
            q2 += step
        touched |= np.int64(1) << q  # q >= 0: a walk up or left ends on a sink >= 0
        if q2 < 64:  # a walk down may end on a sink past bit 63
            touched |= np.int64(1) << q2
    return touched


@helper
def _expected_best(best, counts, total, held):
    """E[the most minutes among the values a hand of `held` tiles drawn from the `total`
    unseen ones (counts[u] of value u) holds], given best[u] minutes per value: the
    values in decreasing order of minutes, each weighted by the chance that the hand
    holds it and none of the better ones (hypergeometric)."""
    expected = 0.0
    none_before = 1.0  # P(the hand holds none of the values taken so far)
    excluded = 0
    taken = 0  # bitmask of the values taken
    for _ in range(_MAX_VALUE):
        top = 0
        for u in range(1, _MAX_VALUE + 1):
            if not (taken >> u) & 1 and counts[u] > 0 and best[u] > 0 and (top == 0 or best[u] > best[top]):
                top = u
        if top == 0:
            break
        taken |= 1 << top
        excluded += counts[top]
        none = BINOMIAL[total - excluded, held] / BINOMIAL[total, held] if total - excluded >= held else 0.0
        expected += best[top] * (none_before - none)
        none_before = none
    return expected


@kernel
def _threat_after(grid, info, p, v, threat, open_now, unseen, sg, si):
    """The most minutes an unseen value could score on an open cell after v goes on p.
    Only the cells just past the ends of the four lines through p change."""
    copy_state(grid, info, sg, si)
    apply_action(sg, si, placement_action(p, v))
    touched = _line_ends(sg, p)
    best = 0
    ends = touched & open_cells(si)
    while ends:
        q = lowest_bit_index(ends)
        ends = without_lowest_bit(ends)
        t = _cell_best(sg, q, unseen)
        if t > best:
            best = t
    rest = open_now & ~touched
    while rest:
        q = lowest_bit_index(rest)
        rest = without_lowest_bit(rest)
        if threat[q] > best:
            best = threat[q]
    return best


@kernel
def policy_action(grid, info, rng, epsilon, safe):
    """The rollout policy's action for the seat to move. Returns (rng, action id)."""
    rng, p, v = policy_placement(grid, info, rng, epsilon, safe)
    if p < 0:
        return rng, _PASS
    return rng, placement_action(p, v)
