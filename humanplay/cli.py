"""Play 24/7 against the agents, in the terminal or in a browser.

    python play.py --opponents ismcts:time=1                  # terminal, 2 players
    python play.py --opponents greedy ismcts:time=1 --players 3 --seat 1
    python play.py --web --port 8000                          # http://127.0.0.1:8000
    python play.py --load played/game.jsonl                   # go on with (or replay) a saved game
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from engine.extras import MissingExtra, command, require

DESCRIPTION = """\
Play 24/7 against agents built from spec strings (greedy, ismcts:time=1, ismcts:net=PATH,...).
In the terminal, type moves as ROW COL VALUE or an action id; hint, undo, moves, help, quit.
quit (or the end of the game) saves the game as a one-game games.jsonl: it opens again with
--load, in the browser (Open record) and in `evaluate.py replay FILE --game 0`; a
tournament's games.jsonl (saved with --save-games) opens here too (--game N picks one).
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--opponents", nargs="+", metavar="SPEC", default=None,
                   help="agent spec for every other seat, or one per other seat (default greedy)")
    p.add_argument("--players", type=int, choices=(2, 3, 4), default=2, help="seats (default 2)")
    p.add_argument("--team", action="store_true", help="team variant (4 players: seats 0+2 vs 1+3)")
    p.add_argument("--seat", type=int, default=0, metavar="N", help="your seat, 0 moves first (default 0)")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="deal and agent seed (default random)")
    p.add_argument("--hint", default=None, metavar="SPEC",
                   help="the agent that gives hints (default ismcts:time=1)")
    p.add_argument("--load", metavar="RECORD", help="a saved game (.json or games.jsonl) to go on with or replay")
    p.add_argument("--game", type=int, default=None, metavar="N", help="with --load: the game id in a games.jsonl")
    p.add_argument("--replay", action="store_true", help="with --load: step through the game instead of playing on")
    p.add_argument("--review", action="store_true",
                   help="with --load, a finished game: your three costliest moves and the better ones "
                        "(your seat: the record's human seat, or --seat)")
    p.add_argument("--save", metavar="FILE", help="where quit saves the terminal game "
                                                  "(default played/game-<time>.jsonl)")
    p.add_argument("--web", action="store_true", help="serve the game to a browser instead")
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    p.add_argument("--save-dir", default="played", metavar="DIR", help="where the web app saves finished games")
    p.add_argument("--db", default=None, metavar="FILE",
                   help="the web app's database of every game, kept as played (default SAVE_DIR/games.sqlite3); "
                        "a restarted server goes on with its games")
    p.add_argument("--prune-after-days", type=float, default=30.0, metavar="DAYS",
                   help="with --web: finished games older than this leave the database, at the start "
                        "and every hour; unfinished games stay (0: keep every game; default 30)")
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="web app: worker processes for searching agents, hints and reviews (greedy and random "
                        "answer in the server itself), default 2")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from humanplay.session import DEFAULT_HINT, Session, load_record

    hint = args.hint or DEFAULT_HINT
    opponents = args.opponents or (None if args.load else ["greedy"])
    if args.opponents and len(args.opponents) > 1 and not _given("--players", argv):
        args.players = len(args.opponents) + 1  # one spec per other seat
    try:
        if args.team and args.players != 4:
            raise ValueError("--team needs --players 4")
        if args.review and not args.load:
            raise ValueError("--review needs --load RECORD (a finished game)")
        record = load_record(args.load, args.game) if args.load else None
        if args.web:
            return serve(args, opponents or ["greedy"], hint, record, argv)
        if record is not None:
            session = Session.from_record(record, opponents, args.seat if _given("--seat", argv) else None,
                                          args.seed, hint)
        else:
            session = Session.new(opponents, args.players, args.team, args.seat, args.seed, hint)
    except (ValueError, MissingExtra) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from humanplay import terminal

    if args.review:
        if not session.is_over:
            print("error: --review is for a finished game (--load a record of one)", file=sys.stderr)
            return 2
        print(terminal.review(session))
        return 0
    if args.replay or (session.is_over and record is not None):
        terminal.replay(session)
        return 0
    save = args.save or Path("played") / f"game-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    try:
        terminal.run(session, save)
    except KeyboardInterrupt:  # saved, and the command that continues printed
        return 130
    return 0


def _given(flag: str, argv) -> bool:
    argv = sys.argv[1:] if argv is None else argv
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def serve(args, opponents, hint, record, argv=None) -> int:
    import agents
    from humanplay.session import opponent_specs

    for module in ("starlette", "uvicorn", "httptools"):
        require(module, "the web game (--web)")
    from humanplay.web import Settings, bind, serve

    for spec in set(opponent_specs(opponents, args.players)) | {hint}:
        agents.check_spec(spec)
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be in 0..65535, got {args.port}")
    if not 1 <= args.workers <= 64:
        raise ValueError(f"--workers must be in 1..64, got {args.workers}")
    if not 0 <= args.prune_after_days < float("inf"):
        raise ValueError(f"--prune-after-days must be a number of days >= 0, got {args.prune_after_days}")
    settings = Settings(opponents=opponents, players=args.players, team=args.team, seat=args.seat,
                        seed=args.seed, hint=hint, save_dir=Path(args.save_dir), record=record,
                        db=Path(args.db) if args.db else None, workers=args.workers,
                        prune_after_days=args.prune_after_days)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:  # the port is taken, the address is not this machine's...
        raise ValueError(f"cannot serve on {args.host}:{args.port}: {exc}") from None
    try:  # it says "serving 24/7 on http://..." at once; the warm-up goes on in the background
        serve(settings, args.host, sock.getsockname()[1], sock=sock, say=lambda text: print(text, flush=True))
    except KeyboardInterrupt:  # uvicorn has shut down cleanly, then passes Ctrl-C on
        pass
    print(f"stopped: every game is kept in {settings.db_path} as played; serve them again with: {command('play')} "
          + shlex.join(sys.argv[1:] if argv is None else argv), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
