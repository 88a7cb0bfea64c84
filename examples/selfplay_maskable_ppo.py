"""Self-play with sb3-contrib's MaskablePPO: one policy plays every seat of the PettingZoo
env (`env.sb3.maskable_selfplay_env`), then plays games against the ``random`` agent.

    python examples/selfplay_maskable_ppo.py                          # 2,048 steps, 20 games
    python examples/selfplay_maskable_ppo.py --timesteps 100000 --games 200 --players 3

The trained policy then sits in one seat (each seat in turn) of games dealt by
``engine.random_deal``, as an agent of this project (`PolicyAgent`), the other seats
``random``. The score is the mean of ``(reward + 1) / 2``: 1 a win, 0.5 a draw, 0 a loss
(with 3-4 players the reward is the mean pairwise result, docs/rules.md). A few thousand
steps are far too few to learn much; docs/interop.md says what longer runs reach.
Needs the ``sb3`` extra: ``pip install torch==2.13.0 -e ".[sb3]"``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from agents import Agent, make  # noqa: E402
from agents.play import play_game  # noqa: E402
from engine import random_deal  # noqa: E402
from env.sb3 import maskable_selfplay_env  # noqa: E402

BATCH_SIZE = 64  # MaskablePPO's default minibatch
MAX_ROLLOUT = 2048  # MaskablePPO's default n_steps


@dataclass(frozen=True)
class Score:
    """The trained policy's results against ``random``."""

    games: int
    mean: float  # of (reward + 1) / 2
    half_width: float  # of a normal 95% interval
    forfeits: int


class PolicyAgent(Agent):
    """A trained MaskablePPO policy as an agent: its deterministic move, masked to the
    legal actions, from the seat's observation."""

    name = "maskable-ppo"
    needs_observation = True  # agents.play.play_game hands act() the seat's observation

    def __init__(self, model):
        super().__init__()
        self.model = model

    def act(self, observation, view) -> int:
        mask = view.legal_action_mask()[: self.model.action_space.n]
        action, _ = self.model.predict(observation, action_masks=mask, deterministic=True)
        return int(action)


def train(timesteps: int, players: int, seed: int):
    """MaskablePPO ("MlpPolicy", defaults but a rollout of at most `timesteps` steps) by
    self-play over `timesteps` steps."""
    from sb3_contrib import MaskablePPO

    rollout = max(BATCH_SIZE, min(MAX_ROLLOUT, timesteps // BATCH_SIZE * BATCH_SIZE))
    model = MaskablePPO("MlpPolicy", maskable_selfplay_env(num_players=players), n_steps=rollout,
                        batch_size=BATCH_SIZE, seed=seed, verbose=0)
    model.learn(total_timesteps=timesteps)
    return model


def score_vs_random(model, games: int, players: int, seed: int) -> Score:
    """`games` games, the policy in seat ``i % players`` of game i, ``random`` elsewhere."""
    results, forfeits = [], 0
    for i in range(games):
        seat = i % players
        seats = [make("random", seed=seed + i * players + s) for s in range(players)]
        seats[seat] = PolicyAgent(model)
        record = play_game(seats, random_deal(seed + i), players)
        forfeits += record.forfeit is not None
        results.append((record.rewards[seat] + 1) / 2)
    values = np.array(results)
    half = 1.96 * values.std(ddof=1) / np.sqrt(games) if games > 1 else float("nan")
    return Score(games, float(values.mean()), float(half), forfeits)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timesteps", type=int, default=2048, help="self-play steps (default 2048)")
    ap.add_argument("--games", type=int, default=20, help="test games against random (default 20)")
    ap.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch threads (default 1: more spin against each other on a small machine)")
    args = ap.parse_args(argv)
    if args.timesteps < 1 or args.games < 1 or args.torch_threads < 1 or args.seed < 0:
        ap.error("--timesteps, --games and --torch-threads must be positive, --seed >= 0")
    return args


def main(argv=None) -> Score:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.torch_threads)
    start = time.perf_counter()
    model = train(args.timesteps, args.players, args.seed)
    trained = time.perf_counter()
    score = score_vs_random(model, args.games, args.players, seed=10**6 + args.seed)
    print(f"MaskablePPO self-play, {args.players} players, {args.timesteps} steps "
          f"({trained - start:.0f} s): score vs random {score.mean:.3f} +- {score.half_width:.3f} "
          f"over {score.games} games ({time.perf_counter() - trained:.0f} s), {score.forfeits} forfeits")
    return score


if __name__ == "__main__":
    main()
