"""The 24/7 game engine: rules as data, numba kernels, and two APIs over them.

* `GameState`: one game as a Python object (`engine.game`).
* `BatchState` and the batch kernels: N games at once (`engine.batch`).
* `ReferenceGame`: a plain-Python oracle of docs/rules.md (`engine.reference`).
"""

import os

# numba's parallel kernels (the vector env, engine.batch) run on GNU OpenMP, whose default
# wait policy keeps idle threads spinning, which starves the working threads when other
# processes share the cores; idle threads sleep instead unless the user chose a policy.
# It is set on import of the engine, not in train.py / evaluate.py, because libgomp reads
# it once, when numba first loads it, and a user's own script (gymnasium.make_vec,
# BatchState) reaches the parallel kernels without passing through those entry points.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import rules
from .deal import random_deal
from .game import Combination, GameState

__all__ = ["rules", "random_deal", "Combination", "GameState"]
