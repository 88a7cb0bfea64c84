"""Training configuration: typed sections (pydantic models) loaded from YAML, strictly.

Every key has a default and a one-line meaning. An unknown key, a wrong type or a bad
value is a one-line error naming the key (and the file), found when the config is loaded,
before any training (`agents.strict_config.parse`): agent specs (eval opponents, the warm
start's teacher, the ladder's anchors) are checked by the agents registry, checkpoint
files they name included, and parsed there, once, into the typed agents the run builds
(`SelfPlayConfig.teacher` and `.anchors`, `TrainingEvalConfig.lineup`: attributes beside
the spec strings, never saved). The resolved config is saved in every run directory, and a
resumed run checks that it matches.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, Field, PlainSerializer, PlainValidator, model_validator

import agents
from agents.networks.features import EXPOSURES
from agents import shipped
from agents.networks import NetConfig
from engine.extras import install_hint
from engine.files import atomic_write_text
from agents.settings import SELFPLAY_SEARCH, SearchSettings
from agents.strict_config import StrictConfig, parse
from evaluation.config import Executor


def _search_settings(value) -> SearchSettings:
    """The config file's edge: a search's "key=value,..." parameters, parsed once."""
    if isinstance(value, SearchSettings):
        return value
    if not isinstance(value, str):
        raise ValueError(f"must be a string of ismcts parameters such as 'iterations=400,c=0.7', got {value!r}")
    if "net=" in value.replace(" ", ""):
        raise ValueError("must not name a network: each generation searches with its own")
    return SearchSettings.parse(value)


# a search's settings: "key=value,..." in the file, `SearchSettings` in the config
Search = Annotated[SearchSettings, PlainValidator(_search_settings), PlainSerializer(SearchSettings.spec)]
Rate = Annotated[float, Field(gt=0, lt=1)]
Share = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=1)]
Size = Annotated[int, Field(ge=0)]


class PPOConfig(StrictConfig):
    num_envs: Count = 64  # games stepped together by the vector env
    steps_per_iteration: Count = 64  # vector-env steps collected per update
    epochs: Count = 4  # passes over each batch
    minibatch_size: Count = 512
    learning_rate: Rate = 3e-4
    clip: float = 0.2  # PPO ratio clip
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    points_reward: Share = 0.3  # return = (1-w) final reward + w tanh(own minutes from here / 100); w=0: final only
    max_grad_norm: float = 0.5
    snapshot_every: Count = 10  # iterations between snapshots added to the opponent pool
    pool_size: Count = 5  # past snapshots kept as opponents
    # Who sits in the other seats, with weights (not all 0): "self" (every seat is the learner),
    # "past" (a pooled snapshot), "random", "greedy".
    opponents: dict[Literal["self", "past", "random", "greedy"], Annotated[float, Field(ge=0)]] = {
        "self": 0.5, "past": 0.2, "random": 0.15, "greedy": 0.15}


class SelfPlayConfig(StrictConfig):
    """Generational self-play, the expert-iteration trainer (algorithm: selfplay, see
    training/selfplay.py), and its learner (training/learner.py)."""

    warm_start_teacher: str = "ismcts:iterations=1000"  # generation 0 imitates this search's games
    # the teacher's games; 1,000 start higher and end no stronger (docs/experiments.md)
    warm_start_games: Count = 200
    warm_start_steps: Count = 600  # generation 0's policy/value minibatch steps (one learning-rate cycle)
    warm_start_learning_rate: Rate = 0.002  # the peak of generation 0's cycle
    warm_start_evaluator_steps: Size = 10000  # generation 0's fast-evaluator steps (annealed)
    # self-play games of the previous generation's search; 600 end as strong, with a bumpier ladder
    games_per_generation: Count = 1800
    # ismcts parameters of self-play (the network is the generation's), "key=value,..." in the file
    search: Search = SELFPLAY_SEARCH
    # ismcts parameters of a generation on the ladder: the same search at 0.01 s a move
    play: Search = dataclasses.replace(SELFPLAY_SEARCH, time=0.01)
    target_power: float = Field(3.0, gt=0)  # policy target = the root visits ** power, normalised
    # a league (PSRO; against self-overfitting): the share of self-play games in which one seat (team
    # variant: one team) is played by an earlier generation's search, drawn uniformly; its moves train
    # the values only (0 = no league games)
    league_fraction: Share = 0.0
    # show the network each training position turned by a random quarter turn of the board (the game's
    # four symmetries, engine/symmetry.py): four times the data for the policy and value, at no search cost
    symmetries: bool = False
    train_steps: Count = 300  # policy/value minibatch steps per generation (one learning-rate cycle)
    learning_rate: Rate = 5e-4  # the peak of a later generation's cycle
    evaluator_steps: Size = 8000  # fast-evaluator steps per generation (annealed)
    batch_size: Count = 256  # positions per policy/value minibatch
    weight_decay: float = Field(1e-4, ge=0)  # AdamW's, on the policy/value network
    margin_weight: Share = 0.2  # value target: (1 - w) x the game's result + w x the score margin
    # the fast evaluator (net.evaluator_hidden > 0; ignored without one) learns with its own Adam
    evaluator_batch_size: Count = 512
    evaluator_learning_rate: Rate = 1e-3  # the start of each generation's annealing
    window: Count = 2  # generations of games the policy and value train on (1 = only the newest)
    evaluator_window: Size = 0  # generations of games the fast evaluator trains on (0 = all of them)
    workers: Size = 0  # processes playing games (0 = one per CPU core; executor ray: per CPU of the cluster)
    executor: Executor = "process"  # where games are played: "process" (this machine) or "ray" (a Ray cluster)
    ray_address: str | None = None  # executor ray: a running cluster (HOST:PORT, auto); None starts Ray locally
    ladder_games: Size = 100  # ladder games per pair (0 = no ladder)
    ladder_previous: Size = 2  # earlier generations each new one plays on the ladder
    ladder_anchors: list[str] = ["greedy", "ismcts:time=0.01"]
    # games of a best response (br, 1000 iterations a move) against each generation's raw policy: its
    # approximate exploitability in exploitability.json (evaluation.exploit); 0 = not measured
    ladder_exploit_games: Size = 0

    @cached_property
    def teacher(self) -> agents.AgentRecipe:
        """`warm_start_teacher` typed (parsed when an algorithm: selfplay config loads; never saved)."""
        teacher = _spec(self.warm_start_teacher, "selfplay.warm_start_teacher")
        _check(teacher.name in ("ismcts", "pimc"), "selfplay.warm_start_teacher",
               "must be an ismcts or pimc agent spec such as 'ismcts:iterations=1000'")
        return teacher

    @cached_property
    def anchors(self) -> list:
        """`ladder_anchors` typed, likewise."""
        return [_spec(spec, f"selfplay.ladder_anchors[{i}]") for i, spec in enumerate(self.ladder_anchors)]


class TrainingEvalConfig(StrictConfig):
    """train.py's periodic evaluation (the eval: section; a tournament is `evaluation.EvalConfig`)."""

    every: Count = 10  # iterations between evaluations (and checkpoints)
    games: Size = 40  # games per opponent (duplicate pairs: each deal from both seats)
    opponents: list[str] = ["random", "greedy"]

    @cached_property
    def lineup(self) -> list:
        """One typed agent per spec of `opponents` (parsed when the config loads; never saved)."""
        return [_spec(spec, f"eval.opponents[{i}]") for i, spec in enumerate(self.opponents)]


class TrainConfig(StrictConfig):
    name: str = "run"  # the run directory is runs/<name>
    # "selfplay": generational expert iteration, the shipped recipe (the net: and selfplay: defaults are its)
    algorithm: Literal["ppo", "selfplay"] = "selfplay"
    seed: int = 0
    device: str = "auto"  # "auto" (CUDA when present), "cpu", "cuda"
    torch_threads: Count = 1  # torch intra-op threads (1 avoids fighting numba and the OS)
    num_players: Literal[2, 3, 4] = 2
    team: bool = False
    iterations: Count = 100  # updates to run
    net: NetConfig = Field(default_factory=NetConfig)
    ppo: PPOConfig = Field(default_factory=PPOConfig)
    selfplay: SelfPlayConfig = Field(default_factory=SelfPlayConfig)
    eval: TrainingEvalConfig = Field(default_factory=TrainingEvalConfig)

    @model_validator(mode="after")
    def _check_together(self) -> TrainConfig:
        """The checks across keys, then every agent the run will build typed now (an eval
        opponent's typo would otherwise surface after the first iterations)."""
        _check(RUN_NAME.fullmatch(self.name) is not None, "name",
               f"{self.name!r} must be a plain directory name (letters, digits, '.', '_', '-'; no '/', "
               "not starting with '.'): the run is written to runs/<name>")
        _check(not self.team or self.num_players == 4, "team", "the team variant needs num_players: 4")
        _check(self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:"), "device",
               "must be auto, cpu or cuda[:N]")
        _check(sum(self.ppo.opponents.values()) > 0, "ppo.opponents", "weights must not all be 0")
        _check(not (self.algorithm == "ppo" and self.net.exposure_skip), "net.exposure_skip",
               "needs algorithm: selfplay (PPO's vector env gives observations only): set it to 0 for ppo")
        _check(self.net.exposure in EXPOSURES, "net.exposure", f"must be one of {', '.join(EXPOSURES)}")
        sp = self.selfplay
        _check(sp.ray_address is None or sp.executor == "ray", "selfplay.ray_address",
               f"({sp.ray_address!r}) is for selfplay.executor: ray, got executor: {sp.executor}")
        _check(sp.ray_address is None or sp.ray_address.strip() != "", "selfplay.ray_address",
               "must not be empty (e.g. 'auto' or 'HOST:6379')")
        _check(sp.executor != "ray" or importlib.util.find_spec("ray") is not None, "selfplay.executor",
               f"ray is not installed; {install_hint('ray')}")
        if self.algorithm == "selfplay":
            _ = sp.teacher, sp.anchors  # typed now: a bad spec fails at load
        _ = self.eval.lineup
        return self


# The AlphaZero trainer (PUCT self-play, algorithm: alphazero) was retired; its learner
# became the selfplay trainer's, with these keys renamed in the move to `selfplay:`.
RENAMED_ALPHAZERO_KEYS = {"pretrain_steps": "warm_start_steps", "pretrain_learning_rate": "warm_start_learning_rate",
                          "pretrain_evaluator_steps": "warm_start_evaluator_steps"}
MOVED_ALPHAZERO_KEYS = ("batch_size", "learning_rate", "weight_decay", "margin_weight", "evaluator_batch_size",
                        "evaluator_learning_rate")

# Config keys (and values) the measurements rejected, and why, in a few words (evidence:
# docs/status.md): a config that sets one is a one-line error.
RETIRED_KEYS = {
    "selfplay.policy_target": "completed-Q policy targets (with the Gumbel root) left the ladder flat (last minus "
                              "middle -2 Elo against +38 for visit counts); the root visits are the target: drop it",
    "selfplay.full_search_fraction": "playout cap randomization went with the Gumbel root and completed-Q targets "
                                     "(no better ladder); every self-play move is a full search: drop it",
    "selfplay.cheap_search": "playout cap randomization went with the Gumbel root and completed-Q targets (no better "
                             "ladder); every self-play move is a full search: drop it",
}
RETIRED_VALUES = {
    ("net.exposure", "expected"): "the expected exposure (raw policy 0.617 against greedy) lost to outlook (0.745), "
                                  "which builds on it: use exposure: outlook",
}

# A run directory's name: one plain path component, so runs/<name> stays inside runs/.
RUN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def _spec(spec: str, key: str) -> agents.AgentRecipe:
    try:
        return agents.check_spec(spec)
    except ValueError as exc:
        raise ValueError(f"config key {key!r}: {exc}") from exc


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ValueError(f"config key {key!r}: {message}")


def config_from_dict(data: dict, source: str | None = None) -> TrainConfig:
    """The config in a mapping (a YAML file's), checked; `source` names the file in errors."""
    try:
        if isinstance(data, dict):
            _refuse_the_retired_trainer(data)
            _refuse_retired_keys(data)
    except ValueError as exc:
        raise ValueError((f"{source}: " if source else "") + str(exc)) from None
    cfg = parse(TrainConfig, data or {}, source)
    if isinstance(data, dict) and "ppo" in data and "algorithm" not in data:  # a PPO config from before
        raise ValueError((f"{source}: " if source else "") + "config key 'ppo': is PPO's section: say "
                         "algorithm: ppo (the default is the self-play recipe)")
    return cfg


def _refuse_retired_keys(data: dict) -> None:
    """A config that sets a retired key or value (`RETIRED_KEYS`, `RETIRED_VALUES`) is one
    clear error that says why."""
    for dotted, reason in RETIRED_KEYS.items():
        section, _, key = dotted.partition(".")
        if isinstance(data.get(section), dict) and key in data[section]:
            raise ValueError(f"config key {dotted!r} was retired: {reason}")
    for (dotted, value), reason in RETIRED_VALUES.items():
        section, _, key = dotted.partition(".")
        if isinstance(data.get(section), dict) and data[section].get(key) == value:
            raise ValueError(f"config key {dotted!r}: {value!r} was retired: {reason}")


def _refuse_the_retired_trainer(data: dict) -> None:
    """A config for the retired AlphaZero trainer (algorithm: alphazero, or an alphazero:
    section) is one clear error that says what replaces it."""
    if data.get("algorithm") != "alphazero" and "alphazero" not in data:
        return
    renamed = ", ".join(f"alphazero.{old} -> selfplay.{new}" for old, new in RENAMED_ALPHAZERO_KEYS.items())
    raise ValueError("the AlphaZero trainer (algorithm: alphazero and its alphazero: section) was retired; use "
                     f"algorithm: selfplay (training/selfplay.py) with its learner's keys in the selfplay: section: "
                     f"{renamed}; {', '.join(MOVED_ALPHAZERO_KEYS)} keep their names (e.g. alphazero.batch_size -> "
                     "selfplay.batch_size); its teacher and warm-start games are selfplay.warm_start_teacher and "
                     "warm_start_games, and its PUCT self-play keys have no counterpart")


def load_config(path: str | Path, overrides: list[str] = ()) -> TrainConfig:
    """Load a YAML config; `overrides` are "a.b=value" strings (YAML-parsed values)."""
    path = shipped.config_file(path)  # a path, or a shipped config by name ("quickstart")
    data = read_config_file(path)
    for item in overrides:
        apply_override(data, item)
    return config_from_dict(data, f"{path}{' with --set' if overrides else ''}")


def read_config_file(path: str | Path) -> dict:
    """The mapping in a YAML config file (an empty file is an empty mapping)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"config file {path} must hold a mapping of config keys, got {type(data).__name__}")
    return data


def apply_override(data: dict, item: str) -> None:
    """Set one "a.b=value" override (value parsed as YAML) in a config mapping."""
    key, eq, text = item.partition("=")
    parts = [p.strip() for p in key.split(".")]
    if not eq or not all(parts):
        raise ValueError(f"override {item!r} must look like key.sub=value")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"override {item!r}: the value is not valid YAML: {exc}") from exc
    node = data
    for depth, part in enumerate(parts[:-1]):
        if node.get(part) is None:  # absent, or an empty section (`ppo:` with nothing under it)
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            section = ".".join(parts[:depth + 1])
            raise ValueError(f"override {item!r}: config key {section!r} is {node!r}, not a section with sub-keys")
    node[parts[-1]] = value


def missing_keys(data: dict) -> tuple[list[str], list[str]]:
    """(top-level, nested) keys of TrainConfig that a config mapping leaves out. A saved
    run config holds every key; one without some was cut short or written by an older
    version."""
    top, nested = [], []
    for name, field in TrainConfig.model_fields.items():
        section = field.annotation
        if name not in data:
            top.append(name)
        elif isinstance(data[name], dict) and issubclass(section, BaseModel):
            nested += [f"{name}.{key}" for key in section.model_fields if key not in data[name]]
    return top, nested


def config_to_dict(cfg: TrainConfig) -> dict:
    """The config as plain data, search settings as their "key=value,..." text (the file's edge)."""
    return cfg.model_dump()


def keys_read(cfg: TrainConfig) -> dict:
    """`config_to_dict` less the other algorithm's section, which the run never reads (a PPO
    run's selfplay: keys; a resume compares these)."""
    data = config_to_dict(cfg)
    del data["ppo" if cfg.algorithm == "selfplay" else "selfplay"]
    return data


def save_config(path: str | Path, cfg: TrainConfig) -> None:
    """Write the resolved config, all or nothing (`engine.files.atomic_write_text`)."""
    atomic_write_text(path, yaml.safe_dump(config_to_dict(cfg), sort_keys=False))
