"""Stored 2-player games of the shipped play agent at a fixed iteration budget, for the
offline go/no-go measurements of issue 62 (`lever_unsure.py`, `lever_endgame.py`).

RESULTS.md: "2026-12-06, 17:14-17:25 UTC" (lever 1)
RESULTS.md: "2026-12-06, 17:25-17:40 UTC" (lever 3)
Verdict: a tool (the positions of the issue 62 levers 1 and 3), no finding of its own.

    python research/lever_games.py --games 60 --iterations 3500 --out results/levers/games_it3500.npz

The shipped play agent is `selfplay:time=0.01`; a time budget is noisy on a shared
machine, so the games are played by `selfplay:iterations=N` with N the median number of
simulations that `selfplay:time=0.01` runs per searched move on this machine (measured
by `--measure`, which plays a few games at `time=0.01` and prints the median). Game g's
deal is `engine.random_deal(10**6 + seed * 1000 + g)` and its two seats' seeds are fixed
by `seed` and `g`, so a rerun plays the same games. Each game keeps the deal and its
action list (any position is rebuilt by replaying them through `GameState.from_deal`),
written whole through `engine.files.atomic_write`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agents  # noqa: E402
from engine import GameState, random_deal  # noqa: E402
from engine.files import atomic_write  # noqa: E402
from engine.view import PlayerView  # noqa: E402

NUM_PLAYERS = 2


@dataclass
class StoredGames:
    """Games as deals and flat actions: game g's are actions[start[g]:start[g + 1]]."""

    deal: np.ndarray  # int8 (G, 40)
    start: np.ndarray  # int64 (G + 1,)
    actions: np.ndarray  # int16 (M,)
    iterations: int  # the search budget that played them

    def __len__(self) -> int:
        return len(self.deal)

    def game_actions(self, g: int) -> np.ndarray:
        return self.actions[self.start[g]:self.start[g + 1]]

    def positions(self, g: int) -> list[tuple[GameState, int]]:
        """(the position before each decision of game g, the action played there)."""
        state = GameState.from_deal(self.deal[g], NUM_PLAYERS)
        out = []
        for a in self.game_actions(g):
            out.append((state.clone(), int(a)))
            state.step(int(a))
        return out

    def save(self, path: Path) -> None:
        buffer = io.BytesIO()
        np.savez(buffer, deal=self.deal, start=self.start, actions=self.actions, iterations=self.iterations)
        atomic_write(path, lambda f: f.write(buffer.getvalue()))

    @staticmethod
    def load(path: Path) -> StoredGames:
        with np.load(path) as data:
            return StoredGames(data["deal"], data["start"], data["actions"], int(data["iterations"]))


def shipped_agent(budget: str, seed: int):
    """The shipped play agent (`selfplay:<budget>`), seeded."""
    agent = agents.make(f"selfplay:{budget}")
    agent.seed(seed)
    return agent


def play(games: int, iterations: int, seed: int) -> StoredGames:
    seats = [shipped_agent(f"iterations={iterations}", seed * 7 + s) for s in range(NUM_PLAYERS)]
    deals, starts, actions = [], [0], []
    for g in range(games):
        deal = random_deal(10**6 + seed * 1000 + g)
        state = GameState.from_deal(deal, NUM_PLAYERS)
        for s, agent in enumerate(seats):
            agent.seed(seed * 100_003 + g * 7 + s)
            agent.reset(s, NUM_PLAYERS)
        while not state.is_over:
            seat = state.current_player
            action = seats[seat].act(None, PlayerView(state, seat))
            actions.append(action)
            state.step(action)
        deals.append(deal)
        starts.append(len(actions))
    return StoredGames(np.array(deals, dtype=np.int8), np.array(starts, dtype=np.int64),
                       np.array(actions, dtype=np.int16), iterations)


def measure(games: int, seed: int) -> list[int]:
    """Simulations per searched move of `selfplay:time=0.01` over `games` games."""
    seats = [shipped_agent("time=0.01", seed + s) for s in range(NUM_PLAYERS)]
    for agent in seats:
        agent.warm_up()
    counts = []
    for g in range(games):
        state = GameState.from_deal(random_deal(2 * 10**6 + g), NUM_PLAYERS)
        for s, agent in enumerate(seats):
            agent.reset(s, NUM_PLAYERS)
        while not state.is_over:
            seat = state.current_player
            action = seats[seat].act(None, PlayerView(state, seat))
            if seats[seat].current.last_iterations:
                counts.append(seats[seat].current.last_iterations)
            state.step(action)
    return counts


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=60)
    p.add_argument("--iterations", type=int, default=3500, help="the shipped budget's equivalent (see --measure)")
    p.add_argument("--seed", type=int, default=62)
    p.add_argument("--out", type=Path, default=Path("results/levers/games.npz"))
    p.add_argument("--measure", type=int, default=0, metavar="GAMES",
                   help="only measure selfplay:time=0.01's simulations per move over GAMES games")
    a = p.parse_args(argv)
    if a.measure:
        start = time.perf_counter()
        counts = np.array(measure(a.measure, a.seed))
        print(f"selfplay:time=0.01, {a.measure} games, {len(counts)} searched moves, load average "
              f"{os.getloadavg()[0]:.2f}: simulations per move median {np.median(counts):.0f}, mean "
              f"{counts.mean():.0f}, 10%-90% {np.percentile(counts, 10):.0f}-{np.percentile(counts, 90):.0f} "
              f"({time.perf_counter() - start:.0f} s)")
        return
    start = time.perf_counter()
    games = play(a.games, a.iterations, a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    games.save(a.out)
    print(f"{len(games)} games of selfplay:iterations={a.iterations} ({len(games.actions)} actions) -> {a.out} "
          f"in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
