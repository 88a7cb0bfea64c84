"""Cold start: how long a fresh clone takes to do its first things, while numba compiles.

    python benchmarks/cold_start.py              # every row, cold then warm (about 10 min)
    python benchmarks/cold_start.py --quick      # without the whole-quickstart rows
    python benchmarks/cold_start.py --json       # one JSON object

Each row runs in a fresh Python process whose numba cache (``NUMBA_CACHE_DIR``) is a new,
empty temporary directory, so every kernel it needs is compiled, as on a fresh clone.
The *warm* column runs the same row again in a new process over the cache the cold run
left: what every later run costs. Rows:

* ``engine``: ``import engine``, then the first ``GameState.new(2).step(...)``;
* ``env``: the first step of the PettingZoo env ``env.env()``;
* ``vector``: the first step of ``gymnasium.make_vec(..., num_envs=64)``;
* ``greedy`` / ``ismcts``: the first move of ``agents.make("greedy")`` / ``"ismcts"``;
* ``quickstart_iteration``: ``configs/quickstart.yaml``'s trainer built and its first
  iteration run (its first evaluation is at iteration 10, so no evaluation);
* ``quickstart``: the whole ``python train.py --config configs/quickstart.yaml``.

Each row reports wall time and CPU time (user + system of the process, all threads): on a
loaded machine the wall time stretches but the CPU time holds, so compare CPU times.
The rows run from this checkout (``PYTHONPATH`` is its root), whatever is installed;
``--root DIR`` measures another one instead, e.g. an older commit checked out with
``git worktree add /tmp/old <commit>``, to compare the two in one session.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import machine_info  # noqa: E402
from engine.kernel_cache import NOTICE  # noqa: E402

# Each row's child code: `setup` is timed apart from `first` (the part that compiles).
ROWS = {
    "engine": ("import engine",
               "g = engine.GameState.new(2, seed=0); g.step(g.legal_actions()[0])"),
    "env": ("import env",
            "e = env.env(); e.reset(seed=0); import numpy as np; "
            "e.step(int(np.flatnonzero(e.last()[0]['action_mask'])[0]))"),
    "vector": ("import gymnasium, env, numpy as np",
               "v = gymnasium.make_vec('TwentyFourSeven-v0', num_envs=64); o, _ = v.reset(seed=0); "
               "v.step(o['action_mask'].argmax(axis=1))"),
    "greedy": ("import agents, engine; from engine.view import PlayerView",
               "g = engine.GameState.new(2, seed=0); agents.make('greedy', seed=0).act(None, PlayerView(g, 0))"),
    "ismcts": ("import agents, engine; from engine.view import PlayerView",
               "g = engine.GameState.new(2, seed=0); "
               "agents.make('ismcts:iterations=200', seed=0).act(None, PlayerView(g, 0))"),
    "quickstart_iteration": (
        "import torch; from train import make_trainer; from training.config import load_config; "
        "cfg = load_config('configs/quickstart.yaml', []); torch.set_num_threads(cfg.torch_threads)",
        "make_trainer(cfg, torch.device('cpu')).run_iteration()"),
}
QUICKSTART_ROWS = ("quickstart",)

_CHILD = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
{setup}
t1, c1 = time.perf_counter(), time.process_time()
{first}
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({{"setup_s": t1 - t0, "first_s": t2 - t1, "setup_cpu_s": c1 - c0, "first_cpu_s": c2 - c1}}))
"""


def _child_env(root: Path, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(root))
    env.pop("NUMBA_DISABLE_JIT", None)
    return env


def run_child(root: Path, args: list[str], cache_dir: str, timeout: float) -> dict:
    """Run `python args` in a fresh process in `root` over `cache_dir`; wall and CPU seconds
    (the child's user + system time, all its threads and children), stdout, stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], cwd=root, env=_child_env(root, cache_dir), capture_output=True,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stdout": proc.stdout, "stderr": proc.stderr}


def measure_row(root: Path, name: str, cache_dir: str, timeout: float) -> dict:
    """One row in one process: whole-process wall/CPU, and the child's own split into
    setup (imports) and first use (where the compiling happens)."""
    if name == "quickstart":
        with tempfile.TemporaryDirectory(prefix="cold_start_runs_") as runs:
            out = run_child(root, ["train.py", "--config", "configs/quickstart.yaml", "--runs", runs], cache_dir,
                            timeout)
        parts = {}
    else:
        setup, first = ROWS[name]
        out = run_child(root, ["-c", _CHILD.format(setup=setup, first=first)], cache_dir, timeout)
        parts = json.loads(out["stdout"].strip().splitlines()[-1])
    notice = NOTICE in out["stderr"]
    return {"wall_s": out["wall_s"], "cpu_s": out["cpu_s"], **parts, "compile_notice": notice}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="skip the whole-quickstart row (its cold run takes minutes)")
    parser.add_argument("--rows", nargs="+", choices=[*ROWS, *QUICKSTART_ROWS], help="only these rows")
    parser.add_argument("--no-warm", action="store_true", help="cold runs only")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    names = args.rows or [*ROWS, *(() if args.quick else QUICKSTART_ROWS)]
    root = args.root.resolve()
    if not (root / "engine" / "kernels.py").is_file():
        parser.error(f"--root {root} is not a checkout of this project (no engine/kernels.py)")

    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0 seconds, got {args.timeout}")

    machine = {**machine_info(), "load_average_before": os.getloadavg()[0]}
    result = {"root": str(root), "machine": machine, "rows": {}}
    if not args.json:
        print(f"{'row':22s} {'cold wall':>10s} {'cold CPU':>9s} {'first use':>10s} {'warm wall':>10s} "
              f"{'warm CPU':>9s}  notice cold/warm", flush=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="cold_start_numba_") as cache:
            row = {"cold": measure_row(root, name, cache, args.timeout)}
            if not args.no_warm:
                row["warm"] = measure_row(root, name, cache, args.timeout)
        result["rows"][name] = row
        if not args.json:
            print(_format_row(name, row), flush=True)
    result["machine"]["load_average_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(result))
    else:
        m = result["machine"]
        print(f"times in s; CPU = user + system of the whole process. 'first use' = the row's first call alone "
              f"(cold, wall). machine: {m['cpu']}, {m['cores']} cores, numba {m['numba']}, Python {m['python']}; "
              f"load average {m['load_average_before']:.1f} before, {m['load_average_after']:.1f} after")
    return result


def _format_row(name: str, row: dict) -> str:
    cold, warm = row["cold"], row.get("warm")
    first = f"{cold['first_s']:10.1f}" if "first_s" in cold else f"{'-':>10s}"
    warm_cols = f"{warm['wall_s']:10.1f} {warm['cpu_s']:9.1f}" if warm else f"{'-':>10s} {'-':>9s}"
    yes_no = {True: "yes", False: "no"}
    notices = f"{yes_no[cold['compile_notice']]}/{yes_no[warm['compile_notice']] if warm else '-'}"
    return f"{name:22s} {cold['wall_s']:10.1f} {cold['cpu_s']:9.1f} {first} {warm_cols}  {notices}"


if __name__ == "__main__":
    main()
