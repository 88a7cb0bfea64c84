"""Random 2-player playouts: reference engine vs numba single-game kernel vs batch kernel.

    python benchmarks/engine_speed.py            # a table
    python benchmarks/engine_speed.py --json     # one JSON object
    python benchmarks/engine_speed.py --quick    # fewer games

Every game is complete and every action uniformly random among the legal ones. Times
are wall-clock medians of --repeats runs. If a C compiler is present, the C yardstick
benchmarks/c_playout.c (same algorithm, same random streams, hence the same games) is
timed in the same run, so the numba/C ratio is measured side by side. With
``--limit247 PATH`` the independent C yardstick of random playouts named in issue 42
(a different design with its own random protocol, so not the same games) is built twice,
with plain ``-O3`` (generic x86-64, the fair scalar comparison) and with
``-O3 -march=native``, and timed in the same run too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import describe, machine_info  # noqa: E402
from engine.batch import play_random_games_parallel, play_random_games_serial  # noqa: E402
from engine.reference import ReferenceGame  # noqa: E402


def reference_playouts(num_games: int, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    placements = 0
    start = time.perf_counter()
    for g in range(num_games):
        game = ReferenceGame.new(2, seed=seed + g)
        while not game.is_over:
            legal = game.legal_actions()
            action = legal[rng.integers(len(legal))]
            placements += action != 490
            game.step(action)
    return time.perf_counter() - start, placements


def timed(fn, repeats: int) -> tuple[float, int]:
    runs = []
    for r in range(repeats):
        start = time.perf_counter()
        placements = fn(r)
        runs.append((time.perf_counter() - start, placements))
    return statistics.median(t for t, _ in runs), runs[0][1]


def c_yardstick(num_games: int, repeats: int) -> dict | None:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    source = Path(__file__).with_name("c_playout.c")
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "c_playout")
        build = subprocess.run([cc, "-O3", "-march=native", "-o", binary, str(source)], capture_output=True)
        if build.returncode != 0:
            return None
        runs = []
        for r in range(repeats):
            start = time.perf_counter()
            out = subprocess.run([binary, str(num_games), str(r)], capture_output=True, text=True, check=True)
            runs.append((time.perf_counter() - start, json.loads(out.stdout)))
    seconds = statistics.median(t for t, _ in runs)
    return {"seconds": seconds, "placements": runs[0][1]["placements"]}


def limit247_yardstick(source: str, num_games: int, repeats: int) -> dict | None:
    """Games per second (wall clock, median of `repeats`) of the limit247 yardstick built
    with plain -O3 and with -O3 -march=native; None without a C compiler."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or not Path(source).is_file():
        return None
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in (("generic", ["-O3"]), ("native", ["-O3", "-march=native"])):
            binary = os.path.join(tmp, f"limit247_{name}")
            build = subprocess.run([cc, *flags, "-o", binary, str(source)], capture_output=True)
            if build.returncode != 0:
                return None
            runs = []
            for r in range(repeats):
                start = time.perf_counter()
                subprocess.run([binary, str(num_games), str(1 + r * num_games), "2"], capture_output=True, check=True)
                runs.append(time.perf_counter() - start)
            result[name] = num_games / statistics.median(runs)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="fewer games (a smoke run)")
    parser.add_argument("--games", type=int, default=None, help="games for the numba kernels (default 400,000)")
    parser.add_argument("--reference-games", type=int, default=None, help="games for the reference (default 100)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-c", action="store_true", help="skip the C yardstick")
    parser.add_argument("--limit247", metavar="PATH", default=None,
                        help="also build and time this limit247.c yardstick (e.g. ../shared/bench/limit247.c)")
    args = parser.parse_args(argv)
    games = args.games or (20_000 if args.quick else 400_000)
    ref_games = args.reference_games or (10 if args.quick else 100)
    import numba

    threads = numba.get_num_threads()

    play_random_games_serial(10, 0, 2)  # compile (or load from cache) before timing
    play_random_games_parallel(10, 0, 2, 4 * threads)
    ref_seconds, ref_placements = reference_playouts(ref_games, 0)
    single_seconds, single_placements = timed(lambda r: play_random_games_serial(games, r, 2), args.repeats)
    batch_seconds, batch_placements = timed(
        lambda r: play_random_games_parallel(games, r, 2, 64 * threads), args.repeats)
    c = None if args.no_c else c_yardstick(games, args.repeats)
    limit = limit247_yardstick(args.limit247, games, args.repeats) if args.limit247 else None

    result = {
        "reference_games_per_s": ref_games / ref_seconds,
        "reference_placements_per_s": ref_placements / ref_seconds,
        "numba_single_games_per_s": games / single_seconds,
        "numba_single_placements_per_s": single_placements / single_seconds,
        "numba_batch_games_per_s": games / batch_seconds,
        "numba_batch_placements_per_s": batch_placements / batch_seconds,
        "placements_per_game": single_placements / games,
        "threads": threads,
        "games": games,
        "reference_games": ref_games,
        "single_vs_reference": (games / single_seconds) / (ref_games / ref_seconds),
        "batch_vs_single": single_seconds / batch_seconds,
        "machine": machine_info(),
    }
    if c is not None:
        result["c_games_per_s"] = games / c["seconds"]
        result["numba_single_vs_c"] = c["seconds"] / single_seconds
        result["c_same_games"] = c["placements"] == single_placements
    if limit is not None:
        for name, rate in limit.items():
            result[f"limit247_{name}_games_per_s"] = rate
            result[f"numba_single_vs_limit247_{name}"] = (games / single_seconds) / rate
    if args.json:
        print(json.dumps(result, indent=2))
        return result
    print(f"Random 2-player playouts on {describe()}")
    rows = [("reference (Python)", ref_games, ref_seconds, ref_placements),
            ("numba single game, 1 core", games, single_seconds, single_placements),
            (f"numba batch, {threads} threads", games, batch_seconds, batch_placements)]
    if c is not None:
        rows.append(("C yardstick, 1 core", games, c["seconds"], c["placements"]))
    print(f"{'engine':<28}{'games/s':>14}{'placements/s':>16}")
    for name, n, seconds, placements in rows:
        print(f"{name:<28}{n / seconds:>14,.0f}{placements / seconds:>16,.0f}")
    if limit is not None:
        for name, rate in limit.items():
            print(f"{'limit247 -O3' + (' -march=native' if name == 'native' else ''):<28}{rate:>14,.0f}")
    print(f"placements per game: {result['placements_per_game']:.2f}")
    print(f"numba single / reference: {result['single_vs_reference']:,.0f}x")
    print(f"numba batch / numba single: {result['batch_vs_single']:.2f}x")
    if c is not None:
        same = "same games" if result["c_same_games"] else "DIFFERENT games"
        print(f"numba single / C: {result['numba_single_vs_c']:.2f} ({same})")
    if limit is not None:
        print(f"numba single / limit247: {result['numba_single_vs_limit247_generic']:.2f} (plain -O3), "
              f"{result['numba_single_vs_limit247_native']:.2f} (-march=native)")
    return result


if __name__ == "__main__":
    main()
