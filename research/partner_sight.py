"""Issue 71, ceiling test: is a partner's hand worth knowing in the team variant?

``partner-sight`` is the shipped team search (`selfplay`: ISMCTS guided by the shipped
team network, its evaluator at the leaves) with one change: every world of its search
deals the partner's *true* hand (`engine.determinize.deal_around_hands` with the partner's
seat fixed) and only the opponents' hands, the bag and the removed tiles at random. It is a
cheating agent (it reads the partner's hand through `PlayerView.full_state`): an upper
bound on what showing tiles could ever buy. Played as a team (two seats) against the
normal team search at the same simulations, on duplicate deals:

    python evaluate.py --import research.partner_sight --players 4 --team \
        --agents partner-sight:iterations=3500 selfplay:iterations=3500 --games 1000 --seed 71 \
        --workers 2 --out results/partner_sight

Go/no-go (issue 71): 0.56 or more pairwise means partner information is worth building
for (search agents that show tiles and read shows); below, showing tiles is not where
the team variant's strength is.

RESULTS.md: "2026-12-07, 05:12-05:27 UTC"
Verdict: go, 0.750 [0.724, 0.775] (1,000 games): a partner's hand is worth building for.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.base import register
from agents.search import core
from agents.search.mcts import ISMCTSAgent
from agents.search.selfplay import shipped_network
from agents.settings import SELFPLAY_SEARCH, SearchSettings
from engine import GameState, rules
from engine.determinize import deal_around_hands, deal_unseen
from engine.view import PlayerView


@njit(inline="always", cache=True)
def partner_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """A world with the partner's true hand (`data[1]`, seats `data[2]`), the rest dealt at
    random; a plain determinization if it does not fit (it always fits the true state)."""
    rng, ok = deal_around_hands(root_grid, root_info, observer, data[1], data[2], rng, work.grid, work.info, data[3])
    if ok:
        return rng
    return deal_unseen(root_grid, root_info, observer, tiles, num_unseen, rng, work.grid, work.info)


@njit(inline="always", cache=True)
def partner_leaf(work, params, data, rng):
    return core.evaluator_leaf(work, params, data[0], rng)


@njit(cache=True)
def search_partner_sight(root_grid, root_info, observer, iterations, params, rng, tree_, work, data):
    return core.run(root_grid, root_info, observer, iterations, params, rng, tree_, work, data, partner_world,
                    core.ucb, core.expand_greedy, partner_leaf, core.no_model)


@register("partner-sight")
class PartnerSightAgent(ISMCTSAgent):
    """The shipped team search whose worlds hold the partner's true hand (module doc)."""

    cheating = True

    def __init__(self, iterations: int = 3500) -> None:
        super().__init__(net=str(shipped_network(4, True)), settings=SearchSettings(iterations=iterations,
                                                                                    prior=SELFPLAY_SEARCH.prior))
        self._evaluator = self._data  # the packed evaluator `use_evaluator` set
        self._hands = np.zeros((4, 11), dtype=np.int64)
        self._scratch = np.zeros(128, dtype=np.int64)

    def _search(self, view):
        state = view.full_state(self)
        partner = rules.partner(view.seat)
        self._hands[:] = 0
        self._hands[partner, 1:] = state.hands[partner]
        self.use_search(search_partner_sight, (self._evaluator, self._hands, np.int64(1 << partner), self._scratch))
        return super()._search(view)

    def compile_parts(self) -> tuple[str, ...]:
        return ()  # compiled whole, by `warm_up`

    def warm_up(self) -> None:
        """The first move of a team game, two iterations (a 2-player view has no partner)."""
        with self.warm_up_budget():
            self.act_with_visits(PlayerView(GameState.new(4, seed=0, team=True), 0))
