"""RULES.md worked examples as golden tests, for the numba engine and the reference."""

import pytest

from engine import GameState, rules

# (board, value, (row, col), points)
EXAMPLES = [
    ({(3, 3): 3}, 4, (3, 4), 20),
    ({(3, 3): 5, (3, 4): 6}, 7, (3, 5), 30),
    ({(3, 3): 8, (3, 4): 8}, 8, (3, 2), 90),
    ({(3, 3): 10, (3, 5): 10, (2, 4): 3}, 4, (3, 4), 120),
    ({(3, 0): 2, (3, 1): 3, (3, 2): 4, (3, 3): 5, (3, 4): 1, (3, 5): 1}, 8, (3, 6), 100),
    ({(2, 2): 3, (3, 3): 1}, 4, (2, 1), 40),
    ({(3, 1): 9, (3, 2): 2, (3, 3): 3}, 4, (3, 4), 30),
    ({(3, 1): 6, (3, 2): 5}, 4, (3, 3), 30),
    ({(3, 2): 3, (3, 4): 5}, 4, (3, 3), 30),
    ({(3, 1): 4, (3, 2): 5, (3, 4): 5, (3, 5): 4}, 6, (3, 3), 100),
    ({(3, 2): 10, (3, 3): 10}, 4, (3, 4), 40),
    ({(3, 3): 2}, 2, (2, 2), 0),
]


def engines():
    engs = [GameState]
    try:
        from engine.reference import ReferenceGame
        engs.append(ReferenceGame)
    except ImportError:
        pass
    return engs


@pytest.fixture(params=engines(), ids=lambda e: e.__name__)
def engine(request):
    return request.param


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"example{i + 1}")
def test_worked_example_points(engine, index):
    board, value, (row, col), points = EXAMPLES[index]
    game = engine.from_position(board, [[value], [1]])
    action = rules.action_id(rules.cell_of(row, col), value)
    assert action in game.legal_actions()
    assert game.step(action) == points
    assert sum(c.minutes for c in game.last_breakdown) == points
    assert game.scores[0] == points


def test_example3_timeouts(engine):
    game = engine.from_position({(3, 3): 8, (3, 4): 8}, [[8], [1]])
    game.step(rules.action_id(rules.cell_of(3, 2), 8))
    assert {rules.cell_of(3, 1), rules.cell_of(3, 5)} <= set(game.timeout_cells)
    kinds = sorted((c.kind, c.axis) for c in game.last_breakdown)
    assert kinds == [("set3", "row"), ("sum24", "row")]


def test_example4_breakdown(engine):
    game = engine.from_position({(3, 3): 10, (3, 5): 10, (2, 4): 3}, [[4], [1]])
    game.step(rules.action_id(rules.cell_of(3, 4), 4))
    assert sorted(game.last_breakdown) == sorted([
        ("sum24", "row", 40), ("sum7", "col", 20), ("24/7", None, 60)])


def test_example10_two_runs(engine):
    game = engine.from_position({(3, 1): 4, (3, 2): 5, (3, 4): 5, (3, 5): 4}, [[6], [1]])
    game.step(rules.action_id(rules.cell_of(3, 3), 6))
    assert sorted(game.last_breakdown) == sorted([
        ("sum24", "row", 40), ("run3", "row", 30), ("run3", "row", 30)])


def test_example11_cap(engine):
    game = engine.from_position({(3, 2): 10, (3, 3): 10}, [[5, 4], [1]])
    legal = game.legal_actions()
    assert rules.action_id(rules.cell_of(3, 4), 5) not in legal
    assert rules.action_id(rules.cell_of(3, 4), 4) in legal
    with pytest.raises(ValueError):
        game.step(rules.action_id(rules.cell_of(3, 4), 5))
    assert game.step(rules.action_id(rules.cell_of(3, 4), 4)) == 40
    assert {rules.cell_of(3, 1), rules.cell_of(3, 5)} <= set(game.timeout_cells)


def test_example6_double_time(engine):
    game = engine.from_position({(2, 2): 3, (3, 3): 1}, [[4], [1]])
    game.step(rules.action_id(rules.cell_of(2, 1), 4))
    assert sorted(game.last_breakdown) == sorted([("sum7", "row", 20), ("double_time", None, 20)])
