"""Issue 71, item 3, a first cut: does showing a tile to the partner pay in the team game?

The partner-sight ceiling (research/partner_sight.py) says knowing the partner's whole hand
is worth a great deal. The rules let a player show one value at a time (docs/rules.md,
"Showing a tile"), and the searches already read a partner's shown value (their worlds keep
it in the partner's hand); no search shows one. ``showing`` is the shipped team search
(`selfplay`) that, on each turn where it may show, first chooses its placement, then shows
before placing: it keeps its current show while it still holds that value after the
placement, else shows the highest value it holds beyond the one it is placing (high tiles
close the 24s). No extra search: the show is chosen from the move already found.

    python evaluate.py --import research.show_tiles --players 4 --team \
        --agents showing:iterations=3500 selfplay:iterations=3500 --games 1000 --seed 713 \
        --workers 2 --out results/show_tiles

A go for the product: a team of two `showing` seats beats two `selfplay` seats with an
interval above 0.5 (1,000 games, duplicate deals), then a second set of deals.

RESULTS.md: "2026-12-07, 05:27-05:34 UTC"
Verdict: go, 0.617 [0.587, 0.644] and on a second set of deals 0.582 [0.552, 0.611]: the shipped
searches now show a tile this way (`agents.search.mcts.MCTSAgent.show_before`), so this
script's `selfplay` baseline shows too on today's product.
"""

from __future__ import annotations

from agents.base import Agent, register
from agents.search.selfplay import SelfPlayAgent
from engine import rules


@register("showing")
class ShowingAgent(Agent):
    """The shipped team search that shows a tile before it places (module doc)."""

    def __init__(self, iterations: int = 3500) -> None:
        super().__init__()
        self.inner = SelfPlayAgent(iterations=iterations)
        self._planned: int | None = None  # the placement chosen before this turn's show
        self._shown = 0  # the value this seat last showed (0: none)

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        self.inner.seed(seed)

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        self.inner.reset(seat, num_players, team)
        self._planned, self._shown = None, 0

    def warm_up(self) -> None:
        self.inner.warm_up()

    def act(self, observation, view) -> int:
        if self._planned is not None:  # the show is made: now the placement found before it
            action, self._planned = self._planned, None
            return action
        action = self.inner.act(observation, view)
        shows = view.show_actions()
        if not shows or action >= rules.PASS_ACTION:
            return action
        placed = rules.decode_action(action)[1]
        left = view.hand.copy()
        left[placed - 1] -= 1  # the hand after the placement (counts per value, index v - 1)
        if self._shown and left[self._shown - 1] > 0:
            return action  # the partner keeps seeing a value this seat still holds
        values = [a - rules.SHOW_BASE + 1 for a in shows]
        keep = [v for v in values if left[v - 1] > 0]
        if not keep:
            return action
        self._shown = max(keep)
        self._planned = action
        return rules.show_action(self._shown)
