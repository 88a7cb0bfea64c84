"""Batch API: N independent games in struct-of-arrays form, stepped by parallel kernels.

`BatchState` stacks the single-game arrays (``grid (N, 80, 10)``, ``info (N, INFO_LEN)``);
every kernel here runs a ``prange`` over games and calls the same per-game kernels as
`GameState`, so the two APIs cannot disagree. Game i's random stream is derived from
(seed, i) only, so results do not depend on the thread count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from . import kernels, layout, rules
from .deal import normalize_seed
from .kernels import rng_next


@njit(inline="always", cache=True)
def game_seed(seed, index):
    """An independent 64-bit stream seed for game `index` of a batch seeded `seed`."""
    _, z = rng_next(np.uint64(seed) ^ (np.uint64(index) * np.uint64(0x2545F4914F6CDD1D)))
    return z


# Each prange body calls one NRT-free kernel with the whole arrays and the game index:
# slicing (grid[i]) inside a parallel region with reference counting makes every thread
# update the same array's atomic refcount (see env/step_kernels.py).
@kernels.kernel
def _reset_game(grid, info, i, deal, seeds, num_players, team):
    kernels.shuffle_deal(seeds[i], deal)
    kernels.reset(grid[i], info[i], deal, num_players, team)


@njit(parallel=True, cache=True)
def batch_reset(grid, info, seeds, num_players, team):
    """Deal game i afresh from seeds[i] (the same deal as `random_deal(seeds[i])`)."""
    for i in prange(grid.shape[0]):
        deal = np.empty(rules.NUM_TILES, dtype=np.int64)
        _reset_game(grid, info, i, deal, seeds, num_players, team)


@njit(parallel=True, cache=True)
def batch_reset_where(grid, info, done, seeds, num_players, team):
    """Reset only the games where done[i] (auto-reset for vector envs)."""
    for i in prange(grid.shape[0]):
        if done[i]:
            deal = np.empty(rules.NUM_TILES, dtype=np.int64)
            _reset_game(grid, info, i, deal, seeds, num_players, team)


@kernels.kernel
def _legal_mask_game(grid, info, masks, i):
    kernels.legal_mask(grid[i], info[i], masks[i])


@njit(parallel=True, cache=True)
def batch_legal_mask(grid, info, masks):
    """masks[i] = the legal-action mask of game i (width NUM_ACTIONS or NUM_TEAM_ACTIONS)."""
    for i in prange(grid.shape[0]):
        _legal_mask_game(grid, info, masks, i)


@kernels.kernel
def _step_game(grid, info, actions, points, i):
    if kernels.is_legal(grid[i], info[i], actions[i]):
        points[i] = kernels.apply_action(grid[i], info[i], actions[i])
    else:
        points[i] = -1


@njit(parallel=True, cache=True)
def batch_step(grid, info, actions, points):
    """Apply actions[i] to game i; points[i] = its minutes, or -1 if it was illegal
    (an illegal action, or a finished game, leaves that game unchanged)."""
    for i in prange(grid.shape[0]):
        _step_game(grid, info, actions, points, i)


@kernels.kernel
def _playout_game(grid, info, seeds, placements, i):
    _, placements[i] = kernels.random_playout(grid[i], info[i], np.uint64(seeds[i]))


@njit(parallel=True, cache=True)
def batch_random_playout(grid, info, seeds, placements):
    """Finish every game with uniformly random legal actions."""
    for i in prange(grid.shape[0]):
        _playout_game(grid, info, seeds, placements, i)


@kernels.kernel
def _play_random_games(first, count, seed, num_players, grid, info, deal):
    placements = 0
    for g in range(first, first + count):
        s = game_seed(seed, g)
        kernels.shuffle_deal(s, deal)
        kernels.reset(grid, info, deal, num_players, np.int64(0))  # not a literal: one compiled reset
        _, k = kernels.random_playout(grid, info, s)
        placements += k
    return placements


@njit(cache=True)
def play_random_games_serial(num_games, seed, num_players):
    """Play `num_games` complete random games on one thread, reusing one scratch state.
    Returns the total number of placements."""
    grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
    info = np.zeros(layout.INFO_LEN, dtype=np.int64)
    deal = np.empty(rules.NUM_TILES, dtype=np.int64)
    return _play_random_games(0, num_games, seed, num_players, grid, info, deal)


@njit(parallel=True, cache=True)
def play_random_games_parallel(num_games, seed, num_players, num_chunks):
    """The same games as the serial kernel, split into chunks over all threads."""
    totals = np.zeros(num_chunks, dtype=np.int64)
    per = (num_games + num_chunks - 1) // num_chunks
    for c in prange(num_chunks):
        first = c * per
        count = min(per, num_games - first)
        if count > 0:
            grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
            info = np.zeros(layout.INFO_LEN, dtype=np.int64)
            deal = np.empty(rules.NUM_TILES, dtype=np.int64)
            totals[c] = _play_random_games(first, count, seed, num_players, grid, info, deal)
    return totals.sum()


@dataclass
class BatchState:
    """N games as stacked arrays. Build with `BatchState.new`."""

    grid: np.ndarray  # int16 (N, GRID_CELLS, GRID_CHANNELS)
    info: np.ndarray  # int64 (N, INFO_LEN)
    num_players: int
    team: bool

    @classmethod
    def new(cls, num_games: int, num_players: int = 2, seed: int | None = 0, team: bool = False) -> "BatchState":
        rules.check_game_options(num_players, team)
        if num_games < 1:
            raise ValueError(f"num_games must be >= 1, got {num_games}")
        batch = cls(np.zeros((num_games, layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16),
                    np.zeros((num_games, layout.INFO_LEN), dtype=np.int64), int(num_players), bool(team))
        batch.reset(seeds_for(seed, num_games))
        return batch

    def __len__(self) -> int:
        return self.grid.shape[0]

    @property
    def num_actions(self) -> int:
        return rules.NUM_TEAM_ACTIONS if self.team else rules.NUM_ACTIONS

    def reset(self, seeds: np.ndarray) -> None:
        batch_reset(self.grid, self.info, np.asarray(seeds, dtype=np.int64), self.num_players, int(self.team))

    def legal_mask(self, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.zeros((len(self), self.num_actions), dtype=np.bool_)
        batch_legal_mask(self.grid, self.info, out)
        return out

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Apply one action per game; returns the minutes (-1 where illegal, unchanged)."""
        points = np.zeros(len(self), dtype=np.int64)
        batch_step(self.grid, self.info, np.asarray(actions, dtype=np.int64), points)
        return points

    def random_playout(self, seed: int = 0) -> np.ndarray:
        placements = np.zeros(len(self), dtype=np.int64)
        batch_random_playout(self.grid, self.info, seeds_for(seed, len(self)), placements)
        return placements

    @property
    def current_player(self) -> np.ndarray:
        return self.info[:, layout.CURRENT].copy()

    @property
    def is_over(self) -> np.ndarray:
        return self.info[:, layout.OVER].astype(np.bool_)

    @property
    def scores(self) -> np.ndarray:
        return self.info[:, layout.SCORE:layout.SCORE + self.num_players].copy()

    def game(self, i: int):
        """Game i as an independent `GameState` copy."""
        from .game import GameState

        return GameState(self.grid[i].copy(), self.info[i].copy())


def seeds_for(seed: int | None, count: int) -> np.ndarray:
    """`count` per-game seeds derived from one seed (int64, reproducible)."""
    ss = np.random.SeedSequence(normalize_seed(seed))
    return (ss.generate_state(count, np.uint64) >> np.uint64(1)).astype(np.int64)
