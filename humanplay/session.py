"""One game between a person and agents: the loop the terminal and the web app share.

A `Session` holds the true game, but everything it hands out is read through the human
seat's `PlayerView`: the board, that seat's hand, every seat's minutes and hand size.
The agents at the other seats are built from spec strings (`agents.make`) and play
through their own views, as in `agents.play.play_game`. The hint agent, too, sees only
the human seat's view.

Undo is honest: it is refused once the game is over (the record then shows the whole
deal), and it deals every tile the person has not seen afresh (`humanplay.redeal`), so
an undone move tells nothing about the bag or the other hands.

A game is saved as a record in the format of a tournament's games.jsonl
(`evaluation.replay`): the deal, the actions and the result, plus who sat where. A
record from a tournament, the terminal or the web app opens in any of them
(`load_record`, `Session.from_record`).
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import agents
from engine import GameState, kernel_cache, random_deal, rules
from engine.files import atomic_write_text
from engine.view import PlayerView
from env.observation import encode
from env.render import breakdown_text
from evaluation.replay import check_record, load_games, read_records

from .redeal import RedealError, redeal

HUMAN = "human"
DEFAULT_HINT = "ismcts:time=1"
HINT_MOVES = 5  # moves a hint lists


@dataclass(frozen=True)
class Move:
    """One move as the human seat may see it: who played what and what it scored."""

    seat: int
    action: int
    points: int
    breakdown: tuple  # engine Combination entries

    @property
    def text(self) -> str:
        return rules.action_text(self.action)

    @property
    def explanation(self) -> str:
        return breakdown_text(self.breakdown, self.points)

    def visible_to(self, seat: int, team: bool) -> bool:
        """Whether `seat` may see this move in full: a shown value is seen only by the
        shower and its partner (docs/rules.md, team variant); other moves are public."""
        return self.action < rules.SHOW_BASE or not team or seat in (self.seat, rules.partner(self.seat))

    def public(self, seat: int, team: bool) -> dict:
        """The move as `seat` may see it (a hidden show keeps only who showed). The dict
        of a visible move is made once and shared (a page lists every move again on each
        request): do not change it."""
        if self.visible_to(seat, team):
            return self._in_full
        return {"seat": self.seat, "action": None, "move": "shows a tile to its partner", "points": self.points,
                "breakdown": ""}

    @functools.cached_property
    def _in_full(self) -> dict:
        return {"seat": self.seat, "action": self.action, "move": self.text, "points": self.points,
                "breakdown": self.explanation if self.action < rules.PASS_ACTION else ""}


def placement_score(view: PlayerView, action: int) -> tuple[int, tuple]:
    """(minutes, breakdown) that placing `action` would score now, by the engine's own
    scoring: the move is played on a copy of the game (`view.public_arrays`), of which only
    the score is read; it depends only on the public board, so nothing hidden reaches the
    result. (A sampled world would score the same, but its kernel is one that play itself
    never compiles: the first hint on a warm cache would wait for it.)"""
    grid, info = view.public_arrays()
    copy = GameState(grid.copy(), info.copy())
    points = copy.step(int(action))
    return points, copy.last_breakdown


# --- records ------------------------------------------------------------------------------------
def load_record(path: str | Path, game: int | None = None) -> dict:
    """A game record from a .json file (one record) or a games.jsonl (the record with id
    `game`, default the first). Raises ValueError naming the problem."""
    return read_records(path)[0] if game is None else load_games(path, game, "play")[0]


def human_seat_of(record: dict) -> int:
    """Which seat the person played: the record's 'human_seat', else the seat labelled
    'human', else 0."""
    seat = record.get("human_seat")
    if isinstance(seat, int) and not isinstance(seat, bool):
        return seat
    labels = record.get("labels") or record.get("seats") or []
    return labels.index(HUMAN) if HUMAN in labels else 0


def save_record(record: dict, path: str | Path) -> Path:
    """Write `record` as a one-line games.jsonl (temp file, then replaced whole)."""
    return atomic_write_text(path, json.dumps(record, separators=(",", ":")) + "\n")


# --- the session ------------------------------------------------------------------------------
def _check_seat(seat, num_players: int) -> int:
    if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < num_players:
        raise ValueError(f"seat must be an int in 0..{num_players - 1}, got {seat!r}")
    return int(seat)


def opponent_specs(specs: Sequence[str], num_players: int) -> list[str]:
    """One spec per other seat: a single spec fills them all; otherwise exactly one each."""
    if isinstance(specs, str):
        specs = [specs]
    specs = list(specs)
    if len(specs) == 1:
        return specs * (num_players - 1)
    if len(specs) != num_players - 1:
        raise ValueError(f"give one opponent spec, or one per other seat ({num_players - 1}), got {len(specs)}")
    return specs


class Session:
    """A game of `num_players` with the person at `seat` and agents elsewhere.

    Build it with `Session.new` or `Session.from_record`. `play(action)` applies the
    person's move and the agents' replies; `undo()`, `hint()`, `record()` as named.
    The agents are built on first use, so a session that only checks and applies moves
    (the web server's, whose agents think in worker processes) builds none.
    """

    def __init__(self, deal, num_players: int, team: bool, seat: int, opponents: Sequence[str],
                 seed: int | None = None, hint_spec: str = DEFAULT_HINT, actions: Sequence[int] = (),
                 deal_seed: int | None = None, undos: int = 0, check: bool = True):
        self._state = GameState.from_deal(deal, num_players, team)  # the true game: read it through `view`
        self.seat = _check_seat(seat, num_players)
        self.seed = seed
        self.deal_seed = deal_seed
        specs = opponent_specs(opponents, num_players)
        self.labels = specs[:self.seat] + [HUMAN] + specs[self.seat:]
        # each spec parsed once (`_recipe`), and checked here unless rebuilt (its specs were); copies share them
        self._recipes: dict[str, agents.AgentRecipe] = {
            spec: agents.check_spec(spec) for spec in (set(specs) | {hint_spec} if check else ())}
        self._agents: dict | None = None
        self.hint_spec = hint_spec
        self._hint_agent = None
        self._compiling: threading.Thread | None = None
        self._rng = np.random.default_rng(seed)
        self.undos = undos  # undos so far: with `seed`, what each undo's fresh deal is drawn from
        self.actions: list[int] = []
        self.moves: list[Move] = []
        for action in actions:
            self._apply(int(action))

    @classmethod
    def new(cls, opponents: Sequence[str] = ("greedy",), num_players: int = 2, team: bool = False,
            seat: int = 0, seed: int | None = None, hint_spec: str = DEFAULT_HINT, advance: bool = True) -> Session:
        """A fresh game dealt from `seed`; the agents move until it is the person's turn
        (unless not `advance`: the web server's workers move them)."""
        session = cls(random_deal(seed), num_players, team, seat, opponents, seed, hint_spec, deal_seed=seed)
        if advance:
            session.advance()
        return session

    @classmethod
    def from_record(cls, record: dict, opponents: Sequence[str] | None = None, seat: int | None = None,
                    seed: int | None = None, hint_spec: str = DEFAULT_HINT, advance: bool = True) -> Session:
        """The game of a record (any of terminal, web or tournament), at its last move.
        The person takes `seat` (default: the record's human seat, else 0); the other
        seats are played by `opponents`, else by the record's labels where those are
        agent specs, else by greedy."""
        start, actions = check_record(record)
        deal, num_players, team = start.deal.tolist(), start.num_players, start.team
        seat = human_seat_of(record) if seat is None else seat
        seat = _check_seat(seat, num_players)
        if opponents is None:
            labels = list(record.get("labels") or record.get("seats") or [])
            opponents = [_playable(labels[s] if s < len(labels) else "greedy")
                         for s in range(num_players) if s != seat]
        undos = record.get("undos", 0)
        undos = undos if isinstance(undos, int) and not isinstance(undos, bool) and undos >= 0 else 0
        session = cls(deal, num_players, team, seat, opponents, seed, hint_spec, actions,
                      deal_seed=record.get("deal_seed"), undos=undos)
        if advance:
            session.advance()  # an unfinished record may stop before an agent's move
        return session

    # --- what the person sees ------------------------------------------------------------
    @property
    def agents(self) -> dict:
        """The agent at each other seat (built on first use)."""
        if self._agents is None:
            n, team, seed = self._state.num_players, self._state.team, self.seed
            self._agents = {s: self._recipe(label).build(seed=None if seed is None else seed * 10 + s)
                            for s, label in enumerate(self.labels) if s != self.seat}
            for s, agent in self._agents.items():
                agent.reset(s, n, team)
        return self._agents

    def _recipe(self, spec: str) -> agents.AgentRecipe:
        if spec not in self._recipes:
            self._recipes[spec] = agents.parse_agent(spec)
        return self._recipes[spec]

    @property
    def view(self) -> PlayerView:
        return PlayerView(self._state, self.seat)

    @property
    def is_over(self) -> bool:
        return self._state.is_over

    @property
    def team(self) -> bool:
        return self._state.team

    def ranking(self) -> list[int]:
        """Each seat's place now (0 = first), from the public minutes and hand sizes."""
        return self._state.ranking().tolist()

    def public_moves(self, step: int | None = None) -> list[dict]:
        """The moves so far (or the first `step`), as the person may see them."""
        return [m.public(self.seat, self.team) for m in self.moves[:step]]

    @property
    def human_to_move(self) -> bool:
        return not self._state.is_over and self._state.current_player == self.seat

    def legal_actions(self) -> list[int]:
        """The person's legal actions now (placements or pass, then shows); [] if not their turn."""
        if not self.human_to_move:
            return []
        return self.view.legal_actions() + self.view.show_actions()

    def view_at(self, step: int) -> PlayerView:
        """The person's view after the first `step` actions (for replays)."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step <= len(self.actions):
            raise ValueError(f"step must be an int in 0..{len(self.actions)}, got {step!r}")
        state = GameState.from_deal(self._state.deal, self._state.num_players, self._state.team)
        for action in self.actions[:step]:
            state.step(action)
        return PlayerView(state, self.seat)

    # --- moves -----------------------------------------------------------------------------
    def play(self, action, replies: Sequence[int] | None = None) -> list[Move]:
        """The person plays `action`; then the agents move until the person's turn or the
        end (or, given `replies`, those are their moves: chosen by the web server's
        workers). Returns the moves made (the person's first). Raises ValueError (and
        changes nothing) for a move out of turn or an illegal one, or replies that do
        not fit."""
        if self._state.is_over:
            raise ValueError("the game is over")
        if not self.human_to_move:
            raise ValueError(f"it is seat {self._state.current_player}'s turn, not yours (seat {self.seat})")
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"an action must be an integer id, got {action!r}")
        if not self._state.is_legal(int(action)):
            raise ValueError(f"{rules.action_text(action, self.team)} is not legal now")
        if replies is not None:
            self._check_replies(replies, int(action))
        first = len(self.moves)
        self._apply(int(action))
        if replies is None:
            self.advance()
        else:
            self.apply_replies(replies)
        return self.moves[first:]

    def advance(self) -> list[Move]:
        """Let the agents move until it is the person's turn or the game is over."""
        first = len(self.moves)
        while not self._state.is_over and self._state.current_player != self.seat:
            seat = self._state.current_player
            agent = self.agents[seat]
            obs = encode(self._state, seat) if getattr(agent, "needs_observation", False) else None
            action = int(agent.act(obs, PlayerView(self._state, seat)))
            self._apply(action)  # an illegal agent move raises here: a bug in that agent
        return self.moves[first:]

    def replies(self, action: int | None = None) -> list[int]:
        """The agents' moves after the person's `action` (None: from now, as in a new game
        the person does not open) until the person's turn or the end, chosen by agents
        built afresh, as a session rebuilt from `data()` chooses them; played on a copy,
        so this game is unchanged (`apply_replies` applies them). Raises what `play`
        raises, or what a broken agent does."""
        trial = copy.copy(self)  # shares the deal and settings; its own state, moves and agents
        trial._state, trial.actions, trial.moves, trial._agents = self._state.clone(), list(self.actions), [], None
        moves = trial.advance() if action is None else trial.play(action)[1:]
        return [m.action for m in moves]

    def agents_answer(self, action: int) -> bool:
        """Whether the agents move after the person's legal `action` (the game goes on)."""
        after = self._state.clone()
        after.step(int(action))
        return not after.is_over and after.current_player != self.seat

    def apply_replies(self, actions: Sequence[int]) -> list[Move]:
        """Apply the agents' moves chosen elsewhere (the web server's workers, which ran
        `advance` on a copy of this game). Raises ValueError, changing nothing, unless
        they are legal and bring the game to the person's turn or its end."""
        self._check_replies(actions)
        first = len(self.moves)
        for action in actions:
            self._apply(int(action))
        return self.moves[first:]

    def _check_replies(self, actions: Sequence[int], mine: int | None = None) -> None:
        trial = self._state.clone()
        if mine is not None:
            trial.step(mine)
        for action in actions:
            if trial.is_over or trial.current_player == self.seat or not trial.is_legal(action):
                raise ValueError(f"the agents' replies {list(actions)} do not fit this game")
            trial.step(action)
        if not trial.is_over and trial.current_player != self.seat:
            raise ValueError(f"the agents' replies {list(actions)} stop before the person's turn")

    def _apply(self, action: int) -> None:
        seat = self._state.current_player
        points = self._state.step(action)
        self.actions.append(action)
        self.moves.append(Move(seat, action, points, self._state.last_breakdown))

    def undo(self) -> int:
        """Take back the person's last move and the agents' replies after it, and deal
        the tiles the person has not seen afresh (the other hands, the bag, the removed
        tiles: `humanplay.redeal`), so the undone move tells nothing hidden. Returns how
        many actions were taken back. Raises ValueError, changing nothing, once the game
        is over (its record shows the whole deal) or when the person has not moved."""
        if self._state.is_over:
            raise ValueError("the game is over: no undo once the whole deal can be seen")
        mine = [i for i, m in enumerate(self.moves) if m.seat == self.seat]
        if not mine:
            raise ValueError("nothing to undo: you have not moved yet")
        keep = mine[-1]
        actions, taken = self.actions[:keep], len(self.actions) - keep
        rng = np.random.default_rng(None if self.seed is None else [self.seed, self.undos])
        n, team = self._state.num_players, self._state.team
        try:
            deal = redeal(self._state.deal, n, team, actions, self.seat, rng)
        except RedealError as exc:
            raise ValueError(f"cannot undo here: {exc}") from None
        self._state, self.actions, self.moves = GameState.from_deal(deal, n, team), [], []
        self.deal_seed, self.undos = None, self.undos + 1  # the deal is no longer the seed's
        for action in actions:
            self._apply(action)
        for seat, agent in (self._agents or {}).items():
            agent.reset(seat, n, team)  # a new deal: nothing an agent kept still holds
        return taken

    # --- hints -----------------------------------------------------------------------------
    def compile_ahead(self) -> None:
        """On a cold numba cache, start compiling the hint agent's and the opponents' search
        parts in the background (side by side, a process per core: `agents.compile_jobs`),
        while the person reads the board; the first hint waits for it. Nothing when cached."""

        checked, found = threading.Event(), threading.Event()

        def compile_parts():
            try:
                jobs = agents.compile_jobs([self.hint_spec, *(l for l in self.labels if l != HUMAN)])
                if jobs:
                    found.set()
            finally:
                checked.set()
            if jobs:  # silent: a line printed from this thread would land on the person's prompt;
                # the terminal says it before a hint waits for it (`compiling`)
                kernel_cache.compile_in_parallel(jobs, "the hint's and opponents' search parts", announce=False)

        self._compile_state = checked, found
        self._compiling = threading.Thread(target=compile_parts, name="compile-ahead", daemon=True)
        self._compiling.start()

    @property
    def compiling(self) -> bool:
        """Whether `compile_ahead`'s background compile is still compiling (a hint waits for
        it); waits for its quick check of the cache first (nothing compiles when it is warm)."""
        if self._compiling is None or not self._compiling.is_alive():
            return False
        checked, found = self._compile_state
        checked.wait(60)
        return found.is_set() and self._compiling.is_alive()

    def hint(self, top: int = HINT_MOVES) -> dict:
        """What the hint agent would play now, and why: its choice and its top moves, each
        with the share of the search's visits and its mean reward when the agent searches,
        and the minutes the move scores now (with their breakdown). Reads only the
        person's view."""
        if not self.human_to_move:
            raise ValueError("a hint is for your turn")
        view = self.view
        if self._compiling is not None:
            self._compiling.join()
            self._compiling = None
        if self._hint_agent is None:
            self._hint_agent = self._recipe(self.hint_spec).build(seed=self.seed)
            self._hint_agent.reset(self.seat, self._state.num_players, self._state.team)
        agent = getattr(self._hint_agent, "guided", None) or self._hint_agent
        legal = view.legal_actions()
        if hasattr(agent, "act_with_visits"):
            choice, visits, values = agent.act_with_visits(view)
            total = max(int(visits.sum()), 1)
            ranked = [a for a in np.argsort(-visits, kind="stable") if visits[a] > 0][:top]
            rows = [{"action": int(a), "share": float(visits[a]) / total, "value": float(values[a] / visits[a])}
                    for a in ranked]
        else:
            obs = encode(self._state, self.seat) if getattr(agent, "needs_observation", False) else None
            choice = int(agent.act(obs, view))
            rows = [{"action": choice, "share": None, "value": None}]
        for row in rows:
            row["move"] = rules.action_text(row["action"])
            if row["action"] < rules.PASS_ACTION:
                points, breakdown = placement_score(view, row["action"])
                row["points"], row["breakdown"] = points, breakdown_text(breakdown, points)
            else:
                row["points"], row["breakdown"] = 0, "no minutes"
        return {"agent": self.hint_spec, "action": int(choice), "move": rules.action_text(int(choice)),
                "moves": rows, "legal": len(legal)}

    def data(self) -> dict:
        """Everything that rebuilds this session (`session_from_data`): the record, the
        seed and the hint agent. The web server stores it and sends it to its workers."""
        return {**self.record(), "seed": self.seed, "hint": self.hint_spec}

    # --- the record --------------------------------------------------------------------------
    def record(self) -> dict:
        """The game as a games.jsonl record (`evaluate.py replay` reads it)."""
        state = self._state
        return {"game": 0, "deal_index": 0, "deal_seed": self.deal_seed, "labels": list(self.labels),
                "seats": list(self.labels), "human_seat": self.seat, "deal": [int(v) for v in state.deal],
                "num_players": state.num_players, "team": state.team, "actions": list(self.actions),
                "scores": state.scores.tolist(), "ranking": state.ranking().tolist(),
                "rewards": state.rewards().tolist() if state.is_over else [], "over": state.is_over,
                "forfeit": None, "forfeit_reason": None, "error": None, "moves": len(self.actions),
                "undos": self.undos}


def session_from_data(data: dict) -> Session:
    """The session `Session.data` describes, at its last action (nothing is replayed by
    the agents; the data was checked when the session was first built)."""
    seat = data["human_seat"]
    opponents = data["labels"][:seat] + data["labels"][seat + 1:]
    return Session(data["deal"], data["num_players"], data["team"], seat, opponents, data["seed"], data["hint"],
                   data["actions"], deal_seed=data.get("deal_seed"), undos=data.get("undos", 0), check=False)


def _playable(label) -> str:
    """A record's seat label as an agent spec, or greedy when it is not one."""
    if not isinstance(label, str) or label == HUMAN:
        return "greedy"
    try:
        agents.check_spec(label)
    except ValueError:
        return "greedy"
    return label
