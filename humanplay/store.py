"""The web game's games on disk: SQLite (the standard library's sqlite3), written as they
are played, so a restart, a crash or ``kill -9`` of the server loses no move.

Two tables: ``browsers`` (a session cookie and the id of its current game) and ``games``
(one row per game: the browser it belongs to and the game as JSON: its record in the
games.jsonl format plus what rebuilds the session: seed, hint agent, the agents' last
replies, where the finished game was saved). A game is written in one transaction after
each change, before the answer leaves the server: an answered move is on disk.

Finished games are kept for ``--prune-after-days`` (default 30) after their last change,
then deleted (`Store.prune`) at the server's start and every hour; unfinished games stay.

The database runs in WAL mode with ``synchronous=NORMAL``: a commit is in the OS's hands
when it returns, which survives the death of the process (not a power cut). Every call
runs on the server's event loop thread; one connection serves them all.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS browsers (
    sid TEXT PRIMARY KEY,
    game TEXT,
    seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    sid TEXT NOT NULL,
    data TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS games_by_browser ON games (sid);
"""


class Store:
    """Browsers and their games in one SQLite file (":memory:" for a throwaway store)."""

    def __init__(self, path: str | Path):
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._current: dict[str, str | None] = {}  # sid -> current game, for the browsers seen so far

    def close(self) -> None:
        self._db.close()

    # --- browsers --------------------------------------------------------------------------
    # (the browsers' current games are read once from the database, then kept in memory:
    # this process is the database's only writer)
    def has_browser(self, sid: str) -> bool:
        if sid not in self._current:
            row = self._db.execute("SELECT game FROM browsers WHERE sid = ?", (sid,)).fetchone()
            if row is None:
                return False
            self._current[sid] = row[0]
        return True

    def add_browser(self, sid: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO browsers (sid, game, seen) VALUES (?, NULL, ?)", (sid, time.time()))
        self._current.setdefault(sid, None)

    def current_game(self, sid: str) -> str | None:
        return self._current[sid] if self.has_browser(sid) else None

    # --- games -----------------------------------------------------------------------------
    def game_owner(self, game_id: str) -> str | None:
        row = self._db.execute("SELECT sid FROM games WHERE id = ?", (game_id,)).fetchone()
        return None if row is None else row[0]

    def load(self, game_id: str) -> dict | None:
        row = self._db.execute("SELECT data FROM games WHERE id = ?", (game_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def save(self, sid: str, game_id: str, data: dict) -> None:
        """Write the game and make it the browser's current game, in one transaction."""
        now = time.time()
        with self._db:  # BEGIN ... COMMIT (ROLLBACK on an exception)
            self._db.execute("BEGIN")
            self._db.execute("INSERT INTO games (id, sid, data, updated) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated = excluded.updated",
                             (game_id, sid, json.dumps(data, separators=(",", ":")), now))
            if self.current_game(sid) != game_id:
                self._db.execute("INSERT INTO browsers (sid, game, seen) VALUES (?, ?, ?) "
                                 "ON CONFLICT (sid) DO UPDATE SET game = excluded.game, seen = excluded.seen",
                                 (sid, game_id, now))
        self._current[sid] = game_id  # after the commit: a failed write changes nothing here

    def prune(self, max_age: float, now: float | None = None) -> list[str]:
        """Delete the finished games not changed for `max_age` seconds, and the browsers
        not seen for that long whose current game is gone; unfinished games are never
        touched. Returns the ids of the deleted games (one transaction)."""
        if not max_age > 0:
            raise ValueError(f"max_age must be a positive number of seconds, got {max_age!r}")
        cutoff = (time.time() if now is None else now) - max_age
        with self._db:
            self._db.execute("BEGIN")
            gone = [row[0] for row in self._db.execute(
                "SELECT id FROM games WHERE updated < ? AND json_extract(data, '$.over') = 1", (cutoff,))]
            self._db.executemany("DELETE FROM games WHERE id = ?", [(g,) for g in gone])
            self._db.execute("UPDATE browsers SET game = NULL WHERE game IS NOT NULL "
                             "AND game NOT IN (SELECT id FROM games)")
            left = [row[0] for row in self._db.execute(
                "SELECT sid FROM browsers WHERE game IS NULL AND seen < ?", (cutoff,))]
            self._db.execute("DELETE FROM browsers WHERE game IS NULL AND seen < ?", (cutoff,))
        deleted = set(gone)
        for sid in left:
            self._current.pop(sid, None)
        for sid, game in self._current.items():
            if game in deleted:
                self._current[sid] = None
        return gone
