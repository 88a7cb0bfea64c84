"""The fast evaluator of network-guided ISMCTS: its features say what the table says,
numba and torch compute the same values, the values are zero-sum, and the selfplay
trainer fits it, saves it and hands it to network-guided ismcts."""

import csv

import numpy as np
import pytest
import torch

import agents
from training import cli as train
from agents.search import core as sk
from agents.networks import evaluator as vk
from agents.networks import Evaluator, NetConfig, PolicyValueNet, load_net, read_checkpoint, save_checkpoint
from agents.play import play_game
from agents.search.core import simulation_rewards
from agents.settings import MARGIN
from engine import GameState, random_deal, rules
from engine.layout import CURRENT, SHOWN_THIS_TURN
from engine.view import PlayerView

MODES = [(2, False), (3, False), (4, False), (4, True)]


def _mid_game(num_players, team, seed):
    state = GameState.new(num_players, seed=seed, team=team)
    rng = np.random.default_rng(seed)
    for _ in range(rng.integers(0, 30)):
        if state.is_over:
            break
        legal = state.legal_actions()
        state.step(legal[rng.integers(len(legal))])
    return state


def _best_points_by_stepping(state, seat):
    """The most minutes `seat` could score with one placement, by trying each one."""
    grid, info = state.arrays
    as_mover = GameState(grid.copy(), info.copy())
    as_mover.arrays[1][CURRENT] = seat  # no public setter: this test moves the turn on purpose
    as_mover.arrays[1][SHOWN_THIS_TURN] = 0  # irrelevant to placements
    best = 0
    for action in as_mover.legal_actions():
        if action < 490:
            best = max(best, as_mover.clone().step(action))
    return best


@pytest.mark.parametrize("mode", MODES, ids=["2p", "3p", "4p", "team"])
def test_features_follow_the_table(mode):
    num_players, team = mode
    for seed in range(15):
        state = _mid_game(num_players, team, seed)
        f = vk.mover_features(*state.arrays)
        mover, n = state.current_player, num_players
        slots = [(mover + k) % n for k in range(n)]
        assert np.allclose(f[vk.F_SCORE:vk.F_SCORE + n], state.scores[slots] / 100)
        assert np.allclose(f[vk.F_HAND_SIZE:vk.F_HAND_SIZE + n], state.hand_sizes[slots] / 6)
        for k, s in enumerate(slots):
            assert np.allclose(f[vk.F_HAND + 10 * k:vk.F_HAND + 10 * k + 10], state.hands[s] / 4)
            assert f[vk.F_BEST + k] * 100 == pytest.approx(_best_points_by_stepping(state, s))
        others = [state.scores[s] for s in slots[1:]]
        assert f[vk.F_LEAD] == pytest.approx((state.scores[mover] - np.mean(others)) / 100)
        assert f[vk.F_BAG] * 24 == pytest.approx(state.bag_size)
        assert f[vk.F_TIMEOUTS] * 10 == pytest.approx(len(state.timeout_cells))
        assert f[vk.F_TILES] * 49 == pytest.approx((state.board > 0).sum())
        assert f[vk.F_OPEN] * 20 == pytest.approx(f[vk.F_CAPACITY + 1:vk.F_CAPACITY + 11].sum() * 10)
        assert f[vk.F_PLAYERS + n - 2] == 1 and f[vk.F_TEAM] == team
        assert (f[vk.F_SCORE + n:vk.F_SCORE + 4] == 0).all()  # empty slots


@pytest.mark.parametrize("mode", MODES, ids=["2p", "3p", "4p", "team"])
def test_numba_evaluator_equals_torch_and_is_zero_sum(mode):
    num_players, team = mode
    torch.manual_seed(0)
    net = Evaluator(12).double().eval()
    packed = net.packed()
    for seed in range(10):
        state = _mid_game(num_players, team, seed)
        values = vk.evaluate(*state.arrays, packed)
        x = torch.as_tensor(vk.mover_features(*state.arrays), dtype=torch.float64)[None]
        with torch.no_grad():
            slots = net(x, num_players, team)[0].numpy()
        mover = state.current_player
        expected = np.zeros(4)
        for k in range(num_players):
            expected[(mover + k) % num_players] = slots[k]
        assert np.allclose(values, expected, atol=1e-5)
        assert values[:num_players].sum() == pytest.approx(0.0, abs=1e-9)
        if team:
            assert values[0] == values[2] == -values[1] == -values[3]


def test_an_empty_evaluator_is_refused():
    with pytest.raises(ValueError, match="no evaluator"):
        vk.evaluate(*GameState.new(2, seed=0).arrays, np.zeros(0))


def test_search_with_an_evaluator_finds_the_winning_last_move():
    # Seat 0 holds a 4; only 4 on (3,4) scores (10 + 10 + 4 = 24) and wins: the game ends
    # in every simulation, so the exact result decides whatever the (random) evaluator says.
    state = GameState.from_position({(3, 5): 10, (3, 6): 10}, [[4], []], num_players=2, current_player=0)
    agent = agents.make("ismcts:iterations=200,depth=1", seed=0)
    torch.manual_seed(1)
    agent.use_evaluator(Evaluator(8).packed())
    assert agent.act(None, PlayerView(state, 0)) == rules.action_id(rules.cell_of(3, 4), 4)


def test_search_with_an_evaluator_plays_legal_games_in_every_mode():
    torch.manual_seed(2)
    packed = Evaluator(8).packed()
    for num_players, team in MODES:
        seats = [agents.make("ismcts:iterations=60,depth=1", seed=s) for s in range(num_players)]
        for agent in seats:
            agent.use_evaluator(packed)
        record = play_game(seats, random_deal(num_players), team=team)
        assert record.forfeit is None, record.error


def _tiny_config(tmp_path, **changes):
    from test_training import write_config  # pytest puts tests/ on sys.path

    return write_config(tmp_path, algorithm="selfplay", **{
        "net.evaluator_hidden": 8, "selfplay.warm_start_evaluator_steps": 30, "selfplay.evaluator_steps": 5,
        "selfplay.evaluator_batch_size": 32, **changes})


def test_trainer_fits_the_evaluator_and_the_agent_uses_it(tmp_path):
    from training.config import load_config
    from training.learner import Learner

    cfg = _tiny_config(tmp_path, iterations=1)
    untrained = Learner(load_config(cfg), torch.device("cpu")).net.evaluator  # the one the run starts from
    run = train.main(["--config", str(cfg), "--runs", str(tmp_path / "runs")])
    net = load_net(run / "best.pt")
    assert net.evaluator is not None
    assert not np.array_equal(net.evaluator.packed(), untrained.packed()), "the warm start fitted it"
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert float(rows[-1]["evaluator_loss"]) >= 0 and int(rows[-1]["evaluator_positions"]) > 0
    with_eval = agents.make(f"ismcts:net={run / 'best.pt'},iterations=30", seed=0)
    without = agents.make(f"ismcts:net={run / 'best.pt'},iterations=30,evaluator=false", seed=0)
    assert with_eval._kernel is sk.search_greedy_evaluator and with_eval.depth == 1
    assert np.array_equal(with_eval._data.net, net.evaluator.packed())
    assert without._kernel is sk.search_greedy_rollout and without._data is None and without.depth == 4
    record = play_game([with_eval, agents.make("greedy")], random_deal(3))
    assert record.forfeit is None and len(record.actions) > 10, record.error


def test_resume_keeps_the_evaluator_and_refuses_a_mismatched_one(tmp_path):
    cfg = _tiny_config(tmp_path, iterations=1)
    run = train.main(["--config", str(cfg), "--runs", str(tmp_path / "runs")])
    before = load_net(run / "checkpoint.pt").evaluator.packed()
    train.main(["--resume", str(run), "--set", "iterations=2"])
    after = load_net(run / "checkpoint.pt").evaluator.packed()
    assert before.shape == after.shape and not np.array_equal(before, after)  # trained on
    payload = read_checkpoint(run / "checkpoint.pt")
    del payload["trainer"]["evaluator_optimizer"]
    torch.save(payload, run / "checkpoint.pt")
    with pytest.raises(ValueError, match="does not match"):
        train.main(["--resume", str(run), "--set", "iterations=3"])


def test_evaluator_targets_are_the_search_rewards_of_the_final_position():
    from training.config import config_from_dict
    from training.learner import Learner

    learner = Learner(config_from_dict({"algorithm": "selfplay", "num_players": 3}), torch.device("cpu"))
    state = GameState.new(3, seed=4)
    while not state.is_over:
        state.step(state.legal_actions()[0])
    final = state.arrays[1][None]
    expected = np.zeros(4)
    simulation_rewards(final[0], expected, MARGIN)
    targets = learner.search_value_targets(final, np.zeros(3, dtype=np.int64), np.array([0, 1, 2]))
    for mover in range(3):
        assert np.allclose(targets[mover, :3], np.roll(expected[:3], -mover))


def test_network_search_checks_evaluator_parameters(tmp_path):
    path = tmp_path / "net.pt"
    save_checkpoint(path, PolicyValueNet(NetConfig(channels=8, blocks=1, evaluator_hidden=4)))
    with pytest.raises(ValueError, match="depth must be a non-negative integer"):
        agents.make(f"ismcts:net={path},depth=-1")
    with pytest.raises(ValueError, match="evaluator must be"):
        agents.make(f"ismcts:net={path},evaluator=3")


def test_the_shipped_selfplay_network_searches_with_its_evaluator():
    from pathlib import Path

    path = Path(train.__file__).parents[1] / "models" / "selfplay_2p.pt"
    agent = agents.make(f"ismcts:net={path},iterations=50,prior=3", seed=0)
    assert agent._kernel is sk.search_greedy_evaluator and len(agent._data.net) > 0 and agent.depth == 1
    record = play_game([agent, agents.make("greedy")], random_deal(8))
    assert record.forfeit is None and len(record.actions) > 10, record.error
