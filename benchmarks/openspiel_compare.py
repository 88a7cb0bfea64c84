"""Our ISMCTS against OpenSpiel's python ISMCTS on 24/7: speed on the same positions,
strength at equal simulations and at equal time per move.

    python benchmarks/openspiel_compare.py --games 10 --workers 2          # a quick look
    python benchmarks/openspiel_compare.py --games 1000 --workers 16        # the full figures

1. Speed: ``--positions`` positions (2 players, random play from fixed deals to turns 0,
   8, 16, ...). On each, our ``ismcts`` makes one move with ``--our-iterations`` and
   OpenSpiel's (``openspiel-ismcts``, via `env.openspiel`) with ``--os-simulations``;
   iterations per second = simulations run / seconds of ``act()`` (both after a warm-up
   move). Prints both rates, per position and overall, and their ratio.
2. Strength: two duplicate matches through evaluate.py's machinery
   (`evaluation.run_evaluation`: duplicate deals, both seatings, a 95% bootstrap interval
   over deals): ``ismcts:iterations=S`` vs ``openspiel-ismcts:simulations=S`` (equal
   simulations, ``--simulations``), and ``ismcts:time=T`` vs ``openspiel-ismcts:time=T``
   (equal time, ``--seconds`` per move). ``--games`` games each (rounded up to whole
   deals). Prints our win rate (draws half) with its interval, and the machine.
``--skip-speed`` / ``--skip-strength`` run one part. Results go to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents import make  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from engine import GameState  # noqa: E402
from engine.view import PlayerView  # noqa: E402


def positions(count: int, seed: int) -> list[GameState]:
    """2-player positions at turns 0, 8, 16, ... of random games (first legal moves
    shuffled by a seeded generator), cycling over deals."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        game = GameState.new(2, seed=seed + i)
        for _ in range((8 * i) % 32):
            if game.is_over:
                break
            legal = game.legal_actions()
            game.step(legal[int(rng.integers(len(legal)))])
        if game.is_over or len(game.legal_actions()) < 2:
            game = GameState.new(2, seed=seed + 1000 + i)
        out.append(game)
    return out


def timed_move(agent, game: GameState) -> float:
    agent.reset(game.current_player, game.num_players, game.team)
    start = time.perf_counter()
    agent.act(None, PlayerView(game, game.current_player))
    return time.perf_counter() - start


def speed(games: list[GameState], our_iterations: int, os_simulations: int) -> None:
    ours = make(f"ismcts:iterations={our_iterations}", seed=0)
    theirs = make(f"openspiel-ismcts:simulations={os_simulations}", seed=0)
    ours.warm_up()
    timed_move(theirs, games[0])  # imports and first-call costs out of the figures
    total = {"ours": 0.0, "theirs": 0.0}
    print(f"speed: ismcts:iterations={our_iterations} vs openspiel-ismcts:simulations={os_simulations}")
    for i, game in enumerate(games):
        t_ours, t_theirs = timed_move(ours, game), timed_move(theirs, game)
        total["ours"] += t_ours
        total["theirs"] += t_theirs
        print(f"  position {i} (turn {game.turn}, {len(game.legal_actions())} legal): "
              f"ours {our_iterations / t_ours:,.0f} it/s, OpenSpiel {os_simulations / t_theirs:,.1f} it/s")
    rate_ours = our_iterations * len(games) / total["ours"]
    rate_theirs = os_simulations * len(games) / total["theirs"]
    print(f"  overall: ours {rate_ours:,.0f} iterations/s, OpenSpiel python ISMCTS {rate_theirs:,.1f} "
          f"iterations/s: {rate_ours / rate_theirs:,.0f}x")


def match(ours: str, theirs: str, games: int, workers: int, seed: int, out: str) -> None:
    from evaluation import EvalConfig, run_evaluation

    cfg = EvalConfig(agents=[ours, theirs], games=games, workers=workers, seed=seed, out=out,
                     plots=False, progress=False)
    res = run_evaluation(cfg, echo=lambda *a, **k: None)
    pair = res["pairs"][f"{ours} vs {theirs}"]
    lo, hi = pair["win_rate_ci95"] or pair["win_rate_ci95_wilson"]
    print(f"  {ours} vs {theirs}: win rate {pair['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] over "
          f"{pair['games']} games (W/D/L {pair['wins']}/{pair['draws']}/{pair['losses']}), "
          f"margin {pair['mean_margin']:+.1f} min; {res['seconds']:.0f} s; results in {out}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--positions", type=int, default=8)
    ap.add_argument("--our-iterations", type=int, default=20000)
    ap.add_argument("--os-simulations", type=int, default=200)
    ap.add_argument("--games", type=int, default=1000, help="games per strength match")
    ap.add_argument("--simulations", type=int, default=200, help="equal-simulation match budget")
    ap.add_argument("--seconds", type=float, default=0.2, help="equal-time match budget per move")
    ap.add_argument("--workers", type=int, default=0, help="evaluate.py workers (0 = all cores)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/openspiel_compare")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-strength", action="store_true")
    args = ap.parse_args(argv)
    for name in ("positions", "our_iterations", "os_simulations", "games", "simulations"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be positive")
    if args.os_simulations < 2 or args.simulations < 2:
        ap.error("OpenSpiel's ISMCTS needs at least 2 simulations")
    if not args.seconds > 0:
        ap.error("--seconds must be positive")
    print(f"machine: {describe()}")
    if not args.skip_speed:
        speed(positions(args.positions, args.seed), args.our_iterations, args.os_simulations)
    if not args.skip_strength:
        print(f"strength ({args.games} games per match, duplicate deals, 95% bootstrap interval over deals):")
        sims, secs = args.simulations, args.seconds
        match(f"ismcts:iterations={sims}", f"openspiel-ismcts:simulations={sims}", args.games, args.workers,
              args.seed, os.path.join(args.out, f"sims{sims}-g{args.games}"))
        match(f"ismcts:time={secs:g}", f"openspiel-ismcts:time={secs:g}", args.games, args.workers,
              args.seed, os.path.join(args.out, f"time{secs:g}-g{args.games}"))


if __name__ == "__main__":
    main()
