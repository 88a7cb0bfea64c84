"""The web game in a real headless Chromium (Debian's /usr/bin/chromium driven by
Playwright; never a downloaded browser): a whole 2-player game against greedy played by
clicking, the scores on the page checked against the engine, and a screenshot of the
page mid-game checked for what the browser shows.

The README's picture, docs/play_web.png, is this test's screenshot; to draw it again:

    PLAY_WEB_SCREENSHOT=docs/play_web.png python -m pytest tests/test_play_browser.py -k full_game

(PLAY_WEB_TEAM_SCREENSHOT=FILE keeps the team game's screenshot of `-k team_server`, to look at.)
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from engine import GameState

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]
SEED = 11
SCREENSHOT_MOVE = 7  # the person's move before which the picture is taken (mid-game, hint shown)

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason="Debian's chromium is not installed at "
                                "/usr/bin/chromium (apt-get install chromium; .ci/run does)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module (each test is its own browser context, its own cookie)."""
    from humanplay.web import ServerThread, Settings

    settings = Settings(opponents=["greedy"], seed=SEED, hint="ismcts:iterations=300",
                        save_dir=tmp_path_factory.mktemp("web"), workers=1)
    with ServerThread(settings) as srv:
        yield srv.url


@pytest.fixture(scope="module")
def browser():
    # playwright is in the test extra: without it this is an error, not a skip
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, timeout=60_000)
        try:
            yield chromium
        finally:
            chromium.close()


@contextlib.contextmanager
def _new_page(browser):
    """A page in a browser context of its own (its own cookies), closed after."""
    context = browser.new_context(viewport={"width": 1100, "height": 720})
    try:
        page = context.new_page()
        page.set_default_timeout(30_000)
        yield page
    finally:
        context.close()


@pytest.fixture
def page(browser):
    with _new_page(browser) as page:
        yield page


def _scores(page) -> list[int]:
    return [int(x) for x in page.locator("#scores td.score").all_inner_texts()]


def _game_id(page) -> str:
    return page.evaluate("game.game")


def _wait_for_answer(page) -> None:
    page.wait_for_function("() => game !== null && !busy")


def _play_one(page) -> None:
    """Click a legal move as a person would: a highlighted cell, then a tile that fits it."""
    if page.locator("#pass").is_visible():
        page.click("#pass")
        return
    cell = page.locator("#cells .cell.legal").first
    cell.click()
    assert page.locator("#cells .cell.selected").count() == 1
    page.locator("#hand .tile.playable").first.click()


def _check_screenshot(path: Path, page) -> None:
    """The picture is the page as the browser drew it now: a PNG as wide as the window,
    with the board's tiles and the green of the legal cells in it, taken while the page
    shows the hint and the person's hand."""
    from matplotlib.image import imread

    pixels = imread(path)[:, :, :3]
    assert pixels.shape[1] == 1100 and pixels.shape[0] >= 720
    assert len({tuple(p) for p in (pixels[::7, ::7] * 255).astype(int).reshape(-1, 3)}) > 20  # not a blank page
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((green > red + 0.1) & (green > blue + 0.1)).sum() > 500  # the legal cells' green
    assert "hint (" in page.locator("#hintbox").inner_text()
    assert page.locator("#hand .tile").count() == len(page.evaluate("game.hand")) > 0
    assert page.locator("#cells .cell").count() == 49 and page.locator("#cells .cell.selected").count() == 1


def test_full_game_against_greedy_by_clicking(server, page, tmp_path):
    screenshot = Path(os.environ.get("PLAY_WEB_SCREENSHOT") or tmp_path / "play_web.png")
    screenshot.unlink(missing_ok=True)  # the check below is of the picture this run takes
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    assert page.locator("#scores tbody tr").count() == 2
    moves = 0
    while not page.evaluate("game.over"):
        turn = page.evaluate("game.turn")
        if moves == SCREENSHOT_MOVE:
            page.click("#hint")
            page.wait_for_selector("#hintbox:not([hidden])")
            page.locator("#cells .cell.legal").first.click()
            assert not screenshot.exists()
            page.screenshot(path=str(screenshot), full_page=True, animations="disabled")
            _check_screenshot(screenshot, page)
            page.locator("#cells .cell.selected").click()  # deselect, then play as usual
        _play_one(page)
        page.wait_for_function(f"() => !busy && (game.turn > {turn} || game.over)")
        assert page.locator("#error").inner_text() == ""
        moves += 1
        assert moves < 60
    # the page's numbers against the engine replaying the saved record
    game_id = _game_id(page)
    record = page.evaluate(f"fetch('/api/record?game={game_id}').then(r => r.json())")
    state = GameState.from_deal(record["deal"], record["num_players"], record["team"])
    for action in record["actions"]:
        state.step(action)
    assert state.is_over
    assert _scores(page) == state.scores.tolist() == record["scores"]
    assert [int(x) for x in page.locator("#scores td[id^=tiles]").all_inner_texts()] == state.hand_sizes.tolist()
    assert record["labels"] == ["human", "greedy"]
    assert "game over" in page.locator("#status").inner_text()
    assert page.locator("#undo").is_disabled()  # no undo once the deal can be seen
    # step-by-step replay of the finished game
    page.click("#first")
    page.wait_for_function("() => !busy && document.getElementById('stepinfo').textContent.startsWith('move 0 ')")
    assert _scores(page) == [0, 0]
    page.click("#next")
    page.wait_for_function("() => !busy && document.getElementById('stepinfo').textContent.startsWith('move 1 ')")
    assert screenshot.is_file() and moves > SCREENSHOT_MOVE


def _boards_to_draw() -> list[tuple[dict, str]]:
    """(board_data, board_svg) of positions of 2-, 3- and 4-player team games, seen by each
    seat in turn, with marks of every kind: labelled or not, a colour of their own or the
    default, on empty, occupied and Double Time cells, a label that needs escaping, a pass."""
    import numpy as np

    from engine import random_deal, rules
    from engine.view import PlayerView
    from env import render_svg

    rng = np.random.default_rng(7)
    out = []
    for seed, (n, team) in enumerate([(2, False), (3, False), (4, True)]):
        state = GameState.from_deal(random_deal(seed), n, team)
        step = 0
        while not state.is_over:
            view = PlayerView(state, step % n)
            board = view.board.ravel()
            empty_double = [c for c in rules.DOUBLE_TIME_CELLS if not board[c]]
            marks = [(int(rng.integers(rules.PASS_ACTION)), f"P{step % n}"), int(rng.integers(rules.PASS_ACTION)),
                     (rules.PASS_ACTION, "pass")]
            if empty_double:
                marks.append((empty_double[step % len(empty_double)] * rules.MAX_VALUE + step % 10, "better", "#1a9a4a"))
            if board.any():
                marks.append((int(np.flatnonzero(board)[0]) * rules.MAX_VALUE, "<you & \"me\">", "#d21e1eb0"))
            marks = marks[:1 + step % len(marks)]
            out.append((render_svg.board_data(view, marks), render_svg.board_svg(view, caption=False, marks=marks)))
            state.step(int(rng.choice(state.legal_actions())))
            step += 1
    return out


def test_the_page_draws_each_board_as_render_svg_does(server, page):
    """The server sends the board as data (`render_svg.board_data`) and the page draws it
    (play.js `boardSvg`): the same SVG as `render_svg.board_svg`, character for character."""
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    cases = _boards_to_draw()
    assert any(board["timeouts"] for board, _ in cases) and any(board["last"] >= 0 for board, _ in cases)
    assert {len(board["marks"]) for board, _ in cases} == {1, 2, 3, 4}
    drawn = page.evaluate("boards => boards.map(boardSvg)", [board for board, _ in cases])
    for k, ((board, svg), mine) in enumerate(zip(cases, drawn)):
        assert mine == svg, f"board {k} of {len(cases)}: {board}"
    assert page.evaluate("document.querySelector('#svg').innerHTML.length") > 5000  # the game's own board, drawn


def test_illegal_click_changes_nothing(server, page):
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    before = page.evaluate("JSON.stringify([game.turn, game.scores, game.hand])")
    page.locator("#cells .cell:not(.legal)").first.click()  # a cell no tile may go on
    assert page.locator("#cells .cell.selected").count() == 0
    status = page.evaluate("api('POST', '/api/move', {game: game.game, action: 0}).catch(e => e.message)")
    assert "illegal move" in status
    assert page.evaluate("JSON.stringify([game.turn, game.scores, game.hand])") == before
    state = page.evaluate("api('GET', '/api/state?game=' + game.game)")
    assert [state["turn"], state["scores"], state["hand"]] == json.loads(before)


def test_open_a_tournament_record_and_step_through_it(server, page, tmp_path):
    import agents
    from agents.play import play_game
    from engine import random_deal

    game = play_game([agents.make("greedy"), agents.make("random", seed=2)], random_deal(4)).to_dict()
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"game": 0, "labels": ["greedy", "random"], "deal_seed": 4, **game}) + "\n")
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    page.set_input_files("#open", str(path))
    page.wait_for_function("() => !busy && game.over")
    assert _scores(page) == game["scores"]
    assert page.locator("#replay").is_visible()
    page.click("#first")
    page.wait_for_function("() => !busy && document.getElementById('stepinfo').textContent.startsWith('move 0 ')")
    page.click("#next")
    page.wait_for_function("() => !busy && document.getElementById('stepinfo').textContent.startsWith('move 1 ')")
    assert page.locator("#log li").count() == 1


# --- the players and teams controls, the table, and the page's small parts -------------------------
TEAM_VARIANT = "4 players, teams: you (seat 0) and seat 2 against seats 1 and 3"


def _new_game(page) -> dict:
    """Click New game and wait for the new game; the API's state of it."""
    before = _game_id(page)
    page.click("#new")
    page.wait_for_function(f"() => !busy && game.game !== {json.dumps(before)}")
    assert page.locator("#error").inner_text() == ""
    return page.evaluate(f"api('GET', '/api/state?game={_game_id(page)}')")


def test_players_and_teams_controls_start_the_variant_chosen(server, page):
    """On a 2-player server: teams can be chosen only with 4 players; New game starts the
    variant chosen, which the page then names above the table; a team request with 3
    players forced past the disabled control is refused, the game kept."""
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    assert page.locator("#variant").inner_text() == "2 players: you (seat 0) against seat 1"
    assert page.locator("#players").input_value() == "2" and page.locator("#team").is_disabled()
    page.select_option("#players", "3")
    assert page.locator("#team").is_disabled()
    page.select_option("#players", "4")
    page.check("#team")
    state = _new_game(page)
    assert state["players"] == 4 and state["team"] and state["labels"] == ["human", "greedy", "greedy", "greedy"]
    assert page.locator("#variant").inner_text() == TEAM_VARIANT
    assert page.locator("#scores tbody tr").count() == 5  # 4 seats and the teams' sums
    assert page.locator("#seat-2").inner_text().split("\t")[1] == "partner, greedy"
    assert page.locator("#scores tbody tr").last.inner_text().startswith("teams: 0+2 (yours) ")
    page.select_option("#players", "3")  # teams go: a 3-player game has none
    assert page.locator("#team").is_disabled() and not page.locator("#team").is_checked()
    state = _new_game(page)
    assert state["players"] == 3 and not state["team"]
    assert page.locator("#variant").inner_text() == "3 players: you (seat 0) against seats 1 and 2"
    game = _game_id(page)
    page.evaluate("() => { $('team').disabled = false; $('team').checked = true; }")  # past the control
    page.click("#new")
    page.wait_for_function("() => !busy && document.getElementById('error').textContent !== ''")
    assert "team variant is for 4 players" in page.locator("#error").inner_text()
    assert _game_id(page) == game and page.evaluate("api('GET', '/api/state')")["game"] == game


@pytest.fixture
def team_server(tmp_path):
    """A server started as `play.py --web --players 4 --team`."""
    from humanplay.web import ServerThread, Settings

    settings = Settings(opponents=["greedy"], players=4, team=True, seed=SEED, hint="greedy", save_dir=tmp_path,
                        workers=1)
    with ServerThread(settings) as srv:
        yield srv.url


def test_a_team_server_shows_its_variant_and_the_table_stays_put(team_server, page, tmp_path):
    """A server started with --players 4 --team: the page has that variant chosen from the
    start and New game starts it again; the show buttons of the team variant wrap under
    the hand, so the right panel stays beside the board, where it was. The page loads
    with no request failing (its icon is served) and draws its buttons with its own font
    (no empty boxes). The screenshot of the team game is kept for a look at it."""
    from fontTools.ttLib import TTFont
    from matplotlib import get_data_path

    failed = []
    page.on("console", lambda message: "Failed to load resource" in message.text and failed.append(message.text))
    page.goto(team_server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    assert page.locator("#players").input_value() == "4" and page.locator("#team").is_checked()
    assert page.locator("#variant").inner_text() == TEAM_VARIANT
    right = page.locator("#right").bounding_box()
    state = _new_game(page)
    assert state["players"] == 4 and state["team"]
    assert page.locator("#players").input_value() == "4" and page.locator("#team").is_checked()
    for _ in range(3):  # a few moves in: scores on the table, the agents' replies beside the board
        turn = page.evaluate("game.turn")
        _play_one(page)
        page.wait_for_function(f"() => !busy && game.turn > {turn}")
    assert page.locator("#shows button").count() >= 2  # the show buttons are up
    board = page.locator("#board").bounding_box()
    now, left = page.locator("#right").bounding_box(), page.locator("#left").bounding_box()
    assert now["x"] == right["x"] and now["y"] == right["y"] == left["y"]  # beside the board, where it was
    assert board["x"] + board["width"] <= right["x"] <= board["x"] + board["width"] + 30
    screenshot = Path(os.environ.get("PLAY_WEB_TEAM_SCREENSHOT") or tmp_path / "play_web_team.png")
    page.screenshot(path=str(screenshot), full_page=True, animations="disabled")
    assert failed == []  # (a missing icon: "Failed to load resource: ... 404 (Not Found)")
    assert page.evaluate("document.querySelector('link[rel=icon]').href").endswith("/static/favicon.svg")
    icon = page.evaluate("fetch(document.querySelector('link[rel=icon]').href)"
                         ".then(r => [r.status, r.headers.get('Content-Type')])")
    assert icon == [200, "image/svg+xml"]
    font = TTFont(Path(get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf").getBestCmap()  # the page's font
    assert page.evaluate("getComputedStyle(document.body).fontFamily").startswith('"DejaVu Sans"')
    text = "".join(page.locator("button, label").all_text_contents())
    assert [c for c in text if not c.isspace() and ord(c) not in font] == []
    assert page.locator("#replay button svg path").count() == 4
    page.evaluate("draw(Object.assign({}, game, {bag: 1}))")
    assert page.locator("#bag").inner_text() == "bag: 1 tile"


def test_the_ai_partners_show_is_on_the_page(browser, tmp_path):
    """With search agents at the table, the person's partner (seat 2) shows a tile before
    its first placement: the page says which value, and the opponents' shows stay hidden
    in the replies beside the board."""
    from humanplay.web import ServerThread, Settings

    settings = Settings(opponents=["ismcts:iterations=20"], players=4, team=True, seed=SEED, hint="greedy",
                        save_dir=tmp_path, workers=1)
    with ServerThread(settings) as srv, _new_page(browser) as page:
        page.goto(srv.url)
        page.wait_for_selector("#cells .cell")
        _wait_for_answer(page)
        _play_one(page)
        page.wait_for_function("() => !busy && game.turn > 0 && game.your_turn")
        shown = page.evaluate("game.partner_shows")
        assert 1 <= shown <= 10
        assert page.locator("#bag").inner_text().endswith(f"your partner shows you a {shown}")
        replies = page.evaluate("game.replies")
        assert [r["move"] for r in replies if r["action"] is None and r["seat"] in (1, 3)] == \
            ["shows a tile to its partner"] * 2
        assert f"show {shown}" in [r["move"] for r in replies if r["seat"] == 2]


# --- a cold start ---------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
COLD_START_LIMIT = 1800  # seconds for the warm-up on an empty cache (minutes on busy cores)


def _kernels(cache: Path) -> set[str]:
    return {str(p.relative_to(cache)) for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")}


@pytest.mark.slow
def test_a_cold_server_shows_its_warm_up_then_the_game(browser, tmp_path):
    """`play.py --web` on an empty numba cache says 'serving 24/7 on URL' at once and the
    page loads while it warms up in the background, saying so; once the server says
    'warm', the page shows the game, a move is answered by the agents, and no kernel is
    compiled after that line (the cache gains none), each within the page's 30 s wait."""
    import queue
    import socket
    import subprocess
    import sys
    import threading
    import time

    cache = tmp_path / "numba-cache"
    cache.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-u", "play.py", "--web", "--port", str(port), "--workers", "1",
                               "--opponents", "greedy", "--hint", "greedy", "--save-dir", str(tmp_path / "played")],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    said: list[str] = []

    def wait_for_line(prefix: str) -> None:
        deadline = time.monotonic() + COLD_START_LIMIT
        while not (said and said[-1].startswith(prefix)):
            try:
                said.append(lines.get(timeout=1).strip())
            except queue.Empty:
                assert server.poll() is None, f"the server ended: {said}"
                assert time.monotonic() < deadline, f"no {prefix!r} line after {COLD_START_LIMIT} s: {said}"

    try:
        wait_for_line("serving 24/7 on http://")
        assert f":{port}/" in said[-1]
        with _new_page(browser) as page:
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_function("() => document.getElementById('status').textContent"
                                   ".startsWith('warming up the engine (first run only)')")
            assert page.evaluate("game") is None
            wait_for_line("warm (")
            assert any(line.startswith("warming up the engine and agents") for line in said), said
            compiled = _kernels(cache)
            assert compiled  # the warm-up compiled (an empty cache)
            page.wait_for_selector("#cells .cell")
            _wait_for_answer(page)
            turn = page.evaluate("game.turn")
            _play_one(page)
            page.wait_for_function(f"() => !busy && (game.turn > {turn} || game.over)")
            assert page.locator("#error").inner_text() == ""
        assert _kernels(cache) == compiled, "kernels compiled after the server said it was warm"
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_the_page_waits_out_the_warm_up_then_plays(browser, tmp_path, monkeypatch):
    """A warm-up held back (a first run compiling): the page says it warms up, counting
    the seconds, and shows the game once it is done."""
    import threading

    from humanplay import web

    gate, real = threading.Event(), web._warm_page
    monkeypatch.setattr(web, "_warm_page", lambda settings, specs: gate.wait(120) and real(settings, specs))
    settings = web.Settings(opponents=["greedy"], hint="greedy", save_dir=tmp_path, workers=1)
    with web.ServerThread(settings, wait_warm=False) as srv:
        with _new_page(browser) as page:
            try:
                page.goto(srv.url)
                page.wait_for_function("() => /^warming up the engine \\(first run only\\) … [1-9]\\d* s$/"
                                       ".test(document.getElementById('status').textContent)")
                assert page.evaluate("game") is None and page.evaluate("busy")
                gate.set()
                page.wait_for_selector("#cells .cell", timeout=120_000)
                _wait_for_answer(page)
                _play_one(page)
                page.wait_for_function("() => !busy && game.turn >= 2")
                assert page.locator("#error").inner_text() == ""
            finally:
                gate.set()


def test_the_page_says_when_the_warm_up_failed(browser, tmp_path, monkeypatch):
    from humanplay import web

    def failing_warm_page(settings, specs):
        raise RuntimeError("no kernels today")

    monkeypatch.setattr(web, "_warm_page", failing_warm_page)
    settings = web.Settings(opponents=["greedy"], hint="greedy", save_dir=tmp_path, workers=1)
    with web.ServerThread(settings, wait_warm=False) as srv:
        with _new_page(browser) as page:
            page.goto(srv.url)
            page.wait_for_function("() => document.getElementById('error').textContent.includes('no kernels today')")
            assert "warm-up failed" in page.locator("#error").inner_text()
            assert page.locator("#status").inner_text() == "the server cannot start a game"


def test_review_after_a_game_shows_progress_then_the_costliest_moves(server, page):
    page.goto(server)
    page.wait_for_selector("#cells .cell")
    _wait_for_answer(page)
    assert page.locator("#review").is_hidden()  # a review is for a finished game
    moves = 0
    while not page.evaluate("game.over"):
        turn = page.evaluate("game.turn")
        _play_one(page)
        page.wait_for_function(f"() => !busy && (game.turn > {turn} || game.over)")
        moves += 1
        assert moves < 60
    # every text the review box shows, kept as it changes (the progress, then the review)
    page.evaluate("""() => {
        window.reviewTexts = [];
        new MutationObserver(() => window.reviewTexts.push(document.getElementById('reviewbox').textContent))
            .observe(document.getElementById('reviewbox'), {childList: true, subtree: true, characterData: true});
    }""")
    page.click("#review")
    # one request per decision, each analysed in the server's one slow worker: minutes on busy cores
    page.wait_for_function("() => !busy && document.querySelectorAll('#reviewbox .review-move').length > 0",
                           timeout=600_000)
    assert page.locator("#error").inner_text() == ""
    texts = page.evaluate("window.reviewTexts")
    progress = [tuple(map(int, t.split(": ")[1].split(" / "))) for t in texts if t.startswith("reviewing your moves: ")]
    total = progress[0][1]
    assert total > 5 and [done for done, _ in progress][:total - 1] == list(range(1, total))
    items = page.locator("#reviewbox .review-move")
    assert 1 <= items.count() <= 3
    first = items.first.inner_text()
    assert "you played" in first and "the judge plays " in first and "of a win" in first
    from humanplay.review import judge_line

    assert judge_line(2, False) in page.locator("#reviewbox").inner_text()
    assert items.first.locator("svg").count() == 1  # the board, with both moves marked
    assert "better" in items.first.locator("svg").inner_html()
