"""Issue 71, ceiling test: does a paranoid backup beat max-n at four players?

The shipped search is max-n: at every node the seat to move picks the child best for
itself. ``paranoid`` is the shipped 4-player search (`selfplay`: ISMCTS guided by the
shipped 4-player network, its evaluator at the leaves) with one change, in the selection
rule only: at another seat's node the child is scored by the *searching* seat's value,
negated (every other seat is assumed to play against it; Sturtevant and Korf 2000; in
MCTS, Nijssen and Winands 2011). The searching seat is written into a free slot of the
workspace by the world part at every simulation. Played as one seat against three
shipped seats at the same simulations, on duplicate deals (every seat in turn):

    python evaluate.py --import research.paranoid --players 4 --one-vs-rest \
        --agents paranoid:iterations=3500 selfplay:iterations=3500 --games 1000 --seed 711 \
        --workers 2 --out results/paranoid

Go/no-go (issue 71): 0.54 or more pairwise.

RESULTS.md: "2026-12-07, 05:05-05:15 UTC"
Verdict: no-go, 0.459 [0.439, 0.478] pairwise (1,000 games): max-n stays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.base import register
from agents.search import core
from agents.search.mcts import ISMCTSAgent
from agents.search.selfplay import shipped_network
from agents.settings import SELFPLAY_SEARCH, SearchSettings
from engine import GameState
from engine.view import PlayerView

ROOT_SEAT = 15  # a workspace scratch slot the search core leaves free (the unseen counts use 0..10)


@njit(inline="always", cache=True)
def marked_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """`core.deal_world`, and the searching seat written where the selection reads it."""
    work.scratch[ROOT_SEAT] = observer
    return core.deal_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng)


@njit(inline="always", cache=True)
def paranoid_ucb(tree, work, params, node, child, seat):
    """`core.ucb` of the searching seat's value, negated at another seat's node."""
    root_seat = work.scratch[ROOT_SEAT]
    if seat == root_seat:
        return core.ucb(tree, work, params, node, child, seat)
    visits = tree.nodes[child, core.VISITS]
    avail = tree.nodes[child, core.AVAIL]
    inv = 1.0 / max(visits, 1)
    log_avail = np.log(max(avail, 1))
    return -tree.values[child, root_seat] * inv + params.c * np.sqrt(log_avail * inv)


@njit(cache=True)
def search_paranoid(root_grid, root_info, observer, iterations, params, rng, tree_, work, data):
    return core.run(root_grid, root_info, observer, iterations, params, rng, tree_, work, data, marked_world,
                    paranoid_ucb, core.expand_greedy, core.evaluator_leaf, core.no_model)


@register("paranoid")
class ParanoidAgent(ISMCTSAgent):
    """The shipped 4-player search with a paranoid selection rule (module doc)."""

    def __init__(self, iterations: int = 3500) -> None:
        super().__init__(net=str(shipped_network(4, False)),
                         settings=SearchSettings(iterations=iterations, prior=SELFPLAY_SEARCH.prior))
        self.use_search(search_paranoid, self._data)

    def compile_parts(self) -> tuple[str, ...]:
        return ()  # compiled whole, by `warm_up`

    def warm_up(self) -> None:
        """The first move of a 4-player game, two iterations."""
        with self.warm_up_budget():
            self.act_with_visits(PlayerView(GameState.new(4, seed=0), 0))
