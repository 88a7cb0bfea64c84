"""The web game's answer time: one move of the person, the agents' replies included.

    python benchmarks/play_latency.py                      # greedy and ismcts:time=0.1
    python benchmarks/play_latency.py --opponents greedy --games 4 --json

Starts the web app (humanplay.web) on a free localhost port and plays whole 2-player games
through its HTTP API as the page does: each move is a POST /api/move whose answer holds
the agent's reply and the new board SVG. The time of a move runs from sending the request
to having parsed the answer. The person's moves are the first legal placement listed (they
cost nothing to choose). The first move of a warm-up game, which may compile kernels, is
not counted. Budget per move: 0.2 s for an agent without a time budget, else its time
budget plus 0.1 s.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.base import parse_spec
from benchmarks.machine import describe, machine_info
from engine import rules
from humanplay.web import ServerThread, Settings

DEFAULT_OPPONENTS = ("greedy", "ismcts:time=0.1")


def budget(spec: str) -> float:
    """Seconds a move may take: the agent's time budget plus 0.1 s, else 0.2 s."""
    seconds = parse_spec(spec)[2].get("time")
    return 0.2 if seconds is None else float(seconds) + 0.1


class Page:
    """What the page does, over HTTP: one browser (one cookie jar)."""

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with self.opener.open(req, timeout=60) as f:
            return json.loads(f.read())


def first_move(state: dict) -> int:
    if state["can_pass"]:
        return rules.PASS_ACTION
    cell, values = next(iter(state["legal"].items()))
    return int(cell) * rules.MAX_VALUE + values[0] - 1


def play_games(page: Page, games: int, seed: int) -> list[float]:
    """Seconds of every move's round trip over `games` games."""
    times = []
    for g in range(games):
        state = page.call("POST", "/api/new", {"seed": seed + g})
        while not state["over"]:
            start = time.perf_counter()
            state = page.call("POST", "/api/move", {"game": state["game"], "action": first_move(state)})
            times.append(time.perf_counter() - start)
    return times


def measure(spec: str, games: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as saved:
        with ServerThread(Settings(opponents=[spec], seed=seed, save_dir=Path(saved), workers=1)) as server:
            page = Page(server.port)
            warm = page.call("POST", "/api/new", {"seed": seed + 10_000})
            page.call("POST", "/api/move", {"game": warm["game"], "action": first_move(warm)})
            times = play_games(page, games, seed)
    limit = budget(spec)
    return {"opponent": spec, "moves": len(times), "median_s": statistics.median(times),
            "p90_s": statistics.quantiles(times, n=10)[-1], "max_s": max(times), "budget_s": limit,
            "within_budget": statistics.median(times) <= limit,
            "over_budget_moves": sum(t > limit for t in times)}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opponents", nargs="+", default=list(DEFAULT_OPPONENTS), metavar="SPEC",
                        help="agent specs to measure, one after the other (default greedy ismcts:time=0.1)")
    parser.add_argument("--games", type=int, default=2, help="whole games per opponent (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="deal seed of the first game")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
    rows = [measure(spec, args.games, args.seed) for spec in args.opponents]
    if args.json:
        print(json.dumps({"machine": machine_info(), "results": rows}))
        return rows
    print(f"machine: {describe()}, load average {machine_info()['load_average']:.2f}")
    print(f"{'opponent':<20} {'moves':>5} {'median':>8} {'p90':>8} {'max':>8} {'budget':>7}  median within")
    for r in rows:
        print(f"{r['opponent']:<20} {r['moves']:>5} {r['median_s']:>7.3f}s {r['p90_s']:>7.3f}s {r['max_s']:>7.3f}s "
              f"{r['budget_s']:>6.2f}s  {'yes' if r['within_budget'] else 'NO'} ({r['over_budget_moves']} moves over)")
    return rows


if __name__ == "__main__":
    main()
