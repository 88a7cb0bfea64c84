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

from collections import OrderedDict

import numpy as np
import torch
from torch import nn
from pydantic import BaseModel, ConfigDict, Field
from torch.nn import functional as F

from . import value_kernels
from .features import EXPOSURES

from engine import rules
from engine.files import atomic_write
from env.observation import NUM_PLANES, NUM_VECTOR_FEATURES, OBS_SIZE, P_POINTS, PLANES_SIZE

MASKED_LOGIT = -1e9


class NetConfig(BaseModel):
    """Shape of the network (saved with every checkpoint; the training config's net: section)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    channels: int = Field(32, ge=1)  # width of the residual tower
    blocks: int = Field(2, ge=0)  # residual blocks
    vector_hidden: int = 64  # MLP width for the vector features
    head_hidden: int = 128  # hidden width of the value head and the pass/show head
    num_actions: int = rules.NUM_ACTIONS  # 491, or rules.NUM_TEAM_ACTIONS for teams
    value_outputs: int = 4  # seats, rotated; unused slots are ignored
    # Add gain[v] * (the observation's "minutes if v is placed here" plane) to the
    # placement logits: a skip connection that lets the network start from the greedy
    # agent's preference and learn the corrections (gain is learned, one per value).
    points_skip: float = 0.0  # initial gain; 0 = no skip connection
    # Also subtract gain * the move's exposure (`agents.features.exposure`: the minutes
    # it leaves open to tiles the mover has not seen, / 100) from its logit. A network
    # with this on must be given those features beside the observation.
    exposure_skip: float = 0.0  # initial gain; 0 = not used
    # Which exposure the skip reads (`agents.features.EXPOSURES`): "worst" (the most any
    # unseen value could score after the move), "expected" (the next seat's expected
    # best reply) or "outlook" (that, less half the mover's own best follow-up).
    # Checkpoints written before this option read "worst".
    exposure: str = "worst"
    # Width of the fast evaluator's two hidden layers (`Evaluator`, scored in numba by
    # `agents.value_kernels` at the cut rollouts of network-guided ISMCTS); 0 = none.
    evaluator_hidden: int = Field(0, ge=0)


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
    """The fast evaluator: an MLP from the mover's `agents.value_kernels` features to one
    output per seat slot, centred into zero-sum values the way
    `agents.value_kernels.evaluate_position` centres them (that kernel runs it in search;
    this module trains it and hands it the weights through `packed`)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(value_kernels.NUM_FEATURES, hidden), nn.ReLU(),
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
        """The weights as the flat float64 array `agents.value_kernels` reads."""
        first, second, third = (m for m in self.layers if isinstance(m, nn.Linear))

        def t(x):
            return x.detach().cpu().double().numpy()

        return value_kernels.pack_mlp(t(first.weight).T, t(first.bias), t(second.weight).T, t(second.bias),
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
        """The `agents.features.exposure` kind this network reads."""
        return self.config.exposure

    @torch.no_grad()
    def packed_placement(self) -> np.ndarray:
        """The placement logits' weights as the flat float32 array `agents.net_kernels`
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
                raise ValueError("this network reads the move exposure features (agents.features.exposure); "
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


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """'auto' = CUDA when present, else CPU; 'cpu', 'cuda' or 'cuda:N'. ValueError for a
    name torch does not know, or a CUDA device on a machine without one."""
    if isinstance(name, torch.device):
        device = name
    elif name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            device = torch.device(name)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"unknown device {name!r}: use auto, cpu, cuda or cuda:N") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r}: CUDA is not available on this machine (use device=cpu or auto)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


def net_config_dict(net: PolicyValueNet) -> dict:
    return net.config.model_dump()


assert OBS_SIZE == PLANES_SIZE + NUM_VECTOR_FEATURES


# --- checkpoints ------------------------------------------------------------------------
# A checkpoint is read with torch's restricted unpickler (`weights_only=True`), which
# rebuilds tensors and plain data (dicts, lists, tuples, str, numbers, bool, None) and
# refuses anything else before calling it: loading a file can never run code from it.
# Numpy arrays in the training state are stored as tensors under NUMPY_TAG and turned
# back into arrays when read.
CHECKPOINT_FORMAT = "twentyfourseven-checkpoint-v1"
NUMPY_TAG = "__numpy_array__"


def save_checkpoint(path, net: PolicyValueNet, **extra) -> None:
    """Write a checkpoint: the network (weights + shape) and any extra training state
    (tensors, numpy arrays of numbers and plain data only: TypeError for anything else).
    Written to a temporary file first, so a crash never leaves a half-written file."""
    payload = {"format": CHECKPOINT_FORMAT, "net_config": net_config_dict(net),
               "model": net.state_dict(), **_storable(extra, "checkpoint")}
    atomic_write(path, lambda f: torch.save(payload, f))


def read_checkpoint(path, device: str | torch.device = "cpu") -> dict:
    """Load a checkpoint file without running anything stored in it. ValueError with a
    clear message if it is missing, corrupt, or holds anything but tensors and plain data."""
    import os

    device = resolve_device(device)
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint not found: {path}")
    payload = _load_restricted(path, device)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} file")
    return _restored(payload)


def load_net(path, device: str | torch.device = "cpu") -> PolicyValueNet:
    """The network stored in a checkpoint, in eval mode."""
    device = resolve_device(device)
    payload = read_checkpoint(path, device)
    try:
        net = PolicyValueNet(NetConfig(**payload["net_config"]))
        net.load_state_dict(payload["model"])
    except Exception as exc:
        raise ValueError(f"checkpoint {path} does not match the network: {exc}") from exc
    return net.to(device).eval()


def _storable(value, where: str):
    """`value` with numpy arrays as tagged tensors and numpy scalars as Python numbers;
    TypeError naming the place of anything the restricted unpickler would refuse."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"{where}: cannot store a numpy array of dtype {value.dtype} in a checkpoint")
        return {NUMPY_TAG: torch.from_numpy(np.ascontiguousarray(value).copy())}
    if isinstance(value, np.generic):
        return value.item()
    if type(value) in (dict, OrderedDict):
        return type(value)((k, _storable(v, f"{where}[{k!r}]")) for k, v in value.items())
    if type(value) in (list, tuple):
        return type(value)(_storable(v, f"{where}[{i}]") for i, v in enumerate(value))
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    raise TypeError(f"{where}: cannot store a {type(value).__name__} in a checkpoint "
                    "(tensors, numpy arrays and plain data only)")


def _restored(value):
    """Undo `_storable`: tagged tensors back to numpy arrays."""
    if isinstance(value, dict):
        if set(value) == {NUMPY_TAG} and isinstance(value[NUMPY_TAG], torch.Tensor):
            return value[NUMPY_TAG].cpu().numpy()
        return type(value)((k, _restored(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_restored(v) for v in value)
    return value


def _load_restricted(path, device: torch.device):
    """torch.load with the restricted unpickler; the one extension is numpy arrays of
    numbers (`_LEGACY_NUMPY`), which training checkpoints held before NUMPY_TAG."""
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:
        error = exc
    refused = _globals_in(path) - _LEGACY_NUMPY_NAMES
    if refused:
        raise ValueError(f"refusing to load {path}: it holds Python objects other than tensors and plain "
                         f"data ({', '.join(sorted(refused))}), which could run code when loaded; "
                         "a checkpoint written by this project holds none") from None
    try:
        with torch.serialization.safe_globals(_LEGACY_NUMPY):
            return torch.load(path, map_location=device, weights_only=True)
    except Exception:
        pass
    raise ValueError(f"checkpoint {path} is corrupt or not a checkpoint: {_reason(error)}") from error


def _reason(error: Exception) -> str:
    """The gist of a torch.load error (the restricted unpickler wraps it in advice about
    weights_only that does not apply here)."""
    text = str(error)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1].split("Check the documentation", 1)[0]
    return " ".join(text.split()) or type(error).__name__


def _globals_in(path) -> set[str]:
    """The Python globals a checkpoint's pickle names (read without unpickling; empty
    when the file cannot be read as a torch checkpoint at all)."""
    try:
        return set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception:
        return set()


def _legacy_numpy_globals() -> list:
    """What numpy arrays of numbers pickle as: the array constructor and number dtypes
    (not the object dtype: training state holds no object arrays). None of these calls
    anything the file names; an array's items are only what the restricted unpickler
    itself rebuilt."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray
    dtypes = {type(np.dtype(code)) for code in "?bhilqBHILQefd"}
    return [multiarray._reconstruct, multiarray.scalar, np.ndarray, np.dtype, *dtypes]


_LEGACY_NUMPY = _legacy_numpy_globals()
_LEGACY_NUMPY_NAMES = {f"{g.__module__}.{g.__name__}" for g in _LEGACY_NUMPY}
