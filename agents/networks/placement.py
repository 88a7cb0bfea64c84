"""A trained network's placement logits for one position, in numba (no torch).

A network-guided search calls its network once per move, for the root's order and prior
(`agents.search.guide`), and needs only the placement logits: the residual tower, the
vector MLP that feeds it, the 1x1 placement head and its skips. In torch that call costs
more than a millisecond right after a search (a fifth of a 0.01 s move); here about a
tenth of that.

The weights travel as one flat float32 array (`PolicyValueNet.packed_placement`), each
batch norm folded into the convolution before it (eval mode), every weight matrix
row-major, one row per output, as torch stores it:

======================  ==========================================================
header (8 values)       planes, channels, blocks, vector inputs, vector hidden,
                        points skip (0/1), exposure skip (0/1), the first points plane
vector MLP              W (hidden x inputs), b; then vector-to-planes W (channels x
                        hidden), b
stem                    3x3 conv W (channels x 9 x planes, [out, ky, kx, in]), b
each block              conv1 W (channels x 9 x channels), b; conv2 W, b
placement head          W (10 x channels), b
skips                   points gain (10) if on; exposure gain (10) if on
======================  ==========================================================

Feature maps are (cell, channel) rows of a 9x9 board with a zero border: a 3x3
convolution is, for every cell, its nine neighbourhood rows side by side times each
output's weight row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine import kernel_cache, rules
from engine.kernels import kernel

kernel_cache.register(__name__, "the agents' features and evaluators", 6)

HEADER = 8
BOARD = 7
PADDED = BOARD + 2  # the board with a zero border: 3x3 convolutions need no bounds tests
CELLS = BOARD * BOARD
# rows of the `maps` scratch: the padded input of a convolution, its output, the residual
# stream, the vector MLP's output and its projection onto the channels
_PAD_ROWS = PADDED * PADDED
_CONV = _PAD_ROWS
_HIDDEN = _CONV + CELLS
_VECTOR = _HIDDEN + CELLS
_TO_PLANES = _VECTOR + 1
_SCRATCH_ROWS = _TO_PLANES + 1
_VALUES = rules.MAX_VALUE


# fastmath lets LLVM reorder the sums of the dot products below into SIMD lanes: about 7x
# faster than in order, at a float32 rounding difference (tests/test_net_kernels.py)
_fast_kernel = njit(cache=True, _nrt=False, fastmath=True)


@_fast_kernel
def _conv3x3(net, w, src, num_in, num_out, columns, dst):
    """dst[cell, :num_out] = the 3x3 convolution of the padded rows src (81, >= num_in)
    with the weights at net[w:] ([out, ky, kx, in], then the bias): each cell's nine
    neighbourhood rows are laid side by side in `columns` (49, >= 9 num_in), then every
    output is one dot product. Returns the offset just past the bias."""
    _neighbourhoods(src, num_in, columns)
    return _dot_rows(net, w, columns, 9 * num_in, num_out, dst)


# Two kernels, not one loop nest: with the copy and the dot products in one function LLVM
# leaves the dot products unvectorized (about 10x slower when the widths are not constants).
@_fast_kernel
def _neighbourhoods(src, num_in, columns):
    """columns[cell] = the padded rows of the cell's 3x3 neighbourhood, side by side."""
    for r in range(BOARD):
        for col in range(BOARD):
            p = r * BOARD + col
            for ky in range(3):
                for kx in range(3):
                    q = (r + ky) * PADDED + col + kx
                    at = (ky * 3 + kx) * num_in
                    for i in range(num_in):
                        columns[p, at + i] = src[q, i]


@_fast_kernel
def _dot_rows(net, w, columns, k, num_out, dst):
    """dst[cell, o] = bias[o] + columns[cell, :k] . W[o] (W (num_out x k) row-major at
    net[w:], then the bias). Returns the offset just past the bias."""
    weights = net[w:w + num_out * k]  # (indexing a view from 0 lets LLVM prove the
    bias = net[w + num_out * k:]      # indices non-negative and vectorize: ~10x)
    for p in range(CELLS):
        for o in range(num_out):
            row = o * k
            total = np.float32(0.0)
            for j in range(k):
                total += columns[p, j] * weights[row + j]
            dst[p, o] = bias[o] + total
    return w + num_out * k + num_out


@_fast_kernel
def _linear(net, w, x, num_in, num_out, relu, out):
    """out = W x + bias (W row-major (out x in) at net[w:], then the bias), ReLU'd if
    `relu`. Returns the offset just past the bias."""
    weights = net[w:w + num_out * num_in]
    bias = net[w + num_out * num_in:]
    for o in range(num_out):
        row = o * num_in
        total = np.float32(0.0)
        for i in range(num_in):
            total += x[i] * weights[row + i]
        total += bias[o]
        out[o] = total if total > 0.0 or not relu else 0.0
    return w + num_out * num_in + num_out


@kernel
def placement_logits(obs, exposure, net, maps, columns, out):
    """out[cell * 10 + v - 1] = the network's logit of placing v on `cell`, before any
    mask, for the observation `obs` (float32, env.observation.OBS_SIZE) and, if the
    network reads them, the move exposure features `exposure` (float32, 490; ignored
    otherwise). `net`: the packed network (module doc); `maps`, `columns`: the scratch
    of `new_scratch(net)`; `out`: float32 (490,)."""
    planes = np.int64(net[0])
    channels = np.int64(net[1])
    blocks = np.int64(net[2])
    vector_in = np.int64(net[3])
    vector_hidden = np.int64(net[4])
    points_skip = net[5] != 0.0
    exposure_skip = net[6] != 0.0
    points_plane = np.int64(net[7])
    padded = maps[:_PAD_ROWS]
    conv = maps[_CONV:_CONV + CELLS]
    hidden = maps[_HIDDEN:_HIDDEN + CELLS]
    vector = maps[_VECTOR]
    to_planes = maps[_TO_PLANES]
    padded[:, :] = 0.0  # only the interior is written below: the border stays zero

    # the vector MLP, and its projection added to every cell of the stem's output
    w = _linear(net, HEADER, obs[planes * CELLS:planes * CELLS + vector_in], vector_in, vector_hidden, True, vector)
    w = _linear(net, w, vector, vector_hidden, channels, False, to_planes)

    for c in range(planes):
        for p in range(CELLS):
            padded[(p // BOARD + 1) * PADDED + p % BOARD + 1, c] = obs[c * CELLS + p]
    w = _conv3x3(net, w, padded, planes, channels, columns, conv)
    for p in range(CELLS):  # x = ReLU(stem) + the vector's projection
        for o in range(channels):
            v = conv[p, o]
            hidden[p, o] = (v if v > 0.0 else 0.0) + to_planes[o]
    _to_padded(hidden, channels, padded)  # (the tower reads only the first `channels` columns)

    for _ in range(blocks):  # x = ReLU(x + BN(conv2(ReLU(BN(conv1(x))))))
        w = _conv3x3(net, w, padded, channels, channels, columns, conv)
        for p in range(CELLS):
            for o in range(channels):
                if conv[p, o] < 0.0:
                    conv[p, o] = 0.0
        _to_padded(conv, channels, padded)
        w = _conv3x3(net, w, padded, channels, channels, columns, conv)
        for p in range(CELLS):
            for o in range(channels):
                v = hidden[p, o] + conv[p, o]
                hidden[p, o] = v if v > 0.0 else 0.0
        _to_padded(hidden, channels, padded)

    for p in range(CELLS):  # the 1x1 placement head
        _linear(net, w, hidden[p], channels, _VALUES, False, out[p * _VALUES:(p + 1) * _VALUES])
    w += channels * _VALUES + _VALUES
    if points_skip:  # + gain[v] * the "minutes if v is placed here" plane
        for v in range(_VALUES):
            gain = net[w + v]
            for p in range(CELLS):
                out[p * _VALUES + v] += gain * obs[(points_plane + v) * CELLS + p]
        w += _VALUES
    if exposure_skip:  # - gain[v] * the move's exposure
        for a in range(CELLS * _VALUES):
            out[a] -= net[w + a % _VALUES] * exposure[a]


@kernel
def _to_padded(rows, channels, padded):
    """Copy (cell, channel) rows into the interior of the zero-bordered padded rows."""
    for p in range(CELLS):
        q = (p // BOARD + 1) * PADDED + p % BOARD + 1
        for o in range(channels):
            padded[q, o] = rows[p, o]


def new_scratch(net: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float32 scratch (maps, columns) `placement_logits` needs for the packed network `net`."""
    width = int(max(net[0], net[1], net[4]))
    return np.zeros((_SCRATCH_ROWS, width), dtype=np.float32), np.zeros((CELLS, 9 * width), dtype=np.float32)
