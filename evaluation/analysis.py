"""The cost of each decision: `python evaluate.py analyze RUN_DIR` (or one game record).

For every decision of the chosen seats, the candidate moves are scored by a reference
and the move played is charged what it lost against the best candidate.

**The reference** (`Reference`) is a full-width, two-ply sampled search with common
random numbers:

1. From the deciding seat's information (its `PlayerView`: the board, its own hand,
   everything public) it samples `worlds` full worlds (`engine.determinize`, through
   `PlayerView.sample_world`): the other hands, the bag order and the removed tiles.
2. Every candidate move is played in *every* world; then the rollout agent (`rollout`,
   default `greedy`, seeded by the world) plays every seat for `horizon` placements (by
   default 2: the next seat's reply and one more), and the position is valued by the
   fast evaluator of the shipped self-play network (`agents.networks.evaluator`: a learned
   value of the full state, for every seat). A game that ends sooner is valued exactly.
   All candidates face the same worlds and seeds (common random numbers), so their
   differences are not drowned by the luck of the deal.
3. Units: a candidate's value is the mean over the worlds of the deciding seat's *search
   reward*: the game's reward (2 players: +1 win, 0 draw, -1 loss; 3-4 players the mean
   of +1/0/-1 against each other seat; teams the team's) plus 0.5 * tanh(final minute
   margin / 100), what the project's searches score an ended game with and what the
   evaluator learns. Beside it, the *minutes*: the seat's minute margin (its minutes
   minus the mean of the others'; teams: team minus team) after the horizon.
4. Candidates: every legal placement when there are at most `candidates` + 1 of them;
   otherwise all are pre-ranked on the first `prerank_worlds` worlds and the top
   `candidates`, plus the move played, go on to all the worlds (the pre-ranking's
   rollouts count towards their values).

Why not rollouts to the end (`horizon=None`, which needs no network): a greedy rollout
after one move and after another diverge within a few placements, so the common worlds
barely correlate them; the standard deviation of the difference of two candidates in
one world is about 1.8 for rollouts to the end and about 0.3 with the default horizon
(2 players, three positions of one game), 36 times less variance for a tenth of the
cost. The price is that the reference judges with the self-play network's evaluator,
the one `selfplay` and `selfplay-afterstate` use: for them the loss measures
disagreement with a wider, deeper and better-sampled use of their own evaluator.

**A decision's loss** is the best candidate's value minus the move played's (>= 0; 2
players: 0.1 is about 5 points of winning chance), and beside it the minutes lost, the
same difference of minute margins (which can be negative: a move can win minutes and
lose the game). Decisions with a single legal placement, passes and team show actions
are not scored.

**A seat's error in a game** (the error rate) is the *sum* of its decisions' losses in
that game, GNU Backgammon's "total error": the value the seat gave away over the game,
as judged by the reference. The report gives its mean over games (with a normal 95%
interval over games), the mean loss per decision and the minutes lost per game.

**The floor**: the same reference at half its worlds (drawn independently, over the
same candidates) chooses a move at every analysed decision, and the full reference
charges it. A player as good as the reference would be charged about that much: an error
per game near the floor cannot be told from the reference's own play.

Games are read through public APIs only: `engine.GameState`, `PlayerView.sample_world`,
agents built from a typed recipe (`agents.parse_agent`) and the fast evaluator of a
network checkpoint (`agents.networks.load_net`, `agents.networks.evaluator.evaluate`).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

import agents
from agents.base import typed_agent
from agents.networks import load_net
from agents.search.core import simulation_rewards
from agents.search.selfplay import shipped_network
from agents.settings import MARGIN
from agents.networks.evaluator import evaluate
from engine.extras import optional
from engine.files import atomic_write, atomic_write_text
from engine import GameState, rules
from engine.view import PlayerView

from .replay import check_record


UNITS = ("value: the deciding seat's expected search reward (the game's reward, 2 players +1 win / 0 draw / "
         "-1 loss, plus 0.5 * tanh(final minute margin / 100)); minutes: its minute margin after the horizon")
ERROR_RULE = "error per game = the sum of the value lost by the seat's scored decisions in one game"
# called with (decisions done, decisions in all) after each decision
Progress = Callable[[int, int], None]


# --- the reference ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """The reference's budget (module doc): `worlds` sampled worlds per decision; the
    top `candidates` moves of a pre-ranking on `prerank_worlds` of them (plus the move
    played) go on to all the worlds; after a candidate, `rollout` plays every seat for
    `horizon` placements (None: to the end) and the fast evaluator of the network
    `evaluator` (None: the shipped self-play network for the game) values the position;
    `seed` fixes the worlds of every decision."""

    worlds: int = 64
    candidates: int = 8
    prerank_worlds: int = 8
    horizon: int | None = 2
    rollout: agents.AgentRecipe = field(default_factory=lambda: agents.parse_agent("greedy"))
    evaluator: str | None = None
    seed: int = 0

    def validate(self) -> "Reference":
        """Check every field; raise ValueError with a one-line reason."""
        for name, low in (("worlds", 2), ("candidates", 1), ("prerank_worlds", 1), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.prerank_worlds > self.worlds:
            raise ValueError(f"prerank_worlds ({self.prerank_worlds}) cannot exceed worlds ({self.worlds})")
        if self.horizon is not None and (isinstance(self.horizon, bool) or not isinstance(self.horizon, int)
                                         or self.horizon < 0):
            raise ValueError(f"horizon must be an integer >= 0 or None (to the end), got {self.horizon!r}")
        typed_agent(self.rollout, "the rollout agent")
        if self.evaluator is not None:
            _load_evaluator(self.evaluator)
        return self

    def half(self) -> "Reference":
        """The same reference at half its worlds (the floor's)."""
        return replace(self, worlds=max(self.worlds // 2, 1), prerank_worlds=max(self.prerank_worlds // 2, 1))

    def describe(self) -> str:
        after = ("rollouts to the end" if self.horizon is None else
                 f"{self.horizon} placement(s) by the rollout agent, then the fast evaluator of "
                 f"{self.evaluator or 'the shipped self-play network'}")
        return (f"{self.worlds} sampled worlds per decision, common to every candidate; after each candidate, "
                f"{after} (rollout agent {self.rollout}); the top {self.candidates} candidates of a pre-ranking "
                f"on {self.prerank_worlds} worlds, plus the move played; seed {self.seed}")

    def to_dict(self) -> dict:
        return {"worlds": self.worlds, "candidates": self.candidates, "prerank_worlds": self.prerank_worlds,
                "horizon": self.horizon, "rollout": str(self.rollout), "evaluator": self.evaluator,
                "seed": self.seed, "design": self.describe()}

    def tools(self, num_players: int, team: bool) -> "Tools":
        """What one game's analysis builds once: a rollout agent per seat and the evaluator."""
        players = [self.rollout.build(seed=0) for _ in range(num_players)]
        for seat, player in enumerate(players):
            player.reset(seat, num_players, team)
        evaluator = None
        if self.horizon is not None:
            evaluator = _load_evaluator(self.evaluator or self.shipped_evaluator(num_players, team))
        return Tools(players, evaluator, self.horizon)

    @staticmethod
    def shipped_evaluator(num_players: int, team: bool) -> str:
        """The shipped self-play network for the game, whose evaluator is the default."""
        try:
            return str(shipped_network(num_players, team))
        except ValueError:
            variant = "the team variant" if team else f"{num_players} players"
            raise ValueError(f"no self-play network is shipped for {variant}: give a network with an evaluator "
                             "(--evaluator PATH), or --horizon end (rollouts to the end, no network)") from None


@dataclass(frozen=True)
class Tools:
    players: list  # a rollout agent per seat
    evaluator: np.ndarray | None  # the packed fast evaluator (agents.networks.evaluator)
    horizon: int | None


@functools.lru_cache(maxsize=8)
def _load_evaluator(path: str) -> np.ndarray:
    """The packed fast evaluator of the network at `path` (ValueError if it has none)."""
    evaluator = load_net(path, "cpu").evaluator
    if evaluator is None:
        raise ValueError(f"{path} has no fast evaluator (NetConfig.evaluator_hidden is 0)")
    return evaluator.packed()


# --- the record of one decision --------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    """One candidate move and its reference values (means over `worlds` worlds)."""

    action: int
    value: float  # search reward (module doc)
    minutes: float  # minute margin
    worlds: int

    @property
    def move(self) -> str:
        return rules.action_text(self.action)


@dataclass(frozen=True)
class Decision:
    """One scored decision: who played what at which step, the reference's best move and
    what the move played lost against it (module doc)."""

    game: int | None  # the record's game id
    step: int  # actions played before this decision (its move number is step + 1)
    seat: int
    player: str  # the seat's label in the record
    played: int
    best: int
    loss: float  # value units (module doc), >= 0
    minutes_lost: float  # minute margin, best minus played
    legal: int  # legal placements
    candidates: tuple[Candidate, ...]  # best first
    floor_loss: float | None = None  # what the half-budget reference's choice lost here
    floor_minutes: float | None = None

    @property
    def move_number(self) -> int:
        return self.step + 1

    def candidate(self, action: int) -> Candidate:
        return next(c for c in self.candidates if c.action == action)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["move"] = rules.action_text(self.played)
        out["best_move"] = rules.action_text(self.best)
        out["candidates"] = [dict(asdict(c), move=c.move) for c in self.candidates]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Decision":
        fields = {k: v for k, v in data.items() if k not in ("move", "best_move")}
        fields["candidates"] = tuple(Candidate(**{k: v for k, v in c.items() if k != "move"})
                                     for c in data["candidates"])
        return cls(**fields)


# --- values by short rollouts in common worlds ---------------------------------------------------
def minute_margin(state: GameState, seat: int) -> float:
    """`seat`'s minute lead (`GameState.leads`): its minutes minus the mean of the other
    seats' (teams: its team's minutes minus the other team's)."""
    return float(state.leads()[seat])


def play_on(game: GameState, players: Sequence, seed: int, placements: int | None) -> GameState:
    """Play `game` on with `players[seat]` in every seat (each seeded from `seed`, so a
    world's rollouts share their random streams) for `placements` placements (None: to
    the end); returns `game`."""
    encode = None
    if any(getattr(p, "needs_observation", False) for p in players):
        from env.observation import encode
    for seat, player in enumerate(players):
        player.seed(seed * 8 + seat)
    views = [PlayerView(game, seat) for seat in range(game.num_players)]
    placed = 0
    while not game.is_over and (placements is None or placed < placements):
        seat = game.current_player
        player = players[seat]
        obs = encode(game, seat) if encode is not None and getattr(player, "needs_observation", False) else None
        action = int(player.act(obs, views[seat]))
        if action < rules.SHOW_BASE:
            for other, watcher in enumerate(players):
                if getattr(watcher, "observes_actions", False):
                    watcher.observe_action(views[other], seat, action)
        game.step(action)
        placed += action < rules.PASS_ACTION
    return game


def position_value(game: GameState, seat: int, evaluator: np.ndarray | None) -> float:
    """`seat`'s value of `game`: an ended game's search reward (its reward plus the margin
    term, `agents.search.core.simulation_rewards` with the default MARGIN), else the
    fast evaluator's value of the full state (which estimates that same quantity)."""
    if game.is_over:
        out = np.zeros(4)
        simulation_rewards(game.arrays[1], out, MARGIN)
        return float(out[seat])
    if evaluator is None:
        raise ValueError("a cut rollout needs an evaluator")
    return float(evaluate(*game.arrays, evaluator)[seat])


def rollout_values(world: GameState, seat: int, action: int, tools: Tools, seed: int) -> tuple[float, float]:
    """(value, minute margin) of `seat` after playing `action` in `world` (a copy) and
    `tools.horizon` more placements (None: to the end)."""
    game = world.clone()
    game.step(action)
    play_on(game, tools.players, seed, tools.horizon)
    return position_value(game, seat, tools.evaluator), minute_margin(game, seat)


@dataclass
class _Table:
    """Rollout results: per action, per world index, (reward, margin)."""

    results: dict = field(default_factory=dict)

    def fill(self, actions: Iterable[int], worlds: Sequence[GameState], seeds: Sequence[int], seat: int,
             tools: Tools, indices: Iterable[int]) -> None:
        indices = list(indices)
        for action in actions:
            row = self.results.setdefault(action, {})
            for i in indices:
                if i not in row:
                    row[i] = rollout_values(worlds[i], seat, action, tools, int(seeds[i]))

    def mean(self, action: int) -> tuple[float, float, int]:
        row = np.array(list(self.results[action].values()), dtype=float)
        return float(row[:, 0].mean()), float(row[:, 1].mean()), len(row)


def _ranked(table: _Table, actions: Iterable[int]) -> list[Candidate]:
    """Candidates, best first: highest mean reward, then highest minute margin, then the
    lowest action id (a fixed order)."""
    out = [Candidate(a, *table.mean(a)) for a in actions]
    return sorted(out, key=lambda c: (-c.value, -c.minutes, c.action))


def _worlds(view: PlayerView, count: int, key: Sequence[int]) -> tuple[list[GameState], np.ndarray]:
    """`count` worlds consistent with `view`, and a rollout seed per world, both fixed
    by `key`."""
    rng = np.random.default_rng(list(key))
    worlds = [view.sample_world(rng) for _ in range(count)]
    return worlds, rng.integers(0, 2**31, size=count)


def rank_candidates(view: PlayerView, reference: Reference, tools: Tools, key: Sequence[int] = (0,),
                    keep: Iterable[int] = ()) -> list[Candidate]:
    """The reference's candidates for `view`'s seat (the seat to move), best first, with
    their values (module doc): the top `candidates` of the pre-ranking, plus `keep` (the
    move played). `key` fixes the worlds. Reads only what the seat sees."""
    legal = view.legal_actions()
    worlds, seeds = _worlds(view, reference.worlds, key)
    table = _Table()
    if len(legal) <= reference.candidates + 1:
        finalists = list(legal)
    else:
        table.fill(legal, worlds, seeds, view.seat, tools, range(reference.prerank_worlds))
        finalists = [c.action for c in _ranked(table, legal)[:reference.candidates]]
        finalists += [a for a in keep if a not in finalists]
    table.fill(finalists, worlds, seeds, view.seat, tools, range(reference.worlds))
    table.results = {a: table.results[a] for a in finalists}
    return _ranked(table, finalists)


def analyze_decision(state: GameState, played: int, reference: Reference, *, game: int | None = None,
                     step: int = 0, label: str = "", tools: Tools | None = None,
                     floor: bool = True) -> Decision:
    """Score the decision of the seat to move in `state` (left unchanged), which played
    `played`: the reference's values of the candidates, its best move and the loss of
    `played` (module doc). `game` and `step` name the decision in its record and, with
    the reference's seed, fix its worlds; `label` is the seat's player. `tools`: what
    `Reference.tools` builds, built here if not given. With `floor`, also what
    the half-budget reference's choice would lose here."""
    if state.is_over:
        raise ValueError("the game is over: no decision to analyse")
    legal = state.legal_actions()
    if played not in legal:
        raise ValueError(f"{rules.action_text(played)} is not a legal placement here")
    seat = state.current_player
    view = PlayerView(state, seat)
    tools = tools if tools is not None else reference.tools(state.num_players, state.team)
    key = [reference.seed, _int(game), _int(step)]
    ranked = rank_candidates(view, reference, tools, key, keep=[played])
    best, mine = ranked[0], next(c for c in ranked if c.action == played)
    floor_loss = floor_minutes = None
    if floor:  # the same candidates on half as many worlds, drawn apart: which would it choose?
        half = reference.half()
        finalists = [c.action for c in ranked]
        half_worlds, half_seeds = _worlds(view, half.worlds, [*key, 1])
        half_table = _Table()
        half_table.fill(finalists, half_worlds, half_seeds, seat, tools, range(half.worlds))
        choice = next(c for c in ranked if c.action == _ranked(half_table, finalists)[0].action)
        floor_loss, floor_minutes = best.value - choice.value, best.minutes - choice.minutes
    return Decision(game=game, step=step, seat=seat, player=label, played=int(played), best=best.action,
                    loss=best.value - mine.value, minutes_lost=best.minutes - mine.minutes, legal=len(legal),
                    candidates=tuple(ranked), floor_loss=floor_loss, floor_minutes=floor_minutes)


# --- games -------------------------------------------------------------------------------------
def decision_steps(start: GameState, actions: Sequence[int], seats: Iterable[int]) -> list[int]:
    """The steps (actions played before) of the decisions the analysis scores: a
    placement by one of `seats` with at least two legal placements."""
    seats = set(seats)
    state, steps = start.clone(), []
    for step, action in enumerate(actions):
        if state.current_player in seats and action < rules.PASS_ACTION and len(state.legal_actions()) > 1:
            steps.append(step)
        state.step(action)
    return steps


def seat_labels(record: dict) -> list[str]:
    n = record.get("num_players", 2)
    labels = record.get("labels") or record.get("seats") or []
    return [str(labels[s]) if s < len(labels) else f"seat {s}" for s in range(n)]


def choose_seats(record: dict, agent: str | None = None, seat: int | None = None) -> list[int]:
    """The seats of `record` to analyse: those `agent` held, or `seat`, or every seat."""
    labels = seat_labels(record)
    if seat is not None:
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < len(labels):
            raise ValueError(f"seat must be in 0..{len(labels) - 1}, got {seat!r}")
        return [seat]
    if agent is not None:
        return [s for s, label in enumerate(labels) if label == agent]
    return list(range(len(labels)))


def analyze_moves(start: GameState, actions: Sequence[int], reference: Reference, seats: Iterable[int] | None = None,
                  floor: bool = True, progress: Progress | None = None, steps: Sequence[int] | None = None,
                  game: int | None = None, labels: Sequence[str] | None = None) -> list[Decision]:
    """Score the decisions of `seats` (default all; or only those at `steps`) in the game
    that plays `actions` from `start` (checked legal, e.g. by `evaluation.replay.check_record`). `game` and
    `labels` (one per seat) name them in the output; `progress(done, total)` is called
    after each decision."""
    seats = range(start.num_players) if seats is None else seats
    todo = set(decision_steps(start, actions, seats) if steps is None else steps)
    labels = list(labels) if labels is not None else [f"seat {s}" for s in range(start.num_players)]
    tools = reference.tools(start.num_players, start.team)
    state, out = start.clone(), []
    for step, action in enumerate(actions):
        if step in todo:
            out.append(analyze_decision(state, action, reference, game=game, step=step,
                                        label=labels[state.current_player], tools=tools, floor=floor))
            if progress is not None:
                progress(len(out), len(todo))
        state.step(action)
    return out


def analyze_game(record: dict, reference: Reference, seats: Iterable[int] | None = None, floor: bool = True,
                 progress: Progress | None = None, steps: Sequence[int] | None = None) -> list[Decision]:
    """`analyze_moves` for a game record (a games.jsonl line saved with --save-games, or
    a play.py record), checked first (`evaluation.replay.check_record`)."""
    start, actions = check_record(record)
    return analyze_moves(start, actions, reference, seats, floor, progress, steps, record.get("game"),
                         seat_labels(record))


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# --- summaries -----------------------------------------------------------------------------------
def game_errors(decisions: Iterable[Decision]) -> list[dict]:
    """One row per (game, seat): its scored decisions and their sums (the error per game)."""
    rows: dict = {}
    for d in decisions:
        row = rows.setdefault((d.game, d.seat), {"game": d.game, "seat": d.seat, "player": d.player, "decisions": 0,
                                                 "error": 0.0, "minutes_lost": 0.0, "floor": 0.0})
        row["decisions"] += 1
        row["error"] += d.loss
        row["minutes_lost"] += d.minutes_lost
        row["floor"] += d.floor_loss or 0.0
    return [rows[k] for k in sorted(rows, key=lambda k: (_int(k[0]), k[1]))]


def _mean_ci(values: Sequence[float]) -> tuple[float, list[float] | None]:
    """Mean and a normal 95% interval (None for fewer than 2 values)."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, None
    half = 1.96 * float(x.std(ddof=1)) / math.sqrt(len(x))
    return mean, [mean - half, mean + half]


def summarize(decisions: Sequence[Decision]) -> dict:
    """Per player label: games, decisions, error per game (mean, 95% interval), loss per
    decision, minutes lost per game and the reference's floor per game."""
    out = {}
    rows = game_errors(decisions)
    for player in dict.fromkeys(r["player"] for r in rows):
        mine = [r for r in rows if r["player"] == player]
        losses = [d.loss for d in decisions if d.player == player]
        error, ci = _mean_ci([r["error"] for r in mine])
        floor, floor_ci = _mean_ci([r["floor"] for r in mine])
        out[player] = {"games": len(mine), "decisions": len(losses), "error_per_game": error,
                       "error_per_game_ci95": ci, "loss_per_decision": float(np.mean(losses)),
                       "minutes_lost_per_game": float(np.mean([r["minutes_lost"] for r in mine])),
                       "floor_per_game": floor, "floor_per_game_ci95": floor_ci,
                       "blunders": sum(d.loss >= BLUNDER for d in decisions if d.player == player)}
    return out


BLUNDER = 0.2  # value units: a decision that loses this much (2 players: about 10 points of winning chance)


def costliest(decisions: Iterable[Decision], top: int = 10) -> list[Decision]:
    """The `top` decisions that lost the most (reward, then minutes), costliest first."""
    return sorted(decisions, key=lambda d: (-d.loss, -d.minutes_lost, _int(d.game), d.step))[:top]


# --- a whole run -----------------------------------------------------------------------------------
def analyze_run(records: Sequence[dict], reference: Reference, agent: str | None = None, seat: int | None = None,
                floor: bool = True, progress: Progress | None = None) -> dict:
    """Analyse every chosen decision of `records` (module doc); returns the content of
    analysis.json: the reference, units, per-player summary, per-game errors, the
    costliest decisions and every decision."""
    reference.validate()
    plans = []
    for record in records:
        start, actions = check_record(record)
        reference.tools(start.num_players, start.team)  # a game without an evaluator fails here, before any work
        seats = choose_seats(record, agent, seat)
        plans.append((record, seats, decision_steps(start, actions, seats)))
    if agent is not None and not any(seats for _, seats, _ in plans):
        labels = sorted({label for record in records for label in seat_labels(record)})
        raise ValueError(f"no seat is played by {agent!r} in these games (players: {', '.join(labels)})")
    total = sum(len(steps) for _, _, steps in plans)
    decisions: list[Decision] = []
    for record, seats, steps in plans:
        done = len(decisions)
        decisions += analyze_game(record, reference, seats, floor, steps=steps,
                                  progress=None if progress is None else lambda k, _: progress(done + k, total))
    return {"reference": reference.to_dict(), "units": UNITS, "error_rule": ERROR_RULE,
            "blunder": BLUNDER, "games": len(records), "decisions_scored": len(decisions),
            "players": summarize(decisions) if decisions else {}, "per_game": game_errors(decisions),
            "costliest": [d.to_dict() for d in costliest(decisions)],
            "decisions": [d.to_dict() for d in decisions]}


# --- outputs -----------------------------------------------------------------------------------
def _interval(ci) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"


def format_analysis(result: dict) -> str:
    """analysis.md: the reference, the per-player table and the costliest moves."""
    ref = result["reference"]
    lines = ["# Decision analysis", "",
             f"Reference: {ref['design']}.", "",
             f"Units: {result['units']}. {result['error_rule'].capitalize()}; the floor is the same sum for "
             f"the reference's own choices at half its budget ({max(ref['worlds'] // 2, 1)} worlds), charged by "
             "the full reference.", "",
             f"{result['games']} game(s), {result['decisions_scored']} decision(s) scored.", ""]
    if result["players"]:
        lines += ["| player | games | decisions | error per game [95%] | loss per decision | minutes lost per game "
                  f"| floor per game | blunders (>= {result['blunder']}) |",
                  "|---|---|---|---|---|---|---|---|"]
        for player, s in result["players"].items():
            lines.append(f"| `{player}` | {s['games']} | {s['decisions']} | {s['error_per_game']:.3f} "
                         f"{_interval(s['error_per_game_ci95'])} | {s['loss_per_decision']:.4f} | "
                         f"{s['minutes_lost_per_game']:.1f} | {s['floor_per_game']:.3f} | {s['blunders']} |")
        lines += ["", "## Costliest decisions", "",
                  "| game | move | player | played | better | value lost | minutes lost |", "|---|---|---|---|---|---|---|"]
        for d in result["costliest"]:
            lines.append(f"| {d['game']} | {d['step'] + 1} | `{d['player']}` | {d['move']} | {d['best_move']} | "
                         f"{d['loss']:.3f} | {d['minutes_lost']:.1f} |")
    return "\n".join(lines) + "\n"


def plot_analysis(result: dict, path: Path) -> None:
    """Reward lost against move number, per player: every decision (dots) and the mean at
    each move number (line); the floor's mean dashed."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    ax = fig.subplots()
    decisions = [Decision.from_dict(d) for d in result["decisions"]]
    for player in result["players"]:
        mine = [d for d in decisions if d.player == player]
        moves = np.array([d.move_number for d in mine])
        losses = np.array([d.loss for d in mine])
        dots = ax.plot(moves, losses, ".", alpha=0.35)[0]
        numbers = np.unique(moves)
        ax.plot(numbers, [losses[moves == m].mean() for m in numbers], "-", color=dots.get_color(), label=player)
    if decisions:
        moves = np.array([d.move_number for d in decisions])
        floors = np.array([d.floor_loss or 0.0 for d in decisions])
        numbers = np.unique(moves)
        ax.plot(numbers, [floors[moves == m].mean() for m in numbers], "--", color="grey",
                label="reference floor (half budget)")
    ax.set_xlabel("move number in the game")
    ax.set_ylabel("reward lost against the reference")
    ax.set_title("Cost of each decision")
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


def write_analysis(result: dict, out: str | Path, stem: str = "analysis", plot: bool = True) -> list[Path]:
    """Write STEM.json, STEM.md and (with `plot`) STEM.png in `out`; return the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    atomic_write_text(paths[0], json.dumps(result, indent=1) + "\n")
    atomic_write_text(paths[1], format_analysis(result))
    if plot and result["decisions"] and optional("matplotlib", "the analysis plot"):
        paths.append(out / f"{stem}.png")
        plot_analysis(result, paths[-1])
    return paths
