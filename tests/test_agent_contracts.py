"""Every agent plays only legal moves, is reproducible by seed, and the search agents
find a forced win; greedy always takes a move with the most minutes."""

import numpy as np
import pytest

import agents
from agents.play import play_game
from engine import GameState, random_deal, rules
from engine.view import PlayerView

SMALL = ["random", "greedy", "ismcts:iterations=60", "pimc:determinizations=3,iterations=60",
         "cheat:iterations=60"]


@pytest.mark.parametrize("spec", SMALL)
@pytest.mark.parametrize("players, team", [(2, False), (3, False), (4, False), (4, True)])
def test_agents_play_only_legal_moves(spec, players, team):
    for deal_seed in range(2):
        seats = [agents.make(spec, seed=s) for s in range(players - 1)] + [agents.make("random", seed=9)]
        record = play_game(seats, random_deal(deal_seed), players, team)
        assert record.forfeit is None, record.error
        assert len(record.actions) >= 10


@pytest.mark.parametrize("spec", SMALL)
def test_same_seed_same_game(spec):
    games = []
    for _ in range(2):
        record = play_game([agents.make(spec, seed=4), agents.make("random", seed=5)], random_deal(11))
        assert record.forfeit is None, record.error
        games.append(record.actions)
    assert games[0] == games[1]


def test_greedy_takes_a_maximal_move():
    rng = np.random.default_rng(0)
    greedy = agents.make("greedy")
    for seed in range(25):
        state = GameState.new(2, seed=seed)
        while not state.is_over:
            legal = state.legal_actions()
            if legal != [rules.PASS_ACTION]:
                best = max(state.clone().step(a) for a in legal)
                chosen = greedy.act(None, PlayerView(state, state.current_player))
                assert state.clone().step(chosen) == best
            state.step(legal[rng.integers(len(legal))])


@pytest.mark.parametrize("spec", ["ismcts:iterations=300", "pimc:determinizations=4,iterations=300",
                                  "cheat:iterations=300"])
def test_search_finds_the_forced_win(spec):
    # Seat 0 trails 0-30 and holds one 8: every placement ends the game, and only an 8
    # beside the two 8s (a set of three summing to 24: 90 minutes) wins.
    state = GameState.from_position({(3, 3): 8, (3, 4): 8}, [[8], []], scores=[0, 30])
    winning = {rules.action_id(rules.cell_of(3, 2), 8), rules.action_id(rules.cell_of(3, 5), 8)}
    agent = agents.make(spec, seed=0)
    agent.reset(0, 2)
    assert agent.act(None, PlayerView(state, 0)) in winning


@pytest.mark.parametrize("bad", ["nope", "ismcts:iterations=0", "ismcts:rollout=magic", "greedy:x=1",
                                 "pimc:determinizations=-2", "ismcts:c=-1"])
def test_bad_specs_are_clear_errors(bad):
    with pytest.raises(ValueError):
        agents.make(bad)


def test_only_cheating_agents_see_the_full_state():
    state = GameState.new(2, seed=0)
    view = PlayerView(state, 0)
    with pytest.raises(PermissionError):
        view.full_state(agents.make("greedy"))
    assert view.full_state(agents.make("cheat:iterations=10")).scores.tolist() == [0, 0]
