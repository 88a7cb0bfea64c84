"""The one search core: the same moves as before its parts were made pluggable, and
each part (selection, leaf evaluation) doing what it says."""

import json
from pathlib import Path

import numpy as np
import pytest

import agents
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


@pytest.mark.parametrize("spec", ["ismcts:iterations=200", "ismcts:iterations=200,depth=0,expand=random,widen=0",
                                  f"ismcts:net={NET},iterations=200,prior=3",
                                  f"ismcts:net={NET},iterations=200,evaluator=false", "cheat:iterations=200",
                                  "pimc:iterations=200,determinizations=4"])
def test_every_combination_of_parts_finds_the_winning_move(spec):
    view, winning = forced_win_view()
    action, visits, _ = agents.make(spec, seed=3).act_with_visits(view)
    assert action in winning
    assert set(np.flatnonzero(visits)) <= set(view.legal_actions())


def test_the_settings_record_builds_the_kernel_parameters():
    from agents.policy_kernels import epsilon_threshold
    from agents.settings import SearchSettings

    settings = SearchSettings.parse("iterations=300,c=0.7,epsilon=0,expand=random,widen=0.8,prior=3")
    assert settings == SearchSettings(iterations=300, c=0.7, epsilon=0.0, expand="random", widen=0.8, prior=3.0)
    assert SearchSettings.parse(settings.spec()) == settings  # the spec edge round-trips
    record = settings.kernel_parameters(evaluated=True)
    assert record._fields == ("c", "epsilon", "depth", "margin", "expand_after", "widen", "prior")
    assert record == (0.7, epsilon_threshold(0.0), 1, 0.5, 40, 0.8, 3.0)  # depth: the evaluator's default
    assert [type(v) for v in record] == [float, int, int, float, int, float, float]  # one numba type per field
    assert SearchSettings().kernel_parameters().depth == 4
    assert SearchSettings(depth=0).kernel_parameters(evaluated=True).depth == 0
    agent = agents.make("ismcts:iterations=300,c=0.7,epsilon=0,expand=random,widen=0.8")
    assert agent.settings == SearchSettings(iterations=300, c=0.7, epsilon=0.0, expand="random", widen=0.8)


def test_a_new_search_parameter_is_one_field():
    """A field added in a subclass is in the kernel's record, the parser (with its rule)
    and the table."""
    import dataclasses

    from agents.parameters import number
    from agents.settings import SearchSettings, setting

    @dataclasses.dataclass(frozen=True)
    class Tempered(SearchSettings):
        temper: float = setting(0.25, number, "a parameter of this test", kernel=float)

    settings = Tempered.parse("temper=2,c=0.7")
    assert (settings.temper, settings.c) == (2.0, 0.7)
    record = settings.kernel_parameters()
    assert record._fields[-1] == "temper" and record.temper == 2.0 and record.c == 0.7
    assert Tempered().kernel_parameters().temper == 0.25
    with pytest.raises(ValueError, match="temper must be a finite non-negative number"):
        Tempered.parse("temper=-1")
    assert any(line.split()[:2] == ["temper", "0.25"] for line in Tempered.table().splitlines())
    assert "temper" not in SearchSettings.table() and "temper" not in SearchSettings().kernel_parameters()._fields


def test_each_search_constant_is_defined_once():
    names = ("MARGIN", "NUM_PARAMETERS", "P_C", "LEAF_ROLLOUT", "EXPAND_GREEDY")
    lines = [line for path in (ROOT / "agents").glob("*.py") for line in path.read_text().splitlines()
             if line.split(" ")[0] in names]
    assert lines == ["MARGIN = 0.5  # the default margin weight (the fast evaluator learns rewards with it)"]


@pytest.mark.parametrize("text, message", [
    ("iterations=0", "iterations must be a positive integer"), ("expand=sideways", "expand must be one of"),
    ("nope=1", "unknown parameter"), ("gumbel=16", "gumbel=16 was retired"), ("300", "every parameter is key=value"),
])
def test_the_settings_record_refuses_bad_settings(text, message):
    from agents.settings import SearchSettings

    with pytest.raises(ValueError, match=message):
        SearchSettings.parse(text)


def test_ismcts_takes_at_most_twelve_parameters():
    import inspect

    from agents.search.mcts import ISMCTSAgent

    assert len(inspect.signature(ISMCTSAgent).parameters) <= 12


# Every retired parameter (or value) of a search spec: a one-line error saying why.
RETIRED_SPECS = [
    ("ismcts:gumbel=16", "gumbel=16 was retired"), ("ismcts:c_visit=50", "c_visit=50 was retired"),
    ("ismcts:c_scale=0.1", "c_scale=0.1 was retired"), ("ismcts:halving=4", "halving=4 was retired"),
    ("cheat:halving=4", "halving=4 was retired"), ("selfplay:halving=4", "halving=4 was retired"),
    ("ismcts:leaf=value", "leaf=value was retired"), ("ismcts:leaf=rollout", "leaf=rollout was retired"),
    ("ismcts:selection=puct", "selection=puct was retired"), ("pimc:selection=ucb", "selection=ucb was retired"),
    ("ismcts:expand=evaluator", "expand=evaluator was retired"), ("ismcts:expand=policy", "expand=policy was retired"),
    ("ismcts:rollout=random", "rollout=random was retired: use epsilon=0"),
    ("br:target=greedy,rollout=greedy", "rollout=greedy was retired"),
    ("ismcts:safe=false", "safe=false was retired"), ("ismcts:device=cpu", "device=cpu was retired"),
    ("selfplay:device=cpu", "device=cpu was retired"),
    (f"checkpoint:{NET},symmetries=true", "symmetries=true was retired"),
    ("selfplay-policy:symmetries=true", "symmetries=true was retired"),
]


@pytest.mark.parametrize("spec, message", RETIRED_SPECS)
def test_every_retired_search_parameter_is_a_one_line_error(spec, message):
    with pytest.raises(ValueError, match=message) as error:
        agents.make(spec)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match=message):
        agents.check_spec(spec)


def test_the_kept_names_of_retired_parameters_still_work():
    """`policy` keeps its own safe=, `checkpoint` its device=: only where a name left is it refused."""
    assert agents.make("policy:safe=false").safe is False
    assert agents.make(f"checkpoint:{NET},device=cpu") is not None



def test_the_settings_cross_checks_run_before_an_agent_is_built():
    for spec in ("ismcts:prior=3", "ismcts:evaluator=false"):
        with pytest.raises(ValueError, match="give net=PATH"):
            agents.check_spec(spec)
    for spec in ("pimc:prior=3", "cheat:evaluator=false", "br:target=greedy,prior=1"):
        with pytest.raises(ValueError, match="bad parameters"):
            agents.check_spec(spec)


SWEEP = json.loads((Path(__file__).parent / "fixtures" / "sweep_moves.json").read_text())


def _seat(spec):
    """A best response plays seat 0 against its target; any other spec plays every seat."""
    if spec.startswith("br:"):
        return lambda s: agents.make(spec if s == 0 else spec.split("target=")[1].split(",")[0].strip("[]"))
    return lambda s: agents.make(spec)


@pytest.mark.parametrize("case", SWEEP, ids=[f"{c['spec']}-{c['num_players']}p" for c in SWEEP])
def test_the_sweep_of_issue_55_left_every_kept_search_playing_the_same_moves(case):
    """Recorded at 7a971d3, before the rejected features, their kernel branches and the best
    response's own descent loop left (tests/fixtures/sweep_moves.json, one game a spec)."""
    n = case["num_players"]
    seat = _seat(case["spec"].replace("models/", f"{ROOT}/models/"))
    record = play_game([seat(s) for s in range(n)], random_deal(case["deal_seed"]), n, seeds=case["seeds"])
    assert record.error is None
    assert record.actions == case["actions"]
