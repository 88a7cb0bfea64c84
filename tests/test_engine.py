"""Engine tests: hand-built positions on both engines, invariants over random games,
determinism, bad input, and the PlayerView / world sampler.

Hand-built positions run on the numba engine (`GameState`) and the reference
(`ReferenceGame`) alike; everything else exercises the numba engine, which the
differential test (test_engine_differential.py) ties to the reference.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from engine import GameState, random_deal, rules
from engine.reference import ReferenceGame
from engine.rules import AXES, AXIS_STEPS, DOUBLE_TIME_CELLS, PASS_ACTION, action_id, cell_of, show_action

ENGINES = (GameState, ReferenceGame)


@pytest.fixture(params=ENGINES, ids=lambda e: e.__name__)
def engine(request):
    return request.param


def make(engine, board, hands, scores=None, **kw):
    """A position on either engine (`scores`: the minutes so far, default zeros)."""
    if engine is GameState:
        kw.setdefault("num_players", len(hands))
    return engine.from_position(board, hands, scores=scores, **kw)


def act(rc, value):
    return action_id(cell_of(*rc), value)


def bd(game):
    return sorted((c[0], c[1] or "", int(c[2])) for c in game.last_breakdown)


def expect(entries, cell):
    """Sorted (kind, axis, minutes) entries, plus Double Time if `cell` is a 2x cell."""
    out = [(k, a or "", m) for k, a, m in entries]
    total = sum(m for _, _, m in out)
    if cell in DOUBLE_TIME_CELLS and total:
        out.append(("double_time", "", total))
    return sorted(out)


def play(engine, board, value, rc, rest=((1,),), **kw):
    """Seat 0 holds only `value` and places it at rc; returns (game, points)."""
    g = make(engine, board, [[value], *map(list, rest)], **kw)
    assert act(rc, value) in g.legal_actions()
    pts = g.step(act(rc, value))
    assert pts == sum(c[2] for c in g.last_breakdown)
    assert g.scores[0] == pts
    return g, pts


# Lines used to lay out runs and sets: origin per axis so that 6 cells fit.
ORIGINS = {"row": (1, 0), "col": (0, 5), "diag": (0, 0), "anti": (0, 6)}


def line_cells(axis, k, shift=0):
    dr, dc = AXIS_STEPS[AXES.index(axis)]
    r0, c0 = ORIGINS[axis]
    r0, c0 = r0 + shift * dr, c0 + shift * dc
    return [(r0 + i * dr, c0 + i * dc) for i in range(k)]


def line_case(axis, values, j, shift=0):
    """Board holding `values` along `axis` except index j; the new tile goes at j."""
    cells = line_cells(axis, len(values), shift)
    board = {rc: v for i, (rc, v) in enumerate(zip(cells, values)) if i != j}
    return board, values[j], cells[j]


# ----------------------------------------------------------------- runs and sets
RUN_CASES = []
for _axis in AXES:
    for _k in (3, 4, 5, 6):
        for _direction in ("up", "down"):
            for _j in sorted({0, _k // 2, _k - 1}):
                RUN_CASES.append((_axis, _k, _direction, _j))


@pytest.mark.parametrize("axis,k,direction,j", RUN_CASES,
                         ids=[f"{a}-run{k}-{d}-at{j}" for a, k, d, j in RUN_CASES])
def test_runs_every_axis(engine, axis, k, direction, j):
    start = 1 if k in (3, 6) else 2  # sums 6, 14, 20, 21: never 7 or 24
    values = list(range(start, start + k))
    if direction == "down":
        values.reverse()
    board, value, rc = line_case(axis, values, j, shift=k % 2)
    g, pts = play(engine, board, value, rc)
    assert bd(g) == expect([(f"run{k}", axis, rules.RUN_MINUTES[k])], cell_of(*rc))


SET_CASES = [(axis, k, v, j) for axis in AXES for k, v in ((3, 5), (4, 5), (3, 2), (4, 6))
             for j in sorted({0, 1, k - 1})]


@pytest.mark.parametrize("axis,k,v,j", SET_CASES,
                         ids=[f"{a}-set{k}of{v}-at{j}" for a, k, v, j in SET_CASES])
def test_sets_every_axis(engine, axis, k, v, j):
    board, value, rc = line_case(axis, [v] * k, j)
    g, _ = play(engine, board, value, rc, rest=((),))
    entries = [(f"set{k}", axis, rules.SET_MINUTES[k])]
    if v * k == 24:
        entries.append(("sum24", axis, 40))
    assert bd(g) == expect(entries, cell_of(*rc))


@pytest.mark.parametrize("board,value,rc,entries", [
    # two runs through the new tile (RULES example 10) and a run of 3 summing to 24
    ({(3, 1): 4, (3, 2): 5, (3, 4): 5, (3, 5): 4}, 6, (3, 3),
     [("sum24", "row", 40), ("run3", "row", 30), ("run3", "row", 30)]),
    ({(1, 3): 7, (2, 3): 8}, 9, (3, 3), [("run3", "col", 30), ("sum24", "col", 40)]),
    # a run on one axis and a set on another
    ({(3, 1): 3, (3, 2): 4, (1, 3): 5, (2, 3): 5}, 5, (3, 3),
     [("run3", "row", 30), ("set3", "col", 50)]),
    # a run / set must contain the new tile; a stretch of 2 is nothing
    ({(3, 0): 1, (3, 1): 2, (3, 2): 3}, 9, (3, 3), []),
    ({(3, 0): 4, (3, 1): 4, (3, 2): 4}, 1, (3, 3), []),
    ({(3, 2): 2, (3, 3): 3}, 5, (3, 4), []),  # 2 3 5: no run
    ({(3, 3): 2}, 2, (2, 2), []),  # set of 2
    ({(3, 2): 4, (3, 3): 5}, 5, (3, 4), []),  # 4 5 5: neither
    # runs on mixed steps: 3 4 3 is no run
    ({(3, 2): 3, (3, 3): 4}, 3, (3, 4), []),
])
def test_combination_edge_cases(engine, board, value, rc, entries):
    g, _ = play(engine, board, value, rc, rest=((),))
    assert bd(g) == expect(entries, cell_of(*rc))


# ----------------------------------------------------------------- sums
@pytest.mark.parametrize("board,value,rc,entries", [
    ({(3, 3): 3}, 4, (3, 4), [("sum7", "row", 20)]),
    ({(3, 3): 3}, 4, (4, 3), [("sum7", "col", 20)]),
    ({(3, 3): 3}, 4, (4, 4), [("sum7", "diag", 20)]),
    ({(3, 3): 3}, 4, (4, 2), [("sum7", "anti", 20)]),
    ({(3, 1): 1, (3, 2): 2}, 4, (3, 3), [("sum7", "row", 20)]),  # 3 tiles, no run
    ({(1, 3): 1, (2, 3): 1, (4, 3): 1, (5, 3): 1}, 3, (3, 3), [("sum7", "col", 20)]),  # 5 tiles
    ({(3, 1): 2, (3, 2): 2, (3, 3): 2}, 1, (3, 4), [("sum7", "row", 20)]),  # 4 tiles
    ({(2, 2): 3}, 7, (3, 3), []),  # a lone 7 is no Sum of 7 (row, col, anti hold only it)
    ({(3, 2): 10, (3, 3): 10}, 4, (3, 4), [("sum24", "row", 40)]),
    ({(0, 0): 10, (1, 1): 10}, 4, (2, 2), [("sum24", "diag", 40)]),
    ({(0, 6): 9, (1, 5): 9}, 6, (2, 4), [("sum24", "anti", 40)]),
    # 24 in 7 tiles on a row and on a column; 24 in 6 tiles is only a 24
    ({(3, 0): 2, (3, 1): 3, (3, 2): 4, (3, 3): 5, (3, 4): 1, (3, 5): 1}, 8, (3, 6),
     [("sum24", "row", 40), ("24in7", "row", 60)]),
    ({(0, 3): 1, (1, 3): 1, (2, 3): 5, (3, 3): 5, (4, 3): 2, (5, 3): 2}, 8, (6, 3),
     [("sum24", "col", 40), ("24in7", "col", 60)]),
    ({(0, 0): 2, (1, 1): 3, (2, 2): 9, (3, 3): 1, (4, 4): 3, (5, 5): 2}, 4, (6, 6),
     [("sum24", "diag", 40), ("24in7", "diag", 60)]),
    ({(0, 6): 2, (1, 5): 3, (2, 4): 9, (3, 3): 1, (4, 2): 3, (5, 1): 2}, 4, (6, 0),
     [("sum24", "anti", 40), ("24in7", "anti", 60)]),
    ({(3, 1): 3, (3, 2): 4, (3, 3): 5, (3, 4): 1, (3, 5): 3}, 8, (3, 6), [("sum24", "row", 40)]),
])
def test_sums(engine, board, value, rc, entries):
    g, _ = play(engine, board, value, rc, rest=((),))
    assert bd(g) == expect(entries, cell_of(*rc))


@pytest.mark.parametrize("board,value,rc,entries", [
    # a*b = 1 (RULES example 4), 2 (a=2,b=1), 2 (a=1,b=2), 4 (a=2,b=2)
    ({(3, 3): 10, (3, 5): 10, (2, 4): 3}, 4, (3, 4),
     [("sum24", "row", 40), ("sum7", "col", 20), ("24/7", None, 60)]),
    ({(3, 2): 10, (3, 4): 10, (2, 3): 10, (4, 3): 10, (2, 2): 3}, 4, (3, 3),
     [("sum24", "row", 40), ("sum24", "col", 40), ("sum7", "diag", 20), ("24/7", None, 120)]),
    ({(3, 2): 10, (3, 4): 10, (2, 3): 3, (2, 2): 3}, 4, (3, 3),
     [("sum24", "row", 40), ("sum7", "col", 20), ("sum7", "diag", 20), ("24/7", None, 120)]),
    ({(3, 2): 10, (3, 4): 10, (2, 3): 10, (4, 3): 10, (2, 2): 3, (2, 4): 3}, 4, (3, 3),
     [("sum24", "row", 40), ("sum24", "col", 40), ("sum7", "diag", 20), ("sum7", "anti", 20),
      ("24/7", None, 240)]),
    # Double Time doubles the bonuses too: example 4 on the 2x cell (4,5)
    ({(4, 4): 10, (4, 6): 10, (3, 5): 3}, 4, (4, 5),
     [("sum24", "row", 40), ("sum7", "col", 20), ("24/7", None, 60)]),
])
def test_24_7_bonus(engine, board, value, rc, entries):
    g, pts = play(engine, board, value, rc, rest=((),))
    want = expect(entries, cell_of(*rc))
    assert bd(g) == want and pts == sum(m for _, _, m in want)


# ----------------------------------------------------------------- Double Time
@pytest.mark.parametrize("cell", DOUBLE_TIME_CELLS)
def test_double_time_every_cell(engine, cell):
    r, c = divmod(cell, 7)
    nb = (r, c - 1) if c > 0 else (r, c + 1)
    g, pts = play(engine, {nb: 3}, 4, (r, c))
    assert pts == 40
    assert bd(g) == [("double_time", "", 20), ("sum7", "row", 20)]


@pytest.mark.parametrize("cell", DOUBLE_TIME_CELLS)
def test_double_time_zero_stays_zero(engine, cell):
    r, c = divmod(cell, 7)
    nb = (r, c - 1) if c > 0 else (r, c + 1)
    g, pts = play(engine, {nb: 1}, 1, (r, c))
    assert pts == 0 and g.last_breakdown == ()


def test_no_double_time_off_the_pinwheel(engine):
    g, pts = play(engine, {(3, 3): 3}, 4, (3, 4))  # (3,4) = cell 25 is plain
    assert pts == 20 and bd(g) == [("sum7", "row", 20)]


# ----------------------------------------------------------------- lines and legality
@pytest.mark.parametrize("kind", ["empty", "stone"])
def test_line_broken_by_empty_cell_and_time_out(engine, kind):
    # row 3: A B _ 4 [3]: the gap at (3,2) is a Time Out stone iff A + B + 1 + 4 > 24
    a, b = (10, 10) if kind == "stone" else (10, 5)
    g, pts = play(engine, {(3, 0): a, (3, 1): b, (3, 3): 4}, 3, (3, 4))
    assert pts == 20 and bd(g) == [("sum7", "row", 20)]
    assert (cell_of(3, 2) in g.timeout_cells) == (kind == "stone")


@pytest.mark.parametrize("axis", AXES)
def test_cap_24_legal_25_illegal(engine, axis):
    cells = line_cells(axis, 5)  # _ 10 10 [x] _ : both ends on the board
    g = make(engine, {cells[1]: 10, cells[2]: 10}, [[5, 4], [1]])
    legal = g.legal_actions()
    assert act(cells[3], 5) not in legal and act(cells[3], 4) in legal
    assert act(cells[0], 5) not in legal and act(cells[0], 4) in legal
    with pytest.raises(ValueError):
        g.step(act(cells[3], 5))
    double = 2 if cell_of(*cells[3]) in DOUBLE_TIME_CELLS else 1
    assert g.step(act(cells[3], 4)) == 40 * double
    assert {cell_of(*cells[0]), cell_of(*cells[4])} <= set(g.timeout_cells)
    assert not any(a // 10 in g.timeout_cells for a in g.legal_actions() if a < PASS_ACTION)


def test_placement_must_touch_a_tile(engine):
    g = make(engine, {(3, 3): 5}, [[1], [1]])
    cells = {a // 10 for a in g.legal_actions()}
    assert cells == {cell_of(3 + dr, 3 + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc}
    g = make(engine, {(0, 0): 5}, [[1, 2], [1]])  # a corner: 3 neighbours
    assert g.legal_actions() == sorted(action_id(cell_of(r, c), v)
                                       for r, c in ((0, 1), (1, 0), (1, 1)) for v in (1, 2))


def test_only_held_values_and_each_once(engine):
    g = make(engine, {(3, 3): 5}, [[2, 2, 7], [1]])
    legal = g.legal_actions()
    assert len(legal) == len(set(legal)) == 16 and legal == sorted(legal)
    assert {a % 10 + 1 for a in legal} == {2, 7}


def test_draw_and_turn_order(engine):
    g = make(engine, {(3, 3): 3}, [[4], [1], [2]], bag=[9, 8])
    g.step(act((3, 4), 4))
    assert g.hands[0].tolist() == [0] * 8 + [1, 0] and g.bag.tolist() == [8] and g.bag_size == 1
    assert g.current_player == 1 and g.turn == 1
    g.step(g.legal_actions()[0])
    assert g.hands[1].tolist() == [0] * 7 + [1, 0, 0] and g.bag_size == 0
    g.step(g.legal_actions()[0])  # empty bag: no draw
    assert g.hand_sizes.tolist() == [1, 1, 0] and g.current_player == 0 and g.turn == 3


# ----------------------------------------------------------------- pass and the end
TENS = {(3, 3): 10, (3, 4): 10, (4, 3): 10, (4, 4): 10}  # every neighbour takes at most 4
# A 3x3 magic square of sum 24 around the centre: every neighbour is a Time Out.
MAGIC = {(2, 2): 7, (2, 3): 10, (2, 4): 7, (3, 2): 8, (3, 3): 8, (3, 4): 8,
         (4, 2): 9, (4, 3): 6, (4, 4): 9}
MAGIC_RING = sorted(cell_of(r, c) for r in range(1, 6) for c in range(1, 6)
                    if not (2 <= r <= 4 and 2 <= c <= 4))


def test_pass_only_when_nothing_fits(engine):
    g = make(engine, TENS, [[5, 6], [3]])
    assert not g.is_over and g.legal_actions() == [PASS_ACTION]
    assert g.show_actions() == []
    assert g.step(PASS_ACTION) == 0 and g.last_breakdown == ()
    assert g.current_player == 1 and g.turn == 1 and not g.is_over
    assert PASS_ACTION not in g.legal_actions()
    with pytest.raises(ValueError):
        g.step(PASS_ACTION)
    g.step(act((3, 2), 3))
    assert g.current_player == 0


def test_no_show_while_forced_to_pass(engine):
    g = make(engine, TENS, [[5], [3], [6], [7]], team=True)
    assert g.legal_actions() == [PASS_ACTION] and g.show_actions() == []


def test_end_all_hands_empty(engine):
    g = make(engine, {(3, 3): 3}, [[4], []])
    assert g.step(act((3, 4), 4)) == 20
    assert g.is_over and g.legal_actions() == [] and g.show_actions() == []
    assert g.ranking().tolist() == [0, 1] and g.rewards().tolist() == [1.0, -1.0]


def test_end_no_tile_fits(engine):
    g = make(engine, TENS, [[5], [6, 9]])
    assert g.is_over and g.legal_actions() == [] and g.show_actions() == []
    assert g.ranking().tolist() == [0, 1]  # 0 - 0 minutes, one tile fewer


def test_end_no_open_cell(engine):
    g = make(engine, MAGIC, [[1], [2]])
    assert g.is_over and g.legal_actions() == []
    board = dict(MAGIC)
    del board[(4, 4)]
    g = make(engine, board, [[9], [1, 2]])
    assert not g.is_over
    assert g.step(act((4, 4), 9)) == 180  # three 24s and two runs of 3
    assert bd(g) == sorted([("sum24", "row", 40), ("sum24", "col", 40), ("sum24", "diag", 40),
                            ("run3", "col", 30), ("run3", "diag", 30)])
    assert g.is_over and g.legal_actions() == [] and g.hand_sizes.tolist() == [0, 2]
    assert g.timeout_cells == MAGIC_RING


def test_game_goes_on_while_another_seat_can_place(engine):
    g = make(engine, TENS, [[5], [9], [2]])
    assert not g.is_over and g.legal_actions() == [PASS_ACTION]
    g.step(PASS_ACTION)
    assert g.legal_actions() == [PASS_ACTION]
    g.step(PASS_ACTION)
    assert g.current_player == 2 and not g.is_over and PASS_ACTION not in g.legal_actions()


# ----------------------------------------------------------------- ranking / rewards
@pytest.mark.parametrize("scores,hands,ranking,rewards", [
    ([50, 50], [[1], [1, 2]], [0, 1], [1, -1]),  # tie-break: fewer tiles in hand
    ([50, 50], [[1, 2], [1]], [1, 0], [-1, 1]),
    ([60, 50], [[1, 2], [1]], [0, 1], [1, -1]),  # minutes first
    ([50, 50], [[1], [2]], [0, 0], [0, 0]),  # draw
    ([0, 0], [[], []], [0, 0], [0, 0]),
    ([30, 10, 10], [[1], [1], [2]], [0, 1, 1], [1, -0.5, -0.5]),
    ([10, 10, 10], [[1], [1, 2], [3]], [0, 2, 0], [0.5, -1, 0.5]),
    ([10, 20, 30], [[1], [1], [1]], [2, 1, 0], [-1, 0, 1]),
    ([40, 30, 30, 10], [[1], [1], [2], [2]], [0, 1, 1, 3], [1, 0, 0, -1]),
    ([40, 30, 20, 10], [[1], [1], [2], [2]], [0, 1, 2, 3], [1, 1 / 3, -1 / 3, -1]),
    ([20, 20, 20, 20], [[1], [1, 2], [2], [3, 3, 3]], [0, 2, 0, 3], [2 / 3, -1 / 3, 2 / 3, -1]),
    ([5, 5, 5, 5], [[1], [1], [2], [2]], [0, 0, 0, 0], [0, 0, 0, 0]),
])
def test_ranking_and_rewards(engine, scores, hands, ranking, rewards):
    g = make(engine, MAGIC, hands, scores=scores)
    assert g.is_over and g.scores.tolist() == scores
    assert g.ranking().tolist() == ranking
    assert np.allclose(g.rewards(), rewards) and abs(g.rewards().sum()) < 1e-12


@pytest.mark.parametrize("scores,hands,ranking,rewards", [
    ([30, 20, 10, 10], [[1], [1], [2], [2]], [0, 1, 0, 1], [1, -1, 1, -1]),
    ([0, 30, 40, 0], [[1], [1], [2], [2]], [0, 1, 0, 1], [1, -1, 1, -1]),  # team sums
    ([0, 50, 40, 0], [[1], [1], [2], [2]], [1, 0, 1, 0], [-1, 1, -1, 1]),
    ([20, 20, 10, 10], [[1, 3], [1], [2], [2]], [1, 0, 1, 0], [-1, 1, -1, 1]),  # team tiles
    ([20, 20, 10, 10], [[1], [1, 3], [2], [2]], [0, 1, 0, 1], [1, -1, 1, -1]),
    ([20, 10, 10, 20], [[1], [1, 3], [2, 3], [2]], [0, 0, 0, 0], [0, 0, 0, 0]),  # draw
])
def test_team_ranking_and_rewards(engine, scores, hands, ranking, rewards):
    g = make(engine, MAGIC, hands, scores=scores, team=True)
    assert g.ranking().tolist() == ranking
    assert g.rewards().tolist() == rewards


# ----------------------------------------------------------------- team show
def test_show_actions(engine):
    hands = [[1, 1, 2, 3], [4], [5], [6]]
    assert make(engine, {(3, 3): 5}, hands).show_actions() == []
    g = make(engine, {(3, 3): 5}, hands, team=True, bag=[1, 7, 8, 9, 9])
    assert g.show_actions() == [show_action(1), show_action(2), show_action(3)]
    legal = g.legal_actions()
    assert g.step(show_action(1)) == 0 and g.last_breakdown == ()
    assert g.shown_tiles.tolist() == [1, 0, 0, 0] and g.current_player == 0 and g.turn == 0
    assert g.scores.tolist() == [0, 0, 0, 0] and g.hand_sizes.tolist() == [4, 1, 1, 1]
    assert g.show_actions() == [] and g.legal_actions() == legal  # one show per turn
    with pytest.raises(ValueError):
        g.step(show_action(2))
    g.step(act((3, 4), 1))  # one 1 left (+ draws a 1): still shown
    assert g.shown_tiles.tolist() == [1, 0, 0, 0]
    for _ in (1, 2, 3):
        g.step(g.legal_actions()[0])
    assert g.current_player == 0
    assert g.show_actions() == [show_action(2), show_action(3)]  # 1 is already shown
    g.step(show_action(3))  # replaces the shown 1
    assert g.shown_tiles.tolist() == [3, 0, 0, 0]
    g.step(act((4, 4), 3))  # the last 3 leaves the hand: cleared
    assert g.shown_tiles[0] == 0


def test_shown_value_cleared_before_draw(engine):
    g = make(engine, {(3, 3): 5}, [[1, 2], [4], [5], [6]], team=True, bag=[2])
    g.step(show_action(2))
    g.step(act((3, 4), 2))  # draws a 2 again, but the shown 2 left the hand
    assert g.shown_tiles[0] == 0 and g.hands[0].tolist() == [1, 1] + [0] * 8


def test_show_then_other_seats(engine):
    g = make(engine, {(3, 3): 5}, [[1, 2], [3, 4], [5], [6]], team=True)
    g.step(show_action(2))
    g.step(act((3, 4), 1))
    assert g.current_player == 1 and g.show_actions() == [show_action(3), show_action(4)]
    g.step(show_action(4))
    assert g.shown_tiles.tolist() == [2, 4, 0, 0]


# ----------------------------------------------------------------- invariants (numba)
def lines_ok(board):
    """Every maximal run of tiles on every axis sums to <= 24."""
    for dr, dc in AXIS_STEPS:
        for r in range(7):
            for c in range(7):
                if board[r, c] and not (0 <= r - dr < 7 and 0 <= c - dc < 7 and board[r - dr, c - dc]):
                    s, rr, cc = 0, r, c
                    while 0 <= rr < 7 and 0 <= cc < 7 and board[rr, cc]:
                        s, rr, cc = s + board[rr, cc], rr + dr, cc + dc
                    if s > rules.LINE_CAP:
                        return False
    return True


def touching(board):
    """Empty cells with a tile among their 8 neighbours."""
    padded = np.pad(board > 0, 1)
    near = sum(padded[1 + dr:8 + dr, 1 + dc:8 + dc] for dr in (-1, 0, 1) for dc in (-1, 0, 1)
               if dr or dc)
    return set(np.flatnonzero((near > 0) & (board == 0)).tolist())


def brute_capacity(board, cell):
    """The largest value that fits on empty `cell` by the line sums (0..10)."""
    r, c = divmod(cell, 7)
    room = rules.MAX_VALUE
    for dr, dc in AXIS_STEPS:
        s = 0
        for sign in (1, -1):
            rr, cc = r + sign * dr, c + sign * dc
            while 0 <= rr < 7 and 0 <= cc < 7 and board[rr, cc]:
                s, rr, cc = s + board[rr, cc], rr + sign * dr, cc + sign * dc
        room = min(room, rules.LINE_CAP - s)
    return max(room, 0)


FULL = Counter({v: 4 for v in range(1, 11)})


@pytest.mark.parametrize("num_players,team", [(2, False), (3, False), (4, False), (4, True)])
def test_random_game_invariants(num_players, team):
    hand_cap = rules.HAND_SIZE[num_players]
    for seed in range(40):
        rng = np.random.default_rng(seed)
        g = GameState.new(num_players, seed=seed + 100 * num_players + team, team=team)
        stones_before: set[int] = set()
        while not g.is_over:
            legal, shows = g.legal_actions(), g.show_actions()
            mask = g.legal_action_mask()
            # legal set: sorted, unique, the mask, is_legal
            assert legal == sorted(set(legal)) and legal
            assert np.flatnonzero(mask).tolist() == legal + shows
            assert all(g.is_legal(a) for a in legal + shows)
            assert not any(g.is_legal(int(a)) for a in rng.choice(np.flatnonzero(~mask), 20))
            # pass only when no placement; placements only on open cells that fit
            board = g.board
            open_cells = touching(board) - set(g.timeout_cells)
            hand = g.hands[g.current_player]
            fits = sorted(action_id(c, v) for c in open_cells for v in range(1, 11)
                          if hand[v - 1] and v <= brute_capacity(board, c))
            assert legal == (fits or [PASS_ACTION])
            if shows:
                assert legal != [PASS_ACTION] and team
            scores, mover = g.scores, g.current_player
            a = int(shows[rng.integers(len(shows))]) if shows and rng.random() < 0.2 \
                else int(legal[rng.integers(len(legal))])
            twin = g.clone()
            pts = g.step(a)
            assert twin.scores.tolist() == scores.tolist() and twin.turn == g.turn - (a < rules.SHOW_BASE)
            # scores
            assert pts >= 0 and pts == sum(c.minutes for c in g.last_breakdown)
            assert g.scores[mover] - scores[mover] == pts and (g.scores >= scores).all()
            # 40 tiles accounted for
            board = g.board
            seen = Counter(board[board > 0].tolist())
            for s in range(num_players):
                seen.update({v + 1: int(k) for v, k in enumerate(g.hands[s]) if k})
            seen.update(g.bag.tolist())
            seen.update(g.removed.tolist())
            assert seen == FULL
            assert g.hand_sizes.tolist() == g.hands.sum(axis=1).tolist()
            assert (g.hand_sizes <= hand_cap).all()
            assert g.bag_size == len(g.bag)
            # lines and Time Outs
            assert lines_ok(board)
            stones = set(g.timeout_cells)
            assert stones >= stones_before
            assert all(board.flat[c] == 0 for c in stones)
            assert stones <= touching(board)
            assert stones == {c for c in touching(board) if brute_capacity(board, c) == 0}
            caps = g.capacities.ravel()
            for c in touching(board) - stones:
                assert caps[c] == brute_capacity(board, c)
            stones_before = stones
            for s in range(num_players):
                if g.shown_tiles[s]:
                    assert team and g.hands[s][g.shown_tiles[s] - 1] > 0
        # the end: nobody can place
        assert g.legal_actions() == [] and g.show_actions() == []
        assert not g.legal_action_mask().any()
        caps = g.capacities
        biggest = int(caps.max())
        for s in range(num_players):
            held = np.flatnonzero(g.hands[s])
            assert held.size == 0 or held.min() + 1 > biggest
        r = g.rewards()
        assert abs(r.sum()) < 1e-9 and (np.abs(r) <= 1).all()
        assert g.turn <= 37 * num_players + num_players


# ----------------------------------------------------------------- determinism
def trajectory(g, seed):
    rng = np.random.default_rng(seed)
    out = []
    while not g.is_over:
        legal = g.legal_actions() + g.show_actions()
        a = legal[rng.integers(len(legal))]
        out.append((a, g.step(a)))
    return out, g.scores.tolist(), g.arrays[1].tolist()


@pytest.mark.parametrize("num_players,team", [(2, False), (3, False), (4, False), (4, True)])
def test_same_seed_same_game(num_players, team):
    for seed in (0, 1, 2**40 + 3):
        a = GameState.new(num_players, seed=seed, team=team)
        b = GameState.new(num_players, seed=seed, team=team)
        c = GameState.from_deal(random_deal(seed), num_players, team)
        for x in (b, c):
            assert np.array_equal(a.arrays[0], x.arrays[0]) and np.array_equal(a.arrays[1], x.arrays[1])
        assert a.deal.tolist() == random_deal(seed).tolist()
        assert trajectory(a, seed) == trajectory(b, seed) == trajectory(c, seed)


def test_random_deal():
    tiles = np.repeat(np.arange(1, rules.MAX_VALUE + 1), rules.COPIES_PER_VALUE).tolist()  # four each of 1..10
    for seed in range(20):
        d = random_deal(seed)
        assert d.tolist() == random_deal(seed).tolist()
        assert sorted(d.tolist()) == tiles
    assert len({tuple(random_deal(s).tolist()) for s in range(50)}) == 50
    assert random_deal(-1).tolist() == random_deal(2**63 - 1).tolist()
    assert sorted(random_deal(None).tolist()) == tiles
    for bad in ("1", 1.0, True, [1]):
        with pytest.raises(ValueError):
            random_deal(bad)


def test_from_deal_layout(engine):
    deal = [v for v in range(1, 11) for _ in range(4)]
    for n, h in ((2, 6), (3, 5), (4, 5)):
        g = engine.from_deal(deal, n)
        assert g.board[3, 3] == deal[0] and g.removed.tolist() == deal[1:4]
        for s in range(n):
            c = Counter(deal[4 + h * s: 4 + h * (s + 1)])
            assert g.hands[s].tolist() == [c[v] for v in range(1, 11)]
        assert g.bag.tolist() == deal[4 + n * h:] and g.bag_size == 36 - n * h
        assert g.hand_sizes.tolist() == [h] * n and g.current_player == 0 and g.turn == 0
        assert g.scores.tolist() == [0] * n and g.last_breakdown == ()
        assert g.timeout_cells == [] and not g.is_over
    g = GameState.from_deal(np.array(deal, dtype=np.int8), 2)
    assert g.deal.tolist() == deal


# ----------------------------------------------------------------- bad input
def snap(g: GameState):
    grid, info = g.arrays
    return grid.copy(), info.copy(), g.last_breakdown


def same(g: GameState, before) -> bool:
    grid, info = g.arrays
    return (np.array_equal(grid, before[0]) and np.array_equal(info, before[1])
            and g.last_breakdown == before[2])


@pytest.mark.parametrize("team", [False, True])
def test_illegal_actions_raise_and_change_nothing(team):
    g = GameState.from_position({(3, 3): 5, (3, 4): 10}, [[1, 2, 10], [3], [4], [5]], 4, team)
    for a in (act((2, 2), 1), act((4, 2), 3), act((4, 3), 4), act((2, 3), 5)):
        g.step(a)
    assert g.current_player == 0 and g.hands[0].tolist() == [0, 1] + [0] * 7 + [1]
    if team:
        g.step(show_action(2))
    before = snap(g)
    legal = g.legal_actions() + g.show_actions()
    assert act((3, 5), 2) in legal
    bad = [
        act((3, 3), 2),  # occupied
        act((0, 0), 2),  # touches nothing
        act((3, 5), 10),  # row 5 10 10 = 25
        act((3, 5), 3),  # value not in hand
        PASS_ACTION,  # a placement exists
        show_action(2),  # non-team: no shows; team: already shown this turn
        show_action(5),  # not in hand
        -1, rules.num_actions(team), 10**9, -(10**9),
        3.0, "a", None, True, False, np.float64(2.0), [act((3, 5), 2)], np.bool_(True),
    ]
    for a in bad:
        with pytest.raises(ValueError, match="illegal action") as info:
            g.step(a)
        assert repr(a) in str(info.value) and str(legal[:3])[1:-1] in str(info.value)
        assert "legal actions" in str(info.value)
        assert same(g, before), a
        assert not g.is_legal(a)
    assert all(g.is_legal(a) for a in legal)
    g.step(np.int64(act((3, 5), 2)))  # numpy integers are accepted


def test_huge_int_action_is_a_value_error():
    g = GameState.from_position({(3, 3): 5}, [[1], [2]])
    before = snap(g)
    for a in (2**63, 2**64, 2**70, -(2**63) - 1, -(2**70)):
        assert not g.is_legal(a)
        with pytest.raises(ValueError, match="illegal action"):
            g.step(a)
        assert same(g, before)


def test_action_after_game_over():
    g = GameState.from_position({(3, 3): 3}, [[4], []])
    g.step(act((3, 4), 4))
    assert g.is_over
    before = snap(g)
    for a in (PASS_ACTION, act((3, 2), 4), act((2, 2), 1), show_action(1), -1):
        with pytest.raises(ValueError, match="over"):
            g.step(a)
        assert same(g, before)
    assert g.legal_actions() == [] and g.show_actions() == []


def test_show_after_showing_and_non_team():
    g = GameState.from_position({(3, 3): 5}, [[1, 2], [3], [4], [5]], 4, team=True)
    g.step(show_action(1))
    before = snap(g)
    for a in (show_action(1), show_action(2)):
        with pytest.raises(ValueError, match="illegal action"):
            g.step(a)
        assert same(g, before)
    g = GameState.from_position({(3, 3): 5}, [[1, 2], [3], [4], [5]], 4)
    before = snap(g)
    with pytest.raises(ValueError, match="illegal action"):
        g.step(show_action(1))
    assert same(g, before) and g.show_actions() == []


DEAL = [v for v in range(1, 11) for _ in range(4)]


@pytest.mark.parametrize("n,team", [(1, False), (5, False), (0, False), (-2, False), ("2", False),
                                    (2.0, False), (True, False), (None, False), (2, True), (3, True)])
def test_wrong_player_counts(engine, n, team):
    with pytest.raises(ValueError):
        engine.from_deal(DEAL, n, team)
    with pytest.raises(ValueError):
        engine.new(n, seed=0, team=team)
    if engine is GameState or type(n) is int:  # the reference's helper casts with int()
        with pytest.raises(ValueError):
            engine.from_position({(3, 3): 5}, [[1]] * (n if type(n) is int and 0 < n < 6 else 2),
                                 n, team)


@pytest.mark.parametrize("deal", [
    DEAL[:-1], DEAL + [1], [], DEAL[:-1] + [1], [0] + DEAL[1:], DEAL[:-1] + [11],
    [v - 1 for v in DEAL], np.array(DEAL).reshape(4, 10), [str(v) for v in DEAL],
    [v + 0.5 for v in DEAL], [None] * 40, DEAL[:39] + [None], "1" * 40, 5, None,
    np.array(DEAL, dtype=bool), {i: v for i, v in enumerate(DEAL)},
], ids=lambda d: type(d).__name__ + str(np.shape(d) if not isinstance(d, dict) else "dict"))
def test_malformed_deals(engine, deal):
    with pytest.raises(ValueError):
        engine.from_deal(deal, 2)


@pytest.mark.parametrize("kw", [
    dict(board={(3, 3): 0}, hands=[[1], [2]]),
    dict(board={(3, 3): 11}, hands=[[1], [2]]),
    dict(board={(3, 3): 5}, hands=[[0], [2]]),
    dict(board={(3, 3): 5}, hands=[[1], [2]], bag=[12]),
    dict(board={(3, 3): 5}, hands=[[1]]),
    dict(board={(3, 3): 5}, hands=[[1], [2], [3]]),
])
def test_from_position_validation(engine, kw):
    with pytest.raises(ValueError):
        engine.from_position(num_players=2, **kw)


@pytest.mark.parametrize("kw", [
    dict(board={(3, 3): 5}, hands=[[1], [2]], current_player=2),
    dict(board={(3, 3): 5}, hands=[[1], [2]], current_player=-1),
    dict(board={(3, 3): 5, (7, 0): 3}, hands=[[1], [2]]),
    dict(board={(3, 3): 5, (-1, 0): 3}, hands=[[1], [2]]),
    dict(board={(3, 3): 5}, hands=[[1], [2]], bag=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 5),
])
def test_from_position_rejects_impossible_positions(engine, kw):
    """A seat that does not exist, a cell off the board, a bag larger than the tile set."""
    with pytest.raises(ValueError):
        engine.from_position(num_players=2, **kw)


# ----------------------------------------------------------------- PlayerView / sample_world
def test_player_view_and_sample_world():
    from engine.determinize import unseen_counts
    from engine.view import PlayerView

    for num_players, team in ((2, False), (3, False), (4, True)):
        rng = np.random.default_rng(num_players)
        g = GameState.new(num_players, seed=11, team=team)
        for _ in range(9):  # a few moves, shows included
            legal = g.show_actions() or g.legal_actions()
            g.step(int(legal[rng.integers(len(legal))]))
        for seat in range(num_players):
            view = PlayerView(g, seat)
            assert view.hand.tolist() == g.hands[seat].tolist()
            unseen = view.unseen_counts()
            partner = (seat + 2) % 4 if team else None
            shown = int(g.shown_tiles[partner]) if team else 0
            assert unseen.sum() == 40 - (g.board > 0).sum() - g.hand_sizes[seat] - (shown > 0)
            assert (unseen == unseen_counts(g, seat)).all()
            for k in range(5):
                w = view.sample_world(np.random.default_rng(k))
                wb = w.board
                assert np.array_equal(wb, g.board) and w.timeout_cells == g.timeout_cells
                assert w.hands[seat].tolist() == g.hands[seat].tolist()
                assert w.hand_sizes.tolist() == g.hand_sizes.tolist()
                assert w.scores.tolist() == g.scores.tolist() and w.bag_size == g.bag_size
                assert w.current_player == g.current_player and w.turn == g.turn
                if g.current_player == seat:
                    assert w.legal_actions() == g.legal_actions()
                tiles = Counter(wb[wb > 0].tolist())
                for s in range(num_players):
                    tiles.update({v + 1: int(c) for v, c in enumerate(w.hands[s]) if c})
                tiles.update(w.bag.tolist())
                tiles.update(w.removed.tolist())
                assert tiles == FULL
                if shown:
                    assert w.hands[partner][shown - 1] >= 1 and w.shown_tiles[partner] == shown
                # the world is a playable game
                w2 = w.clone()
                while not w2.is_over:
                    w2.step(w2.legal_actions()[0])
        # hidden information is not used: a world sampled for seat 0 (differing from g
        # only in what seat 0 cannot see) gives the same samples for the same rng seed
        other = PlayerView(g, 0).sample_world(np.random.default_rng(99))
        assert other.arrays[1].tolist() != g.arrays[1].tolist()
        for k in range(3):
            w1 = PlayerView(g, 0).sample_world(np.random.default_rng(k))
            w2 = PlayerView(other, 0).sample_world(np.random.default_rng(k))
            assert np.array_equal(w1.arrays[0], w2.arrays[0])
            assert np.array_equal(w1.arrays[1], w2.arrays[1])


def test_player_view_guards():
    from engine.view import PlayerView

    g = GameState.new(2, seed=0)
    with pytest.raises(ValueError):
        PlayerView(g, 2)
    with pytest.raises(PermissionError):
        PlayerView(g, 0).full_state(object())


# --- select_bit: the PDEP form and the broadword form agree --------------------------------------
def _selected(select, xs, js):
    from numba import njit

    @njit
    def run(xs, js):
        out = np.empty(len(xs), dtype=np.int64)
        for k in range(len(xs)):
            out[k] = select(xs[k], js[k])
        return out

    return run(xs, js).tolist()


def test_select_bit_finds_the_jth_set_bit_both_ways():
    from engine import kernels

    rng = np.random.default_rng(0)
    xs = rng.integers(1, 2**62, size=2000, dtype=np.int64)
    xs[:10] = [1, 2, 3, 1 << 48, (1 << 49) - 1, -1, np.int64(-2**63), 0x0101010101010101, 5, 7 << 40]  # bit 63 too
    counts = np.array([bin(int(x) & (2**64 - 1)).count("1") for x in xs])
    js = (rng.random(len(xs)) * counts).astype(np.int64)
    expected = [[p for p in range(64) if (int(x) >> p) & 1][j] for x, j in zip(xs, js)]
    assert _selected(kernels.select_bit_broadword, xs, js) == expected
    if kernels.HAS_FAST_PDEP:  # (elsewhere only the broadword form compiles: PDEP is not an instruction there)
        assert _selected(kernels.select_bit_deposit, xs, js) == expected
    assert kernels.select_bit is (kernels.select_bit_deposit if kernels.HAS_FAST_PDEP else kernels.select_bit_broadword)
