"""Steps per second of the 24/7 environments, next to the raw engine.

    python benchmarks/env_speed.py            # full run (about a minute)
    python benchmarks/env_speed.py --quick    # a few seconds
    python benchmarks/env_speed.py --json     # one JSON object on stdout

Measured (median of `--repeats` timed runs, after a warm-up that compiles everything):

* AEC: the wrapped PettingZoo env (`env.env()`) and the bare `raw_env`, 2 players, one
  step per `agent_iter` turn with a uniformly random legal action from the mask (numpy);
  end-of-game `step(None)` calls are not counted.
* Gym: `TwentyFourSevenEnv` steps (learner seat 0, random opponents inside), random legal
  learner actions from `info["action_mask"]`; `gym_moves_per_s` counts every seat's moves.
* Vector: `TwentyFourSevenVectorEnv` at each batch size, actions drawn from the masks by
  the numba kernel `sample_masked` below; steps/s = games x steps / time,
  observations, masks and auto-resets included. `vector_steps_per_s` uses the default
  ``copy=True`` (fresh output arrays every step); `vector_nocopy_steps_per_s` the same
  with ``copy=False`` (output buffers reused, as a loop that stores each batch before
  the next step may use: half the memory traffic).
* Engine: `engine.batch.play_random_games_parallel` placements/s (no observations).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as `import env` does; before numba loads libgomp

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.machine import machine_info  # noqa: E402
from engine.kernels import rng_below


_CPU = {}  # figure name -> CPU seconds (all threads) per million items, median


def _median_rate(fn, repeats: int, name: str | None = None) -> float:
    """Median items/s over `repeats` runs of fn() (which returns its item count); the
    process CPU time per item goes to _CPU[name], a load-independent cost."""
    rates, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        count = fn()
        rates.append(count / (time.perf_counter() - t0))
        cpu.append((time.process_time() - c0) / count * 1e6)
    if name:
        _CPU[name] = statistics.median(cpu)
    return statistics.median(rates)


def aec_rate(make, steps: int, seed: int = 0) -> float:
    e = make()
    rng = np.random.default_rng(seed)

    def run():
        e.reset(seed=int(rng.integers(2**31)))
        count = 0
        while count < steps:
            for agent in e.agent_iter():
                obs, reward, term, trunc, info = e.last()
                if term or trunc:
                    e.step(None)
                    continue
                legal = np.flatnonzero(obs["action_mask"])
                e.step(int(legal[rng.integers(len(legal))]))
                count += 1
            e.reset()
        return count

    return run


def gym_rate(steps: int, seed: int = 0):
    from env import TwentyFourSevenEnv

    e = TwentyFourSevenEnv()
    rng = np.random.default_rng(seed)
    moves = [0]

    def run():
        _, info = e.reset(seed=int(rng.integers(2**31)))
        count = 0
        turn0 = 0
        while count < steps:
            legal = np.flatnonzero(info["action_mask"])
            _, _, term, _, info = e.step(int(legal[rng.integers(len(legal))]))
            count += 1
            if term:
                moves[0] += e.game.turn - turn0
                _, info = e.reset()
                turn0 = e.game.turn
        moves[0] += e.game.turn - turn0
        return count

    return run, moves


_CHUNK = 32
_REJECTION_TRIES = 16


@njit(_nrt=False)
def _sample_one(mask, rng, i, out):
    m = mask[i]
    width = m.shape[0]
    state = rng[i]
    # Rejection first: a uniform id that is legal is a uniform legal action, and with a
    # tenth of the ids legal a few random bytes are read instead of the whole row.
    for _ in range(_REJECTION_TRIES):
        state, a = rng_below(state, width)
        if m[a] != 0:
            rng[i] = state
            out[i] = a
            return
    # Few legal actions: count them and pick the r-th (still uniform).
    total = 0
    for a in range(width):
        total += m[a]
    out[i] = -1
    if total > 0:
        state, r = rng_below(state, total)
        start = 0
        while start < width:  # skip whole chunks, then walk the one holding the r-th
            stop = min(start + _CHUNK, width)
            k = 0
            for a in range(start, stop):
                k += m[a]
            if r < k:
                for a in range(start, stop):
                    if m[a] != 0:
                        if r == 0:
                            out[i] = a
                            break
                        r -= 1
                break
            r -= k
            start = stop
    rng[i] = state


@njit(parallel=True)
def sample_masked(mask, rng, out):
    """out[i] = a uniformly random action among mask[i] != 0 (-1 if none), from the
    splitmix64 stream rng[i]. Masks hold 0/1."""
    for i in prange(mask.shape[0]):
        _sample_one(mask, rng, np.int64(i), out)


def vector_rate(num_envs: int, steps: int, seed: int = 0, copy: bool = True):
    from env import TwentyFourSevenVectorEnv

    v = TwentyFourSevenVectorEnv(num_envs=num_envs, copy=copy)
    obs, info = v.reset(seed=seed)
    rng = np.random.SeedSequence(seed).generate_state(num_envs, np.uint64)
    actions = np.empty(num_envs, dtype=np.int64)
    state = {"mask": obs["action_mask"]}

    def run():
        mask = state["mask"]
        for _ in range(steps):
            sample_masked(mask, rng, actions)
            obs, _, _, _, _ = v.step(actions)
            mask = obs["action_mask"]
        state["mask"] = mask
        return steps * num_envs

    return run


def engine_rate(num_games: int, seed: int = 0):
    from engine.batch import play_random_games_parallel

    chunks = 4 * numba.get_num_threads()

    def run():
        return int(play_random_games_parallel(num_games, seed, 2, chunks))

    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (a few seconds)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per figure (median)")
    args = parser.parse_args(argv)
    quick = args.quick
    repeats = args.repeats or (3 if quick else 5)
    batches = [64, 256, 1024, 4096]
    aec_steps = 3_000 if quick else 20_000
    gym_steps = 1_000 if quick else 5_000
    vec_items = 200_000 if quick else 2_000_000  # games x steps per timed run
    engine_games = 20_000 if quick else 200_000

    import env as env_pkg

    def log(msg):
        if not args.json:
            print(msg, flush=True)

    t0 = time.perf_counter()
    # warm-up: compile (or load from cache) every kernel once
    aec_rate(env_pkg.env, 200)()
    gym_rate(50)[0]()
    vector_rate(8, 5)()
    engine_rate(100)()
    log(f"warm-up (compile/cache load): {time.perf_counter() - t0:.1f} s")

    result = {
        "machine": {**machine_info(), "threading_layer": None, "load_average_before": os.getloadavg()[0]},
        "quick": quick,
        "repeats": repeats,
    }
    result["machine"]["threading_layer"] = numba.threading_layer()
    result["aec_steps_per_s"] = _median_rate(aec_rate(env_pkg.env, aec_steps), repeats)
    log(f"AEC env() (wrapped)     {result['aec_steps_per_s']:>14,.0f} steps/s")
    result["aec_raw_steps_per_s"] = _median_rate(aec_rate(env_pkg.raw_env, aec_steps), repeats)
    log(f"AEC raw_env             {result['aec_raw_steps_per_s']:>14,.0f} steps/s")
    run, moves = gym_rate(gym_steps)
    t = time.perf_counter()
    result["gym_steps_per_s"] = _median_rate(run, repeats)
    result["gym_moves_per_s"] = moves[0] / (time.perf_counter() - t)
    log(f"Gym env (vs random)     {result['gym_steps_per_s']:>14,.0f} steps/s "
        f"({result['gym_moves_per_s']:,.0f} moves/s, all seats)")
    result["vector_steps_per_s"] = {}
    result["vector_nocopy_steps_per_s"] = {}
    for n in batches:
        steps = max(vec_items // n, 10)
        rate = _median_rate(vector_rate(n, steps), repeats, f"vector_{n}")
        result["vector_steps_per_s"][str(n)] = rate
        nocopy = _median_rate(vector_rate(n, steps, copy=False), repeats)
        result["vector_nocopy_steps_per_s"][str(n)] = nocopy
        log(f"Vector env  N={n:<5}     {rate:>14,.0f} steps/s   (copy=False: {nocopy:,.0f})")
    result["engine_batch_placements_per_s"] = _median_rate(engine_rate(engine_games), repeats)
    log(f"Engine batch (random)   {result['engine_batch_placements_per_s']:>14,.0f} placements/s")
    result["vector_cpu_s_per_million_steps"] = {str(n): _CPU[f"vector_{n}"] for n in batches}
    log("vector CPU s per million steps (all threads; load-independent): "
        + ", ".join(f"N={n}: {_CPU[f'vector_{n}']:.2f}" for n in batches))
    result["machine"]["load_average_after"] = os.getloadavg()[0]
    m = result["machine"]
    log(f"machine: {m['platform']}, {m['cpu']}, {m['cores']} cores, numba {m['numba']} "
        f"with {m['numba_threads']} threads ({m['threading_layer']}); load average "
        f"{m['load_average_before']:.1f} before, {m['load_average_after']:.1f} after")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
