"""Evaluating a network during training: its raw policy against built-in agents,
on duplicate deals (each deal played once from every seat).

The games run in this process, one network call per move on a batch of one position.
They run on one torch thread: at that size a second thread only adds synchronisation, and
when the other cores are busy each call waits for a descheduled thread (measured on 2
shared cores: 40 games in 0.9 s on one thread, 30 s on two; benchmarks/RESULTS.md
2026-12-06)."""

from __future__ import annotations

import contextlib
from typing import Callable

import numpy as np
import torch

from agents.base import typed_agent
from agents.networks import NetAgent, NetPolicy
from agents.play import play_game
from engine import random_deal
from engine.kernels import score_leads


@contextlib.contextmanager
def one_torch_thread():
    """Run the block on one torch thread; the caller's setting is restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def evaluate_policy(policy: NetPolicy, opponent, games: int, seed: int, num_players: int = 2,
                    team: bool = False, progress: Callable[[int, int], None] | None = None) -> dict:
    """Play `games` games (rounded up to whole seat rotations) of the raw policy against
    copies of the typed agent `opponent` (the config's `eval.lineup`); returns win rate
    (draws half), mean reward and mean margin (the policy's minute lead,
    `engine.kernels.score_leads`: 2 players, the difference of the scores; 3-4, its minutes
    minus the mean of the others'; teams, its team's minus the other's); `progress(done,
    total)` before the first game and after each."""
    typed_agent(opponent, "an evaluation opponent")
    rotations = num_players if not team else 2
    deals = max(1, -(-games // rotations))
    with one_torch_thread():
        return _evaluate(policy, opponent, deals, rotations, seed, num_players, team, progress)


def _evaluate(policy, opponent, deals, rotations, seed, num_players, team, progress) -> dict:
    me = NetAgent(policy)
    results, margins = [], []
    total = deals * rotations
    if progress is not None:
        progress(0, total)
    for d in range(deals):
        deal = random_deal(seed * 100_003 + d)
        for r in range(rotations):
            seats = [opponent.build(seed=seed + 7 * d + s) for s in range(num_players)]
            my_seats = [r] if not team else [r, r + 2]
            for s in my_seats:
                seats[s] = me
            record = play_game(seats, deal, num_players, team)
            mine = my_seats[0]
            results.append(record.rewards[mine])
            margins.append(score_leads(record.scores, team)[mine])
            if progress is not None:
                progress(len(results), total)
    rewards = np.array(results)
    return {"win_rate": float(np.mean((rewards + 1) / 2)), "mean_reward": float(rewards.mean()),
            "mean_margin": float(np.mean(margins)), "games": len(results)}
