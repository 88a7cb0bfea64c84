"""Issue 62, lever 1 (time where the search is unsure), the offline go/no-go: does a
signal read off the short search's root rank the positions where more time pays?

RESULTS.md: "2026-12-06, 17:14-17:25 UTC"
Verdict: no-go. No signal's top quarter holds more than about 0.30 of the regret (gate 0.60);
the visit share ranks no better than chance (0.14-0.15).

    python research/lever_games.py --games 60 --iterations 3500 --out results/levers/games_it3500.npz
    python research/lever_unsure.py results/levers/games_it3500.npz --positions 500 --out results/levers/unsure.npz
    python research/lever_unsure.py --report results/levers/unsure.npz

Positions: `--positions` decisions drawn uniformly (fixed seed) from the stored games of
the shipped agent (`lever_games.py`), among those where the mover has at least two legal
placements. At each, the shipped network's search runs twice from a fresh tree, with
independent seeds: the short search at the stored games' budget N (the shipped
`time=0.01`'s equivalent) and a long one at 8 N.

The short move's regret, three references:

* ``long Q``: the long search's root mean value (the search reward, the mover's) of its
  own move (the most visited) minus that of the short search's move; 0 where they agree.
  Where the long search visited the short move fewer than `--min-visits` times its mean
  is noisy; those positions are counted.
* ``a second long search's Q``: where the two moves differ, a third search (8 N, its own
  seed) judges them: its mean value of the long move minus that of the short move. The
  long search both picks its move and values it, so its Q of its own move is biased up
  (the winner's curse of noisy means); the judge's is not, and can be negative.
* ``common worlds``: where the two moves differ, `evaluation.analysis.rank_candidates`
  (the `analyze` reference: 64 sampled worlds common to every candidate, two greedy
  placements, then the shipped fast evaluator) values both moves; regret = the long
  move's value minus the short move's (it can be negative: then the long search erred);
  0 where they agree.

Signals (all read off the short search's root or the position; higher = more unsure):
``1 - share`` (visit share of the most visited move), ``-gap`` (the mean value of the
most visited move minus that of the second most visited), ``tiles`` (bag + every hand:
tiles still to play), ``-tiles``, ``legal`` (legal placements), and two cheap
combinations: ``share+gap`` (the mean of the two ranks) and ``share*tiles`` ((1 - share)
times tiles). A signal's figure: the share of the total regret held by the quarter of
positions it ranks highest (ties broken at random), with a bootstrap 95% interval over
positions (2,000 resamples). Go if at least 0.60.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.files import atomic_write  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from research.lever_games import NUM_PLAYERS, StoredGames, shipped_agent  # noqa: E402

GATE = 0.60
TOP = 0.25


@dataclass
class RootStats:
    """One search's root: its move, and per action id its visits and mean value."""

    action: int
    visits: np.ndarray
    mean: np.ndarray

    @staticmethod
    def of(agent, view) -> RootStats:
        action, visits, sums = agent.act_with_visits(view)
        return RootStats(int(action), visits, np.where(visits > 0, sums / np.maximum(visits, 1), np.nan))

    def share(self) -> float:
        return float(self.visits.max() / self.visits.sum())

    def gap(self) -> float:
        """Mean value of the most visited move minus that of the second most visited."""
        order = np.argsort(-self.visits, kind="stable")
        return float(self.mean[order[0]] - self.mean[order[1]]) if self.visits[order[1]] > 0 else 1.0


def pick_positions(games: StoredGames, count: int, seed: int) -> list[tuple[int, int]]:
    """(game, step) of `count` decisions with at least two legal placements, uniformly."""
    candidates = []
    for g in range(len(games)):
        for step, (state, _) in enumerate(games.positions(g)):
            if len(state.legal_actions()) > 1:
                candidates.append((g, step))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(candidates), size=min(count, len(candidates)), replace=False)
    return [candidates[i] for i in sorted(chosen)]


def measure(games: StoredGames, positions: list[tuple[int, int]], factor: int, seed: int,
            common_worlds: bool) -> dict[str, np.ndarray]:
    if common_worlds:
        raise SystemExit("the common-worlds reference (evaluation.analysis.Reference) left the product with "
                         "issue 68's judge: rerun this measurement from commit cd2c4a9, or pass --no-common-worlds")
    n = games.iterations
    short, long = shipped_agent(f"iterations={n}", seed), shipped_agent(f"iterations={factor * n}", seed + 1)
    judge = shipped_agent(f"iterations={factor * n}", seed + 2)
    rows: dict[str, list] = {k: [] for k in ("game", "step", "short", "long", "share", "gap", "tiles", "legal",
                                             "regret_q", "regret_q2", "short_visits_in_long", "regret_cw", "cpu_short",
                                             "cpu_long", "cpu_cw")}
    cache: dict[int, list] = {}
    start = time.perf_counter()
    for i, (g, step) in enumerate(positions):
        if g not in cache:
            cache.clear()
            cache[g] = games.positions(g)
        state, _ = cache[g][step]
        seat = state.current_player
        view = PlayerView(state, seat)
        for agent, s in ((short, 3 * i), (long, 3 * i + 1), (judge, 3 * i + 2)):
            agent.seed(seed * 1_000_003 + s)
            agent.reset(seat, NUM_PLAYERS)
        t0 = time.process_time()
        s_root = RootStats.of(short, view)
        t1 = time.process_time()
        l_root = RootStats.of(long, view)
        t2 = time.process_time()
        regret_q = 0.0
        if s_root.action != l_root.action:
            regret_q = float(l_root.mean[l_root.action] - np.nan_to_num(l_root.mean[s_root.action], nan=-2.0))
        regret_q2 = 0.0
        if s_root.action != l_root.action:  # a second long search judges the two moves
            j_root = RootStats.of(judge, view)
            regret_q2 = float(np.nan_to_num(j_root.mean[l_root.action] - j_root.mean[s_root.action], nan=0.0))
        regret_cw = 0.0  # the common-worlds reference's regret: only at commit cd2c4a9 (see above)
        t3 = time.process_time()
        hands = int(state.hand_sizes.sum())
        for key, value in (("game", g), ("step", step), ("short", s_root.action), ("long", l_root.action),
                           ("share", s_root.share()), ("gap", s_root.gap()), ("tiles", state.bag_size + hands),
                           ("legal", len(state.legal_actions())), ("regret_q", regret_q), ("regret_q2", regret_q2),
                           ("short_visits_in_long", int(l_root.visits[s_root.action])), ("regret_cw", regret_cw),
                           ("cpu_short", t1 - t0), ("cpu_long", t2 - t1), ("cpu_cw", t3 - t2)):
            rows[key].append(value)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(positions)} positions, {time.perf_counter() - start:.0f} s", flush=True)
    return {k: np.array(v) for k, v in rows.items()}


def signals(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each signal, higher = more unsure (module doc)."""
    share, gap, tiles = data["share"], data["gap"], data["tiles"].astype(float)

    def rank(x):
        return np.argsort(np.argsort(x, kind="stable"), kind="stable") / max(len(x) - 1, 1)

    return {"1 - share": 1 - share, "-gap": -gap, "tiles": tiles, "-tiles": -tiles,
            "legal": data["legal"].astype(float), "share+gap": (rank(1 - share) + rank(-gap)) / 2,
            "share*tiles": (1 - share) * tiles}


def top_share(signal: np.ndarray, regret: np.ndarray, tiebreak: np.ndarray) -> float:
    """The share of the total regret held by the quarter of positions `signal` ranks highest."""
    order = np.lexsort((tiebreak, -signal))
    top = order[:round(TOP * len(signal))]
    total = regret.sum()
    return float(regret[top].sum() / total) if total > 0 else float("nan")


def bootstrap(signal, regret, rng, resamples=2000) -> tuple[float, float]:
    values = []
    n = len(signal)
    for _ in range(resamples):
        idx = rng.integers(0, n, n)
        values.append(top_share(signal[idx], regret[idx], rng.random(n)))
    return tuple(np.nanpercentile(values, [2.5, 97.5]))


def report(data: dict[str, np.ndarray], min_visits: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    n = len(data["share"])
    differ = data["short"] != data["long"]
    noisy = differ & (data["short_visits_in_long"] < min_visits)
    lines = [(f"{n} positions; the short and long searches' moves differ at {differ.sum()} "
             f"({differ.mean():.1%}); there the long search visited the short move fewer than {min_visits} times "
             f"at {noisy.sum()}; CPU per position: short {data['cpu_short'].mean() * 1000:.1f} ms, long "
             f"{data['cpu_long'].mean() * 1000:.1f} ms, judges (where the moves differ) {data['cpu_cw'].mean() * 1000:.0f} ms")]
    labels = {"regret_q": "long Q", "regret_q2": "a second long search's Q", "regret_cw": "common worlds"}
    for name, label in labels.items():
        regret = data[name]
        if name != "regret_q" and not regret.any():
            continue
        lines.append(f"\nregret by {label}: mean {regret.mean():.4f} per decision (search-reward units), "
                     f"positive at {(regret > 0).sum()}, negative at {(regret < 0).sum()}")
        lines.append("| signal | top-quarter share of the regret [95%] |\n|---|---|")
        clipped = np.maximum(regret, 0.0) if name != "regret_q" else regret
        for sig_name, sig in signals(data).items():
            tiebreak = rng.random(n)
            share = top_share(sig, clipped, tiebreak)
            lo, hi = bootstrap(sig, clipped, rng)
            lines.append(f"| `{sig_name}` | {share:.3f} [{lo:.3f}, {hi:.3f}] |")
        oracle = top_share(clipped, clipped, rng.random(n))
        lines.append(f"(the regret itself as the signal, the most any signal can hold: {oracle:.3f})")
        if name != "regret_q":
            lines.append("(negative regrets, where the long search's move scored worse, clipped to 0)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("games", type=Path, nargs="?")
    p.add_argument("--positions", type=int, default=500)
    p.add_argument("--factor", type=int, default=8, help="the long search's budget over the short one's")
    p.add_argument("--seed", type=int, default=62)
    p.add_argument("--no-common-worlds", action="store_true", help="only the long search's Q as reference")
    p.add_argument("--min-visits", type=int, default=20)
    p.add_argument("--out", type=Path, default=Path("results/levers/unsure.npz"))
    p.add_argument("--report", type=Path, help="only report a stored measurement")
    a = p.parse_args(argv)
    if a.report:
        with np.load(a.report) as stored:
            print(report({k: stored[k] for k in stored.files}, a.min_visits))
        return
    if a.games is None:
        p.error("give the stored games (research/lever_games.py) or --report")
    games = StoredGames.load(a.games)
    positions = pick_positions(games, a.positions, a.seed)
    print(f"{len(positions)} positions of {len(games)} games; short search selfplay:iterations={games.iterations}, "
          f"long {a.factor}x; load average {os.getloadavg()[0]:.2f}", flush=True)
    start = time.perf_counter()
    data = measure(games, positions, a.factor, a.seed, not a.no_common_worlds)
    buffer = io.BytesIO()
    np.savez(buffer, **data)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(a.out, lambda f: f.write(buffer.getvalue()))
    print(f"measured in {time.perf_counter() - start:.0f} s -> {a.out}\n")
    print(report(data, a.min_visits))


if __name__ == "__main__":
    main()
