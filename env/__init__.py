"""Environments of 24/7: The Game over the numba engine.

* `raw_env` / `env`: the PettingZoo AEC environment ``twentyfourseven_v0`` (`env.aec`).
* `TwentyFourSevenEnv`: one learning seat against built-in opponents, Gymnasium id
  ``TwentyFourSeven-v0`` (registered on import; `env.gym_env`).
* `TwentyFourSevenVectorEnv`: N self-play games stepped in one numba call, returned by
  ``gymnasium.make_vec("TwentyFourSeven-v0", num_envs=N)`` (`env.vector`).
* `env.observation`: the one observation encoding all of them share (`encode`, `split`,
  ``OBS_SIZE``, ``PLANE_SHAPE``, ...).
"""

from __future__ import annotations


import engine  # noqa: F401  (sets the OpenMP wait policy before numba loads it)

import gymnasium  # noqa: E402

from . import observation  # noqa: E402
from .aec import env, raw_env  # noqa: E402
from .gym_env import TwentyFourSevenEnv  # noqa: E402
from .observation import NUM_PLANES, NUM_VECTOR_FEATURES, OBS_SIZE, PLANE_SHAPE, encode, split  # noqa: E402
from .vector import TwentyFourSevenVectorEnv  # noqa: E402

GYM_ID = "TwentyFourSeven-v0"

if GYM_ID not in gymnasium.registry:
    gymnasium.register(
        id=GYM_ID,
        entry_point="env.gym_env:TwentyFourSevenEnv",
        vector_entry_point="env.vector:TwentyFourSevenVectorEnv",
    )

__all__ = [
    "GYM_ID", "NUM_PLANES", "NUM_VECTOR_FEATURES", "OBS_SIZE", "PLANE_SHAPE",
    "TwentyFourSevenEnv", "TwentyFourSevenVectorEnv", "encode", "env", "observation",
    "raw_env", "split",
]
