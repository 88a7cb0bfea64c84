"""Plain-Python reference engine of 24/7: The Game — the executable form of the rules (docs/rules.md).

This engine is the oracle the fast numba engine is differential-tested against, so it
favours clarity over speed: the board is a 7x7 list of lists, every line is found by
walking the board, and every rule is checked literally. Comments cite the rules.

Conventions (docs/rules.md, "Action encoding" and "The deal convention"):
- Placement action `cell * 10 + (value - 1)` (0..489), cell = row * 7 + col; pass = 490.
- Explicit deal: item 0 on the start cell, items 1-3 removed, then seat 0 takes
  hand_size items, seat 1 the next, ...; the rest is the bag, drawn from the front.
- Line order ("board order") is the direction of the axis step in `rules.AXIS_STEPS`:
  row left->right, col top->bottom, diag `\\` top-left->bottom-right, anti `/`
  top-right->bottom-left. An ascending run steps +1 in that order, a descending run -1.

Team variant show rule ("Time and a Half"; actions 491 + v - 1 = `rules.show_action(v)`):
- On its turn, before placing, the mover may show one value v of its hand to its partner.
  A show is offered only when the game is not over, the mover has at least one legal
  placement, has not shown yet this turn, and v differs from its currently shown value.
- The show sets shown_tiles[mover] = v (replacing an earlier shown value), scores 0,
  does not count as a turn, and the same seat stays to move and must still place.
- The shown value stays while the seat's hand holds at least one tile of that value;
  it is cleared (0) as soon as that count becomes 0, i.e. when the seat places its last
  tile of that value — before it draws, so drawing the same value does not restore it.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np

from engine import rules
from engine.rules import (
    AXES,
    AXIS_STEPS,
    BOARD_SIZE,
    BONUS_24_7,
    COPIES_PER_VALUE,
    DOUBLE_TIME_CELLS,
    LINE_CAP,
    MAX_VALUE,
    NUM_CELLS,
    PASS_ACTION,
    RUN_MINUTES,
    SET_MINUTES,
    SEVEN_TILES_BONUS,
    SHOW_BASE,
    START_CELL,
    SUM24_MINUTES,
    SUM7_MINUTES,
    TEAMS,
)

SEVEN = 7  # "Sum of 7" and "24 in 7 tiles"


class Combination(NamedTuple):
    """One entry of a placement's score breakdown."""

    kind: str  # "sum7", "sum24", "24in7", "run3".."run6", "set3", "set4", "24/7", "double_time"
    axis: str | None  # one of rules.AXES; None for "24/7" and "double_time"
    minutes: int


def _on_board(row: int, col: int) -> bool:
    return 0 <= row < BOARD_SIZE and 0 <= col < BOARD_SIZE


def _stretch(values: list[int], i: int, step: int) -> int:
    """Length of the maximal stretch of `values` through index i in which each next
    value equals the previous plus `step` (+1 ascending run, -1 descending run, 0 set)."""
    lo = i
    while lo > 0 and values[lo] - values[lo - 1] == step:
        lo -= 1
    hi = i
    while hi < len(values) - 1 and values[hi + 1] - values[hi] == step:
        hi += 1
    return hi - lo + 1


class ReferenceGame:
    """A game of 24/7 in progress. Build with `new`, `from_deal` or `from_position`."""

    # ------------------------------------------------------------------ construction
    def __init__(self, num_players, team, board, hands, bag, removed,
                 current_player=0, scores=None, timeout_cells=()):
        # Internal; use the classmethods. board: 7x7 list of ints (0 = empty);
        # hands: per seat a list of 11 counts indexed by value (index 0 unused).
        self._n = int(num_players)
        self._team = bool(team)
        self._board = [list(r) for r in board]
        self._stones = set(int(c) for c in timeout_cells)  # Time Out stones (cells)
        self._hands = [list(h) for h in hands]
        self._bag = list(bag)  # drawn from the front
        self._removed = list(removed)
        self._scores = [0] * self._n if scores is None else [int(s) for s in scores]
        self._current = int(current_player)
        self._shown = [0] * self._n  # team variant: value shown to the partner, 0 = none
        self._shown_this_turn = False
        self._turn = 0  # placements + passes made so far
        # what passes made public, per seat: all tiles were above cap at the last pass,
        # and at least `held` current tiles are tiles of that hand (see `pass_facts`)
        self._pass_cap = [0] * self._n
        self._pass_held = [0] * self._n
        self._last_breakdown: tuple[Combination, ...] = ()
        self._over = self._no_seat_can_place()  # RULES "End and winner"

    @classmethod
    def new(cls, num_players: int, seed=None, team: bool = False) -> "ReferenceGame":
        from engine.deal import random_deal  # lazy: written by another engineer

        return cls.from_deal(random_deal(seed), num_players, team)

    @classmethod
    def from_deal(cls, deal, num_players: int, team: bool = False) -> "ReferenceGame":
        rules.check_game_options(num_players, team)
        tiles = [int(v) for v in rules.check_deal(deal)]
        n, h = int(num_players), rules.hand_size(int(num_players))
        board = [[0] * BOARD_SIZE for _ in range(BOARD_SIZE)]
        board[START_CELL // BOARD_SIZE][START_CELL % BOARD_SIZE] = tiles[0]  # Setup 1
        removed = tiles[1:4]  # Setup 2
        hands = []
        for seat in range(n):  # Setup 3
            counts = [0] * (MAX_VALUE + 1)
            for v in tiles[4 + seat * h: 4 + (seat + 1) * h]:
                counts[v] += 1
            hands.append(counts)
        bag = tiles[4 + n * h:]  # Setup 4
        return cls(n, team, board, hands, bag, removed)

    @classmethod
    def from_position(cls, board: dict, hands: list, num_players: int | None = None,
                      team: bool = False, current_player: int = 0, bag=None, *,
                      scores=None, timeout_cells=()) -> "ReferenceGame":
        """Testing/analysis helper: an arbitrary position. `board` maps (row, col) to a
        value, `hands` lists the values held by each seat (num_players defaults to
        len(hands)), `bag` is drawn from the front (default empty), `scores` default 0.
        The tile multiset need not be complete, but holds at most 4 of a value.
        No tiles are removed; Time Out stones are only those given (cell ids)."""
        n = len(hands) if num_players is None else int(num_players)
        rules.check_game_options(n, team)
        if len(hands) != n:
            raise ValueError(f"{len(hands)} hands given for {n} players")
        bag = [] if bag is None else [int(v) for v in bag]
        grid = [[0] * BOARD_SIZE for _ in range(BOARD_SIZE)]
        for (r, c), v in board.items():
            if not _on_board(r, c):
                raise ValueError(f"cell {(r, c)} is off the board")
            grid[r][c] = int(v)
        everything = list(board.values()) + [v for hand in hands for v in hand] + bag
        for v in everything:
            if not 1 <= int(v) <= MAX_VALUE:
                raise ValueError(f"tile value {v!r} not in 1..{MAX_VALUE}")
        for v in range(1, MAX_VALUE + 1):
            if sum(1 for x in everything if int(x) == v) > COPIES_PER_VALUE:
                raise ValueError(f"more than {COPIES_PER_VALUE} tiles of value {v}")
        if not 0 <= current_player < n:
            raise ValueError(f"current_player {current_player} not in 0..{n - 1}")
        counts = []
        for hand in hands:
            hc = [0] * (MAX_VALUE + 1)
            for v in hand:
                hc[int(v)] += 1
            counts.append(hc)
        for cell in timeout_cells:
            if grid[cell // BOARD_SIZE][cell % BOARD_SIZE]:
                raise ValueError(f"Time Out stone on occupied cell {cell}")
        return cls(n, team, grid, counts, bag, [], current_player, scores, timeout_cells)

    def clone(self) -> "ReferenceGame":
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ board geometry
    def _tile(self, row: int, col: int) -> int:
        return self._board[row][col] if _on_board(row, col) else 0

    def _is_open(self, cell: int) -> bool:
        """Empty: no tile and no Time Out stone (legality condition 1)."""
        r, c = divmod(cell, BOARD_SIZE)
        return self._board[r][c] == 0 and cell not in self._stones

    def _touches_tile(self, cell: int) -> bool:
        """A tile among the 8 neighbours (legality condition 2)."""
        r, c = divmod(cell, BOARD_SIZE)
        return any(self._tile(r + dr, c + dc) > 0
                   for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))

    def _line(self, cell: int, axis: int, value: int | None = None) -> tuple[list[int], int]:
        """The line through `cell` on `axis`: the maximal unbroken run of tiles through it,
        in board order, and the index of `cell` in it. An empty cell (with or without a
        Time Out stone) or the edge breaks it. If `value` is given, `cell` is taken to
        hold that value (a hypothetical placement); otherwise its tile is used."""
        dr, dc = AXIS_STEPS[axis]
        r, c = divmod(cell, BOARD_SIZE)
        before, after = [], []
        k = 1
        while self._tile(r - k * dr, c - k * dc) > 0:
            before.append(self._tile(r - k * dr, c - k * dc))
            k += 1
        k = 1
        while self._tile(r + k * dr, c + k * dc) > 0:
            after.append(self._tile(r + k * dr, c + k * dc))
            k += 1
        before.reverse()
        centre = self._board[r][c] if value is None else value
        return before + [centre] + after, len(before)

    def _fits(self, cell: int, value: int) -> bool:
        """RULES "Legal placement" conditions 1-3 for a tile of `value` on `cell`."""
        return (self._is_open(cell) and self._touches_tile(cell)
                and all(sum(self._line(cell, a, value)[0]) <= LINE_CAP for a in range(4)))

    def _placements(self, seat: int) -> list[int]:
        """All legal placement actions of `seat`'s hand, sorted. Same conditions as
        `_fits`, with the 4 lines of a cell read once: a value fits if it keeps the
        heaviest line through the cell at <= 24."""
        held = [v for v in range(1, MAX_VALUE + 1) if self._hands[seat][v] > 0]
        actions = []
        for cell in range(NUM_CELLS):
            if not (held and self._is_open(cell) and self._touches_tile(cell)):
                continue
            heaviest = max(sum(self._line(cell, a, 0)[0]) for a in range(4))
            actions += [rules.action_id(cell, v) for v in held if heaviest + v <= LINE_CAP]
        return actions

    def _no_seat_can_place(self) -> bool:
        return not any(self._placements(seat) for seat in range(self._n))

    # ------------------------------------------------------------------ scoring
    def _score(self, cell: int) -> list[Combination]:
        """RULES "Scoring": the combinations made by the tile just placed on `cell`."""
        combos: list[Combination] = []
        a = b = 0  # lines summing to 24, lines of >= 2 tiles summing to 7
        for axis in range(4):
            name = AXES[axis]
            line, i = self._line(cell, axis)
            n, s = len(line), sum(line)
            if n >= 2 and s == SEVEN:
                combos.append(Combination("sum7", name, SUM7_MINUTES))
                b += 1
            if s == LINE_CAP:
                combos.append(Combination("sum24", name, SUM24_MINUTES))
                a += 1
            if s == LINE_CAP and n == SEVEN:
                combos.append(Combination("24in7", name, SEVEN_TILES_BONUS))
            for step in (+1, -1):  # ascending and descending runs, checked separately
                k = _stretch(line, i, step)
                if k >= 3:  # k <= 6 since 1+..+7 = 28 > 24
                    combos.append(Combination(f"run{k}", name, RUN_MINUTES[k]))
            k = _stretch(line, i, 0)
            if k >= 3:  # k <= 4: only four tiles of a value exist
                combos.append(Combination(f"set{k}", name, SET_MINUTES[k]))
        if a * b > 0:  # 24/7 bonus
            combos.append(Combination("24/7", None, BONUS_24_7 * a * b))
        total = sum(x.minutes for x in combos)
        if cell in DOUBLE_TIME_CELLS and total > 0:  # Double Time; zero stays zero
            combos.append(Combination("double_time", None, total))
        return combos

    def _mark_time_outs(self) -> None:
        """RULES "Time Out": every empty cell touching a tile where even a 1 would push
        some line through it above 24 gets a permanent stone."""
        for cell in range(NUM_CELLS):
            if (self._is_open(cell) and self._touches_tile(cell)
                    and any(sum(self._line(cell, a, 1)[0]) > LINE_CAP for a in range(4))):
                self._stones.add(cell)

    # ------------------------------------------------------------------ actions
    def legal_actions(self) -> list[int]:
        if self._over:
            return []
        return self._placements(self._current) or [PASS_ACTION]  # pass only if forced

    def show_actions(self) -> list[int]:
        p = self._current
        if (not self._team or self._over or self._shown_this_turn
                or not self._placements(p)):
            return []
        return [rules.show_action(v) for v in range(1, MAX_VALUE + 1)
                if self._hands[p][v] > 0 and v != self._shown[p]]

    def step(self, action) -> int:
        legal, shows = self.legal_actions(), self.show_actions()
        ok = (isinstance(action, (int, np.integer)) and not isinstance(action, bool)
              and int(action) in legal + shows)
        if not ok:
            state = "the game is over" if self._over else f"seat {self._current} to move"
            raise ValueError(f"illegal action {action!r} ({state}); legal actions: {legal}"
                             f"; show actions: {shows}")
        action = int(action)
        p = self._current
        if action >= SHOW_BASE:  # team show: same seat stays to move
            self._shown[p] = action - SHOW_BASE + 1
            self._shown_this_turn = True
            self._last_breakdown = ()
            return 0
        points = 0
        if action == PASS_ACTION:
            self._last_breakdown = ()
            self._record_pass(p)
        else:
            cell, v = rules.decode_action(action)
            self._record_placement(p, v)
            self._hands[p][v] -= 1
            if self._hands[p][v] == 0 and self._shown[p] == v:
                self._shown[p] = 0  # the shown tile left the hand
            self._board[cell // BOARD_SIZE][cell % BOARD_SIZE] = v
            combos = self._score(cell)
            points = sum(x.minutes for x in combos)
            self._scores[p] += points
            self._last_breakdown = tuple(combos)
            self._mark_time_outs()
            if self._bag:  # draw one tile if the bag is not empty
                self._hands[p][self._bag.pop(0)] += 1
        self._turn += 1
        self._current = (p + 1) % self._n
        self._shown_this_turn = False
        self._over = self._no_seat_can_place()
        return points

    def _largest_fitting_value(self) -> int:
        """The largest value some open cell takes now (0: none)."""
        return max((v for cell in range(NUM_CELLS) for v in range(1, MAX_VALUE + 1)
                    if self._fits(cell, v)), default=0)

    def _record_pass(self, p: int) -> None:
        """A pass shows that no tile of seat p fits: all are above the largest value
        that fits somewhere. If all of p's tiles were already known to be above a higher
        bound, that bound stands."""
        size = sum(self._hands[p])
        cap = self._largest_fitting_value() if size else 0
        if size and self._pass_held[p] == size:
            cap = max(cap, self._pass_cap[p])
        self._pass_cap[p], self._pass_held[p] = cap, size

    def _record_placement(self, p: int, v: int) -> None:
        """A placed tile above the pass cap may be one of the tiles held since the pass."""
        if self._pass_held[p] and v > self._pass_cap[p]:
            self._pass_held[p] -= 1
            if not self._pass_held[p]:
                self._pass_cap[p] = 0

    # ------------------------------------------------------------------ outcome
    def ranking(self) -> np.ndarray:
        """Place per seat (0 = first), competition style: the number of seats (teams)
        strictly ahead by (minutes, then fewer tiles in hand)."""
        sizes = [sum(h) for h in self._hands]
        if self._team:
            keys = [(sum(self._scores[s] for s in t), -sum(sizes[s] for s in t)) for t in TEAMS]
            team_place = [sum(1 for other in keys if other > key) for key in keys]
            places = [0] * self._n
            for t, seats in enumerate(TEAMS):
                for s in seats:
                    places[s] = team_place[t]
            return np.array(places, dtype=np.int64)
        keys = [(self._scores[s], -sizes[s]) for s in range(self._n)]
        return np.array([sum(1 for other in keys if other > key) for key in keys],
                        dtype=np.int64)

    def rewards(self) -> np.ndarray:
        place = self.ranking()
        if self._team:  # +1 / -1 to the two teams, 0 to all on a draw
            out = [0.0] * self._n
            for mine, theirs in ((TEAMS[0], TEAMS[1]), (TEAMS[1], TEAMS[0])):
                r = float(np.sign(place[theirs[0]] - place[mine[0]]))
                for s in mine:
                    out[s] = r
            return np.array(out, dtype=np.float64)
        out = []
        for s in range(self._n):
            others = [o for o in range(self._n) if o != s]
            out.append(sum(float(np.sign(place[o] - place[s])) for o in others) / len(others))
        return np.array(out, dtype=np.float64)

    # ------------------------------------------------------------------ state (copies)
    @property
    def num_players(self) -> int:
        return self._n

    @property
    def team(self) -> bool:
        return self._team

    @property
    def current_player(self) -> int:
        return self._current

    @property
    def scores(self) -> np.ndarray:
        return np.array(self._scores, dtype=np.int64)

    @property
    def hands(self) -> np.ndarray:
        """Shape (num_players, 10): count of value v at column v - 1."""
        return np.array([h[1:] for h in self._hands], dtype=np.int64)

    @property
    def hand_sizes(self) -> np.ndarray:
        return np.array([sum(h) for h in self._hands], dtype=np.int64)

    @property
    def bag_size(self) -> int:
        return len(self._bag)

    @property
    def bag(self) -> np.ndarray:
        """The bag in draw order (hidden information; for tests)."""
        return np.array(self._bag, dtype=np.int64)

    @property
    def board(self) -> np.ndarray:
        return np.array(self._board, dtype=np.int64)

    @property
    def timeout_cells(self) -> list[int]:
        return sorted(self._stones)

    @property
    def is_over(self) -> bool:
        return self._over

    @property
    def last_breakdown(self) -> tuple[Combination, ...]:
        return self._last_breakdown

    @property
    def shown_tiles(self) -> np.ndarray:
        return np.array(self._shown, dtype=np.int64)

    @property
    def turn(self) -> int:
        return self._turn

    @property
    def pass_facts(self) -> np.ndarray:
        """(num_players, 2): per seat (cap, held), as `GameState.pass_facts`."""
        return np.array(list(zip(self._pass_cap, self._pass_held)), dtype=np.int64).reshape(self._n, 2)

    @property
    def removed(self) -> np.ndarray:
        """The 3 removed tiles (hidden information; for tests)."""
        return np.array(self._removed, dtype=np.int64)
