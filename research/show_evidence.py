"""Issue 71, item 3: does reading a partner's show as evidence about the rest of its hand pay?

The shipped searches show a tile by one rule (`agents.search.mcts.MCTSAgent.show_before`):
after choosing its placement, a seat shows the *highest* value it will still hold, and keeps
a show while it holds that value. Its partner's worlds today keep the shown tile in the
partner's hand and deal the rest at random. But the rule says more: right after a new show
of value v, no tile left in the partner's hand is above v. Only the tiles it has drawn
since can be, so its hand holds at most d tiles above v, d = the partner's turns since the
show (one draw a turn at most; a pass or an empty bag only makes the bound looser).

``show-reader`` is the shipped team search (`selfplay`) whose every world is drawn from the
shipped determinization (pass facts honoured) and rejected while the partner's hand breaks
that bound: exact conditional sampling, with the last world kept after `MAX_TRIES`
rejections (never seen in practice: the bound rejects few worlds). A new show is seen as a
change of the partner's shown value between this seat's turns; a value shown again after
its tile was placed is missed, which only makes the bound looser. Played as a team of two
against two shipped seats (which show by the same rule but read only the shown tile), same
simulations, duplicate deals:

    python evaluate.py --import research.show_evidence --players 4 --team \
        --agents show-reader:iterations=3500 selfplay:iterations=3500 --games 1000 --seed 716 \
        --workers 2 --out results/show_evidence

Go for the product: an interval above 0.5 over 1,000 games, then a second set of deals.

RESULTS.md: "2026-12-07, 07:12-07:19 UTC"
Verdict: no-go, 0.506 [0.475, 0.537] over 1,000 games (gate: an interval above 0.5); nothing in the product.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.base import register
from agents.search import core
from agents.search.mcts import ISMCTSAgent
from agents.search.selfplay import SelfPlayAgent
from engine import GameState, rules
from engine.layout import HAND
from engine.view import PlayerView

MAX_TRIES = 64
PARTNER, CAP, DRAWS = range(3)  # the evidence record: the partner's seat, its shown value (0: none), d


@njit(inline="always", cache=True)
def _breaks(info, evidence):
    """Whether the partner's hand in this world holds more than d tiles above the shown value."""
    base = HAND + evidence[PARTNER] * 11
    high = 0
    for v in range(evidence[CAP] + 1, 11):
        high += info[base + v]
    return high > evidence[DRAWS]


@njit(inline="always", cache=True)
def evidence_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """The shipped world (`core.deal_world`), drawn again while it breaks the evidence `data[1]`."""
    rng = core.deal_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng)
    evidence = data[1]
    if observer < 0 or evidence[CAP] == 0:
        return rng
    for _ in range(MAX_TRIES):
        if not _breaks(work.info, evidence):
            break
        rng = core.deal_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng)
    return rng


@njit(inline="always", cache=True)
def evidence_leaf(work, params, data, rng):
    return core.evaluator_leaf(work, params, data[0], rng)


@njit(cache=True)
def search_show_evidence(root_grid, root_info, observer, iterations, params, rng, tree_, work, data):
    return core.run(root_grid, root_info, observer, iterations, params, rng, tree_, work, data, evidence_world,
                    core.ucb, core.expand_greedy, evidence_leaf, core.no_model)


class ShowReadingSearch(ISMCTSAgent):
    """The shipped network's search whose worlds read the partner's newest show (module doc)."""

    def __init__(self, net: str, settings) -> None:
        super().__init__(net=net, settings=settings)
        if self.settings.expand != "greedy" or self._leaf != "evaluator":
            raise ValueError("show-reader: the shipped search only (greedy expansion, evaluator leaf)")
        self.evidence = np.zeros(3, dtype=np.int64)
        self.use_search(search_show_evidence, (self._data, self.evidence))
        self._seen = 0  # the partner's shown value at this seat's last search
        self._seen_turn = 0  # the game's turn when a new show was first seen

    def compile_parts(self) -> tuple[str, ...]:
        return ()  # compiled whole, by `warm_up`

    def warm_up(self) -> None:
        with self.warm_up_budget():
            self.act_with_visits(PlayerView(GameState.new(4, seed=0, team=True), 0))

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        super().reset(seat, num_players, team)
        self.evidence[:] = 0
        self._seen = self._seen_turn = 0

    def _read_show(self, view) -> None:
        shown = view.partner_shown
        if shown != self._seen:  # a new show since this seat's last turn: the partner has placed once
            self._seen, self._seen_turn = shown, view.turn
        self.evidence[PARTNER] = rules.partner(view.seat) if view.team else 0
        self.evidence[CAP] = shown
        self.evidence[DRAWS] = 1 + (view.turn - self._seen_turn) // view.num_players

    def act(self, observation, view) -> int:
        self._read_show(view)  # every turn, forced moves included: a show must be seen when it is new
        return super().act(observation, view)


@register("show-reader")
class ShowReaderAgent(SelfPlayAgent):
    """`selfplay` whose team searches read the partner's show as evidence (module doc)."""

    def _build(self, path):
        return ShowReadingSearch(net=str(path), settings=self.settings)

    def warm_up(self) -> None:
        self.reset(0, 4, True)
        self._current.warm_up()
