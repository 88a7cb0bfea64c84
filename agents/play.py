"""Playing one game between agents: the loop every match, test and tournament uses."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from engine import GameState, rules
from engine.view import PlayerView

from .base import Agent


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
    forfeit: int | None = None  # the seat that forfeited (raised or played illegally)
    error: str | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _observation_encoder():
    from env.observation import encode  # the env layer owns the observation encoding

    return encode


def play_game(agents: Sequence[Agent], deal, num_players: int | None = None, team: bool = False,
              seeds: Sequence[int | None] | None = None) -> GameRecord:
    """Play one game from an explicit deal; agents[i] sits in seat i.

    An agent that raises or returns an illegal action forfeits: it is ranked last
    (reward -1 against everyone) and the error is recorded; the game stops there.
    """
    num_players = len(agents) if num_players is None else num_players
    if len(agents) != num_players:
        raise ValueError(f"need {num_players} agents, got {len(agents)}")
    state = GameState.from_deal(deal, num_players, team)
    record = GameRecord(deal=[int(v) for v in deal], num_players=num_players, team=team)
    encode = None
    for seat, agent in enumerate(agents):
        if seeds is not None:
            agent.seed(seeds[seat])
        agent.reset(seat, num_players, team)
        if getattr(agent, "needs_observation", False) and encode is None:
            encode = _observation_encoder()
    views = [PlayerView(state, seat) for seat in range(num_players)]
    while not state.is_over:
        seat = state.current_player
        agent = agents[seat]
        try:
            obs = encode(state, seat) if encode is not None and getattr(agent, "needs_observation", False) else None
            action = agent.act(obs, views[seat])
            state.step(action)  # raises ValueError, changing nothing, if illegal
        except Exception as exc:  # the agent forfeits; the tournament goes on
            record.forfeit = seat
            record.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
            break
        record.actions.append(int(action))
    record.scores = state.scores.tolist()
    if record.forfeit is None:
        record.ranking = state.ranking().tolist()
        record.rewards = state.rewards().tolist()
    else:
        record.ranking, record.rewards = _forfeit_result(state, record.forfeit)
    return record


def _forfeit_result(state: GameState, loser: int) -> tuple[list[int], list[float]]:
    """The forfeiting seat (with its partner in the team variant) finishes last; the
    other seats keep their order by the usual ranking among themselves."""
    n = state.num_players
    losers = {loser, (loser + 2) % 4} if state.team else {loser}
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
