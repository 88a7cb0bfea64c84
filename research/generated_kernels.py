"""Issue 72, item 3: can the per-combination search kernels be generated from one table and
still load from numba's cache?

`agents.search.core` writes six search kernels by hand, one per (expansion, leaf), each a
line calling `run` with its parts: numba inlines the parts and caches the kernel. A
generated kernel is a closure over its parts, made by a factory from a table. This script
makes the greedy-rollout search both ways and times, in fresh processes sharing one
empty cache directory, a first call (cold: compiles and writes the cache) and the same
call again in a new process (warm: should load it):

    python research/generated_kernels.py            # prints the table for RESULTS

RESULTS: benchmarks/RESULTS.md, "generated search kernels".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from numba import njit
from agents.search import core, tree
from agents.settings import SearchSettings
from engine import GameState
from engine.view import PlayerView

way = {way!r}
if way == "generated":
    def make_search(expand, leaf):
        @njit(cache=True)
        def search(root_grid, root_info, observer, iterations, params, rng, tree_, work, data):
            return core.run(root_grid, root_info, observer, iterations, params, rng, tree_, work, data,
                            core.deal_world, core.ucb, expand, leaf, core.no_model)
        return search
    kernel = make_search(core.expand_greedy, core.rollout_leaf)
else:
    kernel = core.search_greedy_rollout
state = GameState.new(2, seed=0)
grid, info = PlayerView(state, 0).public_arrays()
t = tree.new_tree(64)
core.reset_tree(t.nodes, t.values, t.meta)
params = SearchSettings().kernel_parameters(False)
start = time.perf_counter()
kernel(grid, info, np.int64(0), np.int64(8), params, np.uint64(1), t, tree.new_workspace(), np.zeros(1))
seconds = time.perf_counter() - start
stats = getattr(kernel, "stats", None)
print(json.dumps({{"seconds": seconds, "cache_hits": sum(stats.cache_hits.values()) if stats else None,
                  "cache_misses": sum(stats.cache_misses.values()) if stats else None}}))
"""


def run(way: str, cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), way=way)], env=env, text=True,
                         capture_output=True)
    if out.returncode:
        return {"seconds": float("nan"), "cache_hits": None, "cache_misses": None,
                "error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = []
    for way in ("hand-written", "generated"):
        with tempfile.TemporaryDirectory() as cache:
            cold, warm = run(way, cache), run(way, cache)
            rows.append((way, cold, warm))
    print("| kernel | cold call (s) | warm call in a new process (s) | cache hits / misses, warm |")
    print("|---|---|---|---|")
    for way, cold, warm in rows:
        print(f"| {way} | {cold['seconds']:.1f} | {warm['seconds']:.2f} | {warm['cache_hits']} / {warm['cache_misses']} |")
        for run_, what in ((cold, "cold"), (warm, "warm")):
            if "error" in run_:
                print(f"  {way}, {what}: {run_['error']}")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"({time.time() - started:.0f} s in all)")
