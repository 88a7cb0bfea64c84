"""Agents backed by a trained network: the raw policy (`checkpoint:PATH`)."""

from __future__ import annotations

import numpy as np
import torch

from agents.base import Agent, PolicyModel, register
from engine import rules

from . import features
from .checkpoints import device_parameter, load_net, resolve_device
from .model import PolicyValueNet


class NetPolicy:
    """Batched masked policy over a network: the piece shared by agents and trainers."""

    def __init__(self, net: PolicyValueNet, device: str | torch.device = "cpu"):
        self.net = net.eval()
        self.device = torch.device(device)
        self.num_actions = net.config.num_actions

    @property
    def needs_exposure(self) -> bool:
        """Whether `exposure` features (agents.networks.features) must come with each observation."""
        return self.net.needs_exposure

    @property
    def exposure_kind(self) -> str:
        """Which `agents.networks.features.exposure` kind to pass."""
        return self.net.exposure_kind

    @torch.no_grad()
    def logits_values(self, obs: np.ndarray, mask: np.ndarray,
                      exposure: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Masked logits (B, num_actions) and seat values (B, 4) of a batch of positions."""
        o = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        m = torch.as_tensor(mask[:, : self.num_actions], dtype=torch.bool, device=self.device)
        e = None if exposure is None else torch.as_tensor(exposure, dtype=torch.float32, device=self.device)
        logits, values = self.net(o, m, e)
        return logits.cpu().numpy(), values.cpu().numpy()

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator, temperature: float = 0.0,
               exposure: np.ndarray | None = None):
        """One action per row: argmax (temperature 0) or a sample at that temperature."""
        logits, _ = self.logits_values(obs, mask, exposure)
        if temperature <= 0:
            return logits.argmax(axis=1)
        p = softmax(logits / temperature)
        u = rng.random((len(p), 1))
        return np.minimum((p.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities along the last axis (masked logits of -inf get 0)."""
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


class NetAgent(Agent):
    """The raw policy of a network: the most likely legal action (no search);
    `temperature` > 0 samples instead. Team show actions are only chosen if the network
    was trained with the team action space."""

    name = "net"
    needs_observation = True

    def __init__(self, policy: NetPolicy, temperature: float = 0.0):
        super().__init__()
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.temperature = float(temperature)
        self.policy = policy

    def act(self, observation, view) -> int:
        mask = view.legal_action_mask()[None, : self.policy.num_actions]
        if not mask.any():  # only team shows are legal beyond the net's action space
            return int(view.legal_actions()[0])
        exposure = None
        if self.policy.needs_exposure:
            grid, info = view.public_arrays()
            exposure = features.exposure(grid, info, kind=self.policy.exposure_kind)[None]
        return int(self.policy.choose(observation[None], mask, self.rng, self.temperature, exposure)[0])

    def policy_model(self, num_players: int, team: bool) -> PolicyModel | None:
        """Its network at its temperature (a network with the team action space: None)."""
        if self.policy.net.config.num_actions > rules.NUM_ACTIONS:
            return None
        return PolicyModel("network", net=self.policy.net, temperature=self.temperature,
                           reach_temperature=self.temperature)


@register("checkpoint")
class CheckpointAgent(NetAgent):
    """`checkpoint:PATH[,temperature=T,device=cpu]`: the raw policy stored in a checkpoint
    (device: cpu, cuda[:N] or auto)."""

    checkpoint_parameters = ("path",)
    load_checkpoint = staticmethod(load_net)
    parameter_rules = {"device": device_parameter}

    def __init__(self, path: str, temperature: float = 0.0, device: str = "cpu"):
        self.path = path
        device = resolve_device(device)
        super().__init__(NetPolicy(load_net(path, device), device), temperature)
