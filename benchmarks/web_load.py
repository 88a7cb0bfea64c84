"""The web game under load: N simulated browsers play whole games at once over HTTP.

    python benchmarks/web_load.py --clients 200                     # vs greedy, 1 s think time
    python benchmarks/web_load.py --clients 40 --hinters 20         # 20 of them ask ismcts:time=1 hints
    python benchmarks/web_load.py --clients 20 --json

Starts the server as its own process (`python play.py --web` on a free 127.0.0.1 port,
a fresh database in a temporary folder), or uses a running one (--url). Each simulated
browser has its own cookie and its own keep-alive connection (asyncio, one process),
opens its game (GET /api/state), then until the game is over waits a think time
(uniform in [0.5, 1.5] x --think seconds, like a person choosing) and plays the first
legal move the page lists (POST /api/move). A hinter first asks for a hint (POST
/api/hint) and plays the hinted move; hinters are background load: they play until the
other browsers have finished (their games are not counted, their hints are timed). A 503 is retried after its Retry-After (counted,
not an error); a connection error, a timeout or another error status is an error.

Reported: games completed, errors, 503s, and latency percentiles of the moves (from
sending the request to having read the answer), also with the agents' own thinking
(the answer's Server-Timing) taken out, and of the hints; then the machine and its load
average before the run (other work on the machine shows there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PASS = 490
MAX_VALUE = 10


class Browser:
    """One simulated browser: a cookie and a keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int, timeout: float):
        self.host, self.port, self.timeout = host, port, timeout
        self.cookie: str | None = None
        self._reader = self._writer = None

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._reader = self._writer = None

    async def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, dict]:
        """(status, JSON answer, headers); raises on a connection error or a timeout."""
        return await asyncio.wait_for(self._call(method, path, body), self.timeout)

    async def _call(self, method, path, body):
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        data = b"" if body is None else json.dumps(body).encode()
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(data)}",
                "Content-Type: application/json"]
        if self.cookie:
            head.append(f"Cookie: {self.cookie}")
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await self._writer.drain()
        status_line = await self._reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = await self._reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        payload = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if "set-cookie" in headers:
            self.cookie = headers["set-cookie"].split(";", 1)[0]
        keep = headers.get("connection", "").lower()
        if keep == "close" or (status_line.startswith(b"HTTP/1.0") and keep != "keep-alive"):
            await self.close()  # the server ends the connection: the next request opens another
        return status, json.loads(payload or b"{}"), headers


def first_move(state: dict) -> int:
    if state["can_pass"]:
        return PASS
    cell, values = next(iter(state["legal"].items()))
    return int(cell) * MAX_VALUE + values[0] - 1


def agent_ms(headers: dict) -> float:
    """The agents' thinking in the answer's Server-Timing (agents;dur=MS), else 0."""
    for part in headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "agents":
            return float(dur)
    return 0.0


class Tally:
    def __init__(self):
        self.moves: list[float] = []  # seconds
        self.moves_net: list[float] = []  # seconds, the agents' thinking taken out
        self.hints: list[float] = []
        self.errors: list[str] = []
        self.busy = 0  # 503 answers (retried)
        self.completed = 0
        self.requests = 0


async def timed(browser: Browser, tally: Tally, method: str, path: str, body=None):
    """One request, retried after a 503's Retry-After; returns (seconds, status, answer, headers)."""
    while True:
        start = time.perf_counter()
        status, answer, headers = await browser.call(method, path, body)
        seconds = time.perf_counter() - start
        tally.requests += 1
        if status != 503:
            return seconds, status, answer, headers
        tally.busy += 1
        await asyncio.sleep(float(headers.get("retry-after", "1")))


async def play(n: int, host: str, port: int, args, tally: Tally, rng: random.Random, done: asyncio.Event) -> None:
    browser = Browser(host, port, args.timeout)
    hinter = n < args.hinters
    try:
        await asyncio.sleep(rng.uniform(0, args.think))  # browsers arrive over the first think time
        _, status, state, _ = await timed(browser, tally, "GET", "/api/state")
        if status != 200:
            raise RuntimeError(f"state: {status} {state}")
        moves = 0
        while not state["over"]:
            if hinter and done.is_set():
                return
            await asyncio.sleep(rng.uniform(0.5, 1.5) * args.think)
            action = first_move(state)
            if hinter:
                seconds, status, hint, _ = await timed(browser, tally, "POST", "/api/hint", {"game": state["game"]})
                if status != 200:
                    raise RuntimeError(f"hint: {status} {hint}")
                tally.hints.append(seconds)
                action = hint["action"]
            seconds, status, state, headers = await timed(browser, tally, "POST", "/api/move",
                                                          {"game": state["game"], "action": action})
            if status != 200:
                raise RuntimeError(f"move: {status} {state}")
            if not hinter:  # the figures are the other browsers' moves
                tally.moves.append(seconds)
                tally.moves_net.append(max(seconds - agent_ms(headers) / 1000, 0.0))
            moves += 1
            if moves > 200:
                raise RuntimeError("the game does not end")
            if hinter and state["over"]:  # a hinter plays on in a new game while the others play
                _, status, state, _ = await timed(browser, tally, "POST", "/api/new", {})
        tally.completed += not hinter
    except Exception as exc:  # noqa: BLE001 (every failure is counted and reported)
        tally.errors.append(f"browser {n}: {type(exc).__name__}: {exc}"[:300])
    finally:
        await browser.close()


async def run_load(host: str, port: int, args) -> Tally:
    tally = Tally()
    rng = random.Random(args.seed)
    done = asyncio.Event()
    hinters = [asyncio.create_task(play(n, host, port, args, tally, random.Random(rng.random()), done))
               for n in range(args.hinters)]
    await asyncio.gather(*(play(n, host, port, args, tally, random.Random(rng.random()), done)
                           for n in range(args.hinters, args.clients)))
    done.set()
    await asyncio.gather(*hinters)
    return tally


def percentiles(values: list[float]) -> dict:
    if not values:
        return {}
    ms = sorted(v * 1000 for v in values)
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 1), "p90_ms": round(q[89], 1),
            "p99_ms": round(q[98], 1), "max_ms": round(ms[-1], 1)}


# --- the server, as its own process -------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, folder: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    command = [sys.executable, str(ROOT / "play.py"), "--web", "--port", str(port), "--opponents", args.opponent,
               "--save-dir", str(folder), "--workers", str(args.workers), "--hint", args.hint_spec]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(folder / "server.log", "wb"),
                              start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited: {(folder / 'server.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/ready", timeout=5):  # warmed up
                return server, port
        except OSError:  # not listening yet, or 503 while it warms up
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("the server did not start in 180 s")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of process `pid` and of its live descendants (the workers)."""
    own, total, todo = None, 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            seconds = (int(fields[11]) + int(fields[12])) / tick
            own = seconds if own is None else own
            total += seconds
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return own or 0.0, total - (own or 0.0)


def stop_server(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200, help="simulated browsers at once (default 200)")
    parser.add_argument("--opponent", default="greedy", metavar="SPEC", help="the agent they play (default greedy)")
    parser.add_argument("--think", type=float, default=1.0, metavar="S",
                        help="mean seconds a browser waits before each move (default 1.0; 0: none)")
    parser.add_argument("--hinters", type=int, default=0, metavar="K",
                        help="how many of the browsers ask for a hint before each move (default 0)")
    parser.add_argument("--hint-spec", default="ismcts:time=1", metavar="SPEC", help="the hint agent")
    parser.add_argument("--workers", type=int, default=2, help="server: worker processes for searching agents and hints (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one request may take (default 120)")
    parser.add_argument("--url", default=None, help="a running server (http://127.0.0.1:PORT) instead of a new one")
    parser.add_argument("--seed", type=int, default=0, help="seed of the think times")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.clients < 1 or not 0 <= args.hinters <= args.clients or args.think < 0:
        parser.error("need --clients >= 1, 0 <= --hinters <= --clients and --think >= 0")
    from benchmarks.machine import describe, machine_info

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if args.url:
            host, port = args.url.split("//", 1)[-1].rstrip("/").split(":")
            port = int(port)
        else:
            server, port = start_server(args, Path(tmp))
            host = "127.0.0.1"
        try:
            cpu_before = cpu_seconds(server.pid) if server else None
            start = time.perf_counter()
            tally = asyncio.run(run_load(host, port, args))
            wall = time.perf_counter() - start
            cpu = [b - a for a, b in zip(cpu_before, cpu_seconds(server.pid))] if server else None
        finally:
            if server is not None:
                stop_server(server)
    result = {"clients": args.clients, "opponent": args.opponent, "think_s": args.think, "hinters": args.hinters,
              "hint_spec": args.hint_spec if args.hinters else None, "workers": args.workers,
              "games_completed": tally.completed, "errors": len(tally.errors), "error_samples": tally.errors[:5],
              "busy_503": tally.busy, "wall_s": round(wall, 1),
              "server_cpu_ms_per_request": None if cpu is None else round(sum(cpu) * 1000 / max(tally.requests, 1), 2),
              "server_main_cpu_ms_per_request": None if cpu is None else round(cpu[0] * 1000 / max(tally.requests, 1), 2), "moves": percentiles(tally.moves),
              "moves_without_agents": percentiles(tally.moves_net), "hints": percentiles(tally.hints),
              "load_average_before": load_before, "machine": machine_info()}
    if args.json:
        print(json.dumps(result))
        return result
    print(f"machine: {describe()}; load average before the run {load_before:.2f}")
    print(f"{args.clients} browsers vs {args.opponent}, think {args.think} s, {args.hinters} hinters "
          f"({args.hint_spec}), {args.workers} workers: {tally.completed}/{args.clients - args.hinters} "
          "games completed, "
          f"{len(tally.errors)} errors, {tally.busy} answers 503 (retried), {wall:.1f} s")
    if result["server_cpu_ms_per_request"] is not None:
        print(f"  server CPU: {result['server_cpu_ms_per_request']:.2f} ms per request, of which the event loop's "
              f"process {result['server_main_cpu_ms_per_request']:.2f} ms, its workers the rest ({tally.requests} requests)")
    for name in ("moves", "moves_without_agents", "hints"):  # moves: the browsers that do not ask hints
        row = result[name]
        if row:
            print(f"  {name:<22} n={row['n']:<6} p50 {row['p50_ms']:>7.1f} ms  p90 {row['p90_ms']:>7.1f} ms  "
                  f"p99 {row['p99_ms']:>7.1f} ms  max {row['max_ms']:>7.1f} ms")
    for line in tally.errors[:5]:
        print("  error:", line)
    return result


if __name__ == "__main__":
    main()
