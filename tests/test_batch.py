"""Batch API tests: `BatchState` and the prange kernels against the single-game API.

The batch kernels call the same per-game kernels as `GameState`, so every check here
compares whole state arrays: game i of a batch must be bit-for-bit the game a
`GameState` reaches with the same deal and actions.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from engine import GameState, kernels, random_deal, rules
from engine.batch import (BatchState, batch_legal_mask, batch_random_playout, batch_reset_where,
                          play_random_games_parallel, play_random_games_serial, seeds_for)

CONFIGS = [(2, False), (3, False), (4, False), (4, True)]
IDS = ["2p", "3p", "4p", "team"]


def assert_game_equal(batch: BatchState, i: int, g: GameState, where=""):
    grid, info = g.arrays
    assert np.array_equal(batch.grid[i], grid), f"grid of game {i} {where}"
    assert np.array_equal(batch.info[i], info), f"info of game {i} {where}"


# ----------------------------------------------------------------- construction
@pytest.mark.parametrize("num_players,team", CONFIGS, ids=IDS)
def test_new_matches_from_deal(num_players, team):
    for seed in (0, 7):
        n = 37
        batch = BatchState.new(n, num_players, seed=seed, team=team)
        seeds = seeds_for(seed, n)
        assert len(batch) == n and len(set(seeds.tolist())) == n
        for i in range(n):
            g = GameState.from_deal(random_deal(int(seeds[i])), num_players, team)
            assert_game_equal(batch, i, g)
            game = batch.game(i)
            assert np.array_equal(game.arrays[1], g.arrays[1])
            assert game.arrays[1] is not batch.info[i]  # a copy
        assert batch.num_actions == (rules.NUM_TEAM_ACTIONS if team else rules.NUM_ACTIONS)
        assert batch.current_player.tolist() == [0] * n and not batch.is_over.any()
        assert batch.scores.shape == (n, num_players)


def test_seeds_for():
    assert seeds_for(3, 10).tolist() == seeds_for(3, 10).tolist()
    assert seeds_for(3, 5).tolist() == seeds_for(3, 10)[:5].tolist()
    assert seeds_for(3, 10).tolist() != seeds_for(4, 10).tolist()
    assert (seeds_for(3, 1000) >= 0).all() and seeds_for(3, 10).dtype == np.int64


def test_new_bad_arguments():
    for kw in (dict(num_games=0), dict(num_games=-1), dict(num_games=2, num_players=1),
               dict(num_games=2, num_players=5), dict(num_games=2, num_players="2"),
               dict(num_games=2, num_players=3, team=True)):
        with pytest.raises(ValueError):
            BatchState.new(**kw)


def test_reset_where():
    batch = BatchState.new(8, 2, seed=1)
    fresh = BatchState.new(8, 2, seed=1)
    batch.random_playout(seed=5)
    assert batch.is_over.all()
    done = np.zeros(8, dtype=np.bool_)
    done[[1, 4, 6]] = True
    played = batch.info.copy()
    batch_reset_where(batch.grid, batch.info, done, seeds_for(1, 8), 2, 0)
    for i in range(8):
        if done[i]:
            assert np.array_equal(batch.info[i], fresh.info[i])
            assert np.array_equal(batch.grid[i], fresh.grid[i])
        else:
            assert np.array_equal(batch.info[i], played[i])


# ----------------------------------------------------------------- batch vs single
@pytest.mark.parametrize("num_players,team", CONFIGS, ids=IDS)
def test_batch_step_matches_single_games(num_players, team):
    n = 48
    batch = BatchState.new(n, num_players, seed=num_players + 10 * team, team=team)
    games = [batch.game(i) for i in range(n)]
    rng = np.random.default_rng(0)
    steps = 0
    while not batch.is_over.all():
        masks = batch.legal_mask()
        actions = np.full(n, rules.PASS_ACTION, dtype=np.int64)
        for i, g in enumerate(games):
            single = g.legal_action_mask()[: batch.num_actions]
            assert np.array_equal(masks[i], single), f"mask of game {i}"
            if g.is_over:
                assert not masks[i].any()
                continue
            legal = np.flatnonzero(masks[i])
            shows = legal[legal >= rules.SHOW_BASE]
            if shows.size and rng.random() < 0.2:
                actions[i] = shows[rng.integers(shows.size)]
            else:
                places = legal[legal < rules.SHOW_BASE]
                actions[i] = places[rng.integers(places.size)]
        points = batch.step(actions)
        for i, g in enumerate(games):
            if g.is_over:
                assert points[i] == -1  # a finished game is left alone
            else:
                assert points[i] == g.step(int(actions[i]))
            assert_game_equal(batch, i, g, f"after step {steps}")
        assert batch.scores.tolist() == [g.scores.tolist() for g in games]
        assert batch.is_over.tolist() == [g.is_over for g in games]
        assert batch.current_player.tolist() == [g.current_player for g in games]
        steps += 1
        assert steps < 200
    assert all(g.is_over for g in games)


def test_legal_mask_width():
    batch = BatchState.new(4, 4, seed=0, team=False)
    narrow = batch.legal_mask()
    assert narrow.shape == (4, rules.NUM_ACTIONS)
    wide = np.zeros((4, rules.NUM_TEAM_ACTIONS), dtype=np.bool_)
    batch_legal_mask(batch.grid, batch.info, wide)
    assert np.array_equal(wide[:, : rules.NUM_ACTIONS], narrow) and not wide[:, rules.SHOW_BASE:].any()
    team = BatchState.new(4, 4, seed=0, team=True)
    masks = team.legal_mask()
    assert masks.shape == (4, rules.NUM_TEAM_ACTIONS) and masks[:, rules.SHOW_BASE:].any()


@pytest.mark.parametrize("team", [False, True])
def test_batch_step_illegal_actions(team):
    n = 6
    batch = BatchState.new(n, 4, seed=3, team=team)
    batch.step(np.array([g.legal_actions()[0] for g in map(batch.game, range(n))]))  # one move each
    games = [batch.game(i) for i in range(n)]
    g0 = games[0]
    occupied = rules.action_id(rules.START_CELL, 1)
    held = [v + 1 for v in range(10) if g0.hands[g0.current_player][v]]
    bad = [
        occupied,  # the start cell is taken
        rules.action_id(0, held[0]),  # a corner touches nothing yet
        rules.PASS_ACTION,  # placements exist
        -1,
        rules.NUM_TEAM_ACTIONS + 3,
        2**40,
    ]
    rng = np.random.default_rng(1)
    for a in bad:
        actions = np.array([rng.choice(g.legal_actions()) for g in games], dtype=np.int64)
        actions[::2] = a  # games 0, 2, 4 get the illegal action
        before_grid, before_info = batch.grid.copy(), batch.info.copy()
        points = batch.step(actions)
        for i, g in enumerate(games):
            if i % 2 == 0:
                assert points[i] == -1, (a, i)
                assert np.array_equal(batch.info[i], before_info[i])
                assert np.array_equal(batch.grid[i], before_grid[i])
            else:
                assert points[i] == g.step(int(actions[i]))
                assert_game_equal(batch, i, g)
    if not team:  # show actions are illegal outside the team variant
        actions = np.array([rules.show_action(held[0])] * n)
        before = batch.info.copy()
        assert (batch.step(actions) == -1).all() and np.array_equal(batch.info, before)


# ----------------------------------------------------------------- random play
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_serial_equals_parallel(num_players):
    n = 101
    total = play_random_games_serial(n, 42, num_players)
    assert total > 20 * n
    for chunks in (1, 2, 3, 7, 16, n, n + 9):
        assert play_random_games_parallel(n, 42, num_players, chunks) == total, chunks
    assert play_random_games_serial(n, 43, num_players) != total
    assert play_random_games_serial(0, 42, num_players) == 0


@pytest.mark.parametrize("num_players,team", CONFIGS, ids=IDS)
def test_random_playout_independent_of_threads(num_players, team):
    n = 64
    results = []
    threads_before = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            batch = BatchState.new(n, num_players, seed=9, team=team)
            placements = batch.random_playout(seed=4)
            results.append((batch.grid.copy(), batch.info.copy(), placements))
    finally:
        numba.set_num_threads(threads_before)
    grid, info, placements = results[0]
    for other in results[1:]:
        assert np.array_equal(grid, other[0]) and np.array_equal(info, other[1])
        assert np.array_equal(placements, other[2])
    # the same as each game played out alone with its own stream
    batch = BatchState.new(n, num_players, seed=9, team=team)
    seeds = seeds_for(4, n)
    for i in range(n):
        g = batch.game(i)
        _, k = kernels.random_playout(*g.arrays, np.uint64(seeds[i]))
        assert k == placements[i]
        assert np.array_equal(g.arrays[1], info[i]) and np.array_equal(g.arrays[0], grid[i])
    # finished, legal-looking games: one tile per placement on the board
    over = BatchState(grid, info, num_players, team)
    assert over.is_over.all()
    for i in range(n):
        g = over.game(i)
        assert (g.board > 0).sum() == 1 + placements[i]
        assert g.legal_actions() == [] and abs(g.rewards().sum()) < 1e-9


def test_batch_random_playout_kernel_direct():
    batch = BatchState.new(5, 2, seed=0)
    placements = np.zeros(5, dtype=np.int64)
    batch_random_playout(batch.grid, batch.info, seeds_for(0, 5), placements)
    assert batch.is_over.all() and (placements > 0).all()
    before = batch.info.copy()
    batch_random_playout(batch.grid, batch.info, seeds_for(0, 5), placements)  # already over
    assert np.array_equal(batch.info, before) and (placements == 0).all()
