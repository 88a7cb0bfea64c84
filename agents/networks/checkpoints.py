"""Checkpoint files of the policy-value network, and the torch device names.

A checkpoint is read with torch's restricted unpickler (`weights_only=True`), which
rebuilds tensors and plain data (dicts, lists, tuples, str, numbers, bool, None) and
refuses anything else before calling it: loading a file can never run code from it.
Numpy arrays in the training state are stored as tensors under NUMPY_TAG and turned
back into arrays when read.
"""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np
import torch

from engine.files import atomic_write

from .model import NetConfig, PolicyValueNet


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




CHECKPOINT_FORMAT = "twentyfourseven-checkpoint-v1"
NUMPY_TAG = "__numpy_array__"


def device_parameter(name: str, value) -> str:
    """The rule of an agent's `device` parameter: a torch device this machine has."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a device name such as cpu, cuda or auto, got {value!r}")
    resolve_device(value)
    return value


def save_checkpoint(path, net: PolicyValueNet, **extra) -> None:
    """Write a checkpoint: the network (weights + shape) and any extra training state
    (tensors, numpy arrays of numbers and plain data only: TypeError for anything else).
    Written to a temporary file first, so a crash never leaves a half-written file."""
    payload = {"format": CHECKPOINT_FORMAT, "net_config": net.config.model_dump(),
               "model": net.state_dict(), **_storable(extra, "checkpoint")}
    atomic_write(path, lambda f: torch.save(payload, f))


def read_checkpoint(path, device: str | torch.device = "cpu") -> dict:
    """Load a checkpoint file without running anything stored in it. ValueError with a
    clear message if it is missing, corrupt, or holds anything but tensors and plain data."""
    device = resolve_device(device)
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint not found: {path}")
    payload = _load_restricted(path, device)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} file")
    return _restored(payload)


# The `NetConfig` keys added after the first checkpoints, with the value a checkpoint that
# lacks one was built with (the defaults are today's recipe; models/selfplay_4p.pt has no exposure).
KEYS_BEFORE_THEY_EXISTED = {"points_skip": 0.0, "exposure_skip": 0.0, "exposure": "worst", "evaluator_hidden": 0}


def load_net(path, device: str | torch.device = "cpu") -> PolicyValueNet:
    """The network stored in a checkpoint, in eval mode."""
    device = resolve_device(device)
    payload = read_checkpoint(path, device)
    try:
        net = PolicyValueNet(NetConfig(**{**KEYS_BEFORE_THEY_EXISTED, **payload["net_config"]}))
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
