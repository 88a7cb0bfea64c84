"""Issue 62, lever 3 (exact endgames), the offline go/no-go: once the bag is empty, how
often does the shipped agent's move differ from the exact one, and what does it cost?

RESULTS.md: "2026-12-06, 17:25-17:40 UTC"
Verdict: no-go. By PIMC-exact values the shipped moves lose 0.042 [0.022, 0.065] score per
seat-game at 8-10 tiles left (gate 0.015), but there a solve takes 64-677 ms (median) against
the 10 ms move, and in play (`lever_endgame_play.py`) the exact moves win only +0.005
[-0.004, +0.015].

    python research/lever_games.py --games 60 --iterations 3500 --out results/levers/games_it3500.npz
    python research/lever_endgame.py results/levers/games_it3500.npz --out results/levers/endgame.npz
    python research/lever_endgame.py --report results/levers/endgame.npz

Positions: every decision of the stored games of the shipped agent (`lever_games.py`,
2 players) with the bag empty and at least two legal placements; the shipped move is the
move the game played.

"Exact" (per decision): expectimax over every world consistent with the mover's view.
With the bag empty the mover's unseen tiles are the opponent's hand (k tiles) and the 3
removed tiles; every multiset of k of them is one world, weighted by its number of ways
(the product of binomials over values), less the hands an opponent's pass rules out (its
pass fact: at least `held` tiles above `cap`). Each world is a perfect-information game
to its end (docs/rules.md: it ends when nobody can place), solved by alpha-beta negamax
(`negamax`, numba; children ordered by the minutes they score now) on the mover's
lexicographic value (the game's reward, +1 / 0 / -1, then the minute lead), for every
legal move of the mover. A move's value: the weighted mean over worlds of the reward and
of the lead of its solved line; the exact move has the best mean reward, then the best
mean lead. A decision's cost: the exact move's mean reward minus the shipped move's
(reward units; half of it in score). This is a PIMC-exact value (each world solved as
if both hands were known), not the value of the imperfect-information game.

A decision whose solve visits more than `--node-limit` nodes (all its worlds and moves
together) is left unsolved and counted apart (by tiles left): exact solving is only
affordable near the end.
"""

from __future__ import annotations

import argparse
import io
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import GameState, access, rules  # noqa: E402
from engine.determinize import SCRATCH_LEN, deal_around_hands  # noqa: E402
from engine.files import atomic_write  # noqa: E402
from engine.kernels import (  # noqa: E402
    apply_action,
    copy_state,
    legal_placements,
    points_if_placed,
    rewards,
)
from engine.layout import PAD_OF_CELL  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from research.lever_games import NUM_PLAYERS, StoredGames  # noqa: E402

BIG = 4096.0  # value = reward * BIG + minute lead: lexicographic while |lead| < BIG / 2
MAX_DEPTH = 48  # plies: at most 12 placements and the passes between them, with room
MAX_MOVES = rules.NUM_PLACEMENT_ACTIONS
GATE_SCORE_PER_GAME = 0.015  # about +10 Elo


# --- the perfect-information solver ---------------------------------------------------------
@njit(cache=True)
def _terminal(info, seat, scratch):
    rewards(info, scratch)
    lead = access.score(info, seat) - access.score(info, 1 - seat)
    return scratch[seat] * BIG + lead


TABLE_BITS = 22  # transposition table entries: 2**22
EXACT, LOWER, UPPER = 0, 1, 2
_Z = np.random.default_rng(62).integers(1, 2**63, size=(64 * 11 + 2 * 11 * 5 + 2,), dtype=np.int64)


@njit(inline="always", cache=True)
def _key(grid, info):
    """A 64-bit Zobrist key of what decides the rest of a 2-player game with the bag
    empty: the board, both hands, the seat to move and the minute difference."""
    k = _Z[64 * 11 + 2 * 11 * 5 + access.current_seat(info)]
    for c in range(49):
        p = PAD_OF_CELL[c]
        k ^= _Z[p * 11 + access.tile_value(grid, p)]
    for seat in range(2):
        for v in range(1, 11):
            k ^= _Z[64 * 11 + (seat * 11 + v) * 5 + access.hand_count(info, seat, v)]
    diff = access.score(info, 0) - access.score(info, 1)
    return k ^ (diff * np.int64(0x9E3779B97F4A7C15))


@njit(cache=True)
def negamax(grids, infos, moves, keys, depth, alpha, beta, stats, limit, scratch, table_keys, table_values,
            table_flags):
    """The value for the seat to move of the position grids[depth], infos[depth]
    (2 players, perfect information, to the game's end), by alpha-beta with a
    transposition table (every entry is a solve to the end, so it is valid at any depth).
    stats[0] counts nodes; past `limit` stats[1] is set and the value is meaningless."""
    stats[0] += 1
    info = infos[depth]
    grid = grids[depth]
    seat = access.current_seat(info)
    if access.is_over(info):
        return _terminal(info, seat, scratch)
    if stats[0] > limit:
        stats[1] = 1
        return 0.0
    key = _key(grid, info)
    slot = key & ((1 << TABLE_BITS) - 1)
    if table_keys[slot] == key:
        v = table_values[slot]
        flag = table_flags[slot]
        if flag == EXACT or (flag == LOWER and v >= beta) or (flag == UPPER and v <= alpha):
            return v
    alpha0 = alpha
    mv = moves[depth]
    ks = keys[depth]
    n = legal_placements(grid, info, mv)
    if n == 0:  # a pass: the other seat moves on the same board
        copy_state(grid, info, grids[depth + 1], infos[depth + 1])
        apply_action(grids[depth + 1], infos[depth + 1], rules.PASS_ACTION)
        return -negamax(grids, infos, moves, keys, depth + 1, -beta, -alpha, stats, limit, scratch, table_keys,
                        table_values, table_flags)
    for i in range(n):
        a = mv[i]
        ks[i] = points_if_placed(grid, PAD_OF_CELL[a // 10], a % 10 + 1)
    for i in range(1, n):  # the most minutes now first (insertion sort)
        a = mv[i]
        k = ks[i]
        j = i - 1
        while j >= 0 and ks[j] < k:
            mv[j + 1] = mv[j]
            ks[j + 1] = ks[j]
            j -= 1
        mv[j + 1] = a
        ks[j + 1] = k
    best = -1e18
    for i in range(n):
        copy_state(grid, info, grids[depth + 1], infos[depth + 1])
        apply_action(grids[depth + 1], infos[depth + 1], mv[i])
        v = -negamax(grids, infos, moves, keys, depth + 1, -beta, -alpha, stats, limit, scratch, table_keys,
                     table_values, table_flags)
        best = max(best, v)
        alpha = max(alpha, v)
        if alpha >= beta:
            break
    if stats[1] == 0:
        table_keys[slot] = key
        table_values[slot] = best
        table_flags[slot] = UPPER if best <= alpha0 else (LOWER if best >= beta else EXACT)
    return best


class Solver:
    """Scratch for `negamax` and the value of a move in a world."""

    def __init__(self) -> None:
        grid, info = GameState.new(NUM_PLAYERS, seed=0).arrays
        self.grids = np.zeros((MAX_DEPTH,) + grid.shape, dtype=grid.dtype)
        self.infos = np.zeros((MAX_DEPTH,) + info.shape, dtype=info.dtype)
        self.moves = np.zeros((MAX_DEPTH, MAX_MOVES), dtype=np.int64)
        self.keys = np.zeros((MAX_DEPTH, MAX_MOVES), dtype=np.int64)
        self.stats = np.zeros(2, dtype=np.int64)
        self.scratch = np.zeros(4)
        self.table_keys = np.zeros(1 << TABLE_BITS, dtype=np.int64)
        self.table_values = np.zeros(1 << TABLE_BITS, dtype=np.float64)
        self.table_flags = np.zeros(1 << TABLE_BITS, dtype=np.int8)

    def move_value(self, world: GameState, action: int, limit: int) -> tuple[float, float] | None:
        """(reward, lead) for the mover of `world` after `action` and perfect play by
        both seats to the end; None past `limit` nodes in all (self.stats counts them)."""
        grid, info = world.arrays
        copy_state(grid, info, self.grids[0], self.infos[0])
        apply_action(self.grids[0], self.infos[0], action)
        v = -negamax(self.grids, self.infos, self.moves, self.keys, 0, -1e18, 1e18, self.stats, limit, self.scratch,
                     self.table_keys, self.table_values, self.table_flags)
        if self.stats[1]:
            return None
        reward = round(v / BIG)
        return float(reward), float(v - reward * BIG)


# --- the worlds -----------------------------------------------------------------------------
@dataclass(frozen=True)
class World:
    state: GameState
    weight: int  # ways to deal this opponent hand from the unseen tiles


def worlds(state: GameState) -> list[World]:
    """Every world of the mover's view with the bag empty (module doc)."""
    seat = state.current_player
    opp = 1 - seat
    unseen = PlayerView(state, seat).unseen_counts()  # index v - 1
    k = int(state.hand_sizes[opp])
    cap, held = (int(x) for x in state.pass_facts[opp])
    grid, info = state.arrays
    scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
    out = []
    for hand in _multisets(unseen, k):
        if held > 0 and sum(hand[v - 1] for v in range(cap + 1, 11)) < held:
            continue
        hands = np.zeros((4, 11), dtype=np.int64)
        hands[opp, 1:] = hand
        world = GameState(np.empty_like(grid), np.empty_like(info))
        _, ok = deal_around_hands(grid, info, seat, hands, 1 << opp, np.uint64(1), world.arrays[0],
                                  world.arrays[1], scratch)
        assert ok
        weight = math.prod(math.comb(int(unseen[i]), int(hand[i])) for i in range(10))
        out.append(World(world, weight))
    return out


def _multisets(counts: np.ndarray, k: int):
    """Every vector h with 0 <= h <= counts and sum k."""
    ranges = [range(min(int(c), k) + 1) for c in counts]
    for h in itertools.product(*ranges):
        if sum(h) == k:
            yield np.array(h, dtype=np.int64)


# --- the measurement --------------------------------------------------------------------------
@dataclass
class Decision:
    game: int
    step: int
    tiles: int  # tiles in both hands
    legal: int
    worlds: int
    shipped: int
    exact: int
    cost: float  # reward units: exact's mean reward minus shipped's
    cost_minutes: float  # mean lead, exact's minus shipped's
    nodes: int
    cpu: float  # seconds of CPU for the whole solve
    solved: bool


def move_values(solver: Solver, state: GameState, limit: int) -> dict[int, tuple[float, float]] | None:
    """Per legal move of the mover, its (mean reward, mean lead) over the worlds; None past
    `limit` nodes in all."""
    ws = worlds(state)
    total = sum(w.weight for w in ws)
    solver.stats[:] = 0
    values = {}
    for action in state.legal_actions():
        reward = lead = 0.0
        for w in ws:
            got = solver.move_value(w.state, action, limit)
            if got is None:
                return None
            reward += w.weight * got[0]
            lead += w.weight * got[1]
        values[action] = (reward / total, lead / total)
    return values


def exact_move(values: dict[int, tuple[float, float]]) -> int:
    """The best mean reward, then the best mean lead, then the lowest id."""
    return max(values, key=lambda a: (values[a][0], values[a][1], -a))


def solve_decision(solver: Solver, state: GameState, shipped: int, limit: int) -> tuple:
    """(exact move, cost, cost in minutes, nodes, worlds, solved) of one decision."""
    values = move_values(solver, state, limit)
    nworlds = len(worlds(state))
    if values is None:
        return -1, 0.0, 0.0, int(solver.stats[0]), nworlds, False
    exact = exact_move(values)
    return (exact, values[exact][0] - values[shipped][0], values[exact][1] - values[shipped][1],
            int(solver.stats[0]), nworlds, True)


def measure(games: StoredGames, limit: int, max_tiles: int) -> list[Decision]:
    solver = Solver()
    out = []
    start = time.perf_counter()
    for g in range(len(games)):
        for step, (state, action) in enumerate(games.positions(g)):
            if state.bag_size > 0 or action >= rules.PASS_ACTION or len(state.legal_actions()) < 2:
                continue
            tiles = int(state.hand_sizes.sum())
            if tiles > max_tiles:
                out.append(Decision(g, step, tiles, len(state.legal_actions()), 0, action, -1, 0.0, 0.0, 0, 0.0,
                                    False))
                continue
            t0 = time.process_time()
            exact, cost, minutes, nodes, nworlds, solved = solve_decision(solver, state, action, limit)
            out.append(Decision(g, step, tiles, len(state.legal_actions()), nworlds, action, exact, cost, minutes,
                                nodes, time.process_time() - t0, solved))
        print(f"  game {g + 1}/{len(games)}: {len(out)} empty-bag decisions, {time.perf_counter() - start:.0f} s",
              flush=True)
    return out


def worse(data: dict[str, np.ndarray]) -> np.ndarray:
    """Where the shipped move is not one of the exact optimal moves: a lower mean reward,
    or the same and a lower mean lead."""
    tie = np.abs(data["cost"]) <= 1e-9
    return (data["cost"] > 1e-9) | (tie & (data["cost_minutes"] > 1e-9))


def report(data: dict[str, np.ndarray], games: int) -> str:
    solved = data["solved"].astype(bool)
    tiles = data["tiles"]
    lines = [(f"{len(tiles)} empty-bag decisions with a choice in {games} games ({len(tiles) / games:.1f} a game); "
             f"solved exactly: {solved.sum()}")]
    lines.append("| tiles in both hands | decisions | solved | shipped move not exact | mean cost (reward) "
                 "| mean cost (minutes) | worlds (mean) | CPU per solve, median / max |\n|---|---|---|---|---|---|---|---|")
    for t in sorted(set(tiles.tolist())):
        m = tiles == t
        s = m & solved
        if s.any():
            differ = worse(data)[s].mean()
            cpu = data["cpu"][s]
            lines.append(f"| {t} | {m.sum()} | {s.sum()} | {differ:.1%} | {data['cost'][s].mean():.4f} | "
                         f"{data['cost_minutes'][s].mean():.1f} | {data['worlds'][s].mean():.1f} | "
                         f"{np.median(cpu) * 1000:.1f} ms / {cpu.max() * 1000:.0f} ms |")
        else:
            lines.append(f"| {t} | {m.sum()} | 0 | | | | | |")
    if solved.any():
        cost = data["cost"][solved]
        differ = worse(data)[solved]
        per_seat_game = cost.sum() / (2 * games)
        lines.append(f"\nsolved decisions: the shipped move is not an exact optimal one at {differ.mean():.1%}, loses "
                     f"reward at {(cost > 1e-9).mean():.1%}; mean cost {cost.mean():.4f} reward per decision "
                     f"(score {cost.mean() / 2:.4f}); summed over the solved decisions of a seat's game "
                     f"{per_seat_game:.4f} reward = {per_seat_game / 2:.4f} score per game (gate: "
                     f"{GATE_SCORE_PER_GAME}); CPU per solve: median {np.median(data['cpu'][solved]) * 1000:.1f} ms, "
                     f"90% {np.percentile(data['cpu'][solved], 90) * 1000:.1f} ms")
        lines.append("\n| solving the decisions with at most T tiles in both hands | score per seat-game the shipped "
                     "moves lose [95%, bootstrap over games] | solver CPU per seat-game | solve at T tiles, median / "
                     "90% |\n|---|---|---|---|")
        rng = np.random.default_rng(0)
        for top in range(6, int(tiles[solved].max()) + 1):
            m = solved & (tiles <= top)
            per_game = np.bincount(data["game"][m], weights=data["cost"][m], minlength=games) / 4  # 2 seats, score
            boots = [per_game[rng.integers(0, games, games)].mean() for _ in range(2000)]
            lo, hi = np.percentile(boots, [2.5, 97.5])
            at = data["cpu"][solved & (tiles == top)]
            lines.append(f"| T = {top} | {per_game.mean():.4f} [{lo:.4f}, {hi:.4f}] | "
                         f"{data['cpu'][m].sum() / (2 * games):.3f} s | {np.median(at) * 1000:.0f} ms / "
                         f"{np.percentile(at, 90) * 1000:.0f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("games", type=Path, nargs="?")
    p.add_argument("--node-limit", type=int, default=20_000_000, help="per decision, all worlds and moves")
    p.add_argument("--max-tiles", type=int, default=12, help="skip decisions with more tiles in both hands")
    p.add_argument("--limit-games", type=int, default=None)
    p.add_argument("--out", type=Path, default=Path("results/levers/endgame.npz"))
    p.add_argument("--report", type=Path, help="only report a stored measurement")
    a = p.parse_args(argv)
    if a.report:
        with np.load(a.report) as stored:
            print(report({k: stored[k] for k in stored.files}, int(stored["games"])))
        return
    if a.games is None:
        p.error("give the stored games (research/lever_games.py) or --report")
    games = StoredGames.load(a.games)
    if a.limit_games:
        games = StoredGames(games.deal[:a.limit_games], games.start[:a.limit_games + 1], games.actions,
                            games.iterations)
    print(f"{len(games)} games of selfplay:iterations={games.iterations}; node limit {a.node_limit:,} per "
          f"decision; load average {os.getloadavg()[0]:.2f}", flush=True)
    start = time.perf_counter()
    decisions = measure(games, a.node_limit, a.max_tiles)
    data = {f: np.array([getattr(d, f) for d in decisions]) for f in Decision.__dataclass_fields__}
    data["games"] = np.array(len(games))
    buffer = io.BytesIO()
    np.savez(buffer, **data)
    atomic_write(a.out, lambda f: f.write(buffer.getvalue()))
    print(f"measured in {time.perf_counter() - start:.0f} s -> {a.out}\n")
    print(report(data, len(games)))


if __name__ == "__main__":
    main()
