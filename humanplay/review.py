"""A game review for players: the person's three costliest moves, and the better move.

After a game (the terminal asks at the end; `play.py --load FILE --review`; the web page's
Review button), every decision of the person's seat is scored by the decision analysis
of `evaluation.analysis`: from what the person could see at that moment (the worlds are
sampled from their view, as a search would), each candidate move is played in the same
worlds, followed by the next replies, and valued by the self-play network's evaluator.
The review shows the three decisions that lost the most: the move played and the better
move, what each scored on the spot, and what the better one was worth (the value the
reference gives it over the move played, in game results, a win +1 and a loss -1, and in
minutes of lead after the replies).

Decisions where only one placement was legal, passes and team shows are not reviewed.
"""

from __future__ import annotations

from collections.abc import Callable

from engine import GameState, rules
from env import render, render_svg
from evaluation.analysis import Decision, Reference, analyze_moves, costliest, decision_steps
from evaluation.replay import check_record


REVIEW_MOVES = 3
BETTER_COLOUR = "#1a9a4a"
PLAYED_COLOUR = "#c0392b"


def review_reference(num_players: int, team: bool) -> Reference:
    """The default reference without the floor's extra work; where no self-play network is
    shipped for the game (3 players), rollouts to the end instead of its evaluator."""
    try:
        Reference.shipped_evaluator(num_players, team)
    except ValueError:
        return Reference(horizon=None)
    return Reference()


def review_steps(record: dict, seat: int) -> list[int]:
    """The steps (actions before) of the decisions of `seat` the review scores."""
    start, actions = check_record(record)
    return decision_steps(start, actions, [seat])


def analyze_steps(record: dict, seat: int, steps: list[int],
                  progress: Callable[[int, int], None] | None = None) -> list[Decision]:
    """The analysis of `seat`'s decisions at `steps` of a finished game's record."""
    start, actions = check_record(record)
    reference = review_reference(start.num_players, start.team)
    labels = [f"seat {s}" for s in range(start.num_players)]
    return analyze_moves(start, actions, reference, [seat], floor=False, progress=progress, steps=steps,
                         labels=labels)


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
    """The review of `seat` in a finished game: its `top` costliest decisions (costliest
    first), each with the move played and the better one, what each scored then, the
    value and minutes the better one was worth, and the board before the move (SVG, both
    moves marked: the better in green, the one played in red); with the decisions
    reviewed and their total loss."""
    moves = []
    for d in costliest([d for d in decisions if d.loss > 0], top):
        state = _state_at(record, d.step)
        points, why = _scored(state, d.played)
        better_points, better_why = _scored(state, d.best)
        marks = [(d.best, "better", BETTER_COLOUR), (d.played, "you", PLAYED_COLOUR)]
        moves.append({"step": d.step, "number": d.move_number, "played": d.played,
                      "move": rules.action_text(d.played), "points": points, "breakdown": why,
                      "better": d.best, "better_move": rules.action_text(d.best), "better_points": better_points,
                      "better_breakdown": better_why, "value": d.loss, "minutes": d.minutes_lost,
                      "svg": render_svg.board_svg(_view(state, seat), viewer=seat, caption=False, marks=marks)})
    return {"seat": seat, "decisions": len(decisions), "error": sum(d.loss for d in decisions), "moves": moves}


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
        return (f"review: none of your {review['decisions']} decision(s) lost anything against the reference: "
                "well played")
    lines = [f"review: your {len(review['moves'])} costliest move(s) of {review['decisions']} decision(s) "
             f"(value lost in all: {review['error']:.2f}; a win is +1, a loss -1)"]
    for k, m in enumerate(review["moves"], 1):
        lines += ["",
                  f"{k}. move {m['number']}: you played {m['move']} ({_points(m['points'], m['breakdown'])})",
                  f"   better: {m['better_move']} ({_points(m['better_points'], m['better_breakdown'])}), "
                  f"worth {m['value']:+.2f} in game result and {m['minutes']:+.0f} minutes of lead after the replies",
                  "   the board with the better move (marked *):"]
        after = _state_at(record, m["step"])
        after.step(m["better"])
        board = render.board_text(after, viewer=-1, names=names, legend=False)
        lines += ["   " + line for line in board.splitlines()]
    return "\n".join(lines)


def _points(points: int, breakdown: str) -> str:
    return f"+{points}: {breakdown}" if points else "no minutes"
