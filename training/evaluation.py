"""Evaluating a network during training: its raw policy against built-in agents,
on duplicate deals (each deal played once from every seat)."""

from __future__ import annotations

import numpy as np

import agents
from agents.neural import NetAgent, NetPolicy
from agents.play import play_game
from engine import random_deal


def evaluate_policy(policy: NetPolicy, opponent: str, games: int, seed: int, num_players: int = 2,
                    team: bool = False) -> dict:
    """Play `games` games (rounded up to whole seat rotations) of the raw policy against
    copies of `opponent`; returns win rate (draws half), mean reward and mean margin."""
    rotations = num_players if not team else 2
    deals = max(1, -(-games // rotations))
    me = NetAgent(policy)
    results, margins = [], []
    for d in range(deals):
        deal = random_deal(seed * 100_003 + d)
        for r in range(rotations):
            seats = [agents.make(opponent, seed=seed + 7 * d + s) for s in range(num_players)]
            my_seats = [r] if not team else [r, r + 2]
            for s in my_seats:
                seats[s] = me
            record = play_game(seats, deal, num_players, team)
            mine = my_seats[0]
            results.append(record.rewards[mine])
            others = [record.scores[s] for s in range(num_players) if s not in my_seats]
            margins.append(record.scores[mine] - max(others))
    rewards = np.array(results)
    return {"win_rate": float(np.mean((rewards + 1) / 2)), "mean_reward": float(rewards.mean()),
            "mean_margin": float(np.mean(margins)), "games": len(results)}
