"""Issue 72, item 3: can the per-combination search kernels be generated from one table and
still load from numba's cache?

`agents.search.core` writes six search kernels by hand, one per (expansion, leaf), each a
line calling `run` with its parts: numba inlines the parts and caches the kernel. A
generated kernel is a closure over its parts, made by a factory from a table. This script
makes the rollout searches of both expansions (greedy, random) both ways and times, in
fresh processes sharing one empty cache directory, a first call (cold: compiles and writes
the cache) and the same calls again in a new process (warm: should load them), and checks
that each computes the hand-written kernel's root visits:

    python research/generated_kernels.py            # prints the table for RESULTS

RESULTS.md: "2026-12-07, 05:00-05:25 UTC"
Verdict: numba does not load a closure's machine code from its cache (0 hits, 38-43 s to
compile again in every process, against 0.2 s for a hand-written kernel); the search
kernels stay written by hand, one short function per combination of parts.
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

def make_search(expand, leaf):
    """A search kernel generated from its parts (a closure over them), cached like the
    hand-written ones."""
    from numba import njit

    from agents.search import core

    @njit(cache=True)
    def search(root_grid, root_info, observer, iterations, params, rng, tree_, work, data):
        return core.run(root_grid, root_info, observer, iterations, params, rng, tree_, work, data,
                        core.deal_world, core.ucb, expand, leaf, core.no_model)

    return search


# Each process runs both expansions' kernels (greedy and random, rollout leaf) of one way,
# and prints for each: seconds of the first call, cache hits/misses, and the root's visit
# counts (a generated kernel must compute what the hand-written one of the same parts does).
CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from agents.search import core, tree
from agents.settings import SearchSettings
from engine import GameState
from engine.view import PlayerView
from research.generated_kernels import make_search

way = {way!r}
if way == "generated":
    kernels = {{"greedy": make_search(core.expand_greedy, core.rollout_leaf),
               "random": make_search(core.expand_random, core.rollout_leaf)}}
else:
    kernels = {{"greedy": core.search_greedy_rollout, "random": core.search_random_rollout}}
state = GameState.new(2, seed=0)
grid, info = PlayerView(state, 0).public_arrays()
params = SearchSettings().kernel_parameters(False)
out = {{}}
for name, kernel in kernels.items():
    t = tree.new_tree(256)
    core.reset_tree(t.nodes, t.values, t.meta)
    start = time.perf_counter()
    kernel(grid, info, np.int64(0), np.int64(200), params, np.uint64(1), t, tree.new_workspace(), np.zeros(1))
    seconds = time.perf_counter() - start
    kids = np.nonzero(t.nodes[1:t.meta[0], core.PARENT] == core.ROOT)[0] + 1
    out[name] = {{"seconds": seconds, "cache_hits": sum(kernel.stats.cache_hits.values()),
                 "cache_misses": sum(kernel.stats.cache_misses.values()),
                 "visits": sorted(zip(t.nodes[kids, core.ACTION].tolist(), t.nodes[kids, core.VISITS].tolist()))}}
print(json.dumps(out))
"""


def run(way: str, cache: str) -> dict:
    """One fresh process's figures for `way`, the numba cache at `cache`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), way=way)], env=env, text=True,
                         capture_output=True)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    results = {}
    for way in ("hand-written", "generated"):
        with tempfile.TemporaryDirectory() as cache:
            results[way] = (run(way, cache), run(way, cache))
    print("| kernels | expansion | cold call (s) | warm call, new process (s) | warm cache hits / misses | "
          "same root visits as hand-written |")
    print("|---|---|---|---|---|---|")
    for way, (cold, warm) in results.items():
        if "error" in cold or "error" in warm:
            print(f"| {way} | - | error: {cold.get('error') or warm.get('error')} | | | |")
            continue
        for name in ("greedy", "random"):
            same = all(r[name]["visits"] == results["hand-written"][0][name]["visits"] for r in (cold, warm))
            print(f"| {way} | {name} | {cold[name]['seconds']:.1f} | {warm[name]['seconds']:.2f} | "
                  f"{warm[name]['cache_hits']} / {warm[name]['cache_misses']} | {'yes' if same else '**no**'} |")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"({time.time() - started:.0f} s in all)")
