"""Issue 62, lever 4: is one move's search on 2 cores (root-parallel: independent trees,
merged at the root) worth at least 0.53 against the same search on 1 core at equal wall
time?

RESULTS.md: "2026-12-06, 19:09-19:17 UTC"
Verdict: no-go: two root-parallel trees score 0.502 [0.477, 0.527] against one (bar 0.53);
one tree of twice the simulations 0.536 [0.510, 0.562].

Equal wall time without timing noise: K root-parallel trees of N simulations each take the
wall time of one tree of N on K cores. Here the K trees run one after the other in one
process (`rootpar`: K `selfplay:iterations=N` searches with their own seeds, visit counts
and value sums added, the most visited move played, ties by the mean value), so a match
against `selfplay:iterations=N` on duplicate deals measures what the cores buy, with no
clock involved. For scale, one tree of K x N (what a perfect K-fold speed-up would buy)
against the same:

    python evaluate.py --import research/lever_cores.py --agents rootpar:iterations=3500,trees=2 \
        selfplay:iterations=3500 --games 400 --seed 5 --workers 2 --no-plots --out results/levers/cores_root2
    python evaluate.py --agents selfplay:iterations=7000 selfplay:iterations=3500 --games 400 --seed 5 \
        --workers 2 --no-plots --out results/levers/cores_tree2

(3,500 simulations: what `selfplay:time=0.01` runs here, `research/lever_games.py --measure`.)
"""

from __future__ import annotations

from agents.base import Agent, register
from agents.parameters import positive_int
from agents.search.mcts import MCTSAgent
from agents.search.selfplay import SelfPlayAgent


@register("rootpar")
class RootParallel(Agent):
    """K independent `selfplay` searches of `iterations` each, merged at the root."""

    parameter_rules = {"trees": positive_int}

    def __init__(self, iterations: int = 3500, trees: int = 2) -> None:
        super().__init__()
        self.trees = [SelfPlayAgent(iterations=iterations) for _ in range(trees)]

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        for i, tree in enumerate(self.trees):
            tree.seed(None if seed is None else seed * 7 + i)

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        for tree in self.trees:
            tree.reset(seat, num_players, team)

    def warm_up(self) -> None:
        self.trees[0].warm_up()

    def act(self, observation, view) -> int:
        visits = values = 0
        for tree in self.trees:
            _, tree_visits, tree_values = tree.act_with_visits(view)
            visits, values = visits + tree_visits, values + tree_values
        return MCTSAgent._best(visits, values)
