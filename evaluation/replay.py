"""Replaying a saved game: `python evaluate.py replay OUT/games.jsonl --game N [--step K]`.

Games are saved with their deal and moves when the run used ``--save-games``; the
board comes from env.render when it is there, else from a minimal text fallback.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine import GameState, rules


def read_records(path: str | Path) -> list[dict]:
    """Every game record in a games.jsonl (or an output directory holding one), or in a
    .json file (one record or a list). A last line that is not JSON, after good ones, is a
    record cut short by a killed run and is skipped; any other bad line is an error.
    Raises ValueError naming the problem."""
    path = Path(path)
    if path.is_dir():
        path = path / "games.jsonl"
    if not path.is_file():
        raise ValueError(f"no such game record file: {path}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read game record {path}: {exc}") from exc
    try:
        whole = json.loads(text)
        records = whole if isinstance(whole, list) else [whole]
    except json.JSONDecodeError:
        records = []
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        for k, (n, line) in enumerate(lines):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if k == len(lines) - 1 and records:
                    break
                raise ValueError(f"{path}, line {n}: not JSON ({exc.msg})") from None
    records = [r for r in records if isinstance(r, dict)]
    if not records:
        raise ValueError(f"{path} holds no game record")
    return records


def load_game(path: str | Path, game: int) -> dict:
    """The record of game id `game` from a games.jsonl (or an output directory), with its
    deal and moves."""
    records = read_records(path)
    for rec in records:
        if rec.get("game") == game:
            if "actions" not in rec or "deal" not in rec:
                raise ValueError(f"game {game} in {path} was saved without its moves; "
                                 "rerun the tournament with --save-games to replay games")
            return rec
    ids = [r["game"] for r in records if isinstance(r.get("game"), int)]
    span = f"{min(ids)}..{max(ids)}" if ids else "none"
    raise ValueError(f"game {game} is not in {path} (games there: {span})")


def render_board(state: GameState, viewer: int | None = None) -> str:
    """env.render's text board (with the hand of the seat to move), else a fallback."""
    try:
        from env.render import ansi
    except ImportError:
        return _fallback_render(state)
    return ansi(state, viewer=viewer)


def _fallback_render(state: GameState) -> str:
    board, timeout = state.board, set(state.timeout_cells)
    rows = []
    for r in range(rules.BOARD_SIZE):
        cells = []
        for c in range(rules.BOARD_SIZE):
            cell = rules.cell_of(r, c)
            v = int(board[r, c])
            cells.append(f"{v:>3}" if v else "  #" if cell in timeout else
                         " 2x" if cell in rules.DOUBLE_TIME_CELLS else "  .")
        rows.append("".join(cells))
    rows.append("scores: " + " ".join(str(int(s)) for s in state.scores))
    return "\n".join(rows)


def describe_move(action: int) -> str:
    if action == rules.PASS_ACTION:
        return "pass"
    if action >= rules.SHOW_BASE:
        return f"shows {action - rules.SHOW_BASE + 1} to partner"
    cell, value = rules.decode_action(action)
    return f"{value} at ({cell // rules.BOARD_SIZE},{cell % rules.BOARD_SIZE})"


def replay_text(record: dict, step: int | None = None) -> str:
    """The game's header, the board after `step` moves (default: the end) and the move
    list with the minutes each move scored."""
    state = GameState.from_deal(record["deal"], record["num_players"], record["team"])
    actions = record["actions"]
    step = len(actions) if step is None else step
    if not 0 <= step <= len(actions):
        raise ValueError(f"--step must be in 0..{len(actions)}, got {step}")
    labels = record.get("labels") or record.get("seats") or [f"seat{s}" for s in range(record["num_players"])]
    lines = [f"game {record['game']}  deal {record.get('deal_index', '?')} (seed {record.get('deal_seed', '?')})  "
             + "  ".join(f"seat {s}: {a}" for s, a in enumerate(labels)),
             "moves:"]
    board_at = state.clone() if step == 0 else None
    width = max(len(str(a)) for a in labels)
    for n, action in enumerate(actions, 1):
        seat = state.current_player
        points = state.step(action)
        combos = ", ".join(f"{c.kind}{'' if c.axis is None else ' ' + c.axis} {c.minutes}"
                           for c in state.last_breakdown)
        mark = "  <- shown board" if n == step and step < len(actions) else ""
        lines.append(f"  {n:>3}. seat {seat} {labels[seat]:<{width}}  {describe_move(action):<12} {points:>+5}"
                     + (f"  [{combos}]" if combos else "") + mark)
        if n == step:
            board_at = state.clone()
    end = f"final scores {record['scores']}  ranking {record['ranking']}"
    if record.get("forfeit") is not None:
        end += f"  (seat {record['forfeit']} forfeited: {(record.get('error') or '').splitlines()[0]})"
    lines.append(end)
    title = "final board" if step == len(actions) else f"board after {step} move(s)"
    lines += ["", f"{title}:", render_board(board_at)]
    return "\n".join(lines)
