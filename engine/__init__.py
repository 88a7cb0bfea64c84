"""The 24/7 game engine: rules as data, numba kernels, and two APIs over them.

* `GameState`: one game as a Python object (`engine.game`).
* `BatchState` and the batch kernels: N games at once (`engine.batch`).
* `ReferenceGame`: a plain-Python oracle of RULES.md (`engine.reference`).
"""

from . import rules
from .deal import random_deal
from .game import Combination, GameState

__all__ = ["rules", "random_deal", "Combination", "GameState"]
