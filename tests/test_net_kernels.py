"""The numba placement logits (agents.networks.placement) against the torch network they pack."""

import numpy as np
import pytest
import torch

from agents.networks import features
from agents.search.guide import NetworkGuide
from agents.networks import NetConfig, PolicyValueNet, save_checkpoint
from agents.search.selfplay import shipped_network
from engine import GameState, rules
from engine.deal import random_deal
from engine.view import PlayerView
from env.observation import OBS_SIZE, encode_arrays


def positions(num_players, count, seed):
    """Views of the seat to move at `count` positions of random games."""
    rng = np.random.default_rng(seed)
    views = []
    game = 0
    while len(views) < count:
        state = GameState.from_deal(random_deal(seed * 100 + game), num_players)
        game += 1
        while not state.is_over and len(views) < count:
            if rng.random() < 0.5:
                views.append(PlayerView(state.clone(), state.current_player))
            legal = state.legal_actions()
            state.step(legal[rng.integers(len(legal))])
    return views


def randomized(config: NetConfig, seed: int) -> PolicyValueNet:
    """A network with random weights and random batch-norm statistics (so the folding of
    each batch norm into its convolution is exercised), in eval mode."""
    torch.manual_seed(seed)
    net = PolicyValueNet(config)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
        if config.points_skip:
            net.points_gain.uniform_(0.0, 2.0)
        if config.exposure_skip:
            net.exposure_gain.uniform_(0.0, 2.0)
    return net.eval()


def torch_placement_logits(net, view):
    grid, info = view.public_arrays()
    obs = np.zeros(OBS_SIZE, dtype=np.float32)
    encode_arrays(grid, info, view.seat, obs)
    exposure = (torch.as_tensor(features.exposure(grid, info, kind=net.exposure_kind)[None]) if net.needs_exposure
                else None)
    with torch.no_grad():
        logits, _ = net(torch.as_tensor(obs[None]), None, exposure)
    return logits[0, : rules.NUM_PLACEMENT_ACTIONS].numpy()


CONFIGS = [
    NetConfig(channels=8, blocks=0, vector_hidden=16),
    NetConfig(channels=16, blocks=1, vector_hidden=8, points_skip=1.0),
    NetConfig(channels=12, blocks=2, vector_hidden=32, points_skip=1.0, exposure_skip=0.5, exposure="outlook"),
    NetConfig(channels=32, blocks=3, vector_hidden=64, exposure_skip=0.5, exposure="worst",
              num_actions=rules.NUM_TEAM_ACTIONS),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"c{c.channels}b{c.blocks}")
def test_numba_logits_match_torch(config, tmp_path):
    net = randomized(config, seed=config.channels)
    packed = net.packed_placement()
    assert packed.dtype == np.float32
    path = tmp_path / "net.pt"
    save_checkpoint(path, net)
    guide = NetworkGuide(str(path))
    for view in positions(2, 12, seed=config.blocks):
        expected = torch_placement_logits(net, view)
        got = guide.placement_logits(view)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_the_shipped_networks_order_the_root_as_torch_does():
    for players in (2, 4):
        guide = NetworkGuide(str(shipped_network(players)))
        for view in positions(players, 20, seed=players):
            expected = torch_placement_logits(guide.net, view)
            np.testing.assert_allclose(guide.placement_logits(view), expected, rtol=1e-4,
                                       atol=1e-4 * np.abs(expected).max())
            order, prior = guide.root_order(view, with_prior=True)
            legal = [a for a in view.legal_actions() if a < rules.NUM_PLACEMENT_ACTIONS]
            assert sorted(order.tolist()) == legal
            ranked = expected[order]  # best first, up to float32 ties
            assert np.all(np.diff(ranked) <= 1e-4 * np.abs(expected).max())
            assert prior.sum() == pytest.approx(1.0) and np.all(np.diff(prior) <= 1e-6)
