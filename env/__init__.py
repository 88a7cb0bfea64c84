"""Environments of 24/7: The Game over the numba engine.

* `raw_env` / `env`: the PettingZoo AEC environment ``twentyfourseven_v0`` (`env.aec`).
* `TwentyFourSevenEnv`: one learning seat against built-in opponents, Gymnasium id
  ``TwentyFourSeven-v0`` (registered on import; `env.gym_env`).
* `TwentyFourSevenVectorEnv`: N self-play games stepped in one numba call, returned by
  ``gymnasium.make_vec("TwentyFourSeven-v1", num_envs=N)`` (`env.vector`; its
  ``step`` returns every seat's reward, (N, num_players)) or, with the acting seat's
  reward only, (N,), by ``make_vec("TwentyFourSeven-v0", ...)``.

Env history (the Gymnasium ids; details in `env.vector`'s docstring and docs/interop.md):

* ``TwentyFourSeven-v0``: first release.
* ``TwentyFourSeven-v1``: the vector env's ``step`` returns rewards of shape
  (N, num_players), every seat's (v0: the acting seat's, (N,)). Only the vector env
  changed: ``gymnasium.make("TwentyFourSeven-v1")`` is the same single-agent env as
  ``-v0`` (it has one learner, so one reward), and the PettingZoo env already gives every
  agent its reward.
* `env.sb3` (imported on demand): `OnePolicyForEverySeat`, the AEC env as one
  ``gymnasium.Env`` for one policy playing every seat (SB3 / MaskablePPO self-play).
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
GYM_ID_V1 = "TwentyFourSeven-v1"

# one class per env: v1 differs from v0 only in the vector env's constructor option
for _id, _vector in ((GYM_ID, "env.vector:TwentyFourSevenVectorEnv"), (GYM_ID_V1, "env.vector:make_v1")):
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point="env.gym_env:TwentyFourSevenEnv", vector_entry_point=_vector)

__all__ = [
    "GYM_ID", "GYM_ID_V1", "NUM_PLANES", "NUM_VECTOR_FEATURES", "OBS_SIZE", "PLANE_SHAPE",
    "TwentyFourSevenEnv", "TwentyFourSevenVectorEnv", "encode", "env", "observation",
    "raw_env", "split",
]
