"""The board's quarter turns (engine/symmetry.py): a game played turned is the same game."""

import numpy as np
import pytest

from engine import GameState, rules, symmetry
from env.observation import OBS_SIZE, encode, turn_observations


def test_quarter_turn_tables():
    # every quarter turn maps the start cell and the Double Time cells onto themselves
    doubles = set(rules.DOUBLE_TIME_CELLS)
    for k in range(symmetry.NUM_TURNS):
        assert symmetry.TURNED[k, rules.START_CELL] == rules.START_CELL
        assert {int(symmetry.TURNED[k, c]) for c in doubles} == doubles
    # (0, 0) -> (0, 6) -> (6, 6) -> (6, 0): clockwise
    assert [int(symmetry.TURNED[k, 0]) for k in range(4)] == [0, 6, 48, 42]
    for k in range(4):
        assert sorted(symmetry.TURNED[k]) == list(range(rules.NUM_CELLS))
        assert np.array_equal(symmetry.TURNED[k][symmetry.SOURCE[k]], np.arange(rules.NUM_CELLS))
    # four quarter turns are the identity; three undo one
    cells = np.arange(rules.NUM_CELLS)
    assert np.array_equal(symmetry.TURNED[1][symmetry.TURNED[3][cells]], cells)


def test_a_mirror_is_not_a_symmetry():
    """The Double Time pinwheel is chiral: the transpose maps (0, 2) onto (2, 0), a plain cell."""
    mirrored = {rules.cell_of(c % 7, c // 7) for c in rules.DOUBLE_TIME_CELLS}
    assert mirrored != set(rules.DOUBLE_TIME_CELLS)


@pytest.mark.parametrize("num_players,team", [(2, False), (4, False), (4, True)])
def test_a_turned_game_is_the_same_game(num_players, team):
    """Play random games and, beside each, the same deal with every action turned: the legal
    moves turn, the minutes, scores, rewards and the seats' observations (turned) agree."""
    rng = np.random.default_rng(7)
    for game in range(3):
        seed = int(rng.integers(2**31))
        turns = 1 + game % 3
        plain = GameState.new(num_players, seed=seed, team=team)
        turned = GameState.from_deal(plain.deal, num_players, team=team)
        while not plain.is_over:
            mask = plain.legal_action_mask()[None].astype(np.int8)
            assert np.array_equal(turned.legal_action_mask(), symmetry.turn_action_rows(mask, [turns])[0])
            for seat in range(num_players):
                expected = turn_observations(encode(plain, seat)[None], [turns])[0]
                np.testing.assert_array_equal(encode(turned, seat), expected)
            action = int(rng.choice(plain.legal_actions()))
            assert plain.step(action) == turned.step(symmetry.turn_action(action, turns))
            assert np.array_equal(plain.scores, turned.scores)
        assert turned.is_over
        assert np.array_equal(plain.rewards(), turned.rewards())
        assert np.array_equal(np.rot90(plain.board, -turns), turned.board)


def test_turn_rows_per_row_and_leave_pass_and_show():
    rng = np.random.default_rng(0)
    rows = rng.random((4, rules.NUM_TEAM_ACTIONS))
    turns = np.array([0, 1, 2, 3])
    out = symmetry.turn_action_rows(rows, turns)
    for b, k in enumerate(turns):
        for action in (0, 17, 245, 489, rules.PASS_ACTION, rules.SHOW_BASE + 3):
            assert out[b, symmetry.turn_action(action, k)] == rows[b, action]
    assert np.array_equal(symmetry.turn_action_rows(rows, turns * 0), rows)
    obs = rng.random((4, OBS_SIZE)).astype(np.float32)
    back = turn_observations(turn_observations(obs, turns), (4 - turns) % 4)
    assert np.array_equal(back, obs)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="expected"):
        symmetry.turn_action_rows(np.zeros((2, 10)), [0, 1])
    with pytest.raises(ValueError, match="expected"):
        turn_observations(np.zeros((2, 10)), [0, 1])
