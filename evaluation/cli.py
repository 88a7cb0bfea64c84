"""Tournaments between 24/7 agents, with ratings and confidence intervals.

    python evaluate.py --agents random greedy ismcts:iterations=400 --games 200 --out results/demo
    python evaluate.py --config configs/eval_quick.yaml --workers 2
    python evaluate.py replay results/demo/games.jsonl --game 3 --step 10
    python evaluate.py ladder runs/NAME
    python evaluate.py exploit --target greedy --games 200 --out results/exploit-greedy
    python evaluate.py analyze results/demo --agent greedy
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys

from engine.extras import MissingExtra, command

DESCRIPTION = """\
Play a duplicate round-robin between agents and rate them.

Agents are spec strings: random, greedy, ismcts:iterations=400, pimc:determinizations=20,
checkpoint:runs/x/best.pt ... (unknown names, bad parameters and missing or unreadable
checkpoint files are reported before any game runs). A YAML --config holds the same
settings (keys = the long flag names with _ for -, e.g. save_games: true); flags given
on the command line override it.

Replay a saved game:  evaluate.py replay OUT/games.jsonl --game N [--step K]
Rebuild a self-play run's Elo ladder:  evaluate.py ladder runs/NAME [--plot-only]
Approximate exploitability of an agent:  evaluate.py exploit --target SPEC [--baseline SPEC]
The cost of each decision of saved games:  evaluate.py analyze OUT [--game N] [--agent LABEL | --seat N]
"""

EPILOG = """\
schedule:
  2 players: every pair of agents is a table. 3-4 players: every combination of distinct
  agents (K >= seats), or every multiset with at least two different agents (K < seats,
  e.g. 2 agents at 3 seats: A A B and A B B). --team: every pair, one agent per team.
  --one-vs-rest (2 agents): only the table of the first agent alone against the second.
  Duplicate deals: each deal is played at every table in every seating (cyclic rotations,
  so each agent gets each hand and seat; or --seating permutations), so --games is
  rounded up to whole duplicate sets. Game ids are deal-major and every agent is seeded
  per game from (seed, game id, seat): results do not depend on --workers (agents with a
  time budget are not deterministic).

statistics:
  Win rate counts a draw as half; with 3-4 players "A beats B" means A finished ahead of B.
  95% intervals: percentile bootstrap over deals (whole duplicate sets, the honest unit as
  their games are correlated); the Wilson interval (independent games) is also in
  results.json. Ratings: Bradley-Terry maximum likelihood on all pairwise results, on the
  Elo scale, anchored at random = 0 (else the first agent; --anchor mean for mean 0), with
  --prior-draws virtual draws per pair. 3-4 players also get openskill Plackett-Luce, and
  per-table scores: each agent's mean pairwise score at one mix of seats (e.g. "1x A + 3x B":
  A alone against three B seats), which the pairs' figure averages over all the mixes.
  Paired by deal (3+ agents): two agents' scores against a common opponent on the same
  deals, their difference and its deal-bootstrap interval (both scores share each
  resample, so the luck of the deals cancels): the test for an A/B change is
  --agents A B OPPONENT.
  --sprt elo0,elo1 (2 agents): GSPRT on per-deal scores (alpha = beta = 0.05 by default),
  stops once elo(first - second) <= elo0 or >= elo1 is accepted; the LLR is reported.

forfeits and time limits:
  A seat forfeits when its agent raises, returns an illegal move, takes longer than
  --move-time-limit on one move (default {move} among the
  agents), or longer than --game-time-limit on all its moves of one game (a chess clock
  per seat; default {game}). The game stops there: the forfeiting seat (its
  team) ranks last and loses to everyone; the others keep their order by minutes. A
  forfeit counts in the ratings and pairs like any loss; results.json lists each agent's
  forfeits by reason and games.csv gives the seat and reason of each. Games are played in
  worker processes (one even with --workers 1), so a move that never returns is stopped:
  its worker is killed a grace of 1 s + 10% after the limit and replaced. Limits are not
  part of a run's identity: a resume may change them (finished games are kept).

outputs (in --out):
  results.json  agents, games, ratings {{agent: {{value, ci95, ...}}}}, pairs {{"A vs B": ...}},
                tables (3-4 players) [{{seats, games, agents {{A: {{score, score_ci95, ...}}}}}}]
                paired [{{agents [A, B], opponent, scores, difference, difference_ci95}}]
  games.csv     one row per game: ids, deal seed, seats, scores, ranks, winner, forfeit,
                forfeit_reason (error, illegal, move_time_limit, game_time_limit, crash)
  games.jsonl   the journal (with deals and moves under --save-games)
  ratings.png, winrate.png, scores.png, config.yaml (the resolved config)
  Ctrl-C writes these outputs for the finished games and prints the command that resumes
  (the same one); a crash keeps the finished games too: rerun the same command to resume.
"""


def run_parser() -> argparse.ArgumentParser:
    """The flags of a tournament: the fields of `EvalConfig`, whose choices and defaults they show."""
    from evaluation.config import EXECUTORS, PLAYERS, SEATINGS, START_METHODS, EvalConfig

    d = EvalConfig()  # the defaults
    limits = time_limit_defaults()
    p = argparse.ArgumentParser(prog="evaluate.py", description=DESCRIPTION, epilog=EPILOG.format(**limits),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", metavar="FILE", help="YAML config (configs/eval_*.yaml); flags override it")
    p.add_argument("--agents", nargs="+", metavar="SPEC", help="agent specs (at least 2)")
    p.add_argument("--players", type=int, choices=PLAYERS, help=f"seats per game (default {d.players})")
    p.add_argument("--team", action=argparse.BooleanOptionalAction, default=None,
                   help="team variant, 4 players: one agent per team (seats 0+2 vs 1+3)")
    p.add_argument("--games", type=int, metavar="N",
                   help="games per table (per pair with 2 players), rounded up to whole duplicate sets "
                        f"(default {d.games})")
    p.add_argument("--one-vs-rest", action=argparse.BooleanOptionalAction, default=None,
                   help="2 agents: only the table where the first holds one seat (its team in the team "
                        "variant) and the second every other seat, e.g. A alone against three B")
    p.add_argument("--seed", type=int, metavar="S", help=f"master seed for deals and agents (default {d.seed})")
    p.add_argument("--workers", type=int, metavar="W", help=f"worker processes; 0 = all cores, 1 = serial (default {d.workers})")
    p.add_argument("--executor", choices=EXECUTORS,
                   help="where games run: this machine's worker processes or a Ray cluster (needs the ray "
                        f"extra; --workers 0 = every CPU of the cluster) (default {d.executor})")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="with --executor ray: a running cluster's address (ray start --head prints it; "
                        "'auto' = the one on this machine); default: start Ray on this machine")
    p.add_argument("--out", metavar="DIR", help="output directory; rerun with the same one to resume "
                                                "(default results/<players>p-<agents>-<hash>)")
    p.add_argument("--seating", choices=SEATINGS, help=f"seatings per deal for 3-4 players (default {d.seating})")
    p.add_argument("--sprt", metavar="ELO0,ELO1", help="sequential test for 2 agents: stop once decided")
    p.add_argument("--sprt-alpha", type=float, metavar="A", help=f"SPRT false positive rate (default {d.sprt_alpha})")
    p.add_argument("--sprt-beta", type=float, metavar="B", help=f"SPRT false negative rate (default {d.sprt_beta})")
    p.add_argument("--bootstrap", type=int, metavar="B", help=f"bootstrap resamples over deals (default {d.bootstrap})")
    p.add_argument("--anchor", metavar="AGENT", help="agent pinned to 0 Elo, or 'mean' (default random/first)")
    p.add_argument("--prior-draws", type=float, metavar="X", help=f"virtual draws per pair for ratings (default {d.prior_draws:g})")
    p.add_argument("--save-games", action=argparse.BooleanOptionalAction, default=None,
                   help="store each game's deal and moves in games.jsonl for replays")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=None,
                   help=f"write PNG plots (default {d.plots})")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"show a progress bar (default {d.progress})")
    p.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                   help="import a module or .py file first (e.g. one registering agents); repeatable "
                        "(config key: imports)")
    p.add_argument("--start-method", choices=START_METHODS,
                   help=f"multiprocessing start method (default {d.start_method})")
    p.add_argument("--move-time-limit", type=float, metavar="S",
                   help=f"seconds one move may take before the seat forfeits (default {limits['move']})")
    p.add_argument("--game-time-limit", type=float, metavar="S",
                   help=f"seconds one seat's moves may take over a game before it forfeits (default {limits['game']})")
    p.add_argument("--fresh", action="store_true", help="discard the games already in --out and start over")
    return p


def time_limit_defaults() -> dict[str, str]:
    """The time limits' defaults in words, from `evaluation.config` (where they are set)."""
    from evaluation.config import DEFAULT_MOVE_TIME_LIMIT, GAME_LIMIT_PER_MOVE_LIMIT, MOVE_LIMIT_PER_BUDGET

    return {"move": f"{DEFAULT_MOVE_TIME_LIMIT:g} s, or {MOVE_LIMIT_PER_BUDGET:g}x the largest time= budget",
            "game": f"{GAME_LIMIT_PER_MOVE_LIMIT:g}x the move limit"}


def replay_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evaluate.py replay",
                                description="Print a saved game: the move list with minutes per move and the board.")
    p.add_argument("file", help="games.jsonl of a run made with --save-games (or its directory)")
    p.add_argument("--game", type=int, default=0, metavar="N", help="game id (column 'game' of games.csv)")
    p.add_argument("--step", type=int, metavar="K", help="show the board after K moves (default: the end)")
    return p


def ladder_parser() -> argparse.ArgumentParser:
    from evaluation.exploit import Response

    p = argparse.ArgumentParser(prog="evaluate.py ladder",
                                description="Rebuild a self-play run's Elo ladder (ladder.json, ladder.png) from its "
                                            "ladder_games.jsonl, and print it. No games are played.")
    p.add_argument("run", help="the run directory (holding ladder_games.jsonl)")
    p.add_argument("--plot-only", action="store_true", help="only redraw ladder.png from ladder.json")
    p.add_argument("--exploit", type=int, metavar="G",
                   help="also rate the raw policy of generations by a best response's score against it, G games "
                        "each (writes exploitability.json; plays games)")
    p.add_argument("--exploit-generations", default="ends", metavar="WHICH",
                   help="with --exploit: 'ends' (first and last, default), 'all', or a list such as 0,5,11")
    p.add_argument("--br", metavar="PARAMS",
                   help=f"with --exploit: the best response's parameters (default {Response().spec()})")
    p.add_argument("--workers", type=int, default=0, metavar="W", help="with --exploit: worker processes")
    return p


def exploit_parser() -> argparse.ArgumentParser:
    """The flags of `ExploitConfig`, with its defaults."""
    from evaluation.config import PLAYERS
    from evaluation.exploit import ExploitConfig

    d = ExploitConfig(target="")  # the defaults
    p = argparse.ArgumentParser(
        prog="evaluate.py exploit",
        description="Approximate exploitability of an agent (a lower bound): the ISMCTS best response "
                    "br:target=SPEC plays one seat (one team) against the target in every other seat, on "
                    "duplicate deals; writes exploit.json and exploit.md in --out.")
    p.add_argument("--target", required=True, metavar="SPEC", help="the agent to exploit, e.g. greedy")
    p.add_argument("--players", type=int, choices=PLAYERS, default=d.players,
                   help=f"seats per game (default {d.players})")
    p.add_argument("--team", action="store_true", help="team variant (4 players): the response holds one team")
    p.add_argument("--br", metavar="PARAMS",
                   help=f"the best response's budget and parameters (default {d.br.spec()}; e.g. time=0.05)")
    p.add_argument("--baseline", metavar="SPEC",
                   help="the second responder, on the same deals: the paired difference is reported and the "
                        "lower bound is the better of the two (default: plain ismcts at the best response's "
                        "budget; 'none' for no second responder)")
    p.add_argument("--games", type=int, default=d.games, metavar="G",
                   help=f"games, whole duplicate sets (default {d.games})")
    p.add_argument("--seed", type=int, default=d.seed, metavar="S", help=f"master seed (default {d.seed})")
    p.add_argument("--workers", type=int, default=d.workers, metavar="W",
                   help=f"worker processes (0 = all cores; default {d.workers})")
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default results/exploit-...)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=d.progress, help="progress bars")
    return p


def analyze_parser() -> argparse.ArgumentParser:
    from evaluation.analysis import JUDGE, JUDGE_WITHOUT_NETWORK

    p = argparse.ArgumentParser(
        prog="evaluate.py analyze",
        description="The cost of each decision of saved games (a run made with --save-games, or one game "
                    "record): for every decision of the chosen seats a judge, a search stronger than the agents "
                    "it grades, chooses its move, an independent search of it values that move and the move "
                    "played, and the move played is charged the difference (evaluation/analysis.py). Writes "
                    "analysis.json, analysis.md and analysis.png (with --game N: analysis-game-N.*) in the run's "
                    "directory; every report begins with a line 'judge: SPEC'.")
    p.add_argument("path", help="a run directory or its games.jsonl (or a game record .json/.jsonl from play.py)")
    p.add_argument("--game", type=int, metavar="N", help="only game id N (column 'game' of games.csv)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--agent", metavar="LABEL", help="only the seats this agent played (its label in games.csv)")
    who.add_argument("--seat", type=int, metavar="N", help="only seat N (default: every seat)")
    p.add_argument("--reference", metavar="SPEC",
                   help="the judge: a search agent spec that can also play in evaluate.py --agents (default "
                        f"{JUDGE}, validated in docs/status.md; {JUDGE_WITHOUT_NETWORK} for 3 players, which "
                        "ship no network)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the judge's searches (default 0)")
    p.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True,
                   help="also charge the judge's own choice with a fresh seed, and say which players are not "
                        "clearly weaker than the judge (default on; off saves about a third of the time)")
    p.add_argument("--out", metavar="DIR", help="where to write the outputs (default: the run's directory)")
    p.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True, help="write the PNG (default on)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="a progress bar")
    return p


def analyze_main(args) -> int:
    from pathlib import Path

    import agents
    from evaluation.analysis import Judge, analyze_run, default_judge, format_analysis, write_analysis
    from evaluation.replay import check_record, load_games

    try:
        records = load_games(args.path, args.game, "analyse")
        if args.reference is not None:
            judge = Judge(agents.parse_agent(args.reference), args.seed)
        else:
            start, _ = check_record(records[0])
            judge = default_judge(start.num_players, start.team, args.seed)
        out = Path(args.out) if args.out else (Path(args.path) if Path(args.path).is_dir() else Path(args.path).parent)
        print(f"judge: {judge.spec}", flush=True)
        bar = None

        def progress(done: int, total: int) -> None:  # a bar once the games are checked and the work begins
            nonlocal bar
            if bar is None:
                from evaluation.progress import progress_bar

                bar = progress_bar(total=total, unit="decision", desc="analysing", dynamic_ncols=True)
            bar.update(done - bar.n)

        try:
            result = analyze_run(records, judge, args.agent, args.seat, args.floor,
                                 progress if args.progress else None)
        finally:
            if bar is not None:
                bar.close()
    except KeyboardInterrupt:
        print("\ninterrupted: nothing written", file=sys.stderr)
        return 130
    stem = "analysis" if args.game is None else f"analysis-game-{args.game}"
    paths = write_analysis(result, out, stem, plot=args.plots)
    print(format_analysis(result))
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (`python evaluate.py`, the console command `twentyfourseven-evaluate`);
    returns the exit code: 2 for a usage error (a ValueError) or a missing extra, 130 when interrupted."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except (ValueError, MissingExtra) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "analyze":
        return analyze_main(analyze_parser().parse_args(argv[1:]))
    if argv and argv[0] == "exploit":
        args = exploit_parser().parse_args(argv[1:])
        from evaluation.exploit import ExploitConfig, run_exploit

        out = args.out or f"results/exploit-{args.players}p{'-team' if args.team else ''}-{args.seed}"
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            cfg = ExploitConfig(target=args.target, players=args.players, team=args.team, br=_response(args.br),
                                baseline=args.baseline, games=args.games, seed=args.seed, workers=args.workers,
                                out=out, progress=args.progress)
            run_exploit(cfg)
        except KeyboardInterrupt:
            print(f"\ninterrupted: the finished games are kept in {out}; resume with: "
                  f"{resume_command(argv, None)}", flush=True)
            return 130
        return 0
    if argv and argv[0] == "ladder":
        args = ladder_parser().parse_args(argv[1:])
        from evaluation.ladder import format_ladder, rebuild_ladder

        print(format_ladder(rebuild_ladder(args.run, args.plot_only)))
        if args.exploit:
            from evaluation.exploit import exploit_generations

            which = args.exploit_generations
            if which not in ("ends", "all"):
                try:
                    which = [int(g) for g in which.split(",")]
                except ValueError:
                    raise ValueError(f"--exploit-generations takes ends, all or a list such as 0,5,11; "
                                     f"got {args.exploit_generations!r}") from None
            exploit_generations(args.run, which, args.exploit, _response(args.br), args.workers)
        return 0
    if argv and argv[0] == "replay":
        args = replay_parser().parse_args(argv[1:])
        from evaluation.replay import load_game, replay_text

        print(replay_text(load_game(args.file, args.game), args.step))
        return 0

    args = run_parser().parse_args(argv)
    from evaluation import EvalConfig, run_evaluation

    overrides = {k: v for k, v in vars(args).items() if k not in ("config", "fresh") and v is not None}
    cfg = EvalConfig.from_yaml(args.config) if args.config else EvalConfig()
    cfg = cfg.override(**overrides).validate()  # every spec and checkpoint, before anything runs
    signal.signal(signal.SIGTERM, _interrupt)  # a plain kill also leaves a clean journal
    signal.signal(signal.SIGINT, signal.default_int_handler)  # kill -INT too, where a shell ignored it
    try:
        run_evaluation(cfg, fresh=args.fresh)
    except KeyboardInterrupt as exc:
        done = getattr(exc, "results", {}).get("interrupted")
        what = (f"interrupted {done.split(';')[0]}: the results so far are written in {cfg.out}" if done
                else f"interrupted: the finished games are in {cfg.out}/games.jsonl")
        print(f"\n{what}; resume with: {resume_command(argv, cfg.out)}", flush=True)
        return 130
    return 0


def _response(text: str | None):
    """``--br``'s parameters typed (the command line's edge); not given: the best response's defaults."""
    from evaluation.exploit import Response

    return Response() if text is None else Response.parse(text)


def resume_command(argv: list[str], out: str | None) -> str:
    """The command that goes on with an interrupted run: the same one, with its --out
    (the default one named) and without --fresh (which would discard the games)."""
    args = [a for a in argv if a != "--fresh"]
    if out is not None and not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    return f"{command('evaluate')} " + shlex.join(args)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
