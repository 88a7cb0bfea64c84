"""Issue 61 item 1: luck-adjusted scores, the result of a game minus what chance (and known
randomness) gave.
RESULTS.md: "2026-12-06, 14:40-15:30 UTC" (luck-adjusted scores, the go/no-go)
Verdict: stop (1.07x at best against the bar of 1.3x; research/luck_gonogo.py measures it).

A game's pairwise score (1 if side s finished ahead of side t, 0.5 level, 0 behind:
`evaluation.stats.Pairwise`) mixes skill with luck: the tiles drawn, and the moves of
agents that choose at random. After the game, with the whole deal known, every such
event e contributes a *correction*

    c_e = W(after e) - E[ W(after e') ]      (the mean over e's possible outcomes e')

where W is a value estimate of the full state (a matrix, W[s, t] = the expected pairwise
score of s against t). The adjusted score is ``score - sum of c_e``. Each c_e has mean
zero whatever W is (its outcome is drawn from exactly the distribution averaged over),
so the adjusted score is an unbiased estimate of the same expectation as the raw one;
the better W predicts the result, the more of the noise it removes. This is AIVAT
(Burch et al., AAAI 2018) for this game:

* **Chance events**: each tile drawn from the bag. Given everything that happened, the
  bag is a uniform shuffle of the tiles not yet seen, so the drawn value is v with
  probability (copies of v left) / (tiles left).
* **The opening deal** needs no term in a duplicate tournament: every seating of a deal
  starts from the same position, and over a duplicate set (rotations of a table) the
  pairwise values of that position sum to a constant, so its correction would cancel.
* **Decisions** of agents whose move distribution is given (`game_corrections`'
  `distributions`) contribute ``W(after the move) - sum_a p(a) W(after a)`` (0 for a
  deterministic agent). A search agent does not know its distribution; moves sampled
  from it (the same search re-run with other seeds) estimate it without bias, at one
  search per move per re-run (research/luck_gonogo.py --reruns).

W is the shipped network's fast evaluator read with full knowledge of the state
(`agents.networks.evaluator`: every seat's value), turned into pairwise scores by a logistic
of the value difference (`EvaluatorValue`). Each move's draw is first averaged over
(``Wbar``), so a decision's term and its draw's term do not double count:
decision term ``Wbar(h, a) - sum p(a') Wbar(h, a')``, draw term ``W(h, a, v) - Wbar(h, a)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from engine import GameState, rules
from engine.layout import BAG_POS, DEAL

ValueFn = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (grid, info) -> W (sides, sides)


def num_sides(num_players: int, team: bool) -> int:
    return 2 if team else num_players


def outcome_matrix(places: Sequence[int], team: bool) -> np.ndarray:
    """W of a finished game from its places (0 = first): 1 ahead, 0.5 level, 0 behind."""
    p = np.asarray(places[:2] if team else places, dtype=float)
    return 0.5 * (1.0 + np.sign(p[None, :] - p[:, None]))


def _places(state: GameState) -> list[int]:
    return [int(x) for x in state.ranking()]


class EvaluatorValue:
    """W from a packed fast evaluator (`agents.networks.evaluator`, one value per seat, zero-sum)
    read on the full state: W[s, t] = sigmoid(scale * (v_s - v_t)) (teams: the two teams'
    values). A finished game gets its exact outcome."""

    def __init__(self, num_players: int, team: bool = False, scale: float = 4.0, path=None):
        from agents.networks import load_net
        from agents.search.selfplay import shipped_network

        net = load_net(str(path or shipped_network(num_players, team)), "cpu")
        if net.evaluator is None:
            raise ValueError(f"the network {path} has no fast evaluator to score positions with")
        self.packed = net.evaluator.packed()
        self.team = bool(team)
        self.sides = num_sides(num_players, team)
        self.scale = float(scale)
        from agents.networks import evaluator

        self._evaluate = evaluator.evaluate

    def values(self, grid: np.ndarray, info: np.ndarray) -> np.ndarray:
        """Each side's raw evaluator value (team: seats 0 and 1 stand for the teams)."""
        v = self._evaluate(grid, info, self.packed)
        return v[: self.sides]

    def __call__(self, state: GameState) -> np.ndarray:
        if state.is_over:
            return outcome_matrix(_places(state), self.team)
        grid, info = state.arrays
        v = self.values(grid, info)
        return 1.0 / (1.0 + np.exp(-self.scale * (v[:, None] - v[None, :])))


# --- one game ---------------------------------------------------------------------------
def after(state: GameState, action: int, draw: int | None = None) -> GameState:
    """The state after `action`, with the tile drawn (if the move draws one) forced to value
    `draw` by swapping it to the front of the bag (None: the bag's own next tile)."""
    out = state.clone()
    if draw is not None:
        _, info = out.arrays
        pos = int(info[BAG_POS])
        bag = info[DEAL + pos: DEAL + rules.NUM_TILES]
        j = int(np.flatnonzero(bag == draw)[0])
        bag[0], bag[j] = bag[j], bag[0]
    out.step(int(action))
    return out


def draws_after(state: GameState, action: int) -> list[tuple[int, float]]:
    """(value, probability) of the tile `action` makes its mover draw; [] if it draws none."""
    if action >= rules.PASS_ACTION or state.bag_size == 0:
        return []
    values, counts = np.unique(state.bag, return_counts=True)
    return [(int(v), c / counts.sum()) for v, c in zip(values, counts)]


def expected_after(state: GameState, action: int, value: Callable) -> np.ndarray:
    """Wbar: W after `action`, averaged over the tile it draws (a value that can average
    over the draw itself does so: `value.expected_after`)."""
    if hasattr(value, "expected_after"):
        return value.expected_after(state, action)
    draws = draws_after(state, action)
    if not draws:
        return value(after(state, action))
    return sum(p * value(after(state, action, v)) for v, p in draws)


@dataclass
class Corrections:
    """The summed corrections of one game, per kind, as (sides, sides) matrices."""

    draws: np.ndarray
    decisions: np.ndarray
    events: int = 0  # chance events seen
    decisions_corrected: int = 0

    @property
    def total(self) -> np.ndarray:
        return self.draws + self.decisions


def game_corrections(deal: Sequence[int], actions: Sequence[int], num_players: int, team: bool,
                     value: Callable, distributions: Sequence[Callable | None] | None = None,
                     on_event: Callable | None = None) -> Corrections:
    """Replay one game and sum its corrections. `value(state) -> W`; `distributions[seat]`
    (optional) maps (state, seat) to the seat's move distribution [(action, p), ...], or
    to moves sampled from it independently of the game ([(a_k, 1/K)]: the same search
    re-run with other seeds), or None where it is unknown (no decision term).
    `on_event(kind, state, term)` (optional) sees every term ("draw" or "decision")."""
    k = num_sides(num_players, team)
    out = Corrections(np.zeros((k, k)), np.zeros((k, k)))
    state = GameState.from_deal(list(deal), num_players, team)
    for action in actions:
        action = int(action)
        seat = state.current_player
        dist = distributions[seat](state, seat) if distributions and distributions[seat] else None
        draws = draws_after(state, action)
        if dist:
            wbar = {a: expected_after(state, a, value) for a in {action, *(a for a, _ in dist)}}
            term = wbar[action] - sum(p * wbar[a] for a, p in dist)
            out.decisions += term
            if on_event:
                on_event("decision", state, term)
            out.decisions_corrected += 1
            played = wbar[action]
        elif draws:
            played = expected_after(state, action, value)
        nxt = after(state, action)
        if draws:
            term = value(nxt) - played
            out.draws += term
            if on_event:
                on_event("draw", state, term)
            out.events += 1
        state = nxt
    return out
