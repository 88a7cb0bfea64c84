"""Agent speed on one core, from the opening position of a 2-player game.

    python benchmarks/agent_speed.py            # a table
    python benchmarks/agent_speed.py --json     # one JSON object

Measures the greedy agent's moves per second (the whole `act` call, and the numba
greedy rollout move alone), and MCTS iterations per second with random and with the
default epsilon-greedy rollouts (an `ismcts` search from the opening, `--iterations`
per search, the best of `--repeats`), and the same for plain ISMCTS and the shipped
2-player self-play network's search (`selfplay`: one network call, then cut rollouts
scored by its fast evaluator) with and without the evaluator from a middle-game position
(turn 20 of the same deal, greedy play): what the evaluator costs a simulation. At that
position also the network's root ordering (the one network call of a `selfplay` move,
timed right after a search as in play), by the numba kernel the search uses and by the
torch network for comparison; and the best response (`br`) against the numba-side
targets greedy (its rollouts fast, the default, and the greedy agent's own), random and
the shipped network's raw policy at that position, with its ratio to plain ISMCTS. numba and
torch run on one thread; nothing here uses prange.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numba
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents import make  # noqa

from agents.networks import features  # noqa: E402
from agents.search.guide import NetworkGuide  # noqa: E402
from agents.networks.policy import NetPolicy  # noqa: E402
from agents.policy_kernels import epsilon_threshold, repeated_rollouts  # noqa: E402
from benchmarks.machine import describe, machine_info  # noqa: E402
from engine import GameState, rules  # noqa: E402
from agents.search.selfplay import shipped_network  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from env.observation import OBS_SIZE, encode_arrays  # noqa: E402

MIDDLE_GAME_TURNS = 20


def best_of(repeats: int, fn) -> float:
    """The shortest of `repeats` timings of fn() (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def greedy_moves_per_s(view, moves: int, repeats: int) -> float:
    agent = make("greedy", seed=0)
    agent.act(None, view)

    def run():
        for _ in range(moves):
            agent.act(None, view)

    return moves / best_of(repeats, run)


def rollouts_per_s(state, epsilon: float, safe: bool, games: int, repeats: int) -> float:
    """Whole-game rollouts per second from the position (a copy of it each time)."""
    grid, info = state.arrays
    g, i = grid.copy(), info.copy()
    thr = epsilon_threshold(epsilon)
    repeated_rollouts(grid, info, g, i, np.uint64(1), thr, safe, 1)
    return games / best_of(repeats, lambda: repeated_rollouts(grid, info, g, i, np.uint64(1), thr, safe, games))


def mcts_iterations_per_s(view, spec: str, iterations: int, repeats: int) -> float:
    agent = make(f"{spec}{',' if ':' in spec else ':'}iterations={iterations}", seed=0)
    agent.act(None, view)  # compile / warm up
    return iterations / best_of(repeats, lambda: agent.act(None, view))


def root_orderings_per_s(view, spec: str, order, calls: int) -> float:
    """How many times a second `order(view)` runs right after a search (`spec`, 2,000
    iterations) has filled the caches, as it does in play: 1 / the median of `calls`."""
    agent = make(f"{spec},iterations=2000", seed=0)
    times = []
    for _ in range(calls):
        agent.act(None, view)
        start = time.perf_counter()
        order(view)
        times.append(time.perf_counter() - start)
    return 1.0 / float(np.median(times))


def torch_root_order(guide, policy, view):
    """The root ordering done by the torch network (what the numba kernel replaced): for
    comparison only."""
    grid, info = view.public_arrays()
    obs = np.zeros((1, OBS_SIZE), dtype=np.float32)
    encode_arrays(grid, info, view.seat, obs[0])
    mask = view.legal_action_mask()[None, : policy.num_actions]
    exposure = features.exposure(grid, info, kind=guide.net.exposure_kind)[None] if guide.net.needs_exposure else None
    logits, _ = policy.logits_values(obs, mask, exposure)
    legal = np.flatnonzero(mask[0, : rules.NUM_PLACEMENT_ACTIONS])
    return legal[np.argsort(-logits[0, legal], kind="stable")]


def middle_game_view(seed: int, turns: int = MIDDLE_GAME_TURNS) -> PlayerView:
    """The view of the seat to move after `turns` greedy moves of deal `seed`."""
    state = GameState.new(2, seed=seed)
    greedy = make("greedy", seed=0)
    for _ in range(turns):
        state.step(greedy.act(None, PlayerView(state, state.current_player)))
    return PlayerView(state, state.current_player)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=20000, help="MCTS iterations per timed search")
    parser.add_argument("--repeats", type=int, default=5, help="timings per measure; the best is kept")
    parser.add_argument("--seed", type=int, default=0, help="the deal of the opening position")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    numba.set_num_threads(1)
    torch.set_num_threads(1)

    state = GameState.new(2, seed=args.seed)
    view = PlayerView(state, 0)
    middle = middle_game_view(args.seed)
    selfplay_search = f"ismcts:net={shipped_network(2)},prior=3"  # what `selfplay` plays in 2-player games
    guide = NetworkGuide(str(shipped_network(2)))
    torch_policy = NetPolicy(guide.net)  # the torch network, for the comparison only
    full = "depth=0"  # whole-game rollouts, as in a flat Monte Carlo
    result = {
        "machine": machine_info(),
        "position": f"opening of a 2-player game, deal seed {args.seed}",
        "greedy_moves_per_s": greedy_moves_per_s(view, 2000, args.repeats),
        "mcts_random_rollout_iterations_per_s": mcts_iterations_per_s(
            view, f"ismcts:epsilon=1,{full}", args.iterations, args.repeats),
        "mcts_greedy_rollout_iterations_per_s": mcts_iterations_per_s(
            view, f"ismcts:{full}", args.iterations, args.repeats),
        "mcts_default_iterations_per_s": mcts_iterations_per_s(view, "ismcts", args.iterations, args.repeats),
        "pimc_default_iterations_per_s": mcts_iterations_per_s(view, "pimc", args.iterations, args.repeats),
        "cheat_default_iterations_per_s": mcts_iterations_per_s(view, "cheat", args.iterations, args.repeats),
        "random_rollouts_per_s": rollouts_per_s(state, 1.0, False, 20000, args.repeats),
        "epsilon_greedy_rollouts_per_s": rollouts_per_s(state, 0.1, True, 5000, args.repeats),
        "middle_game_position": f"turn {MIDDLE_GAME_TURNS} of deal seed {args.seed}, greedy play",
        "middle_game_mcts_default_iterations_per_s": mcts_iterations_per_s(
            middle, "ismcts", args.iterations, args.repeats),
        "middle_game_selfplay_search_iterations_per_s": mcts_iterations_per_s(
            middle, selfplay_search, args.iterations, args.repeats),
        "middle_game_selfplay_search_without_evaluator_iterations_per_s": mcts_iterations_per_s(
            middle, f"{selfplay_search},evaluator=false,depth=1", args.iterations, args.repeats),
        "middle_game_root_orderings_per_s": root_orderings_per_s(
            middle, selfplay_search, lambda v: guide.root_order(v, with_prior=True), 10 * args.repeats),
        "middle_game_torch_root_orderings_per_s": root_orderings_per_s(
            middle, selfplay_search, lambda v: torch_root_order(guide, torch_policy, v), 10 * args.repeats),
        "middle_game_br_greedy_iterations_per_s": mcts_iterations_per_s(
            middle, "br:target=greedy", args.iterations, args.repeats),
        "middle_game_br_greedy_model_rollout_iterations_per_s": mcts_iterations_per_s(
            middle, "br:target=greedy,target_rollout=model", args.iterations, args.repeats),
        "middle_game_br_random_iterations_per_s": mcts_iterations_per_s(
            middle, "br:target=random", args.iterations, args.repeats),
        "middle_game_br_selfplay_policy_iterations_per_s": mcts_iterations_per_s(
            middle, "br:target=selfplay-policy", args.iterations, args.repeats),
        "mcts_iterations_per_search": args.iterations,
    }
    # the best response against a numba-side target, as a share of plain ISMCTS's speed (issue 39: >= 0.3)
    result["middle_game_br_greedy_to_ismcts_ratio"] = (result["middle_game_br_greedy_iterations_per_s"]
                                                       / result["middle_game_mcts_default_iterations_per_s"])
    if args.json:
        print(json.dumps(result))
    else:
        print(f"machine: {describe()}, load average {result['machine']['load_average']:.2f}")
        for key, value in result.items():
            if key.endswith("_ratio"):
                print(f"  {key:64s} {value:12.2f}")
            elif isinstance(value, float):
                print(f"  {key:64s} {value:12,.0f}")
            elif key.endswith("position"):
                print(value)
    return result


if __name__ == "__main__":
    main()
