"""The browser game: `python play.py --web [--host H] [--port 8000]`.

An ASGI app (Starlette) served by uvicorn. One page (``static/``) and a small JSON API.
Each browser gets its own games (a random session cookie); each game has a random id,
and a request naming another game of that browser is refused as stale, a game of another
browser as unknown. Every request is checked before anything changes: bad JSON, a wrong
field, an illegal move or a stale game id gets a 4xx with a one-line reason and leaves
the game as it was. What the page receives is read from the person's `PlayerView` only:
the board (its cells as data, `env.render_svg.board_data`: the page draws it as
`board_svg` would), the person's hand and legal moves, the public scores, hand sizes and
moves. The deal (the bag and the hidden hands) reaches the page
only in the record of a finished game, for replays; after that there is no undo.

The event loop checks requests, applies moves and writes each game to SQLite
(`humanplay.store`) before answering; the fast agents (greedy, random) answer in it, the
searching agents, hints and reviews in a bounded pool of worker processes
(`humanplay.workers`; a full pool answers 503). docs/play.md tells the whole design.

API (JSON; POST bodies are objects):

* ``GET /api/state?game=ID``: the game as the person sees it (no id: the current game,
  a new one if none).
* ``POST /api/new`` ``{"players": 4, "team": true, "seat": 0, "seed": 1}``: a new game
  (all optional, null is left out; by default the server's ``--players`` and ``--team``,
  the team variant only with 4 players).
* ``POST /api/move`` ``{"game": ID, "action": 253}``: the person's move; the reply
  holds the agents' answers (``replies``).
* ``POST /api/undo`` / ``POST /api/hint`` ``{"game": ID}``.
* ``POST /api/load`` ``{"record": {...}}``: a game from a record (terminal, web or
  tournament games.jsonl line).
* ``GET /api/record?game=ID``: the record of a finished game.
* ``GET /api/ready``: 200 ``{"ready": true}`` once the warm-up is complete, else the
  warming-up answer below (no session: a probe for scripts).
* ``GET /api/replay?game=ID&step=K``: a finished game's board after K moves.
* ``POST /api/review`` ``{"game": ID}``: a finished game's review (`humanplay.review`), one
  decision of the person's analysed per call in a worker: the answer says how many
  are done of how many (``done``, ``total``) and, once all are, holds the ``review`` (the
  three costliest moves, the better ones, boards); the page calls again until then.

Answers that involved an agent carry ``Server-Timing: agents;dur=MS``: the agents' own
thinking, so load tests can tell it from the server's overhead.

The server answers at once: the warm-up (`_warm_up`: on a first run numba compiles for a
minute or more) runs in the background, the opponents first, then the hint agent. Until
games can be played the page loads and every ``/api/`` request gets ``503`` with
``Retry-After: 1`` and ``{"warming_up": true, "seconds": N, "error": "warming up ..."}``
(the page shows it and asks again); after that, so do hints and reviews until their
agents are warm. A warm-up that failed gets ``500`` with ``{"warm_up_failed": true,
"error": ...}`` and is in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import secrets
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from engine import GameState, random_deal, rules
from env import render_svg

from . import workers
from .session import DEFAULT_HINT, Session, save_record, session_from_data
from .store import Store

STATIC = Path(__file__).parent / "static"
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
MAX_BODY = 1 << 20  # bytes; a game record is a few KiB
MAX_CACHED = 1024  # sessions kept in memory (all of them are in the database too)
DAY = 86400.0  # seconds
PRUNE_EVERY = 3600.0  # seconds between prunes of the database (and one at the start)
PROGRESS_EVERY = 15.0  # seconds between the warm-up's progress lines
COOKIE = "play247"
log = logging.getLogger("humanplay.web")
# seconds the agents thought for the request being answered (each request runs in its own task)
AGENT_SECONDS: contextvars.ContextVar[list] = contextvars.ContextVar("agent_seconds")


class ApiError(Exception):
    """A refused request: HTTP status and a one-line reason; nothing was changed."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Settings:
    """What new games are made of (from play.py's flags), and where they are kept."""

    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    players: int = 2
    team: bool = False
    seat: int = 0
    seed: int | None = None
    hint: str = DEFAULT_HINT
    save_dir: Path = Path("played")
    record: dict | None = None  # a record the first game of every browser opens
    db: Path | None = None  # the SQLite file of every game (default save_dir / "games.sqlite3")
    workers: int = 2  # processes of the pool that runs searching agents, hints and reviews
    queue: int = 64  # jobs the pool holds (running + waiting) before it answers 503
    job_timeout: float = 120.0  # seconds an agent's job may take
    imports: tuple[str, ...] = ()  # modules the workers import (agents registered outside `agents`)
    prune_after_days: float = 30.0  # finished games older than this leave the database (0: keep all)

    @property
    def db_path(self) -> Path:
        return self.db if self.db is not None else Path(self.save_dir) / "games.sqlite3"


@dataclass
class Game:
    """One game in memory: the session and what the page shows besides it."""

    id: str
    sid: str
    session: Session
    replies: list = field(default_factory=list)  # the agents' last answers, to mark on the board
    saved: str | None = None
    review: list = field(default_factory=list)  # the decisions of the review analysed so far (Decision dicts)

    def data(self) -> dict:
        return {**self.session.data(), "replies": self.replies, "saved": self.saved, "review": self.review}


class Games:
    """Every browser's games: SQLite for keeps, an LRU of sessions for speed, the worker
    pool for the searching agents, hints and reviews. The request handlers hold the
    browser's lock around each call, so the requests of one browser never interleave."""

    def __init__(self, settings: Settings, store: Store, pool: workers.Pool):
        self.settings, self.store, self.pool = settings, store, pool
        self._cache: OrderedDict[str, Game] = OrderedDict()
        self._seeds = 0

    def next_seed(self) -> int | None:
        """Each new game a fresh deal: the settings' seed, then seed + 1, ..."""
        n, self._seeds = self._seeds, self._seeds + 1
        return None if self.settings.seed is None else self.settings.seed + n

    # --- games in memory and on disk --------------------------------------------------------
    def _get(self, game_id: str) -> Game | None:
        game = self._cache.get(game_id)
        if game is None:
            data = self.store.load(game_id)
            if data is None:
                return None
            game = Game(game_id, self.store.game_owner(game_id), session_from_data(data), data["replies"],
                        data["saved"], data.get("review") or [])
            self._remember(game)
        self._cache.move_to_end(game_id)
        return game

    def _remember(self, game: Game) -> None:
        self._cache[game.id] = game
        self._cache.move_to_end(game.id)
        while len(self._cache) > MAX_CACHED:
            self._cache.popitem(last=False)  # it is in the database: nothing is lost

    def _commit(self, game: Game) -> None:
        """Save the finished game's record file, then write the game to the database."""
        if game.session.is_over and game.saved is None:
            path = Path(self.settings.save_dir) / f"game-{time.strftime('%Y%m%d-%H%M%S')}-{game.id}.jsonl"
            game.saved = str(save_record(game.session.record(), path))
        self.store.save(game.sid, game.id, game.data())
        self._remember(game)

    def prune(self) -> int:
        """Delete the finished games older than the settings' age (`Store.prune`); the
        number deleted."""
        days = self.settings.prune_after_days
        if not days:
            return 0
        gone = self.store.prune(days * DAY)
        for game_id in gone:
            self._cache.pop(game_id, None)
        return len(gone)

    def current(self, sid: str, game_id) -> Game:
        """The browser's game named `game_id`; 404 for an unknown id (or another
        browser's), 409 for one of its earlier games."""
        if not isinstance(game_id, str):
            raise ApiError(HTTPStatus.BAD_REQUEST, f"'game' must be the game id string, got {game_id!r}")
        if game_id != self.store.current_game(sid):
            if self.store.game_owner(game_id) == sid:
                raise ApiError(HTTPStatus.CONFLICT, "stale game id: this browser has started another game")
            raise ApiError(HTTPStatus.NOT_FOUND, f"unknown game id {game_id[:40]!r}")
        return self._get(game_id)

    # --- agents: the fast ones here, the others in the worker pool ---------------------------
    async def _think(self, fn, *args):
        result, seconds = await self.pool.run(fn, *args)
        AGENT_SECONDS.get([0.0])[0] += seconds
        return result

    async def _replies(self, session: Session, action: int | None = None) -> list[int]:
        """The agents' moves after the person's `action` (None: before the person's first
        move): fast agents answer here (well under a millisecond: no pipe, no rebuild),
        the others in a worker; both the same way (`Session.replies`)."""
        if not workers.is_fast([label for s, label in enumerate(session.labels) if s != session.seat]):
            return await self._think(workers.replies_job, session.data(), action)
        start = time.perf_counter()
        replies = session.replies(action)
        AGENT_SECONDS.get([0.0])[0] += time.perf_counter() - start
        return replies

    # --- actions ---------------------------------------------------------------------------
    async def new_game(self, sid: str, body: dict) -> dict:
        s = self.settings
        players = _int_field(body, "players", s.players, 2, 4)
        team = _team_field(body, s.team and players == rules.TEAM_PLAYERS, players)
        seat = _int_field(body, "seat", s.seat if s.seat < players else 0, 0, players - 1)
        seed = _int_field(body, "seed", None, 0, 2**63 - 1)
        seed = self.next_seed() if seed is None else seed
        try:
            session = Session(random_deal(seed), players, team, seat, s.opponents, seed, s.hint, deal_seed=seed)
        except ValueError as exc:
            raise ApiError(HTTPStatus.BAD_REQUEST, str(exc)) from None
        return await self._start(sid, session)

    async def load_game(self, sid: str, record) -> dict:
        s = self.settings
        try:
            session = Session.from_record(record, None, None, s.seed, s.hint, advance=False)
        except (ValueError, TypeError) as exc:
            raise ApiError(HTTPStatus.BAD_REQUEST, f"bad game record: {exc}") from None
        return await self._start(sid, session)

    async def _start(self, sid: str, session: Session) -> dict:
        if not session.is_over and not session.human_to_move:  # the agents move first
            session.apply_replies(await self._replies(session))
        game = Game(secrets.token_urlsafe(8), sid, session)
        self._commit(game)
        return self.state(game)

    async def move(self, sid: str, body: dict) -> dict:
        game = self.current(sid, body.get("game"))
        session = game.session
        action = body.get("action")
        if isinstance(action, bool) or not isinstance(action, int):
            raise ApiError(HTTPStatus.BAD_REQUEST, f"'action' must be an integer action id, got {action!r}")
        if not session.human_to_move:
            raise ApiError(HTTPStatus.CONFLICT, "the game is over" if session.is_over else "it is not your turn")
        if action not in session.legal_actions():
            raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY,
                           f"illegal move: {rules.action_text(action, session.team)} is not legal now")
        replies = []
        if session.agents_answer(action):
            replies = await self._replies(session, action)
        moves = session.play(action, replies)
        game.replies = [m.public(session.seat, session.team) for m in moves[1:]]
        self._commit(game)
        return self.state(game)

    async def undo(self, sid: str, body: dict) -> dict:
        game = self.current(sid, body.get("game"))
        try:
            game.session.undo()
        except ValueError as exc:
            raise ApiError(HTTPStatus.CONFLICT, str(exc)) from None
        game.replies, game.saved = [], None
        self._commit(game)
        return self.state(game)

    async def hint(self, sid: str, body: dict) -> dict:
        game = self.current(sid, body.get("game"))
        if not game.session.human_to_move:
            raise ApiError(HTTPStatus.CONFLICT, "a hint is for your turn")
        return await self._think(workers.hint_job, game.session.data())

    async def review(self, sid: str, body: dict) -> dict:
        """Analyse the next decision of the person's review in a slow worker; once all are
        done, the review itself (module doc)."""
        from evaluation.analysis import Decision

        from .review import build_review, review_steps

        game = self.current(sid, body.get("game"))
        session = game.session
        if not session.is_over:
            raise ApiError(HTTPStatus.CONFLICT, "a review is for a finished game")
        record = session.record()
        steps = review_steps(record, session.seat)
        if len(game.review) < len(steps):
            game.review.append(await self._think(workers.review_job, record, session.seat, steps[len(game.review)]))
            self._commit(game)
        out = {"game": game.id, "done": len(game.review), "total": len(steps), "review": None}
        if len(game.review) == len(steps):
            decisions = [Decision.from_dict(d) for d in game.review]
            out["review"] = build_review(record, session.seat, decisions)
        return out

    def record(self, sid: str, game_id) -> dict:
        session = self.current(sid, game_id).session
        if not session.is_over:
            raise ApiError(HTTPStatus.CONFLICT, "the record (with the deal) is given once the game is over")
        return session.record()

    def replay(self, sid: str, game_id, step) -> dict:
        game = self.current(sid, game_id)
        session = game.session
        if not session.is_over:
            raise ApiError(HTTPStatus.CONFLICT, "replays are of finished games")
        try:
            step = int(step)
            view = session.view_at(step)
        except (TypeError, ValueError):
            raise ApiError(HTTPStatus.BAD_REQUEST,
                           f"'step' must be an integer in 0..{len(session.actions)}, got {step!r}") from None
        moves = session.public_moves(step)
        return view_state(view, session, moves, moves[-1:], game.id, step=step)

    async def state_of(self, sid: str, game_id) -> dict:
        """The named game; without a name the current one (a new one if there is none)."""
        if game_id is None:
            current = self.store.current_game(sid)
            if current is None:
                if self.settings.record is not None:
                    return await self.load_game(sid, self.settings.record)
                return await self.new_game(sid, {})
            return self.state(self._get(current))
        return self.state(self.current(sid, game_id))

    def state(self, game: Game) -> dict:
        session = game.session
        out = view_state(session.view, session, session.public_moves(), game.replies, game.id)
        out["saved"] = game.saved
        return out


def view_state(view, session: Session, moves: list[dict], replies: list[dict], game_id: str,
               step: int | None = None) -> dict:
    """Everything the page shows, from the person's `view` (a PlayerView) only."""
    marks = [(m["action"], f"P{m['seat']}") for m in replies
             if m["action"] is not None and m["action"] < rules.PASS_ACTION]
    legal = session.legal_actions() if step is None else []
    cells: dict[int, list[int]] = {}
    for action in legal:
        if action < rules.PASS_ACTION:
            cell, value = rules.decode_action(action)
            cells.setdefault(cell, []).append(value)
    over = bool(view.is_over)
    return {
        "game": game_id, "seat": view.seat, "players": view.num_players, "team": view.team,
        "labels": list(session.labels), "turn": view.turn, "current": view.current_player, "over": over,
        "your_turn": bool(legal), "scores": [int(x) for x in view.scores],
        "hand_sizes": [int(x) for x in view.hand_sizes], "bag": view.bag_size,
        "hand": [v + 1 for v, count in enumerate(view.hand.tolist()) for _ in range(count)],
        "partner_shows": view.partner_shown, "legal": {str(c): v for c, v in cells.items()},
        "can_pass": rules.PASS_ACTION in legal, "shows": [a - rules.SHOW_BASE + 1 for a in legal if a >= rules.SHOW_BASE],
        "moves": moves, "replies": replies, "board": render_svg.board_data(view, marks),
        "ranking": session.ranking() if over and step is None else None,
        "step": step, "steps": len(session.actions),
    }


def _warm_page(settings: Settings, specs: tuple[str, ...]) -> None:
    """Do once what a browser's first game does in this process (the agents `specs` as a
    worker runs them, deal, draw the page, check a move), so its imports and numba kernels
    load (on a cold cache: compile, and land in the cache the workers then read) before
    the first browser."""
    _warm_agents(specs)  # what each worker does, first here
    session = Session(random_deal(0), settings.players, settings.team, 0, settings.opponents, 0, settings.hint)
    view_state(session.view, session, session.public_moves(), [], "warm-up")
    session.agents_answer(session.legal_actions()[0])
    session.data()  # what `Games._commit` stores (the ranking)
    state = GameState.from_deal(random_deal(0), 2)  # and a finished game: its page, record and replay
    actions = []
    while not state.is_over:
        actions.append(state.legal_actions()[0])
        state.step(actions[-1])
    done = Session(random_deal(0), 2, False, 0, ["greedy"], 0, "greedy", actions, check=False)
    view_state(done.view, done, done.public_moves(), [], "warm-up")
    view_state(done.view_at(1), done, done.public_moves(1), [], "warm-up", step=1)
    done.data()


def _warm_agents(specs: tuple[str, ...]) -> None:
    """Load (on a cold cache: compile) the kernels of the agents `specs` in this process."""
    workers.warm_job(specs)


@dataclass
class WarmUp:
    """Where the warm-up stands (`_warm_up`): until it is `ready` (games can be played)
    the API answers 'warming up' (`not_ready_answer`); until it is `complete` so do the
    requests for the agents warmed last (hints, reviews); `error` names why it failed,
    if it did."""

    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    complete: bool = False
    error: str | None = None

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def done(self) -> bool:
        return self.complete or self.error is not None


WARMING_RETRY_AFTER = 1  # seconds a client waits before asking again during the warm-up


def not_ready_answer(warm: WarmUp, what: str = "the engine") -> tuple[dict, HTTPStatus, dict]:
    """The API's answer (payload, status, headers) to a request for `what` while the
    warm-up runs (503, Retry-After) or after it failed (500)."""
    headers = {"Cache-Control": "no-store"}
    if warm.error is not None:
        return ({"error": f"the warm-up failed, so {what} cannot answer: {warm.error} "
                          f"(the server's log has the details)", "warm_up_failed": True},
                HTTPStatus.INTERNAL_SERVER_ERROR, headers)
    seconds = int(warm.seconds)
    headers["Retry-After"] = str(WARMING_RETRY_AFTER)
    return ({"error": f"warming up {what} (first run only): {seconds} s so far; try again shortly",
             "warming_up": True, "seconds": seconds}, HTTPStatus.SERVICE_UNAVAILABLE, headers)


async def _in_daemon_thread(fn, *args):
    """`fn(*args)` in a daemon thread, awaited. Unlike `asyncio.to_thread`, a Ctrl-C in the
    middle does not wait for it: the process exits and the thread with it (a warm-up
    compiling for a minute is not worth finishing)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok: bool, value) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        try:
            outcome = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 (handed to the awaiting task)
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, daemon=True, name="play247-warm-up").start()
    return await future


def warm_up_plan(settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What is warmed first, so that a game can start: the opponents here (the fast ones
    answer here), and the pool's workers with the searching ones; then the hint agent
    (the pool's: hints, reviews; compiled here, so a worker started with the opponents
    loads it from the cache at its first hint)."""
    first = tuple(dict.fromkeys(settings.opponents))
    searching = tuple(spec for spec in first if not workers.is_fast([spec]))
    last = () if settings.hint in first else (settings.hint,)
    return first, searching, last


async def _warm_up(settings: Settings, pool: workers.Pool, say, warm: WarmUp) -> None:
    """Get everything a game needs ready (`_warm_page` here with the opponents, then the
    worker pool if an opponent searches, each worker warmed with its agents): `warm` is
    then `ready`; then the same for the hint agent (`warm_up_plan`): `warm` is `complete`.
    Tells `say` how it goes every `PROGRESS_EVERY` seconds; a failure is logged and kept
    in `warm.error`, never raised."""
    say("warming up the engine and agents in the background (a first run compiles numba kernels: a minute "
        "or more; later runs: seconds); the page says so meanwhile...")
    first, searching, last = warm_up_plan(settings)

    async def tick():
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            say(f"  still warming up ({warm.seconds:.0f} s)...")

    ticker = asyncio.create_task(tick())
    try:
        if searching:  # the workers import meanwhile; they warm up after this process
            pool.spawn()
        # in this process first, alone: the workers then load its kernels from the cache
        await _in_daemon_thread(_warm_page, settings, first)
        if searching:
            await pool.start(searching)
        warm.ready = True
        say(f"warm for games ({warm.seconds:.0f} s): games can be played; warming up hints and reviews...")
        await _in_daemon_thread(_warm_agents, last)
        if not pool.started:
            await pool.start(last or first)
    except Exception as exc:  # noqa: BLE001 (reported on the page and in the log; the server goes on answering)
        warm.error = f"{type(exc).__name__}: {exc}"
        log.exception("the warm-up failed after %.0f s", warm.seconds)
        say(f"the warm-up failed after {warm.seconds:.0f} s: {warm.error}; "
            f"{'no hint or review can be given' if warm.ready else 'no game can be played'} "
            f"(the page says so; the traceback is in the log)")
        return
    finally:
        ticker.cancel()
    warm.complete = True
    say(f"warm ({warm.seconds:.0f} s): games and hints can be played")


def _int_field(body: dict, name: str, default, low: int, high: int):
    """The integer `name` of the body, `default` when it is left out (or null)."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(HTTPStatus.BAD_REQUEST, f"'{name}' must be an integer in {low}..{high}, got {value!r}")
    return value


def _team_field(body: dict, default: bool, players: int) -> bool:
    """The body's 'team' (true or false, `default` when left out or null); the team
    variant is for 4 players only."""
    team = body.get("team")
    if team is None:
        return default
    if not isinstance(team, bool):
        raise ApiError(HTTPStatus.BAD_REQUEST, f"'team' must be true or false, got {team!r}")
    if team and players != rules.TEAM_PLAYERS:
        raise ApiError(HTTPStatus.BAD_REQUEST,
                       f"the team variant is for {rules.TEAM_PLAYERS} players (seats 0+2 against 1+3), "
                       f"got 'players': {players}")
    return team


# --- HTTP ---------------------------------------------------------------------------------------
class Locks:
    """One asyncio lock per browser, dropped when nobody holds or waits for it."""

    def __init__(self):
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, sid: str):
        lock, users = self._locks.get(sid, (None, 0))
        lock = lock or asyncio.Lock()
        self._locks[sid] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[sid]
            if users == 1:
                del self._locks[sid]
            else:
                self._locks[sid] = (lock, users - 1)


async def read_body(request: Request) -> dict:
    """The request's JSON object, read at most MAX_BODY bytes far."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        if not length.isdigit():
            raise ApiError(HTTPStatus.BAD_REQUEST, f"bad Content-Length {length[:20]!r}")
        raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes")
    try:
        body = json.loads(bytes(raw) or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(HTTPStatus.BAD_REQUEST, f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(HTTPStatus.BAD_REQUEST, f"the body must be a JSON object, got {type(body).__name__}")
    return body


async def _prune_every(games: Games, seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            if n := games.prune():
                log.info("pruned %d finished games older than %g days", n, games.settings.prune_after_days)
        except Exception:  # noqa: BLE001 (a failed prune must not stop the server; the next one retries)
            log.exception("pruning the games database failed")


def make_app(settings: Settings, say=None) -> Starlette:
    """The game as an ASGI app. Its lifespan opens the database (pruning old finished
    games), starts the warm-up of the engine and the worker pool in the background
    (`_warm_up`, its progress told to `say`, e.g. print; default the log) and answers at
    once; at the end it stops the warm-up if it still runs and closes them. The app's
    ``state.warm_up`` (a `WarmUp`) tells how the warm-up stands."""
    say = say or log.info
    state: dict = {}
    locks = Locks()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        store = Store(settings.db_path)
        pool = workers.Pool(settings.workers, settings.queue, settings.job_timeout, imports=settings.imports)
        games = Games(settings, store, pool)
        warm = app.state.warm_up = WarmUp()
        tasks: list[asyncio.Task] = []
        try:
            if games.prune():
                say(f"pruned the finished games older than {settings.prune_after_days:g} days")
            state["games"] = games
            tasks += [asyncio.create_task(_warm_up(settings, pool, say, warm)),
                      asyncio.create_task(_prune_every(games, PRUNE_EVERY))]
            yield
        finally:
            for task in tasks:  # a warm-up still running stops here (Ctrl-C in the middle of it)
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            pool.close()
            store.close()

    def api(handler, method: str):
        async def endpoint(request: Request) -> Response:
            warm: WarmUp = request.app.state.warm_up
            if not warm.ready:  # asked during the warm-up (or after it failed)
                payload, status, headers = not_ready_answer(warm)
                return JSONResponse(payload, status_code=status, headers=headers)
            games: Games = state["games"]
            sid = request.cookies.get(COOKIE)
            if not (isinstance(sid, str) and 0 < len(sid) <= 64 and games.store.has_browser(sid)):
                sid = secrets.token_urlsafe(16)
                games.store.add_browser(sid)
            headers = {"Cache-Control": "no-store",
                       "Set-Cookie": f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict"}
            try:
                body = await read_body(request) if method == "POST" else None
                async with locks.hold(sid):  # one request at a time per browser: moves never interleave
                    thought = [0.0]
                    AGENT_SECONDS.set(thought)
                    payload = await handler(games, sid, request, body)
                    if thought[0]:
                        headers["Server-Timing"] = f"agents;dur={thought[0] * 1000:.1f}"
                status = HTTPStatus.OK
            except ApiError as exc:
                payload, status = {"error": str(exc)}, exc.status
            except workers.NotStarted:  # the pool still warms up (hints, reviews): ask again
                payload, status, more = not_ready_answer(warm, "hints and reviews")
                headers.update(more)
            except workers.Saturated as exc:
                payload, status = {"error": str(exc)}, HTTPStatus.SERVICE_UNAVAILABLE
                headers["Retry-After"] = str(exc.retry_after)
            except TimeoutError:
                payload, status = {"error": "the agents took too long to answer"}, HTTPStatus.GATEWAY_TIMEOUT
            except workers.JobError as exc:  # an agent's bug, reported by its worker
                log.error("agent error in %s %s: %s", request.method, request.url.path, exc)
                payload, status = {"error": f"internal error: {exc}"}, HTTPStatus.INTERNAL_SERVER_ERROR
            except Exception as exc:  # noqa: BLE001 (a bug, e.g. an agent's illegal reply: answer, don't drop the connection)
                log.exception("error in %s %s", request.method, request.url.path)
                payload = {"error": f"internal error: {type(exc).__name__}: {exc}"}
                status = HTTPStatus.INTERNAL_SERVER_ERROR
            return JSONResponse(payload, status_code=status, headers=headers)

        return Route(f"/api/{handler.__name__.strip('_')}", endpoint, methods=[method])

    async def state_(games, sid, request, body):
        return await games.state_of(sid, request.query_params.get("game"))

    async def record(games, sid, request, body):
        return games.record(sid, request.query_params.get("game"))

    async def replay(games, sid, request, body):
        return games.replay(sid, request.query_params.get("game"), request.query_params.get("step"))

    async def new(games, sid, request, body):
        return await games.new_game(sid, body)

    async def move(games, sid, request, body):
        return await games.move(sid, body)

    async def undo(games, sid, request, body):
        return await games.undo(sid, body)

    def hints_warm(request: Request) -> None:
        """Hints and reviews wait for the whole warm-up (their agent may share the
        opponents' pool, whose workers would otherwise compile it a second time)."""
        if not request.app.state.warm_up.complete:
            raise workers.NotStarted("hints and reviews")

    async def hint(games, sid, request, body):
        hints_warm(request)
        return await games.hint(sid, body)

    async def load(games, sid, request, body):
        return await games.load_game(sid, body.get("record"))

    async def review(games, sid, request, body):
        hints_warm(request)
        return await games.review(sid, body)

    page_html = _page()

    async def page(request: Request) -> Response:
        return Response(page_html, media_type=STATIC_TYPES[".html"], headers={"Cache-Control": "no-store"})

    async def ready(request: Request) -> Response:
        """200 once the warm-up is complete (games, hints, reviews), else the warming-up
        answer: a probe for scripts, with no session."""
        warm: WarmUp = request.app.state.warm_up
        if warm.complete:
            return JSONResponse({"ready": True, "seconds": int(warm.seconds)}, headers={"Cache-Control": "no-store"})
        payload, status, headers = not_ready_answer(warm, "the engine" if not warm.ready else "hints and reviews")
        return JSONResponse(payload, status_code=status, headers=headers)

    async def static(request: Request) -> Response:
        if request.path_params["name"] == "index.html":  # the page, with its board style filled in
            return await page(request)
        return _static(request.path_params["name"])

    async def favicon(request: Request) -> Response:  # the page links it; a JSON answer's tab asks here
        return _static("favicon.svg")

    async def not_found(request: Request, exc) -> Response:
        # answered without a session: a stray request (a favicon) must not replace the cookie
        return JSONResponse({"error": f"no such endpoint: {request.method} {request.url.path[:100]}"},
                            status_code=exc.status_code if exc.status_code in (404, 405) else 404)

    routes = [api(state_, "GET"), api(record, "GET"), api(replay, "GET"), api(new, "POST"), api(move, "POST"),
              api(undo, "POST"), api(hint, "POST"), api(load, "POST"), api(review, "POST"),
              Route("/api/ready", ready), Route("/", page), Route("/index.html", page),
              Route("/static/{name:path}", static), Route("/favicon.ico", favicon)]
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found})


def _page() -> bytes:
    """The page, with the board's sizes and colours (`render_svg.page_style`) in it: its
    script draws each board the server describes (`render_svg.board_data`) as
    `render_svg.board_svg` would."""
    style = json.dumps(render_svg.page_style()).replace("</", "<\\/")
    return (STATIC / "index.html").read_text(encoding="utf-8").replace("BOARD_STYLE", style, 1).encode()


def _static(name: str) -> Response:
    path = (STATIC / name).resolve()
    if path.parent != STATIC.resolve() or path.suffix not in STATIC_TYPES or not path.is_file():
        return Response(b"not found", status_code=404, media_type="text/plain; charset=utf-8")
    return FileResponse(path, media_type=STATIC_TYPES[path.suffix], headers={"Cache-Control": "no-store"})


# --- serving ---------------------------------------------------------------------------------------
MAX_HEAD = 64 * 1024  # bytes of a request's line and headers


def http_protocol() -> type:
    """uvicorn's httptools protocol with a bound on the request head, which httptools
    lacks (it buffers a header of any size): a head still unfinished after MAX_HEAD bytes
    gets a 400 and the connection closes. httptools spends 0.2-0.3 ms less of the event
    loop's CPU a request than h11, uvicorn's bounded parser (benchmarks/RESULTS.md,
    2026-12-06 and 2026-12-07); `tests/test_play_web_server.py` pins the bound, so a
    uvicorn whose protocol class changed fails there."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHead(HttpToolsProtocol):
        _in_head = False  # between a request's first byte and the end of its headers
        _head_bytes = 0

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes = True, 0

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            if self.transport.is_closing():
                return
            super().data_received(data)  # parses what came (at most one read, a bounded size)
            if self._in_head:
                self._head_bytes += len(data)
                if self._head_bytes > MAX_HEAD and not self.transport.is_closing():
                    self.send_400_response(f"the request line and headers are over {MAX_HEAD} bytes")

    return BoundedHead


def uvicorn_config(settings: Settings, host: str = "127.0.0.1", port: int = 8000, verbose: bool = False,
                   say=None):
    import uvicorn

    return uvicorn.Config(make_app(settings, say), host=host, port=port, log_level="info" if verbose else "warning",
                          access_log=verbose, backlog=2048, limit_concurrency=2048, timeout_keep_alive=30,
                          lifespan="on", http=http_protocol())


def _server(config, ready=None):
    """A uvicorn server that calls `ready()` once it answers: after the app's lifespan
    start (at once: the warm-up goes on in the background) and once its sockets listen."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)
            if self.started and ready is not None:
                ready()

    return Server(config)


def bind(host: str = "127.0.0.1", port: int = 8000) -> socket.socket:
    """A listening-ready socket on (host, port) (port 0: any free one). Raises OSError
    when the address is taken or not this machine's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, verbose: bool = False,
          sock: socket.socket | None = None, say=print) -> None:
    """Serve until Ctrl-C or SIGTERM (uvicorn), on `sock` if given (see `bind`). `say`
    gets 'serving 24/7 on URL' once the page answers (at once), and the warm-up's
    progress, which ends in 'warm (N s): games can be played'."""
    sock = sock or bind(host, port)
    address, port = sock.getsockname()[:2]
    url = f"http://{f'[{address}]' if ':' in address else address}:{port}/"
    ready = (lambda: say(f"serving 24/7 on {url} (games kept in {settings.db_path}; Ctrl-C stops)"))
    try:
        _server(uvicorn_config(settings, host, port, verbose, say), ready).run(sockets=[sock])
    finally:
        sock.close()


class ServerThread:
    """The app served by uvicorn in a thread of this process, on a free port (tests and
    benchmarks): ``with ServerThread(settings) as srv: srv.url``. Entering waits until the
    warm-up is done too (RuntimeError if it failed), unless `wait_warm` is False."""

    def __init__(self, settings: Settings, host: str = "127.0.0.1", wait_warm: bool = True):
        import uvicorn

        self.wait_warm = wait_warm
        self._sock = bind(host, 0)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.server = uvicorn.Server(uvicorn_config(settings, host, self.port))
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def warm_up(self) -> WarmUp | None:
        """How the app's warm-up stands (None before its lifespan started)."""
        return getattr(self.server.config.app.state, "warm_up", None)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        deadline = time.monotonic() + workers.STARTUP_TIMEOUT
        while self.wait_warm and not self.warm_up.done:
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"the web server's warm-up took over {workers.STARTUP_TIMEOUT:.0f} s")
            time.sleep(0.02)
        if self.wait_warm and self.warm_up.error is not None:
            self.__exit__()
            raise RuntimeError(f"the web server's warm-up failed: {self.warm_up.error}")
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
