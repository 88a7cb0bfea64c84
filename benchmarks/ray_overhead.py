"""Ray's overhead on tournaments: games/s of one fixed tournament played by the local
process pool and by Ray, on this machine, side by side.

    python benchmarks/ray_overhead.py                      # 2 workers, the default tournament
    python benchmarks/ray_overhead.py --workers 1 --games 40 --json

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
* **ratio**: Ray's rate over the process pool's (1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.machine import describe, machine_info  # noqa: E402
from evaluation.config import EvalConfig  # noqa: E402
from evaluation.executor import make_executor  # noqa: E402
from evaluation.ray_executor import warm_node  # noqa: E402
from evaluation.tournament import Schedule  # noqa: E402

DEFAULT_AGENTS = ["greedy", "ismcts:iterations=100"]


def timed_run(backend: str, jobs: list, workers: int, limits) -> dict:
    """Play `jobs` on `backend`; the records and when each came back."""
    start = time.perf_counter()
    stamps, records = [], {}
    with make_executor(workers, (), "spawn", limits, backend) as executor:
        for record in executor.map_jobs(jobs):
            stamps.append(time.perf_counter() - start)
            records[record["game"]] = record
    return {"stamps": stamps, "records": records}


def rates(stamps: list[float], skip: int) -> dict:
    """Overall and steady games/s of one run (see the module docstring)."""
    n = len(stamps)
    steady = (n - skip) / (stamps[-1] - stamps[skip - 1]) if 0 < skip < n and stamps[-1] > stamps[skip - 1] else None
    return {"games": n, "seconds": round(stamps[-1], 2), "overall_games_per_s": n / stamps[-1],
            "steady_games_per_s": steady}


def same_games(a: dict, b: dict) -> bool:
    keys = ("deal_seed", "seats", "seeds", "actions", "scores", "ranking", "forfeit")
    return a.keys() == b.keys() and all({k: a[g][k] for k in keys} == {k: b[g][k] for k in keys} for g in a)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=DEFAULT_AGENTS, metavar="SPEC", help="the tournament's agents")
    parser.add_argument("--games", type=int, default=200, help="games per table (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes / Ray actors (default 2)")
    parser.add_argument("--skip", type=int, default=2, help="games per worker left out of the steady rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.games < 1 or args.skip < 0:
        parser.error("--workers and --games must be >= 1, --skip >= 0")
    import ray

    cfg = EvalConfig.from_dict({"agents": args.agents, "games": args.games, "seed": args.seed}).validate()
    schedule = Schedule(cfg.agents, cfg.players, cfg.games, cfg.seed, cfg.team, cfg.seating)
    jobs = [schedule.job(j) for j in range(schedule.num_jobs)]
    limits = cfg.time_limits()
    skip = min(args.skip * args.workers, len(jobs) - 1)

    warm_node((), list(dict.fromkeys(cfg.agents)))  # a cold numba cache is compiled here, outside both timings
    process = timed_run("process", jobs, args.workers, limits)
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level="warning")
    ray_init = time.perf_counter() - start
    try:
        on_ray = timed_run("ray", jobs, args.workers, limits)
    finally:
        ray.shutdown()
    if not same_games(process["records"], on_ray["records"]):
        raise SystemExit("the process pool and Ray played different games")

    result = {"machine": machine_info(), "agents": args.agents, "workers": args.workers,
              "process": rates(process["stamps"], skip), "ray": rates(on_ray["stamps"], skip),
              "ray_init_seconds": round(ray_init, 2)}
    for key in ("steady_games_per_s", "overall_games_per_s"):
        p, r = result["process"][key], result["ray"][key]
        result[f"ratio_{key}"] = r / p if p and r else None
    for side in ("process", "ray"):
        steady = result[side]["steady_games_per_s"]
        result[side]["steady_games_per_s_per_core"] = steady / args.workers if steady else None
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, schedule.num_jobs, skip)
    return result


def print_table(result: dict, games: int, skip: int) -> None:
    print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
    print(f"{games} games of {' vs '.join(result['agents'])}, {result['workers']} worker(s); steady rate "
          f"leaves out the first {skip} games; ray.init took {result['ray_init_seconds']:.1f} s (not counted)")
    print(f"  {'':8s} {'seconds':>8s} {'overall games/s':>16s} {'steady games/s':>15s} {'per core':>9s}")
    for side in ("process", "ray"):
        r = result[side]
        steady = r["steady_games_per_s"]
        print(f"  {side:8s} {r['seconds']:8.1f} {r['overall_games_per_s']:16.2f} "
              f"{steady if steady else float('nan'):15.2f} {r['steady_games_per_s_per_core'] or float('nan'):9.2f}")
    for key in ("steady_games_per_s", "overall_games_per_s"):
        ratio = result[f"ratio_{key}"]
        print(f"  ray / process, {key.replace('_', ' ')}: {ratio:.3f}" if ratio else f"  {key}: n/a")


if __name__ == "__main__":
    main()
