"""`GameState`: one game of 24/7 as a Python object over the numba kernels.

    >>> from engine import GameState
    >>> g = GameState.new(2, seed=0)
    >>> while not g.is_over:
    ...     points = g.step(g.legal_actions()[0])
    >>> g.rewards()

The state is two small numpy arrays (see ``layout.py``); ``clone()`` copies them.
Every method validates its input before touching the state, so a bad action raises
``ValueError`` and changes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import kernels, layout, rules
from .deal import random_deal


class Combination(NamedTuple):
    """One scoring entry of a move. The minutes of all entries add up to the move's points."""

    kind: str  # "sum7", "sum24", "24in7", "run3".."run6", "set3", "set4", "24/7", "double_time"
    axis: str | None  # one of rules.AXES, or None for "24/7" and "double_time"
    minutes: int


def breakdown_from_info(info: np.ndarray) -> tuple[Combination, ...]:
    """Decode the breakdown record the kernels leave in `info` after a placement."""
    out = []
    for a, axis in enumerate(rules.AXES):
        bd = info[layout.BREAKDOWN + a * layout.BD_PER_AXIS:][: layout.BD_PER_AXIS]
        if bd[layout.BD_SUM7]:
            out.append(Combination("sum7", axis, rules.SUM7_MINUTES))
        if bd[layout.BD_SUM24]:
            out.append(Combination("sum24", axis, rules.SUM24_MINUTES))
        if bd[layout.BD_IN7]:
            out.append(Combination("24in7", axis, rules.SEVEN_TILES_BONUS))
        for k in (bd[layout.BD_RUN_UP], bd[layout.BD_RUN_DOWN]):
            if k:
                out.append(Combination(f"run{k}", axis, rules.RUN_MINUTES[int(k)]))
        if bd[layout.BD_SET]:
            k = int(bd[layout.BD_SET])
            out.append(Combination(f"set{k}", axis, rules.SET_MINUTES[k]))
    pairs = int(info[layout.BD_PAIRS])
    if pairs:
        out.append(Combination("24/7", None, rules.BONUS_24_7 * pairs))
    if info[layout.BD_DOUBLE]:
        out.append(Combination("double_time", None, sum(c.minutes for c in out)))
    return tuple(out)


class GameState:
    """A mutable game of 24/7. Build it with `new` or `from_deal`."""

    __slots__ = ("_grid", "_info")

    def __init__(self, grid: np.ndarray, info: np.ndarray):
        self._grid = grid
        self._info = info

    # --- construction -----------------------------------------------------------------
    @classmethod
    def new(cls, num_players: int = 2, seed: int | None = None, team: bool = False) -> "GameState":
        """A game dealt at random from `seed` (None: fresh entropy)."""
        rules.check_game_options(num_players, team)
        return cls.from_deal(random_deal(seed), num_players, team)

    @classmethod
    def from_deal(cls, deal, num_players: int = 2, team: bool = False) -> "GameState":
        """A game from an explicit deal: 40 tile values in draw order (docs/rules.md)."""
        rules.check_game_options(num_players, team)
        deal = rules.check_deal(deal)
        grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        info = np.zeros(layout.INFO_LEN, dtype=np.int64)
        kernels.reset(grid, info, deal, int(num_players), int(bool(team)))
        return cls(grid, info)

    @classmethod
    def from_position(cls, board: dict, hands, num_players: int = 2, team: bool = False,
                      current_player: int = 0, bag=(), *, scores=None) -> "GameState":
        """Any position, for tests and analysis: `board` maps (row, col) to a value,
        `hands[seat]` lists the seat's tile values, `bag` is in draw order, `scores` the
        minutes so far (default zeros). Everything is checked against the rules
        (`rules.check_position`: ints in range, hand and bag sizes, at most four tiles of
        a value, no line above 24); the tiles need not be connected."""
        cells, values, counts, bag, current, scores = rules.check_position(
            board, hands, num_players, team, current_player, bag, scores)
        grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        info = np.zeros(layout.INFO_LEN, dtype=np.int64)
        kernels.setup_position(grid, info, layout.PAD_OF_CELL[cells], values, counts, bag,
                               int(num_players), int(bool(team)), current)
        if scores is not None:
            info[layout.SCORE:layout.SCORE + int(num_players)] = scores
        return cls(grid, info)

    def clone(self) -> "GameState":
        return GameState(self._grid.copy(), self._info.copy())

    # --- moves ------------------------------------------------------------------------
    def legal_actions(self) -> list[int]:
        """Sorted legal placement ids; [490] (pass) when none; [] once the game is over.
        Team-variant show actions are listed by `show_actions()`."""
        if self.is_over:
            return []
        out = np.empty(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
        n = kernels.legal_placements(self._grid, self._info, out)
        return out[:n].tolist() if n else [rules.PASS_ACTION]

    def show_actions(self) -> list[int]:
        """Team variant: the show actions open to the mover now (else [])."""
        return self.legal_action_mask()[rules.SHOW_BASE:].nonzero()[0].__add__(rules.SHOW_BASE).tolist()

    def legal_action_mask(self) -> np.ndarray:
        """Bool mask over all rules.NUM_TEAM_ACTIONS ids (placements, pass, shows)."""
        mask = np.zeros(rules.NUM_TEAM_ACTIONS, dtype=np.bool_)
        kernels.legal_mask(self._grid, self._info, mask)
        return mask

    def is_legal(self, action) -> bool:
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            return False
        if not 0 <= action < rules.NUM_TEAM_ACTIONS:
            return False
        return bool(kernels.is_legal(self._grid, self._info, int(action)))

    def step(self, action: int) -> int:
        """Apply a legal action; return the minutes it scored. Raises ValueError (and
        changes nothing) if the action is not legal."""
        if not self.is_legal(action):
            raise ValueError(self.illegal_message(action))
        return int(kernels.apply_action(self._grid, self._info, int(action)))

    def illegal_message(self, action) -> str:
        """Why `action` (any object) is not legal here, with the legal actions: the text of
        the ValueError `step` raises, for wrappers (the envs) that check legality their own way."""
        if self.is_over:
            return f"illegal action {action!r}: the game is over"
        legal = self.legal_actions() + self.show_actions()
        shown = legal if len(legal) <= 40 else legal[:40] + ["..."]
        what = ""
        if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
            if 0 <= action < rules.PASS_ACTION:
                cell, value = rules.decode_action(int(action))
                what = f" (value {value} on cell {cell} = (row {cell // 7}, col {cell % 7}))"
            elif not 0 <= action < rules.num_actions(self.team):
                what = f" (out of range 0..{rules.num_actions(self.team) - 1})"
        return (f"illegal action {action!r}{what} for seat {self.current_player}; "
                f"legal actions: {shown}")

    # --- read-only views -----------------------------------------------------------------
    @property
    def num_players(self) -> int:
        return self._info.item(layout.NUM_PLAYERS)

    @property
    def team(self) -> bool:
        return self._info.item(layout.TEAM) != 0

    @property
    def current_player(self) -> int:
        return self._info.item(layout.CURRENT)

    @property
    def is_over(self) -> bool:
        return self._info.item(layout.OVER) != 0

    @property
    def turn(self) -> int:
        return self._info.item(layout.TURN)

    @property
    def scores(self) -> np.ndarray:
        return self._info[layout.SCORE:layout.SCORE + self._info.item(layout.NUM_PLAYERS)].copy()

    @property
    def hands(self) -> np.ndarray:
        """(num_players, 10) counts: hands[seat, v - 1] tiles of value v."""
        counts = self._info[layout.HAND:layout.HAND + 44].reshape(4, 11)
        return counts[: self.num_players, 1:].copy()

    @property
    def hand_sizes(self) -> np.ndarray:
        return self._info[layout.HAND_SIZE:layout.HAND_SIZE + self.num_players].copy()

    @property
    def shown_tiles(self) -> np.ndarray:
        """Team variant: the value each seat shows its partner (0 = none)."""
        return self._info[layout.SHOWN:layout.SHOWN + self.num_players].copy()

    @property
    def pass_facts(self) -> np.ndarray:
        """(num_players, 2): per seat (cap, held), what its passes made public. At its
        last pass every tile of the seat was above `cap` (the largest value that fitted
        an open cell then), and at least `held` of its tiles now are still tiles of that
        hand, so at least `held` of its tiles are above `cap` (held 0: nothing known)."""
        n = self.num_players
        return np.stack([self._info[layout.PASS_CAP:layout.PASS_CAP + n],
                         self._info[layout.PASS_HELD:layout.PASS_HELD + n]], axis=1)

    @property
    def bag_size(self) -> int:
        return rules.NUM_TILES - int(self._info[layout.BAG_POS])

    @property
    def bag(self) -> np.ndarray:
        """The bag in draw order (hidden information)."""
        return self._info[layout.DEAL + self._info[layout.BAG_POS]:layout.DEAL + rules.NUM_TILES].copy()

    @property
    def removed(self) -> np.ndarray:
        """The 3 removed tiles (hidden information)."""
        return self._info[layout.DEAL + 1:layout.DEAL + 4].copy()

    @property
    def deal(self) -> np.ndarray:
        return self._info[layout.DEAL:layout.DEAL + rules.NUM_TILES].copy()

    @property
    def board(self) -> np.ndarray:
        """7x7 tile values, 0 = empty."""
        return self._grid[layout.PAD_OF_CELL, layout.VAL].astype(np.int64).reshape(7, 7)

    def _cells_of(self, bitboard) -> list[int]:
        return [int(layout.CELL_OF_PAD[p]) for p in range(64) if (int(bitboard) >> p) & 1]

    @property
    def timeout_cells(self) -> list[int]:
        return self._cells_of(self._info[layout.TIMEOUT])

    @property
    def frontier_cells(self) -> list[int]:
        """Empty cells touching a tile, Time Outs excluded."""
        return self._cells_of(self._info[layout.FRONTIER] & ~self._info[layout.TIMEOUT])

    @property
    def capacities(self) -> np.ndarray:
        """7x7: the largest value that still fits on each open cell (0 elsewhere)."""
        cap = np.zeros(rules.NUM_CELLS, dtype=np.int64)
        cells = self.frontier_cells
        cap[cells] = self._grid[layout.PAD_OF_CELL[cells], layout.CAP]
        return cap.reshape(7, 7)

    @property
    def last_breakdown(self) -> tuple[Combination, ...]:
        """The scoring entries of the last action (empty after a pass, a show or none),
        read from the state itself, so it holds however the state was stepped (this
        object's `step`, an env's kernels, a batch)."""
        if not 0 <= self._info[layout.LAST_ACTION] < rules.PASS_ACTION:
            return ()
        return breakdown_from_info(self._info)

    @property
    def last_action(self) -> int:
        return int(self._info[layout.LAST_ACTION])

    def ranking(self) -> np.ndarray:
        """Place per seat, 0 = first; seats that tie on minutes and tiles share a place."""
        places = np.zeros(4, dtype=np.int64)
        kernels.ranking(self._info, places)
        return places[: self.num_players]

    def rewards(self) -> np.ndarray:
        out = np.zeros(4, dtype=np.float64)
        kernels.rewards(self._info, out)
        return out[: self.num_players]

    def leads(self) -> np.ndarray:
        """Every seat's minute lead (`kernels.side_lead`, docs/rules.md): its side's minutes
        minus the mean of the opposing sides'; team variant: its team's minus the other's."""
        out = np.zeros(4, dtype=np.float64)
        kernels.leads(self._info, out)
        return out[: self.num_players]

    # --- raw arrays, for search and batch code ----------------------------------------
    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The (grid, info) arrays the kernels work on (live, not copies)."""
        return self._grid, self._info

    def __repr__(self) -> str:
        return (f"GameState(players={self.num_players}, team={self.team}, turn={self.turn}, "
                f"current={self.current_player}, scores={self.scores.tolist()}, over={self.is_over})")
