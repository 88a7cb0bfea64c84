"""The policy-value network over the env's observation (torch).

A small residual CNN reads the 7x7 planes; an MLP reads the vector features; both are
joined into a policy head (logits over every action id, illegal ones masked out) and a
value head. The value head predicts every seat's final reward, seat-rotated like the
observation (slot 0 = the seat to move), in [-1, 1]: one output per seat works for 2,
3 and 4 players and for teams alike.

A network may also carry a fast `Evaluator` (``NetConfig.evaluator_hidden``): a tiny
MLP over full-state features that network-guided ISMCTS runs in numba at its cut
rollouts, thousands of times a move, where the CNN could be called once.
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from agents.strict_config import StrictConfig
from engine import rules
from env.observation import NUM_PLANES, NUM_VECTOR_FEATURES, OBS_SIZE, P_POINTS, PLANES_SIZE

from .evaluator import NUM_FEATURES, pack_mlp
from .features import EXPOSURES

MASKED_LOGIT = -1e9


class NetConfig(StrictConfig):
    """Shape of the network (saved with every checkpoint; the training config's net: section).
    The defaults are the shipped 2-player network's (configs/selfplay_2p.yaml); a checkpoint
    that lacks a key was written before it existed (`checkpoints.KEYS_BEFORE_THEY_EXISTED`)."""

    channels: int = Field(32, ge=1)  # width of the residual tower
    blocks: int = Field(2, ge=0)  # residual blocks
    vector_hidden: int = 64  # MLP width for the vector features
    head_hidden: int = 128  # hidden width of the value head and the pass/show head
    num_actions: int = rules.NUM_ACTIONS  # 491, or rules.NUM_TEAM_ACTIONS for teams
    value_outputs: int = 4  # seats, rotated; unused slots are ignored
    # Add gain[v] * (the observation's "minutes if v is placed here" plane) to the
    # placement logits: a skip connection that lets the network start from the greedy
    # agent's preference and learn the corrections (gain is learned, one per value).
    points_skip: float = 20.0  # initial gain; 0 = no skip connection
    # Also subtract gain * the move's exposure (`agents.networks.features.exposure`: the minutes
    # it leaves open to tiles the mover has not seen, / 100) from its logit. A network
    # with this on must be given those features beside the observation.
    exposure_skip: float = 15.0  # initial gain; 0 = not used (PPO: its vector env gives no exposure)
    # Which exposure the skip reads (`agents.networks.features.EXPOSURES`): "worst" (the most any
    # unseen value could score after the move), "expected" (the next seat's expected
    # best reply) or "outlook" (that, less half the mover's own best follow-up).
    exposure: str = "outlook"
    # Width of the fast evaluator's two hidden layers (`Evaluator`, scored in numba by
    # `agents.networks.evaluator` at the cut rollouts of network-guided ISMCTS); 0 = none.
    evaluator_hidden: int = Field(32, ge=0)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class Evaluator(nn.Module):
    """The fast evaluator: an MLP from the mover's `agents.networks.evaluator` features to one
    output per seat slot, centred into zero-sum values the way
    `agents.networks.evaluator.evaluate_position` centres them (that kernel runs it in search;
    this module trains it and hands it the weights through `packed`)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(NUM_FEATURES, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 4))

    def forward(self, features: torch.Tensor, num_players: int, team: bool) -> torch.Tensor:
        """Seat-slot values (B, 4) of the mover-perspective features (B, NUM_FEATURES)."""
        out = self.layers(features)
        if team:
            lead = 0.5 * ((out[:, 0] + out[:, 2]) - (out[:, 1] + out[:, 3]))
            return torch.stack([lead, -lead, lead, -lead], dim=1)
        n = num_players
        centred = (n * out[:, :n] - out[:, :n].sum(dim=1, keepdim=True)) / (n - 1)
        return F.pad(centred, (0, 4 - n))

    def packed(self) -> "np.ndarray":
        """The weights as the flat float64 array `agents.networks.evaluator` reads."""
        first, second, third = (m for m in self.layers if isinstance(m, nn.Linear))

        def t(x):
            return x.detach().cpu().double().numpy()

        return pack_mlp(t(first.weight).T, t(first.bias), t(second.weight).T, t(second.bias),
                                      t(third.weight).T, t(third.bias))


class PolicyValueNet(nn.Module):
    """obs (B, OBS_SIZE) float32 -> (policy logits (B, num_actions), values (B, 4)).

    Placement logits come from a 1x1 convolution with one output channel per tile value,
    so the logit of "value v on cell c" is computed at cell c (action id c * 10 + v - 1);
    the pass and team-show logits come from a small head over the pooled features."""

    def __init__(self, config: NetConfig | None = None):
        super().__init__()
        self.config = config or NetConfig()
        c = self.config
        if c.exposure not in EXPOSURES:
            raise ValueError(f"NetConfig.exposure must be one of {EXPOSURES}, got {c.exposure!r}")
        self.stem = nn.Sequential(nn.Conv2d(NUM_PLANES, c.channels, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(c.channels), nn.ReLU())
        self.tower = nn.Sequential(*[ResidualBlock(c.channels) for _ in range(c.blocks)])
        self.vector = nn.Sequential(nn.Linear(NUM_VECTOR_FEATURES, c.vector_hidden), nn.ReLU())
        # the vector features also reach every cell, so placement logits can use the hand
        self.vector_to_planes = nn.Linear(c.vector_hidden, c.channels)
        self.place_head = nn.Conv2d(c.channels, rules.MAX_VALUE, 1)
        if c.points_skip:
            self.points_gain = nn.Parameter(torch.full((rules.MAX_VALUE,), float(c.points_skip)))
        if c.exposure_skip:
            self.exposure_gain = nn.Parameter(torch.full((rules.MAX_VALUE,), float(c.exposure_skip)))
        summary = 2 * c.channels + c.vector_hidden  # mean- and max-pooled tower + vector MLP
        self.other_head = nn.Sequential(nn.Linear(summary, c.head_hidden), nn.ReLU(),
                                        nn.Linear(c.head_hidden, c.num_actions - rules.NUM_PLACEMENT_ACTIONS))
        self.value = nn.Sequential(nn.Linear(summary, c.head_hidden), nn.ReLU(),
                                   nn.Linear(c.head_hidden, c.value_outputs), nn.Tanh())
        # not used by forward(): trained on its own and read by search (see Evaluator)
        self.evaluator = Evaluator(c.evaluator_hidden) if c.evaluator_hidden else None

    @property
    def needs_exposure(self) -> bool:
        return bool(self.config.exposure_skip)

    @property
    def exposure_kind(self) -> str:
        """The `agents.networks.features.exposure` kind this network reads."""
        return self.config.exposure

    @torch.no_grad()
    def packed_placement(self) -> np.ndarray:
        """The placement logits' weights as the flat float32 array `agents.networks.placement`
        reads, each batch norm folded into its convolution (eval-mode statistics)."""
        c = self.config

        def linear(layer):  # (out, in) weights and a bias
            return [layer.weight, layer.bias]

        def conv(layer, bn):  # [out, ky, kx, in] weights and a bias, with bn folded in
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            return [layer.weight.permute(0, 2, 3, 1) * scale[:, None, None, None], bn.bias - bn.running_mean * scale]

        parts = [torch.tensor([NUM_PLANES, c.channels, c.blocks, NUM_VECTOR_FEATURES, c.vector_hidden,
                               bool(c.points_skip), bool(c.exposure_skip), P_POINTS], dtype=torch.float32)]
        parts += linear(self.vector[0]) + linear(self.vector_to_planes) + conv(self.stem[0], self.stem[1])
        for block in self.tower:
            parts += conv(block.conv1, block.bn1) + conv(block.conv2, block.bn2)
        parts += [self.place_head.weight[:, :, 0, 0], self.place_head.bias]
        if c.points_skip:
            parts.append(self.points_gain)
        if c.exposure_skip:
            parts.append(self.exposure_gain)
        return torch.cat([p.detach().cpu().float().reshape(-1) for p in parts]).numpy()

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None, exposure: torch.Tensor | None = None):
        """exposure: (B, 490) move features, required when `needs_exposure`."""
        planes = obs[:, :PLANES_SIZE].reshape(-1, NUM_PLANES, 7, 7)
        v = self.vector(obs[:, PLANES_SIZE:])
        x = self.stem(planes) + self.vector_to_planes(v)[:, :, None, None]
        x = self.tower(x)
        place = self.place_head(x)
        if self.config.points_skip:
            points = planes[:, P_POINTS:P_POINTS + rules.MAX_VALUE]
            place = place + self.points_gain[None, :, None, None] * points
        place = place.permute(0, 2, 3, 1).reshape(-1, rules.NUM_PLACEMENT_ACTIONS)
        if self.config.exposure_skip:
            if exposure is None:
                raise ValueError("this network reads the move exposure features (agents.networks.features.exposure); "
                                 "pass them as `exposure`")
            gain = self.exposure_gain.repeat(rules.NUM_CELLS)  # action c * 10 + v - 1 -> gain[v - 1]
            place = place - gain[None, :] * exposure
        summary = torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3)), v], dim=1)
        logits = torch.cat([place, self.other_head(summary)], dim=1)
        if mask is not None:
            logits = masked_logits(logits, mask)
        return logits, self.value(summary)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~mask.bool(), MASKED_LOGIT)


assert OBS_SIZE == PLANES_SIZE + NUM_VECTOR_FEATURES
