"""A game review for players: the person's three costliest moves, and the better move.

After a game (the terminal asks at the end; `play.py --load FILE --review`; the web page's
Review button), every decision of the person's seat is graded by the judge of
`evaluation.analysis` (`default_judge`: the shipped search at 8 times its budget, a player
that beats the shipped agent): from what the person could see at that moment, the judge
chooses its move, and an independent search of it values that move and the one played.
The review shows the three decisions that lost the most: the move played and the judge's,
what each scored on the spot, and what the move played gave away, as a share of a win
(from a loss to a win is the whole of it).

Decisions where only one placement was legal, passes and team shows are not reviewed.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import GameState, rules
from env import render, render_svg
from evaluation.analysis import (
    Decision, Judge, Tools, analyze_moves, costliest, decision_steps, default_judge, win_share,
)
from evaluation.replay import check_record


REVIEW_MOVES = 3
BETTER_COLOUR = "#1a9a4a"
PLAYED_COLOUR = "#c0392b"
JUDGE_STRENGTH = {  # what the judge scored as a player, with its command (docs/status.md, "Error per game")
    "selfplay:iterations=28000": "it scores 0.567 [0.539, 0.596] against the shipped AI, selfplay:time=0.01, "
                                 "over 1,000 games",
}
_TOOLS: dict[tuple[int, bool], tuple[Judge, Tools]] = {}  # one judge's agents per variant, built once a process


def judge_for(num_players: int, team: bool) -> tuple[Judge, Tools]:
    """The review's judge for the variant and its agents, built once per process (the
    network is loaded once, however many decisions are reviewed)."""
    key = (num_players, bool(team))
    if key not in _TOOLS:
        judge = default_judge(num_players, team)
        _TOOLS[key] = judge, judge.tools(num_players, team)
    return _TOOLS[key]


def judge_line(num_players: int, team: bool) -> str:
    """The judge, named, and how strong it is, in a sentence for the player."""
    spec = default_judge(num_players, team).spec
    strength = JUDGE_STRENGTH.get(spec, "its strength in this variant has not been measured")
    return f"judge: {spec} ({strength})"


def review_steps(record: dict, seat: int) -> list[int]:
    """The steps (actions before) of the decisions of `seat` the review scores."""
    start, actions = check_record(record)
    return decision_steps(start, actions, [seat])


def analyze_steps(record: dict, seat: int, steps: list[int],
                  progress: Callable[[int, int], None] | None = None) -> list[Decision]:
    """The analysis of `seat`'s decisions at `steps` of a finished game's record."""
    start, actions = check_record(record)
    judge, tools = judge_for(start.num_players, start.team)
    labels = [f"seat {s}" for s in range(start.num_players)]
    return analyze_moves(start, actions, judge, [seat], floor=False, progress=progress, steps=steps,
                         labels=labels, tools=tools)


def _state_at(record: dict, step: int) -> GameState:
    start, actions = check_record(record)
    for action in actions[:step]:
        start.step(action)
    return start


def _scored(state: GameState, action: int) -> tuple[int, str]:
    """(minutes, breakdown text) that `action` scores in `state` (a copy is played)."""
    after = state.clone()
    points = after.step(action)
    return points, render.breakdown_text(after.last_breakdown, points)


def build_review(record: dict, seat: int, decisions: list[Decision], top: int = REVIEW_MOVES) -> dict:
    """The review of `seat` in a finished game: the judge (`judge_line`), its `top`
    costliest decisions (costliest first), each with the move played and the judge's, what
    each scored then, the share of a win the move played gave away, and the board before
    the move (`render_svg.board_data`, both moves marked: the judge's in green, the one
    played in red; the page draws it); with
    the decisions reviewed and the share of a win given away in all."""
    moves = []
    for d in costliest([d for d in decisions if d.loss > 0], top):
        state = _state_at(record, d.step)
        points, why = _scored(state, d.played)
        better_points, better_why = _scored(state, d.best)
        marks = [(d.best, "better", BETTER_COLOUR), (d.played, "you", PLAYED_COLOUR)]
        moves.append({"step": d.step, "number": d.move_number, "played": d.played,
                      "move": rules.action_text(d.played), "points": points, "breakdown": why,
                      "better": d.best, "better_move": rules.action_text(d.best), "better_points": better_points,
                      "better_breakdown": better_why, "value": d.loss, "share": win_share(d.loss),
                      "board": render_svg.board_data(_view(state, seat), marks)})
    error = sum(d.loss for d in decisions)
    state = _state_at(record, 0)
    return {"seat": seat, "decisions": len(decisions), "error": error, "share": win_share(error),
            "judge": judge_line(state.num_players, state.team), "moves": moves}


def _view(state: GameState, seat: int):
    from engine.view import PlayerView

    return PlayerView(state, seat)


def review_game(record: dict, seat: int, progress: Callable[[int, int], None] | None = None,
                top: int = REVIEW_MOVES) -> dict:
    """Analyse every decision of `seat` in a finished game's record and build its review."""
    if not _state_at(record, len(record["actions"])).is_over:
        raise ValueError("a review is for a finished game")
    decisions = analyze_steps(record, seat, review_steps(record, seat), progress)
    return build_review(record, seat, decisions, top)


def review_text(review: dict, record: dict, names=None) -> str:
    """The review for the terminal: each costly move, and the board with the better move
    played (marked as the last move)."""
    if not review["moves"]:
        return (f"review: none of your {review['decisions']} decision(s) gave anything away against the judge: "
                f"well played\n{review['judge']}")
    lines = [f"review: your {len(review['moves'])} costliest move(s) of {review['decisions']} decision(s); "
             f"in all your moves gave away {_total(review['share'])} against the judge's",
             review["judge"]]
    for k, m in enumerate(review["moves"], 1):
        lines += ["",
                  f"{k}. move {m['number']}: you played {m['move']} ({_points(m['points'], m['breakdown'])})",
                  f"   the judge plays {m['better_move']} ({_points(m['better_points'], m['better_breakdown'])}); "
                  f"yours gave away about {_share(m['share'])} of a win",
                  "   the board with the judge's move (marked *):"]
        after = _state_at(record, m["step"])
        after.step(m["better"])
        board = render.board_text(after, viewer=-1, names=names, legend=False)
        lines += ["   " + line for line in board.splitlines()]
    return "\n".join(lines)


def _points(points: int, breakdown: str) -> str:
    return f"+{points}: {breakdown}" if points else "no minutes"


def _share(share: float) -> str:
    """A share of a win in words: a percentage, at least 1%."""
    return f"{max(round(100 * share), 1)}%"


def _total(share: float) -> str:
    """The share of a win a whole game's moves gave away, in words (the sum of unclipped
    losses can be 0 or less: then no more than the judge's own noise)."""
    return f"about {_share(share)} of a win" if share >= 0.005 else "no measurable share of a win"
