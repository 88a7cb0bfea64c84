"""engine.access: the accessors other layers read a state through agree with GameState's
properties and with a walk over the board, in 2-, 3-, 4-player and team games."""

import numpy as np
import pytest

from engine import GameState, access, rules
from engine.batch import BatchState
from engine.layout import AXIS_STEP, CELL_OF_PAD, PAD_OF_CELL


def _bitboard(cells) -> int:
    """As the engine stores it: an int64 (bit 63, cell (6, 6), makes it negative)."""
    return int(np.uint64(sum(1 << int(PAD_OF_CELL[c]) for c in cells)).view(np.int64))


def _runs_by_walking(board, p, axis):
    """(sum, length) of the tile runs just before and just after padded cell p on `axis`."""
    cell = int(CELL_OF_PAD[p])
    dr, dc = rules.AXIS_STEPS[axis]
    out = []
    for sign in (-1, 1):
        r, c = divmod(cell, rules.BOARD_SIZE)
        total = length = 0
        r, c = r + sign * dr, c + sign * dc
        while 0 <= r < 7 and 0 <= c < 7 and board[r, c]:
            total += int(board[r, c])
            length += 1
            r, c = r + sign * dr, c + sign * dc
        out.append((total, length))
    return out


def _check_one_game(g: GameState):
    grid, info = g.arrays
    n = g.num_players
    assert access.num_players(info) == n
    assert access.is_team(info) == g.team
    assert access.current_seat(info) == g.current_player
    assert access.is_over(info) == g.is_over
    assert access.turn(info) == g.turn
    assert access.bag_left(info) == g.bag_size
    assert access.last_action(info) == g.last_action
    assert access.shown_this_turn(info) in (0, 1)
    hands = g.hands
    for s in range(n):
        assert access.score(info, s) == g.scores[s]
        assert access.hand_size(info, s) == g.hand_sizes[s]
        assert access.shown_value(info, s) == g.shown_tiles[s]
        assert [access.hand_count(info, s, v) for v in range(1, 11)] == hands[s].tolist()
        assert access.hand_values(info, s) == sum(1 << v for v in range(1, 11) if hands[s, v - 1])
    board = g.board
    assert access.occupied_cells(info) == _bitboard(np.flatnonzero(board.ravel()))
    assert access.timeout_cells(info) == _bitboard(g.timeout_cells)
    for c in range(rules.NUM_CELLS):
        assert access.tile_value(grid, PAD_OF_CELL[c]) == board.ravel()[c]
    caps = g.capacities.ravel()
    for c in g.frontier_cells:
        p = int(PAD_OF_CELL[c])
        assert access.capacity(grid, p) == caps[c]
        assert access.values_that_fit(grid, p, 0b11111111110) == sum(1 << v for v in range(1, caps[c] + 1))
        for v in (1, caps[c]):
            if v >= 1:
                assert access.placement_action(p, v) == rules.action_id(c, v)
        for axis in range(len(AXIS_STEP)):
            (sb, lb), (sa, la) = _runs_by_walking(board, p, axis)
            before, after = access.run_before(grid, p, axis), access.run_after(grid, p, axis)
            assert (access.run_sum(before), access.run_length(before)) == (sb, lb)
            assert (access.run_sum(after), access.run_length(after)) == (sa, la)


@pytest.mark.parametrize("num_players,team", [(2, False), (3, False), (4, False), (4, True)])
def test_accessors_agree_with_game_state(num_players, team):
    rng = np.random.default_rng(num_players + 10 * team)
    g = GameState.new(num_players, seed=num_players, team=team)
    checked = 0
    while not g.is_over:
        if checked % 3 == 0:
            _check_one_game(g)
        legal = g.legal_actions() + g.show_actions()
        g.step(int(legal[rng.integers(len(legal))]))
        checked += 1
    _check_one_game(g)


def test_batch_accessors_read_every_game():
    batch = BatchState.new(6, num_players=3)
    batch.reset(np.arange(6))
    batch.step(batch.legal_mask().argmax(axis=1))
    grid, info = batch.grid, batch.info
    games = [GameState(grid[i].copy(), info[i].copy()) for i in range(6)]
    assert access.movers(info).tolist() == [g.current_player for g in games]
    assert access.games_over(info).tolist() == [g.is_over for g in games]
    assert access.scores_of(info, 3).tolist() == [g.scores.tolist() for g in games]


def test_new_arrays_shapes():
    grid, info = access.new_arrays()
    g = GameState.new(2, seed=0)
    assert grid.shape == g.arrays[0].shape and info.shape == g.arrays[1].shape
    assert grid.dtype == np.int16 and info.dtype == np.int64 and not grid.any() and not info.any()
    grid, info = access.new_arrays(5)
    assert grid.shape == (5, *g.arrays[0].shape) and info.shape == (5, *g.arrays[1].shape)


def test_last_breakdown_after_env_steps():
    """A state stepped by an env's kernels reports the breakdown its own `step` would."""
    import env

    e = env.env(num_players=2)
    e.reset(seed=3)
    twin = GameState(*[a.copy() for a in e.unwrapped.game.arrays])
    rng = np.random.default_rng(0)
    scored = 0
    while not twin.is_over:
        legal = np.flatnonzero(e.last()[0]["action_mask"])
        action = int(legal[rng.integers(len(legal))])
        e.step(action)
        points = twin.step(action)
        assert e.unwrapped.game.last_breakdown == twin.last_breakdown == e.unwrapped.last_breakdown
        assert sum(c.minutes for c in twin.last_breakdown) == points
        scored += points > 0
    assert scored > 0


def test_vector_env_arrays_are_its_live_games():
    import gymnasium

    v = gymnasium.make_vec("TwentyFourSeven-v0", num_envs=3)
    obs, _ = v.reset(seed=1)
    grid, info = v.unwrapped.arrays
    actions = obs["action_mask"].argmax(axis=1)
    _, _, _, _, step_info = v.step(actions)
    assert access.movers(info).tolist() == v.unwrapped.current_player.tolist()
    for i in range(3):
        g = v.unwrapped.game(i)
        assert np.array_equal(g.arrays[1], info[i]) and np.array_equal(g.arrays[0], grid[i])
        assert sum(c.minutes for c in g.last_breakdown) == step_info["points"][i]
