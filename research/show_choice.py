"""Issue 71, item 3: which value should a team search show? One chosen by what it opens
for the shower, against the shipped rule (the highest value still held).

The shipped rule (`agents.search.mcts.MCTSAgent.show_before`) shows, after choosing its
placement, the highest value it will still hold, and keeps a show while it holds it (high
tiles close the 24s). A shown tile helps the team when the partner plays around it: leaves
open, or sets up, the cells where the shower can score with it. ``show-opener`` shows the
value with the most such cells on the board after its placement: the open cells where that
value fits and would score now (`engine.kernels.points_if_placed`), ties to the higher value; it keeps its show on the same terms as the
shipped rule. Everything else is the shipped team search. A team of two against two
shipped seats, the same simulations, duplicate deals:

    PYTHONPATH=. python evaluate.py --import research.show_choice --players 4 --team \
        --agents show-opener:iterations=3500 selfplay:iterations=3500 --games 1000 --seed 717 \
        --workers 2 --out results/show_choice

Go for the product: an interval above 0.5 over 1,000 games, then a second set of deals.

RESULTS.md: "2026-12-07, 11:27-11:40 UTC"
Verdict: go, 0.525 [0.505, 0.545] over 2,000 games on two sets of deals (0.530 and 0.520); the rule is
`MCTSAgent.show_before` in the product.
"""

from __future__ import annotations


from agents.base import register
from agents.search.mcts import ISMCTSAgent
from agents.search.selfplay import SelfPlayAgent
from engine import GameState, kernels, layout, rules


def scoring_cells(grid, info, values) -> dict[int, int]:
    """{v: the open cells where v fits and would score now} (`engine.kernels.points_if_placed`
    on every open cell; cell indices padded, as the kernels use them)."""
    open_cells = int(info[layout.FRONTIER]) & ~int(info[layout.TIMEOUT])
    cells = [int(p) for p in layout.PAD_OF_CELL if (open_cells >> int(p)) & 1]
    return {v: sum(int(grid[p, layout.CAP]) >= v and kernels.points_if_placed(grid, p, v) > 0 for p in cells)
            for v in values}


def openings(view, action: int, values) -> dict[int, int]:
    """`scoring_cells` on the public board after `action` (this seat's placement)."""
    grid, info = view.public_arrays()
    after = GameState(grid.copy(), info.copy())
    after.step(int(action))
    return scoring_cells(*after.arrays, values)


class ShowOpenerSearch(ISMCTSAgent):
    """The shipped search that shows the value with the most scoring cells (module doc)."""

    def show_before(self, view, action: int) -> int | None:
        if not view.team or action >= rules.PASS_ACTION:
            return None
        shows = view.show_actions()
        if not shows:
            return None
        left = view.hand.copy()
        left[rules.decode_action(action)[1] - 1] -= 1
        if self._shown and left[self._shown - 1] > 0:
            return None  # kept while held, as the shipped rule does
        values = [v for v in (a - rules.SHOW_BASE + 1 for a in shows) if left[v - 1] > 0]
        if not values:
            return None
        opened = openings(view, action, values)
        self._shown = max(values, key=lambda v: (opened[v], v))
        return rules.show_action(self._shown)


@register("show-opener")
class ShowOpenerAgent(SelfPlayAgent):
    """`selfplay` whose team searches show by `openings` (module doc)."""

    def _build(self, path):
        return ShowOpenerSearch(net=str(path), settings=self.settings)
