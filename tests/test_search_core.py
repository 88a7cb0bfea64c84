"""The one search core: the same moves as before its parts were made pluggable, and
each part (selection, leaf evaluation) doing what it says."""

import json
from pathlib import Path

import numpy as np
import pytest

import agents
from agents import search_kernels as sk
from agents import search_parts as parts
from agents.play import play_game
from engine.deal import random_deal

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "search_moves.json"
CASES = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("case", CASES, ids=[f"{c['spec']}-{c['num_players']}p-deal{c['deal_seed']}" for c in CASES])
def test_search_plays_the_recorded_moves(case):
    """Recorded by tests/fixtures/record_search_moves.py with the code before the core
    was restructured: every seat plays the spec on a fixed deal with fixed seeds."""
    n, d = case["num_players"], case["deal_seed"]
    spec = case["spec"].replace("net=", f"net={ROOT}/")  # from any working directory
    seats = [agents.make(spec) for _ in range(n)]
    record = play_game(seats, random_deal(d), n, seeds=[100 * d + s for s in range(n)])
    assert record.error is None
    assert record.actions == case["actions"]


NET = str(ROOT / "tests" / "fixtures" / "net_2p.pt")


def forced_win_view():
    """Seat 0 holds one 8 and trails 0-30; every placement ends the game. Only an 8 next
    to the two 8s (a set and a 24: 90 minutes) wins."""
    from engine import GameState, rules
    from engine.view import PlayerView

    game = GameState.from_position({(3, 3): 8, (3, 4): 8}, [[8], []], scores=[0, 30])
    winning = {rules.action_id(rules.cell_of(3, 2), 8), rules.action_id(rules.cell_of(3, 5), 8)}
    return PlayerView(game, 0), winning


@pytest.mark.parametrize("spec", ["ismcts:iterations=200", "ismcts:iterations=200,selection=puct",
                                  "ismcts:iterations=200,depth=0,expand=random,widen=0",
                                  f"ismcts:net={NET},iterations=200,selection=puct",
                                  f"ismcts:net={NET},iterations=60,leaf=value",
                                  f"ismcts:net={NET},iterations=60,leaf=value,selection=ucb,prior=3"])
def test_every_combination_of_parts_finds_the_winning_move(spec):
    view, winning = forced_win_view()
    action, visits, _ = agents.make(spec, seed=3).act_with_visits(view)
    assert action in winning
    assert set(np.flatnonzero(visits)) <= set(view.legal_actions())


def test_value_leaves_back_up_one_value_per_simulation():
    agent = agents.make(f"ismcts:net={NET},iterations=40,leaf=value", seed=0)
    from engine import GameState
    from engine.view import PlayerView

    _, visits, _ = agent.act_with_visits(PlayerView(GameState.new(2, seed=9), 0))
    assert visits.sum() == 40 and agent.last_iterations == 40
    tree = agent._lockstep.trees
    assert tree.meta[0, parts.COUNT] == 41  # every simulation expanded one new node
    assert tree.nodes[0, 0, sk.VISITS] == 40


@pytest.mark.parametrize("changes, message", [
    ({"selection": 7}, "selection must be"), ({"leaf": -1}, "leaf must be"), ({"expand": 3}, "expand must be"),
    ({"widen": float("nan")}, "finite: widen"),
])
def test_the_parameter_record_refuses_bad_parts(changes, message):
    with pytest.raises(ValueError, match=message):
        parts.parameters(0.5, **changes)


def test_the_parameter_record_names_every_part():
    record = parts.parameters(1.5, selection=parts.SELECT_PUCT, leaf=parts.LEAF_VALUE, depth=2, widen=0.0)
    assert record.shape == (parts.NUM_PARAMETERS,) and record.dtype == np.float64
    assert record[parts.P_C] == 1.5 and record[parts.P_SELECTION] == parts.SELECT_PUCT
    assert record[parts.P_LEAF] == parts.LEAF_VALUE and record[parts.P_DEPTH] == 2


def test_value_leaves_need_a_network():
    with pytest.raises(ValueError, match="give net=PATH"):
        agents.make("ismcts:leaf=value")


def test_a_timed_value_search_warms_up_with_a_fixed_budget():
    """warm_up searches two simulations without a clock: it must not wait for one."""
    agent = agents.make(f"ismcts:net={NET},leaf=value,time=0.05", seed=0)
    agent.warm_up()
    assert agent.last_iterations == 2


def middle_game():
    """The game after 16 greedy moves of a 2-player deal: a position with many moves."""
    from engine import GameState
    from engine.view import PlayerView

    game = GameState.new(2, seed=5)
    greedy = agents.make("greedy", seed=0)
    for _ in range(16):
        game.step(greedy.act(None, PlayerView(game, game.current_player)))
    return game


def middle_game_view():
    """The seat to move's view of `middle_game`."""
    from engine.view import PlayerView

    game = middle_game()
    return PlayerView(game, game.current_player)


@pytest.mark.parametrize("k", [2, 3, 8])
def test_sequential_halving_searches_only_its_candidates_and_plays_the_best_finalist(k):
    view = middle_game_view()
    agent = agents.make(f"ismcts:halving={k},iterations=600", seed=4)
    agent.act_with_visits(view)  # the first move ranks the root the same way as the second
    action, visits, values = agent.act_with_visits(view)
    order = agent._tree.order[: agent._tree.meta[parts.ORDER_LEN]]
    candidates = set(agent._tree.order[:k].tolist())
    assert set(np.flatnonzero(visits)) == candidates  # every candidate, nothing else
    assert visits.sum() == 600 and len(order) > k
    finalists = np.argsort(-visits, kind="stable")[:2]  # the last phase's two: the most visits
    assert action in finalists
    means = values[finalists] / visits[finalists]
    assert values[action] / visits[action] == means.max()
    if k == 8:  # phases of 200: 25 a candidate, then 50, then 100
        assert sorted(visits[visits > 0].tolist()) == [25] * 4 + [75] * 2 + [175] * 2


def test_sequential_halving_is_reproducible_and_finds_the_winning_move():
    view = middle_game_view()
    first = agents.make("ismcts:halving=4,iterations=300", seed=9).act_with_visits(view)
    again = agents.make("ismcts:halving=4,iterations=300", seed=9).act_with_visits(view)
    assert first[0] == again[0] and np.array_equal(first[1], again[1])
    win_view, winning = forced_win_view()
    assert agents.make("ismcts:halving=4,iterations=200", seed=3).act(None, win_view) in winning
    # halving with a time budget: tests/test_agents.py, test_a_timed_move_keeps_its_budget...


@pytest.mark.parametrize("spec, message", [
    ("ismcts:halving=1", "at least 2"), ("ismcts:halving=4,selection=puct", "selection=ucb"),
    ("ismcts:halving=4,expand=random", "expand=greedy"), ("pimc:halving=4", "not of pimc"),
    (f"ismcts:net={NET},leaf=value,halving=4", "leaf=rollout"), ("selfplay:halving=1", "at least 2")])
def test_sequential_halving_refuses_what_it_cannot_do(spec, message):
    with pytest.raises(ValueError, match=message):
        agents.make(spec)


def evaluator_workspace(rows=parts.MOVE_VALUE_ROWS):
    """A search workspace holding the fixture network's fast evaluator (move_values with
    `rows` rows), and that packed evaluator."""
    from agents.nets import load_net

    packed = load_net(NET, "cpu").evaluator.packed()
    return parts.new_workspace(packed, move_value_rows=rows), packed


def afterstate_values_in_python(game, packed):
    """{action: the mover's value of the position after it}, by `value_kernels.evaluate`."""
    from agents import value_kernels as vk

    seat, out = game.current_player, {}
    for a in game.legal_actions():
        after = game.clone()
        after.step(a)
        out[a] = vk.evaluate(*after.arrays, packed)[seat]
    return out


def test_evaluator_expansion_picks_the_best_afterstate_and_keeps_the_scores():
    """EXPAND_EVALUATOR: a node's new child is its untried move with the best afterstate
    value for the mover; the scores are kept in the node's row and reused."""
    from engine import rules

    game = middle_game()
    work, packed = evaluator_workspace()
    expected = afterstate_values_in_python(game, packed)
    ranked = sorted(expected, key=expected.get, reverse=True)
    tree = parts.new_tree(8)
    sk.reset_tree(tree.nodes, tree.values, tree.meta)
    grid, info = game.arrays
    work.grid[:], work.info[:] = grid, info
    mask = np.zeros(8, dtype=np.int64)
    rng = np.uint64(1)
    for k in range(3):  # the best, then the best of those left
        rng, a = sk._pick_untried(tree, sk.ROOT, work, mask, np.int64(len(ranked)), np.int64(parts.EXPAND_EVALUATOR),
                                  0.5, rng)
        rng = np.uint64(rng)
        assert a == ranked[k]
        mask[a >> 6] |= np.int64(1) << (a & 63)
    assert tree.meta[parts.VALUE_ROWS] == 1 and tree.nodes[sk.ROOT, sk.VALUE_ROW] == 0
    row = work.move_values[0]
    scored = np.flatnonzero(~np.isnan(row))
    assert sorted(scored.tolist()) == sorted(expected) and len(expected) > 20
    assert np.allclose(row[scored], [expected[a] for a in scored])
    assert all(a < rules.NUM_PLACEMENT_ACTIONS for a in scored)


def test_evaluator_expansion_without_a_free_row_scores_afresh():
    game = middle_game()
    work, packed = evaluator_workspace(rows=0)
    expected = afterstate_values_in_python(game, packed)
    tree = parts.new_tree(8)
    sk.reset_tree(tree.nodes, tree.values, tree.meta)
    work.grid[:], work.info[:] = game.arrays
    _, a = sk._pick_untried(tree, sk.ROOT, work, np.zeros(8, dtype=np.int64), np.int64(len(expected)),
                            np.int64(parts.EXPAND_EVALUATOR), 0.5, np.uint64(1))
    assert a == max(expected, key=expected.get) and tree.nodes[sk.ROOT, sk.VALUE_ROW] == -1


def test_evaluator_expansion_searches_reproducibly_and_finds_the_winning_move():
    view = middle_game_view()
    spec = f"ismcts:net={NET},iterations=2000,expand=evaluator"
    first, again = agents.make(spec, seed=9), agents.make(spec, seed=9)
    one, two = first.act_with_visits(view), again.act_with_visits(view)
    assert one[0] == two[0] and np.array_equal(one[1], two[1])
    assert first._tree.meta[parts.VALUE_ROWS] > 1  # nodes below the root grew scored children
    win_view, winning = forced_win_view()
    assert agents.make(f"ismcts:net={NET},iterations=200,expand=evaluator", seed=3).act(None, win_view) in winning
    assert agents.make(f"ismcts:net={NET},iterations=300,expand=evaluator,halving=4", seed=3).act(
        None, win_view) in winning


@pytest.mark.parametrize("spec, message", [
    ("ismcts:expand=evaluator", "needs a network's fast evaluator"),
    ("pimc:expand=evaluator", "needs a network's fast evaluator"),
    ("cheat:expand=evaluator", "needs a network's fast evaluator"),
    (f"ismcts:net={NET},evaluator=false,expand=evaluator", "evaluator=true"),
    (f"ismcts:net={NET},leaf=value,expand=evaluator", "leaf=rollout")])
def test_evaluator_expansion_refuses_a_search_without_an_evaluator(spec, message):
    with pytest.raises(ValueError, match=message):
        agents.make(spec)
