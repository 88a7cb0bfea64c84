"""docs/architecture.md's recipe "A leaf evaluator", followed outside agents/: a leaf
defined here, compiled into the one search core with the shipped parts, played through
the registry."""

import numpy as np
from numba import njit

import agents
from agents.search import core as sk
from agents.base import register
from agents.play import play_game
from agents.search.mcts import ISMCTSAgent, show_search_parameters
from engine.deal import random_deal
from test_search_core import forced_win_view


# 1. The leaf: every seat's value of the world the descent reached, into work.reward.
#    This one reads the position as it stands (no rollout: the current leader wins, plus
#    data[0] * tanh(lead / 100)) and counts its calls in data[1].
@njit(cache=True)
def standing_leaf(work, params, data, rng):
    sk.simulation_rewards(work.info, work.reward, data[0])
    data[1] += 1.0
    return rng


# 2. The search: the core with the leaf and the shipped world, selection and expansion.
@njit(cache=True)
def standing_search(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    return sk.run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, sk.deal_world, sk.ucb,
                  sk.expand_greedy, standing_leaf, sk.no_model)


# 3. The agent: ismcts with that search, under a name of its own.
@register("standing")
class StandingSearch(ISMCTSAgent):
    """ISMCTS whose leaves are scored as they stand (`standing_leaf`)."""

    def __init__(self, weight: float = 0.5, **parameters) -> None:
        super().__init__(**parameters)
        self.calls = np.array([weight, 0.0])
        self.use_search(standing_search, self.calls)


show_search_parameters(StandingSearch)


def test_a_leaf_evaluator_defined_outside_agents_plays_through_the_registry():
    seats = [agents.make("standing:iterations=120,weight=0.3"), agents.make("greedy")]
    assert seats[0].calls[0] == 0.3 and seats[0].settings.iterations == 120
    searched = []
    real_act = seats[0].act

    def act(observation, view):
        action = real_act(observation, view)
        searched.append(seats[0].last_iterations)
        return action

    seats[0].act = act
    record = play_game(seats, random_deal(3), 2, seeds=[1, 2])
    assert record.error is None and len(record.actions) > 20
    assert sum(searched) > 0 and seats[0].calls[1] == sum(searched)  # the leaf scored every simulation


def test_the_new_leaf_finds_the_winning_move():
    view, winning = forced_win_view()
    action, visits, _ = agents.make("standing:iterations=200", seed=3).act_with_visits(view)
    assert action in winning and set(np.flatnonzero(visits)) <= set(view.legal_actions())
