"""The network-valued lockstep search (the core with PUCT and LEAF_VALUE) finds a forced
win, and only ever picks legal moves."""

import numpy as np
import torch

from agents.lockstep import LockstepSearch
from agents.neural import NetPolicy
from agents.nets import NetConfig, PolicyValueNet
from engine import GameState, rules


def untrained_policy() -> NetPolicy:
    torch.manual_seed(0)
    return NetPolicy(PolicyValueNet(NetConfig(channels=8, blocks=1, vector_hidden=8, head_hidden=8)))


def test_search_finds_the_winning_last_move():
    # Seat 0 holds one 8 and trails 0-30; every placement ends the game (both hands and
    # the bag are empty afterwards). Only 8 next to the two 8s (a set and a 24: 90) wins.
    game = GameState.from_position({(3, 3): 8, (3, 4): 8}, [[8], []], scores=[0, 30])
    winning = {rules.action_id(rules.cell_of(3, 2), 8), rules.action_id(rules.cell_of(3, 5), 8)}
    grid, info = game.arrays
    search = LockstepSearch(untrained_policy(), batch=1, simulations=60)
    visits = search.run(grid[None], info[None], np.ones(1, dtype=bool), np.array([7], dtype=np.uint64))[0]
    assert int(np.argmax(visits)) in winning
    assert set(np.flatnonzero(visits)) <= set(game.legal_actions())


def test_batched_search_visits_only_legal_actions_in_self_play_positions():
    games = [GameState.new(2, seed=s) for s in range(4)]
    rng = np.random.default_rng(0)
    for g in games:  # play a few random moves into each game
        for _ in range(rng.integers(0, 12)):
            legal = g.legal_actions()
            g.step(legal[rng.integers(len(legal))])
    grid = np.stack([g.arrays[0] for g in games])
    info = np.stack([g.arrays[1] for g in games])
    search = LockstepSearch(untrained_policy(), batch=4, simulations=24)
    visits = search.run(grid, info, np.ones(4, dtype=bool), np.arange(4, dtype=np.uint64))
    for g, v in zip(games, visits):
        assert v.sum() == 24  # one leaf evaluated and backed up per simulation
        assert set(np.flatnonzero(v)) <= set(g.legal_actions())


def test_team_games_search_with_a_team_network():
    """A team network has the show actions too: the search plays placements only, and its
    visit counts have the network's width (the trainer's policy targets)."""
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(channels=8, blocks=1, vector_hidden=8, head_hidden=8,
                                   num_actions=rules.NUM_TEAM_ACTIONS))
    games = [GameState.new(4, seed=s, team=True) for s in range(2)]
    grid = np.stack([g.arrays[0] for g in games])
    info = np.stack([g.arrays[1] for g in games])
    search = LockstepSearch(NetPolicy(net), batch=2, simulations=16)
    visits = search.run(grid, info, np.ones(2, dtype=bool), np.arange(2, dtype=np.uint64))
    assert visits.shape == (2, rules.NUM_TEAM_ACTIONS)
    for g, v in zip(games, visits):
        assert v.sum() == 16
        assert set(np.flatnonzero(v)) <= set(g.legal_actions()) - set(range(rules.NUM_ACTIONS, rules.NUM_TEAM_ACTIONS))
