"""The shipped self-play networks under stable names.

* ``selfplay[:time=S | iterations=N, prior=W]``: the network-guided search
  (``ismcts:net=models/selfplay_<n>p.pt,...``) of the network that
  ``configs/selfplay_<n>p.yaml`` trained for the game's player count, or for the team
  variant ``models/selfplay_team.pt`` (``configs/selfplay_team.yaml``);
* ``selfplay-policy[:temperature=T, device=D]``: that network's raw policy, no search;
* ``selfplay-afterstate[:worlds=K]``: that network's fast evaluator one ply ahead
  (``afterstate:net=models/selfplay_<n>p.pt``, `agents.search.afterstate`).

The network is chosen when a game starts (`reset` tells the player count and the variant),
so one spec plays 2- and 4-player games and team games. A game without a shipped network is
a clear error.
"""

from __future__ import annotations

from pathlib import Path

from agents.shipped import network as shipped_network
from agents.base import Agent, register
from agents.networks.checkpoints import device_parameter, resolve_device
from agents.networks.policy import CheckpointAgent
from agents.parameters import number, positive_int
from agents.settings import SELFPLAY_SEARCH, SearchSettings

from .afterstate import AfterstateAgent
from .mcts import ISMCTSAgent

class _PerPlayerCount(Agent):
    """Builds the agent for the game's player count at `reset`, keeps one per count."""

    def __init__(self) -> None:
        super().__init__()
        self._agents: dict[tuple[int, bool], Agent] = {}
        self._current: Agent | None = None
        self._seed: int | None = None

    def _build(self, path: Path) -> Agent:
        raise NotImplementedError

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        self._seed = seed
        for key, agent in self._agents.items():
            agent.seed(self._inner_seed(key))

    def _inner_seed(self, key: tuple[int, bool]) -> int | None:
        return None if self._seed is None else self._seed * 5 + key[0]

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        key = (num_players, bool(team))
        if key not in self._agents:
            agent = self._build(shipped_network(num_players, team))
            agent.seed(self._inner_seed(key))
            self._agents[key] = agent
        self._current = self._agents[key]
        self._current.reset(seat, num_players, team)

    @property
    def current(self) -> Agent | None:
        """The agent of the game `reset` last started (None before)."""
        return self._current

    def warm_up(self) -> None:
        self.reset(0, 2)
        self._current.warm_up()

    def compile_parts(self) -> tuple[str, ...]:
        """The parts of the 2-player agent, which `warm_up` compiles."""
        self.reset(0, 2)
        return self._current.compile_parts()

    def compile_part(self, name: str) -> None:
        self.reset(0, 2)
        self._current.compile_part(name)

    def policy_model(self, num_players: int, team: bool):
        """The model of the agent this game builds (its network)."""
        self.reset(0, num_players, team)
        return self._current.policy_model(num_players, team)

    def _game_agent(self) -> Agent:
        """The agent of the game under way (ValueError before `reset` starts one)."""
        if self._current is None:
            raise ValueError(f"{self.name}: reset(seat, num_players, team) must start the game first")
        return self._current

    def act(self, observation, view) -> int:
        return self._game_agent().act(observation, view)


@register("selfplay")
class SelfPlayAgent(_PerPlayerCount):
    """The shipped network's search (see the module doc); `time`/`iterations` as ismcts."""

    def __init__(self, iterations: int = SELFPLAY_SEARCH.iterations, time: float | None = SELFPLAY_SEARCH.time,
                 prior: float = SELFPLAY_SEARCH.prior) -> None:
        super().__init__()
        self.settings = SearchSettings(iterations=iterations, time=time, prior=prior)

    def _build(self, path: Path) -> Agent:
        return ISMCTSAgent(net=str(path), settings=self.settings)

    def act_with_visits(self, view):
        """As `ISMCTSAgent.act_with_visits`, with the network of the current game."""
        return self._current.act_with_visits(view)

    def position_value(self, view) -> float:
        """As `ISMCTSAgent.position_value`, with the network of the current game."""
        return self._game_agent().position_value(view)

    def show_before(self, view, action: int) -> int | None:
        """As `ISMCTSAgent.show_before`, for the current game (the self-play teacher shows)."""
        return self._game_agent().show_before(view, action)


@register("selfplay-policy")
class SelfPlayPolicyAgent(_PerPlayerCount):
    """The shipped network's raw policy (see the module doc)."""

    needs_observation = True
    parameter_rules = {"device": device_parameter}

    def __init__(self, temperature: float = 0.0, device: str = "cpu") -> None:
        super().__init__()
        if number("temperature", temperature) < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.options = {"temperature": temperature, "device": str(resolve_device(device))}

    def _build(self, path: Path) -> Agent:
        return CheckpointAgent(str(path), **self.options)


@register("selfplay-afterstate")
class SelfPlayAfterstateAgent(_PerPlayerCount):
    """The shipped network's fast evaluator one ply ahead (see the module doc)."""

    def __init__(self, worlds: int = 32) -> None:
        super().__init__()
        self.worlds = positive_int("worlds", worlds)

    def _build(self, path: Path) -> Agent:
        return AfterstateAgent(str(path), self.worlds)


__all__ = ["SelfPlayAfterstateAgent", "SelfPlayAgent", "SelfPlayPolicyAgent", "shipped_network"]
