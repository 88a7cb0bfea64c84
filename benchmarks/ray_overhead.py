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

DEFAULT_AGENTS = ["greedy", "ismcts:iterations=100"]


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
    from evaluation.executor import make_executor

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


def timed_selfplay(executor: str, spec: str, games: int, workers: int, seed: int) -> dict:
    """One self-play generation's games on `executor`: the games, wall and CPU seconds."""
    from training.teacher import teacher_games

    sampler = CpuSampler()
    start = time.perf_counter()
    data = teacher_games(spec, games, seed, workers=workers, progress=False, executor=executor)
    seconds = time.perf_counter() - start
    cpu = sampler.stop()
    return {"data": data, "seconds": round(seconds, 2), "games_per_s": games / seconds,
            "cpu_seconds_per_game": cpu / games}


def selfplay_main(args) -> dict:
    import numpy as np
    import ray

    from evaluation.ray_executor import warm_node

    warm_node((), [args.spec])  # a cold numba cache is compiled here, outside both timings
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level="warning")
    ray_init = time.perf_counter() - start
    runs = []
    try:
        for _ in range(args.repeats):  # alternated, so a change in the machine's load hits both sides
            process = timed_selfplay("process", args.spec, args.games, args.workers, args.seed)
            on_ray = timed_selfplay("ray", args.spec, args.games, args.workers, args.seed)
            mine, theirs = process.pop("data"), on_ray.pop("data")
            if not all(np.array_equal(getattr(mine, key), getattr(theirs, key)) for key in ("policy", "final_info")):
                raise SystemExit("the process pool and Ray played different games")
            runs.append({"process": process, "ray": on_ray})
    finally:
        ray.shutdown()

    from benchmarks.machine import machine_info

    result = {"machine": machine_info(), "mode": "selfplay", "spec": args.spec, "workers": args.workers,
              "games": args.games, "pin_threads": args.pin_threads, "ray_init_seconds": round(ray_init, 2),
              "runs": runs}
    for side in ("process", "ray"):
        result[side] = {key: median(run[side][key] for run in runs) for key in runs[0][side]}
        result[side]["games_per_s_per_core"] = result[side]["games_per_s"] / args.workers
    for key in ("games_per_s", "cpu_seconds_per_game"):
        result[f"ratio_{key}"] = median(run["ray"][key] / run["process"][key] for run in runs)
    if args.json:
        print(json.dumps(result))
    else:
        print_selfplay_table(result)
    return result


def print_selfplay_table(result: dict) -> None:
    from benchmarks.machine import describe

    print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
    print(f"self-play: {result['games']} games of {result['spec']} (chunks of 16), {result['workers']} worker(s), "
          f"{len(result['runs'])} run(s) of each, alternated; threads pinned: {result['pin_threads']}; "
          f"ray.init took {result['ray_init_seconds']:.1f} s (not counted)")
    print(f"  {'':8s} {'seconds':>8s} {'games/s':>8s} {'CPU ms/game':>12s}")
    for n, run in enumerate(result["runs"]):
        for side in ("process", "ray"):
            r = run[side]
            print(f"  {side:8s} {r['seconds']:8.1f} {r['games_per_s']:8.3f} "
                  f"{1000 * r['cpu_seconds_per_game']:12.1f}   (run {n + 1})")
    for side in ("process", "ray"):
        r = result[side]
        print(f"  median {side}: {r['games_per_s']:.3f} games/s, {r['games_per_s_per_core']:.3f} per core; "
              f"{1000 * r['cpu_seconds_per_game']:.1f} CPU ms a game (all processes of the run)")
    for key in ("games_per_s", "cpu_seconds_per_game"):
        print(f"  ray / process, {key.replace('_', ' ')} (median of the runs' ratios): {result[f'ratio_{key}']:.3f}")


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
    import ray

    from evaluation.config import EvalConfig
    from evaluation.ray_executor import warm_node
    from evaluation.tournament import Schedule

    cfg = EvalConfig.from_dict({"agents": args.agents, "games": args.games, "seed": args.seed}).validate()
    schedule = Schedule(cfg.agents, cfg.players, cfg.games, cfg.seed, cfg.team, cfg.seating)
    jobs = [schedule.job(j) for j in range(schedule.num_jobs)]
    limits = cfg.time_limits()
    skip = min(args.skip * args.workers, len(jobs) - 1)

    warm_node((), list(dict.fromkeys(cfg.agents)))  # a cold numba cache is compiled here, outside both timings
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level="warning")
    ray_init = time.perf_counter() - start
    runs = []
    try:
        for _ in range(args.repeats):  # alternated, so a change in the machine's load hits both sides
            process = timed_run("process", jobs, args.workers, limits, skip)
            on_ray = timed_run("ray", jobs, args.workers, limits, skip)
            if not same_games(process["records"], on_ray["records"]):
                raise SystemExit("the process pool and Ray played different games")
            runs.append({side: dict(rates(run["stamps"], skip), cpu_seconds_per_game=run["cpu_seconds_per_game"])
                         for side, run in (("process", process), ("ray", on_ray))})
    finally:
        ray.shutdown()

    from benchmarks.machine import machine_info

    result = {"machine": machine_info(), "agents": args.agents, "workers": args.workers, "games": len(jobs),
              "pin_threads": args.pin_threads,
              "skip": skip, "ray_init_seconds": round(ray_init, 2), "runs": runs}
    for side in ("process", "ray"):
        result[side] = {key: median(run[side][key] for run in runs) for key in runs[0][side]}
        steady = result[side]["steady_games_per_s"]
        result[side]["steady_games_per_s_per_core"] = steady / args.workers if steady else None
    for key in ("steady_games_per_s", "overall_games_per_s", "cpu_seconds_per_game"):
        result[f"ratio_{key}"] = median(run["ray"][key] / run["process"][key] for run in runs
                                        if run["ray"][key] and run["process"][key])
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return result


def print_table(result: dict) -> None:
    from benchmarks.machine import describe

    print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
    print(f"{result['games']} games of {' vs '.join(result['agents'])}, {result['workers']} worker(s), "
          f"{len(result['runs'])} run(s) of each, alternated; the steady rate leaves out the first "
          f"{result['skip']} games; threads pinned: {result['pin_threads']}; ray.init took {result['ray_init_seconds']:.1f} s (not counted)")
    print(f"  {'':8s} {'seconds':>8s} {'overall games/s':>16s} {'steady games/s':>15s} {'CPU ms/game':>12s}")
    for n, run in enumerate(result["runs"]):
        for side in ("process", "ray"):
            r = run[side]
            print(f"  {side:8s} {r['seconds']:8.1f} {r['overall_games_per_s']:16.2f} "
                  f"{r['steady_games_per_s'] or float('nan'):15.2f} "
                  f"{1000 * (r['cpu_seconds_per_game'] or float('nan')):12.1f}   (run {n + 1})")
    for side in ("process", "ray"):
        r = result[side]
        print(f"  median {side}: steady {r['steady_games_per_s'] or float('nan'):.2f} games/s, "
              f"{r['steady_games_per_s_per_core'] or float('nan'):.2f} per core; overall "
              f"{r['overall_games_per_s']:.2f} games/s; {1000 * (r['cpu_seconds_per_game'] or float('nan')):.1f} "
              f"CPU ms a game (all processes of the run)")
    for key in ("steady_games_per_s", "overall_games_per_s", "cpu_seconds_per_game"):
        ratio = result[f"ratio_{key}"]
        print(f"  ray / process, {key.replace('_', ' ')} (median of the runs' ratios): "
              + (f"{ratio:.3f}" if ratio else "n/a"))


if __name__ == "__main__":
    main()
