"""Issue 62, lever 3 (exact endgames) in play: is the cost `lever_endgame.py` charges the
shipped moves real in the hidden-information game?

RESULTS.md: "2026-12-06, 18:02-18:16 UTC"
Verdict: no-go. Exact endgames at <= 10 tiles are worth +0.005 [-0.004, +0.015] score per
seat-game in play (gate 0.015), at about 1 s of solver CPU a seat-game.

    python research/lever_endgame_play.py --games 250 --out results/levers/endgame_play.npz
    python research/lever_endgame_play.py --report results/levers/endgame_play.npz

Counterfactual endgames: each game (deal `random_deal(5 * 10**6 + g)`) is played by the
shipped agent's equivalent (`selfplay:iterations=N`, `--iterations`) in both seats until
the bag is empty. From that position it is played to the end twice for each seat X: once
by the shipped agent in both seats, once with X playing the PIMC-exact move
(`lever_endgame.move_values`, expectimax over every opponent hand, each world solved to its
end) at its decisions with at most `--max-tiles` tiles in both hands, unless the solve
passes `--node-limit` nodes (then the shipped move). The opponent's searches are seeded the
same in both branches. The figure: X's reward with exact endgames minus without, per seat
and game, with a bootstrap 95% interval over games, and the solver's CPU per seat-game.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import GameState, random_deal  # noqa: E402
from engine.files import atomic_write  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from research.lever_endgame import Solver, exact_move, move_values  # noqa: E402
from research.lever_games import NUM_PLAYERS, shipped_agent  # noqa: E402


def branch(root: GameState, seats, exact_seat: int | None, solver: Solver, max_tiles: int, limit: int,
           seed: int) -> tuple[np.ndarray, float, int, int]:
    """Play `root` (a copy) to its end; (rewards, solver CPU, exact moves played, solves
    over the limit)."""
    state = root.clone()
    for s, agent in enumerate(seats):
        agent.seed(seed * 2 + s)
        agent.reset(s, NUM_PLAYERS)
    cpu, played, over_limit = 0.0, 0, 0
    while not state.is_over:
        seat = state.current_player
        action = None
        if seat == exact_seat and len(state.legal_actions()) > 1 and state.hand_sizes.sum() <= max_tiles:
            t0 = time.process_time()
            values = move_values(solver, state, limit)
            cpu += time.process_time() - t0
            if values is None:
                over_limit += 1
            else:
                action = exact_move(values)
                played += 1
        if action is None:
            action = seats[seat].act(None, PlayerView(state, seat))
        state.step(action)
    return state.rewards(), cpu, played, over_limit


def play(games: int, iterations: int, max_tiles: int, limit: int) -> dict[str, np.ndarray]:
    seats = [shipped_agent(f"iterations={iterations}", s) for s in range(NUM_PLAYERS)]
    solver = Solver()
    rows: dict[str, list] = {k: [] for k in ("game", "seat", "shipped", "exact", "cpu", "played", "over_limit")}
    start = time.perf_counter()
    for g in range(games):
        state = GameState.from_deal(random_deal(5 * 10**6 + g), NUM_PLAYERS)
        for s, agent in enumerate(seats):
            agent.seed(g * 2 + s)
            agent.reset(s, NUM_PLAYERS)
        while not state.is_over and state.bag_size > 0:
            state.step(seats[state.current_player].act(None, PlayerView(state, state.current_player)))
        if state.is_over:
            continue
        base, _, _, _ = branch(state, seats, None, solver, max_tiles, limit, 10**6 + g)
        for x in range(NUM_PLAYERS):
            exact, cpu, played, over = branch(state, seats, x, solver, max_tiles, limit, 10**6 + g)
            for key, value in (("game", g), ("seat", x), ("shipped", base[x]), ("exact", exact[x]), ("cpu", cpu),
                               ("played", played), ("over_limit", over)):
                rows[key].append(value)
        if (g + 1) % 25 == 0:
            d = np.array(rows["exact"]) - np.array(rows["shipped"])
            print(f"  {g + 1}/{games} games, {time.perf_counter() - start:.0f} s; mean difference so far "
                  f"{d.mean():+.4f} reward", flush=True)
    return {k: np.array(v) for k, v in rows.items()}


def report(data: dict[str, np.ndarray]) -> str:
    diff = data["exact"] - data["shipped"]
    games = np.unique(data["game"])
    per_game = np.array([diff[data["game"] == g].mean() for g in games])
    rng = np.random.default_rng(0)
    boots = [per_game[rng.integers(0, len(games), len(games))].mean() for _ in range(2000)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    changed = diff != 0
    return (f"{len(games)} games, {len(diff)} seat-branches; exact endgames change the result of {changed.sum()} "
            f"({(diff > 0).sum()} better, {(diff < 0).sum()} worse); reward per seat-game {diff.mean():+.4f} "
            f"[{lo:+.4f}, {hi:+.4f}] = score {diff.mean() / 2:+.4f} [{lo / 2:+.4f}, {hi / 2:+.4f}] (bootstrap over "
            f"games); exact moves per seat-game {data['played'].mean():.1f}, solves over the node limit "
            f"{data['over_limit'].mean():.2f}; solver CPU per seat-game mean {data['cpu'].mean():.2f} s, median "
            f"{np.median(data['cpu']):.2f} s")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=250)
    p.add_argument("--iterations", type=int, default=3500)
    p.add_argument("--max-tiles", type=int, default=10)
    p.add_argument("--node-limit", type=int, default=5_000_000)
    p.add_argument("--out", type=Path, default=Path("results/levers/endgame_play.npz"))
    p.add_argument("--report", type=Path)
    a = p.parse_args(argv)
    if a.report:
        with np.load(a.report) as stored:
            print(report({k: stored[k] for k in stored.files}))
        return
    print(f"{a.games} games of selfplay:iterations={a.iterations}; exact at <= {a.max_tiles} tiles, node limit "
          f"{a.node_limit:,}; load average {os.getloadavg()[0]:.2f}", flush=True)
    start = time.perf_counter()
    data = play(a.games, a.iterations, a.max_tiles, a.node_limit)
    buffer = io.BytesIO()
    np.savez(buffer, **data)
    atomic_write(a.out, lambda f: f.write(buffer.getvalue()))
    print(f"played in {time.perf_counter() - start:.0f} s -> {a.out}\n")
    print(report(data))


if __name__ == "__main__":
    main()
