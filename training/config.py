"""Training configuration: typed dataclasses loaded from YAML, strictly.

Every field has a default and a one-line meaning. Unknown keys, wrong types and bad
values are clear errors that name the offending key, found when the config is loaded,
before any training: agent specs (eval opponents, the warm start's teacher) are checked
by the agents registry, checkpoint files they name included, and parsed there, once, into
the typed agents the run builds (`SelfPlayConfig.teacher` and `.anchors`, `EvalConfig.lineup`). The
resolved config is saved in every run directory, and a resumed run checks that it matches.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import agents
from agents.features import EXPOSURES
from agents.nets import NetConfig, atomic_write
from agents.settings import SearchSettings


@dataclass
class PPOConfig:
    num_envs: int = 64  # games stepped together by the vector env
    steps_per_iteration: int = 64  # vector-env steps collected per update
    epochs: int = 4  # passes over each batch
    minibatch_size: int = 512
    learning_rate: float = 3e-4
    clip: float = 0.2  # PPO ratio clip
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    points_reward: float = 0.3  # return = (1-w) final reward + w tanh(own minutes from here / 100); w=0: final only
    max_grad_norm: float = 0.5
    snapshot_every: int = 10  # iterations between snapshots added to the opponent pool
    pool_size: int = 5  # past snapshots kept as opponents
    # Who sits in the other seats, with weights: "self" (every seat is the learner),
    # "past" (a pooled snapshot), "random", "greedy".
    opponents: dict = field(default_factory=lambda: {"self": 0.5, "past": 0.2, "random": 0.15, "greedy": 0.15})


@dataclass
class SelfPlayConfig:
    """Generational self-play, the expert-iteration trainer (algorithm: selfplay, see
    training/selfplay.py), and its learner (training/learner.py)."""

    warm_start_teacher: str = "ismcts:iterations=1000"  # generation 0 imitates this search's games
    warm_start_games: int = 2000
    warm_start_steps: int = 500  # generation 0's policy/value minibatch steps (one learning-rate cycle)
    warm_start_learning_rate: float = 0.002  # the peak of generation 0's cycle
    warm_start_evaluator_steps: int = 5000  # generation 0's fast-evaluator steps (annealed)
    games_per_generation: int = 1000  # self-play games of the previous generation's search
    # ismcts parameters of self-play (the network is the generation's), "key=value,..." in the file
    search: SearchSettings = field(default_factory=lambda: SearchSettings(iterations=1000, prior=3.0))
    # ismcts parameters of a generation on the ladder
    play: SearchSettings = field(default_factory=lambda: SearchSettings(time=0.01, prior=3.0))
    target_power: float = 3.0  # policy target = the root visits ** power, normalised
    # a league (PSRO; against self-overfitting): the share of self-play games in which one seat (team
    # variant: one team) is played by an earlier generation's search, drawn uniformly; its moves train
    # the values only
    league_fraction: float = 0.0
    # show the network each training position turned by a random quarter turn of the board (the game's
    # four symmetries, engine/symmetry.py): four times the data for the policy and value, at no search cost
    symmetries: bool = False
    train_steps: int = 1000  # policy/value minibatch steps per generation (one learning-rate cycle)
    learning_rate: float = 1e-3  # the peak of a later generation's cycle
    evaluator_steps: int = 3000  # fast-evaluator steps per generation (annealed)
    batch_size: int = 256  # positions per policy/value minibatch
    weight_decay: float = 1e-4  # AdamW's, on the policy/value network
    margin_weight: float = 0.0  # blend of the score margin into the value target
    # the fast evaluator (net.evaluator_hidden > 0; ignored without one) learns with its own Adam
    evaluator_batch_size: int = 512
    evaluator_learning_rate: float = 1e-3  # the start of each generation's annealing
    window: int = 1  # generations of games the policy and value train on (1 = only the newest)
    evaluator_window: int = 0  # generations of games the fast evaluator trains on (0 = all of them)
    workers: int = 0  # processes playing games (0 = one per CPU core; executor ray: per CPU of the cluster)
    executor: str = "process"  # where games are played: "process" (this machine) or "ray" (a Ray cluster)
    ray_address: str | None = None  # executor ray: a running cluster (HOST:PORT, auto); None starts Ray locally
    ladder_games: int = 200  # ladder games per pair (0 = no ladder)
    ladder_previous: int = 2  # earlier generations each new one plays on the ladder
    ladder_anchors: list = field(default_factory=lambda: ["greedy", "ismcts:time=0.01"])
    # games of a best response (br, 1000 iterations a move) against each generation's raw policy: its
    # approximate exploitability in exploitability.json (evaluation.exploit); 0 = not measured
    ladder_exploit_games: int = 0
    teacher = None  # not a field (never saved or read): `warm_start_teacher` typed by `validate` (`AgentRecipe`)
    anchors = ()  # not a field either: `ladder_anchors` typed by `validate`


@dataclass
class EvalConfig:
    every: int = 10  # iterations between evaluations (and checkpoints)
    games: int = 40  # games per opponent (duplicate pairs: each deal from both seats)
    opponents: list = field(default_factory=lambda: ["random", "greedy"])
    lineup = None  # not a field (never saved or read): one typed agent per spec of `opponents`, set by `validate`


@dataclass
class TrainConfig:
    name: str = "run"  # the run directory is runs/<name>
    algorithm: str = "ppo"  # "ppo" or "selfplay" (generational expert iteration)
    seed: int = 0
    device: str = "auto"  # "auto" (CUDA when present), "cpu", "cuda"
    torch_threads: int = 1  # torch intra-op threads (1 avoids fighting numba and the OS)
    num_players: int = 2
    team: bool = False
    iterations: int = 100  # updates to run
    net: NetConfig = field(default_factory=NetConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def validate(self) -> None:
        _check(RUN_NAME.fullmatch(self.name) is not None, "name",
               f"{self.name!r} must be a plain directory name (letters, digits, '.', '_', '-'; no '/', "
               "not starting with '.'): the run is written to runs/<name>")
        _check(self.algorithm in ALGORITHMS, "algorithm", f"must be one of {', '.join(ALGORITHMS)}")
        _check(self.num_players in (2, 3, 4), "num_players", "must be 2, 3 or 4")
        _check(not self.team or self.num_players == 4, "team", "the team variant needs num_players: 4")
        _check(self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:"), "device",
               "must be auto, cpu or cuda[:N]")
        _check(self.iterations >= 1, "iterations", "must be >= 1")
        _check(self.torch_threads >= 1, "torch_threads", "must be >= 1")
        for key in ("num_envs", "steps_per_iteration", "epochs", "minibatch_size", "snapshot_every", "pool_size"):
            _check(getattr(self.ppo, key) >= 1, f"ppo.{key}", "must be >= 1")
        _check(0 < self.ppo.learning_rate < 1, "ppo.learning_rate", "must be in (0, 1)")
        _check(0 <= self.ppo.points_reward <= 1, "ppo.points_reward", "must be in [0, 1]")
        unknown = set(self.ppo.opponents) - {"self", "past", "random", "greedy"}
        _check(not unknown, "ppo.opponents", f"unknown kinds {sorted(unknown)}; use self, past, random, greedy")
        weights = list(self.ppo.opponents.values())
        _check(all(isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 for w in weights)
               and sum(weights) > 0, "ppo.opponents", "weights must be numbers >= 0 and not all 0")
        _check(not (self.algorithm == "ppo" and self.net.exposure_skip), "net.exposure_skip",
               "needs algorithm: selfplay (PPO's vector env gives observations only)")
        _check(self.net.exposure in EXPOSURES, "net.exposure", f"must be one of {', '.join(EXPOSURES)}")
        _check(self.net.evaluator_hidden >= 0, "net.evaluator_hidden", "must be >= 0 (0 = no fast evaluator)")
        _check(self.eval.every >= 1 and self.eval.games >= 0, "eval", "every must be >= 1 and games >= 0")
        self._check_selfplay()
        _check(self.net.channels >= 1 and self.net.blocks >= 0, "net", "channels >= 1 and blocks >= 0")
        self._check_agent_specs()

    def _check_selfplay(self) -> None:
        sp = self.selfplay
        for key in ("warm_start_games", "warm_start_steps", "games_per_generation", "train_steps", "window",
                    "batch_size", "evaluator_batch_size"):
            _check(getattr(sp, key) >= 1, f"selfplay.{key}", "must be >= 1")
        for key in ("warm_start_evaluator_steps", "evaluator_steps", "evaluator_window", "workers", "ladder_games",
                    "ladder_previous", "ladder_exploit_games", "weight_decay"):
            _check(getattr(sp, key) >= 0, f"selfplay.{key}", "must be >= 0")
        for key in ("warm_start_learning_rate", "learning_rate", "evaluator_learning_rate"):
            _check(0 < getattr(sp, key) < 1, f"selfplay.{key}", "must be in (0, 1)")
        _check(0 <= sp.margin_weight <= 1, "selfplay.margin_weight", "must be in [0, 1]")
        _check(sp.target_power > 0, "selfplay.target_power", "must be > 0")
        _check(0 <= sp.league_fraction <= 1, "selfplay.league_fraction",
               f"must be in [0, 1] (0 = no league games), got {sp.league_fraction!r}")
        self._check_executor()
        if self.algorithm != "selfplay":
            return
        sp.teacher = _check_spec(sp.warm_start_teacher, "selfplay.warm_start_teacher")
        _check(sp.teacher.name in ("ismcts", "pimc"), "selfplay.warm_start_teacher",
               "must be an ismcts or pimc agent spec such as 'ismcts:iterations=1000'")
        _check(isinstance(sp.ladder_anchors, list), "selfplay.ladder_anchors", "must be a list of agent specs")
        sp.anchors = [_check_spec(spec, f"selfplay.ladder_anchors[{i}]") for i, spec in enumerate(sp.ladder_anchors)]

    def _check_executor(self) -> None:
        from evaluation.config import EXECUTORS

        sp = self.selfplay
        _check(sp.executor in EXECUTORS, "selfplay.executor", f"must be one of {', '.join(EXECUTORS)}, "
               f"got {sp.executor!r}")
        _check(sp.ray_address is None or sp.executor == "ray", "selfplay.ray_address",
               f"({sp.ray_address!r}) is for selfplay.executor: ray, got executor: {sp.executor}")
        _check(sp.ray_address is None or sp.ray_address.strip() != "", "selfplay.ray_address",
               "must not be empty (e.g. 'auto' or 'HOST:6379')")
        _check(sp.executor != "ray" or importlib.util.find_spec("ray") is not None, "selfplay.executor",
               "ray needs Ray installed: pip install -e '.[ray]'")

    def _check_agent_specs(self) -> None:
        """Every agent the run will build, checked now rather than when it is first used
        (an eval opponent's typo would otherwise surface after the first iterations)."""
        self.eval.lineup = [_check_spec(spec, f"eval.opponents[{i}]") for i, spec in enumerate(self.eval.opponents)]


ALGORITHMS = ("ppo", "selfplay")

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


def _check_spec(spec, key: str) -> agents.AgentRecipe:
    _check(isinstance(spec, str) and spec.strip() != "", key, f"must be an agent spec string, got {spec!r}")
    try:
        return agents.check_spec(spec)
    except ValueError as exc:
        raise ValueError(f"config key {key!r}: {exc}") from exc


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ValueError(f"config key {key!r}: {message}")


def _build(cls, data: dict, prefix: str):
    """Instantiate dataclass `cls` from a mapping, rejecting unknown keys and bad types."""
    if not isinstance(data, dict):
        section = prefix.rstrip(".") or "top level"
        raise ValueError(f"config section {section!r} must be a mapping, got {type(data).__name__}: {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ValueError(f"unknown config key(s) {sorted(prefix + k for k in unknown)}; "
                         f"valid keys here: {sorted(fields)}")
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        key = prefix + name
        if hint is SearchSettings:
            kwargs[name] = _search_settings(value, key)
        elif dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value or {}, key + ".")
        else:
            kwargs[name] = _coerce(value, hint, key)
    return cls(**kwargs)


def _search_settings(value, key: str) -> SearchSettings:
    """The config file's edge: a search's "key=value,..." parameters, parsed once."""
    if isinstance(value, SearchSettings):
        return value
    _check(isinstance(value, str), key, f"must be a string of ismcts parameters such as 'iterations=1000,prior=3', "
                                        f"got {value!r}")
    _check("net=" not in value.replace(" ", ""), key, "must not name a network: each generation searches with its own")
    try:
        return SearchSettings.parse(value)
    except ValueError as exc:
        raise ValueError(f"config key {key!r}: {exc}") from exc


def _coerce(value, hint, key):
    origin = typing.get_origin(hint) or hint
    if isinstance(hint, types.UnionType):
        if value is None and type(None) in typing.get_args(hint):
            return None
        origin = typing.get_args(hint)[0]
    if origin is bool:
        if not isinstance(value, bool):
            raise ValueError(f"config key {key!r}: expected true/false, got {value!r}")
        return value
    if origin is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"config key {key!r}: expected an integer, got {value!r}")
        return value
    if origin is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"config key {key!r}: expected a number, got {value!r}")
        return float(value)
    if origin is str:
        if not isinstance(value, str):
            raise ValueError(f"config key {key!r}: expected a string, got {value!r}")
        return value
    if origin in (dict, list):
        if not isinstance(value, origin):
            raise ValueError(f"config key {key!r}: expected a {origin.__name__}, got {value!r}")
        return value
    return value


def config_from_dict(data: dict) -> TrainConfig:
    _refuse_the_retired_trainer(data or {})
    _refuse_retired_keys(data or {})
    cfg = _build(TrainConfig, data or {}, "")
    cfg.validate()
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
    if not isinstance(data, dict) or (data.get("algorithm") != "alphazero" and "alphazero" not in data):
        return
    renamed = ", ".join(f"alphazero.{old} -> selfplay.{new}" for old, new in RENAMED_ALPHAZERO_KEYS.items())
    raise ValueError("the AlphaZero trainer (algorithm: alphazero and its alphazero: section) was retired; use "
                     f"algorithm: selfplay (training/selfplay.py) with its learner's keys in the selfplay: section: "
                     f"{renamed}; {', '.join(MOVED_ALPHAZERO_KEYS)} keep their names (e.g. alphazero.batch_size -> "
                     "selfplay.batch_size); its teacher and warm-start games are selfplay.warm_start_teacher and "
                     "warm_start_games, and its PUCT self-play keys have no counterpart")


def load_config(path: str | Path, overrides: list[str] = ()) -> TrainConfig:
    """Load a YAML config; `overrides` are "a.b=value" strings (YAML-parsed values)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config file not found: {path}")
    data = read_config_file(path)
    for item in overrides:
        apply_override(data, item)
    return config_from_dict(data)


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
    hints = typing.get_type_hints(TrainConfig)
    top, nested = [], []
    for f in dataclasses.fields(TrainConfig):
        if f.name not in data:
            top.append(f.name)
        elif dataclasses.is_dataclass(hints[f.name]) and isinstance(data[f.name], dict):
            nested += [f"{f.name}.{g.name}" for g in dataclasses.fields(hints[f.name]) if g.name not in data[f.name]]
    return top, nested


def config_to_dict(cfg: TrainConfig) -> dict:
    """The config as plain data, search settings as their "key=value,..." text (the file's edge)."""
    def plain(obj):
        if isinstance(obj, SearchSettings):
            return obj.spec()
        if dataclasses.is_dataclass(obj):
            return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return obj

    return plain(cfg)


def save_config(path: str | Path, cfg: TrainConfig) -> None:
    """Write the resolved config, all or nothing (`agents.nets.atomic_write`)."""
    text = yaml.safe_dump(config_to_dict(cfg), sort_keys=False)
    atomic_write(path, lambda f: f.write(text.encode()))
