"""The cost of each decision: `python evaluate.py analyze RUN_DIR` (or one game record).

For every decision of the chosen seats, a **judge** (`Judge`: a search agent that can
also play, by default `selfplay:iterations=28000`, 8 times what the shipped agent searches
at 0.01 s a move) says which move it would have played and what the move played gave
away against it, GNU Backgammon's way of grading against a stronger player.

**Choose, then judge (two independent searches).** A max over noisy values inflates
the error, so the move and its value come from different searches:

1. *Choose.* The judge, seeded by the decision, plays the position from the deciding
   seat's information (`PlayerView`): its move is the *best* move.
2. *Judge.* One world is sampled from the same information (the other hands and the bag:
   which tile the seat draws next), common to every move valued at this decision. The
   move is played in it and the judge's search, from the seat's information after the
   move (`position_value`: the root's mean reward for that seat, whoever is to move, every
   move valued with the same random stream), values the position.
3. *The loss* is the value of the best move minus the value of the move played; 0 when
   they are the same move. It is not clipped: two independent searches can rank two close
   moves the other way round, and the mean over many decisions stays unbiased.

Units: the deciding seat's *search reward*, what the project's searches score an ended
game with: the game's reward (2 players: +1 win, 0 draw, -1 loss; 3-4 players the mean of
+1/0/-1 against each other seat; teams the team's) plus 0.5 * tanh(final minute margin /
100). From a loss to a win is 2, so a loss of 0.1 is about 5% of a win (`win_share`).

**A seat's error in a game** is the sum of its decisions' losses in that game (GNU
Backgammon's total error); the report gives its mean over games with a normal 95%
interval. Decisions with a single legal placement, passes and team show actions are not
scored.

**The floor**: the judge chooses again with a fresh seed, and that choice is charged like a
played move. A player as strong as the judge would be charged about that much. Where a
player's error per game cannot be told from the floor (the paired interval of error minus
floor reaches 0), the report says the player is *not clearly weaker than the judge*
instead of reading its error as a loss.

The judge's strength is measured, not assumed: as a player against `selfplay:time=0.01`,
and by the order its errors put agents of known strength in (docs/status.md, "Error per
game"). Games are read through public APIs only: `engine.GameState`, `PlayerView` and
agents built from a typed recipe (`agents.parse_agent`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

import agents
from agents.base import typed_agent
from agents.search.selfplay import shipped_network
from engine.extras import optional
from engine.files import atomic_write, atomic_write_text
from engine import GameState, rules
from engine.view import PlayerView

from .replay import check_record


JUDGE = "selfplay:iterations=28000"  # the validated judge (docs/status.md, "Error per game")
JUDGE_WITHOUT_NETWORK = "ismcts:iterations=28000"  # where no self-play network is shipped (3 players): not validated
UNITS = ("value: the deciding seat's expected search reward (the game's reward, 2 players +1 win / 0 draw / "
         "-1 loss, plus 0.5 * tanh(final minute margin / 100)); from a loss to a win is 2")
ERROR_RULE = "error per game = the sum of the value lost by the seat's scored decisions in one game"
BLUNDER = 0.2  # value units: a decision that loses this much (about 10% of a win)
# called with (decisions done, decisions in all) after each decision
Progress = Callable[[int, int], None]


def win_share(value: float) -> float:
    """A value difference as a share of a win: from a loss to a win is 2 value units."""
    return value / 2.0


# --- the judge ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judge:
    """The agent that grades (module doc): `agent` chooses the best move and its search
    values moves; `seed` fixes every decision's searches and sampled world."""

    agent: agents.AgentRecipe = field(default_factory=lambda: agents.parse_agent(JUDGE))
    seed: int = 0

    def validate(self) -> "Judge":
        """Check the fields; raise ValueError with a one-line reason."""
        typed_agent(self.agent, "the judge")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not hasattr(self.agent.build(seed=0), "position_value"):
            raise ValueError(f"the judge values moves with its search, and {self.agent} has none: give a search "
                             "agent (selfplay:iterations=N, ismcts:iterations=N[,net=PATH])")
        return self

    @property
    def spec(self) -> str:
        return str(self.agent)

    def describe(self) -> str:
        return (f"{self.spec} chooses the best move; an independent search of the same agent values it and the "
                f"move played, in one sampled world common to both; seed {self.seed}")

    def to_dict(self) -> dict:
        return {"spec": self.spec, "seed": self.seed, "design": self.describe()}

    def tools(self, num_players: int, team: bool) -> "Tools":
        """What one game's analysis builds once: the choosing and the valuing agent."""
        chooser, valuer = self.agent.build(seed=0), self.agent.build(seed=1)
        for player in (chooser, valuer):
            player.reset(0, num_players, team)  # fails here, before any work, for a game it cannot play
        return Tools(chooser, valuer, num_players, team)


def default_judge(num_players: int, team: bool = False, seed: int = 0) -> Judge:
    """The validated judge, or where no self-play network is shipped for the game (3
    players) plain ISMCTS at the same budget."""
    try:
        shipped_network(num_players, team)
    except ValueError:
        return Judge(agents.parse_agent(JUDGE_WITHOUT_NETWORK), seed)
    return Judge(agents.parse_agent(JUDGE), seed)


@dataclass(frozen=True)
class Tools:
    chooser: agents.Agent
    valuer: agents.Agent
    num_players: int
    team: bool

    def choose(self, state: GameState, seat: int, seed: int) -> int:
        """The move the judge plays for `seat` (to move) in `state`, from its view."""
        self.chooser.reset(seat, self.num_players, self.team)
        self.chooser.seed(seed)
        observation = None
        if getattr(self.chooser, "needs_observation", False):
            from env.observation import encode

            observation = encode(state, seat)
        view = PlayerView(state, seat)
        action = int(self.chooser.act(observation, view))
        while action >= rules.SHOW_BASE:  # a team search shows a tile first, then places what it found
            action = int(self.chooser.act(observation, view))
        return action

    def value(self, world: GameState, seat: int, action: int, seed: int) -> float:
        """`seat`'s value of `world` (a copy) after `action`, by the judge's search."""
        after = world.clone()
        after.step(action)
        self.valuer.reset(seat, self.num_players, self.team)
        self.valuer.seed(seed)
        return float(self.valuer.position_value(PlayerView(after, seat)))


def _seed(key: Sequence[int], part: int) -> int:
    return int(np.random.SeedSequence([*key, part]).generate_state(1)[0])


# --- the record of one decision ----------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """One scored decision: who played what at which step, the judge's move and what the
    move played lost against it (module doc)."""

    game: int | None  # the record's game id
    step: int  # actions played before this decision (its move number is step + 1)
    seat: int
    player: str  # the seat's label in the record
    played: int
    best: int  # the judge's move
    loss: float  # value units (module doc): value of best minus value of played, 0 if the same
    legal: int  # legal placements
    values: dict = field(default_factory=dict)  # action -> the judge's value (the moves valued here)
    floor_choice: int | None = None  # the judge's move with a fresh seed
    floor_loss: float | None = None  # what that move lost

    @property
    def move_number(self) -> int:
        return self.step + 1

    def to_dict(self) -> dict:
        out = asdict(self)
        out["values"] = {str(a): v for a, v in self.values.items()}
        out["move"] = rules.action_text(self.played)
        out["best_move"] = rules.action_text(self.best)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Decision":
        fields = {k: v for k, v in data.items() if k not in ("move", "best_move")}
        fields["values"] = {int(a): float(v) for a, v in data.get("values", {}).items()}
        return cls(**fields)


def analyze_decision(state: GameState, played: int, judge: Judge, *, game: int | None = None, step: int = 0,
                     label: str = "", tools: Tools | None = None, floor: bool = True) -> Decision:
    """Score the decision of the seat to move in `state` (left unchanged), which played
    `played` (module doc). `game` and `step` name the decision in its record and, with the
    judge's seed, fix its searches and world; `label` is the seat's player. `tools`: what
    `Judge.tools` builds, built here if not given. With `floor`, the judge also chooses
    again with a fresh seed and that choice is charged."""
    if state.is_over:
        raise ValueError("the game is over: no decision to analyse")
    legal = state.legal_actions()
    if played not in legal:
        raise ValueError(f"{rules.action_text(played)} is not a legal placement here")
    seat = state.current_player
    tools = tools if tools is not None else judge.tools(state.num_players, state.team)
    key = [judge.seed, _int(game), _int(step)]
    best = tools.choose(state, seat, _seed(key, 0))
    world = PlayerView(state, seat).sample_world(np.random.default_rng(_seed(key, 1)))
    values: dict[int, float] = {}

    def loss_of(move: int) -> float:
        if move == best:
            return 0.0
        for action in (best, move):
            if action not in values:  # every move of this decision: the same world and random stream
                values[action] = tools.value(world, seat, action, _seed(key, 2))
        return values[best] - values[move]

    loss = loss_of(played)
    floor_choice = floor_loss = None
    if floor:
        floor_choice = tools.choose(state, seat, _seed(key, 3))
        floor_loss = loss_of(floor_choice)
    return Decision(game=game, step=step, seat=seat, player=label, played=int(played), best=best, loss=loss,
                    legal=len(legal), values=values, floor_choice=floor_choice, floor_loss=floor_loss)


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


def analyze_moves(start: GameState, actions: Sequence[int], judge: Judge, seats: Iterable[int] | None = None,
                  floor: bool = True, progress: Progress | None = None, steps: Sequence[int] | None = None,
                  game: int | None = None, labels: Sequence[str] | None = None,
                  tools: Tools | None = None) -> list[Decision]:
    """Score the decisions of `seats` (default all; or only those at `steps`) in the game
    that plays `actions` from `start` (checked legal, e.g. by `evaluation.replay.check_record`). `game` and
    `labels` (one per seat) name them in the output; `progress(done, total)` is called
    after each decision."""
    seats = range(start.num_players) if seats is None else seats
    todo = set(decision_steps(start, actions, seats) if steps is None else steps)
    labels = list(labels) if labels is not None else [f"seat {s}" for s in range(start.num_players)]
    tools = tools if tools is not None else judge.tools(start.num_players, start.team)
    state, out = start.clone(), []
    for step, action in enumerate(actions):
        if step in todo:
            out.append(analyze_decision(state, action, judge, game=game, step=step,
                                        label=labels[state.current_player], tools=tools, floor=floor))
            if progress is not None:
                progress(len(out), len(todo))
        state.step(action)
    return out


def analyze_game(record: dict, judge: Judge, seats: Iterable[int] | None = None, floor: bool = True,
                 progress: Progress | None = None, steps: Sequence[int] | None = None,
                 tools: Tools | None = None) -> list[Decision]:
    """`analyze_moves` for a game record (a games.jsonl line saved with --save-games, or
    a play.py record), checked first (`evaluation.replay.check_record`)."""
    start, actions = check_record(record)
    return analyze_moves(start, actions, judge, seats, floor, progress, steps, record.get("game"),
                         seat_labels(record), tools)


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# --- summaries -----------------------------------------------------------------------------------
def game_errors(decisions: Iterable[Decision]) -> list[dict]:
    """One row per (game, seat): its scored decisions and their sums (the error per game)."""
    rows: dict = {}
    for d in decisions:
        row = rows.setdefault((d.game, d.seat), {"game": d.game, "seat": d.seat, "player": d.player, "decisions": 0,
                                                 "error": 0.0, "floor": 0.0})
        row["decisions"] += 1
        row["error"] += d.loss
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


def summarize(decisions: Sequence[Decision], floor: bool = True) -> dict:
    """Per player label: games, decisions, error per game (mean, 95% interval), loss per
    decision, blunders and, with the floor, the judge's floor per game and whether the
    player is clearly weaker than the judge (the paired interval of error minus floor
    above 0)."""
    out = {}
    rows = game_errors(decisions)
    for player in dict.fromkeys(r["player"] for r in rows):
        mine = [r for r in rows if r["player"] == player]
        losses = [d.loss for d in decisions if d.player == player]
        error, ci = _mean_ci([r["error"] for r in mine])
        out[player] = {"games": len(mine), "decisions": len(losses), "error_per_game": error,
                       "error_per_game_ci95": ci, "loss_per_decision": float(np.mean(losses)),
                       "agreement": float(np.mean([d.played == d.best for d in decisions if d.player == player])),
                       "blunders": sum(d.loss >= BLUNDER for d in decisions if d.player == player)}
        if floor:
            floor_mean, floor_ci = _mean_ci([r["floor"] for r in mine])
            _, above = _mean_ci([r["error"] - r["floor"] for r in mine])
            out[player].update(floor_per_game=floor_mean, floor_per_game_ci95=floor_ci,
                               weaker_than_judge=bool(above is not None and above[0] > 0))
    return out


def costliest(decisions: Iterable[Decision], top: int = 10) -> list[Decision]:
    """The `top` decisions that lost the most, costliest first."""
    return sorted(decisions, key=lambda d: (-d.loss, _int(d.game), d.step))[:top]


# --- a whole run -----------------------------------------------------------------------------------
def analyze_run(records: Sequence[dict], judge: Judge, agent: str | None = None, seat: int | None = None,
                floor: bool = True, progress: Progress | None = None) -> dict:
    """Analyse every chosen decision of `records` (module doc); returns the content of
    analysis.json: the judge, units, per-player summary, per-game errors, the costliest
    decisions and every decision."""
    judge.validate()
    plans, tools = [], {}
    for record in records:
        start, actions = check_record(record)
        variant = (start.num_players, start.team)
        if variant not in tools:  # a game the judge cannot play fails here, before any work
            tools[variant] = judge.tools(*variant)
        seats = choose_seats(record, agent, seat)
        plans.append((record, seats, decision_steps(start, actions, seats), tools[variant]))
    if agent is not None and not any(seats for _, seats, _, _ in plans):
        labels = sorted({label for record in records for label in seat_labels(record)})
        raise ValueError(f"no seat is played by {agent!r} in these games (players: {', '.join(labels)})")
    total = sum(len(steps) for _, _, steps, _ in plans)
    decisions: list[Decision] = []
    for record, seats, steps, game_tools in plans:
        done = len(decisions)
        decisions += analyze_game(record, judge, seats, floor, steps=steps, tools=game_tools,
                                  progress=None if progress is None else lambda k, _: progress(done + k, total))
    return {"judge": judge.to_dict(), "units": UNITS, "error_rule": ERROR_RULE, "floor": floor,
            "blunder": BLUNDER, "games": len(records), "decisions_scored": len(decisions),
            "players": summarize(decisions, floor) if decisions else {}, "per_game": game_errors(decisions),
            "costliest": [d.to_dict() for d in costliest(decisions)],
            "decisions": [d.to_dict() for d in decisions]}


# --- outputs -----------------------------------------------------------------------------------
def _interval(ci) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"


def _verdict(s: dict) -> str:
    if "weaker_than_judge" not in s:
        return "-"
    return "yes" if s["weaker_than_judge"] else "**not clearly weaker than the judge: its error is not backed**"


def format_analysis(result: dict) -> str:
    """analysis.md: the judge, the per-player table and the costliest moves."""
    judge = result["judge"]
    lines = ["# Decision analysis", "", f"judge: {judge['spec']}", "",
             f"How: {judge['design']}.", "",
             f"Units: {result['units']}. {result['error_rule'].capitalize()}; the floor is the same sum for the "
             "judge's own choice with a fresh seed: a player as strong as the judge is charged about that much.", "",
             f"{result['games']} game(s), {result['decisions_scored']} decision(s) scored.", ""]
    if result["players"]:
        lines += ["| player | games | decisions | error per game [95%] | share of a win per game | same move "
                  f"as the judge | floor per game | clearly weaker than the judge | blunders (>= {result['blunder']}) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for player, s in result["players"].items():
            floor = f"{s['floor_per_game']:.3f}" if "floor_per_game" in s else "-"
            lines.append(f"| `{player}` | {s['games']} | {s['decisions']} | {s['error_per_game']:.3f} "
                         f"{_interval(s['error_per_game_ci95'])} | {win_share(s['error_per_game']):.0%} | "
                         f"{s['agreement']:.0%} | {floor} | {_verdict(s)} | {s['blunders']} |")
        lines += ["", "## Costliest decisions", "",
                  "| game | move | player | played | the judge's move | value lost | share of a win |",
                  "|---|---|---|---|---|---|---|"]
        for d in result["costliest"]:
            lines.append(f"| {d['game']} | {d['step'] + 1} | `{d['player']}` | {d['move']} | {d['best_move']} | "
                         f"{d['loss']:.3f} | {win_share(d['loss']):.0%} |")
    return "\n".join(lines) + "\n"


def plot_analysis(result: dict, path: Path) -> None:
    """Value lost against move number, per player: every decision (dots) and the mean at
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
    if decisions and result.get("floor", True):
        moves = np.array([d.move_number for d in decisions])
        floors = np.array([d.floor_loss or 0.0 for d in decisions])
        numbers = np.unique(moves)
        ax.plot(numbers, [floors[moves == m].mean() for m in numbers], "--", color="grey",
                label="the judge's floor (its own choice, fresh seed)")
    ax.set_xlabel("move number in the game")
    ax.set_ylabel(f"value lost against the judge ({result['judge']['spec']})")
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
