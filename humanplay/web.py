"""The browser game: `python play.py --web [--port 8000]`, standard library only.

One page (``static/``) and a small JSON API. Each browser gets its own games (a random
session cookie); each game has a random id, and a request naming any other game of that
browser is refused as stale. Every request is checked before anything changes: bad JSON,
a wrong field, an illegal move or a stale game id gets a 4xx with a one-line reason and
leaves the game as it was. What the page receives is read from the person's
`PlayerView` only: the board drawn by `env.render_svg`, the person's hand and legal moves,
the public scores, hand sizes and moves. The deal (the bag and the hidden hands) reaches
the page only in the record of a finished game, for replays.

API (JSON; POST bodies are objects):

* ``GET /api/state?game=ID``: the game as the person sees it (no id: the current game,
  a new one if none).
* ``POST /api/new`` ``{"players": 2, "seat": 0, "seed": 1}``: a new game (all optional).
* ``POST /api/move`` ``{"game": ID, "action": 253}``: the person's move; the reply
  holds the agents' answers (``replies``).
* ``POST /api/undo`` / ``POST /api/hint`` ``{"game": ID}``.
* ``POST /api/load`` ``{"record": {...}}``: a game from a record (terminal, web or
  tournament games.jsonl line).
* ``GET /api/record?game=ID``: the record of a finished game.
* ``GET /api/replay?game=ID&step=K``: a finished game's board after K moves.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from engine import rules
from env import render_svg

from .session import DEFAULT_HINT, Session, describe_action, save_record

STATIC = Path(__file__).parent / "static"
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8"}
MAX_BODY = 1 << 20  # bytes; a game record is a few KiB
MAX_BROWSERS = 64  # browser sessions kept in memory; the least recently used goes first
REQUEST_TIMEOUT = 30  # seconds a client may take to send its request
COOKIE = "play247"


class ApiError(Exception):
    """A refused request: HTTP status and a one-line reason; nothing was changed."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Settings:
    """What new games are made of (from play.py's flags)."""

    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    players: int = 2
    team: bool = False
    seat: int = 0
    seed: int | None = None
    hint: str = DEFAULT_HINT
    save_dir: Path = Path("played")
    record: dict | None = None  # a record the first game of every browser opens


@dataclass
class Browser:
    """One browser's games: the current one and the ids of its earlier ones."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    game_id: str | None = None
    session: Session | None = None
    old_ids: set = field(default_factory=set)
    replies: list = field(default_factory=list)  # the agents' last answers, to mark on the board
    saved: str | None = None


class Games:
    """Every browser's games, by session cookie (bounded, least recently used dropped)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._browsers: OrderedDict[str, Browser] = OrderedDict()
        self._lock = threading.Lock()
        self._seeds = 0

    def browser(self, sid: str | None) -> tuple[str, Browser]:
        with self._lock:
            if sid is None or sid not in self._browsers:
                sid = secrets.token_urlsafe(16)
                self._browsers[sid] = Browser()
                while len(self._browsers) > MAX_BROWSERS:
                    self._browsers.popitem(last=False)
            self._browsers.move_to_end(sid)
            return sid, self._browsers[sid]

    def next_seed(self) -> int | None:
        """Each new game a fresh deal: the settings' seed, then seed + 1, ..."""
        with self._lock:
            n, self._seeds = self._seeds, self._seeds + 1
        return None if self.settings.seed is None else self.settings.seed + n

    # --- actions (the caller holds the browser's lock) ---------------------------------------
    def new_game(self, browser: Browser, body: dict) -> dict:
        s = self.settings
        players = _int_field(body, "players", s.players, 2, 4)
        seat = _int_field(body, "seat", s.seat if s.seat < players else 0, 0, players - 1)
        seed = _int_field(body, "seed", None, 0, 2**63 - 1)
        team = s.team and players == rules.TEAM_PLAYERS
        try:
            session = Session.new(s.opponents, players, team, seat, self.next_seed() if seed is None else seed,
                                  s.hint)
        except ValueError as exc:
            raise ApiError(HTTPStatus.BAD_REQUEST, str(exc)) from None
        return self._start(browser, session)

    def load_game(self, browser: Browser, record) -> dict:
        s = self.settings
        try:
            session = Session.from_record(record, None, None, s.seed, s.hint)
        except (ValueError, TypeError) as exc:
            raise ApiError(HTTPStatus.BAD_REQUEST, f"bad game record: {exc}") from None
        return self._start(browser, session)

    def _start(self, browser: Browser, session: Session) -> dict:
        if browser.game_id is not None:
            browser.old_ids.add(browser.game_id)
        browser.game_id, browser.session = secrets.token_urlsafe(8), session
        browser.replies, browser.saved = [], None
        self._save_if_over(browser)
        return self.state(browser)

    def current(self, browser: Browser, game) -> Session:
        """The browser's game named `game`; 404 for an unknown id, 409 for a stale one."""
        if not isinstance(game, str):
            raise ApiError(HTTPStatus.BAD_REQUEST, f"'game' must be the game id string, got {game!r}")
        if game != browser.game_id:
            if game in browser.old_ids:
                raise ApiError(HTTPStatus.CONFLICT, "stale game id: this browser has started another game")
            raise ApiError(HTTPStatus.NOT_FOUND, f"unknown game id {game!r}")
        return browser.session

    def move(self, browser: Browser, body: dict) -> dict:
        session = self.current(browser, body.get("game"))
        action = body.get("action")
        if isinstance(action, bool) or not isinstance(action, int):
            raise ApiError(HTTPStatus.BAD_REQUEST, f"'action' must be an integer action id, got {action!r}")
        if not session.human_to_move:
            raise ApiError(HTTPStatus.CONFLICT, "the game is over" if session.is_over else "it is not your turn")
        if action not in session.legal_actions():
            raise ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, f"illegal move: {_action_text(action)} is not legal now")
        moves = session.play(action)
        browser.replies = [m.public(session.seat, session.team) for m in moves[1:]]
        self._save_if_over(browser)
        return self.state(browser)

    def undo(self, browser: Browser, body: dict) -> dict:
        session = self.current(browser, body.get("game"))
        try:
            session.undo()
        except ValueError as exc:
            raise ApiError(HTTPStatus.CONFLICT, str(exc)) from None
        browser.replies, browser.saved = [], None
        return self.state(browser)

    def hint(self, browser: Browser, body: dict) -> dict:
        session = self.current(browser, body.get("game"))
        if not session.human_to_move:
            raise ApiError(HTTPStatus.CONFLICT, "a hint is for your turn")
        return session.hint()

    def record(self, browser: Browser, game) -> dict:
        session = self.current(browser, game)
        if not session.is_over:
            raise ApiError(HTTPStatus.CONFLICT, "the record (with the deal) is given once the game is over")
        return session.record()

    def replay(self, browser: Browser, game, step) -> dict:
        session = self.current(browser, game)
        if not session.is_over:
            raise ApiError(HTTPStatus.CONFLICT, "replays are of finished games")
        try:
            step = int(step)
            view = session.view_at(step)
        except (TypeError, ValueError):
            raise ApiError(HTTPStatus.BAD_REQUEST,
                           f"'step' must be an integer in 0..{len(session.actions)}, got {step!r}") from None
        moves = session.public_moves(step)
        return view_state(view, session, moves, moves[-1:], browser.game_id, step=step)

    def _save_if_over(self, browser: Browser) -> None:
        if browser.session.is_over and browser.saved is None:
            path = self.settings.save_dir / f"game-{time.strftime('%Y%m%d-%H%M%S')}-{browser.game_id}.jsonl"
            browser.saved = str(save_record(browser.session.record(), path))

    def state(self, browser: Browser) -> dict:
        session = browser.session
        out = view_state(session.view, session, session.public_moves(), browser.replies, browser.game_id)
        out["saved"] = browser.saved
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
    svg = render_svg.board_svg(view, viewer=view.seat, caption=False, marks=marks)
    over = bool(view.is_over)
    return {
        "game": game_id, "seat": view.seat, "players": view.num_players, "team": view.team,
        "labels": list(session.labels), "turn": view.turn, "current": view.current_player, "over": over,
        "your_turn": bool(legal), "scores": [int(x) for x in view.scores],
        "hand_sizes": [int(x) for x in view.hand_sizes], "bag": view.bag_size,
        "hand": [v + 1 for v in range(rules.MAX_VALUE) for _ in range(int(view.hand[v]))],
        "partner_shows": view.partner_shown, "legal": {str(c): v for c, v in cells.items()},
        "can_pass": rules.PASS_ACTION in legal, "shows": [a - rules.SHOW_BASE + 1 for a in legal if a >= rules.SHOW_BASE],
        "moves": moves, "replies": replies, "svg": svg,
        "geometry": {"x0": render_svg.PAD + render_svg.EDGE, "y0": render_svg.PAD + render_svg.EDGE,
                     "cell": render_svg.CELL, "size": rules.BOARD_SIZE},
        "ranking": session.ranking() if over and step is None else None,
        "step": step, "steps": len(session.actions),
    }


def _int_field(body: dict, name: str, default, low: int, high: int):
    value = body.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(HTTPStatus.BAD_REQUEST, f"'{name}' must be an integer in {low}..{high}, got {value!r}")
    return value


def _action_text(action: int) -> str:
    return describe_action(action) if 0 <= action < rules.NUM_TEAM_ACTIONS else f"action {action}"


# --- HTTP ---------------------------------------------------------------------------------------
class Handler(BaseHTTPRequestHandler):
    """Routes requests to `Games`; static files from `STATIC`."""

    server_version = "play247"
    timeout = REQUEST_TIMEOUT
    games: Games  # set by `make_server`

    def log_message(self, format, *args):
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            return self._static("index.html")
        if url.path.startswith("/static/"):
            return self._static(url.path[len("/static/"):])
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        routes = {
            "/api/state": lambda b: self._state_of(b, query.get("game")),
            "/api/record": lambda b: self.games.record(b, query.get("game")),
            "/api/replay": lambda b: self.games.replay(b, query.get("game"), query.get("step")),
        }
        self._api(routes.get(url.path))

    def do_POST(self):
        path = urlsplit(self.path).path
        routes = {"/api/new": self.games.new_game, "/api/move": self.games.move, "/api/undo": self.games.undo,
                  "/api/hint": self.games.hint,
                  "/api/load": lambda b, body: self.games.load_game(b, body.get("record"))}
        handler = routes.get(path)
        self._api(None if handler is None else lambda b: handler(b, self._body()))

    def _state_of(self, browser: Browser, game):
        """The named game; without a name the current one (a new one if there is none)."""
        if game is None:
            return self.games.state(browser) if browser.session else self.games.new_game(browser, {})
        self.games.current(browser, game)
        return self.games.state(browser)

    def _api(self, route):
        if route is None:  # answered without a session: a stray request (a favicon) must not replace the cookie
            message = {"error": f"no such endpoint: {self.command} {urlsplit(self.path).path}"}
            return self._send(HTTPStatus.NOT_FOUND, json.dumps(message).encode(), "application/json")
        sid, browser = self.games.browser(self._cookie())
        try:
            with browser.lock:  # one request at a time per browser: moves never interleave
                if browser.session is None and self.games.settings.record is not None:
                    self.games.load_game(browser, self.games.settings.record)
                payload, status = route(browser), HTTPStatus.OK
        except ApiError as exc:
            payload, status = {"error": str(exc)}, exc.status
        except Exception as exc:  # noqa: BLE001 (a bug, e.g. an agent's illegal reply: answer, don't drop the connection)
            self.log_error("error in %s %s: %r", self.command, self.path, exc)
            payload, status = {"error": f"internal error: {type(exc).__name__}: {exc}"}, HTTPStatus.INTERNAL_SERVER_ERROR
        self._send(status, json.dumps(payload).encode(), "application/json", sid)

    def _body(self) -> dict:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise ApiError(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length")
        if int(length) > MAX_BODY:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes")
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(HTTPStatus.BAD_REQUEST, f"malformed JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(HTTPStatus.BAD_REQUEST, f"the body must be a JSON object, got {type(body).__name__}")
        return body

    def _cookie(self) -> str | None:
        jar = SimpleCookie()
        try:
            jar.load(self.headers.get("Cookie", ""))
        except CookieError:  # a malformed cookie header: treat as none
            return None
        return jar[COOKIE].value if COOKIE in jar else None

    def _static(self, name: str):
        path = (STATIC / name).resolve()
        if path.parent != STATIC.resolve() or path.suffix not in STATIC_TYPES or not path.is_file():
            return self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain; charset=utf-8")
        self._send(HTTPStatus.OK, path.read_bytes(), STATIC_TYPES[path.suffix])

    def _send(self, status: HTTPStatus, data: bytes, kind: str, sid: str | None = None):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if sid is not None:
            self.send_header("Set-Cookie", f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict")
        self.end_headers()
        self.wfile.write(data)


def make_server(settings: Settings, host: str = "127.0.0.1", port: int = 8000, verbose: bool = False):
    """A `ThreadingHTTPServer` serving the game (port 0: any free port; see
    ``server.server_address``). Call ``serve_forever()``, then ``shutdown()``."""
    handler = type("PlayHandler", (Handler,), {"games": Games(settings)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.verbose = verbose
    return server
