"""The networks room: the policy-value network (`model`, torch), its checkpoint files and
device names (`checkpoints`), the agents that play a network's raw policy (`policy`), the
move features a network may read (`features`) and the numba passes a search runs
(`placement`: the policy's placement logits; `evaluator`: the fast evaluator).

Training and evaluation take the names of `__all__` from here. They are imported on first
use, so that a search that only runs a network's numba passes never imports torch.
"""

from __future__ import annotations

__all__ = ["Evaluator", "NetAgent", "NetConfig", "NetPolicy", "PolicyValueNet", "load_net", "read_checkpoint",
           "resolve_device", "save_checkpoint"]


def __getattr__(name: str):
    if name in ("Evaluator", "NetConfig", "PolicyValueNet"):
        from . import model as module
    elif name in ("load_net", "read_checkpoint", "resolve_device", "save_checkpoint"):
        from . import checkpoints as module
    elif name in ("NetAgent", "NetPolicy"):
        from . import policy as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
