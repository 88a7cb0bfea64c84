"""Playing one game between agents: the loop every match, test and tournament uses.

A seat that cannot go on forfeits (`FORFEIT_REASONS`): its agent raised, returned an
illegal action, or thought longer than the `TimeLimits` allow. The game stops there;
the forfeiting seat (with its partner in the team variant) finishes last and the
others keep their order by minutes (`_forfeit_result`).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from engine import GameState, rules
from engine.view import PlayerView

from .base import Agent
from .parameters import seconds

FORFEIT_REASONS = {
    "error": "the agent raised an exception",
    "illegal": "the agent returned an illegal action",
    "move_time_limit": "one move took longer than the move time limit",
    "game_time_limit": "the seat's moves in one game took longer than the game time limit",
    "crash": "the process playing the game died while the seat was moving",
}


@dataclass(frozen=True)
class TimeLimits:
    """How long a seat may think: `move` seconds for one act() call, `game` seconds for
    all its act() calls in one game (a chess clock per seat). None: no limit."""

    move: float | None = None
    game: float | None = None

    def __post_init__(self) -> None:
        for name in ("move", "game"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, seconds(f"{name} time limit", getattr(self, name)))

    def budget(self, used: float) -> tuple[float | None, str | None]:
        """(seconds the next move may take, the reason it would forfeit over them) for a
        seat that has used `used` seconds of this game; (None, None) without limits."""
        left = None if self.game is None else max(self.game - used, 0.0)
        if self.move is None and left is None:
            return None, None
        if left is None or (self.move is not None and self.move <= left):
            return self.move, "move_time_limit"
        return left, "game_time_limit"


def time_limit_error(reason: str, seat: int, spec: str, budget: float, measured: str) -> str:
    """The error text of a time forfeit. Its first line (games.csv's error column) says
    only which limit and seat, so it is the same whoever noticed: the game loop when the
    move came back late, or a tournament's parent process when it never came back."""
    what = "move" if reason == "move_time_limit" else "game's moves"
    return f"{reason.replace('_', ' ')}: seat {seat} ({spec}) took more than {budget:.6g} s for its {what}\n{measured}"


@dataclass
class GameRecord:
    """The result of one game, as plain data (JSON-friendly via `to_dict`)."""

    deal: list[int]
    num_players: int
    team: bool
    actions: list[int] = field(default_factory=list)
    scores: list[int] = field(default_factory=list)
    ranking: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    forfeit: int | None = None  # the seat that forfeited
    forfeit_reason: str | None = None  # a key of FORFEIT_REASONS
    error: str | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


# on_move(seat, budget, reason, actions): called before each move with the seat to move,
# its budget (TimeLimits.budget) and every action played so far.
MoveHook = Callable[[int, "float | None", "str | None", list], None]


def play_game(agents: Sequence[Agent], deal, num_players: int | None = None, team: bool = False,
              seeds: Sequence[int | None] | None = None, limits: TimeLimits | None = None,
              on_move: MoveHook | None = None) -> GameRecord:
    """Play one game from an explicit deal; agents[i] sits in seat i.

    A seat forfeits (see the module doc) when its agent raises, returns an illegal
    action, or, with `limits`, returns a move after its budget; the error is recorded
    and the game stops. (A move that never returns cannot be stopped here: a tournament
    plays in worker processes it can kill, evaluation.executor.)
    """
    num_players = len(agents) if num_players is None else num_players
    if len(agents) != num_players:
        raise ValueError(f"need {num_players} agents, got {len(agents)}")
    state = GameState.from_deal(deal, num_players, team)
    record = GameRecord(deal=[int(v) for v in deal], num_players=num_players, team=team)
    used = [0.0] * num_players  # each seat's thinking time so far (its game clock)
    encode = None
    for seat, agent in enumerate(agents):
        if seeds is not None:
            agent.seed(seeds[seat])
        agent.reset(seat, num_players, team)
        if getattr(agent, "needs_observation", False) and encode is None:
            from env.observation import encode  # the env layer owns the observation encoding
    views = [PlayerView(state, seat) for seat in range(num_players)]
    while not state.is_over:
        seat = state.current_player
        agent = agents[seat]
        budget, over = limits.budget(used[seat]) if limits is not None else (None, None)
        if on_move is not None:
            on_move(seat, budget, over, record.actions)
        start = time.perf_counter()
        try:
            obs = encode(state, seat) if encode is not None and getattr(agent, "needs_observation", False) else None
            action = agent.act(obs, views[seat])
        except Exception as exc:  # the agent forfeits; the tournament goes on
            _forfeit(record, seat, "error", _error_text(exc))
            break
        elapsed = time.perf_counter() - start
        used[seat] += elapsed
        if budget is not None and elapsed > budget:
            _forfeit(record, seat, over, time_limit_error(over, seat, getattr(agent, "spec", agent.name), budget,
                                                          f"the move took {elapsed:.3f} s"))
            break
        try:
            if not state.is_legal(action):
                state.step(action)  # raises the ValueError that names the legal actions, changing nothing
        except Exception as exc:
            _forfeit(record, seat, "illegal", _error_text(exc))
            break
        observer = _tell_observers(agents, views, seat, int(action))
        if observer is not None:
            _forfeit(record, observer[0], "error", observer[1])
            break
        state.step(action)
        record.actions.append(int(action))
    return _finish(record, state)


def _tell_observers(agents: Sequence[Agent], views: list[PlayerView], seat: int, action: int):
    """Call `observe_action(view, seat, action)` of every agent that observes the game's
    moves (``observes_actions``), each with its own view, before the move is applied.
    Team show actions are private between partners: nobody is told. Returns None, or
    (the seat whose agent raised, the error text): that seat forfeits."""
    if action >= rules.SHOW_BASE:
        return None
    for other, agent in enumerate(agents):
        if getattr(agent, "observes_actions", False):
            try:
                agent.observe_action(views[other], seat, action)
            except Exception as exc:
                return other, _error_text(exc)
    return None


def _error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"


def _forfeit(record: GameRecord, seat: int, reason: str, error: str) -> None:
    record.forfeit, record.forfeit_reason, record.error = seat, reason, error


def _finish(record: GameRecord, state: GameState) -> GameRecord:
    """Fill in the result: the game's own, or the forfeit's."""
    record.scores = state.scores.tolist()
    if record.forfeit is None:
        record.ranking = state.ranking().tolist()
        record.rewards = state.rewards().tolist()
    else:
        record.ranking, record.rewards = _forfeit_result(state, record.forfeit)
    return record


def forfeited_game(deal, num_players: int, team: bool, actions: Sequence[int], seat: int, reason: str,
                   error: str) -> GameRecord:
    """The record of a game stopped from outside after `actions` (its process killed
    while `seat` was moving): the same record play_game would have made had the seat
    forfeited there."""
    if reason not in FORFEIT_REASONS:
        raise ValueError(f"unknown forfeit reason {reason!r}; known: {', '.join(FORFEIT_REASONS)}")
    state = GameState.from_deal(deal, num_players, team)
    for action in actions:
        state.step(action)
    record = GameRecord(deal=[int(v) for v in deal], num_players=num_players, team=team,
                        actions=[int(a) for a in actions])
    _forfeit(record, seat, reason, error)
    return _finish(record, state)


def _forfeit_result(state: GameState, loser: int) -> tuple[list[int], list[float]]:
    """The forfeiting seat (with its partner in the team variant) finishes last; the
    other seats keep their order by the usual ranking among themselves."""
    n = state.num_players
    losers = {loser, rules.partner(loser)} if state.team else {loser}
    if state.team:
        return ([1 if s in losers else 0 for s in range(n)],
                [-1.0 if s in losers else 1.0 for s in range(n)])
    places = state.ranking()
    others = [s for s in range(n) if s != loser]
    ranking = [0] * n
    for s in others:  # competition places among the seats still in the game
        ranking[s] = sum(1 for o in others if places[o] < places[s])
    ranking[loser] = n - 1
    rewards = []
    for s in range(n):
        total = sum(np.sign(ranking[o] - ranking[s]) for o in range(n) if o != s)
        rewards.append(float(total) / (n - 1))
    return ranking, rewards


def replay(record: GameRecord | dict) -> GameState:
    """Rebuild the final state of a recorded game by replaying its actions."""
    rec = record if isinstance(record, dict) else record.to_dict()
    state = GameState.from_deal(rec["deal"], rec["num_players"], rec["team"])
    for action in rec["actions"]:
        state.step(action)
    return state
