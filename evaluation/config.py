"""The evaluation config (`EvalConfig`), one strict pydantic model behind the YAML files and
the command line (a `agents.strict_config.StrictConfig`, like every config of the toolkit).

A YAML config (configs/eval_*.yaml) holds any subset of the fields below; an unknown key
or a wrongly typed value is a one-line error naming the key and the file. CLI flags
override the file (`evaluate.py` takes its choices and defaults from these fields). The
resolved config is saved as ``config.yaml`` in the output directory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import yaml
from pydantic import BeforeValidator, Field, PrivateAttr, StringConstraints

from agents import shipped
from agents.strict_config import StrictConfig, parse
from engine.extras import install_hint

if TYPE_CHECKING:
    from agents.play import TimeLimits

Seating = Literal["rotations", "permutations"]
StartMethod = Literal["spawn", "fork", "forkserver"]
Executor = Literal["process", "ray"]
Players = Literal[2, 3, 4]
SEATINGS, START_METHODS, EXECUTORS, PLAYERS = (get_args(t) for t in (Seating, StartMethod, Executor, Players))
# Time limits when the config sets none: generous enough never to trip for an agent
# that keeps to its own budget (a compiled kernel's first call included, see
# Agent.warm_up), tight enough that a stuck agent costs minutes, not the run.
DEFAULT_MOVE_TIME_LIMIT = 60.0  # seconds, or MOVE_LIMIT_PER_BUDGET x the largest time= budget
MOVE_LIMIT_PER_BUDGET = 10.0
GAME_LIMIT_PER_MOVE_LIMIT = 30.0  # a seat makes at most ~20 decisions in a game


def _listed(split: bool) -> BeforeValidator:
    """A list of strings also given as one string: agents "random greedy" (`split` on
    spaces), imports "module"."""
    return BeforeValidator(lambda v: (v.split() if split else [v]) if isinstance(v, str)
                           else list(v) if isinstance(v, tuple) else v)


def _pair(value):
    """sprt also spelled "elo0,elo1"."""
    if isinstance(value, str):
        try:
            return [float(v) for v in value.replace(" ", "").split(",")]
        except ValueError:
            raise ValueError(f"must be 'elo0,elo1', got {value!r}") from None
    return list(value) if isinstance(value, tuple) else value


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class EvalConfig(StrictConfig):
    """A tournament between agents (see evaluate.py --help for the CLI spelling)."""

    agents: Annotated[list[Text], _listed(split=True)] = []
    """Agent spec strings, e.g. ``random``, ``greedy``, ``ismcts:iterations=400``,
    ``checkpoint:runs/x/best.pt``. A spec given twice is labelled ``spec#2``."""
    players: Players = 2
    """Seats per game: 2, 3 or 4."""
    team: bool = False
    """Team variant (4 players): each table is two agents, one per team (seats 0+2, 1+3)."""
    games: int = Field(100, ge=1)
    """Games per table (per pair of agents with 2 players), rounded up to whole
    duplicate sets: every deal is played in every seating of the table."""
    seed: int = Field(0, ge=0)
    """Master seed: deals and every agent's per-game seed derive from it."""
    workers: int = Field(0, ge=0)
    """Worker processes; 0 = all cores (with ``executor: ray``, every CPU of the cluster),
    1 = play in this process."""
    executor: Executor = "process"
    """Where games run: "process" (this machine's worker processes) or "ray" (a Ray
    cluster; needs the ``ray`` extra). Not part of a run's identity: either resumes the other."""
    ray_address: str | None = None
    """With ``executor: ray``: the address of a running cluster (``ray start --head`` prints
    it; "auto" finds the local one). Default: start a Ray instance on this machine."""
    out: str | None = None
    """Output directory; rerunning with the same one resumes. Default: results/<name>."""
    one_vs_rest: bool = False
    """2 agents: play only the table where the first agent holds one seat (one team) and
    the second every other seat (`evaluate.py exploit`); default: every table."""
    seating: Seating = "rotations"
    """Seatings of a table per deal: "rotations" (each agent in each seat once) or
    "permutations" (every order of the agents; 3 players: 6, 4 players: 24)."""
    sprt: Annotated[list[float] | None, BeforeValidator(_pair)] = None
    """[elo0, elo1]: stop a 2-agent match early once a GSPRT decides elo <= elo0 or >= elo1
    (elo of the first agent over the second)."""
    sprt_alpha: float = Field(0.05, gt=0, lt=0.5)
    sprt_beta: float = Field(0.05, gt=0, lt=0.5)
    bootstrap: int = Field(1000, ge=0)
    """Bootstrap resamples (over deals) for the 95% intervals."""
    anchor: str | None = None
    """Agent (label) pinned to 0 Elo; "mean" for mean 0; default: random if present, else
    the first agent."""
    prior_draws: float = Field(1.0, ge=0)
    """Virtual draws between every pair of agents that met (keeps Bradley-Terry finite)."""
    save_games: bool = False
    """Also store each game's deal and moves in games.jsonl (for `evaluate.py replay`)."""
    plots: bool = True
    progress: bool = True
    imports: Annotated[list[Text], _listed(split=False)] = []
    """Python modules or .py files to import first (they may register more agents)."""
    start_method: StartMethod = "spawn"
    """multiprocessing start method of the worker pool."""
    move_time_limit: float | None = None
    """Seconds one move may take; over it the seat forfeits. Default: `DEFAULT_MOVE_TIME_LIMIT`, or
    `MOVE_LIMIT_PER_BUDGET` times the largest per-move ``time=`` budget among the agents if that is more."""
    game_time_limit: float | None = None
    """Seconds one seat's moves may take in total over a game (a chess clock); over it the
    seat forfeits. Default: `GAME_LIMIT_PER_MOVE_LIMIT` times the move time limit."""

    _lineup: list | None = PrivateAttr(None)

    @property
    def lineup(self) -> list | None:
        """The typed agents, one per spec of `agents` and labelled by it (`agents.AgentRecipe`,
        `agents.search.mcts.GuidedSearch`): set by `validate`, never saved or read."""
        return self._lineup

    # --- construction ---------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str | None = None) -> "EvalConfig":
        return parse(cls, data, source)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> "EvalConfig":
        path = shipped.config_file(path)  # a path, or a shipped config by name ("eval_quick")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: malformed YAML: {exc}") from exc
        return cls.from_dict({} if data is None else data, source=str(path))

    def override(self, **changes) -> "EvalConfig":
        """A copy with the given (non-None) fields replaced and type-checked."""
        data = self.to_dict()
        data.update({key: value for key, value in changes.items() if value is not None})
        return EvalConfig.from_dict(data, source="command line")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    # --- validation -------------------------------------------------------------------
    def validate(self, lineup: list | None = None) -> "EvalConfig":
        """Check the fields together (each alone was checked when the config was built);
        raise ValueError with a clear message. `lineup`: the agents already typed; default:
        `agents` parsed here, once (the config's edge)."""
        if len(self.agents) < 2:
            raise ValueError(f"need at least 2 agents, got {self.agents!r} (e.g. --agents random greedy)")
        if self.team and self.players != 4:
            raise ValueError(f"the team variant needs players: 4, got {self.players}")
        if self.one_vs_rest and len(self.agents) != 2:
            raise ValueError(f"one_vs_rest needs exactly 2 agents, got {len(self.agents)}")
        self._validate_executor()
        if self.sprt is not None:
            if len(self.sprt) != 2 or not self.sprt[0] < self.sprt[1]:
                raise ValueError(f"sprt must be [elo0, elo1] with elo0 < elo1, got {self.sprt!r}")
            if len(self.agents) != 2:
                raise ValueError(f"--sprt is for a head-to-head match of exactly 2 agents, got {len(self.agents)}")
        labels = self.labels()
        if self.anchor not in (None, "mean") and self.anchor not in labels:
            raise ValueError(f"anchor {self.anchor!r} is not one of the agents {labels} (or 'mean')")
        self._validate_agents(lineup)
        self._validate_time_limits()
        return self

    def _validate_agents(self, lineup: list | None) -> None:
        """The typed agents: `lineup` (labelled by the specs), else every spec parsed and its
        checkpoint files loaded (after importing the plugins that may register agents)."""
        import agents

        from .executor import load_plugins

        load_plugins(self.imports)
        if lineup is None and [str(a) for a in self.lineup or ()] == self.agents:
            lineup = self.lineup  # validated before
        if lineup is None:
            parsed = {spec: agents.check_spec(spec) for spec in dict.fromkeys(self.agents)}
            lineup = [parsed[spec] for spec in self.agents]
        elif [str(a) for a in lineup] != self.agents:
            raise ValueError(f"the typed agents {[str(a) for a in lineup]} are not labelled {self.agents}")
        self._lineup = list(lineup)

    def _validate_executor(self) -> None:
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError(f"ray_address ({self.ray_address!r}) is for executor: ray, got executor: {self.executor}")
        if self.ray_address is not None and not self.ray_address.strip():
            raise ValueError("ray_address must not be empty (e.g. 'auto' or 'HOST:6379')")
        if self.executor == "ray" and importlib.util.find_spec("ray") is None:
            raise ValueError(f"executor: ray: ray is not installed; {install_hint('ray')}")

    def _validate_time_limits(self) -> None:
        from agents.parameters import seconds

        for name in ("move_time_limit", "game_time_limit"):
            if getattr(self, name) is not None:
                seconds(name, getattr(self, name))
        budget = max(self._time_budgets(), default=None)
        if self.move_time_limit is not None and budget is not None and self.move_time_limit <= budget:
            raise ValueError(f"move_time_limit ({self.move_time_limit:g} s) must be above the agents' own "
                             f"per-move budget (time={budget:g}): every move would forfeit")

    def _time_budgets(self) -> list[float]:
        """The per-move ``time=`` budgets of the (validated) agents."""
        if self.lineup is None:
            raise ValueError("validate() the config first: its typed agents give the time budgets")
        return [agent.time for agent in self.lineup if agent.time is not None]

    def time_limits(self) -> "TimeLimits":
        """The limits the tournament enforces: the configured ones, defaults for the rest."""
        from agents.play import TimeLimits

        move = self.move_time_limit
        if move is None:
            move = max([DEFAULT_MOVE_TIME_LIMIT] + [MOVE_LIMIT_PER_BUDGET * t for t in self._time_budgets()])
        game = self.game_time_limit if self.game_time_limit is not None else GAME_LIMIT_PER_MOVE_LIMIT * move
        return TimeLimits(move, game)

    # --- derived --------------------------------------------------------------------------
    def labels(self) -> list[str]:
        """Unique display names: the spec, with ``#2``, ``#3``... on repeats."""
        seen: dict[str, int] = {}
        out = []
        for spec in self.agents:
            seen[spec] = seen.get(spec, 0) + 1
            out.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
        return out

    def anchor_index(self) -> int | None:
        """Agent pinned to 0 Elo (None: mean 0)."""
        if self.anchor == "mean":
            return None
        labels = self.labels()
        if self.anchor is not None:
            return labels.index(self.anchor)
        return labels.index("random") if "random" in labels else 0

    def fingerprint(self) -> dict[str, Any]:
        """The fields that decide which games a run plays (a resume must match them).
        `games` may grow or shrink between resumes: job ids do not depend on it."""
        return {k: getattr(self, k) for k in ("agents", "players", "team", "seed", "seating", "one_vs_rest")}

    def num_workers(self) -> int:
        """Workers to start; with ``executor: ray`` 0 stays 0 (the cluster's CPUs, known
        once connected)."""
        if self.workers or self.executor == "ray":
            return self.workers
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            return os.cpu_count() or 1

    def default_out(self) -> str:
        names = "-".join(re.sub(r"[^A-Za-z0-9]+", "", s.split(":")[0])[:12] for s in self.agents[:4])
        digest = hashlib.sha1(json.dumps(self.fingerprint(), sort_keys=True).encode()).hexdigest()[:6]
        return str(Path("results") / f"{self.players}p{'-team' if self.team else ''}-{names}-{digest}")
