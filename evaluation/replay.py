"""Replaying a saved game: `python evaluate.py replay OUT/games.jsonl --game N [--step K]`.

Games are saved with their deal and moves when the run used ``--save-games``; the board
is `env.render.board_text`, the text board of the env and the terminal game.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine import GameState, rules
from env.render import board_text, breakdown_text, player_name


def read_records(path: str | Path) -> list[dict]:
    """Every game record in a games.jsonl (or an output directory holding one), or in a
    .json file (one record or a list). A last line that is not JSON, after good ones, is a
    record cut short by a killed run and is skipped, with a note on stderr that says so; any
    other bad line is an error.
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
                    print(f"note: {path}, line {n} is cut short (a run killed while writing it): that game is "
                          f"left out, the {len(records)} before it are read", file=sys.stderr, flush=True)
                    break
                raise ValueError(f"{path}, line {n}: not JSON ({exc.msg})") from None
    records = [r for r in records if isinstance(r, dict)]
    if not records:
        raise ValueError(f"{path} holds no game record")
    return records


def load_games(path: str | Path, game: int | None = None, purpose: str = "replay") -> list[dict]:
    """Every game record of a run directory or games.jsonl, or the one with id `game`,
    each with its deal and moves. Raises ValueError (a missing file, a game id not there,
    games saved without their moves, which `purpose` needs)."""
    records = read_records(path)
    if game is not None:
        ids = [r.get("game") for r in records]
        if game not in ids:
            known = [i for i in ids if isinstance(i, int)]
            span = f"{min(known)}..{max(known)}" if known else "none"
            raise ValueError(f"game {game} is not in {path} (games there: {span})")
        records = [records[ids.index(game)]]
    missing = [r.get("game") for r in records if "actions" not in r or "deal" not in r]
    if missing:
        raise ValueError(f"{len(missing)} game(s) in {path} were saved without their moves (game {missing[0]}, ...); "
                         f"rerun the tournament with --save-games to {purpose} games")
    return records


def check_record(record) -> tuple[GameState, list[int]]:
    """The start of a record's game and its actions, checked: the deal is valid and every
    action is legal in turn. Raises ValueError naming the problem."""
    if not isinstance(record, dict):
        raise ValueError(f"a game record must be a JSON object, got {type(record).__name__}")
    name = f"game {record['game']}" if "game" in record else "the game record"
    missing = [k for k in ("deal", "num_players", "actions") if k not in record]
    if missing:
        raise ValueError(f"{name} lacks {', '.join(missing)} (a tournament saves moves only with --save-games)")
    team = record.get("team", False)
    if not isinstance(team, bool):
        raise ValueError(f"{name}: 'team' must be true or false, got {team!r}")
    start = GameState.from_deal(record["deal"], record["num_players"], team)  # validates both
    actions = record["actions"]
    if not isinstance(actions, list):
        raise ValueError(f"{name}: 'actions' must be a list of action ids")
    state = start.clone()
    for n, action in enumerate(actions):
        if isinstance(action, bool) or not isinstance(action, int) or not state.is_legal(action):
            raise ValueError(f"{name}: action {n} ({action!r}) is not legal in that game")
        state.step(action)
    return start, [int(a) for a in actions]


def load_game(path: str | Path, game: int) -> dict:
    """The record of game id `game` from a games.jsonl (or an output directory), with its
    deal and moves."""
    return load_games(path, game)[0]


def replay_text(record: dict, step: int | None = None) -> str:
    """The game's header, the board after `step` moves (default: the end) and the move
    list with the minutes each move scored and why. A record of an unfinished game (a
    game saved mid-way, a forfeit) says so."""
    state = GameState.from_deal(record["deal"], record["num_players"], record["team"])
    actions = record["actions"]
    step = len(actions) if step is None else step
    if not 0 <= step <= len(actions):
        raise ValueError(f"--step must be in 0..{len(actions)}, got {step}")
    labels = record.get("labels") or record.get("seats") or [None] * record["num_players"]
    names = [str(a) if a else None for a in labels]
    lines = [f"game {record['game']}  deal {record.get('deal_index', '?')} (seed {record.get('deal_seed', '?')})  "
             + "  ".join(player_name(s, names) for s in range(record["num_players"])),
             "moves:"]
    board_at = state.clone() if step == 0 else None
    width = max(len(player_name(s, names)) for s in range(record["num_players"]))
    for n, action in enumerate(actions, 1):
        seat = state.current_player
        points = state.step(action)
        why = f"  {breakdown_text(state.last_breakdown, points)}" if action < rules.PASS_ACTION else ""
        mark = "  <- shown board" if n == step and step < len(actions) else ""
        lines.append(f"  {n:>3}. {player_name(seat, names):<{width}}  {rules.action_text(action):<12} {points:>+5}"
                     + why + mark)
        if n == step:
            board_at = state.clone()
    if state.is_over:
        end = f"final scores {state.scores.tolist()}  ranking {state.ranking().tolist()}"
    else:
        end = f"scores so far (game not finished) {state.scores.tolist()}"
    if record.get("forfeit") is not None:
        end += f"  (player {record['forfeit']} forfeited: {(record.get('error') or 'no reason saved').splitlines()[0]})"
    lines.append(end)
    title = "final board" if step == len(actions) and state.is_over else f"board after {step} move(s)"
    lines += ["", f"{title}:", board_text(board_at, names=names)]
    return "\n".join(lines)
