"""The afterstate agent: its kernel computes what its doc says, it takes a winning last move
whatever its evaluator says, plays legal and reproducible games in every mode, and refuses
bad parameters and networks without an evaluator."""

import numpy as np
import pytest
import torch

import agents
from agents.networks import evaluator as vk
from agents.search.afterstate import AfterstateAgent
from agents.networks import NetConfig, PolicyValueNet, save_checkpoint
from agents.play import play_game
from agents.search.core import simulation_rewards
from agents.settings import MARGIN
from engine import GameState, random_deal, rules
from engine.determinize import SCRATCH_LEN, sample_world
from engine.view import PlayerView


@pytest.fixture(scope="module")
def net_path(tmp_path_factory):
    torch.manual_seed(3)
    path = tmp_path_factory.mktemp("afterstate") / "net.pt"
    save_checkpoint(path, PolicyValueNet(NetConfig(channels=8, blocks=1, evaluator_hidden=8)))
    return path


def _mid_game(seed, num_players=2, team=False, plies=12):
    state = GameState.new(num_players, seed=seed, team=team)
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        legal = [a for a in state.legal_actions() if a < rules.SHOW_BASE]
        state.step(legal[rng.integers(len(legal))])
    return state


def test_move_values_are_the_mean_afterstate_value_over_the_same_worlds(net_path):
    agent = AfterstateAgent(str(net_path), worlds=5)
    for seed in range(4):
        state = _mid_game(seed, plies=2 * seed + 3)
        seat = state.current_player
        view = PlayerView(state, seat)
        legal = np.array(state.legal_actions(), dtype=np.int64)
        agent.seed(seed)
        got = agent.move_values(view, legal)

        # the same worlds by hand: the agent draws its kernel's rng from its stream
        rng = np.uint64(np.random.default_rng(seed).integers(1, 2**63))
        grid, info = state.arrays
        world_grid, world_info = np.empty_like(grid), np.empty_like(info)
        scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
        expected = np.zeros(len(legal))
        for _ in range(5):
            rng = np.uint64(sample_world(grid, info, seat, rng, world_grid, world_info, scratch))
            for j, action in enumerate(legal):
                after = GameState(world_grid.copy(), world_info.copy())
                after.step(int(action))
                if after.is_over:
                    values = np.zeros(4)
                    simulation_rewards(after.arrays[1], values, MARGIN)
                else:
                    values = vk.evaluate(*after.arrays, agent._net)
                expected[j] += values[seat] / 5
        assert np.allclose(got, expected)


def test_takes_the_winning_last_move_whatever_the_evaluator_says(net_path):
    # Seat 0 holds a 4; only 4 on (3,4) scores (10 + 10 + 4 = 24) and wins, and every
    # placement ends the game, so exact results decide (as in the search's test).
    state = GameState.from_position({(3, 5): 10, (3, 6): 10}, [[4], []], num_players=2, current_player=0)
    agent = agents.make(f"afterstate:net={net_path},worlds=3", seed=0)
    agent.reset(0, 2)
    assert agent.act(None, PlayerView(state, 0)) == rules.action_id(rules.cell_of(3, 4), 4)


@pytest.mark.parametrize("players, team", [(2, False), (3, False), (4, False), (4, True)])
def test_plays_legal_reproducible_games(net_path, players, team):
    games = []
    for _ in range(2):
        seats = [agents.make(f"afterstate:net={net_path},worlds=4", seed=s) for s in range(players - 1)]
        record = play_game(seats + [agents.make("random", seed=9)], random_deal(5), players, team)
        assert record.forfeit is None, record.error
        games.append(record.actions)
    assert games[0] == games[1]


def test_the_shipped_network_plays_through_selfplay_afterstate():
    record = play_game([agents.make("selfplay-afterstate:worlds=4", seed=1), agents.make("greedy")], random_deal(8))
    assert record.forfeit is None and len(record.actions) > 10, record.error


@pytest.mark.parametrize("bad", ["afterstate", "afterstate:net=missing.pt", "selfplay-afterstate:worlds=0",
                                 "selfplay-afterstate:worlds=2.5", "selfplay-afterstate:depth=2"])
def test_bad_specs_are_clear_errors(bad):
    with pytest.raises(ValueError):
        agents.make(bad)


def test_bad_worlds_and_a_network_without_an_evaluator_are_refused(net_path, tmp_path):
    with pytest.raises(ValueError, match="worlds"):
        agents.make(f"afterstate:net={net_path},worlds=-1")
    bare = tmp_path / "bare.pt"
    save_checkpoint(bare, PolicyValueNet(NetConfig(channels=8, blocks=1, evaluator_hidden=0)))
    with pytest.raises(ValueError, match="no fast evaluator"):
        agents.make(f"afterstate:net={bare}")
