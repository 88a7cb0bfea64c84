"""The one interface every agent implements, and the registry that builds agents from
spec strings such as ``"random"``, ``"greedy"``, ``"ismcts:iterations=800"``,
``"pimc:determinizations=20"`` or ``"checkpoint:runs/x/best.pt"``.

An agent sees what its seat may see: the observation vector the env gives that seat
and a `PlayerView` (engine/view.py) that exposes the public state and the seat's own
hand, and can sample full worlds consistent with them for search. Only agents marked
``cheating = True`` may call ``view.full_state()``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, Callable

import numpy as np

_REGISTRY: dict[str, Callable[..., "Agent"]] = {}


class Agent(ABC):
    """An agent of 24/7. Subclasses implement `act`; `reset` and `seed` are optional."""

    name: str = "agent"
    cheating: bool = False  # True only for upper-bound baselines that see hidden tiles

    def __init__(self) -> None:
        self.rng = np.random.default_rng()
        self.spec = self.name

    def seed(self, seed: int | None) -> None:
        """Reseed the agent's own random stream (same seed, same play)."""
        self.rng = np.random.default_rng(seed)

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        """A new game starts and this agent plays `seat`."""

    @abstractmethod
    def act(self, observation: np.ndarray | None, view) -> int:
        """Return a legal action id for the seat to move (``view.seat``)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r}>"


def register(name: str):
    """Class decorator: make the agent buildable as ``make("name:key=value,...")``."""

    def wrap(cls):
        if name in _REGISTRY:
            raise ValueError(f"agent name {name!r} is already registered")
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return wrap


# Where each built-in agent lives: `make` imports only the module an agent needs, so a
# problem in one agent module never stops the others from being built.
BUILTIN_MODULES = {
    "random": "agents.simple",
    "greedy": "agents.greedy",
    "policy": "agents.greedy",
    "ismcts": "agents.search",
    "pimc": "agents.search",
    "cheat": "agents.search",
    "cheating_mcts": "agents.search",
    "checkpoint": "agents.neural",
    "alphazero": "agents.alphazero",
}


def registered() -> list[str]:
    """Every agent name `make` knows (imports all the built-in agent modules)."""
    for name in BUILTIN_MODULES:
        _load_builtin(name)
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, list[str], dict[str, Any]]:
    """Split ``"name:a=1,b=x,path"`` into (name, positional, keyword) with typed values."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    positional: list[str] = []
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if eq:
            kwargs[key.strip()] = _typed(value.strip())
        else:
            positional.append(part)
    return name, positional, kwargs


def _typed(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def make(spec: str, seed: int | None = None) -> Agent:
    """Build an agent from a spec string; clear errors for unknown names or parameters."""
    name, positional, kwargs = parse_spec(spec)
    _load_builtin(name)
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r} in spec {spec!r}; known agents: {', '.join(registered())}")
    cls = _REGISTRY[name]
    try:
        inspect.signature(cls).bind(*positional, **kwargs)
    except TypeError as exc:
        params = ", ".join(p for p in inspect.signature(cls).parameters)
        raise ValueError(f"bad parameters in agent spec {spec!r}: {exc}; {name} takes: {params}") from exc
    try:
        agent = cls(*positional, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad agent spec {spec!r}: {exc}") from exc
    agent.spec = spec.strip()
    agent.seed(seed)
    return agent


def _load_builtin(name: str) -> None:
    """Import the module that registers the built-in agent `name` (if any, once)."""
    import importlib

    if name not in _REGISTRY and name in BUILTIN_MODULES:
        importlib.import_module(BUILTIN_MODULES[name])
