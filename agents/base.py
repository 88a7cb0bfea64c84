"""The one interface every agent implements, and the registry that builds agents from
spec strings such as ``"random"``, ``"ismcts:iterations=800"`` or ``"checkpoint:runs/x/best.pt"``.

An agent sees what its seat may see: the observation vector and a `PlayerView`
(engine/view.py); only agents marked ``cheating = True`` may call ``view.full_state()``.
A parameter of a given name (``time``, ``iterations``, ``c``...) is checked by the same
rule whichever agent takes it (`PARAMETER_RULES`, `agents.settings.RULES`; the rules are
in `agents.parameters`), before the agent is built. A spec is read once, at its edge
(`parse_agent`, `check_spec`): workers carry and build its `AgentRecipe`.
"""

from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .parameters import boolean, number, parse_parameters, positive_int, refuse_retired_parameters
from .settings import RULES as SEARCH_RULES

_REGISTRY: dict[str, Callable[..., "Agent"]] = {}


@dataclass(frozen=True)
class PolicyModel:
    """What an agent declares about its moves (`Agent.policy_model`), for a best response
    that models them (`agents.search.best_response`): ``kind`` "greedy" or "random"
    (exactly), "policy" (the rollout policy with ``epsilon_threshold`` and ``safe``), or
    "network" (a network's raw policy: ``net``, its move ``temperature`` and the
    ``reach_temperature`` that weighs its moves in the belief)."""

    kind: str
    epsilon_threshold: int = 0
    safe: bool = True
    net: Any = None
    temperature: float = 0.0
    reach_temperature: float = 0.0


class Agent(ABC):
    """An agent of 24/7. Subclasses implement `act`; `reset` and `seed` are optional."""

    name: str = "agent"
    cheating: bool = False  # True only for upper-bound baselines that see hidden tiles
    # Parameters that name checkpoint files: `check_spec` loads each with `load_checkpoint`.
    checkpoint_parameters: tuple[str, ...] = ()
    # This agent's own rules for parameters (its choices, a stricter bound), checked like
    # `PARAMETER_RULES`, which they override.
    parameter_rules: dict[str, Callable[[str, Any], Any]] = {}

    @staticmethod
    def load_checkpoint(path: str) -> None:
        """Load the checkpoint file a `checkpoint_parameters` parameter names, on the CPU;
        ValueError if it is missing or does not load (agents that name one say how)."""
        raise NotImplementedError

    @classmethod
    def check_arguments(cls, arguments: dict[str, Any]) -> None:
        """Checks that involve several parameters, given every constructor argument
        (defaults filled in) after each passed its rule; raise ValueError. Constructors
        call it too, so the rule is written once."""

    _rng: np.random.Generator | None = None  # drawn from the OS on first use unless seeded

    def __init__(self) -> None:
        self.spec = self.name

    @property
    def rng(self) -> np.random.Generator:
        """The agent's own random stream (`seed` sets it; unseeded, from the OS's entropy)."""
        if self._rng is None:
            self._rng = np.random.default_rng()
        return self._rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self._rng = value

    def seed(self, seed: int | None) -> None:
        """Reseed the agent's own random stream (same seed, same play)."""
        self.rng = np.random.default_rng(seed)

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        """A new game starts and this agent plays `seat`."""

    def policy_model(self, num_players: int, team: bool) -> PolicyModel | None:
        """How a best response can model this agent's moves in this game, or None (it is
        not modelled: the response searches as plain ISMCTS). Agents with a closed-form
        or network policy declare it."""
        return None

    def warm_up(self) -> None:
        """Compile or load whatever makes a first move slow (numba kernels), so that a
        tournament's move clock measures play, not compilation. Called once per agent
        a tournament worker builds, before its games; the default does nothing."""

    def compile_parts(self) -> tuple[str, ...]:
        """Names of the parts of `warm_up`'s compiling that can run side by side, each in
        another process (`compile_part`; `engine.kernel_cache.compile_in_parallel`), when
        they are not in numba's cache yet; the default: none."""
        return ()

    def compile_part(self, name: str) -> None:
        """Compile (and so cache) the kernels of part `name` of `compile_parts`."""
        raise ValueError(f"{type(self).__name__} has no compile part {name!r}")

    # True: the game loop (`agents.play.play_game`) calls `observe_action` for every move
    observes_actions: bool = False

    def observe_action(self, view, seat: int, action: int) -> None:
        """`seat` is about to play `action` (this agent's `view` shows the game before the
        move); only called when `observes_actions` is True, for every seat's placements and
        passes (team shows are private and never passed). OpenSpiel's `inform_action`."""

    @abstractmethod
    def act(self, observation: np.ndarray | None, view) -> int:
        """Return a legal action id for the seat to move (``view.seat``)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r}>"


def warm_up_view():
    """Where `Agent.warm_up` plays its move: seat 0 at the start of a fixed 2-player game."""
    from engine import GameState
    from engine.view import PlayerView

    return PlayerView(GameState.new(2, seed=0), 0)


def compile_engine() -> None:
    """Compile (or load) the engine's kernels that every agent's compile part calls: a
    deal and a move (`warm_up_view`'s game). What `compile_in_parallel` runs in the parent
    while its workers start (`meanwhile`): the parts then load them instead of each
    compiling them."""
    from engine import GameState

    state = GameState.new(2, seed=0)  # warm_up_view's game
    state.step(state.legal_actions()[0])


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
    "ismcts": "agents.search.mcts",
    "pimc": "agents.search.mcts",
    "cheat": "agents.search.mcts",
    "br": "agents.search.best_response",
    "checkpoint": "agents.networks.policy",
    "selfplay": "agents.search.selfplay",
    "selfplay-policy": "agents.search.selfplay",
    "selfplay-afterstate": "agents.search.selfplay",
    "afterstate": "agents.search.afterstate",
    "openspiel-ismcts": "agents.openspiel_bots",
    "openspiel-mcts": "agents.openspiel_bots",
}


# Names that no longer build an agent, and the spec that plays what they did.
RETIRED = {
    "cheating_mcts": "cheat (the same agent: one name per agent, the one the docs use)",
    "alphazero": "ismcts:net=PATH (alphazero:PATH,leaf=rollout,... is ismcts:net=PATH,...; its PUCT search with "
                 "the network's values at the leaves, leaf=value, was retired too: it lost at equal time)",
}

def registered() -> list[str]:
    """Every agent name `make` knows (imports all the built-in agent modules)."""
    for name in BUILTIN_MODULES:
        _load_builtin(name)
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, list[str], dict[str, Any]]:
    """Split ``"name:a=1,b=x,path"`` into (name, positional, keyword) with typed values.

    A value that is itself a spec (with ``:`` and ``,``) goes in square brackets, which
    nest: ``br:target=[ismcts:iterations=200,c=0.4],iterations=1000`` gives
    ``target="ismcts:iterations=200,c=0.4"`` (a bracketed value stays a string)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    return (name, *parse_parameters(rest, spec))


@dataclass(frozen=True)
class AgentRecipe:
    """An agent spec parsed and checked once, at its edge (`parse_agent`): the agent's
    name and checked constructor arguments, which workers build it from without reading
    text. `spec`, the text it came from, is its label (``str(recipe)``)."""

    spec: str
    name: str
    args: tuple = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def time(self) -> float | None:
        """The per-move ``time=`` budget, if the spec gives one."""
        return dict(self.kwargs).get("time")

    def build(self, seed: int | None = None) -> "Agent":
        _load_builtin(self.name)
        if self.name not in _REGISTRY:
            raise ValueError(f"unknown agent {self.name!r} in spec {self.spec!r}")
        try:
            agent = _REGISTRY[self.name](*self.args, **dict(self.kwargs))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad agent spec {self.spec!r}: {exc}") from exc
        agent.spec = self.spec
        agent.seed(seed)
        return agent

    def __str__(self) -> str:
        return self.spec


def make(spec: str, seed: int | None = None) -> Agent:
    """Build an agent from a spec string; clear errors for unknown names or parameters."""
    return parse_agent(spec).build(seed)


def compile_jobs(sources, built: Mapping[Any, Agent] | None = None) -> list:
    """Jobs for `engine.kernel_cache.compile_in_parallel`: one per part that the agents of
    `sources` (spec strings or recipes) compile on a cold cache (`Agent.compile_parts`);
    none when their kernels are cached. `built`: agents already built from some sources
    (seed 0), asked instead of building them again."""
    built = built or {}
    jobs = []
    for source in dict.fromkeys(sources):
        agent = built[source] if source in built else _build(source)
        jobs += [functools.partial(compile_part, source, name) for name in agent.compile_parts()]
    return jobs


def compile_part(source, name: str) -> None:
    """A compile job: part `name` of the agent `source` (a spec string or a recipe)."""
    _build(source).compile_part(name)


def _build(source) -> Agent:
    return (parse_agent(source) if isinstance(source, str) else source).build(seed=0)


def parse_agent(spec: str, load_checkpoints: bool = False) -> AgentRecipe:
    """The recipe of a spec string (the edge): the name is known, the parameters fit its
    signature and `PARAMETER_RULES`, and with `load_checkpoints` every checkpoint file it
    names exists and loads (`agents.networks.load_net`, on the CPU). Raises ValueError
    naming the spec and the problem."""
    return agent_recipe(spec, *parse_spec(spec), load_checkpoints=load_checkpoints)


def check_spec(spec: str) -> AgentRecipe:
    """Check an agent spec completely without building the agent: `parse_agent`, its
    checkpoint files loaded."""
    return parse_agent(spec, load_checkpoints=True)


def is_typed(agent) -> bool:
    """A typed agent: anything that builds an agent (`AgentRecipe`, `agents.search.mcts.GuidedSearch`), never text."""
    return not isinstance(agent, str) and callable(getattr(agent, "build", None))


def typed_agent(agent, what: str = "an agent"):
    """`agent` if it is typed (`is_typed`); never a spec string."""
    if not is_typed(agent):
        raise ValueError(f"{what} must be a typed agent (agents.search.mcts.GuidedSearch, or agents.parse_agent(SPEC) "
                         f"at the command line's or config's edge), got {agent!r}")
    return agent


def agent_recipe(spec: str, name: str, positional: list, kwargs: dict[str, Any],
                 load_checkpoints: bool = False) -> AgentRecipe:
    """`parse_agent` of parameters already parsed (a value may be typed: a best response's
    target), labelled `spec`."""
    spec = spec.strip()
    cls, bound = _resolve(spec, name, positional, kwargs)
    for parameter in getattr(cls, "checkpoint_parameters", ()) if load_checkpoints else ():
        if parameter in bound.arguments:
            _check_checkpoint(spec, cls, parameter, bound.arguments[parameter])
    args, kwargs = _call_arguments(bound, len(positional))
    return AgentRecipe(spec, name, tuple(args), tuple(kwargs.items()))


def _resolve(spec: str, name: str, positional: list, kwargs: dict[str, Any]) -> tuple[type, inspect.BoundArguments]:
    """The agent class of a parsed spec and its parameters, bound to the constructor's
    signature and checked against `PARAMETER_RULES` (values normalized)."""
    _load_builtin(name)
    if name in RETIRED:
        raise ValueError(f"unknown agent {name!r} in spec {spec!r}: it was replaced by {RETIRED[name]}")
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r} in spec {spec!r}; known agents: {', '.join(registered())}")
    cls = _REGISTRY[name]
    signature = inspect.signature(cls)
    refuse_retired_parameters(kwargs, signature.parameters, f"bad agent spec {spec!r}")
    try:
        bound = signature.bind(*positional, **kwargs)
    except TypeError as exc:
        params = ", ".join(p for p in signature.parameters)
        raise ValueError(f"bad parameters in agent spec {spec!r}: {exc}; {name} takes: {params}") from exc
    try:
        check_parameters(bound.arguments, signature, getattr(cls, "parameter_rules", {}))
        if hasattr(cls, "check_arguments"):
            full = signature.bind_partial()
            full.arguments.update(bound.arguments)
            full.apply_defaults()
            cls.check_arguments(dict(full.arguments))
    except ValueError as exc:
        raise ValueError(f"bad agent spec {spec!r}: {exc}") from exc
    return cls, bound


def _call_arguments(bound: inspect.BoundArguments, num_positional: int) -> tuple[list, dict[str, Any]]:
    """The checked arguments, passed the way the spec gave them: the first
    `num_positional` by position, the rest by name (a signature may be a facade over
    **kwargs, as pimc's is)."""
    args, kwargs = [], {}
    params = bound.signature.parameters
    for n, (name, value) in enumerate(bound.arguments.items()):
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            args.extend(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            kwargs.update(value)
        elif n < num_positional:
            args.append(value)
        else:
            kwargs[name] = value
    return args, kwargs


def _check_checkpoint(spec: str, cls: type, name: str, path) -> None:
    if not isinstance(path, str) or not path:
        raise ValueError(f"bad agent spec {spec!r}: {name} must be a checkpoint file path, got {path!r}")
    try:
        cls.load_checkpoint(path)
    except ValueError as exc:
        raise ValueError(f"bad agent spec {spec!r}: {exc}") from exc


# The rule for every agent parameter of that name, whichever agent takes it: these, and
# every search setting's (`agents.settings.RULES`: iterations, time, c, epsilon, ...). A
# parameter whose default is None may also be given as none. Rules for one agent's own
# choices (target=, device=) stay with that agent (`Agent.parameter_rules`).
PARAMETER_RULES: dict[str, Callable[[str, Any], Any]] = {
    "simulations": positive_int,
    "determinizations": positive_int,
    "worlds": positive_int,
    "temperature": number,
    "safe": boolean,
}


def check_parameters(arguments: dict[str, Any], signature: inspect.Signature | None = None,
                     rules: dict[str, Callable[[str, Any], Any]] | None = None) -> None:
    """Apply `PARAMETER_RULES` (overridden by an agent's own `rules`) to bound constructor
    arguments, normalizing the values in place (e.g. an int time becomes a float).
    Raises ValueError naming the parameter."""
    rules = {**PARAMETER_RULES, **SEARCH_RULES, **(rules or {})}
    for name, value in list(arguments.items()):
        param = signature.parameters.get(name) if signature is not None else None
        if param is not None and param.kind is inspect.Parameter.VAR_KEYWORD:
            check_parameters(value, None, rules)  # **kwargs passed on to a base class
            continue
        rule = rules.get(name)
        if rule is None:
            continue
        if value is None and (param is None or param.default is None):
            continue
        arguments[name] = rule(name, value)


def _load_builtin(name: str) -> None:
    """Import the module that registers the built-in agent `name` (if any, once)."""
    import importlib

    if name not in _REGISTRY and name in BUILTIN_MODULES:
        importlib.import_module(BUILTIN_MODULES[name])
