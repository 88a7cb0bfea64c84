"""Issue 73, item 2: LLVM's inlining instead of numba's, to compile less.

numba inlines an ``@njit(inline="always")`` helper in its own IR: every call site deep-copies
the helper's IR and types it again (40-46% of a kernel's compile, benchmarks/RESULTS.md,
cold-start 16:20). numba's ``forceinline=True`` option instead compiles the helper once (per
argument types) as a function of its own and marks it ``alwaysinline`` for LLVM, which
inlines it into each caller as the caller's module is optimized. This script makes, from
``--base`` (default 36b961c, the commit before the engine's helpers changed), one git
worktree per variant, in which the helpers of the named modules swap ``inline="always"``
for ``forceinline=True``, and measures each against the base itself ("head" below):

* **compile**: CPU seconds (with any process it starts) of a fresh process, over an empty
  numba cache, making the first move of `ismcts:iterations=200` and of
  `selfplay:iterations=200` (the guided search the web game plays) from the opening;
* **speed** (``--speed-runs``): the variant and HEAD run at the same time, each pinned to
  one of the two cores (swapped every pair), so both see the same moment of a shared
  machine, whose speed swings 25% from minute to minute: searches' iterations a second
  (`benchmarks/agent_speed.py`'s measures, in CPU time, best of 3), the network's root
  ordering, greedy moves, the engine's random games and the world sampler's worlds after
  a pass (2 and 4 players, `benchmarks/determinize_speed.py`) a second; each figure the
  variant's over HEAD's, median over the pairs.

    python research/forceinline.py --variants kernels               # the engine's helpers (shipped)
    python research/forceinline.py --variants all determinize core  # others (about 5 min each)

RESULTS.md: "2026-12-07, 18:15-20:00 UTC" (cold-start.md)
Verdict: the helpers of the engine (`engine/kernels.py`, `engine/access.py`), then of the
world deal and the policies (`engine/determinize.py`, `agents/policy_kernels.py`,
`agents/networks/evaluator.py`) are `engine.kernels.helper`s now (a third less compile,
the same speed); the search core's compiled slower and the env's gained nothing: they
stay inlined by numba.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engine.kernel_cache import QUIET  # noqa: E402 (set: a process prints no compile notice)

PY = sys.executable
SWAP = ('@njit(inline="always"', "@njit(forceinline=True")

MODULES = {
    "kernels": ["engine/kernels.py", "engine/access.py"],
    "determinize": ["engine/determinize.py"],
    "core": ["agents/search/core.py"],
    "policy": ["agents/policy_kernels.py", "agents/networks/evaluator.py"],
    "env": ["env/observation.py", "env/step_kernels.py"],
    "br": ["agents/search/br_kernels.py"],
}
MODULES["deal+policy"] = [*MODULES["determinize"], *MODULES["policy"]]
MODULES["all"] = [*{f for files in MODULES.values() for f in files}, "engine/batch.py"]

FIRST_MOVE = """
import agents, engine
from engine.view import PlayerView
g = engine.GameState.new(2, seed=0)
a = agents.make({spec!r}, seed=0)
a.reset(0, 2, False)
a.act(None, PlayerView(g, 0))
"""

SPEED = """
import json, time
time.perf_counter = time.process_time  # CPU time
import numba
numba.set_num_threads(1)
from benchmarks import agent_speed as a
from agents.search.guide import NetworkGuide
from agents.search.selfplay import shipped_network
from engine import GameState
from engine.batch import play_random_games_serial
from engine.view import PlayerView
mid, opening = a.middle_game_view(0), PlayerView(GameState.new(2, seed=0), 0)
guided = f"ismcts:net={shipped_network(2)},prior=3"  # what selfplay plays in 2-player games
out = {}
for name, view, spec in [("opening ismcts", opening, "ismcts"), ("opening pimc", opening, "pimc"),
                         ("middle ismcts", mid, "ismcts"), ("middle selfplay", mid, guided),
                         ("middle selfplay, no evaluator", mid, guided + ",evaluator=false,depth=1"),
                         ("middle br greedy", mid, "br:target=greedy"), ("middle br random", mid, "br:target=random")]:
    out[name] = a.mcts_iterations_per_s(view, spec, 10000, 3)
guide = NetworkGuide(str(shipped_network(2)))
out["root ordering"] = a.root_orderings_per_s(mid, guided, lambda v: guide.root_order(v, with_prior=True), 30)
out["greedy moves"] = a.greedy_moves_per_s(opening, 1000, 3)
play_random_games_serial(10, 0, 2)
out["engine random games"] = 1000 / a.best_of(3, lambda: play_random_games_serial(1000, 0, 2))
from benchmarks import determinize_speed as d
for n in (2, 4):
    out[f"{n}p world samples after passes"] = d.samples_per_s(d.positions_after_passes(n, 10), 5000)
print(json.dumps(out))
"""


def make_variant(name: str, tmp: Path, base: str) -> Path:
    """A worktree of `base` with the helpers of `name`'s modules on forceinline."""
    path = tmp / name
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(path), base], cwd=ROOT, check=True)
    for rel in MODULES.get(name, []):
        f = path / rel
        f.write_text(f.read_text().replace(*SWAP))
    return path


def _env(root: Path, **extra) -> dict:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", **extra}


def compile_cpu(root: Path, spec: str) -> float:
    """CPU seconds (user + system, with any process it starts) of `spec`'s first move."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([PY, "-c", FIRST_MOVE.format(spec=spec)], cwd=root, capture_output=True, text=True,
                             timeout=900, env=_env(root, NUMBA_CACHE_DIR=cache, **{QUIET: "1"}))
        if out.returncode:
            raise RuntimeError(out.stderr[-2000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def speed_pair(roots: tuple[Path, Path], cores: tuple[str, str]) -> list[dict]:
    """The SPEED figures of both roots, run at once, each pinned to its core."""
    procs = [subprocess.Popen(["taskset", "-c", core, PY, "-c", SPEED], cwd=root, env=_env(root),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for root, core in zip(roots, cores)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode:
            raise RuntimeError(err[-2000:])
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", nargs="+", default=["kernels"], choices=[*MODULES])
    p.add_argument("--base", default="36b961c", help="the commit measured and changed (default 36b961c)")
    p.add_argument("--compile-runs", type=int, default=1)
    p.add_argument("--speed-runs", type=int, default=10, help="pairs of speed runs (0: none)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="forceinline_"))
    roots = {"head": make_variant("head", tmp, args.base)}
    try:
        for name in args.variants:
            roots[name] = make_variant(name, tmp, args.base)
        for name in args.variants:
            row: dict = {"variant": name}
            for spec in ("ismcts:iterations=200", "selfplay:iterations=200") if args.compile_runs else ():
                pairs = [(compile_cpu(roots["head"], spec), compile_cpu(roots[name], spec))
                         for _ in range(args.compile_runs)]
                row[f"compile CPU s, {spec}: head, variant"] = [
                    round(statistics.median(x[i] for x in pairs), 1) for i in (0, 1)]
            if args.speed_runs:
                speed_pair((roots["head"], roots[name]), ("0", "1"))  # both caches warm
                ratios: dict[str, list[float]] = {}
                for k in range(args.speed_runs):
                    cores = ("0", "1") if k % 2 == 0 else ("1", "0")
                    head, variant = speed_pair((roots["head"], roots[name]), cores)
                    for key in head:
                        ratios.setdefault(key, []).append(variant[key] / head[key])
                row["speed, variant / head (median of pairs)"] = {
                    k: round(statistics.median(r), 3) for k, r in ratios.items()}
            print(json.dumps(row), flush=True)
    finally:
        for root in roots.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(root)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
