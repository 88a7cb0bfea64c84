"""Fused numba kernels for the envs: step + observation + mask (+ auto-reset) in one call.

The AEC env calls `step_and_observe` once per action; the vector env calls `vec_reset`
and `vec_step` once per batch (``prange`` over games, no Python loop). All rules come from
the engine kernels (`engine.kernels.is_legal`, `apply_action`, `rewards`, `reset`,
`shuffle_deal`) and the observation and legal mask from `env.observation.encode_mover_into`
(built from `engine.kernels.mark_placements` and `mark_pass_and_shows`, as
`engine.kernels.legal_mask` is), so the envs cannot disagree with `GameState`.

Game i of a vector env draws each new deal from its own splitmix64 stream ``rng[i]``:
the deal seed is ``next(rng[i]) >> 1``, i.e. the deal is ``engine.random_deal(that seed)``,
so results do not depend on the thread count.

Each ``prange`` body only calls one NRT-free kernel (`engine.kernels.kernel`) with the
whole batch arrays and the game index, which slices them itself: a slice such as
``grid[i]`` taken in a parallel region with reference counting updates the parent array's
atomic refcount from every thread, and the threads would contend for it. The index goes in as
``np.int64(i)``: numba types a ``prange`` index as int64 in one pass and uint64 in another,
and would compile each body kernel twice.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine import kernel_cache, kernels
from engine.access import current_seat, is_over, score
from engine.kernels import rng_next

from .observation import encode_into, encode_mover_into

kernel_cache.register(__name__, "the environments", 3)


@kernels.kernel
def step_and_observe(grid, info, action, obs, mask):
    """Apply `action` if it is legal, then write the next mover's observation into `obs`
    and its legal mask (bool) into `mask` (all False once the game is over).
    Returns the minutes scored, or -1 for an illegal action (nothing is changed)."""
    if not kernels.is_legal(grid, info, action):
        return -1
    points = kernels.apply_action(grid, info, action)
    encode_mover_into(grid, info, obs, mask.view(np.int8))
    return points


@njit(inline="always", cache=True)
def _new_game(grid, info, rng, i, deal, num_players, team):
    state, z = rng_next(rng[i])
    rng[i] = state
    kernels.shuffle_deal(z >> np.uint64(1), deal)
    kernels.reset(grid, info, deal, num_players, team)


@njit(inline="always", cache=True)
def _observe_mover(grid, info, i, obs, mask, current):
    current[i] = current_seat(info)
    encode_mover_into(grid, info, obs, mask)


@kernels.kernel
def _reset_game(grid, info, i, rng, deals, num_players, team, obs, mask, current):
    _new_game(grid[i], info[i], rng, i, deals[i], num_players, team)
    _observe_mover(grid[i], info[i], i, obs[i], mask[i], current)


@njit(parallel=True, cache=True)
def vec_reset(grid, info, rng, deals, num_players, team, obs, mask, current):
    """Deal every game afresh from its stream; observe the seat to move."""
    for i in prange(grid.shape[0]):
        _reset_game(grid, info, np.int64(i), rng, deals, num_players, team, obs, mask, current)


@kernels.kernel
def _reset_game_from_deal(grid, info, i, given, num_players, team, obs, mask, current):
    kernels.reset(grid[i], info[i], given[i], num_players, team)
    _observe_mover(grid[i], info[i], i, obs[i], mask[i], current)


@njit(parallel=True, cache=True)
def vec_reset_from_deals(grid, info, given, num_players, team, obs, mask, current):
    """Set game i up from the explicit deal given[i]; observe the seat to move."""
    for i in prange(grid.shape[0]):
        _reset_game_from_deal(grid, info, np.int64(i), given, num_players, team, obs, mask, current)


@kernels.kernel
def _mark_illegal(grid, info, actions, bad):
    """bad[i] = actions[i] is illegal in game i; returns how many are."""
    num_bad = 0
    for i in range(grid.shape[0]):
        ok = kernels.is_legal(grid[i], info[i], actions[i])
        bad[i] = not ok
        num_bad += not ok
    return num_bad


@kernels.kernel
def _step_game(grid, info, i, actions, rng, deals, num_players, team, obs, mask, reward,
               rewards_all, terminated, current, points, final_obs, final_scores):
    """Game i of `vec_step` (its legal action already checked)."""
    g = grid[i]
    f = info[i]
    seat = current_seat(f)
    points[i] = kernels.apply_action(g, f, actions[i])
    ra = rewards_all[i]
    ra[:] = 0.0
    if is_over(f):
        kernels.rewards(f, ra)
        reward[i] = ra[seat]
        terminated[i] = True
        encode_into(g, f, seat, final_obs[i])
        for s in range(final_scores.shape[1]):
            final_scores[i, s] = score(f, s)
        _new_game(g, f, rng, i, deals[i], num_players, team)
    else:
        reward[i] = 0.0
        terminated[i] = False
    _observe_mover(g, f, i, obs[i], mask[i], current)


@kernels.kernel
def _list_finished(terminated, ended):
    """ended[:k] = the indices of the finished games, in order; returns k."""
    k = 0
    for i in range(terminated.shape[0]):
        if terminated[i]:
            ended[k] = i
            k += 1
    return k


@njit(parallel=True, cache=True)
def vec_step(grid, info, actions, rng, deals, num_players, team, obs, mask, reward,
             rewards_all, terminated, current, points, final_obs, final_scores, bad, ended):
    """One action per game for its seat to move, then observe the next mover.

    Returns ``(num_bad, num_finished)``. First every action is checked; if any is
    illegal, bad[i] marks those games, nothing changes and ``(count, 0)`` is returned.
    Otherwise game i takes actions[i]: reward[i] is the acting seat's final reward if the
    game ended (else 0), rewards_all[i] every seat's; a finished game writes its final
    observation (from the acting seat) into final_obs[i] and its scores into
    final_scores[i], then is dealt afresh (same-step auto-reset), and obs/mask/current
    describe the fresh game's first mover. ended[:num_finished] lists the finished games
    (so the Python side needs no extra pass over the batch)."""
    # the check is serial: a few ns per game, cheaper than a second parallel region
    num_bad = _mark_illegal(grid, info, actions, bad)
    if num_bad > 0:
        return num_bad, 0
    for i in prange(grid.shape[0]):
        _step_game(grid, info, np.int64(i), actions, rng, deals, num_players, team, obs, mask, reward,
                   rewards_all, terminated, current, points, final_obs, final_scores)
    return 0, _list_finished(terminated, ended)
