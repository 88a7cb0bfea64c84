"""The agent speed benchmark runs and reports every figure (tiny budgets: not a timing)."""

import math

import numba
import torch

from benchmarks import agent_speed


def test_agent_speed_reports_every_figure(capsys):
    threads = numba.get_num_threads(), torch.get_num_threads()
    try:  # the benchmark pins numba and torch to one thread: give the worker its own back
        result = agent_speed.main(["--json", "--iterations", "40", "--repeats", "1"])
    finally:
        numba.set_num_threads(threads[0])
        torch.set_num_threads(threads[1])
    rates = {key: value for key, value in result.items() if key.endswith("_per_s")}
    assert "middle_game_selfplay_search_iterations_per_s" in rates
    assert "middle_game_selfplay_search_without_evaluator_iterations_per_s" in rates
    assert "middle_game_root_orderings_per_s" in rates and "middle_game_torch_root_orderings_per_s" in rates
    assert all(math.isfinite(v) and v > 0 for v in rates.values()), rates
    assert '"middle_game_position"' in capsys.readouterr().out
