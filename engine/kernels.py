"""Numba kernels over one game state (``grid``, ``info``; see ``layout.py``).

The state is incremental: every empty cell keeps the sum and length of the tile runs
just before and after it on each axis, and the largest value that still fits. A
placement merges the two runs on each axis with one add and updates only the two cells
just past the ends of the merged line, so nothing rescans the board.

All kernels mutate their arguments in place and never allocate, so search can copy a
state into scratch arrays and play on.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from . import kernel_cache, rules
from .layout import (
    BAG_POS, BD_DOUBLE, BD_IN7, BD_PAIRS, BD_PER_AXIS, BD_RUN_DOWN, BD_RUN_UP, BD_SET,
    BD_SUM24, BD_SUM7, BREAKDOWN, CAP, CAP_COUNTS, CELL_OF_PAD, CURRENT, DEAL, FRONTIER,
    GRID_CELLS, GRID_CHANNELS, HAND, HAND_MASK, HAND_SIZE, IS_DOUBLE_TIME, LAST_ACTION, LAST_POINTS, LEN_SHIFT,
    MAX_CAP, NUM_PLAYERS, OCCUPIED, ON_BOARD, OVER, PAD_OF_CELL, PASS_CAP, PASS_HELD, RUN_AFTER,
    RUN_BEFORE, SCORE, SHOWN, SHOWN_THIS_TURN, SUM_MASK, TEAM, TIMEOUT, TURN, VAL,
)

# Before any kernel below loads from numba's cache: drop this file's cached kernels if it or
# what it imports changed, and say so when this process compiles (every kernel module does).
kernel_cache.register(__name__, *kernel_cache.ENGINE)

_LINE_CAP = rules.LINE_CAP
_NUM_TILES = rules.NUM_TILES
_MAX_VALUE = rules.MAX_VALUE
_NUM_REMOVED = rules.NUM_REMOVED
_HAND_SIZE = np.array([rules.HAND_SIZE.get(n, 0) for n in range(5)], dtype=np.int64)  # by player count
_PASS = rules.PASS_ACTION
_SHOW_BASE = rules.SHOW_BASE
_NUM_TEAM_ACTIONS = rules.NUM_TEAM_ACTIONS
_SUM7, _SUM24, _IN7, _PAIR = (rules.SUM7_MINUTES, rules.SUM24_MINUTES,
                              rules.SEVEN_TILES_BONUS, rules.BONUS_24_7)
RUN_POINTS = np.array([rules.RUN_MINUTES.get(k, 0) for k in range(8)], dtype=np.int64)
SET_POINTS = np.array([rules.SET_MINUTES.get(k, 0) for k in range(8)], dtype=np.int64)

# Bit tables over hand masks (bit v = value v held, v = 1..10). The lookup tables are
# int8 where their values fit: a random game touches entries all over them, and small
# tables stay in the L1 cache beside the state.
_MASKS = range(1 << (_MAX_VALUE + 1))
POPCOUNT = np.array([bin(m).count("1") for m in _MASKS], dtype=np.int8)
LOWEST_VALUE = np.array([(m & -m).bit_length() - 1 if m else 99 for m in _MASKS], dtype=np.int8)
# Open cells are counted per capacity c = 1..10 in one int64, 6 bits per capacity
# (at most 49 cells), so the counts live in a register while a placement updates them.
CAP_FIELD_BITS = 6

# SELECT_IN_BYTE[b, j]: position of the j-th set bit of byte b (for select_bit_broadword).
SELECT_IN_BYTE = np.zeros((256, 8), dtype=np.int8)
for _b in range(256):
    for _j, _pos in enumerate(p for p in range(8) if (_b >> p) & 1):
        SELECT_IN_BYTE[_b, _j] = _pos

# VALUE_OF_RANK[m >> 1, j]: the j-th smallest value of the hand mask m (bit v = value v,
# v = 1..10), for j < popcount(m): one load instead of a `select_bit`.
VALUE_OF_RANK = np.zeros((1 << _MAX_VALUE, _MAX_VALUE), dtype=np.int8)
for _m in range(1 << _MAX_VALUE):
    for _j, _v in enumerate(v for v in range(1, _MAX_VALUE + 1) if (_m << 1) >> v & 1):
        VALUE_OF_RANK[_m, _j] = _v

# Values 1..c as a mask, for a cell capacity c in 0..10.
FITS_MASK = np.array([((1 << (c + 1)) - 1) & ~1 for c in range(MAX_CAP + 1)], dtype=np.int64)

# LOWEST_FIELD[m]: where CAP_COUNTS keeps the count of open cells of capacity equal to the
# lowest value of hand mask m (6 bits per capacity from capacity 1); 63 for an empty hand,
# whose shift leaves nothing (the counts use 60 bits). See `can_place_now`.
LOWEST_FIELD = np.array([6 * (lowest - 1) if m else 63 for m, lowest in zip(_MASKS, LOWEST_VALUE)], dtype=np.int8)

_ON_BOARD = np.int64(ON_BOARD)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_LOW32 = np.uint64(0xFFFFFFFF)

# Kernels that take state arrays and allocate nothing are compiled without numba's
# reference counting (NRT): its incref/decref calls around inlined helpers survive
# numba's pruning pass in larger kernels and would dominate their run time.
kernel = njit(cache=True, _nrt=False)
# The kernels' helpers: each compiled once per argument types as a function of its own,
# marked for LLVM to inline into every caller (numba's `forceinline`). numba's own inlining
# (`inline="always"`) copies and types a helper's IR again at every call site, 40-46% of a
# kernel's compile; LLVM's runs as fast and compiles the engine's searches in about two
# thirds of the time (benchmarks/RESULTS.md: cold-start, 2026-12-07 18:15).
helper = njit(forceinline=True, cache=True, _nrt=False)


@intrinsic
def _count_ones(typingctx, x):
    """llvm.ctpop of an unsigned integer: one instruction where the CPU counts bits
    (numba compiles for the host CPU), a shift-and-add sequence elsewhere."""
    if not isinstance(x, types.Integer) or x.signed:
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@intrinsic
def _trailing_zeros(typingctx, x):
    """llvm.cttz of a non-zero unsigned integer (zero is undefined): one instruction on
    x86-64, instead of a De Bruijn multiply and a table load."""
    if not isinstance(x, types.Integer) or x.signed:
        return None

    def codegen(context, builder, sig, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return x(x), codegen


# Bitboards are int64 (so they mix freely with other ints), but numba marks signed
# arithmetic "no signed wrap": `x - 1` or `-x` on a board holding bit 63 (cell (6, 6))
# would be undefined behaviour that LLVM really exploits. Bit tricks therefore go
# through uint64, in these two helpers.
@helper
def lowest_bit_index(x):
    """Index of the lowest set bit of a non-zero bitboard."""
    return np.int64(_trailing_zeros(np.uint64(x)))


@helper
def without_lowest_bit(x):
    """The bitboard with its lowest set bit cleared."""
    u = np.uint64(x)
    return np.int64(u & (u - np.uint64(1)))


_H80 = np.uint64(0x8080808080808080)


@helper
def select_bit_broadword(x, j):
    """Index of the j-th (0-based) set bit of bitboard x; j < popcount(x).
    Branch-free (broadword select): the bytes' running bit counts, compared with j in
    every byte at once, give the byte holding the bit; a table finishes inside it."""
    u = np.uint64(x)
    s = u - ((u >> np.uint64(1)) & _M1)
    s = (s & _M2) + ((s >> np.uint64(2)) & _M2)
    s = (s + (s >> np.uint64(4))) & _M4
    running = s * _H01  # byte k: set bits in bytes 0..k
    at_most_j = ((np.uint64(j) * _H01) | _H80) - running  # high bit of byte k: running_k <= j
    byte = (((at_most_j & _H80) >> np.uint64(7)) * _H01) >> np.uint64(56)
    shift = byte << np.uint64(3)
    before = ((running << np.uint64(8)) >> shift) & np.uint64(255)  # bits below that byte
    return np.int64(shift) + SELECT_IN_BYTE[(u >> shift) & np.uint64(255), np.uint64(j) - before]


def _host_has_fast_pdep() -> bool:
    """Whether numba compiles for this host (not a named CPU, e.g. NUMBA_CPU_NAME=generic)
    and the host has BMI2's PDEP as one fast instruction (AMD before Zen 3 microcodes it)."""
    from numba.core import config
    import llvmlite.binding as llvm

    if config.CPU_NAME not in (None, "host"):
        return False
    return bool(llvm.get_host_cpu_features().get("bmi2")) and llvm.get_host_cpu_name() not in ("znver1", "znver2")


HAS_FAST_PDEP = _host_has_fast_pdep()


@intrinsic
def _deposit(typingctx, x, mask):
    """llvm.x86.bmi.pdep.64: the low bits of x deposited at the set bits of mask, one
    instruction; compiled only where `HAS_FAST_PDEP`."""
    if not (isinstance(x, types.Integer) and isinstance(mask, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        pdep = builder.module.declare_intrinsic("llvm.x86.bmi.pdep.64", fnty=ir.FunctionType(i64, [i64, i64]))
        return builder.call(pdep, [args[0], args[1]])

    return types.uint64(types.uint64, types.uint64), codegen


@helper
def select_bit_deposit(x, j):
    """`select_bit` with PDEP: bit j deposited at x's set bits, then the zeros below it
    counted (as the native C build does: 12-19% more random playouts a second, 2026-12-07)."""
    return np.int64(_trailing_zeros(_deposit(np.uint64(1) << np.uint64(j), np.uint64(x))))


# Index of the j-th (0-based) set bit of bitboard x, j < popcount(x): the same answer either way.
select_bit = select_bit_deposit if HAS_FAST_PDEP else select_bit_broadword


@helper
def popcount64(x):
    """Number of set bits of a bitboard."""
    return np.int64(_count_ones(np.uint64(x)))


@helper
def _bit(p):
    return np.int64(1) << p


# --- random numbers: splitmix64, one stream per game ------------------------------------
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@helper
def rng_next(state):
    """Advance a splitmix64 state; return (new_state, 64 random bits)."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return state, z ^ (z >> np.uint64(31))


@helper
def rng_below(state, n):
    """Advance the state; return (new_state, a uniform int in [0, n)) for 0 < n < 2**32."""
    state, z = rng_next(state)
    return state, np.int64(((z >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@kernel
def shuffle_deal(seed, out):
    """Write a uniformly shuffled set of the 40 tiles into `out`, from an int seed."""
    state = np.uint64(seed)
    for i in range(_NUM_TILES):
        out[i] = i // 4 + 1
    for i in range(_NUM_TILES - 1, 0, -1):
        state, j = rng_below(state, i + 1)
        t = out[ix(i)]
        out[ix(i)] = out[ix(j)]
        out[ix(j)] = t


@helper
def copy_state(grid, info, out_grid, out_info):
    """Copy one state into another (explicit loops: a slice copy would need NRT).
    The grid is copied through flat views (`flat_grid`), which numba compiles to a
    tighter loop than 2-D."""
    src = flat_grid(grid)
    dst = flat_grid(out_grid)
    for k in range(src.shape[0]):
        dst[k] = src[k]
    for i in range(info.shape[0]):
        out_info[i] = info[i]


# The placement code reads the grid through a flat view with unsigned indices: numba then
# knows the row stride (a constant) and skips the fix-up for negative indices, which
# together made up a fifth of a random playout's instructions.
_GRID_SIZE = GRID_CELLS * GRID_CHANNELS


@intrinsic
def flat_grid(typingctx, grid):
    """The C-contiguous (GRID_CELLS, GRID_CHANNELS) grid as one flat view (no copy), for
    `at`. An intrinsic: numba's reshape calls a runtime helper on every use."""
    if not (isinstance(grid, types.Array) and grid.ndim == 2 and grid.layout == "C"):
        return None
    flat = grid.copy(ndim=1)

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.return_type)(context, builder)
        context.populate_array(out, data=src.data, shape=[src.nitems], strides=[src.itemsize],
                               itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())

    return flat(grid), codegen


@helper
def at(p, channel):
    """Index of (cell p, channel) in `flat_grid`; p >= 0."""
    return np.uint64(p * GRID_CHANNELS + channel)


# --- setting up ------------------------------------------------------------------------
# The empty board: every board cell can take any value; the border sinks, which absorb
# the writes one step past a line's end, have capacity 0 so that they never count as open.
EMPTY_GRID = np.zeros(_GRID_SIZE, dtype=np.int16)
EMPTY_GRID[PAD_OF_CELL * GRID_CHANNELS + CAP] = MAX_CAP


@helper
def _clear_board(grid):
    g = flat_grid(grid)
    for k in range(_GRID_SIZE):
        g[k] = EMPTY_GRID[k]


@kernel
def reset(grid, info, deal, num_players, team):
    """Set up a new game from an explicit deal (40 values in draw order)."""
    _clear_board(grid)
    info[:] = 0
    info[NUM_PLAYERS] = num_players
    info[TEAM] = team
    info[LAST_ACTION] = -1
    for i in range(_NUM_TILES):
        info[DEAL + i] = deal[i]
    hand = _HAND_SIZE[num_players]
    pos = 1 + _NUM_REMOVED  # item 0 is the start tile, then the removed tiles
    for seat in range(num_players):
        for _ in range(hand):
            add_to_hand(info, seat, info[DEAL + pos])
            pos += 1
    info[BAG_POS] = pos
    put_tile(grid, info, PAD_OF_CELL[rules.START_CELL], info[DEAL])


@helper
def ix(k):
    """An index known to be >= 0, as numba indexes without the negative-index fix-up."""
    return np.uint64(k)


@helper
def add_to_hand(info, seat, v):
    """Give the seat one tile of value v (its count, value mask and hand size)."""
    info[ix(HAND + seat * 11 + v)] += 1
    info[ix(HAND_MASK + seat)] |= np.int64(1) << v
    info[ix(HAND_SIZE + seat)] += 1


@helper
def _remove_from_hand(info, seat, v):
    """Take one tile of value v from the seat's hand (without branches: whether it was
    the last of its value is a coin flip in random play, so a branch would mispredict)."""
    k = ix(HAND + seat * 11 + v)
    left = info[k] - 1
    info[k] = left
    info[ix(HAND_SIZE + seat)] -= 1
    gone = np.int64(left == 0)
    info[ix(HAND_MASK + seat)] &= ~(gone << v)
    shown = info[ix(SHOWN + seat)]
    info[ix(SHOWN + seat)] = shown & -(1 - (gone & np.int64(shown == v)))  # the shown tile has left the hand


# --- putting a tile on the board ------------------------------------------------------------
CAP_UNIT = np.array([(1 << (CAP_FIELD_BITS * c)) >> CAP_FIELD_BITS for c in range(MAX_CAP + 1)], dtype=np.int64)


@helper
def cap_unit(c):
    """One open cell of capacity c in the packed counts (0 for c = 0: Time Outs aren't counted)."""
    return CAP_UNIT[ix(c)]


@helper
def _update_end(g, e, other, room, front, timeout, counts):
    """Cell `e` lies just past an end of a line that leaves `room` (24 - its sum): lower
    its capacity; it joins the frontier (if not already in), and it gets a Time Out
    stone when nothing fits any more. Returns (frontier, timeouts, counts).

    Written without branches: numba cannot drop the array reference counting of an
    inlined helper whose last array use is spread over several branches. A border
    sink's capacity is 0 (`EMPTY_GRID`), so it never changes the counts; its bit (or
    bit e - 64 for the sinks past cell 63, all sinks too) is cleared by the caller."""
    old = np.int64(g[at(e, CAP)])
    cap = min(old, max(0, room - (g[at(e, other)] & SUM_MASK)))
    bit = np.int64(1) << (e & 63)
    counts += cap_unit(cap) - cap_unit(old & -((front >> (e & 63)) & 1))  # new cells were not counted (unit 0)
    g[at(e, CAP)] = cap
    return front | bit, timeout | (np.int64(cap == 0) << (e & 63)), counts


# Compiled once with its types and called (LLVM still inlines the call): inlined by numba,
# its four copies in every caller of `place` doubled the engine's cold compile time.
@njit("UniTuple(int64, 4)(int16[::1], int64, int64, int64, int64, int64, int64, int64, int64, int64, int64)",
      cache=True, _nrt=False)
def _merge_axis(g, p, v, step, before, after, left, right, front, timeout, counts):
    """Merge the runs `left` and `right` on both sides of `p` (its channels `before`
    and `after`, read by the caller) with the new tile; update both ends (`g` is the
    `flat_grid`). Returns the merged line packed as sum | length << 8, and the updated
    bitboards."""
    merged = left + right + v + (1 << LEN_SHIFT)
    room = _LINE_CAP - (merged & SUM_MASK)
    e1 = p - step * ((left >> LEN_SHIFT) + 1)
    e2 = p + step * ((right >> LEN_SHIFT) + 1)
    g[at(e1, after)] = merged
    g[at(e2, before)] = merged
    front, timeout, counts = _update_end(g, e1, before, room, front, timeout, counts)
    front, timeout, counts = _update_end(g, e2, after, room, front, timeout, counts)
    return merged, front, timeout, counts


@helper
def _put_tile(grid, info, p, v):
    """Put value v on empty frontier cell p and update the incremental state.
    Returns the four merged lines (row, col, diag, anti)."""
    g = flat_grid(grid)
    g[at(p, VAL)] = v
    bit = _bit(p)
    info[OCCUPIED] |= bit
    front = info[FRONTIER]
    counts = info[CAP_COUNTS] - cap_unit(np.int64(g[at(p, CAP)]) & -((front >> p) & 1))
    front &= ~bit
    timeout = info[TIMEOUT]
    # p's eight runs are read before any end is written: the compiler cannot tell that
    # the end cells are never p, and would otherwise order each read after those writes
    l0, r0 = np.int64(g[at(p, RUN_BEFORE)]), np.int64(g[at(p, RUN_AFTER)])
    l1, r1 = np.int64(g[at(p, RUN_BEFORE + 2)]), np.int64(g[at(p, RUN_AFTER + 2)])
    l2, r2 = np.int64(g[at(p, RUN_BEFORE + 4)]), np.int64(g[at(p, RUN_AFTER + 4)])
    l3, r3 = np.int64(g[at(p, RUN_BEFORE + 6)]), np.int64(g[at(p, RUN_AFTER + 6)])
    m0, front, timeout, counts = _merge_axis(g, p, v, 1, RUN_BEFORE, RUN_AFTER, l0, r0, front, timeout, counts)
    m1, front, timeout, counts = _merge_axis(g, p, v, 8, RUN_BEFORE + 2, RUN_AFTER + 2, l1, r1, front, timeout, counts)
    m2, front, timeout, counts = _merge_axis(g, p, v, 9, RUN_BEFORE + 4, RUN_AFTER + 4, l2, r2, front, timeout, counts)
    m3, front, timeout, counts = _merge_axis(g, p, v, 7, RUN_BEFORE + 6, RUN_AFTER + 6, l3, r3, front, timeout, counts)
    info[FRONTIER] = front & _ON_BOARD  # the ends on border sinks set bits off the board
    info[TIMEOUT] = timeout & _ON_BOARD
    info[CAP_COUNTS] = counts
    return m0, m1, m2, m3


@kernel
def put_tile(grid, info, p, v):
    """`_put_tile` as one compiled kernel, for setting up positions (not inlined there:
    each inlined copy of the placement code costs seconds of compile time)."""
    _put_tile(grid, info, p, v)


# --- scoring -----------------------------------------------------------------------------
# Runs and sets need board walks; they are rare (about 2% of placements), so every scorer
# first decides from the two neighbours on each axis whether a walk can find anything and
# then walks only those axes, in one loop over the axes: one copy of the walk per scorer
# instead of twelve keeps the compile time down (every inlined copy is optimised again).
AXIS_STEPS = np.array([1, 8, 9, 7], dtype=np.int64)  # row, column, diagonal, anti-diagonal


@helper
def _patterns_one_side(grid, p, v, d):
    """Walking from p by d, how many tiles in a row continue each pattern with v:
    (falling by one a tile, rising by one a tile, equal to v)."""
    falling = 0
    rising = 0
    same = 0
    k = 1
    q = p + d
    while True:
        w = np.int64(grid[q, VAL])
        more = False
        if w != 0:
            if falling == k - 1 and w == v - k:
                falling = k
                more = True
            if rising == k - 1 and w == v + k:
                rising = k
                more = True
            if same == k - 1 and w == v:
                same = k
                more = True
        if not more:
            break
        k += 1
        q += d
    return falling, rising, same


@helper
def _runs_and_set(grid, p, v, step):
    """(run up, run down, set) through p on the axis of `step` for a tile v on p, each
    the stretch's length, or 0 below 3. One walk to each side follows the three patterns
    together while any continues: towards the left a run up falls by one a tile, a run
    down rises by one, a set repeats v. Reads only the tiles beside p, never p itself."""
    # walking left, a run up falls by one a tile; walking right, it rises
    falling_left, rising_left, same_left = _patterns_one_side(grid, p, v, -step)
    falling_right, rising_right, same_right = _patterns_one_side(grid, p, v, step)
    up = 1 + falling_left + rising_right
    down = 1 + rising_left + falling_right
    same = 1 + same_left + same_right
    return up if up >= 3 else 0, down if down >= 3 else 0, same if same >= 3 else 0


# NEAR_VALUES[w]: bit v set for the values v within one of a tile w (none for w = 0, no tile).
NEAR_VALUES = np.array([0] + [(0b111 << (w - 1)) & (((1 << (MAX_CAP + 1)) - 1) & ~1) for w in range(1, MAX_CAP + 1)],
                       dtype=np.int64)


@helper
def _may_run_or_set(grid, p, v, step, line):
    """1 if a tile v on p could make a run or set on this axis, its line (packed
    sum | length << 8, p included) given: the line holds 3 tiles and a neighbour of p
    is v or v +- 1 (a tile: 0 is no tile). Else 0."""
    g = flat_grid(grid)
    near = (NEAR_VALUES[ix(g[at(p - step, VAL)])] | NEAR_VALUES[ix(g[at(p + step, VAL)])]) >> v
    return near & np.int64((line >> LEN_SHIFT) >= 3)


@helper
def _axes_to_walk(grid, p, v, m0, m1, m2, m3):
    """Bit a set for each axis a whose line (m0..m3) could hold a run or set with v on p."""
    return (_may_run_or_set(grid, p, v, 1, m0) | (_may_run_or_set(grid, p, v, 8, m1) << 1)
            | (_may_run_or_set(grid, p, v, 9, m2) << 2) | (_may_run_or_set(grid, p, v, 7, m3) << 3))


@helper
def _axis_sums(merged):
    """(sum7, sum24, 24-in-7) of one merged line (packed sum | length << 8), each 0 or 1
    (no branches: straight-line helpers are the cheapest for numba to inline)."""
    line_sum = merged & SUM_MASK
    length = merged >> LEN_SHIFT
    is24 = np.int64(line_sum == _LINE_CAP)
    return np.int64((line_sum == 7) & (length >= 2)), is24, is24 & np.int64(length == 7)


@helper
def _record_sums(info, axis, is7, is24, in7):
    """Write one axis's sums into the breakdown and clear its runs and set."""
    bd = BREAKDOWN + axis * BD_PER_AXIS
    info[bd + BD_SUM7] = is7
    info[bd + BD_SUM24] = is24
    info[bd + BD_IN7] = in7
    info[bd + BD_RUN_UP] = 0
    info[bd + BD_RUN_DOWN] = 0
    info[bd + BD_SET] = 0


@helper
def _score(grid, info, p, v, m0, m1, m2, m3):
    """Minutes of placing v on p, the four merged lines given; fills the breakdown."""
    a7, a24, a_in = _axis_sums(m0)
    b7, b24, b_in = _axis_sums(m1)
    c7, c24, c_in = _axis_sums(m2)
    d7, d24, d_in = _axis_sums(m3)
    _record_sums(info, 0, a7, a24, a_in)
    _record_sums(info, 1, b7, b24, b_in)
    _record_sums(info, 2, c7, c24, c_in)
    _record_sums(info, 3, d7, d24, d_in)
    sevens = a7 + b7 + c7 + d7
    twenty_fours = a24 + b24 + c24 + d24
    pairs = twenty_fours * sevens
    total = sevens * _SUM7 + twenty_fours * _SUM24 + (a_in + b_in + c_in + d_in) * _IN7 + pairs * _PAIR
    walk = _axes_to_walk(grid, p, v, m0, m1, m2, m3)
    while walk:
        axis = lowest_bit_index(walk)
        walk = without_lowest_bit(walk)
        up, down, same = _runs_and_set(grid, p, v, AXIS_STEPS[axis])
        bd = BREAKDOWN + axis * BD_PER_AXIS
        info[bd + BD_RUN_UP] = up
        info[bd + BD_RUN_DOWN] = down
        info[bd + BD_SET] = same
        total += RUN_POINTS[up] + RUN_POINTS[down] + SET_POINTS[same]
    info[BD_PAIRS] = pairs
    double = IS_DOUBLE_TIME[ix(p)] & -np.int64(total > 0)  # no branch: scoring or not is a coin flip
    info[BD_DOUBLE] = double
    return total << double


# --- scoring a placement without making it ------------------------------------------------
_ONE = 1 << LEN_SHIFT  # a run of length 1 and sum 0: the new tile's own place in its lines


@helper
def lines_through(grid, p):
    """The four lines through the empty cell p, each packed ``sum | length << 8`` with the
    cell itself counted in the length but not yet in the sum: add a value v to get the
    line v would make. Computed once per cell, shared by every value tried there."""
    r0 = np.int64(grid[p, RUN_BEFORE]) + grid[p, RUN_AFTER] + _ONE
    r1 = np.int64(grid[p, RUN_BEFORE + 2]) + grid[p, RUN_AFTER + 2] + _ONE
    r2 = np.int64(grid[p, RUN_BEFORE + 4]) + grid[p, RUN_AFTER + 4] + _ONE
    r3 = np.int64(grid[p, RUN_BEFORE + 6]) + grid[p, RUN_AFTER + 6] + _ONE
    return r0, r1, r2, r3


@helper
def _sum_minutes(v, r0, r1, r2, r3):
    """Minutes of the sums of 7 and 24, 24-in-7 and 24/7 pairs that v makes with the
    four lines (`lines_through`), before Double Time."""
    s0, a0, i0 = _axis_sums(r0 + v)
    s1, a1, i1 = _axis_sums(r1 + v)
    s2, a2, i2 = _axis_sums(r2 + v)
    s3, a3, i3 = _axis_sums(r3 + v)
    sevens = s0 + s1 + s2 + s3
    twenty_fours = a0 + a1 + a2 + a3
    return (sevens * _SUM7 + twenty_fours * _SUM24 + (i0 + i1 + i2 + i3) * _IN7
            + twenty_fours * sevens * _PAIR)


@njit("int64(int16[:, ::1], int64, int64, int64, int64, int64, int64)", cache=True, _nrt=False)
def _run_set_minutes(grid, p, v, r0, r1, r2, r3):
    """Minutes of the runs and sets v would make on p, its four lines given
    (`lines_through`), before Double Time: board walks, only on the axes where a
    neighbour could extend one. Compiled once and called (scorers ask for it only for
    the rare values that could make a run or set), not inlined into every scorer."""
    total = 0
    walk = _axes_to_walk(grid, p, v, r0 + v, r1 + v, r2 + v, r3 + v)
    while walk:
        axis = lowest_bit_index(walk)
        walk = without_lowest_bit(walk)
        up, down, same = _runs_and_set(grid, p, v, AXIS_STEPS[axis])
        total += RUN_POINTS[up] + RUN_POINTS[down] + SET_POINTS[same]
    return total


@helper
def _doubled(p, total):
    """Minutes `total` scored on p after Double Time (a 2x cell doubles a scoring move)."""
    return total << (IS_DOUBLE_TIME[ix(p)] & -np.int64(total > 0))


@helper
def points_on_lines(grid, p, v, r0, r1, r2, r3):
    """The minutes placing v on the open cell p would score now, its four lines given
    (`lines_through`); the state is not changed and legality is not checked."""
    return _doubled(p, _sum_minutes(v, r0, r1, r2, r3) + _run_set_minutes(grid, p, v, r0, r1, r2, r3))


@helper
def points_if_placed(grid, p, v):
    """The minutes placing v on the open cell p would score now (the state is not
    changed; legality is not checked)."""
    r0, r1, r2, r3 = lines_through(grid, p)
    return points_on_lines(grid, p, v, r0, r1, r2, r3)


# SUM_BITS[s]: the values completing a line of sum s (without them) to 7 or to 24.
# s = 0 means no tile on the axis, where a 7 needs two tiles: no bit.
SUM_BITS = np.array([(1 << (7 - t) if 1 <= t <= 6 else 0)
                     | (1 << (_LINE_CAP - t) if _LINE_CAP - _MAX_VALUE <= t < _LINE_CAP else 0)
                     for t in range(64)], dtype=np.int64)


def _value_bit(v: int) -> int:
    return 1 << v if 1 <= v <= _MAX_VALUE else 0


# Values v making a run or set of 3 with tiles x, y (0 = no tile) beside p on one axis:
# ONE_SIDE[x, y] with x next to p and y behind x; BOTH_SIDES[x, y] with x before p and
# y after it.
ONE_SIDE = np.array([[0 if x == 0 or y == 0 else
                      _value_bit(x) * (y == x) | _value_bit(x + 1) * (y == x - 1) | _value_bit(x - 1) * (y == x + 1)
                      for y in range(_MAX_VALUE + 1)] for x in range(_MAX_VALUE + 1)], dtype=np.int64)
BOTH_SIDES = np.array([[0 if x == 0 or y == 0 else
                        _value_bit(x) * (y == x) | _value_bit(x + 1) * (y == x + 2) | _value_bit(y + 1) * (x == y + 2)
                        for y in range(_MAX_VALUE + 1)] for x in range(_MAX_VALUE + 1)], dtype=np.int64)


@helper
def _axis_run_set_candidates(grid, p, step, line):
    """Bitmask of the values that could make a run or set on this axis of empty cell p
    (a superset): those making one of 3 with the two tiles on one side or the tiles on
    both sides (longer ones contain such a 3)."""
    if (line >> LEN_SHIFT) < 3:  # fewer than two tiles beside p: no run or set of 3
        return 0
    a = grid[p - step, VAL]
    b = grid[p + step, VAL]
    # the tiles two steps away, read only behind a tile (else p itself, which is empty)
    a2 = grid[p - 2 * step if a else p, VAL]
    b2 = grid[p + 2 * step if b else p, VAL]
    return ONE_SIDE[a, a2] | ONE_SIDE[b, b2] | BOTH_SIDES[a, b]


@helper
def sum_candidates(r0, r1, r2, r3):
    """Bit v set for every value completing one of the four lines (`lines_through`) to a
    sum of 7 or 24."""
    return (SUM_BITS[r0 & SUM_MASK] | SUM_BITS[r1 & SUM_MASK]
            | SUM_BITS[r2 & SUM_MASK] | SUM_BITS[r3 & SUM_MASK])


@helper
def run_set_candidates(grid, p, r0, r1, r2, r3):
    """Bit v set for every value that could make a run or set on the empty cell p, its
    lines given; any other value scores only by its sums (`placement_points`)."""
    return (_axis_run_set_candidates(grid, p, 1, r0) | _axis_run_set_candidates(grid, p, 8, r1)
            | _axis_run_set_candidates(grid, p, 9, r2) | _axis_run_set_candidates(grid, p, 7, r3))


# Kernels that score every (open cell, value) pair each walk the open cells themselves
# and call this once per cell: numba has no cheap callback to hand one walk the different
# work each does per pair (best per seat, ties, keys, observation planes).
@helper
def scoring_setup(grid, p, values):
    """What scoring values on open cell p needs, read once per cell: its four lines
    (`lines_through`), ``run_set`` (`run_set_candidates`, for `placement_points`) and
    the values of the mask `values` that could score there (the others score 0)."""
    r0, r1, r2, r3 = lines_through(grid, p)
    run_set = run_set_candidates(grid, p, r0, r1, r2, r3)
    return r0, r1, r2, r3, run_set, values & (sum_candidates(r0, r1, r2, r3) | run_set)


@helper
def placement_points(grid, p, v, r0, r1, r2, r3, run_set):
    """Minutes of placing v on the open cell p without placing it, given its lines
    (`lines_through`) and ``run_set = run_set_candidates(grid, p, r0, r1, r2, r3)``: a
    value outside run_set makes no run or set, so its minutes follow from the four lines
    alone (no board reads); the others are scored on the board."""
    total = _sum_minutes(v, r0, r1, r2, r3)
    if (run_set >> v) & 1:
        total += _run_set_minutes(grid, p, v, r0, r1, r2, r3)
    return _doubled(p, total)


# --- whole moves ----------------------------------------------------------------------------
@helper
def open_cells_with_capacity(info, c):
    """How many open cells take values up to exactly c (c = 1..10)."""
    return (info[CAP_COUNTS] >> (CAP_FIELD_BITS * (c - 1))) & 63


@helper
def max_open_capacity(info):
    """The largest value that fits on some open cell (0 when none)."""
    counts = info[CAP_COUNTS]
    for c in range(MAX_CAP, 0, -1):
        if (counts >> (CAP_FIELD_BITS * (c - 1))) & 63:
            return c
    return 0


@helper
def can_place(info, seat, max_cap):
    return LOWEST_VALUE[ix(info[ix(HAND_MASK + seat)])] <= max_cap


@helper
def can_place_now(info, seat):
    """Whether the seat holds a tile that fits an open cell (`can_place` with the largest
    open capacity), read from the packed counts with one shift: some open cell takes the
    seat's lowest value iff a count at or above that value's capacity field is non-zero."""
    return (info[CAP_COUNTS] >> np.int64(LOWEST_FIELD[ix(info[ix(HAND_MASK + seat)])])) != 0


@helper
def _end_turn(info):
    """Advance to the next seat; the game is over once no seat can place."""
    n = info[NUM_PLAYERS]
    info[TURN] += 1
    info[SHOWN_THIS_TURN] = 0
    cur = info[CURRENT] + 1
    info[CURRENT] = 0 if cur == n else cur
    over = 1
    for seat in range(n):
        if can_place_now(info, seat):
            over = 0
            break
    info[OVER] = over


@helper
def place(grid, info, p, v):
    """The mover places v on padded cell p (assumed legal). Returns the minutes.
    Inlined only into the engine's own game loops (`apply_action`, `random_playout`, where
    a call is a visible part of a random playout); other modules' kernels call `apply_action`,
    since every inlined copy of the placement code costs LLVM seconds of compile time."""
    seat = info[CURRENT]
    m0, m1, m2, m3 = _put_tile(grid, info, p, v)
    points = _score(grid, info, p, v, m0, m1, m2, m3)
    info[ix(SCORE + seat)] += points
    info[LAST_POINTS] = points
    _remove_from_hand(info, seat, v)
    _note_placement(info, seat, v)
    pos = info[BAG_POS]
    if pos < _NUM_TILES:
        add_to_hand(info, seat, info[ix(DEAL + pos)])
        info[BAG_POS] = pos + 1
    _end_turn(info)
    return points


@helper
def _note_placement(info, seat, v):
    """Keep the seat's pass facts (layout.PASS_CAP) true after it placed v: a tile above
    the cap may have been one of the tiles held since the pass, a smaller one was not."""
    held = info[ix(PASS_HELD + seat)]
    if held > 0 and v > info[PASS_CAP + seat]:
        info[PASS_HELD + seat] = held - 1
        if held == 1:
            info[PASS_CAP + seat] = 0


@helper
def _note_pass(info, seat):
    """Record what the mover's pass makes public: every tile of its hand is above the
    largest open capacity. If every current tile was already known to be above an older,
    higher cap (no tile has left the hand since that pass), that bound still holds."""
    size = info[HAND_SIZE + seat]
    cap = max_open_capacity(info)
    if size == 0:
        cap = 0  # an empty hand passes with nothing to tell
    elif info[PASS_HELD + seat] == size and info[PASS_CAP + seat] > cap:
        cap = info[PASS_CAP + seat]
    info[PASS_CAP + seat] = cap
    info[PASS_HELD + seat] = size


@kernel
def pass_turn(info):
    _note_pass(info, info[CURRENT])
    info[LAST_POINTS] = 0
    _end_turn(info)


@kernel
def apply_action(grid, info, action):
    """Apply a legal action id (placement, pass or team show). Returns the minutes."""
    info[LAST_ACTION] = action
    if action < _PASS:
        cell = action // _MAX_VALUE
        return place(grid, info, PAD_OF_CELL[cell], action % _MAX_VALUE + 1)
    if action == _PASS:
        pass_turn(info)
        return 0
    # team variant: show a tile to the partner; the same seat still has to place
    info[SHOWN + info[CURRENT]] = action - _SHOW_BASE + 1
    info[SHOWN_THIS_TURN] = 1
    info[LAST_POINTS] = 0
    return 0


# --- legality -----------------------------------------------------------------------------
@helper
def open_cells(info):
    return info[FRONTIER] & ~info[TIMEOUT]


@helper
def mover_can_place(info):
    return can_place_now(info, info[CURRENT])


@kernel
def is_legal(grid, info, action):
    """Whether `action` (any int) is legal for the seat to move."""
    if info[OVER] == 1 or action < 0:
        return False
    seat = info[CURRENT]
    if action < _PASS:
        cell = action // _MAX_VALUE
        v = action % _MAX_VALUE + 1
        p = PAD_OF_CELL[cell]
        return (info[HAND + seat * 11 + v] > 0 and (open_cells(info) >> p) & 1 == 1
                and grid[p, CAP] >= v)
    if action == _PASS:
        return not mover_can_place(info)
    if action < _NUM_TEAM_ACTIONS:
        v = action - _SHOW_BASE + 1
        return (info[TEAM] == 1 and info[SHOWN_THIS_TURN] == 0 and info[HAND + seat * 11 + v] > 0
                and info[SHOWN + seat] != v and mover_can_place(info))
    return False


@kernel
def legal_placements(grid, info, out):
    """Write the mover's legal placement ids, sorted, into `out`; return how many."""
    if info[OVER] == 1:
        return 0
    mask = info[HAND_MASK + info[CURRENT]]
    n = 0
    cells = open_cells(info)
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = mask & FITS_MASK[grid[p, CAP]]
        base = CELL_OF_PAD[p] * _MAX_VALUE - 1
        while fits:
            v = lowest_bit_index(fits)
            fits = without_lowest_bit(fits)
            out[n] = base + v
            n += 1
    return n


@kernel
def legal_mask(grid, info, mask):
    """Fill a mask over all action ids (placements, pass, and team shows), bool or int8
    0/1. The envs mark the same entries with the same helpers inside their observation
    encoder (`env.observation.encode_mover_into`)."""
    mask[:] = False
    if info[OVER] == 1:
        return
    hand = info[HAND_MASK + info[CURRENT]]
    cells = open_cells(info)
    any_placement = 0
    while cells:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = hand & FITS_MASK[grid[p, CAP]]
        mark_placements(mask, CELL_OF_PAD[p], fits)
        any_placement |= fits
    mark_pass_and_shows(info, mask, any_placement != 0)


@helper
def mark_placements(mask, cell, fits):
    """Set the mask entries of placing each value of the bit set `fits` on `cell` (and
    clear the other values of that cell): ten stores, no branches."""
    base = cell * _MAX_VALUE - 1
    for v in range(1, _MAX_VALUE + 1):
        mask[base + v] = (fits >> v) & 1


@helper
def mark_pass_and_shows(info, mask, any_placement):
    """The rest of the mover's legal mask once its placements are marked: pass when no
    placement is legal; else, in the team variant, the shows still allowed this turn."""
    if not any_placement:
        mask[_PASS] = True
    elif info[TEAM] == 1 and info[SHOWN_THIS_TURN] == 0 and mask.shape[0] >= _NUM_TEAM_ACTIONS:
        seat = info[CURRENT]
        hand = info[HAND_MASK + seat]
        shown = info[SHOWN + seat]
        for v in range(1, _MAX_VALUE + 1):
            if (hand >> v) & 1 and v != shown:
                mask[_SHOW_BASE + v - 1] = True


# --- random play ------------------------------------------------------------------------
@helper
def count_placements(info):
    """How many legal placements the mover has (without listing them)."""
    mask = info[HAND_MASK + info[CURRENT]]
    total = 0
    counts = info[CAP_COUNTS]
    for c in range(1, MAX_CAP + 1):
        total += (counts & 63) * POPCOUNT[mask & FITS_MASK[c]]
        counts >>= CAP_FIELD_BITS
    return total


@helper
def random_placement(grid, info, rng):
    """Pick a uniformly random legal placement for the mover without listing them.
    Returns (rng, padded cell, value), or cell -1 when only pass is legal.

    Rejection sampling: a uniform (open cell, distinct hand value) pair is accepted if
    the value fits, so every legal placement has the same chance. After a few misses
    (rare: most open cells take most values) it falls back to counting and selecting."""
    seat = info[CURRENT]
    mask = info[ix(HAND_MASK + seat)]
    if not can_place_now(info, seat):
        return rng, -1, 0
    cells = open_cells(info)
    num_cells = popcount64(cells)
    num_values = POPCOUNT[ix(mask)]
    for _ in range(8):
        rng, z = rng_next(rng)
        i = np.int64(((z >> np.uint64(32)) * np.uint64(num_cells)) >> np.uint64(32))
        j = np.int64(((z & _LOW32) * np.uint64(num_values)) >> np.uint64(32))
        p = select_bit(cells, i)
        v = np.int64(VALUE_OF_RANK[ix(mask >> 1), ix(j)])
        if flat_grid(grid)[at(p, CAP)] >= v:
            return rng, p, v
    rng, r = rng_below(rng, count_placements(info))
    while True:
        p = lowest_bit_index(cells)
        cells = without_lowest_bit(cells)
        fits = mask & FITS_MASK[grid[p, CAP]]
        k = POPCOUNT[fits]
        if r < k:
            return rng, p, select_bit(fits, r)
        r -= k


@kernel
def random_playout(grid, info, rng):
    """Play uniformly random legal actions until the game ends.
    Returns (rng, number of placements made)."""
    placements = 0
    while info[OVER] == 0:
        rng, p, v = random_placement(grid, info, rng)
        if p < 0:
            pass_turn(info)
        else:
            place(grid, info, p, v)
            placements += 1
    return rng, placements


# --- the end ----------------------------------------------------------------------------
@kernel
def ranking(info, places):
    """Competition places per seat (0 = first): more minutes first, then fewer tiles in
    hand; equal on both share a place. In the team variant teams (0,2) and (1,3) are
    compared on team minutes and team tiles, and both partners get the team's place."""
    n = info[NUM_PLAYERS]
    if info[TEAM] == 1:
        d_score = (info[SCORE] + info[SCORE + 2]) - (info[SCORE + 1] + info[SCORE + 3])
        d_tiles = (info[HAND_SIZE] + info[HAND_SIZE + 2]) - (info[HAND_SIZE + 1] + info[HAND_SIZE + 3])
        first = 0
        if d_score < 0 or (d_score == 0 and d_tiles > 0):
            first = 1
        draw = d_score == 0 and d_tiles == 0
        for seat in range(4):
            places[seat] = 0 if (draw or seat % 2 == first) else 1
        return
    for seat in range(n):
        ahead = 0
        for other in range(n):
            if _beats(info, other, seat):
                ahead += 1
        places[seat] = ahead


@helper
def _beats(info, a, b):
    sa, sb = info[SCORE + a], info[SCORE + b]
    return sa > sb or (sa == sb and info[HAND_SIZE + a] < info[HAND_SIZE + b])


@kernel
def rewards(info, out):
    """Rewards per seat by docs/rules.md: +1/-1/0 for 2 players and teams; with 3-4 players
    the mean of +1/0/-1 against every other seat."""
    n = info[NUM_PLAYERS]
    if info[TEAM] == 1:
        d_score = (info[SCORE] + info[SCORE + 2]) - (info[SCORE + 1] + info[SCORE + 3])
        d_tiles = (info[HAND_SIZE] + info[HAND_SIZE + 2]) - (info[HAND_SIZE + 1] + info[HAND_SIZE + 3])
        r = 0.0
        if d_score > 0 or (d_score == 0 and d_tiles < 0):
            r = 1.0
        elif d_score < 0 or d_tiles > 0:
            r = -1.0
        for seat in range(4):
            out[seat] = r if seat % 2 == 0 else -r
        return
    for seat in range(n):
        total = 0.0
        for other in range(n):
            if other != seat:
                if _beats(info, seat, other):
                    total += 1.0
                elif _beats(info, other, seat):
                    total -= 1.0
        out[seat] = total / (n - 1)


# --- the minute lead and the margin ---------------------------------------------------------
# The one definition of a seat's lead and of its margin (docs/rules.md, "Ranking and
# rewards"): the search's rewards, the learners' value targets, the Gymnasium env's dense
# reward and the reports all read them from here.
LEAD_SCALE = 100.0  # minutes: a lead's margin is tanh(lead / LEAD_SCALE)


@helper
def side_lead(scores, team, seat):
    """`seat`'s minute lead, given every seat's minutes `scores`: its side's minutes minus
    the mean of the opposing sides' minutes. A side is a seat, or in the team variant
    (`team`) a team, whose minutes are its two seats' sum: partners share their lead and
    the two teams' leads are opposite. With 2 players it is the difference of the scores."""
    n = scores.shape[0]
    total = 0
    for s in range(n):
        total += scores[s]
    if team:
        mine = scores[seat] + scores[rules.partner(seat)]
        sides = 2
    else:
        mine = scores[seat]
        sides = n
    return mine - (total - mine) / (sides - 1)


@helper
def lead_margin(lead):
    """A lead's margin, tanh(lead / LEAD_SCALE): in (-1, 1), about +-0.76 at 100 minutes."""
    return np.tanh(lead / LEAD_SCALE)


@helper
def seat_margin(info, seat):
    """`seat`'s margin in the game `info`: `lead_margin` of its `side_lead`."""
    scores = info[SCORE:SCORE + info[NUM_PLAYERS]]
    return lead_margin(side_lead(scores, info[TEAM] == 1, seat))


@kernel
def leads(info, out):
    """Every seat's minute lead (`side_lead`) into out[:num_players]."""
    scores = info[SCORE:SCORE + info[NUM_PLAYERS]]
    team = info[TEAM] == 1
    for seat in range(scores.shape[0]):
        out[seat] = side_lead(scores, team, seat)


@kernel
def margins(info, out):
    """Every seat's margin (`seat_margin`) into out[:num_players]."""
    for seat in range(info[NUM_PLAYERS]):
        out[seat] = seat_margin(info, seat)


@kernel
def _score_leads(scores, team, out):
    for g in range(scores.shape[0]):
        for seat in range(scores.shape[1]):
            out[g, seat] = side_lead(scores[g], team, seat)


def score_leads(scores, team: bool) -> np.ndarray:
    """`leads` from the minutes alone, for games known only by their scores (records,
    reports): `scores` (..., num_players) -> every seat's lead, float64, same shape."""
    scores = np.asarray(scores, dtype=np.int64)
    rows = np.ascontiguousarray(scores.reshape(-1, scores.shape[-1]))
    out = np.zeros(rows.shape, dtype=np.float64)
    _score_leads(rows, bool(team), out)
    return out.reshape(scores.shape)


# --- arbitrary positions (tests and analysis) ----------------------------------------------
@kernel
def setup_position(grid, info, pads, values, hands, bag, num_players, team, current):
    """Set up any position: tiles `values` on padded cells `pads`, `hands[seat, v]`
    counts, `bag` in draw order; scores zero. The tile multiset need not be complete."""
    _clear_board(grid)
    info[:] = 0
    info[NUM_PLAYERS] = num_players
    info[TEAM] = team
    info[LAST_ACTION] = -1
    for i in range(pads.shape[0]):
        put_tile(grid, info, np.int64(pads[i]), np.int64(values[i]))
    for seat in range(num_players):
        for v in range(1, _MAX_VALUE + 1):
            for _ in range(hands[seat, v]):
                add_to_hand(info, seat, v)
    start = _NUM_TILES - bag.shape[0]
    for i in range(bag.shape[0]):
        info[DEAL + start + i] = bag[i]
    info[BAG_POS] = start
    info[CURRENT] = current
    max_cap = max_open_capacity(info)
    info[OVER] = 1
    for seat in range(num_players):
        if can_place(info, seat, max_cap):
            info[OVER] = 0
