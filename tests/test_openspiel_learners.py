"""OpenSpiel's own imperfect-information learners on ``python_twentyfourseven``: its
information state tensor (env/openspiel.py: the seat's observation, `env.observation`)
is what they read.

NFSP (Heinrich and Silver 2016), OpenSpiel's PyTorch version, and the policy-gradient RPG
(Srinivasan et al. 2018, made for partially observable games) train here for a few games.
NFSP imports ``tree`` (dm-tree), which open-spiel does not install: the ``openspiel`` extra
lists it. Deep CFR does not fit this game: its external sampling walks every action of the
traverser at each of its ~37 decisions, so no single traversal ends.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("open_spiel", exc_type=ImportError)
pyspiel = pytest.importorskip("pyspiel", exc_type=ImportError)

from env import openspiel as adapter  # noqa: E402
from env.observation import OBS_SIZE, encode  # noqa: E402


@pytest.fixture
def one_torch_thread():
    """Two OpenMP threads spin against each other on 2 shared cores (tests/test_rl_interop.py)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_information_state_tensor_is_the_seat_observation():
    game = pyspiel.load_game(adapter.GAME_NAME, {"players": 3})
    assert game.get_type().provides_information_state_tensor
    assert game.information_state_tensor_shape() == [OBS_SIZE] == game.observation_tensor_shape()
    state, rng = game.new_initial_state(), np.random.default_rng(0)
    assert not any(state.information_state_tensor(0))  # nothing dealt yet: zeros
    for _ in range(40):
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
        if state._game is not None:
            for seat in range(3):
                tensor = np.array(state.information_state_tensor(seat), dtype=np.float32)
                np.testing.assert_array_equal(tensor, encode(state._game, seat))


def play_episode(env, learners, is_evaluation=False):
    """One game in OpenSpiel's rl_environment, each seat stepped by its learner; the info
    states the learners were handed, as (seat, tensor, legal actions)."""
    seen = []
    time_step = env.reset()
    while not time_step.last():
        seat = time_step.observations["current_player"]
        seen.append((seat, np.array(time_step.observations["info_state"][seat]),
                     time_step.observations["legal_actions"][seat]))
        output = learners[seat].step(time_step, is_evaluation=is_evaluation)
        time_step = env.step([output.action])
    for learner in learners:  # the last step: every learner sees the returns and learns
        learner.step(time_step, is_evaluation=is_evaluation)
    return seen, time_step


# OpenSpiel's critic indexes with a list (policy_gradient.py), which torch 2.13 still
# accepts with this warning
@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence for multidimensional indexing:UserWarning")
def test_openspiel_rpg_learns_from_the_information_state_tensor(one_torch_thread):
    """OpenSpiel's rl_environment picks the information state tensor on its own; RPG
    learners (one per seat, a 32-unit torso) whose input layer is its size play two games
    and update their critic and policy from them; the info states they were handed are the
    seats' observations, and the trained policy gives only legal actions weight."""
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import policy_gradient

    game = pyspiel.load_game(adapter.GAME_NAME, {"players": 2})
    env = rl_environment.Environment(game, seed=0)
    assert not env._use_observation  # the information state tensor, chosen by default
    size = env.observation_spec()["info_state"][0]
    assert size == game.information_state_tensor_size() == OBS_SIZE
    torch.manual_seed(0)
    np.random.seed(0)
    learners = [policy_gradient.PolicyGradient(seat, size, game.num_distinct_actions(), loss_str="rpg",
                                               hidden_layers_sizes=(32,), batch_size=16, num_critic_before_pi=1)
                for seat in range(2)]
    for learner in learners:
        assert learner._net_torso.model[0][0].in_features == size
    before = [learner._policy_logits_layer.weight.detach().clone() for learner in learners]
    for _ in range(2):
        seen, last = play_episode(env, learners)
    assert last.last() and sum(last.rewards) == pytest.approx(0.0)
    assert all(len(tensor) == size and tensor.any() for _, tensor, _ in seen)
    for learner, weights in zip(learners, before):
        critic_loss, pi_loss = (float(loss.item()) for loss in learner.loss)  # torch scalars
        assert np.isfinite(critic_loss) and np.isfinite(pi_loss)
        assert not torch.equal(weights, learner._policy_logits_layer.weight)
    time_step = env.reset()
    while time_step.observations["current_player"] != 0:  # chance nodes are stepped by the env
        time_step = env.step([learners[time_step.observations["current_player"]].step(time_step, True).action])
    probs = learners[0].step(time_step, is_evaluation=True).probs
    legal = time_step.observations["legal_actions"][0]
    assert probs.sum() == pytest.approx(1.0) and probs[legal].sum() == pytest.approx(1.0)


def test_openspiel_nfsp_learns_from_the_information_state_tensor(one_torch_thread):
    """NFSP (its DQN best response and its average policy, 32-unit networks on the
    information state tensor) plays three 2-player games; both networks' inputs are the
    tensor's size, the average policy learns (a finite supervised loss, changed weights),
    and its policy at a decision puts weight on legal actions only. Each learner plays its
    best response every episode (anticipatory 1.0) so that its reservoir fills on any
    machine: at 0.5 a learner that drew the average policy for all three episodes never
    learned, which failed CI once on another CPU."""
    pytest.importorskip("tree", exc_type=ImportError)
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import nfsp

    game = pyspiel.load_game(adapter.GAME_NAME, {"players": 2})
    env = rl_environment.Environment(game, seed=1)
    size = env.observation_spec()["info_state"][0]
    assert size == OBS_SIZE
    learners = [nfsp.NFSP(seat, size, game.num_distinct_actions(), hidden_layers_sizes=(32,),
                          reservoir_buffer_capacity=1000, anticipatory_param=1.0, batch_size=16,
                          min_buffer_size_to_learn=16, learn_every=8, replay_buffer_capacity=1000,
                          epsilon_decay_duration=100, seed=seat)
                for seat in range(2)]
    for learner in learners:  # the average policy and the best response read the tensor
        assert _in_features(learner._avg_network) == _in_features(learner._rl_agent._q_network) == size
    before = [[p.detach().clone() for p in learner._avg_network.parameters()] for learner in learners]
    for _ in range(3):
        seen, last = play_episode(env, learners)
        assert len(seen) > 20 and all(len(tensor) == size for _, tensor, _ in seen)
    assert last.last() and sum(last.rewards) == pytest.approx(0.0)
    for learner, weights in zip(learners, before):
        sl_loss, _ = learner.loss
        assert sl_loss is not None and np.isfinite(float(sl_loss))
        assert any(not torch.equal(a, b) for a, b in zip(weights, learner._avg_network.parameters()))
    time_step = env.reset()
    while time_step.observations["current_player"] != 0:
        time_step = env.step([learners[time_step.observations["current_player"]].step(time_step, True).action])
    with learners[0].temp_mode_as(nfsp.MODE.AVERAGE_POLICY):
        probs = learners[0].step(time_step, is_evaluation=True).probs
    legal = time_step.observations["legal_actions"][0]
    assert probs.sum() == pytest.approx(1.0) and probs[legal].sum() == pytest.approx(1.0)


def _in_features(network) -> int:
    """The input width of an OpenSpiel PyTorch MLP: its first linear layer's."""
    import torch

    return next(m for m in network.modules() if isinstance(m, torch.nn.Linear)).in_features
