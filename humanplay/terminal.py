"""The terminal game: `python play.py --opponents ismcts:time=1`.

Everything shown is read from the person's `PlayerView`: the board (tile values, Double
Time cells, Time Out stones, the last move), the person's hand, every seat's minutes and
tiles left, and each move with its score breakdown. Input and output go through two
callables, so a test can script a whole game.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine import rules
from env import render

from .session import Move, Session, save_record

# what the first hint waits on an empty numba cache (benchmarks/cold_start.py, the terminal's
# first hint: 24-26 s on 2 quiet cores of machine A, 2026-12-06)
HINT_COLD_SECONDS = 25

HELP = """\
moves:  ROW COL VALUE (e.g. "3 4 7"), an action id (e.g. 253), "pass" when you cannot place,
        "show V" (team variant: show a tile value to your partner)
other:  hint (what the hint agent would play and why), undo (take back your last move and
        the replies), moves (your legal moves), board, help, quit (saves the game);
        after the game: review (your three costliest moves and the better ones)"""

def names(session: Session) -> list[str]:
    """Each seat's label on the board: 'you', 'partner, <agent>' or the agent's spec."""
    out = []
    for s, label in enumerate(session.labels):
        if s == session.seat:
            out.append("you")
        elif session.team and s == rules.partner(session.seat):
            out.append(f"partner, {label}")
        else:
            out.append(label)
    return out


def board_text(view, session: Session) -> str:
    """The board as the person sees it (`env.render.board_text`, the text board of the
    env and of replays), with the bag in the status line."""
    return render.board_text(view, names=names(session))


def move_line(move: Move, session: Session) -> str:
    who = render.player_name(move.seat, names(session))
    seen = move.public(session.seat, session.team)
    if move.action >= rules.PASS_ACTION:
        return f"{who}: {seen['move']}"
    return f"{who}: {seen['move']}  +{move.points}  ({move.explanation})"


def parse_move(text: str, session: Session) -> int:
    """An action id from 'row col value', 'pass', 'show V' or an id; ValueError with a
    one-line reason otherwise (including an illegal move)."""
    words = text.split()
    try:
        numbers = [int(w) for w in words] if words and words[0] not in ("pass", "show") else None
    except ValueError:
        raise ValueError(f"unknown command {text!r} (type help)") from None
    if words == ["pass"]:
        action = rules.PASS_ACTION
    elif len(words) == 2 and words[0] == "show" and words[1].isdigit():
        value = int(words[1])
        if not 1 <= value <= rules.MAX_VALUE:
            raise ValueError(f"a tile value is 1..{rules.MAX_VALUE}, got {value}")
        action = rules.show_action(value)
    elif numbers is not None and len(numbers) == 3:
        row, col, value = numbers
        if not (0 <= row < rules.BOARD_SIZE and 0 <= col < rules.BOARD_SIZE):
            raise ValueError(f"row and column are 0..{rules.BOARD_SIZE - 1}, got ({row},{col})")
        if not 1 <= value <= rules.MAX_VALUE:
            raise ValueError(f"a tile value is 1..{rules.MAX_VALUE}, got {value}")
        action = rules.action_id(rules.cell_of(row, col), value)
    elif numbers is not None and len(numbers) == 1:
        action = numbers[0]
    else:
        raise ValueError(f"cannot read {text!r}: type ROW COL VALUE, an action id, or help")
    if action not in session.legal_actions():
        raise ValueError(_why_illegal(action, session))
    return action


def _why_illegal(action: int, session: Session) -> str:
    if not 0 <= action < rules.num_actions(session.team):
        return f"action {action} does not exist (ids are 0..{rules.num_actions(session.team) - 1})"
    view = session.view
    if action == rules.PASS_ACTION:
        return "you may pass only when no tile of yours fits anywhere"
    if action >= rules.SHOW_BASE:
        return f"you cannot show {action - rules.SHOW_BASE + 1} now (team variant, a tile you hold, once a turn)"
    cell, value = rules.decode_action(action)
    row, col = divmod(cell, rules.BOARD_SIZE)
    if view.board[row, col] or cell in view.timeout_cells:
        return f"({row},{col}) is taken"
    cap = int(view.capacities[row, col])
    if cap == 0:
        return f"({row},{col}) does not touch a tile"
    if not view.hand[value - 1]:
        return f"you have no {value}"
    return f"a {value} at ({row},{col}) would make a line over 24 (at most {cap} fits there)"


def hint_text(hint: dict) -> str:
    lines = [f"hint ({hint['agent']}): play {hint['move']}"]
    for row in hint["moves"]:
        why = [f"{row['share']:.0%} of visits, mean reward {row['value']:+.2f}"] if row["share"] is not None else []
        why.append(f"scores {row['breakdown']}" if row["points"] else "scores nothing now")
        lines.append(f"  {row['move']:<12} " + "; ".join(why))
    return "\n".join(lines)


def legal_text(session: Session) -> str:
    legal = session.legal_actions()
    if legal == [rules.PASS_ACTION]:
        return "no tile of yours fits anywhere: type pass"
    by_value: dict[int, list[str]] = {}
    for action in legal:
        if action < rules.PASS_ACTION:
            cell, value = rules.decode_action(action)
            by_value.setdefault(value, []).append(f"({cell // rules.BOARD_SIZE},{cell % rules.BOARD_SIZE})")
    lines = [f"  {v}: " + " ".join(cells) for v, cells in sorted(by_value.items())]
    shows = [rules.action_text(a) for a in legal if a >= rules.SHOW_BASE]
    if shows:
        lines.append("  " + ", ".join(shows))
    return "\n".join(lines)


def final_text(session: Session) -> str:
    view = session.view
    places = session.ranking()
    order = sorted(range(view.num_players), key=lambda s: places[s])
    parts = [f"{places[s] + 1}. {render.player_name(s, names(session))} {int(view.scores[s])} min"
             for s in order]
    text = "game over: " + ", ".join(parts)
    if session.team:
        scores = view.scores
        text += f"  (teams 0+2: {int(scores[0] + scores[2])}, 1+3: {int(scores[1] + scores[3])})"
    return text


def run(session: Session, save_path: str | Path, read: Callable[[str], str] | None = None,
        write: Callable[[str], None] = print) -> dict:
    """Play `session` through `read` (default `input`) and `write` until the end, quit or
    Ctrl-C; save the record to `save_path` then. Returns the record; after Ctrl-C, raises
    KeyboardInterrupt once the game is saved (play.py exits 130)."""
    read = read or input
    session.compile_ahead()
    write(f"24/7 against {', '.join(l for l in session.labels if l != 'human')}; you are player {session.seat}. "
          "Type help for commands.")
    for move in session.moves:
        write(move_line(move, session))
    interrupted = False
    try:
        while not session.is_over:
            write("")
            write(board_text(session.view, session))
            try:
                text = read("your move> ").strip().lower()
            except EOFError:
                text = "quit"
            if not _command(text, session, save_path, write):
                break
    except KeyboardInterrupt:  # Ctrl-C: as quit (the session is whole between its moves)
        write("\ninterrupted")
        interrupted = True
    if session.is_over:
        write(board_text(session.view, session))
        write(final_text(session))
    record = session.record()
    path = save_record(record, save_path)
    write(f"game saved to {path} (replay: python evaluate.py replay {path} --game 0; "
          f"continue: python play.py --load {path})")
    if session.is_over and not interrupted:
        write("type review for a review of your three costliest moves (a few seconds), or press enter to leave")
        try:
            text = read("review? ").strip().lower()
        except EOFError:
            text = ""
        if text in ("review", "r", "y", "yes"):
            write(review(session))
    if interrupted:
        raise KeyboardInterrupt
    return record


def review(session: Session, progress: bool = True) -> str:
    """The review of the person's moves in a finished game (`humanplay.review`), with a
    progress bar on stderr while the decisions are analysed."""
    from humanplay.review import review_game, review_text, review_steps

    record = session.record()
    total = len(review_steps(record, session.seat))
    bar = None
    if progress and total:
        from evaluation.progress import progress_bar

        bar = progress_bar(total=total, desc="reviewing your moves", unit="move", dynamic_ncols=True)
    try:
        result = review_game(record, session.seat, None if bar is None else lambda done, _: bar.update(done - bar.n))
    finally:
        if bar is not None:
            bar.close()
    return review_text(result, record, names(session))


def _command(text: str, session: Session, save_path, write) -> bool:
    """Run one line of input; False to stop."""
    if text in ("quit", "q", "exit"):
        return False
    if text in ("help", "?", ""):
        write(HELP)
    elif text == "board":
        pass  # shown again by the loop
    elif text == "moves":
        write(legal_text(session))
    elif text == "hint":
        if session.compiling:
            write(f"the hint's search is compiling (first use only; cached for later runs): about "
                  f"{HINT_COLD_SECONDS} s on 2 cores, more on a busy machine ...")
        write(hint_text(session.hint()))
    elif text == "review":
        write("a review is for a finished game: it comes at the end")
    elif text == "undo":
        try:
            write(f"took back {session.undo()} move(s)")
        except ValueError as exc:
            write(str(exc))
    else:
        try:
            action = parse_move(text, session)
        except ValueError as exc:
            write(f"not played: {exc}")
            return True
        for move in session.play(action):
            write(move_line(move, session))
    return True


def replay(session: Session, read: Callable[[str], str] | None = None, write: Callable[[str], None] = print) -> None:
    """Step through a finished game from the person's seat: enter = next, b = back,
    a number = go to that move, q = quit."""
    read = read or input
    step, last = 0, len(session.actions)
    while True:
        write("")
        if step:
            write(f"move {step}/{last}: " + move_line(session.moves[step - 1], session))
        else:
            write(f"start (0/{last} moves)")
        write(board_text(session.view_at(step), session))
        try:
            text = read("replay [enter=next, b=back, N=go to move N, q=quit]> ").strip().lower()
        except EOFError:
            return
        if text in ("q", "quit"):
            return
        if text == "b":
            step = max(step - 1, 0)
        elif text.isdigit():
            step = min(int(text), last)
        elif text == "":
            if step == last:
                write(final_text(session) if session.is_over else "end of the record (game not finished)")
                return
            step += 1
        else:
            write(f"cannot read {text!r}")
