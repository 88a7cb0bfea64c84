"""The web server's own work per request, without HTTP: CPU time of the calls the API
makes (`humanplay.web.Games.new_game` and `.move`, the answer encoded as JSON) over whole
games against greedy, in this process.

    python benchmarks/web_request.py                    # CPU per request, median of 5 rounds
    python benchmarks/web_request.py --profile          # cProfile of one round, by own time
    python benchmarks/web_request.py --root /tmp/old    # another checkout (git worktree add ...)

Each round plays `--games` games (the person plays the first legal move the page lists,
greedy replies in the server itself, every move written to a fresh SQLite file), after 3
games to warm up. The load benchmark (`web_load.py`) measures the whole server over HTTP,
whose CPU a request is this plus the HTTP stack and the event loop, and which swings with
the machine's other work; this one isolates the Python work that the code changes, so
two checkouts compare within a few percent.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.web_load import first_move  # noqa: E402 (the move the load benchmark's browsers play)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=40, help="games a round (default 40)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    p.add_argument("--profile", action="store_true", help="profile one round instead")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    args = p.parse_args()
    if args.games < 1 or args.rounds < 1:
        p.error("--games and --rounds must be at least 1")
    sys.path.insert(0, str(args.root.resolve()))
    from benchmarks.machine import describe
    from humanplay.store import Store
    from humanplay.web import Games, Settings

    folder = tempfile.TemporaryDirectory()
    settings = Settings(opponents=["greedy"], hint="greedy", save_dir=Path(folder.name), seed=1)
    games = Games(settings, Store(settings.db_path), None)  # greedy answers here: no worker pool

    async def play(n: int) -> int:
        requests = 0
        for g in range(n):
            sid = f"browser{games.next_seed()}"
            state = await games.new_game(sid, {})
            while True:
                json.dumps(state)
                requests += 1
                if state["over"]:
                    break
                state = await games.move(sid, {"game": state["game"], "action": first_move(state)})
        return requests

    asyncio.run(play(3))
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        asyncio.run(play(args.games))
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        folder.cleanup()
        return
    per_request = []
    for _ in range(args.rounds):
        start = time.process_time()
        n = asyncio.run(play(args.games))
        per_request.append((time.process_time() - start) / n * 1e3)
    print(f"{args.root}: {statistics.median(per_request):.3f} ms CPU per request, median of {args.rounds} rounds "
          f"({', '.join(f'{x:.3f}' for x in per_request)}; {n} requests a round)")
    print(describe())
    folder.cleanup()


if __name__ == "__main__":
    main()
