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
from engine.batch import (BatchState, batch_legal_mask, batch_random_playout, batch_reset,
                          batch_step, play_random_games_parallel, play_random_games_serial, seeds_for)

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
               dict(num_games=2, num_players=3, team=True), dict(num_games="3"), dict(num_games=2.0),
               dict(num_games=True), dict(num_games=2, num_players=4, team="no"),
               dict(num_games=2, num_players=4, team=None), dict(num_games=2, num_players=4, team=2),
               dict(num_games=2, seed=1.5), dict(num_games=2, seed="1")):
        with pytest.raises(ValueError):
            BatchState.new(**kw)
    # real bools, numpy bools and 0/1 are flags
    for flag in (True, np.bool_(True), 1):
        assert BatchState.new(2, 4, team=flag).team is True
    assert BatchState.new(2, 2, team=np.bool_(False)).team is False


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
    # ids outside the action space are bad input, not illegal moves: nothing changes
    outside = [-1, batch.num_actions, rules.NUM_TEAM_ACTIONS + 3, 2**40]
    for a in outside:
        actions = np.array([g.legal_actions()[0] for g in games], dtype=np.int64)
        actions[3] = a
        before_grid, before_info = batch.grid.copy(), batch.info.copy()
        with pytest.raises(ValueError, match=rf"actions\[3\] = {a} is out of range 0\.\.{batch.num_actions - 1}"):
            batch.step(actions)
        assert np.array_equal(batch.grid, before_grid) and np.array_equal(batch.info, before_info)


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


# ----------------------------------------------------------------- bad input
def assert_unchanged(batch: BatchState, before):
    assert np.array_equal(batch.grid, before[0]) and np.array_equal(batch.info, before[1])


def test_step_rejects_wrong_shapes_and_types():
    """The issue's example: 2 actions for 4 games used to change all 4."""
    batch = BatchState.new(4, 2, seed=0)
    actions = np.array([g.legal_actions()[0] for g in map(batch.game, range(4))])
    before = batch.grid.copy(), batch.info.copy()
    bad = {
        "shape": [actions[:2], actions.reshape(2, 2), actions[:, None], np.int64(5), [], np.zeros(0, int)],
        "ints": [actions.astype(np.float64), actions + 0.5, np.array([np.nan] * 4), np.ones(4, dtype=bool),
                 None, "abcd", [1, 2, "3", 4], [1, 2, None, 4], np.array(["1"] * 4), {0: 1}],
        "out of range": [np.array([2**64 - 1, 0, 0, 0], dtype=np.uint64), [2**70, 0, 0, 0]],
        "array": [[[1, 2], [3]], [1, [2, 3], 4, 5]],
    }
    for kind, values in bad.items():
        for v in values:
            with pytest.raises(ValueError) as err:
                batch.step(v)
            assert "actions" in str(err.value), (kind, v, err.value)
            assert_unchanged(batch, before)
    with pytest.raises(ValueError, match="18446744073709551615 is out of range"):
        batch.step(np.array([2**64 - 1, 0, 0, 0], dtype=np.uint64))  # not reported as -1


def test_legal_mask_out_is_checked():
    batch = BatchState.new(4, 2, seed=0)
    expected = batch.legal_mask()
    big = np.zeros((4, 600), dtype=np.bool_)
    for out in (big[:, :10],  # the example: the kernel wrote past the view
                big[:, :rules.NUM_ACTIONS],  # right shape, strided
                np.zeros((4, rules.NUM_ACTIONS), dtype=np.int8),
                np.zeros((4, rules.NUM_ACTIONS), dtype=np.int64),
                np.zeros((3, rules.NUM_ACTIONS), dtype=np.bool_),
                np.zeros((4, rules.NUM_TEAM_ACTIONS), dtype=np.bool_),
                np.zeros(4 * rules.NUM_ACTIONS, dtype=np.bool_),
                np.zeros((rules.NUM_ACTIONS, 4), dtype=np.bool_).T,
                np.zeros((4, rules.NUM_ACTIONS), dtype=np.bool_).tolist(),
                np.ma.zeros((4, rules.NUM_ACTIONS), dtype=np.bool_),
                "mask", 0):
        with pytest.raises(ValueError, match="out"):
            batch.legal_mask(out)
    assert not big.any()
    frozen = np.zeros((4, rules.NUM_ACTIONS), dtype=np.bool_)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        batch.legal_mask(frozen)
    aliased = batch.info.reshape(-1).view(np.bool_)[: 4 * rules.NUM_ACTIONS].reshape(4, rules.NUM_ACTIONS)
    with pytest.raises(ValueError, match="share memory"):
        batch.legal_mask(aliased)
    out = np.ones((4, rules.NUM_ACTIONS), dtype=np.bool_)
    assert batch.legal_mask(out) is out and np.array_equal(out, expected)


def test_game_index_is_checked():
    batch = BatchState.new(3, 2, seed=0)
    assert np.array_equal(batch.game(np.uint8(2)).arrays[1], batch.info[2])
    for i in (3, -1, 2**64 - 1, np.uint64(2**64 - 1), 1.0, "0", None, True, [0]):
        with pytest.raises(ValueError, match="game index"):
            batch.game(i)


def test_reset_seeds():
    batch = BatchState.new(3, 2, seed=0)
    before = batch.grid.copy(), batch.info.copy()
    for bad in ([1, 2], [[1, 2, 3]], [1.0, 2.0, 3.0], [True, False, True], None, "abc", [1, None, 2]):
        with pytest.raises(ValueError, match="seeds"):
            batch.reset(bad)
        assert_unchanged(batch, before)
    # any int is a seed, reduced like random_deal's: the same deals in every dtype
    seeds = [-1, 2**63 - 1, 7]
    batch.reset(seeds)
    for i, s in enumerate(seeds):
        assert batch.game(i).deal.tolist() == random_deal(s).tolist()
    batch.reset(np.array([2**64 - 1, 2**63 + 7, 3], dtype=np.uint64))
    for i, s in enumerate((2**64 - 1, 2**63 + 7, 3)):
        assert batch.game(i).deal.tolist() == random_deal(s).tolist()


def _kernel_versions():
    return {k: len(k.signatures) for k in (batch_step, batch_reset, batch_legal_mask)}


def test_odd_arrays_are_converted_not_recompiled():
    """Every integer dtype, strided views, read-only and byte-swapped arrays reach the
    kernels as C-contiguous int64: the same results and no new compiled version (a new
    one for the step kernel takes minutes and looks like a hang)."""
    batch = BatchState.new(4, 2, seed=0)
    actions = np.array([g.legal_actions()[0] for g in map(batch.game, range(4))], dtype=np.int64)
    expected = BatchState.new(4, 2, seed=0)
    points = expected.step(actions)
    expected.reset(np.arange(4))
    expected.legal_mask()
    versions = _kernel_versions()
    readonly = actions.copy()
    readonly.flags.writeable = False
    variants = [actions.astype(np.int32), actions.astype(np.uint16), actions.astype(">i8"),
                np.repeat(actions, 3)[::3], readonly, actions.tolist(), tuple(int(a) for a in actions)]
    start = batch.grid.copy(), batch.info.copy()
    for v in variants:
        batch.grid[:], batch.info[:] = start
        assert np.array_equal(batch.step(v), points)
    seeds = np.arange(4)
    for v in (seeds.astype(np.int8), np.repeat(seeds, 2)[::2], seeds.astype(np.uint64), seeds.astype(">i4")):
        batch.reset(v)
        assert np.array_equal(batch.info, expected.info)
    assert _kernel_versions() == versions


def test_constructor_checks_the_state_arrays():
    batch = BatchState.new(3, 3, seed=4)
    batch.step(np.array([g.legal_actions()[0] for g in map(batch.game, range(3))]))
    grid, info = batch.grid, batch.info
    BatchState(grid.copy(), info.copy(), 3, False)  # a played state passes
    with pytest.raises(ValueError):
        BatchState(grid.copy(), info.copy(), 2, False)  # another player count
    with pytest.raises(ValueError):
        BatchState(grid.copy(), info.copy(), 3, "no")
    for bad_grid, bad_info in ((grid.astype(np.int32), info.copy()), (grid.copy(), info.astype(np.int32)),
                               (grid.copy()[:, ::-1], info.copy()), (grid.copy(), info.copy()[:2]),
                               (grid.copy()[:0], info.copy()[:0]), (grid.copy().tolist(), info.copy()),
                               (grid.copy(), np.zeros_like(info))):
        with pytest.raises(ValueError):
            BatchState(bad_grid, bad_info, 3, False)
    # corrupt one field of game 1: each would let the kernels index outside the arrays
    # or contradicts the board
    from engine import layout

    corruptions = {
        "seat": lambda g, f: f.__setitem__((1, layout.CURRENT), 7),
        "bag position": lambda g, f: f.__setitem__((1, layout.BAG_POS), 99),
        "bag value": lambda g, f: f.__setitem__((1, layout.DEAL + rules.NUM_TILES - 1), 11),
        "hand count": lambda g, f: f.__setitem__((1, layout.HAND + 5), 5),
        "hand mask": lambda g, f: f.__setitem__((1, layout.HAND_MASK), 0),
        "frontier": lambda g, f: f.__setitem__((1, layout.FRONTIER), 0),
        "shown": lambda g, f: f.__setitem__((1, layout.SHOWN), 3),
        "last action": lambda g, f: f.__setitem__((1, layout.LAST_ACTION), 10**6),
        "breakdown": lambda g, f: f.__setitem__((1, layout.BREAKDOWN + layout.BD_RUN_UP), 9),
        "tile on the border": lambda g, f: g.__setitem__((1, 0, layout.VAL), 5),
        "tile value": lambda g, f: g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL], layout.VAL), 12),
        "capacity": lambda g, f: g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL + 1], layout.CAP), 0),
        "line record": lambda g, f: g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL + 1],
                                                   layout.RUN_BEFORE), 90 | 7 << layout.LEN_SHIFT),
        "line over 24": lambda g, f: g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL], layout.VAL), 10)
        or g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL + 1], layout.VAL), 10)
        or g.__setitem__((1, layout.PAD_OF_CELL[rules.START_CELL + 2], layout.VAL), 10),
    }
    for name, corrupt in corruptions.items():
        g, f = grid.copy(), info.copy()
        corrupt(g, f)
        with pytest.raises(ValueError, match="game 1|board 1"):
            BatchState(g, f, 3, False)


@pytest.mark.parametrize("num_players,team", CONFIGS, ids=IDS)
def test_check_states_accepts_every_state_of_play(num_players, team):
    """The board-derived fields of a played state equal a rebuild of its position, at
    every step of random games (shows included): the check refuses no real state."""
    from engine.batch import check_states

    batch = BatchState.new(12, num_players, seed=21, team=team)
    rng = np.random.default_rng(2)
    while not batch.is_over.all():
        check_states(batch.grid, batch.info, num_players, team)
        masks = batch.legal_mask()
        batch.step([rng.choice(np.flatnonzero(m)) if m.any() else rules.PASS_ACTION for m in masks])
    check_states(batch.grid, batch.info, num_players, team)
