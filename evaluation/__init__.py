"""Tournaments between agents of 24/7: schedule, parallel games, statistics, reports.

* `config.EvalConfig`: the strict, typed run config (YAML + CLI).
* `tournament`: the schedule (tables, duplicate deals, seeds) and the small play loop.
* `executor`: `SerialExecutor` / `ProcessExecutor` behind `Executor.map_jobs`; the process
  pool enforces the per-move and per-game time limits, killing a worker whose move never ends.
* `stats`, `ratings`: intervals, the SPRT and Bradley-Terry ratings (pure functions).
* `report`, `plots`, `replay`: results.json, games.csv, the terminal table, PNGs, replays.

The command line is evaluate.py at the repository root.
"""

from .config import EvalConfig
from .run import run_evaluation

__all__ = ["EvalConfig", "run_evaluation"]
