"""Ray's overhead on tournaments and on self-play: games/s of one fixed tournament, or of
one self-play generation's games, played by the local process pool and by Ray, on this
machine, side by side.

    python benchmarks/ray_overhead.py                      # 2 workers, the default tournament
    python benchmarks/ray_overhead.py --workers 1 --games 40 --json
    python benchmarks/ray_overhead.py --selfplay           # 64 games of ismcts:iterations=200

``--selfplay`` times `training.teacher.teacher_games` (the call a self-play generation
makes; no stored chunks) with ``executor="process"`` and ``executor="ray"``: the same
chunks, the same games (checked). Its figures are per whole call (pool or actors
started, kernels loaded, every chunk played): games/s, CPU ms a game of every process of
the run (sampled every 0.2 s, so workers that end are counted), and their ratios. A chunk is 16 games, so with W
workers the call's tail (the last chunks) leaves cores idle on both sides alike.

Both runs play the same jobs (the schedule of evaluate.py, the same seeds) through the
`Executor` interface with the same number of workers and the default time limits, and
must return the same games (checked). Figures:

* **steady games/s**: games after the first `--skip` per worker, divided by the time
  from the last skipped game to the last game: the rate once every worker has started
  (process start, numba cache loads, Ray actors). This is the rate a long tournament
  runs at, and the figure for sizing a cluster: games/s per core = steady games/s /
  workers, when each worker has a core of its own.
* **overall games/s**: all games over the wall time from creating the executor (Ray:
  also the per-node warm-up task and the actors' start; not ``ray.init``, timed apart).
* **CPU ms/game**: CPU time of every process of the run (driver, workers, and with Ray
  its daemons and actors) per game over the steady part: the overhead in work, which the
  load of other jobs on a shared machine disturbs far less than the rates. With each
  worker on a core of its own, games/s per core is about 1000 / (CPU ms/game).
* **ratio**: Ray's rate over the process pool's (1.0 = no overhead), the median over
  `--repeats` alternated pairs of runs. Ray is started once before the first run, so its
  idle daemons share the machine with both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

DEFAULT_AGENTS = ["greedy", "ismcts:iterations=1000"]


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) used so far by the live processes descended from `root`,
    itself included: the workers, and with Ray its daemons and actors (Linux /proc)."""
    return sum(tree_cpu_by_process(root).values())


def tree_cpu_by_process(root: int) -> dict[int, float]:
    """{pid: CPU seconds so far} of the live processes descended from `root`, itself included."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tree, frontier = {root}, [root]
    while frontier:
        frontier = [pid for pid, ppid in parent.items() if ppid in frontier and pid not in tree]
        tree.update(frontier)
    return {pid: cpu[pid] for pid in tree if pid in cpu}


class CpuSampler:
    """CPU seconds the process tree of this process uses while the sampler runs, workers
    that end meanwhile included (each counted to its last sample, every `interval` s)."""

    def __init__(self, interval: float = 0.2):
        import threading

        self.interval, self._stop = interval, threading.Event()
        self._start = tree_cpu_by_process(os.getpid())
        self._last = dict(self._start)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._last.update(tree_cpu_by_process(os.getpid()))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._last.update(tree_cpu_by_process(os.getpid()))
        return sum(cpu - self._start.get(pid, 0.0) for pid, cpu in self._last.items())


def timed_run(backend: str, jobs: list, workers: int, limits, skip: int) -> dict:
    """Play `jobs` on `backend`; the records, when each came back, and the CPU seconds of
    the whole process tree from game `skip` to the last game."""
    from evaluation.run import make_executor

    start = time.perf_counter()
    stamps, records, cpu = [], {}, []
    with make_executor(workers, (), "spawn", limits, backend) as executor:
        for record in executor.map_jobs(jobs):
            stamps.append(time.perf_counter() - start)
            records[record["game"]] = record
            if len(stamps) in (skip, len(jobs)):
                cpu.append(tree_cpu_seconds(os.getpid()))
    steady_cpu = (cpu[-1] - cpu[0]) / (len(jobs) - skip) if len(cpu) == 2 else None
    return {"stamps": stamps, "records": records, "cpu_seconds_per_game": steady_cpu}


def rates(stamps: list[float], skip: int) -> dict:
    """Overall and steady games/s of one run (see the module docstring)."""
    n = len(stamps)
    steady = (n - skip) / (stamps[-1] - stamps[skip - 1]) if 0 < skip < n and stamps[-1] > stamps[skip - 1] else None
    return {"games": n, "seconds": round(stamps[-1], 2), "overall_games_per_s": n / stamps[-1],
            "steady_games_per_s": steady}


def median(values) -> float | None:
    values = sorted(v for v in values if v is not None)
    return statistics.median(values) if values else None


def same_games(a: dict, b: dict) -> bool:
    keys = ("deal_seed", "seats", "seeds", "actions", "scores", "ranking", "forfeit")
    return a.keys() == b.keys() and all({k: a[g][k] for k in keys} == {k: b[g][k] for k in keys} for g in a)


SIDES = ("process", "ray")


def timed_selfplay(executor: str, spec, games: int, workers: int, seed: int) -> tuple[dict, object]:
    """One self-play generation's games on `executor`: (figures, the games)."""
    from training.teacher import teacher_games

    sampler = CpuSampler()
    start = time.perf_counter()
    data = teacher_games(spec, games, seed, workers=workers, progress=False, executor=executor)
    seconds = time.perf_counter() - start
    cpu = sampler.stop()
    return {"seconds": round(seconds, 2), "games_per_s": games / seconds, "cpu_seconds_per_game": cpu / games}, data


def timed_tournament(backend: str, jobs: list, workers: int, limits, skip: int) -> tuple[dict, dict]:
    """A tournament's jobs on `backend`: (figures, the game records)."""
    run = timed_run(backend, jobs, workers, limits, skip)
    return dict(rates(run["stamps"], skip), cpu_seconds_per_game=run["cpu_seconds_per_game"]), run["records"]


def same_selfplay(a, b) -> bool:
    import numpy as np

    return all(np.array_equal(getattr(a, key), getattr(b, key)) for key in ("policy", "final_info"))


def compare(args, warm_specs: list, play, same) -> tuple[list[dict], float]:
    """`play(side)` -> (figures, games) for the process pool then Ray, `--repeats` times
    alternated (a change in the machine's load hits both sides), on one local Ray started
    first (its start timed apart). Both sides must play the same games. Returns the runs'
    figures and ray.init's seconds."""
    import ray

    from evaluation.ray_executor import warm_node

    warm_node((), warm_specs)  # a cold numba cache is compiled here, outside every timing
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level="warning")
    ray_init = time.perf_counter() - start
    runs = []
    try:
        for _ in range(args.repeats):
            (process, mine), (on_ray, theirs) = play("process"), play("ray")
            if not same(mine, theirs):
                raise SystemExit("the process pool and Ray played different games")
            runs.append({"process": process, "ray": on_ray})
    finally:
        ray.shutdown()
    return runs, ray_init


def summarize(result: dict, runs: list[dict], workers: int, rate: str, ratios: tuple[str, ...]) -> dict:
    """Medians per side, the `rate` per core, and the median of the runs' Ray/process ratios."""
    from benchmarks.machine import machine_info

    result.update(machine=machine_info(), workers=workers, runs=runs)
    for side in SIDES:
        result[side] = {key: median(run[side][key] for run in runs) for key in runs[0][side]}
        value = result[side][rate]
        result[side][f"{rate}_per_core"] = value / workers if value else None
    for key in ratios:
        result[f"ratio_{key}"] = median(run["ray"][key] / run["process"][key] for run in runs
                                        if run["ray"][key] and run["process"][key])
    return result


def print_table(result: dict, title: str, columns: list[tuple[str, str, float]], rate: str, ratios) -> None:
    """Every run's `columns` ((heading, key, scale)), the medians, and the ratios."""
    from benchmarks.machine import describe

    def cell(value, scale, width):
        return f"{(value or float('nan')) * scale:{width}.2f}"

    print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
    print(f"{title}; {len(result['runs'])} run(s) of each, alternated; threads pinned: {result['pin_threads']}; "
          f"ray.init took {result['ray_init_seconds']:.1f} s (not counted)")
    print(f"  {'':14s}" + "".join(f" {heading:>15s}" for heading, _, _ in columns))
    for n, run in enumerate(result["runs"]):
        for side in SIDES:
            print(f"  {side:14s}" + "".join(f" {cell(run[side][key], scale, 15)}" for _, key, scale in columns)
                  + f"   (run {n + 1})")
    for side in SIDES:
        r = result[side]
        print(f"  {'median ' + side:14s}" + "".join(f" {cell(r[key], scale, 15)}" for _, key, scale in columns)
              + f"   {rate.replace('_', ' ')} per core {cell(r[f'{rate}_per_core'], 1, 6).strip()}")
    for key in ratios:
        ratio = result[f"ratio_{key}"]
        print(f"  ray / process, {key.replace('_', ' ')} (median of the runs' ratios): "
              + (f"{ratio:.3f}" if ratio else "n/a"))


def selfplay_main(args) -> dict:
    from agents import parse_agent

    spec = parse_agent(args.spec)  # the command line's edge
    runs, ray_init = compare(args, [spec], lambda side: timed_selfplay(side, spec, args.games, args.workers, args.seed),
                             same_selfplay)
    ratios = ("games_per_s", "cpu_seconds_per_game")
    result = summarize({"mode": "selfplay", "spec": args.spec, "games": args.games, "pin_threads": args.pin_threads,
                        "ray_init_seconds": round(ray_init, 2)}, runs, args.workers, "games_per_s", ratios)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, f"self-play: {args.games} games of {args.spec} (chunks of 16), {args.workers} worker(s)",
                    [("seconds", "seconds", 1), ("games/s", "games_per_s", 1),
                     ("CPU ms/game", "cpu_seconds_per_game", 1000)], "games_per_s", ratios)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=DEFAULT_AGENTS, metavar="SPEC", help="the tournament's agents")
    parser.add_argument("--games", type=int, default=None,
                        help="games per table (default 200); --selfplay: games of the generation (default 64)")
    parser.add_argument("--selfplay", action="store_true", help="time one self-play generation's games instead")
    parser.add_argument("--spec", default="ismcts:iterations=200", help="--selfplay: the search that plays every seat")
    parser.add_argument("--workers", type=int, default=2, help="worker processes / Ray actors (default 2)")
    parser.add_argument("--skip", type=int, default=2, help="games per worker left out of the steady rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, alternated; medians are reported")
    parser.add_argument("--pin-threads", action=argparse.BooleanOptionalAction, default=True,
                        help="one numba/OpenMP/BLAS thread in every process of both sides, as Ray's workers "
                             "have (default); --no-pin-threads: the process pool's workers keep numba's default")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.games is None:
        args.games = 64 if args.selfplay else 200
    if args.workers < 1 or args.games < 1 or args.repeats < 1 or args.skip < 0:
        parser.error("--workers, --games and --repeats must be >= 1, --skip >= 0")
    if args.pin_threads:  # before numba is imported here or in any worker (they inherit it)
        for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = "1"
    if args.selfplay:
        return selfplay_main(args)
    from evaluation.config import EvalConfig
    from evaluation.tournament import Schedule

    cfg = EvalConfig.from_dict({"agents": args.agents, "games": args.games, "seed": args.seed}).validate()
    schedule = Schedule(cfg.lineup, cfg.players, cfg.games, cfg.seed, cfg.team, cfg.seating)
    jobs = [schedule.job(j) for j in range(schedule.num_jobs)]
    limits = cfg.time_limits()
    skip = min(args.skip * args.workers, len(jobs) - 1)
    runs, ray_init = compare(args, cfg.lineup,
                             lambda side: timed_tournament(side, jobs, args.workers, limits, skip), same_games)
    ratios = ("steady_games_per_s", "overall_games_per_s", "cpu_seconds_per_game")
    result = summarize({"agents": args.agents, "games": len(jobs), "pin_threads": args.pin_threads, "skip": skip,
                        "ray_init_seconds": round(ray_init, 2)}, runs, args.workers, "steady_games_per_s", ratios)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, f"{len(jobs)} games of {' vs '.join(args.agents)}, {args.workers} worker(s); the steady "
                    f"rate leaves out the first {skip} games",
                    [("seconds", "seconds", 1), ("overall games/s", "overall_games_per_s", 1),
                     ("steady games/s", "steady_games_per_s", 1), ("CPU ms/game", "cpu_seconds_per_game", 1000)],
                    "steady_games_per_s", ratios)
    return result


if __name__ == "__main__":
    main()
