"""Random 2-player playouts: reference engine vs numba single-game kernel vs batch kernel.

    python benchmarks/engine_speed.py            # a table
    python benchmarks/engine_speed.py --json     # one JSON object
    python benchmarks/engine_speed.py --quick    # fewer games

Every game is complete and every action uniformly random among the legal ones. Times
are wall-clock medians of --repeats runs. If a C compiler is present, the C port
benchmarks/c_playout.c (same algorithm, same random streams, hence the same games) is
built twice, for generic x86-64 (-O3) and for this CPU (-O3 -march=native), and the numba
kernel and both builds run in turn, repeat after repeat: both numba/C ratios come from one
alternated run. (The native build's lead over the generic one is BMI2's PDEP in its bit
select, not vector code: `gcc -fopt-info-vec` vectorizes only the setup; the engine uses
PDEP too where the CPU has it fast, `engine.kernels.HAS_FAST_PDEP`.) With
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


C_BUILDS = {"generic": ["-O3"], "native": ["-O3", "-march=native"]}  # the C port, built both ways


def c_binaries(tmp: str, source: Path = Path(__file__).with_name("c_playout.c")) -> dict[str, str] | None:
    """`source` built for generic x86-64 and for this CPU (`C_BUILDS`) into `tmp`, {build:
    binary}; None without a compiler (or the file)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or not source.is_file():
        return None
    binaries = {}
    for name, flags in C_BUILDS.items():
        binaries[name] = os.path.join(tmp, f"{source.stem}_{name}")
        if subprocess.run([cc, *flags, "-o", binaries[name], str(source)], capture_output=True).returncode != 0:
            return None
    return binaries


def c_playouts(binary: str, num_games: int, seed: int) -> int:
    out = subprocess.run([binary, str(num_games), str(seed)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["placements"]


def alternated(runners: dict, repeats: int) -> dict[str, tuple[float, int]]:
    """{name: (median seconds, placements of the first run)}: each repeat runs every runner
    once, in turn, so slow and fast moments of a shared machine fall on all of them."""
    runs: dict[str, list] = {name: [] for name in runners}
    for r in range(repeats):
        for name, fn in runners.items():
            start = time.perf_counter()
            placements = fn(r)
            runs[name].append((time.perf_counter() - start, placements))
    return {name: (statistics.median(t for t, _ in rs), rs[0][1]) for name, rs in runs.items()}


def limit247_yardstick(source: str, num_games: int, repeats: int) -> dict | None:
    """Games per second (wall clock, median of `repeats`) of the limit247 yardstick built
    both ways (`C_BUILDS`); None without a C compiler."""
    with tempfile.TemporaryDirectory() as tmp:
        binaries = c_binaries(tmp, Path(source))
        if binaries is None:
            return None
        runners = {name: lambda r, binary=binary: subprocess.run(
            [binary, str(num_games), str(1 + r * num_games), "2"], capture_output=True, check=True)
            for name, binary in binaries.items()}
        return {name: num_games / seconds for name, (seconds, _) in alternated(runners, repeats).items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="fewer games (a smoke run)")
    parser.add_argument("--games", type=int, default=None, help="games for the numba kernels (default 400,000)")
    parser.add_argument("--reference-games", type=int, default=None, help="games for the reference (default 100)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-c", action="store_true", help="skip the C port")
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
    with tempfile.TemporaryDirectory() as tmp:
        binaries = None if args.no_c else c_binaries(tmp)
        runners = {"numba": lambda r: play_random_games_serial(games, r, 2)}
        for name, binary in (binaries or {}).items():
            runners[name] = lambda r, binary=binary: c_playouts(binary, games, r)
        timings = alternated(runners, args.repeats)
    single_seconds, single_placements = timings["numba"]
    batch_seconds, batch_placements = alternated(
        {"batch": lambda r: play_random_games_parallel(games, r, 2, 64 * threads)}, args.repeats)["batch"]
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
    for name in C_BUILDS if binaries else ():
        c_seconds, c_placements = timings[name]
        result[f"c_{name}_games_per_s"] = games / c_seconds
        result[f"numba_single_vs_c_{name}"] = c_seconds / single_seconds
        result[f"c_{name}_same_games"] = c_placements == single_placements
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
    for name in C_BUILDS if binaries else ():
        rows.append((f"C port {' '.join(C_BUILDS[name])}, 1 core", games, *timings[name]))
    print(f"{'engine':<36}{'games/s':>14}{'placements/s':>16}")
    for name, n, seconds, placements in rows:
        print(f"{name:<36}{n / seconds:>14,.0f}{placements / seconds:>16,.0f}")
    if limit is not None:
        for name, rate in limit.items():
            print(f"{'limit247 -O3' + (' -march=native' if name == 'native' else ''):<36}{rate:>14,.0f}")
    print(f"placements per game: {result['placements_per_game']:.2f}")
    print(f"numba single / reference: {result['single_vs_reference']:,.0f}x")
    print(f"numba batch / numba single: {result['batch_vs_single']:.2f}x")
    for name in C_BUILDS if binaries else ():
        same = "same games" if result[f"c_{name}_same_games"] else "DIFFERENT games"
        print(f"numba single / C {' '.join(C_BUILDS[name])}: {result[f'numba_single_vs_c_{name}']:.2f} "
              f"({same}; alternated runs, medians of {args.repeats})")
    if limit is not None:
        print(f"numba single / limit247: {result['numba_single_vs_limit247_generic']:.2f} (plain -O3), "
              f"{result['numba_single_vs_limit247_native']:.2f} (-march=native)")
    return result


if __name__ == "__main__":
    main()
