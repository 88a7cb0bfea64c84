"""Numba kernels of the best-response search (`agents.search.best_response`; the method:
docs/exploitability.md).

*The target model* (`MODEL_*`): the target's move for the seat to move of a world
(`target_action`) and the probability that it makes a given move there
(`target_probability`, where that is known), from the board and the mover's own hand only.

*The belief*: P particles, each a guess of every target seat's hand (counts per value)
weighted by the target's reach, filtered event by event (the caller resamples): a target
move multiplies the weight by the model's probability of it and the tile leaves the
hand; a target's draw is dealt from what the particle leaves unseen; the BR seat's draw
of x multiplies the weight by the tiles x the particle left in the pool. The rest of the
hidden tiles stays exchangeable and is dealt afresh in every world.

*The search* (`SEARCHES`): the search core (`agents.search.core.run`) with parts of its
own: a world dealt around a particle (`particle_world`), the target's moves in the tree
by its model (`target_move`), rollouts that play the model for the target seats
(`br_rollout_leaf`; a network target's rollout moves are the greedy agent's). With no
particles (a target not modelled) it is plain ISMCTS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine import access, kernel_cache, layout, rules
from engine.determinize import (deal_around_hands, deal_around_particle, deal_unseen, unseen_counts_into,
                                unseen_tiles)
from engine.kernels import (apply_action, count_placements, is_legal, kernel, legal_placements, random_placement,
                            rng_below, rng_next)
from env.observation import OBS_SIZE, encode_into

from agents.networks.placement import new_scratch, placement_logits
from agents.policy_kernels import (SCRATCH_LEN, expected_exposure_after_placements, exposure_after_placements, greedy_action,
                             policy_placement)

from .core import ROOT, Parts, expand_greedy, expand_random, run, simulation_rewards, ucb
from .tree import SCRATCH_COUNTS, SCRATCH_TILES

kernel_cache.register(__name__, "the best response (br, evaluate.py exploit)", 20)

# the kinds of target model
MODEL_NONE = 0  # not modelled: the target's turns are searched (plain ISMCTS)
MODEL_RANDOM = 1  # uniformly random over the legal placements (pass when none)
MODEL_GREEDY = 2  # the greedy agent (`policy_kernels.greedy_action`), deterministic
MODEL_POLICY = 3  # the rollout policy agent (epsilon-greedy): moves modelled, reach unknown
MODEL_NETWORK = 4  # a network's raw policy (`agents.networks.placement`): argmax, or sampled at a temperature
# the model's int64 config record
CONFIG_KIND, CONFIG_SEATS, CONFIG_EPSILON, CONFIG_SAFE, CONFIG_EXPOSURE, CONFIG_FAST_ROLLOUT = range(6)
EXPOSURE_KINDS = {None: 0, "worst": 1, "expected": 2, "outlook": 3}  # the network's exposure features
# the model's float64 record
REAL_TEMPERATURE, REAL_FOLLOW_UP, REAL_REACH_TEMPERATURE = range(3)
_PASS = rules.PASS_ACTION
_MAX_VALUE = rules.MAX_VALUE
# the memo of the target's moves in one search: open addressing, linear probes of at most 16
CACHE_BITS = 14
CACHE_SIZE = 1 << CACHE_BITS
_EMPTY = -1


class TargetModel(NamedTuple):
    """The target's policy in numba and its scratch arrays.

    config   int64 (6,)           kind, seats bitmask, epsilon threshold, safe, exposure kind,
                                  fast rollouts (the target's rollout moves are the greedy rollout
                                  policy's, `br_rollout_leaf`)
    reals    float64 (3,)         the network's temperature (its moves), the outlook's follow-up weight, the
                                  temperature of its reach (a guess's weight; default: the moves' one)
    world_*                       a world (the belief's scratch); copy_*: the greedy kernel's copy
    scratch  int64 (SCRATCH_LEN,) the greedy kernel's scratch
    actions, keys int64 (490,)    the greedy kernel's output, a legal list
    net, maps, columns float32    a packed network and its scratch (`agents.networks.placement`;
                                  empty without a network)
    obs, exposure, logits float32 the network's input and output
    cell_points int64 (80, 11)    the expected exposure's scratch
    cache_keys, cache_actions     int64 (CACHE_SIZE,): the search's memo of a deterministic
                                  target's moves (`cached_target_action`)
    """

    config: np.ndarray
    reals: np.ndarray
    world_grid: np.ndarray
    world_info: np.ndarray
    copy_grid: np.ndarray
    copy_info: np.ndarray
    scratch: np.ndarray
    actions: np.ndarray
    keys: np.ndarray
    net: np.ndarray
    maps: np.ndarray
    columns: np.ndarray
    obs: np.ndarray
    exposure: np.ndarray
    logits: np.ndarray
    cell_points: np.ndarray
    cache_keys: np.ndarray
    cache_actions: np.ndarray


def new_model(kind: int, seats: int, epsilon: int = 0, safe: bool = True, net: np.ndarray | None = None,
              exposure: str | None = None, temperature: float = 0.0, follow_up: float = 0.0,
              fast_rollout: bool = False, reach_temperature: float | None = None) -> TargetModel:
    """A target model; `net`: a packed network (`PolicyValueNet.packed_placement`) for MODEL_NETWORK."""
    world_grid, world_info = access.new_arrays()
    copy_grid, copy_info = access.new_arrays()
    config = np.array([kind, seats, epsilon, int(safe), EXPOSURE_KINDS[exposure], int(fast_rollout)],
                      dtype=np.int64)
    if net is None:
        net = np.zeros(0, dtype=np.float32)
        maps, columns = np.zeros((0, 0), dtype=np.float32), np.zeros((0, 0), dtype=np.float32)
    else:
        maps, columns = new_scratch(net)
    placements = rules.NUM_PLACEMENT_ACTIONS
    reach = temperature if reach_temperature is None else reach_temperature
    return TargetModel(config, np.array([temperature, follow_up, reach], dtype=np.float64), world_grid, world_info,
                       copy_grid, copy_info, np.zeros(SCRATCH_LEN, dtype=np.int64), np.zeros(placements, dtype=np.int64),
                       np.zeros(placements, dtype=np.int64), net, maps, columns, np.zeros(OBS_SIZE, dtype=np.float32),
                       np.zeros(placements, dtype=np.float32), np.zeros(placements, dtype=np.float32),
                       np.zeros((layout.GRID_CELLS, _MAX_VALUE + 1), dtype=np.int64),
                       np.full(CACHE_SIZE, _EMPTY, dtype=np.int64), np.zeros(CACHE_SIZE, dtype=np.int64))


@njit(inline="always", cache=True)
def is_target(model, seat):
    return model.config[CONFIG_KIND] != MODEL_NONE and (model.config[CONFIG_SEATS] >> seat) & 1 == 1


@kernel
def _network_policy(model, grid, info):
    """Run the network for the mover: its legal placements listed in model.actions, their
    logits in model.logits. Returns (how many legal placements, the index of the best)."""
    seat = access.current_seat(info)
    encode_into(grid, info, seat, model.obs)
    exposure = model.config[CONFIG_EXPOSURE]
    if exposure == 1:
        exposure_after_placements(grid, info, model.copy_grid, model.copy_info, model.scratch, model.actions,
                                  model.keys, model.exposure)
    elif exposure > 1:
        expected_exposure_after_placements(grid, info, model.copy_grid, model.copy_info, model.scratch,
                                           model.actions, model.cell_points, model.reals[REAL_FOLLOW_UP],
                                           model.exposure)
    placement_logits(model.obs, model.exposure, model.net, model.maps, model.columns, model.logits)
    n = legal_placements(grid, info, model.actions)
    best = 0
    for i in range(1, n):
        if model.logits[model.actions[i]] > model.logits[model.actions[best]]:
            best = i
    return n, best


@njit(inline="always", cache=True)
def _softmax_weight(model, best, i, t):
    """exp((logit_i - logit_best) / t) of legal placement i (model.actions)."""
    return np.exp((model.logits[model.actions[i]] - model.logits[model.actions[best]]) / t)


@kernel
def network_action(model, grid, info, rng):
    """A network target's move (MODEL_NETWORK) for the seat to move of (grid, info).
    Returns (rng, action)."""
    n, best = _network_policy(model, grid, info)
    if n == 0:
        return rng, _PASS
    if model.reals[REAL_TEMPERATURE] <= 0.0:
        return rng, model.actions[best]
    total = 0.0
    for i in range(n):
        total += _softmax_weight(model, best, i, model.reals[REAL_TEMPERATURE])
    rng, bits = rng_next(rng)
    u = np.float64(bits >> np.uint64(11)) * (1.0 / 2.0**53) * total
    for i in range(n):
        u -= _softmax_weight(model, best, i, model.reals[REAL_TEMPERATURE])
        if u < 0.0:
            return rng, model.actions[i]
    return rng, model.actions[n - 1]


@kernel
def target_action(model, grid, info, rng):
    """The move of a target modelled in numba without a network (MODEL_RANDOM, MODEL_GREEDY,
    MODEL_POLICY; a network's is `network_action`: kept apart, so that a search against the
    others never compiles the network) for the seat to move of (grid, info). Returns (rng, action)."""
    kind = model.config[CONFIG_KIND]
    if kind == MODEL_GREEDY:
        return rng, greedy_action(grid, info, model.copy_grid, model.copy_info, model.scratch, model.actions,
                                  model.keys)
    if kind == MODEL_RANDOM:
        rng, p, v = random_placement(grid, info, rng)
    else:
        rng, p, v = policy_placement(grid, info, rng, model.config[CONFIG_EPSILON], model.config[CONFIG_SAFE] != 0)
    if p < 0:
        return rng, _PASS
    return rng, access.placement_action(p, v)


@kernel
def network_probability(model, grid, info, action):
    """The probability that a network target plays `action` for the seat to move of (grid, info)."""
    n, best = _network_policy(model, grid, info)
    if n == 0:
        return 1.0 if action == _PASS else 0.0
    t = model.reals[REAL_REACH_TEMPERATURE]
    if t <= 0.0:
        return 1.0 if model.actions[best] == action else 0.0
    total = 0.0
    chosen = 0.0
    for i in range(n):
        w = _softmax_weight(model, best, i, t)
        total += w
        if model.actions[i] == action:
            chosen = w
    return chosen / total


@kernel
def target_probability(model, grid, info, action):
    """The probability that a target modelled without a network plays `action` for the
    seat to move of (grid, info); -1.0 when the model cannot say (MODEL_POLICY, MODEL_NONE)."""
    kind = model.config[CONFIG_KIND]
    if kind == MODEL_GREEDY:
        chosen = greedy_action(grid, info, model.copy_grid, model.copy_info, model.scratch, model.actions,
                               model.keys)
        return 1.0 if chosen == action else 0.0
    if kind == MODEL_RANDOM:
        n = count_placements(info)
        if action == _PASS:
            return 1.0 if n == 0 else 0.0
        if action > _PASS or not is_legal(grid, info, action):
            return 0.0
        return 1.0 / n
    return -1.0


# --- the memo of the target's moves in the tree -----------------------------------------------------
@njit(inline="always", cache=True)
def is_deterministic(model):
    """The model's move is a function of the mover's view alone (no sampling)."""
    kind = model.config[CONFIG_KIND]
    return kind == MODEL_GREEDY or (kind == MODEL_NETWORK and model.reals[REAL_TEMPERATURE] <= 0.0)


@kernel
def clear_cache(model):
    for i in range(CACHE_SIZE):
        model.cache_keys[i] = _EMPTY


@njit(inline="always", cache=True)
def _view_key(node, info):
    """A key of what the mover sees at a tree node: the node fixes the board and every
    public fact; the rest of the mover's view is its hand (3 bits per value: 0..4 copies)
    and, in the team variant, the shown tiles and whether it has shown this turn."""
    seat = access.current_seat(info)
    key = np.int64(node)
    for v in range(1, 11):
        key = (key << np.int64(3)) | access.hand_count(info, seat, v)
    key = (key << np.int64(4)) | access.shown_value(info, seat)
    key = (key << np.int64(4)) | access.shown_value(info, rules.partner(seat))
    return (key << np.int64(1)) | access.shown_this_turn(info)


@njit(inline="always", cache=True)
def _cached_action(model, node, grid, info, rng, target_action):
    """`target_action` of a deterministic model at tree node `node`, computed once per
    (node, the mover's view) in a search: the same view gives the same move, exactly.
    Returns (rng, action)."""
    key = _view_key(node, info)
    slot = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - CACHE_BITS)
    i = np.int64(slot)
    used = 0
    while model.cache_keys[i] != _EMPTY:
        if model.cache_keys[i] == key:
            return rng, model.cache_actions[i]
        i = (i + 1) & (CACHE_SIZE - 1)
        used += 1
        if used >= 16:  # a long probe: the memo is crowded, compute without storing
            return target_action(model, grid, info, rng)
    rng, a = target_action(model, grid, info, rng)
    model.cache_keys[i] = key
    model.cache_actions[i] = a
    return rng, a


@kernel
def cached_target_action(model, node, grid, info, rng):
    """`_cached_action` of a target without a network."""
    return _cached_action(model, node, grid, info, rng, target_action)


# --- the belief -------------------------------------------------------------------------------
@kernel
def belief_reset(grid, info, observer, seats, hands, weights, rng, world_grid, world_info, scratch):
    """Fill every particle with the target seats' hands of a plain determinization of
    `observer`'s information (pass facts honoured), weights 1. Returns the rng."""
    tiles = scratch[SCRATCH_TILES:SCRATCH_TILES + rules.NUM_TILES]
    n = unseen_tiles(grid, info, observer, scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11], tiles)
    for i in range(hands.shape[0]):
        rng = deal_unseen(grid, info, observer, tiles, n, rng, world_grid, world_info)
        for s in range(4):
            for v in range(11):
                hands[i, s, v] = access.hand_count(world_info, s, v) if (seats >> s) & 1 and v > 0 else 0
        weights[i] = 1.0
    return rng


@njit(inline="always", cache=True)
def _pool(grid, info, observer, seats, hand, counts):
    """counts[v]: the tiles of value v that `observer` has not seen and the particle
    `hand` does not place in a target hand; returns their total, -1 if the particle
    holds more than there are."""
    unseen_counts_into(grid, info, observer, counts)
    total = 0
    for v in range(1, 11):
        for s in range(4):
            if (seats >> s) & 1:
                counts[v] -= hand[s, v]
        if counts[v] < 0:
            return -1
        total += counts[v]
    return total


@kernel
def belief_target_draws(grid, info, observer, seats, hands, weights, rng, scratch):
    """Target seats whose particle hand is smaller than their public hand size drew:
    deal them the missing tiles uniformly from the particle's pool. A particle that
    cannot (it holds more than the public sizes, or the pool is short) gets weight 0."""
    counts = scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11]
    for i in range(hands.shape[0]):
        if weights[i] == 0.0:
            continue
        total = _pool(grid, info, observer, seats, hands[i], counts)
        if total < 0:
            weights[i] = 0.0
            continue
        for s in range(4):
            if (seats >> s) & 1 == 0:
                continue
            held = 0
            for v in range(1, 11):
                held += hands[i, s, v]
            missing = access.hand_size(info, s) - held
            if missing < 0 or missing > total:
                weights[i] = 0.0
                break
            for _ in range(missing):
                rng, r = rng_below(rng, total)
                v = 1
                while r >= counts[v]:
                    r -= counts[v]
                    v += 1
                hands[i, s, v] += 1
                counts[v] -= 1
                total -= 1
    return rng


@kernel
def belief_observer_draws(grid, info, observer, seats, hands, weights, drawn, scratch):
    """The observer drew the tiles `drawn` (values, in order; they are already seen in
    (grid, info)): multiply each particle's weight by the chance of those draws from its
    pool, up to a factor common to every particle."""
    counts = scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11]
    for i in range(hands.shape[0]):
        if weights[i] == 0.0:
            continue
        if _pool(grid, info, observer, seats, hands[i], counts) < 0:
            weights[i] = 0.0
            continue
        for k in range(drawn.shape[0]):  # the pool before the draws held them too
            counts[drawn[k]] += 1
        for k in range(drawn.shape[0]):
            weights[i] *= counts[drawn[k]]
            counts[drawn[k]] -= 1


@njit(inline="always", cache=True)
def _belief_target_move(grid, info, observer, hands, weights, before, action, model, rng, target_action,
                        target_probability):
    """The target seat to move in (grid, info) plays `action`: weigh every particle by the
    model's probability of it in a world dealt around the particle, and take the placed
    tile out of the particle's hand; then, with several target seats, give the particles
    it ruled out the mover's hand of a surviving one (`_cross_over`). `before`: float64
    scratch of the particles' count. Returns the rng."""
    seats = model.config[CONFIG_SEATS]
    mover = access.current_seat(info)
    scratch = model.scratch
    # many particles share a hand: a deterministic model runs once per distinct view
    memo = is_deterministic(model) and model.reals[REAL_REACH_TEMPERATURE] <= 0.0
    if memo:
        clear_cache(model)
    reach_known = True
    for i in range(hands.shape[0]):
        before[i] = weights[i]
        if weights[i] == 0.0:
            continue
        rng, ok = deal_around_hands(grid, info, observer, hands[i], seats, rng, model.world_grid, model.world_info,
                                    scratch)
        if not ok:
            weights[i] = 0.0
            continue
        if memo:
            _, chosen = _cached_action(model, ROOT, model.world_grid, model.world_info, rng, target_action)
            p = 1.0 if chosen == action else 0.0
        else:
            p = target_probability(model, model.world_grid, model.world_info, action)
        if p >= 0.0:
            weights[i] *= p
        else:
            reach_known = False
        if action < _PASS:
            v = action % _MAX_VALUE + 1
            if hands[i, mover, v] == 0:
                weights[i] = 0.0
            else:
                hands[i, mover, v] -= 1
    if reach_known and seats != (1 << mover):
        rng = _cross_over(grid, info, observer, hands, weights, before, action, model, rng)
    return rng


@kernel
def belief_target_move(grid, info, observer, hands, weights, before, action, model, rng):
    """`_belief_target_move` for a target without a network."""
    return _belief_target_move(grid, info, observer, hands, weights, before, action, model, rng, target_action,
                               target_probability)


@kernel
def network_belief_target_move(grid, info, observer, hands, weights, before, action, model, rng):
    """`_belief_target_move` for a network target."""
    return _belief_target_move(grid, info, observer, hands, weights, before, action, model, rng, network_action,
                               network_probability)


@kernel
def _cross_over(grid, info, observer, hands, weights, before, action, model, rng):
    """The target's policy at a seat reads only that seat's hand, so the reach factorizes
    over the target seats: a particle ruled out by the mover's move keeps its other seats'
    hands (still consistent with their own moves) and takes the mover's hand from a
    survivor drawn by weight, if the tiles fit. Without this, at 3-4 players every guess
    must survive every target seat's every move, and the guesses die out several times a
    game. The weight becomes the particle's previous weight times the survivor's
    probability of the move."""
    mover = access.current_seat(info)
    seats = model.config[CONFIG_SEATS]
    saved = model.keys
    counts = model.scratch[SCRATCH_COUNTS:SCRATCH_COUNTS + 11]
    placed = action % _MAX_VALUE + 1 if action < _PASS else 0
    total = 0.0
    for j in range(hands.shape[0]):
        total += weights[j]
    if total <= 0.0:
        return rng
    for i in range(hands.shape[0]):
        if before[i] == 0.0 or weights[i] > 0.0:
            continue
        for v in range(11):
            saved[v] = hands[i, mover, v]
        for _ in range(4):  # a few survivors: their hand may not fit beside this particle's others
            rng, bits = rng_next(rng)
            u = np.float64(bits >> np.uint64(11)) * (1.0 / 2.0**53) * total
            j = 0  # the donor: survivors only (before > 0), not particles revived here
            while j < hands.shape[0] - 1:
                donor = weights[j] if before[j] > 0.0 else 0.0
                if donor > 0.0 and u < donor:
                    break
                u -= donor
                j += 1
            for v in range(11):
                hands[i, mover, v] = hands[j, mover, v]
            fits = (weights[j] > 0.0 and before[j] > 0.0 and _pool(grid, info, observer, seats, hands[i], counts) >= 0
                    and (placed == 0 or counts[placed] > 0))
            if fits:
                weights[i] = before[i] * weights[j] / before[j]
                before[i] = -before[i]  # revived: not a donor for the rest of this update
                break
            for v in range(11):
                hands[i, mover, v] = saved[v]
    return rng


# --- the search: the core's parts of a best response; its data is (model, hands) ---------------
@njit(inline="always", cache=True)
def particle_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """A world dealt around a particle of `hands` (P, 4, 11) picked uniformly, or with
    P = 0 a plain determinization."""
    model, hands = data
    return deal_around_particle(root_grid, root_info, observer, hands, model.config[CONFIG_SEATS], tiles, num_unseen,
                                rng, work.grid, work.info, model.scratch)


@njit(inline="always", cache=True)
def _target_move(data, node, work, rng, target_action):
    """At a target seat's turn its model's move (memoized when deterministic), else -1:
    the search chooses."""
    model = data[0]
    if not is_target(model, access.current_seat(work.info)):
        return rng, np.int64(-1)
    if is_deterministic(model):
        return _cached_action(model, node, work.grid, work.info, rng, target_action)
    return target_action(model, work.grid, work.info, rng)


@njit(inline="always", cache=True)
def target_move(data, node, work, rng):
    """`_target_move` of a target without a network."""
    return _target_move(data, node, work, rng, target_action)


@njit(inline="always", cache=True)
def network_target_move(data, node, work, rng):
    """`_target_move` of a network target."""
    return _target_move(data, node, work, rng, network_action)


@kernel
def br_rollout_leaf(work, params, data, rng):
    """Play the target's model for its seats and the epsilon-greedy rollout policy for
    the others, to the end (params.depth 0) or for params.depth placements; score the
    position reached into work.reward. Returns the rng."""
    model = data[0]
    grid, info = work.grid, work.info
    depth = params.depth
    epsilon = params.epsilon
    placements = 0
    fast = model.config[CONFIG_FAST_ROLLOUT] != 0
    network = model.config[CONFIG_KIND] == MODEL_NETWORK
    while not access.is_over(info) and (depth == 0 or placements < depth):
        if is_target(model, access.current_seat(info)):
            if fast:  # the greedy rollout policy (its first key and a safety tie-break): a fraction of the cost
                rng, p, v = policy_placement(grid, info, rng, np.int64(0), np.bool_(True))  # typed: one signature
                a = _PASS if p < 0 else access.placement_action(p, v)
            elif network:  # a network call per rollout move would cost ~50x a simulation: greedy stands in
                a = greedy_action(grid, info, model.copy_grid, model.copy_info, model.scratch, model.actions,
                                  model.keys)
            else:
                rng, a = target_action(model, grid, info, rng)
        else:
            rng, p, v = policy_placement(grid, info, rng, epsilon, np.bool_(True))
            a = _PASS if p < 0 else access.placement_action(p, v)
        apply_action(grid, info, a)
        if a < _PASS:
            placements += 1
    simulation_rewards(info, work.reward, params.margin)
    return rng


@kernel
def search_br_greedy(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, particle_world, ucb,
               expand_greedy, br_rollout_leaf, target_move)


@kernel
def search_br_random(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, particle_world, ucb,
               expand_random, br_rollout_leaf, target_move)


@kernel
def search_br_greedy_network(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, particle_world, ucb,
               expand_greedy, br_rollout_leaf, network_target_move)


@kernel
def search_br_random_network(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, particle_world, ucb,
               expand_random, br_rollout_leaf, network_target_move)


# by (the settings' `expand`, whether the target is a network: only those searches compile one)
SEARCHES = {("greedy", False): search_br_greedy, ("random", False): search_br_random,
            ("greedy", True): search_br_greedy_network, ("random", True): search_br_random_network}
BELIEF_TARGET_MOVES = {False: belief_target_move, True: network_belief_target_move}
PARTS = {expand: Parts(particle_world, expansion, br_rollout_leaf)  # what `core.compile_part` compiles ahead
         for expand, expansion in (("greedy", expand_greedy), ("random", expand_random))}
