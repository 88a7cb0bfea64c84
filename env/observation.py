"""The observation of 24/7 for one seat: the single source of truth for every env.

`encode(state, seat)` returns what `seat` may see (docs/rules.md, "Hidden information") as one
flat ``float32`` vector of ``OBS_SIZE`` values: ``NUM_PLANES`` planes of 7x7
(channel-major: value ``[c * 49 + row * 7 + col]``) followed by ``NUM_VECTOR_FEATURES``
scalars. ``split(obs)`` gives ``(planes (..., C, 7, 7), vector (..., F))`` for a network.
The encoder is a numba kernel over the engine's state arrays (``encode_arrays``), so the
vector env encodes N games in one ``prange`` kernel with the very same code.

Nothing here reads another seat's hand, the bag order or the removed tiles: two states
that differ only there give identical observations (tests/test_env.py proves it).

Seat-relative features are *rotated*: slot ``k`` is the seat ``(seat + k) % n``, so slot 0
is always "me", slot 1 the next seat to play after me, and in the team variant slot 2 is
my partner. Slots ``k >= n`` are 0.

=======  ===========================  ======  ===========================================
index    name                         range   meaning
=======  ===========================  ======  ===========================================
planes   (plane ``c`` occupies values ``c*49 .. c*49+48``)
0-9      ``P_VALUE + v - 1``          {0,1}   a tile of value v (1..10) lies on the cell
10       ``P_EMPTY``                  {0,1}   no tile and no Time Out stone
11       ``P_TIMEOUT``                {0,1}   a Time Out stone ('#')
12       ``P_DOUBLE``                 {0,1}   a Double Time (2x) cell (constant)
13       ``P_OPEN``                   {0,1}   open cell: empty, touches a tile, no stone
                                              (where placements may go)
14       ``P_CAPACITY``               0..1    on open cells: the largest value that still
                                              fits there / 10 (0 elsewhere)
15       ``P_LAST``                   {0,1}   the cell of the last action, if it was a
                                              placement (nothing after a pass or a show)
16-25    ``P_POINTS + v - 1``         0..10   on open cells where v fits, if I hold a v:
                                              the minutes placing it there scores now / 100
vector   (index ``i`` below is at ``OBS_SIZE - NUM_VECTOR_FEATURES + i``)
0-9      ``V_HAND + v - 1``           0..1    my tiles of value v / 4
10-19    ``V_UNSEEN + v - 1``         0..1    unseen tiles of value v / 4: 4 minus the
                                              board, my hand and my partner's shown tile
20-23    ``V_SCORE + k``              0..100  minutes of rotated slot k / 100
24-26    ``V_SCORE_DIFF + k - 1``     +-100   (minutes of slot k - my minutes) / 100,
                                              k = 1..3
27-30    ``V_HAND_SIZE + k``          0..1    tiles in hand of slot k / 6
31       ``V_BAG``                    0..1    tiles left in the bag / 24
32       ``V_TURN``                   0..10   turns played (placements + passes) / 50
33-42    ``V_PARTNER_SHOWN + v - 1``  {0,1}   team: my partner shows me a tile of value v
43-52    ``V_OWN_SHOWN + v - 1``      {0,1}   team: I show my partner a tile of value v
53       ``V_SHOWN_THIS_TURN``        {0,1}   team: I am to move and already showed a tile
                                              this turn (only placements are left)
54-56    ``V_NUM_PLAYERS + n - 2``    {0,1}   one-hot player count n = 2, 3, 4
57       ``V_TEAM``                   {0,1}   the team variant is on
58-61    ``V_SEAT + s``               {0,1}   one-hot: my absolute seat s (0 moves first)
62       ``V_TO_MOVE``                {0,1}   I am the seat to move
63       ``V_OVER``                   {0,1}   the game is over
=======  ===========================  ======  ===========================================

The action mask travels next to the observation (``{"observation", "action_mask"}``),
never inside it; its layout is the action encoding of `engine.rules`.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from numba import njit

from engine import access, kernel_cache, kernels, rules, symmetry
from engine.access import (bag_left, capacity, current_seat, hand_count, hand_size, hand_values,
                           is_over, is_team, last_action, num_players, occupied_cells, score,
                           shown_this_turn, shown_value, tile_value, timeout_cells, turn)
from engine.layout import CELL_OF_PAD, PAD_OF_CELL

kernel_cache.register(__name__, "the observation encoder", 3)

# --- planes ----------------------------------------------------------------------------
BOARD = rules.BOARD_SIZE
CELLS = rules.NUM_CELLS
P_VALUE = 0  # + v - 1
P_EMPTY = 10
P_TIMEOUT = 11
P_DOUBLE = 12
P_OPEN = 13
P_CAPACITY = 14
P_LAST = 15
P_POINTS = 16  # + v - 1
NUM_PLANES = 26
PLANE_SHAPE = (NUM_PLANES, BOARD, BOARD)
PLANES_SIZE = NUM_PLANES * CELLS

# --- vector features (offsets inside the vector part) --------------------------------
V_HAND = 0
V_UNSEEN = 10
V_SCORE = 20
V_SCORE_DIFF = 24
V_HAND_SIZE = 27
V_BAG = 31
V_TURN = 32
V_PARTNER_SHOWN = 33
V_OWN_SHOWN = 43
V_SHOWN_THIS_TURN = 53
V_NUM_PLAYERS = 54
V_TEAM = 57
V_SEAT = 58
V_TO_MOVE = 62
V_OVER = 63
NUM_VECTOR_FEATURES = 64
OBS_SIZE = PLANES_SIZE + NUM_VECTOR_FEATURES  # 1338

# Scales (the divisors of the table above).
SCORE_SCALE = 100.0
HAND_SCALE = 6.0
BAG_SCALE = 24.0
TURN_SCALE = 50.0
COUNT_SCALE = float(rules.COPIES_PER_VALUE)
POINTS_SCALE = 100.0

_V0 = PLANES_SIZE  # where the vector part starts
_MAX_VALUE = rules.MAX_VALUE
_PASS = rules.PASS_ACTION
_DOUBLE_TIME_CELLS = rules.DOUBLE_TIME_CELLS


def _bounds() -> tuple[np.ndarray, np.ndarray]:
    low = np.zeros(OBS_SIZE, dtype=np.float32)
    high = np.ones(OBS_SIZE, dtype=np.float32)
    high[_V0 + V_SCORE:_V0 + V_SCORE + 4] = 100.0
    low[_V0 + V_SCORE_DIFF:_V0 + V_SCORE_DIFF + 3] = -100.0
    high[_V0 + V_SCORE_DIFF:_V0 + V_SCORE_DIFF + 3] = 100.0
    high[_V0 + V_TURN] = 10.0
    high[P_POINTS * CELLS:(P_POINTS + _MAX_VALUE) * CELLS] = 10.0
    return low, high


OBS_LOW, OBS_HIGH = _bounds()


def observation_space(num_actions: int) -> spaces.Dict:
    """``Dict(observation=Box(OBS_SIZE) float32, action_mask=Box(num_actions) int8)``."""
    return spaces.Dict({
        "observation": spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32),
        "action_mask": spaces.Box(0, 1, shape=(num_actions,), dtype=np.int8),
    })


def split(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Views ``(planes (..., C, 7, 7), vector (..., NUM_VECTOR_FEATURES))`` of flat observations."""
    obs = np.asarray(obs)
    if obs.shape[-1] != OBS_SIZE:
        raise ValueError(f"an observation has {OBS_SIZE} values in its last axis, got shape {obs.shape}")
    lead = obs.shape[:-1]
    return obs[..., :PLANES_SIZE].reshape(*lead, *PLANE_SHAPE), obs[..., PLANES_SIZE:]


# turn_observations' column table: every plane's cells move, the vector features stay
_OBS_SOURCES = symmetry.cell_column_sources(NUM_PLANES, NUM_VECTOR_FEATURES)


def turn_observations(obs: np.ndarray, turns) -> np.ndarray:
    """Observations (B, OBS_SIZE) of the board turned by `turns[b]` quarter turns
    (`engine.symmetry`): every plane turns with its cells, the vector features stay. The
    encoding of a turned game (every placement turned) is exactly this; a new array."""
    obs = np.asarray(obs)
    if obs.ndim != 2 or obs.shape[1] != OBS_SIZE:
        raise ValueError(f"turn_observations: expected (batch, {OBS_SIZE}) observations, got shape {obs.shape}")
    return symmetry.turn_columns(obs, turns, _OBS_SOURCES)


# --- the encoder kernel --------------------------------------------------------------------
# Every env kernel calls the one compiled encoder, `_encode_and_mask`: inlined into each
# of them, the encoder (with the scoring it inlines) would cost seconds of compile time
# per copy, and as a call it runs as fast (one call per observation).
@njit(inline="always", cache=True)
def encode_into(grid, info, seat, out):
    """Write seat's observation of the game (grid, info) into out (float32, OBS_SIZE).
    For other kernels (the env's step, search leaves); Python code calls `encode`."""
    # no mask: out's bytes stand in for the int8 mask argument, which is not touched
    _encode_and_mask(grid, info, seat, out, out.view(np.int8), np.bool_(False))


@njit(inline="always", cache=True)
def encode_mover_into(grid, info, out, mask):
    """The mover's observation into out and its legal mask into mask (int8 0/1; all 0
    once the game is over), in one walk over the open cells: the same values as `encode_into`
    followed by `engine.kernels.legal_mask`, which the envs would otherwise run apart.
    Callers holding a bool mask pass ``mask.view(np.int8)``: one compiled encoder."""
    _encode_and_mask(grid, info, current_seat(info), out, mask, np.bool_(True))


@kernels.kernel
def _encode_and_mask(grid, info, seat, out, mask, with_mask):
    """`encode_into`, and when `with_mask` seat is the mover and its legal mask (int8) goes
    into mask (else mask is not touched)."""
    for k in range(out.shape[0]):
        out[k] = 0.0
    if with_mask:
        mask[:] = 0
    marking = with_mask and not is_over(info)  # a finished game has no legal action
    any_placement = 0
    v0 = _V0
    # unseen starts as 4 minus my hand; board tiles and the partner's shown tile follow
    for v in range(1, _MAX_VALUE + 1):
        h = hand_count(info, seat, v)
        out[v0 + V_HAND + v - 1] = h / COUNT_SCALE
        out[v0 + V_UNSEEN + v - 1] = COUNT_SCALE - h
    # Bitboard walks (no per-cell branches): tiles, stones, open cells.
    occupied = occupied_cells(info)
    timeout = timeout_cells(info)
    bits = occupied
    while bits:
        p = kernels.lowest_bit_index(bits)
        bits = kernels.without_lowest_bit(bits)
        v = tile_value(grid, p)
        out[(P_VALUE + v - 1) * CELLS + CELL_OF_PAD[p]] = 1.0
        out[v0 + V_UNSEEN + v - 1] -= 1.0
    bits = timeout
    while bits:
        p = kernels.lowest_bit_index(bits)
        bits = kernels.without_lowest_bit(bits)
        out[P_TIMEOUT * CELLS + CELL_OF_PAD[p]] = 1.0
    held = hand_values(info, seat)
    bits = kernels.open_cells(info)
    while bits:
        p = kernels.lowest_bit_index(bits)
        bits = kernels.without_lowest_bit(bits)
        c = CELL_OF_PAD[p]
        out[P_OPEN * CELLS + c] = 1.0
        out[P_CAPACITY * CELLS + c] = capacity(grid, p) / 10.0
        fits = access.values_that_fit(grid, p, held)
        if marking:
            kernels.mark_placements(mask, c, fits)
            any_placement |= fits
        if fits:  # score only the values that can score; the rest stay 0
            r0, r1, r2, r3, run_set, scoring = kernels.scoring_setup(grid, p, fits)
            while scoring:
                v = kernels.lowest_bit_index(scoring)
                scoring = kernels.without_lowest_bit(scoring)
                points = kernels.placement_points(grid, p, v, r0, r1, r2, r3, run_set)
                out[(P_POINTS + v - 1) * CELLS + c] = points / POINTS_SCALE
    filled = occupied | timeout
    for c in range(CELLS):
        out[P_EMPTY * CELLS + c] = 1 - ((filled >> PAD_OF_CELL[c]) & 1)
    for c in _DOUBLE_TIME_CELLS:
        out[P_DOUBLE * CELLS + c] = 1.0
    if marking:
        kernels.mark_pass_and_shows(info, mask, any_placement != 0)
    last = last_action(info)
    if last >= 0 and last < _PASS:
        out[P_LAST * CELLS + last // _MAX_VALUE] = 1.0

    n = num_players(info)
    team = is_team(info)
    if team:
        partner_shown = shown_value(info, rules.partner(seat))
        if partner_shown > 0:
            out[v0 + V_PARTNER_SHOWN + partner_shown - 1] = 1.0
            out[v0 + V_UNSEEN + partner_shown - 1] -= 1.0
        own_shown = shown_value(info, seat)
        if own_shown > 0:
            out[v0 + V_OWN_SHOWN + own_shown - 1] = 1.0
    for v in range(_MAX_VALUE):
        u = out[v0 + V_UNSEEN + v]
        out[v0 + V_UNSEEN + v] = (u if u > 0.0 else 0.0) / COUNT_SCALE
    mine = score(info, seat)
    for k in range(n):
        s = seat + k
        if s >= n:
            s -= n
        out[v0 + V_SCORE + k] = score(info, s) / SCORE_SCALE
        out[v0 + V_HAND_SIZE + k] = hand_size(info, s) / HAND_SCALE
        if k > 0:
            out[v0 + V_SCORE_DIFF + k - 1] = (score(info, s) - mine) / SCORE_SCALE
    out[v0 + V_BAG] = bag_left(info) / BAG_SCALE
    out[v0 + V_TURN] = turn(info) / TURN_SCALE
    over = is_over(info)
    to_move = 1 if (current_seat(info) == seat and not over) else 0
    if to_move == 1 and team:
        out[v0 + V_SHOWN_THIS_TURN] = shown_this_turn(info)
    out[v0 + V_NUM_PLAYERS + n - 2] = 1.0
    out[v0 + V_TEAM] = 1.0 if team else 0.0
    out[v0 + V_SEAT + seat] = 1.0
    out[v0 + V_TO_MOVE] = to_move
    out[v0 + V_OVER] = 1.0 if over else 0.0


@kernels.kernel
def encode_arrays(grid, info, seat, out):
    """Kernel: seat's observation of the game (grid, info) into out (float32, OBS_SIZE)."""
    encode_into(grid, info, seat, out)


@kernels.kernel
def encode_with_mask(grid, info, seat, out, mask):
    """Kernel: seat's observation into out and, if seat is to move, the legal mask (bool
    view, width 491 or 501) into mask; an all-False mask otherwise."""
    if current_seat(info) == seat:
        encode_mover_into(grid, info, out, mask.view(np.int8))
    else:
        encode_into(grid, info, seat, out)
        mask[:] = False


def encode(state, seat: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of `state` (an engine `GameState`) from `seat` (default: the seat
    to move) as a float32 vector of OBS_SIZE values; see the module table."""
    grid, info = state.arrays
    if seat is None:
        seat = state.current_player
    if not 0 <= seat < state.num_players:
        raise ValueError(f"seat {seat} out of range for {state.num_players} players")
    if out is None:
        out = np.empty(OBS_SIZE, dtype=np.float32)
    encode_arrays(grid, info, int(seat), out)
    return out


def describe(obs: np.ndarray) -> dict:
    """A readable decoding of one observation (for debugging and tests)."""
    planes, vec = split(np.asarray(obs, dtype=np.float32))
    values = sum((v + 1) * planes[P_VALUE + v] for v in range(_MAX_VALUE)).astype(np.int64)
    return {
        "board": values,
        "timeout": planes[P_TIMEOUT].astype(bool),
        "open": planes[P_OPEN].astype(bool),
        "capacity": np.rint(planes[P_CAPACITY] * 10).astype(np.int64),
        "hand": np.rint(vec[V_HAND:V_HAND + 10] * COUNT_SCALE).astype(np.int64),
        "unseen": np.rint(vec[V_UNSEEN:V_UNSEEN + 10] * COUNT_SCALE).astype(np.int64),
        "scores": np.rint(vec[V_SCORE:V_SCORE + 4] * SCORE_SCALE).astype(np.int64),
        "hand_sizes": np.rint(vec[V_HAND_SIZE:V_HAND_SIZE + 4] * HAND_SCALE).astype(np.int64),
        "bag": int(round(vec[V_BAG] * BAG_SCALE)),
        "turn": int(round(vec[V_TURN] * TURN_SCALE)),
        "seat": int(np.argmax(vec[V_SEAT:V_SEAT + 4])),
        "to_move": bool(vec[V_TO_MOVE]),
        "over": bool(vec[V_OVER]),
    }
