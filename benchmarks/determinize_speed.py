"""World sampling speed where passes matter, on one core.

    python benchmarks/determinize_speed.py          # a table
    python benchmarks/determinize_speed.py --json   # one JSON object

`agent_speed.py` searches the opening, where no seat has passed. This one collects the
positions right after a pass by a seat holding tiles (seeded random games, 2 and 4
players) and measures there: `engine.determinize.sample_world` calls per second (a
compiled loop, so Python's call overhead is not counted), and `ismcts` iterations per
second for the seat to move; and, for comparison, sampling at the openings of as many
games (no pass yet). It uses only what every version of the engine has, so
the same script measures a checkout from before the sampler honoured passes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numba
import numpy as np
from numba import njit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents import make  # noqa: E402
from benchmarks.machine import describe, machine_info  # noqa: E402
from engine import GameState, rules  # noqa: E402
from engine.determinize import SCRATCH_LEN, sample_world  # noqa: E402
from engine.view import PlayerView  # noqa: E402


@njit(cache=False)
def _sample_many(grid, info, seat, count, out_grid, out_info, scratch):
    rng = np.uint64(1)
    for _ in range(count):
        rng = sample_world(grid, info, seat, rng, out_grid, out_info, scratch)
    return rng


def positions_after_passes(num_players: int, count: int) -> list[GameState]:
    """The positions right after a pass by a seat holding tiles, game not over."""
    found = []
    for seed in range(100_000):
        rng = np.random.default_rng(seed)
        state = GameState.new(num_players, seed=seed)
        while not state.is_over and len(found) < count:
            legal = state.legal_actions()
            mover = state.current_player
            state.step(int(legal[rng.integers(len(legal))]))
            if (state.last_action == rules.PASS_ACTION and state.hand_sizes[mover] > 0
                    and not state.is_over):
                found.append(state.clone())
        if len(found) >= count:
            return found
    raise RuntimeError("not enough positions")


def samples_per_s(states, per_state: int) -> float:
    out_grid = np.zeros_like(states[0].arrays[0])
    out_info = np.zeros_like(states[0].arrays[1])
    scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
    args = lambda s: (*s.arrays, np.int64(s.current_player))  # noqa: E731
    _sample_many(*args(states[0]), 1, out_grid, out_info, scratch)  # compile
    start = time.perf_counter()
    for s in states:
        _sample_many(*args(s), per_state, out_grid, out_info, scratch)
    return len(states) * per_state / (time.perf_counter() - start)


def ismcts_iterations_per_s(states, iterations: int) -> float:
    agent = make(f"ismcts:iterations={iterations}", seed=0)
    agent.act(None, PlayerView(states[0], states[0].current_player))  # compile / warm up
    start = time.perf_counter()
    for s in states:
        agent.act(None, PlayerView(s, s.current_player))
    return len(states) * iterations / (time.perf_counter() - start)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=20, help="positions per player count")
    parser.add_argument("--samples", type=int, default=20000, help="sampled worlds per position")
    parser.add_argument("--iterations", type=int, default=2000, help="ismcts iterations per position")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    numba.set_num_threads(1)
    result = {"machine": machine_info(), "positions_per_player_count": args.positions}
    for n in (2, 4):
        openings = [GameState.new(n, seed=seed) for seed in range(args.positions)]
        result[f"{n}p_opening_sample_world_per_s"] = samples_per_s(openings, args.samples)
        states = positions_after_passes(n, args.positions)
        result[f"{n}p_sample_world_per_s"] = samples_per_s(states, args.samples)
        result[f"{n}p_ismcts_iterations_per_s"] = ismcts_iterations_per_s(states, args.iterations)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
        print("openings, and positions right after a pass by a seat holding tiles (random games)")
        for key, value in result.items():
            if isinstance(value, float):
                print(f"  {key:35s} {value:12,.0f}")
    return result


if __name__ == "__main__":
    main()
