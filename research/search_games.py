"""Stored 2-player games of the shipped network's search, as the self-play loop plays them.

RESULTS.md: "2026-12-06, 06:41-08:10 UTC: F1"
Verdict: a tool (the games F1's data curve is fitted on; research/f1_data_curve.py reads them).

    nice -n 5 python research/search_games.py --games 20000 --workers 2      # resumable; progress bar
    python research/search_games.py --check                                  # replay every stored game

The self-play loop's stored chunks (`training.teacher.TeacherGames`) keep each position's
float16 observation and 72 features, not the raw state an encoding that reads the board cell by
cell needs. This script plays games the way a self-play generation does
(`training.selfplay.SelfPlayTrainer._games` -> `training.teacher.play_chunk`): one search agent
per seat, built by `GuidedSearch.build` (agents.search.mcts) from the network
(`--net`, default the shipped `models/selfplay_2p.pt`, generation-12-like) with the loop's
`selfplay.search` settings (`iterations=1000,prior=3`, configs/selfplay_2p.yaml), the seats'
seeds and each game's deal seed drawn from one `numpy.random.default_rng(chunk seed)` in
play_chunk's order, and `act_with_visits` choosing each move. Chunk i of `--games` has seed
``seed * 1_000_003 + i`` (as `teacher_games` numbers them) and GAMES_PER_CHUNK games.

Per game it keeps the most compact raw record: the deal seed and the 40 tiles it deals (any
position is rebuilt by `GameState.from_deal(deal)` and replaying the actions), the action list,
and the final `info` array (the loop's `final_info`: scores, the end); per decision, cheaply, the
root's value of the chosen move for the mover (its mean reward over the root's visits) and the
number of legal actions. Each chunk is an .npz written whole (a temporary file, then
`os.replace`) under `--out` (default ``results/search_games/``, git-ignored); a rerun with the same
arguments plays only the chunks that are missing, whatever `--workers` is. `--check` replays
every stored game through the engine and asserts it reproduces its stored final state and scores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from engine import GameState, layout  # noqa: E402
from engine.deal import random_deal  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NUM_PLAYERS = 2
GAMES_PER_CHUNK = 16  # training.teacher.GAMES_PER_CHUNK
SEARCH = "iterations=1000,prior=3"  # configs/selfplay_2p.yaml, selfplay.search


@dataclass
class SearchGames:
    """Games of one or more chunks: actions flat, game g's are actions[start[g]:start[g + 1]]."""

    seed: np.ndarray  # uint64 (G,): the seed `GameState.new` dealt the game from
    deal: np.ndarray  # int8 (G, 40): the deal it made (tiles in draw order)
    start: np.ndarray  # int64 (G + 1,): offsets into actions
    actions: np.ndarray  # int16 (M,): every decision's action id, in order
    root_q: np.ndarray  # float32 (M,): the root's mean reward of the chosen action for the mover
    legal: np.ndarray  # int16 (M,): legal actions at the decision
    final_info: np.ndarray  # int64 (G, INFO_LEN): the final state

    def __len__(self) -> int:
        return len(self.seed)

    def game_actions(self, g: int) -> np.ndarray:
        return self.actions[self.start[g]:self.start[g + 1]]

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **{k: getattr(self, k) for k in self.__dataclass_fields__})
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @staticmethod
    def load(path: Path) -> "SearchGames":
        with np.load(path, allow_pickle=False) as data:
            return SearchGames(**{k: data[k] for k in SearchGames.__dataclass_fields__})

    @staticmethod
    def concatenate(parts: list["SearchGames"]) -> "SearchGames":
        starts, offset = [np.zeros(1, dtype=np.int64)], 0
        for p in parts:
            starts.append(p.start[1:] + offset)
            offset += int(p.start[-1])
        return SearchGames(np.concatenate([p.seed for p in parts]), np.concatenate([p.deal for p in parts]),
                           np.concatenate(starts), np.concatenate([p.actions for p in parts]),
                           np.concatenate([p.root_q for p in parts]), np.concatenate([p.legal for p in parts]),
                           np.concatenate([p.final_info for p in parts]))


def replay(deal: np.ndarray, actions: np.ndarray, snapshots: list | None = None) -> GameState:
    """The game dealt by `deal` replayed through the engine (every action checked legal); with
    `snapshots`, a copy of each position before its move is appended."""
    state = GameState.from_deal(deal, NUM_PLAYERS)
    for a in actions:
        if snapshots is not None:
            snapshots.append(state.clone())
        state.step(int(a))
    return state


def play_chunk(net: str, search: str, seed: int, games: int) -> SearchGames:
    """`games` games of the search in both seats, as `training.teacher.play_chunk` plays a
    generation's chunk (the same order of draws from `default_rng(seed)`)."""
    from agents.search.mcts import GuidedSearch
    from agents.settings import SearchSettings
    from engine.view import PlayerView

    teacher = GuidedSearch(net, SearchSettings.parse(search))
    rng = np.random.default_rng(seed)
    seats = [teacher.build(seed=int(rng.integers(2**62))) for _ in range(NUM_PLAYERS)]
    seeds, deals, starts, actions, root_q, legal, finals = [], [], [0], [], [], [], []
    for _ in range(games):
        deal_seed = int(rng.integers(2**62))
        state = GameState.new(NUM_PLAYERS, seed=deal_seed)  # = GameState.from_deal(random_deal(deal_seed))
        deal = random_deal(deal_seed)
        for s, agent in enumerate(seats):
            agent.reset(s, NUM_PLAYERS, False)
        views = [PlayerView(state, s) for s in range(NUM_PLAYERS)]
        while not state.is_over:
            seat = state.current_player
            legal.append(len(views[seat].legal_actions()))
            action, visits, sums = seats[seat].act_with_visits(views[seat])
            actions.append(action)
            root_q.append(sums[action] / max(visits[action], 1))
            state.step(action)
        seeds.append(deal_seed)
        deals.append(deal)
        starts.append(len(actions))
        finals.append(state.arrays[1].copy())
    return SearchGames(np.array(seeds, dtype=np.uint64), np.array(deals, dtype=np.int8),
                       np.array(starts, dtype=np.int64), np.array(actions, dtype=np.int16),
                       np.array(root_q, dtype=np.float32), np.array(legal, dtype=np.int16),
                       np.array(finals, dtype=np.int64).reshape(-1, layout.INFO_LEN))


def _play(args) -> tuple[int, SearchGames, float]:
    i, path, net, search, seed, games = args
    start = time.perf_counter()
    part = play_chunk(net, search, seed, games)
    part.save(Path(path))
    return i, part, time.perf_counter() - start


def _start_worker() -> None:
    import torch

    from evaluation.executor import exit_with_parent

    exit_with_parent()
    torch.set_num_threads(1)


def chunk_plan(games: int, seed: int, out: Path) -> list[tuple[int, Path, int, int]]:
    """(index, file, chunk seed, games) of every chunk."""
    plan = []
    for i, start in enumerate(range(0, games, GAMES_PER_CHUNK)):
        chunk_seed = seed * 1_000_003 + i
        plan.append((i, out / f"chunk_{i:05d}_seed{chunk_seed}.npz", chunk_seed, min(GAMES_PER_CHUNK, games - start)))
    return plan


def load_games(out: Path, limit: int | None = None) -> SearchGames:
    """Every stored chunk under `out` in chunk order (at most `limit` chunks)."""
    files = sorted(out.glob("chunk_*.npz"))[:limit]
    if not files:
        raise SystemExit(f"no stored games under {out}")
    return SearchGames.concatenate([SearchGames.load(f) for f in files])


def check(games: SearchGames) -> None:
    """Replay every game; its final state must equal the stored one."""
    from tqdm import tqdm

    for g in tqdm(range(len(games)), desc="replaying", mininterval=5, file=sys.stdout):
        assert np.array_equal(random_deal(int(games.seed[g])), games.deal[g])
        end = replay(games.deal[g], games.game_actions(g))
        assert end.is_over, f"game {g} does not end"
        assert np.array_equal(end.arrays[1], games.final_info[g]), f"game {g}: replay differs from the stored end"
    print(f"{len(games)} games replayed: every final state (scores included) reproduced")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--net", default=str(ROOT / "models" / "selfplay_2p.pt"))
    p.add_argument("--search", default=SEARCH)
    p.add_argument("--seed", type=int, default=12, help="chunk seeds seed * 1_000_003 + i")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "search_games")
    p.add_argument("--check", action="store_true", help="only replay the stored games")
    a = p.parse_args(argv)
    if a.check:
        check(load_games(a.out))
        return
    if a.games < 1 or a.workers < 1:
        p.error("--games and --workers must be >= 1")
    a.out.mkdir(parents=True, exist_ok=True)
    from benchmarks.machine import describe
    from tqdm import tqdm

    todo = [c for c in chunk_plan(a.games, a.seed, a.out) if not c[1].is_file()]
    done_games = a.games - sum(c[3] for c in todo)
    print(f"{describe()}, load average {os.getloadavg()[0]:.2f}\n{a.net} searching {a.search} in both seats; "
          f"{a.games} games in chunks of {GAMES_PER_CHUNK} (seed {a.seed}) -> {a.out}; {done_games} stored, "
          f"{len(todo)} chunks to play on {a.workers} workers", flush=True)
    jobs = [(i, str(path), a.net, a.search, s, n) for i, path, s, n in todo]
    start, played, moves = time.perf_counter(), 0, 0
    bar = tqdm(total=a.games, initial=done_games, desc="games", unit="game", mininterval=10, file=sys.stdout)
    with ProcessPoolExecutor(a.workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_start_worker) as pool:
        for future in as_completed([pool.submit(_play, j) for j in jobs]):
            i, part, seconds = future.result()
            played += len(part)
            moves += len(part.actions)
            bar.update(len(part))
            elapsed = time.perf_counter() - start
            bar.set_postfix_str(f"chunk {i} {seconds:.0f} s; {played / elapsed:.2f} games/s, "
                                f"{moves / max(played, 1):.1f} moves/game", refresh=False)
    bar.close()
    print(f"done: {played} games played in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
