"""The web game's server under real use: many browsers at once, ``kill -9`` and restart,
malformed HTTP, a full worker pool. (The API's contract is in test_play_web.py.)"""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from humanplay.web import ServerThread, Settings
from processes import children, running

ROOT = Path(__file__).resolve().parents[1]


class Client:
    """One browser: its own cookie jar."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with self.opener.open(req, timeout=120) as f:
                return f.status, json.loads(f.read()), f.headers
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read()), err.headers


def _first_move(state) -> int:
    if state["can_pass"]:
        return 490
    cell, values = next(iter(state["legal"].items()))
    return int(cell) * 10 + values[0] - 1


def _view(state):
    return {k: v for k, v in state.items() if k != "saved"}


@pytest.mark.slow
def test_many_browsers_at_once_all_finish(tmp_path):
    """30 simulated browsers (benchmarks/web_load.py: own cookies, own connections) each
    play a whole game against greedy at the same time, with little think time: every game
    completes, no connection error, no error status."""
    from benchmarks import web_load

    with ServerThread(Settings(opponents=["greedy"], hint="greedy", workers=1, save_dir=tmp_path)) as srv:
        result = web_load.main(["--clients", "30", "--think", "0.05", "--json", "--url", srv.url])
    assert result["games_completed"] == 30 and result["errors"] == 0, result["error_samples"]
    assert result["moves"]["n"] >= 30 * 10


# --- kill -9 and restart ----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(port: int, folder: Path) -> subprocess.Popen:
    """`play.py --web` on `port`, once its warm-up is done (the API no longer answers 503)."""
    server = subprocess.Popen([sys.executable, "play.py", "--web", "--port", str(port), "--save-dir", str(folder),
                               "--workers", "1", "--hint", "greedy"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(folder / "server.log", "ab"))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert server.poll() is None, (folder / "server.log").read_text()[-2000:]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/ready", timeout=5):
                return server
        except OSError:  # not listening yet, or 503 while it warms up
            time.sleep(0.2)
    server.kill()
    raise AssertionError("the server did not start")


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


@pytest.mark.slow
def test_kill_9_in_the_middle_of_games_then_restart_every_game_goes_on(tmp_path):
    """20 browsers a few moves into their games, a move of each in flight: kill -9 of
    the server (its workers follow), restart on the same database: every browser's
    cookie finds its game with every answered move (an unanswered one whole or not at
    all), and every game plays on."""
    port = _free_port()
    server = _start(port, tmp_path)
    try:
        base = f"http://127.0.0.1:{port}"
        browsers = [Client(base) for _ in range(20)]
        last = []
        for n, c in enumerate(browsers):  # each a few moves into its own game
            status, state, _ = c.call("POST", "/api/new", {"seed": 100 + n})
            assert status == 200
            for _ in range(n % 3 + 1):
                status, state, _ = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
                assert status == 200
            last.append(state)
        # moves in flight when the server dies: each is either kept whole or not at all
        in_flight = ThreadPoolExecutor(len(browsers))
        sent = [in_flight.submit(c.call, "POST", "/api/move", {"game": s["game"], "action": _first_move(s)})
                for c, s in zip(browsers, last)]
        time.sleep(0.05)
        workers = _descendants(server.pid)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        answered = {}
        for n, future in enumerate(sent):
            try:
                status, state, _ = future.result(timeout=60)
                if status == 200:
                    answered[n] = state
            except (OSError, http.client.HTTPException):  # the connection, or an answer cut short after its
                pass  # head, died with the server: that move may or may not be kept
        in_flight.shutdown()
        deadline = time.monotonic() + 30  # the workers notice that the server is gone
        while any(running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if running(pid)], "worker processes outlived the killed server"

        server = _start(port, tmp_path)
        for n, c in enumerate(browsers):
            status, state, _ = c.call("GET", "/api/state")  # the same cookie, no game id: its current game
            assert status == 200 and state["game"] == last[n]["game"]
            if n in answered:
                assert _view(state) == {**_view(answered[n]), "replies": state["replies"]}
            else:
                assert state["turn"] in (last[n]["turn"], last[n]["turn"] + 2)
                assert state["moves"][:len(last[n]["moves"])] == last[n]["moves"]
            while not state["over"]:  # and the game plays on (to its end for a few of them)
                turn = state["turn"]
                status, state, _ = c.call("POST", "/api/move", {"game": state["game"], "action": _first_move(state)})
                assert status == 200 and state["turn"] > turn, state
                if n >= 3:
                    break
    finally:
        server.kill()
        server.wait()


def test_ctrl_c_during_the_warm_up_stops_cleanly(tmp_path):
    """`play.py --web` on an empty numba cache answers the page at once while it compiles
    in the background; Ctrl-C then stops it within seconds (not after the compiling), with
    its 'stopped' line, no traceback, and no worker left running."""
    port = _free_port()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"), PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-u", "play.py", "--web", "--port", str(port), "--workers", "1",
                               "--hint", "greedy", "--save-dir", str(tmp_path / "played")],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None and time.monotonic() < deadline, "the page never answered"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
                    assert reply.status == 200
                break
            except OSError:
                time.sleep(0.1)
        with pytest.raises(urllib.error.HTTPError) as warming:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=30)
        assert warming.value.code == 503 and json.loads(warming.value.read())["warming_up"]
        time.sleep(1.0)  # in the middle of the compiling
        family = _descendants(server.pid)
        stopped = time.monotonic()
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=60)
        seconds = time.monotonic() - stopped
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0, output
    assert "Traceback" not in output and "stopped: every game is kept" in output, output
    assert "warm (" not in output, "the warm-up ended before Ctrl-C: the test did not test it"
    assert seconds < 20, f"{seconds:.1f} s to stop"
    assert not [pid for pid in family if running(pid)], "processes outlived the server"


# --- malformed HTTP -----------------------------------------------------------------------------------
def _one_answer(s: socket.socket) -> bytes:
    """One whole answer on a kept-alive connection: its head, then Content-Length bytes of body
    (a second `recv` for "the rest" would wait for the server's idle timeout when the first one
    already had it all)."""
    out = b""
    while b"\r\n\r\n" not in out and (chunk := s.recv(65536)):
        out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.split(b":", 1)[0].strip().lower() == b"content-length"), 0)
    while len(body) < length and (chunk := s.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


def _raw(port: int, data: bytes) -> bytes:
    """The server's answer to `data` sent as is."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):  # refused before it was all sent: read the answer
            pass
        return _one_answer(s)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(opponents=["greedy"], seed=5, hint="ismcts:time=0.5", workers=1, queue=8,
                        save_dir=tmp_path_factory.mktemp("web"))
    with ServerThread(settings) as srv:
        yield srv


def _post(head: str, body: bytes) -> bytes:
    return f"POST /api/move HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_malformed_http_gets_4xx_and_changes_nothing(server):
    c = Client(server.url)
    _, state, _ = c.call("GET", "/api/state")
    cookie = next(iter(c.jar)).value
    game = state["game"]
    head = f"Host: 127.0.0.1\r\nCookie: play247={cookie}\r\n"
    bad = [
        b"NONSENSE\r\n\r\n",  # no request line
        b"POST /api/move HTTP/1.1\r\nHost: x\r\nContent-Length: nine\r\n\r\n{}",
        f"POST /api/move HTTP/1.1\r\n{head}Content-Length: 5\r\n\r\n{{bad}}".encode(),  # bad JSON
        f"POST /api/move HTTP/1.1\r\n{head}Content-Length: 99999999\r\n\r\n{{}}".encode(),  # huge body
        f"POST /api/move HTTP/1.1\r\n{head}Transfer-Encoding: chunked\r\n\r\n".encode()
        + b"".join(b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16)) for _ in range(16)) + b"1\r\n \r\n0\r\n\r\n",
        _post(head, b'{"game": 7, "action": 253}'),  # wrong types
        _post(head, json.dumps({"game": game, "action": []}).encode()),
        _post(head, json.dumps({"game": game, "action": 2**70}).encode()),
        f"GET /api/state?game=x{'y' * 5000} HTTP/1.1\r\n{head}\r\n".encode(),
        b"GET /api/state HTTP/1.1\r\nHost: x\r\n" + b"X-Junk: " + b"z" * 300_000 + b"\r\n\r\n",  # huge header
        f"PUT /api/move HTTP/1.1\r\n{head}Content-Length: 2\r\n\r\n{{}}".encode(),
    ]
    for n, data in enumerate(bad):
        answer = _raw(server.port, data)
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
        assert status is not None and 400 <= status < 500, (n, data[:80], answer[:200])
    other = Client(server.url)  # another browser cannot reach this game
    status, err, _ = other.call("POST", "/api/move", {"game": game, "action": _first_move(state)})
    assert status == 404 and "unknown game id" in err["error"]
    _, after, _ = c.call("GET", f"/api/state?game={game}")
    assert _view(after) == _view(state)


def test_a_full_pool_answers_503_with_retry_after_never_a_reset(server):
    """The pool (hints) holds at most 8 jobs here: 16 browsers asking at once get a
    hint or a 503 with Retry-After, and every connection is answered."""
    browsers = [Client(server.url) for _ in range(16)]
    games = [c.call("GET", "/api/state")[1]["game"] for c in browsers]
    with ThreadPoolExecutor(len(browsers)) as pool:
        answers = list(pool.map(lambda cg: cg[0].call("POST", "/api/hint", {"game": cg[1]}), zip(browsers, games)))
    statuses = sorted(status for status, _, _ in answers)
    assert set(statuses) <= {200, 503} and 503 in statuses and 200 in statuses, statuses
    for status, body, headers in answers:
        if status == 503:
            assert headers["Retry-After"] == "1" and "busy" in body["error"]
    # meanwhile and after, greedy answers moves in the server itself
    status, state, _ = browsers[0].call("GET", f"/api/state?game={games[0]}")
    status, _, _ = browsers[0].call("POST", "/api/move", {"game": games[0], "action": _first_move(state)})
    assert status == 200


def test_the_request_head_is_bounded(server):
    """httptools buffers a header of any size; `http_protocol` bounds it: a head that has
    not ended within MAX_HEAD bytes gets a 400, however the bytes arrive (at once or in
    pieces); one a little shorter is served when it ends, and so is the next request on
    the same connection."""
    from humanplay.web import MAX_HEAD

    start = b"GET /static/play.css HTTP/1.1\r\nHost: x\r\nX-Pad: "
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(start + b"a" * (MAX_HEAD + 4096))  # no end of the head yet
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(start + b"a" * (MAX_HEAD - 4096))
        time.sleep(0.5)  # (so that the server reads it before the end: a head it holds, incomplete)
        s.sendall(b"\r\n\r\n")
        answer = _one_answer(s)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        s.sendall(b"GET /api/ready HTTP/1.1\r\nHost: x\r\n\r\n")  # keep-alive: the count starts again
        assert _one_answer(s).startswith(b"HTTP/1.1 200 ")
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(start)
        for _ in range(MAX_HEAD // 4096 + 1):  # in pieces the server reads one by one
            time.sleep(0.01)
            s.sendall(b"a" * 4096)
        answer = s.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
