"""Random deals: the 40 tiles shuffled from an integer seed.

The shuffle is the numba kernel ``kernels.shuffle_deal`` (splitmix64 + Fisher-Yates),
so a single game, a batch of games and the reference engine all get the same deal for
the same seed.
"""

from __future__ import annotations

import numpy as np

from . import rules, validate
from .kernels import shuffle_deal

SEED_BITS = 63


def normalize_seed(seed: int | None) -> int:
    """An int seed in [0, 2**63); None draws one from the OS."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int or None, got {seed!r}")
    return int(seed) % (1 << SEED_BITS)


def random_deal(seed: int | None = None) -> np.ndarray:
    """The 40 tile values in draw order for `seed` (see docs/rules.md, "The deal convention")."""
    out = np.empty(rules.NUM_TILES, dtype=np.int8)
    shuffle_deal(normalize_seed(seed), out)
    return out


def seed_array(seeds, name: str, count: int) -> np.ndarray:
    """`count` seeds (any ints, any integer dtype) reduced like `normalize_seed`, as the
    C-contiguous int64 array the batch kernels take."""
    values = validate.as_int_array(seeds, name, (count,), 0, 2**64 - 1, dtype=np.uint64) \
        if _unsigned(seeds) else validate.as_int_array(seeds, name, (count,))
    return (values & values.dtype.type((1 << SEED_BITS) - 1)).astype(np.int64)


def _unsigned(seeds) -> bool:
    """Whether numpy reads `seeds` as unsigned (uint64 holds seeds above int64's range)."""
    try:
        return np.asarray(seeds).dtype.kind == "u"
    except (ValueError, TypeError):
        return False  # as_int_array reports it
