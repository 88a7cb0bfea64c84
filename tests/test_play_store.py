"""The web game's database keeps only what it must: finished games older than the
configured age are pruned, at the server's start and every hour; unfinished games stay."""

from __future__ import annotations

import json
import time
import urllib.request
import http.cookiejar

from humanplay.session import Session
from humanplay.store import Store
from humanplay.web import DAY, ServerThread, Settings


def _finished() -> dict:
    session = Session.new(["greedy"], seed=1, hint_spec="greedy")
    while not session.is_over:
        session.play(session.legal_actions()[0])
    return {**session.data(), "replies": [], "saved": None}


def _live() -> dict:
    session = Session.new(["greedy"], seed=2, hint_spec="greedy")
    session.play(session.legal_actions()[0])
    assert not session.is_over
    return {**session.data(), "replies": [], "saved": None}


def _age(path, game_id: str, days: float) -> None:
    """Make a game look last changed `days` ago (and its browser last seen then)."""
    store = Store(path)
    when = time.time() - days * DAY
    store._db.execute("UPDATE games SET updated = ? WHERE id = ?", (when, game_id))
    store._db.execute("UPDATE browsers SET seen = ? WHERE game = ?", (when, game_id))
    store.close()


def test_old_finished_games_are_pruned_and_live_games_untouched(tmp_path):
    path = tmp_path / "games.sqlite3"
    store = Store(path)
    done, live = _finished(), _live()
    store.save("a", "old-done", done)  # browser a: its current game finished long ago
    store.save("b", "old-live", live)  # browser b: an unfinished game, just as old
    store.save("c", "new-done", done)  # browser c: finished yesterday
    store.save("d", "earlier-done", done)  # browser d: an earlier finished game, then a live one
    store.save("d", "d-live", live)
    store.close()
    for game, days in (("old-done", 40), ("old-live", 40), ("new-done", 1), ("earlier-done", 40)):
        _age(path, game, days)
    store = Store(path)
    assert store.current_game("a") == "old-done"
    assert sorted(store.prune(30 * DAY)) == ["earlier-done", "old-done"]
    assert store.load("old-done") is None and store.load("earlier-done") is None
    assert store.load("old-live") == live and store.load("new-done") == done and store.load("d-live") == live
    assert not store.has_browser("a")  # long gone and its game with it: a new cookie if it comes back
    assert store.current_game("b") == "old-live" and store.current_game("c") == "new-done"
    assert store.current_game("d") == "d-live"
    assert store.prune(30 * DAY) == []  # nothing more to do
    assert store._db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 3
    try:
        store.prune(0)
    except ValueError as exc:
        assert "max_age" in str(exc)
    else:
        raise AssertionError("prune(0) was accepted")
    store.close()


def test_the_server_prunes_at_its_start_and_a_live_game_goes_on(tmp_path):
    db = tmp_path / "games.sqlite3"
    store = Store(db)
    store.save("old", "old-done", _finished())
    store.save("live", "old-live", _live())
    store.close()
    _age(db, "old-done", 31)
    _age(db, "old-live", 31)
    settings = Settings(opponents=["greedy"], hint="greedy", workers=1, save_dir=tmp_path, db=db,
                        prune_after_days=30)
    with ServerThread(settings) as srv:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        cookie = http.cookiejar.Cookie(0, "play247", "live", None, False, "127.0.0.1", False, False, "/", True,
                                       False, None, True, None, None, {})
        jar.set_cookie(cookie)
        with opener.open(srv.url + "/api/state", timeout=120) as f:
            state = json.loads(f.read())
        assert state["game"] == "old-live" and not state["over"]  # the live game, as it was
        check = Store(db)
        assert check.load("old-done") is None and check.load("old-live") is not None
        check.close()
