"""The 24/7 game engine: rules as data, numba kernels, and two APIs over them.

* `GameState`: one game as a Python object (`engine.game`).
* `BatchState` and the batch kernels: N games at once (`engine.batch`).
* `ReferenceGame`: a plain-Python oracle of RULES.md (`engine.reference`).
"""

import os

# numba's parallel kernels (the vector env, engine.batch) run on GNU OpenMP, whose default
# wait policy keeps idle threads spinning. On a small shared machine the spinning starves
# the working threads: the vector env measured 5-10x slower under load. Idle threads sleep
# instead unless the user chose a policy. (Read once, when numba first loads libgomp.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import rules
from .deal import random_deal
from .game import Combination, GameState

__all__ = ["rules", "random_deal", "Combination", "GameState"]
