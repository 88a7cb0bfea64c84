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

from . import kernel_cache, kernels, layout, rules, validate
from .deal import normalize_seed, seed_array
from .kernels import rng_next

kernel_cache.register(__name__, *kernel_cache.ENGINE)


@njit(inline="always", cache=True)
def game_seed(seed, index):
    """An independent 64-bit stream seed for game `index` of a batch seeded `seed`."""
    _, z = rng_next(np.uint64(seed) ^ (np.uint64(index) * np.uint64(0x2545F4914F6CDD1D)))
    return z


# Each prange body calls one NRT-free kernel with the whole arrays and the game index:
# slicing (grid[i]) inside a parallel region with reference counting makes every thread
# update the same array's atomic refcount (see env/step_kernels.py). The index goes in as
# np.int64(i), else numba compiles each body kernel for an int64 and a uint64 index.
@kernels.kernel
def _reset_game(grid, info, i, deal, seeds, num_players, team):
    kernels.shuffle_deal(seeds[i], deal)
    kernels.reset(grid[i], info[i], deal, num_players, team)


@njit(parallel=True, cache=True)
def batch_reset(grid, info, seeds, num_players, team):
    """Deal game i afresh from seeds[i] (the same deal as `random_deal(seeds[i])`)."""
    for i in prange(grid.shape[0]):
        deal = np.empty(rules.NUM_TILES, dtype=np.int64)
        _reset_game(grid, info, np.int64(i), deal, seeds, num_players, team)


@kernels.kernel
def _legal_mask_game(grid, info, masks, i):
    kernels.legal_mask(grid[i], info[i], masks[i])


@njit(parallel=True, cache=True)
def batch_legal_mask(grid, info, masks):
    """masks[i] = the legal-action mask of game i (width NUM_ACTIONS or NUM_TEAM_ACTIONS)."""
    for i in prange(grid.shape[0]):
        _legal_mask_game(grid, info, masks, np.int64(i))


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
        _step_game(grid, info, actions, points, np.int64(i))


@kernels.kernel
def _playout_game(grid, info, seeds, placements, i):
    _, placements[i] = kernels.random_playout(grid[i], info[i], np.uint64(seeds[i]))


@njit(parallel=True, cache=True)
def batch_random_playout(grid, info, seeds, placements):
    """Finish every game with uniformly random legal actions."""
    for i in prange(grid.shape[0]):
        _playout_game(grid, info, seeds, placements, np.int64(i))


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
    return _play_random_games(np.int64(0), num_games, seed, num_players, grid, info, deal)  # typed: one signature


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
    """N games as stacked arrays. Build with `BatchState.new`.

    Every method checks its input before anything changes and raises ValueError naming
    the problem (type, dtype, shape, range). Arrays are converted to the one type each
    kernel is compiled for (C-contiguous int64), so no input triggers a recompile.
    Constructing one from arrays checks them with `check_states`.
    """

    grid: np.ndarray  # int16 (N, GRID_CELLS, GRID_CHANNELS)
    info: np.ndarray  # int64 (N, INFO_LEN)
    num_players: int
    team: bool

    def __post_init__(self):
        rules.check_game_options(self.num_players, self.team)
        self.num_players = int(self.num_players)
        self.team = validate.as_flag(self.team, "team")
        check_states(self.grid, self.info, self.num_players, self.team)

    @classmethod
    def new(cls, num_games: int, num_players: int = 2, seed: int | None = 0, team: bool = False) -> "BatchState":
        rules.check_game_options(num_players, team)
        num_games = validate.as_int(num_games, "num_games", 1)
        grid = np.zeros((num_games, layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        info = np.zeros((num_games, layout.INFO_LEN), dtype=np.int64)
        batch_reset(grid, info, seeds_for(seed, num_games), int(num_players), int(bool(team)))
        return cls._trusted(grid, info, int(num_players), bool(team))

    @classmethod
    def _trusted(cls, grid, info, num_players: int, team: bool) -> "BatchState":
        """A batch over arrays the kernels just set up (skips `check_states`)."""
        batch = object.__new__(cls)
        batch.grid, batch.info, batch.num_players, batch.team = grid, info, num_players, team
        return batch

    def __len__(self) -> int:
        return self.grid.shape[0]

    @property
    def num_actions(self) -> int:
        return rules.num_actions(self.team)

    def reset(self, seeds) -> None:
        """Deal game i afresh from seeds[i]: the deal of `random_deal(seeds[i])`. Any int
        is a seed (reduced modulo 2**63, as `random_deal` does)."""
        batch_reset(self.grid, self.info, seed_array(seeds, "seeds", len(self)), self.num_players,
                    int(self.team))

    def legal_mask(self, out: np.ndarray | None = None) -> np.ndarray:
        """The legal-action masks, bool (N, num_actions); written into `out` if given (a
        C-contiguous, writeable bool array of exactly that shape)."""
        if out is None:
            out = np.zeros((len(self), self.num_actions), dtype=np.bool_)
        else:
            validate.check_out_array(out, "out", (len(self), self.num_actions), np.bool_)
            if np.may_share_memory(out, self.grid) or np.may_share_memory(out, self.info):
                raise ValueError("out must not share memory with the batch's state arrays")
        batch_legal_mask(self.grid, self.info, out)
        return out

    def step(self, actions) -> np.ndarray:
        """Apply one action per game; returns the minutes (-1 where illegal, unchanged).
        `actions` holds len(self) ints of the action space (0..num_actions-1); anything
        else raises ValueError and changes no game."""
        acts = validate.as_int_array(actions, "actions", (len(self),), 0, self.num_actions - 1)
        points = np.zeros(len(self), dtype=np.int64)
        batch_step(self.grid, self.info, acts, points)
        return points

    def random_playout(self, seed: int = 0) -> np.ndarray:
        """Finish every game with random legal actions; returns the placements per game."""
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
        """Game i (0..N-1) as an independent `GameState` copy."""
        from .game import GameState

        i = validate.as_int(i, "game index", 0, len(self) - 1)
        return GameState(self.grid[i].copy(), self.info[i].copy())


def seeds_for(seed: int | None, count: int) -> np.ndarray:
    """`count` per-game seeds derived from one seed (int64, reproducible)."""
    ss = np.random.SeedSequence(normalize_seed(seed))
    return (ss.generate_state(count, np.uint64) >> np.uint64(1)).astype(np.int64)


# --- checking state arrays that come from outside (constructor, vector-env set_state) ------
_NUM_PLAYERS_SLOTS = rules.MAX_PLAYERS
_HAND_VALUES = rules.MAX_VALUE + 1  # HAND holds 11 counts per seat (index 0 unused)
_BOARD_PADS = layout.PAD_OF_CELL
_BORDER_PADS = np.flatnonzero(layout.CELL_OF_PAD < 0)
_BD_LIMITS = ((layout.BD_SUM7, 1), (layout.BD_SUM24, 1), (layout.BD_IN7, 1),
              (layout.BD_RUN_UP, max(rules.RUN_MINUTES)), (layout.BD_RUN_DOWN, max(rules.RUN_MINUTES)),
              (layout.BD_SET, max(rules.SET_MINUTES)))


def check_states(grid, info, num_players: int, team: bool) -> None:
    """Raise ValueError unless `grid`, `info` hold N >= 1 valid game states of this
    variant, as the very array types the kernels are compiled for and write into.

    The kernels index memory with the state's own numbers (seat, bag position, line
    lengths, cell capacities, tile values) without bounds checks, so a corrupt state
    would make them read and write outside the arrays. Checked: every scalar the kernels
    or the observation read is in its range; tile counts follow the rules (at most 4 of a
    value, hand and bag sizes, no line above 24); and every board-derived field (tiles,
    frontier, Time Outs, open-cell capacities and line records, hand masks and sizes, the
    end flag) equals a fresh rebuild of the position by `kernels.setup_position`. Not
    checked: that play could reach the position (scores, turn and history are free).
    """
    n = int(num_players)
    team = bool(team)
    num_games = _check_state_types(grid, info)
    _check_scalars(info, n, team)
    hands = info[:, layout.HAND:layout.HAND + _NUM_PLAYERS_SLOTS * _HAND_VALUES].reshape(
        num_games, _NUM_PLAYERS_SLOTS, _HAND_VALUES)
    _expect(grid[:, :, layout.VAL], 0, rules.MAX_VALUE, "grid tile values")
    _expect(grid[:, _BORDER_PADS, layout.VAL], 0, 0, "tile values on the border cells off the board")
    _expect(grid[:, :, layout.CAP], 0, layout.MAX_CAP, "cell capacities")
    runs = grid[:, :, layout.RUN_BEFORE:].astype(np.int64)
    _expect(runs >> layout.LEN_SHIFT, 0, rules.BOARD_SIZE, "line-record lengths")
    _expect(runs & layout.SUM_MASK, 0, rules.LINE_CAP, "line-record sums")
    boards = grid[:, _BOARD_PADS, layout.VAL].astype(np.int64)
    rules.check_line_sums(boards.reshape(num_games, rules.BOARD_SIZE, rules.BOARD_SIZE))
    in_bag = np.arange(rules.NUM_TILES) >= info[:, layout.BAG_POS, None]
    deal = info[:, layout.DEAL:layout.DEAL + rules.NUM_TILES]
    _expect(np.where(in_bag, deal, 1), 1, rules.MAX_VALUE, "bag tile values")
    values = np.arange(rules.MAX_VALUE + 1)
    counts = ((boards[:, :, None] == values).sum(1) + hands.sum(1)
              + ((deal[:, :, None] == values) & in_bag[:, :, None]).sum(1))
    counts[:, 0] = 0
    _expect(counts, 0, rules.COPIES_PER_VALUE, "tiles of a value in play (board, hands, bag)")
    _expect(counts.sum(1), 0, rules.NUM_TILES - rules.NUM_REMOVED, "tiles in play")
    _expect(hands[:, :, 1:].sum(2), 0, rules.hand_size(n), "tiles in a hand")
    shown = info[:, layout.SHOWN:layout.SHOWN + _NUM_PLAYERS_SLOTS]
    held = np.take_along_axis(hands, shown[:, :, None], axis=2)[:, :, 0]
    if ((shown > 0) & (held == 0)).any():
        raise ValueError("a seat shows a tile value it does not hold")
    _check_pass_facts(info, hands)
    _compare_with_rebuild(grid, info, hands, n, team)


def _check_pass_facts(info, hands) -> None:
    """Each seat holds at least PASS_HELD tiles above its PASS_CAP; nothing known
    (PASS_HELD 0) is written PASS_CAP 0."""
    caps = info[:, layout.PASS_CAP:layout.PASS_CAP + _NUM_PLAYERS_SLOTS]
    held = info[:, layout.PASS_HELD:layout.PASS_HELD + _NUM_PLAYERS_SLOTS]
    above = np.arange(_HAND_VALUES) > caps[:, :, None]
    _expect(held - (hands * above).sum(2), None, 0,
            "tiles held since a pass minus the seat's tiles above its pass cap")
    _expect(np.where(held == 0, caps, 0), 0, 0, "the pass cap of a seat with no tile held since a pass")


def _check_state_types(grid, info) -> int:
    """The number of games, once grid and info are the kernels' exact array types."""
    if not (isinstance(grid, np.ndarray) and grid.ndim == 3 and grid.shape[0] >= 1):
        raise ValueError(f"grid must be an int16 array (N >= 1, {layout.GRID_CELLS}, {layout.GRID_CHANNELS}), "
                         f"got {type(grid).__name__} of shape {np.shape(grid)}")
    num_games = grid.shape[0]
    validate.check_out_array(grid, "grid", (num_games, layout.GRID_CELLS, layout.GRID_CHANNELS), np.int16)
    validate.check_out_array(info, "info", (num_games, layout.INFO_LEN), np.int64)
    if np.may_share_memory(grid, info):
        raise ValueError("grid and info must not share memory")
    return num_games


def _check_scalars(info, n: int, team: bool) -> None:
    def column(offset, width=1):
        return info[:, offset:offset + width]

    _expect(column(layout.NUM_PLAYERS), n, n, "info NUM_PLAYERS (the batch's player count)")
    _expect(column(layout.TEAM), team, team, "info TEAM (the batch's variant)")
    _expect(column(layout.CURRENT), 0, n - 1, "the seat to move")
    _expect(column(layout.OVER), 0, 1, "the game-over flag")
    _expect(column(layout.SHOWN_THIS_TURN), 0, team, "the shown-this-turn flag")
    _expect(column(layout.TURN), 0, None, "the turn count")
    _expect(column(layout.BAG_POS), rules.NUM_TILES - rules.setup_bag_size(n), rules.NUM_TILES,
            "the bag position")
    _expect(column(layout.LAST_POINTS), 0, None, "the last action's minutes")
    _expect(column(layout.LAST_ACTION), -1, rules.num_actions(team) - 1,
            "the last action")
    _expect(column(layout.SCORE, n), 0, None, "scores")
    _expect(column(layout.SHOWN, n), 0, rules.MAX_VALUE * team, "shown tiles")
    _expect(column(layout.PASS_CAP, n), 0, layout.MAX_CAP, "pass caps")
    _expect(column(layout.PASS_HELD, n), 0, rules.hand_size(n), "tiles held since a pass")
    for offset, what in ((layout.SCORE, "scores"), (layout.SHOWN, "shown tiles"),
                         (layout.PASS_CAP, "pass caps"), (layout.PASS_HELD, "tiles held since a pass")):
        _expect(column(offset + n, _NUM_PLAYERS_SLOTS - n), 0, 0, f"{what} of seats beyond the players")
    hands = column(layout.HAND, _NUM_PLAYERS_SLOTS * _HAND_VALUES).reshape(-1, _NUM_PLAYERS_SLOTS, _HAND_VALUES)
    _expect(hands[:, :, 0], 0, 0, "hand counts of value 0")
    _expect(hands[:, :n], 0, rules.COPIES_PER_VALUE, "hand counts")
    _expect(hands[:, n:], 0, 0, "hand counts of seats beyond the players")
    _expect(column(layout.DEAL, rules.NUM_TILES), 0, rules.MAX_VALUE, "deal values")
    for a in range(len(rules.AXES)):
        for field, top in _BD_LIMITS:
            _expect(column(layout.BREAKDOWN + a * layout.BD_PER_AXIS + field), 0, top, "the last breakdown")
    _expect(column(layout.BD_PAIRS), 0, len(rules.AXES) ** 2, "the last breakdown's 24/7 pairs")
    _expect(column(layout.BD_DOUBLE), 0, 1, "the last breakdown's Double Time flag")


def _expect(values: np.ndarray, low, high, what: str) -> None:
    """Raise naming the first game whose `values` fall outside [low, high]."""
    bad = np.zeros(values.shape, dtype=np.bool_)
    if low is not None:
        bad |= values < low
    if high is not None:
        bad |= values > high
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), values.shape)
        got = values[where]
        raise ValueError(f"game {int(where[0])}: {what} = {int(got)} is outside "
                         f"{low if low is not None else ''}..{high if high is not None else ''}")


def _compare_with_rebuild(grid, info, hands, n: int, team: int) -> None:
    """Rebuild each position from its tiles, hands, bag and seat to move; the fields
    derived from them must match exactly."""
    derived = [layout.OCCUPIED, layout.FRONTIER, layout.TIMEOUT, layout.CAP_COUNTS, layout.OVER,
               *range(layout.HAND_MASK, layout.HAND_MASK + _NUM_PLAYERS_SLOTS),
               *range(layout.HAND_SIZE, layout.HAND_SIZE + _NUM_PLAYERS_SLOTS)]
    fresh_grid = np.zeros(grid.shape[1:], dtype=np.int16)
    fresh_info = np.zeros(info.shape[1:], dtype=np.int64)
    for g in range(grid.shape[0]):
        pads = np.flatnonzero(grid[g, :, layout.VAL])
        bag = info[g, layout.DEAL + info[g, layout.BAG_POS]:layout.DEAL + rules.NUM_TILES].copy()
        kernels.setup_position(fresh_grid, fresh_info, pads.astype(np.int64), grid[g, pads, layout.VAL].astype(np.int64),
                               hands[g].copy(), bag, n, team, int(info[g, layout.CURRENT]))
        # every cell without a tile (border cells too) is a function of the board; the
        # records left in a tile's cell from before it was placed depend on the order of
        # play and are never read again (their ranges are checked in check_states)
        empty = fresh_grid[:, layout.VAL] == 0
        same = (np.array_equal(fresh_info[derived], info[g, derived])
                and np.array_equal(fresh_grid[:, layout.VAL], grid[g, :, layout.VAL])
                and np.array_equal(fresh_grid[empty], grid[g, empty]))
        if not same:
            raise ValueError(f"game {g}: the board-derived state (frontier, Time Outs, capacities, "
                             f"line records, hand masks, end flag) does not match its tiles and hands")
