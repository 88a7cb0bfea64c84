"""Tests of the plain-Python reference engine against the rules (docs/rules.md) (worked examples first)."""

from collections import Counter

import numpy as np
import pytest

from engine import rules
from engine.reference import Combination, ReferenceGame
from engine.rules import PASS_ACTION, action_id, cell_of, show_action

C = Combination


def play(board, value, row, col, hands_rest=((1,),), **kw):
    """From a position, seat 0 (holding only `value`) places it at (row, col)."""
    g = ReferenceGame.from_position(board, [[value], *map(list, hands_rest)], **kw)
    pts = g.step(action_id(cell_of(row, col), value))
    return g, pts


def snapshot(g):
    return (g.num_players, g.team, g.current_player, g.scores.tolist(), g.hands.tolist(),
            g.hand_sizes.tolist(), g.bag_size, g.bag.tolist(), g.board.tolist(),
            g.timeout_cells, g.is_over, g.last_breakdown, g.shown_tiles.tolist(), g.turn,
            g.removed.tolist(), g.legal_actions(), g.show_actions())


# 8 stones around the start cell: nothing is open, so no tile fits anywhere.
SEALED = [cell_of(3 + dr, 3 + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]

# ----------------------------------------------------------------- worked examples
EXAMPLES = [  # (number, board, value, (row, col), minutes)
    (1, {(3, 3): 3}, 4, (3, 4), 20),
    (2, {(3, 3): 5, (3, 4): 6}, 7, (3, 5), 30),
    (3, {(3, 3): 8, (3, 4): 8}, 8, (3, 2), 90),
    (4, {(3, 3): 10, (3, 5): 10, (2, 4): 3}, 4, (3, 4), 120),
    (5, {(3, 0): 2, (3, 1): 3, (3, 2): 4, (3, 3): 5, (3, 4): 1, (3, 5): 1}, 8, (3, 6), 100),
    (6, {(2, 2): 3, (3, 3): 1}, 4, (2, 1), 40),
    (7, {(3, 1): 9, (3, 2): 2, (3, 3): 3}, 4, (3, 4), 30),
    (8, {(3, 1): 6, (3, 2): 5}, 4, (3, 3), 30),
    (9, {(3, 2): 3, (3, 4): 5}, 4, (3, 3), 30),
    (10, {(3, 1): 4, (3, 2): 5, (3, 4): 5, (3, 5): 4}, 6, (3, 3), 100),
    (11, {(3, 2): 10, (3, 3): 10}, 4, (3, 4), 40),
    (12, {(3, 3): 2}, 2, (2, 2), 0),
]


@pytest.mark.parametrize("num,board,value,rc,minutes", EXAMPLES)
def test_worked_example_points(num, board, value, rc, minutes):
    g, pts = play(board, value, *rc)
    assert pts == minutes
    assert g.scores.tolist() == [minutes, 0]
    assert sum(c.minutes for c in g.last_breakdown) == minutes


@pytest.mark.parametrize("num,breakdown", [
    (1, (C("sum7", "row", 20),)),
    (3, (C("sum24", "row", 40), C("set3", "row", 50))),
    (4, (C("sum24", "row", 40), C("sum7", "col", 20), C("24/7", None, 60))),
    (5, (C("sum24", "row", 40), C("24in7", "row", 60))),
    (6, (C("sum7", "row", 20), C("double_time", None, 20))),
    (7, (C("run3", "row", 30),)),
    (8, (C("run3", "row", 30),)),
    (10, (C("sum24", "row", 40), C("run3", "row", 30), C("run3", "row", 30))),
    (12, ()),
])
def test_worked_example_breakdown(num, breakdown):
    _, board, value, rc, _ = EXAMPLES[num - 1]
    g, _ = play(board, value, *rc)
    assert g.last_breakdown == breakdown


def test_example_3_time_out():
    g, _ = play({(3, 3): 8, (3, 4): 8}, 8, 3, 2)
    assert g.timeout_cells == [cell_of(3, 1), cell_of(3, 5)]
    assert not any(a // 10 in (cell_of(3, 1), cell_of(3, 5)) for a in g.legal_actions())


def test_example_11_cap_and_time_out():
    g = ReferenceGame.from_position({(3, 2): 10, (3, 3): 10}, [[5, 4], [1]])
    legal = g.legal_actions()
    assert action_id(cell_of(3, 4), 5) not in legal  # row would be 25
    assert action_id(cell_of(3, 4), 4) in legal  # row 24 is fine
    before = snapshot(g)
    with pytest.raises(ValueError):
        g.step(action_id(cell_of(3, 4), 5))
    assert snapshot(g) == before
    assert g.step(action_id(cell_of(3, 4), 4)) == 40
    assert g.timeout_cells == [cell_of(3, 1), cell_of(3, 5)]


# ----------------------------------------------------------------- combinations
@pytest.mark.parametrize("board,value,rc,breakdown", [
    # runs of 3..6, in several axes; the anti axis is read top-right -> bottom-left
    ({(3, 1): 1, (3, 2): 2, (3, 3): 3}, 4, (3, 4), (C("run4", "row", 40),)),
    ({(3, 0): 1, (3, 1): 2, (3, 2): 3, (3, 3): 4}, 5, (3, 4), (C("run5", "row", 50),)),
    ({(3, 0): 1, (3, 1): 2, (3, 2): 3, (3, 3): 4, (3, 4): 5}, 6, (3, 5),
     (C("run6", "row", 60),)),
    ({(1, 3): 6, (2, 3): 5}, 4, (3, 3), (C("run3", "col", 30),)),
    ({(1, 1): 2, (2, 2): 3}, 4, (3, 3), (C("run3", "diag", 30),)),
    ({(2, 4): 1, (3, 3): 2}, 3, (4, 2), (C("run3", "anti", 30),)),  # 1 2 3 ascending
    ({(2, 4): 3, (3, 3): 2}, 1, (4, 2), (C("run3", "anti", 30),)),  # 3 2 1 descending
    # sets
    ({(3, 1): 5, (3, 2): 5, (3, 3): 5}, 5, (3, 4), (C("set4", "row", 60),)),
    ({(2, 3): 2, (4, 3): 2}, 2, (3, 3), (C("set3", "col", 50),)),
    # a run or set must contain the new tile; other tiles only count in the sum
    ({(3, 0): 1, (3, 1): 2, (3, 2): 3}, 9, (3, 3), ()),
    ({(3, 0): 2, (3, 1): 2, (3, 2): 2}, 1, (3, 3), (C("sum7", "row", 20),)),
    # 24/7 bonus 60*a*b with a = 2 (row, col), b = 1 (diag) and b = 2 (diag, anti)
    ({(3, 2): 10, (3, 4): 10, (2, 3): 10, (4, 3): 10, (2, 2): 3}, 4, (3, 3),
     (C("sum24", "row", 40), C("sum24", "col", 40), C("sum7", "diag", 20),
      C("24/7", None, 120))),
    ({(3, 2): 10, (3, 4): 10, (2, 3): 10, (4, 3): 10, (2, 2): 3, (2, 4): 3}, 4, (3, 3),
     (C("sum24", "row", 40), C("sum24", "col", 40), C("sum7", "diag", 20),
      C("sum7", "anti", 20), C("24/7", None, 240))),
    # Double Time doubles bonuses too: example 4 moved onto the 2x cell (4,5)
    ({(4, 4): 10, (4, 6): 10, (3, 5): 3}, 4, (4, 5),
     (C("sum24", "row", 40), C("sum7", "col", 20), C("24/7", None, 60),
      C("double_time", None, 120))),
    # Double Time with nothing scored stays zero (no entry)
    ({(3, 2): 1}, 1, (2, 1), ()),
    # a lone 7 in a line (n = 1) is no Sum of 7: row, col and anti here hold only the 7
    ({(2, 2): 3}, 7, (3, 3), ()),
])
def test_combinations(board, value, rc, breakdown):
    g, pts = play(board, value, *rc)
    assert g.last_breakdown == breakdown
    assert pts == sum(c.minutes for c in breakdown)


def test_line_broken_by_empty_cell_and_stone():
    board = {(3, 0): 10, (3, 1): 10, (3, 3): 3}  # (3,2) empty: 10 10 _ 3 4
    for stones in ((), (cell_of(3, 2),)):
        g, pts = play(board, 4, 3, 4, timeout_cells=stones)
        assert pts == 20 and g.last_breakdown == (C("sum7", "row", 20),)


def test_placement_must_touch_a_tile():
    g = ReferenceGame.from_position({(3, 3): 5}, [[1], [1]])
    cells = {a // 10 for a in g.legal_actions()}
    assert cells == {cell_of(3 + dr, 3 + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                     if dr or dc}


# ----------------------------------------------------------------- turns and end
def test_draw_and_turn_order():
    g = ReferenceGame.from_position({(3, 3): 3}, [[4], [1], [2]], bag=[9, 8])
    g.step(action_id(cell_of(3, 4), 4))
    assert g.hands[0].tolist() == [0] * 8 + [1, 0] and g.bag.tolist() == [8]
    assert g.current_player == 1 and g.turn == 1


def test_pass_only_when_forced():
    g = ReferenceGame.from_position({(3, 3): 5}, [[], [3]])
    assert g.legal_actions() == [PASS_ACTION]
    assert g.step(PASS_ACTION) == 0
    assert g.current_player == 1 and g.turn == 1 and not g.is_over
    assert PASS_ACTION not in g.legal_actions()
    with pytest.raises(ValueError):
        g.step(PASS_ACTION)


def test_end_all_hands_empty():
    g, pts = play({(3, 3): 3}, 4, 3, 4, hands_rest=((),))
    assert pts == 20 and g.is_over and g.legal_actions() == [] and g.show_actions() == []
    assert g.ranking().tolist() == [0, 1] and g.rewards().tolist() == [1.0, -1.0]
    before = snapshot(g)
    with pytest.raises(ValueError, match="over"):
        g.step(PASS_ACTION)
    assert snapshot(g) == before


def test_end_no_tile_fits():
    # row 10 10 with every other neighbour sealed: only (3,1)/(3,4) are open, and a 5 fits neither
    stones = [cell_of(r, c) for r in (2, 4) for c in (1, 2, 3, 4, 5)]
    g = ReferenceGame.from_position({(3, 2): 10, (3, 3): 10}, [[4], [5, 6]], timeout_cells=stones)
    assert not g.is_over and g.legal_actions() == [action_id(cell_of(3, 1), 4),
                                                   action_id(cell_of(3, 4), 4)]
    g.step(action_id(cell_of(3, 4), 4))
    assert g.is_over and g.legal_actions() == []
    assert g.hand_sizes.tolist() == [0, 2]
    # stuck from the start: nothing open at all
    g = ReferenceGame.from_position({(3, 3): 5}, [[1], [2]], timeout_cells=SEALED)
    assert g.is_over and g.legal_actions() == []


# ----------------------------------------------------------------- ranking / rewards
def over_game(scores, hands, team=False):
    g = ReferenceGame.from_position({(3, 3): 5}, hands, team=team, scores=scores,
                                    timeout_cells=SEALED)
    assert g.is_over
    return g


@pytest.mark.parametrize("scores,hands,ranking,rewards", [
    ([50, 50], [[1], [1, 2]], [0, 1], [1, -1]),  # tie-break: fewer tiles in hand
    ([50, 50], [[1, 2], [1]], [1, 0], [-1, 1]),
    ([60, 50], [[1, 2], [1]], [0, 1], [1, -1]),  # minutes first
    ([50, 50], [[1], [2]], [0, 0], [0, 0]),  # draw
    ([30, 10, 10], [[1], [1], [2]], [0, 1, 1], [1, -0.5, -0.5]),
    ([10, 10, 10], [[1], [1, 2], [3]], [0, 2, 0], [0.5, -1, 0.5]),
    ([40, 30, 30, 10], [[1], [1], [2], [2]], [0, 1, 1, 3], [1, 0, 0, -1]),
    ([40, 30, 20, 10], [[1], [1], [2], [2]], [0, 1, 2, 3], [1, 1 / 3, -1 / 3, -1]),
])
def test_ranking_and_rewards(scores, hands, ranking, rewards):
    g = over_game(scores, hands)
    assert g.ranking().tolist() == ranking
    assert np.allclose(g.rewards(), rewards) and abs(g.rewards().sum()) < 1e-12


@pytest.mark.parametrize("scores,hands,ranking,rewards", [
    ([30, 20, 10, 10], [[1], [1], [2], [2]], [0, 1, 0, 1], [1, -1, 1, -1]),
    ([0, 30, 40, 0], [[1], [1], [2], [2]], [0, 1, 0, 1], [1, -1, 1, -1]),  # team sums
    ([20, 20, 10, 10], [[1, 3], [1], [2], [2]], [1, 0, 1, 0], [-1, 1, -1, 1]),  # team tiles
    ([20, 10, 10, 20], [[1], [1, 3], [2, 3], [2]], [0, 0, 0, 0], [0, 0, 0, 0]),  # draw
])
def test_team_ranking_and_rewards(scores, hands, ranking, rewards):
    g = over_game(scores, hands, team=True)
    assert g.ranking().tolist() == ranking
    assert g.rewards().tolist() == rewards


# ----------------------------------------------------------------- team show
def test_show_actions():
    hands = [[1, 1, 2, 3], [4], [5], [6]]
    g = ReferenceGame.from_position({(3, 3): 5}, hands, team=True, bag=[1, 7, 8, 9, 9])
    assert ReferenceGame.from_position({(3, 3): 5}, hands).show_actions() == []
    assert g.show_actions() == [show_action(1), show_action(2), show_action(3)]
    legal = g.legal_actions()
    assert g.step(show_action(1)) == 0
    assert g.shown_tiles.tolist() == [1, 0, 0, 0] and g.current_player == 0 and g.turn == 0
    assert g.show_actions() == [] and g.legal_actions() == legal  # one show per turn
    with pytest.raises(ValueError):
        g.step(show_action(2))
    g.step(action_id(cell_of(3, 4), 1))  # one 1 left (+ draws a 1): still shown
    assert g.shown_tiles.tolist() == [1, 0, 0, 0] and g.last_breakdown == ()
    for seat in (1, 2, 3):
        g.step(g.legal_actions()[0])
    assert g.current_player == 0
    assert g.show_actions() == [show_action(2), show_action(3)]  # 1 is already shown
    g.step(show_action(3))  # replaces the shown 1
    assert g.shown_tiles.tolist() == [3, 0, 0, 0]
    g.step(action_id(cell_of(4, 4), 3))  # last 3 leaves the hand: cleared
    assert g.shown_tiles[0] == 0


def test_shown_value_cleared_before_draw():
    g = ReferenceGame.from_position({(3, 3): 5}, [[1, 2], [4], [5], [6]], team=True, bag=[2])
    g.step(show_action(2))
    g.step(action_id(cell_of(3, 4), 2))  # draws a 2 again, but the shown 2 left the hand
    assert g.shown_tiles[0] == 0 and g.hands[0].tolist() == [1, 1] + [0] * 8


def test_no_show_without_a_placement():
    stones = [cell_of(r, c) for r in (2, 4) for c in (1, 2, 3, 4)]
    g = ReferenceGame.from_position({(3, 2): 10, (3, 3): 10}, [[5], [4], [6], [7]],
                                    team=True, timeout_cells=stones)
    assert g.legal_actions() == [PASS_ACTION] and g.show_actions() == []


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("team", [False, True])
def test_illegal_actions_change_nothing(team):
    g = ReferenceGame.from_position({(3, 3): 5}, [[1, 2], [3], [4], [5]], team=team)
    g.step(action_id(cell_of(3, 4), 1))
    before = snapshot(g)
    bad = [-1, 501, 10_000, "1", 1.0, None, True, action_id(cell_of(3, 4), 3),
           action_id(cell_of(3, 2), 9), action_id(cell_of(0, 0), 3), PASS_ACTION]
    if not team:
        bad.append(show_action(3))
    for a in bad:
        with pytest.raises(ValueError, match="illegal action"):
            g.step(a)
        assert snapshot(g) == before
    ok = action_id(cell_of(3, 2), 3)
    assert g.step(np.int64(ok)) == 0  # numpy integers are accepted


def test_from_deal_layout_and_validation():
    deal = [v for v in range(1, 11) for _ in range(4)]
    g = ReferenceGame.from_deal(deal, 3)
    assert g.board[3, 3] == deal[0] and g.removed.tolist() == deal[1:4]
    hands = [Counter(deal[4 + 5 * s: 9 + 5 * s]) for s in range(3)]
    for s in range(3):
        assert g.hands[s].tolist() == [hands[s][v] for v in range(1, 11)]
    assert g.bag.tolist() == deal[19:] and g.bag_size == 21
    assert g.hand_sizes.tolist() == [5, 5, 5] and g.current_player == 0 and g.turn == 0
    assert g.last_breakdown == () and g.timeout_cells == [] and not g.is_over
    for bad_deal in (deal[:-1], deal + [1], deal[:-1] + [1], [0] + deal[1:]):
        with pytest.raises(ValueError):
            ReferenceGame.from_deal(bad_deal, 2)
    for n, team in ((1, False), (5, False), ("2", False), (3, True), (2, True)):
        with pytest.raises(ValueError):
            ReferenceGame.from_deal(deal, n, team)


# ----------------------------------------------------------------- random games
def lines_ok(board):
    """Independent check: every maximal run of tiles on every axis sums to <= 24."""
    for dr, dc in rules.AXIS_STEPS:
        for r in range(7):
            for c in range(7):
                if board[r, c] and not (0 <= r - dr < 7 and 0 <= c - dc < 7
                                        and board[r - dr, c - dc]):
                    s, rr, cc = 0, r, c
                    while 0 <= rr < 7 and 0 <= cc < 7 and board[rr, cc]:
                        s, rr, cc = s + board[rr, cc], rr + dr, cc + dc
                    if s > rules.LINE_CAP:
                        return False
    return True


@pytest.mark.parametrize("n,team,seed", [(2, False, 0), (2, False, 1), (3, False, 2),
                                         (4, False, 3), (4, True, 4), (4, True, 5)])
def test_random_game_invariants(n, team, seed):
    rng = np.random.default_rng(seed)
    tiles = np.repeat(np.arange(1, rules.MAX_VALUE + 1), rules.COPIES_PER_VALUE)  # four each of 1..10
    g = ReferenceGame.from_deal(rng.permutation(tiles), n, team)
    full = Counter(int(v) for v in tiles)
    stones_before = set()
    for _ in range(500):
        if g.is_over:
            break
        scores = g.scores
        actions = g.legal_actions() + g.show_actions()
        a = int(rng.choice(actions))
        mover = g.current_player
        copy = g.clone()
        pts = g.step(a)
        assert copy.scores.tolist() == scores.tolist()  # clone is independent
        assert pts == sum(c.minutes for c in g.last_breakdown) >= 0
        assert g.scores[mover] - scores[mover] == pts and (g.scores >= scores).all()
        board = g.board
        seen = Counter(int(v) for v in board[board > 0])
        for s in range(n):
            seen.update({v + 1: int(k) for v, k in enumerate(g.hands[s]) if k})
        seen.update(int(v) for v in g.bag)
        seen.update(int(v) for v in g.removed)
        assert seen == full
        assert lines_ok(board)
        stones = set(g.timeout_cells)
        assert stones >= stones_before and all(board.flat[c] == 0 for c in stones)
        stones_before = stones
        for s in range(n):
            if g.shown_tiles[s]:
                assert g.hands[s][g.shown_tiles[s] - 1] > 0
    assert g.is_over and g.legal_actions() == []
    assert g.turn <= 37 * n + n
    assert abs(g.rewards().sum()) < 1e-9


def test_new_uses_random_deal():
    g = ReferenceGame.new(2, seed=7)
    h = ReferenceGame.new(2, seed=7)
    assert snapshot(g) == snapshot(h) and g.bag_size == 24
