"""The web app's endpoints through a client (urllib against the uvicorn server on a free
port): games kept apart per browser, every bad request refused with a clear 4xx and
nothing changed, hidden tiles never sent before the game is over, no undo after it."""

from __future__ import annotations

import http.cookiejar
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.play import play_game
from engine import GameState, random_deal, rules
from humanplay.web import MAX_BODY, ServerThread, Settings, serve

HINT = "ismcts:iterations=100"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module's tests (each test is its own browsers, so they do not
    meet): its worker processes start once."""
    tmp = tmp_path_factory.mktemp("web")
    with ServerThread(Settings(opponents=["greedy"], seed=3, hint=HINT, save_dir=tmp, workers=1)) as srv:
        yield srv


class Client:
    """One browser: its own cookie jar."""

    def __init__(self, srv):
        self.base = srv.url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def raw(self, method, path, data=None, headers=None):
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        try:
            with self.opener.open(req, timeout=60) as f:
                return f.status, f.read(), f.headers
        except urllib.error.HTTPError as err:
            return err.code, err.read(), err.headers

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        status, payload, _ = self.raw(method, path, data, {"Content-Type": "application/json"})
        return status, json.loads(payload)


def _first_move(state) -> int:
    if state["can_pass"]:
        return rules.PASS_ACTION
    cell, values = next(iter(state["legal"].items()))
    return int(cell) * rules.MAX_VALUE + values[0] - 1


def _public_part(state):
    return {k: v for k, v in state.items() if k not in ("game", "saved")}


def test_a_game_to_the_end_then_its_record_and_replay(server):
    c = Client(server)
    status, state = c.call("GET", "/api/state")
    assert status == 200 and state["your_turn"] and state["seat"] == 0
    assert "deal" not in json.dumps(state) 
    cells = state["board"]["cells"]
    assert len(cells) == rules.NUM_CELLS and [c for c, v in enumerate(cells) if v] == [rules.NUM_CELLS // 2]  # the start tile
    while not state["over"]:
        status, state = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
        assert status == 200
        assert all(m["seat"] == 1 for m in state["replies"])
    status, record = c.call("GET", f"/api/record?game={state['game']}")
    assert status == 200 and record["labels"] == ["human", "greedy"]
    replayed = GameState.from_deal(record["deal"], 2)
    for action in record["actions"]:
        replayed.step(action)
    assert replayed.scores.tolist() == state["scores"] and state["ranking"] == replayed.ranking().tolist()
    assert state["saved"] and json.loads(Path(state["saved"]).read_text())["actions"] == record["actions"]
    status, step = c.call("GET", f"/api/replay?game={state['game']}&step=2")
    assert status == 200 and step["step"] == 2 and len(step["moves"]) == 2 and step["legal"] == {}
    for bad in ("-1", "x", str(len(record["actions"]) + 1)):
        status, err = c.call("GET", f"/api/replay?game={state['game']}&step={bad}")
        assert status == 400 and "step" in err["error"]


def test_bad_requests_get_4xx_and_change_nothing(server):
    c = Client(server)
    _, state = c.call("GET", "/api/state")
    game = state["game"]
    illegal = next(a for a in range(rules.PASS_ACTION) if str(a // 10) not in state["legal"])
    cases = [
        ({"game": game, "action": illegal}, 422, "illegal move"),
        ({"game": game, "action": rules.PASS_ACTION}, 422, "illegal move"),
        ({"game": game, "action": 9999}, 422, "illegal move"),
        ({"game": game, "action": True}, 400, "integer action id"),
        ({"game": game, "action": "253"}, 400, "integer action id"),
        ({"game": game}, 400, "integer action id"),
        ({"action": _first_move(state)}, 400, "game id"),
        ({"game": "nope", "action": _first_move(state)}, 404, "unknown game id"),
    ]
    for body, code, words in cases:
        status, err = c.call("POST", "/api/move", body)
        assert status == code and words in err["error"], (body, status, err)
    for data, code, words in [(b"{bad json", 400, "malformed JSON"), (b"[1, 2]", 400, "JSON object"),
                              (b"\xff\xfe", 400, "malformed JSON")]:
        status, payload, _ = c.raw("POST", "/api/move", data, {"Content-Type": "application/json"})
        assert status == code and words in json.loads(payload)["error"]
    status, payload, _ = c.raw("POST", "/api/move", b"{}", {"Content-Length": str(MAX_BODY + 1)})
    assert status == 413 and "over" in json.loads(payload)["error"]
    status, _, headers = c.raw("GET", "/robots.txt")
    assert status == 404 and headers["Set-Cookie"] is None  # keeps the browser's session cookie
    assert c.call("POST", "/api/nothing", {})[0] == 404
    assert c.call("GET", f"/api/record?game={game}")[0] == 409  # the deal only after the end
    assert c.call("GET", f"/api/replay?game={game}&step=0")[0] == 409
    assert c.call("POST", "/api/undo", {"game": game})[0] == 409  # no move of yours yet
    for body in ({"players": 5}, {"seat": 3}, {"seed": -1}, {"players": "2"}):
        assert c.call("POST", "/api/new", body)[0] == 400
    _, after = c.call("GET", f"/api/state?game={game}")
    assert _public_part(after) == _public_part(state)


def test_more_players(server):
    c = Client(server)
    status, state = c.call("POST", "/api/new", {"players": 3, "seat": 2})
    assert status == 200 and state["labels"] == ["greedy", "greedy", "human"] and len(state["moves"]) == 2
    assert state["your_turn"] and len(state["hand"]) == rules.hand_size(3)


def test_new_game_takes_players_and_team_and_refuses_bad_ones(server):
    """POST /api/new: the player count and the team flag (4 players only), by default the
    server's (here 2 players, no teams); a bad one is a 400 naming it, and the browser's
    game stays its current game, as it was."""
    c = Client(server)
    status, team = c.call("POST", "/api/new", {"players": 4, "team": True})
    assert status == 200 and team["players"] == 4 and team["team"] and len(team["labels"]) == 4
    status, four = c.call("POST", "/api/new", {"players": 4})
    assert status == 200 and four["players"] == 4 and not four["team"]
    status, default = c.call("POST", "/api/new", {"players": None, "team": None})
    assert status == 200 and default["players"] == 2 and not default["team"]
    cases = [({"players": 3, "team": True}, "team variant is for 4 players"),
             ({"team": True}, "team variant is for 4 players"),  # the server's 2 players
             ({"players": 5}, "'players' must be an integer in 2..4"),
             ({"players": "4", "team": True}, "'players' must be an integer"),
             ({"players": 4.0}, "'players' must be an integer"),
             ({"players": 4, "team": "yes"}, "'team' must be true or false"),
             ({"players": 4, "team": 1}, "'team' must be true or false"),
             ({"players": 2, "seat": 2}, "'seat' must be an integer in 0..1")]
    for body, words in cases:
        status, err = c.call("POST", "/api/new", body)
        assert status == 400 and words in err["error"], (body, status, err)
    _, now = c.call("GET", "/api/state")
    assert now["game"] == default["game"] and _public_part(now) == _public_part(default)


def test_stale_ids_undo_hint_and_separate_browsers(server):
    a, b = Client(server), Client(server)
    _, first = a.call("GET", "/api/state")
    _, second = a.call("POST", "/api/new", {"seed": 8})
    assert second["game"] != first["game"]
    status, err = a.call("POST", "/api/move", {"game": first["game"], "action": _first_move(first)})
    assert status == 409 and "stale game id" in err["error"]
    # another browser cannot reach a's game
    _, other = b.call("GET", "/api/state")
    status, err = b.call("POST", "/api/move", {"game": second["game"], "action": _first_move(second)})
    assert status == 404
    # hint from the person's view, then move and undo back to the same state
    status, hint = a.call("POST", "/api/hint", {"game": second["game"]})
    assert status == 200 and hint["agent"] == HINT and hint["moves"][0]["share"] > 0
    assert 0 <= hint["action"] < rules.PASS_ACTION and str(hint["action"] // 10) in second["legal"]
    _, moved = a.call("POST", "/api/move", {"game": second["game"], "action": hint["action"]})
    assert moved["turn"] == second["turn"] + 2 and len(moved["replies"]) == 1
    _, undone = a.call("POST", "/api/undo", {"game": second["game"]})
    assert _public_part(undone) == _public_part(second)
    _, b_state = b.call("GET", f"/api/state?game={other['game']}")
    assert _public_part(b_state) == _public_part(other)


def test_records_from_tournaments_and_files_load(server):
    c = Client(server)
    deal = random_deal(5)
    game = play_game([agents.make("greedy"), agents.make("greedy")], deal).to_dict()
    record = {"game": 7, "labels": ["greedy", "random"], "deal_seed": 5, **game}
    record["actions"] = record["actions"][:6]  # an unfinished game: play on from there
    status, state = c.call("POST", "/api/load", {"record": record})
    assert status == 200 and state["turn"] == 6 and state["your_turn"] and state["labels"] == ["human", "random"]
    assert len(state["moves"]) == 6
    for bad, words in [(None, "JSON object"), ({"deal": [1] * 40, "num_players": 2, "actions": []}, "four of each"),
                       ({**record, "actions": [0]}, "not legal")]:
        status, err = c.call("POST", "/api/load", {"record": bad})
        assert status == 400 and words in err["error"]
    _, now = c.call("GET", f"/api/state?game={state['game']}")
    assert _public_part(now) == _public_part(state)


def test_the_page_never_gets_hidden_tiles(server):
    """Two browsers whose deals differ only in tiles seat 0 cannot see get the same page."""
    deal = np.asarray(random_deal(13))
    twin = deal.copy()
    hidden = [1, 2, 3] + list(range(4 + rules.hand_size(2), rules.NUM_TILES))
    twin[hidden] = np.roll(deal[hidden], 5)
    states = []
    for d in (deal, twin):
        c = Client(server)
        rec = {"deal": d.tolist(), "num_players": 2, "team": False, "actions": [], "labels": ["human", "greedy"]}
        _, state = c.call("POST", "/api/load", {"record": rec})
        _, hint = c.call("POST", "/api/hint", {"game": state["game"]})
        states.append((_public_part(state), hint))
    assert states[0] == states[1]


def test_static_files_and_default_host(server):
    c = Client(server)
    status, page, headers = c.raw("GET", "/")
    assert status == 200 and b"play.js" in page and headers["Content-Type"].startswith("text/html")
    assert c.raw("GET", "/static/play.js")[0] == 200
    assert b'<link rel="icon" href="/static/favicon.svg"' in page
    from env import render_svg

    for path in ("/", "/index.html", "/static/index.html"):  # the page, with the board's sizes and colours in it
        page = c.raw("GET", path)[1].decode()
        style = page.split('<script id="board-style" type="application/json">', 1)[1].split("</script>", 1)[0]
        assert json.loads(style) == render_svg.page_style()
    for path in ("/static/favicon.svg", "/favicon.ico"):  # the page's icon; a JSON answer's tab asks for the other
        status, icon, headers = c.raw("GET", path)
        assert status == 200 and icon.startswith(b"<svg") and headers["Content-Type"] == "image/svg+xml"
        assert headers["Set-Cookie"] is None
    assert c.raw("GET", "/static/../web.py")[0] == 404
    assert c.raw("GET", "/static/%2e%2e/web.py")[0] == 404
    import inspect

    assert inspect.signature(serve).parameters["host"].default == "127.0.0.1"


def test_latency_benchmark_runs(capsys):
    from benchmarks import play_latency

    rows = play_latency.main(["--opponents", "greedy", "--games", "1", "--json"])
    assert rows[0]["moves"] > 10 and rows[0]["budget_s"] == 0.2
    assert play_latency.budget("ismcts:time=0.1") == pytest.approx(0.2)
    assert "machine" in json.loads(capsys.readouterr().out)


@agents.register("play_web_test_illegal")
class _IllegalAgent(agents.Agent):
    """Replies with a move that does not exist: a broken agent."""

    def act(self, observation, view) -> int:
        return 9999


def test_a_broken_agent_gets_a_500_not_a_dropped_connection(tmp_path):
    settings = Settings(opponents=["play_web_test_illegal"], seed=1, hint=HINT, save_dir=tmp_path, workers=1,
                        imports=(__name__,))  # the workers learn the broken agent from this module
    with ServerThread(settings) as srv:
        c = Client(srv)
        _, state = c.call("GET", "/api/state")
        status, err = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
        assert status == 500 and "internal error" in err["error"]
        _, after = c.call("GET", f"/api/state?game={state['game']}")
        assert _public_part(after) == _public_part(state)


def test_no_undo_after_the_end_once_the_record_is_out(server):
    c = Client(server)
    _, state = c.call("POST", "/api/new", {"seed": 4})
    while not state["over"]:
        _, state = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
    status, record = c.call("GET", f"/api/record?game={state['game']}")
    assert status == 200
    status, err = c.call("POST", "/api/undo", {"game": state["game"]})
    assert status == 409 and "game is over" in err["error"]
    _, after = c.call("GET", f"/api/state?game={state['game']}")
    assert _public_part(after) == _public_part(state)
    assert c.call("GET", f"/api/record?game={state['game']}")[1] == record


def test_undo_on_the_web_deals_the_unseen_tiles_afresh(server):
    """Two browsers whose deals differ only in tiles seat 0 has not seen play a move, undo
    it and play it again: they see the same game (the old code drew the same tile again
    from each deal, so the undone move told the person the top of the bag)."""
    deal = np.asarray(random_deal(31))
    twin = deal.copy()
    hidden = [1, 2, 3] + list(range(4 + rules.hand_size(2), rules.NUM_TILES))
    twin[hidden] = np.roll(deal[hidden], 5)
    pages = []
    for d in (deal, twin):
        c = Client(server)
        rec = {"deal": d.tolist(), "num_players": 2, "team": False, "actions": [], "labels": ["human", "greedy"]}
        _, state = c.call("POST", "/api/load", {"record": rec})
        action = _first_move(state)
        c.call("POST", "/api/move", {"game": state["game"], "action": action})
        status, undone = c.call("POST", "/api/undo", {"game": state["game"]})
        assert status == 200 and _public_part(undone) == _public_part(state)
        _, again = c.call("POST", "/api/move", {"game": state["game"], "action": action})
        pages.append(_public_part(again))
    assert pages[0] == pages[1]


@pytest.mark.parametrize("players, team, seat", [(3, False, 1), (4, False, 3), (4, True, 2)])
def test_the_page_sees_only_the_persons_view_in_bigger_games(server, players, team, seat):
    """A game some moves in (every seat has played), and its twin that differs only in
    tiles the person has not seen (the other hands, the bag, the removed tiles, dealt
    again by `humanplay.redeal`): the two pages and their hints are the same."""
    from humanplay.redeal import redeal
    from humanplay.session import Session

    session = Session.new(["greedy"], players, team, seat, seed=40 + players + seat, hint_spec=HINT)
    for _ in range(4):
        session.play(session.legal_actions()[0])
    deal, actions = session.record()["deal"], session.actions
    twin = redeal(deal, players, team, actions, seat, np.random.default_rng(1)).tolist()
    hands = []
    for d in (deal, twin):
        state = GameState.from_deal(d, players, team)
        for action in actions:
            state.step(action)
        hands.append([state.hands[s].tolist() for s in range(players) if s != seat])
    assert hands[0] != hands[1]  # the twins differ in the other seats' hands now
    seen = []
    for d in (deal, twin):
        c = Client(server)
        record = {"deal": d, "num_players": players, "team": team, "actions": actions, "human_seat": seat,
                  "labels": session.labels}
        status, state = c.call("POST", "/api/load", {"record": record})
        assert status == 200 and state["your_turn"] and state["turn"] == len(actions)
        assert {m["seat"] for m in state["moves"]} == set(range(players))
        status, hint = c.call("POST", "/api/hint", {"game": state["game"]})
        assert status == 200
        seen.append((_public_part(state), hint))
    assert seen[0] == seen[1]


@agents.register("play_web_test_sleepy")
class _SleepyAgent(agents.Agent):
    """Thinks far too long at seat 1 (an agent that hangs)."""

    def act(self, observation, view) -> int:
        if view.seat == 1:
            import time

            time.sleep(30)
        return view.legal_actions()[0]


@pytest.mark.slow
def test_an_agent_that_hangs_gets_a_504_and_its_worker_is_replaced(tmp_path):
    settings = Settings(opponents=["play_web_test_sleepy"], seed=1, hint="ismcts:iterations=50", save_dir=tmp_path,
                        workers=1, job_timeout=1.0, imports=(__name__,))  # both in the worker pool
    with ServerThread(settings) as srv:
        c = Client(srv)
        _, state = c.call("GET", "/api/state")
        for _ in range(2):  # the second one runs on the worker that replaced the killed one
            status, err = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
            assert status == 504 and "too long" in err["error"]
        _, after = c.call("GET", f"/api/state?game={state['game']}")
        assert _public_part(after) == _public_part(state)
        status, hint = c.call("POST", "/api/hint", {"game": state["game"]})  # the replacement works
        assert status == 200 and hint["agent"] == "ismcts:iterations=50"


def test_a_review_after_the_end_one_decision_a_call(server):
    """POST /api/review: refused before the end; after it, each call analyses one more
    of the person's decisions (done / total) until the review comes: the three costliest
    moves of the same analysis run apart, each with the better move and its board."""
    from evaluation.analysis import costliest
    from humanplay.review import analyze_steps, judge_line, review_steps

    c = Client(server)
    _, state = c.call("GET", "/api/state")
    status, err = c.call("POST", "/api/review", {"game": state["game"]})
    assert status == 409 and "finished game" in err["error"]
    while not state["over"]:
        _, state = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
    answers = []
    while not answers or answers[-1]["review"] is None:
        status, answer = c.call("POST", "/api/review", {"game": state["game"]})
        assert status == 200
        answers.append(answer)
    total = answers[0]["total"]
    assert [a["done"] for a in answers] == list(range(1, total + 1)) and total > 5
    review = answers[-1]["review"]
    _, record = c.call("GET", f"/api/record?game={state['game']}")
    worst = costliest(analyze_steps(record, 0, review_steps(record, 0)), 3)
    assert [m["number"] for m in review["moves"]] == [d.move_number for d in worst]
    for m, d in zip(review["moves"], worst):
        assert (m["played"], m["better"], m["value"]) == (d.played, d.best, pytest.approx(d.loss))
        assert m["better"] != m["played"] and m["value"] > 0
        assert [mark[:2] for mark in m["board"]["marks"]] == [list(rules.decode_action(a)) for a in (d.best, d.played)]
    assert review["decisions"] == total and review["judge"] == judge_line(2, False)
    # asked again: nothing more to analyse, the same review
    status, again = c.call("POST", "/api/review", {"game": state["game"]})
    assert status == 200 and again["done"] == total and again["review"] == review
    status, err = c.call("POST", "/api/review", {"game": "nope"})
    assert status == 404


# --- the warm-up in the background ------------------------------------------------------------------
def _gated_warm_up(monkeypatch, gate: threading.Event, error: Exception | None = None) -> None:
    """The server's warm-up waits for `gate` (a first run compiling for a minute), then
    does its work, or raises `error`."""
    from humanplay import web

    real = web._warm_page

    def slow_warm_page(settings, specs):
        assert gate.wait(120), "the test never opened the gate"
        if error is not None:
            raise error
        real(settings, specs)

    monkeypatch.setattr(web, "_warm_page", slow_warm_page)


def _until_ready(c: Client, seconds: float = 120.0) -> tuple[int, dict]:
    deadline = time.monotonic() + seconds
    while True:
        status, state = c.call("GET", "/api/state")
        if status != 503 or time.monotonic() > deadline:
            return status, state
        time.sleep(0.1)


def test_the_page_answers_during_the_warm_up_then_the_game(tmp_path, monkeypatch):
    """While the warm-up runs the page loads and the API answers 503 'warming up' with
    Retry-After (a game request neither blocks nor fails for good); once it is done,
    the game as always, its first move answered by the agents."""
    gate = threading.Event()
    _gated_warm_up(monkeypatch, gate)
    settings = Settings(opponents=["greedy"], seed=3, hint="greedy", save_dir=tmp_path, workers=1)
    with ServerThread(settings, wait_warm=False) as srv:
        c = Client(srv)
        status, page, headers = c.raw("GET", "/")
        assert status == 200 and b"play.js" in page
        assert c.raw("GET", "/static/play.js")[0] == 200
        for method, path, body in [("GET", "/api/state", None), ("POST", "/api/new", {}),
                                   ("POST", "/api/move", {"game": "x", "action": 0}), ("GET", "/api/ready", None)]:
            data = None if body is None else json.dumps(body).encode()
            status, payload, headers = c.raw(method, path, data, {"Content-Type": "application/json"})
            answer = json.loads(payload)
            assert status == 503 and headers["Retry-After"] == "1", (path, status, answer)
            assert answer["warming_up"] is True and isinstance(answer["seconds"], int)
            assert "warming up" in answer["error"]
        assert not srv.warm_up.done
        gate.set()
        status, state = _until_ready(c)
        assert status == 200 and state["your_turn"] and srv.warm_up.ready
        status, moved = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
        assert status == 200 and moved["turn"] == state["turn"] + 2 and len(moved["replies"]) == 1
        deadline = time.monotonic() + 120
        while (ready := c.call("GET", "/api/ready"))[0] == 503:  # the probe for scripts: all warm
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert ready == (200, {"ready": True, "seconds": ready[1]["seconds"]})


def test_a_failed_warm_up_is_reported_on_the_page_and_in_the_log(tmp_path, monkeypatch, caplog):
    gate = threading.Event()
    gate.set()
    _gated_warm_up(monkeypatch, gate, RuntimeError("no kernels today"))
    settings = Settings(opponents=["greedy"], hint="greedy", save_dir=tmp_path, workers=1)
    with pytest.raises(RuntimeError, match="warm-up failed: RuntimeError: no kernels today"), \
            ServerThread(settings):  # waits for the warm-up, which fails
        pass
    with ServerThread(settings, wait_warm=False) as srv:
        c = Client(srv)
        status, answer = _until_ready(c)
        assert status == 500 and answer["warm_up_failed"] is True and "no kernels today" in answer["error"]
        assert srv.warm_up.error == "RuntimeError: no kernels today"
        assert c.raw("GET", "/")[0] == 200  # the page still loads, to say so
    failures = [r for r in caplog.records if r.name == "humanplay.web" and "warm-up failed" in r.getMessage()]
    assert failures and failures[0].exc_info is not None  # with its traceback


@pytest.mark.parametrize("opponent", ["greedy", "ismcts:iterations=20"])
def test_games_start_before_the_hint_agent_is_warm(tmp_path, monkeypatch, opponent):
    """The opponents are warmed first: a game is played while the hint agent still warms
    up, in another pool (greedy's) or in the opponent's own (a search's), its hints
    answered 503 'warming up' until it is warm."""
    from humanplay import web

    gate, real = threading.Event(), web._warm_agents
    hint = "ismcts:iterations=50"

    def gated(specs):
        if hint in specs:  # the hint agent's turn, after the opponents'
            assert gate.wait(120), "the test never opened the gate"
        real(specs)

    monkeypatch.setattr(web, "_warm_agents", gated)
    settings = Settings(opponents=[opponent], seed=3, hint=hint, save_dir=tmp_path, workers=1)
    with ServerThread(settings, wait_warm=False) as srv:
        c = Client(srv)
        status, state = _until_ready(c)
        assert status == 200 and srv.warm_up.ready and not srv.warm_up.complete
        status, moved = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
        assert status == 200 and len(moved["replies"]) == 1
        data = json.dumps({"game": state["game"]}).encode()
        status, payload, headers = c.raw("POST", "/api/hint", data, {"Content-Type": "application/json"})
        answer = json.loads(payload)
        assert status == 503 and headers["Retry-After"] == "1" and answer["warming_up"], answer
        assert "warming up hints and reviews" in answer["error"]
        status, answer = c.call("GET", "/api/ready")
        assert status == 503 and "warming up hints and reviews" in answer["error"]
        gate.set()
        deadline = time.monotonic() + 120
        while (reply := c.call("POST", "/api/hint", {"game": state["game"]}))[0] == 503:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert reply[0] == 200 and reply[1]["agent"] == hint and srv.warm_up.complete


@pytest.mark.parametrize("opponents", [["random"], ["greedy", "random", "greedy"]])
def test_fast_agents_answer_in_the_server_as_a_worker_would(opponents):
    """Greedy and random answer in the server's event loop (`Session.replies` on the live
    game) and every other agent in a worker (`workers.replies_job` on the game rebuilt from
    its data): the same moves either way, and the live game unchanged until they apply."""
    from humanplay import workers
    from humanplay.session import Session

    session = Session.new(opponents, num_players=len(opponents) + 1, seat=1, seed=11, advance=False)
    here, (there, _) = session.replies(), workers.replies_job(session.data(), None)
    assert here == there and len(here) == 1
    session.apply_replies(here)
    while not session.is_over:
        action = session.legal_actions()[len(session.actions) % len(session.legal_actions())]
        before = session.data()
        here, (there, _) = session.replies(action), workers.replies_job(before, action)
        assert here == there
        assert session.data() == before
        session.play(action, here)


def test_the_request_benchmark_plays_whole_games():
    """benchmarks/web_request.py (the server's own work a request, no HTTP) runs and
    reports; bad counts are refused."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = str(root / "benchmarks" / "web_request.py")
    done = subprocess.run([sys.executable, script, "--games", "2", "--rounds", "1"], capture_output=True, text=True,
                          timeout=300, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ms CPU per request, median of 1 rounds" in done.stdout
    bad = subprocess.run([sys.executable, script, "--games", "0"], capture_output=True, text=True, timeout=60, cwd=root)
    assert bad.returncode == 2 and "--games and --rounds must be at least 1" in bad.stderr
