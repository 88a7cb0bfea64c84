"""Checked conversion of user input at the public entry points (batch API, envs).

Every function here either returns the input in the one form the numba kernels are
compiled for, or raises ``ValueError`` with a message naming the argument and what is
wrong with it (its type, dtype, shape, layout or a value, reported exactly as given).
``ValueError`` is the project's one error for bad input, whatever is wrong, as
`GameState` has always done.

Integer arrays: any integer dtype is accepted if every value is in range; values are
compared in their own dtype, so a uint64 ``2**64 - 1`` is reported as
18446744073709551615, never as the -1 a cast would make of it. Rejected: bool arrays
(almost always a mask passed by mistake), floats (even integral ones: an action or a
seed is never a float, and NaN or 1.5 cannot be converted honestly), strings, None and
other objects. A non-contiguous, read-only, byte-swapped or narrower input is copied
into a fresh C-contiguous int64 array: numba compiles one machine-code version per array
type (dtype, layout, writeable, aligned), and a new one for the step kernel takes
minutes, which would look like a hang.
"""

from __future__ import annotations

import operator

import numpy as np


def _is_int_scalar(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def as_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """`value` as a Python int in [low, high] (either bound may be None)."""
    if not _is_int_scalar(value):
        raise ValueError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    number = operator.index(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise ValueError(f"{name} must be in {_range_text(low, high)}, got {number}")
    return number


def as_flag(value, name: str) -> bool:
    """A yes/no option: True/False (Python or numpy bools) or the ints 0 and 1. Strings
    such as "no" are refused: ``bool("no")`` is True."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_int_scalar(value) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


def as_int_array(values, name: str, shape: tuple[int, ...], low: int | None = None,
                 high: int | None = None, dtype=np.int64) -> np.ndarray:
    """`values` (array-like of ints) as a fresh or unchanged C-contiguous, writeable,
    aligned array of `dtype` (int64 or uint64) and exactly `shape`, every value in
    [low, high] (default: the range of `dtype`)."""
    arr = _integer_array(values, name)
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    limits = np.iinfo(dtype)
    low = limits.min if low is None else max(low, int(limits.min))
    high = limits.max if high is None else min(high, int(limits.max))
    if arr.dtype == object:
        _check_object_range(arr, name, low, high)
    else:
        _check_range(arr, name, low, high)
    out = np.ascontiguousarray(arr, dtype=dtype)
    if not out.flags.carray:  # read-only or unaligned: still another array type to numba
        out = out.copy()
    return out


def check_out_array(out, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An output buffer the kernels may write into: exactly an ndarray of `dtype` and
    `shape`, C-contiguous, aligned and writeable."""
    if type(out) is not np.ndarray:
        raise ValueError(f"{name} must be a numpy array, got {type(out).__name__}")
    if out.dtype != np.dtype(dtype) or not out.dtype.isnative:
        raise ValueError(f"{name} must have dtype {np.dtype(dtype)}, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")
    if not (out.flags.c_contiguous and out.flags.aligned):
        raise ValueError(f"{name} must be C-contiguous and aligned (not a strided view)")
    return out


def _integer_array(values, name: str) -> np.ndarray:
    if values is None or isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be an array of ints, got {values!r}")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise ValueError(f"{name} must be an array of ints: {exc}") from None
    kind = arr.dtype.kind
    if kind == "b":
        raise ValueError(f"{name} must hold ints, got a bool array (convert with .astype(int) "
                         f"if that is really meant)")
    if kind == "O":
        if not all(_is_int_scalar(v) for v in arr.flat):
            bad = next(v for v in arr.flat if not _is_int_scalar(v))
            raise ValueError(f"{name} must hold ints, got {bad!r} ({type(bad).__name__})")
        return arr
    if kind not in "iu":
        raise ValueError(f"{name} must hold ints, got dtype {arr.dtype}")
    return arr


def _check_range(arr: np.ndarray, name: str, low: int, high: int) -> None:
    if arr.size == 0:
        return
    lo, hi = int(arr.min()), int(arr.max())  # exact: numpy ints convert losslessly
    if lo >= low and hi <= high:
        return
    flat = arr.reshape(-1)
    index = int(np.argmin(flat) if lo < low else np.argmax(flat))
    _raise_out_of_range(name, arr.shape, index, int(flat[index]), low, high)


def _check_object_range(arr: np.ndarray, name: str, low: int, high: int) -> None:
    for index, v in enumerate(arr.flat):
        if not low <= int(v) <= high:
            _raise_out_of_range(name, arr.shape, index, int(v), low, high)


def _raise_out_of_range(name, shape, flat_index, value, low, high):
    where = np.unravel_index(flat_index, shape) if shape else ()
    label = f"{name}[{', '.join(str(int(i)) for i in where)}]" if where else name
    raise ValueError(f"{label} = {value} is out of range {_range_text(low, high)}")


def _range_text(low, high) -> str:
    if low is None:
        return f"<= {high}"
    if high is None:
        return f">= {low}"
    return f"{low}..{high}"
