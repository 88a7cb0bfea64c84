"""F0 of issue 56: how much of a 2-player game's final result is luck no evaluator can predict?
RESULTS.md: "2026-12-06, 04:13-05:25 UTC" (F0, the evaluator's headroom)
Verdict: go: a full-state evaluator has +79 Elo of headroom over the shipped one (gap 0.172 MSE),
the part a search over sampled worlds can use about +36 (gap 0.079); both above the +25 bar.

    python research/f0_headroom.py --positions 2000 --continuations 8 --policy selfplay   # 46 min, 2 busy cores
    python research/f0_headroom.py --positions 200 --policy selfplay --kinds policy        # the searches' own noise
    python research/f0_headroom.py --analyse results/f0_selfplay_full-info_s0.json [--first N]   # figures only

The fast evaluator (`agents.networks.evaluator`, the shipped `models/selfplay_2p.pt`'s) learns each
position's *final search reward* for the mover (`agents.search.core.simulation_rewards` with
`MARGIN`: +1/0/-1 plus 0.5 tanh(lead / 100), slot 0 = the mover as `training.learner.
rotated_to_movers` puts it): the target whose held-out MSE is 0.854 (research/evaluator_data.py).
No evaluator can predict the part of that result that the future draws and the players' own
randomness decide. This script measures that part:

1. positions: `--positions` 2-player games dealt from `--seed`, each played to its end by
   `--policy` in both seats, and one position per game taken uniformly over its move numbers;
2. from each position, `--continuations` K plays to the end by the same policy (fresh seeds), in
   each kind of `--kinds`:

   * ``full``: only the bag's order re-dealt (every hand and the removed tiles kept): what a
     full-state evaluator cannot know (the search's leaves, where a world is sampled);
   * ``info``: the other hand, the bag and the removed tiles re-dealt consistently with the
     mover's view (`engine.determinize.sample_world`, as the search's worlds are): what an
     information-set evaluator cannot know (the one-move-ahead agent, `selfplay-afterstate`);
   * ``policy``: nothing re-dealt, only the policy's own randomness (optional);

3. the noise floor of a kind = the mean over positions of the within-position variance (ddof 1)
   of the target. The shipped evaluator's error on the same continuations (its value of the
   position's full state, or for ``info`` of each re-dealt world) minus the ``full`` floor is the
   headroom of a full-state evaluator, converted into Elo with the relation the project measured
   between held-out MSE and strength (RESULTS, 2026-12-05 01:06 UTC; assumed locally linear).

Partial results go to `--out` (JSON, replaced whole) every few positions; a rerun with the same
arguments resumes where it stopped (each position has its own seeded stream). Not imported by
the product or the tests: it checks itself (asserts on every re-dealt world).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from agents.networks import evaluator as vk  # noqa: E402
from agents.base import make  # noqa: E402
from agents.networks import load_net  # noqa: E402
from agents.search.core import simulation_rewards  # noqa: E402
from agents.settings import MARGIN  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from engine import layout  # noqa: E402
from engine.determinize import SCRATCH_LEN, sample_world  # noqa: E402
from engine.game import GameState  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from engine.deal import random_deal  # noqa: E402

NUM_PLAYERS = 2
KINDS = ("full", "info", "policy")
EVALUATOR = Path(__file__).resolve().parent.parent / "models" / "selfplay_2p.pt"
# Held-out MSE against final rewards -> strength, same data pipeline and matches
# (RESULTS.md, "2026-12-05, 01:06-02:00 UTC"): (MSE of the weaker, MSE of the stronger,
# win rate of the stronger head to head [95% interval]).
ERROR_TO_STRENGTH = (
    ("1/16 -> 1/4 of the games", 0.9876, 0.8759, 0.583, (0.555, 0.609)),
    ("1/4 -> all of the games", 0.8759, 0.8542, 0.527, (0.500, 0.554)),
    ("1/16 -> all of the games", 0.9876, 0.8542, 0.576, (0.548, 0.603)),
)
TODAY_HELD_OUT_MSE = 0.854  # the shipped evaluator on evaluator_data's held-out games
TODAY_TARGET_VARIANCE = 1.71  # the final rewards' variance there


def elo(p: float) -> float:
    return 400.0 * np.log10(p / (1.0 - p))


def elo_per_mse() -> dict:
    """Elo per unit of held-out MSE: each measured pair's slope (Elo of its win rate over its
    error difference) and the least-squares line through the origin over the pairs."""
    pairs = [{"pair": name, "delta_mse": weak - strong, "p": p, "elo": elo(p),
              "slope": elo(p) / (weak - strong), "slope_range": (elo(lo) / (weak - strong), elo(hi) / (weak - strong))}
             for name, weak, strong, p, (lo, hi) in ERROR_TO_STRENGTH]
    d = np.array([x["delta_mse"] for x in pairs])
    e = np.array([x["elo"] for x in pairs])
    fit = float((d * e).sum() / (d * d).sum())
    slopes = [x["slope"] for x in pairs]
    return {"pairs": pairs, "fit": fit, "low": float(min(slopes)), "high": float(max(slopes))}


# --- playing ------------------------------------------------------------------------------------

def play_to_end(state: GameState, players, seeds, snapshots: list | None = None) -> GameState:
    """Play `state` (changed in place) to its end, players[s] in seat s seeded by seeds[s];
    with `snapshots`, a copy of every position before its move is appended to it."""
    encode = None
    for seat, (agent, seed) in enumerate(zip(players, seeds)):
        agent.seed(int(seed))
        agent.reset(seat, NUM_PLAYERS, False)
        if getattr(agent, "needs_observation", False):
            from env.observation import encode
    views = [PlayerView(state, s) for s in range(NUM_PLAYERS)]
    while not state.is_over:
        if snapshots is not None:
            snapshots.append(state.clone())
        seat = state.current_player
        agent = players[seat]
        obs = encode(state, seat) if encode is not None and getattr(agent, "needs_observation", False) else None
        state.step(int(agent.act(obs, views[seat])))
    return state


def mover_reward(state: GameState, mover: int) -> float:
    """The mover's final search reward: the evaluator's target (evaluator_data.load_positions)."""
    assert state.is_over
    out = np.zeros(4, dtype=np.float64)
    simulation_rewards(state.arrays[1], out, MARGIN)
    assert abs(out[:NUM_PLAYERS].sum()) < 1e-9  # 2 players: zero-sum, so slot 1's error = slot 0's
    return float(out[mover])


def position(index: int, seed: int, players) -> tuple[GameState, dict]:
    """Game `index`'s sampled position: the game played to its end by `players`, one of its
    positions (a move number uniform over the game's moves) returned with facts about it."""
    rng = np.random.default_rng([seed, index, 0])
    state = GameState.from_deal(random_deal(int(rng.integers(2**62))), NUM_PLAYERS)
    snapshots: list[GameState] = []
    game = play_to_end(state, players, rng.integers(2**62, size=NUM_PLAYERS), snapshots)
    t = int(rng.integers(len(snapshots)))
    chosen = snapshots[t]
    mover = chosen.current_player
    facts = {"index": index, "move": t, "length": len(snapshots), "mover": mover, "bag": chosen.bag_size,
             "original": mover_reward(game, mover)}
    return chosen, facts


def redeal_full(state: GameState, rng: np.random.Generator) -> GameState:
    """The state with only the bag's order shuffled (hands, removed tiles and board kept)."""
    world = state.clone()
    grid, info = world.arrays
    bag_pos = int(info[layout.BAG_POS])
    bag = info[layout.DEAL + bag_pos:layout.DEAL + 40]
    bag[:] = rng.permutation(bag)
    _, before = state.arrays
    assert np.array_equal(np.sort(bag), np.sort(before[layout.DEAL + bag_pos:layout.DEAL + 40]))
    assert np.array_equal(info[:layout.DEAL], before[:layout.DEAL])  # every hand, score, board bit
    assert np.array_equal(grid, state.arrays[0])
    return world


def redeal_info(state: GameState, mover: int, rng: np.random.Generator, scratch: np.ndarray) -> GameState:
    """A world consistent with the mover's view: the other hand, the bag and the removed tiles
    dealt by the search's sampler (`engine.determinize.sample_world`)."""
    grid, info = state.arrays
    out_grid, out_info = np.empty_like(grid), np.empty_like(info)
    sample_world(grid, info, np.int64(mover), np.uint64(rng.integers(1, 2**63)), out_grid, out_info, scratch)
    world = GameState(out_grid, out_info)
    # the mover's view is unchanged: board, own hand, every score and hand size, the bag's size
    assert np.array_equal(out_grid, grid)
    assert np.array_equal(world.hands[mover], state.hands[mover])
    assert np.array_equal(world.scores, state.scores) and np.array_equal(world.hand_sizes, state.hand_sizes)
    assert world.bag_size == state.bag_size and world.current_player == mover and world.turn == state.turn
    unseen = lambda s: np.sort(np.r_[s.bag, s.removed, *[np.repeat(np.arange(1, 11), s.hands[o])  # noqa: E731
                                                          for o in range(NUM_PLAYERS) if o != mover]])
    assert np.array_equal(unseen(world), unseen(state))  # the same unseen tiles, dealt afresh
    return world


def continuations(state: GameState, facts: dict, kinds, k: int, seed: int, players, net: np.ndarray,
                  scratch: np.ndarray) -> dict:
    """K plays to the end from `state` in each kind: the mover's targets, and the shipped
    evaluator's value (for the mover) of each starting world."""
    mover = facts["mover"]
    out = {"v_true": float(vk.evaluate(*state.arrays, net)[mover])}
    for kind in kinds:
        rng = np.random.default_rng([seed, facts["index"], 1 + KINDS.index(kind)])
        targets, values = [], []
        for _ in range(k):
            if kind == "full":
                world = redeal_full(state, rng)
            elif kind == "info":
                world = redeal_info(state, mover, rng, scratch)
            else:
                world = state.clone()
            values.append(float(vk.evaluate(*world.arrays, net)[mover]))
            end = play_to_end(world, players, rng.integers(2**62, size=NUM_PLAYERS))
            targets.append(mover_reward(end, mover))
        out[kind] = targets
        out[f"v_{kind}"] = values
    return out


# --- figures ------------------------------------------------------------------------------------

def _interval(samples: np.ndarray) -> list[float]:
    return [float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))]


def analyse(records: list[dict], kinds, boot: int = 2000, seed: int = 0) -> dict:
    """Floors, the shipped evaluator's error on the same continuations, the gaps and their Elo,
    each with a 95% bootstrap interval over positions."""
    n = len(records)
    rng = np.random.default_rng(seed)
    draws = rng.integers(n, size=(boot, n))
    v_true = np.array([r["v_true"] for r in records])
    result: dict = {"positions": n, "kinds": {}}
    slope = elo_per_mse()
    result["elo_per_mse"] = slope
    for kind in kinds:
        z = np.array([r[kind] for r in records])  # (n, K)
        v = np.array([r[f"v_{kind}"] for r in records])
        k = z.shape[1]
        within = z.var(axis=1, ddof=1)  # per position
        if kind == "info":  # an information-set estimate: the evaluator averaged over the other worlds
            pred = (v.sum(axis=1, keepdims=True) - v) / (k - 1)  # leave-one-out, as the world is unseen
        else:
            pred = np.repeat(v_true[:, None], k, axis=1)
        sq = ((pred - z) ** 2).mean(axis=1)
        gap = sq - within  # unbiased for the squared bias (E v - E z)^2 of the prediction
        if kind == "info":  # less the noise of averaging K - 1 worlds: the bias of the mean over all worlds
            gap = gap - v.var(axis=1, ddof=1) / (k - 1)
        world_sq = ((v - z) ** 2).mean(axis=1)  # the evaluator on the world each play started from
        per = {"floor": within, "mse": sq, "gap": gap, "world_mse": world_sq}
        stats = {}
        for name, x in per.items():
            stats[name] = {"mean": float(x.mean()), "ci95": _interval(x[draws].mean(axis=1))}
        stats["total_variance"] = {"mean": float(z.var(ddof=1)), "ci95": _interval(
            np.array([z[d].var(ddof=1) for d in draws[:500]]))}
        total = z.var(ddof=1)
        if kind == "info":  # does the evaluator follow the worlds' hidden tiles? its spread over the worlds of a
            # view, and how it moves with their results (an evaluator that tracked the ideal full-state value
            # would show a covariance near floor(info) - floor(full), the ideal value's own spread)
            dv, dz = v - v.mean(axis=1, keepdims=True), z - z.mean(axis=1, keepdims=True)
            stats["within_view_value_variance"] = float(v.var(axis=1, ddof=1).mean())
            stats["within_view_covariance"] = float(((dv * dz).sum(axis=1) / (k - 1)).mean())
        if "full" in kinds and kind != "full":  # the full-state evaluator on re-dealt worlds, less the full floor
            full_within = np.array([r["full"] for r in records]).var(axis=1, ddof=1)
            stats["world_gap_to_full_floor"] = {"mean": float((world_sq - full_within).mean()), "ci95": _interval(
                (world_sq - full_within)[draws].mean(axis=1))}
        stats["explained_by_floor"] = float(1 - within.mean() / total)
        stats["explained_by_shipped"] = float(1 - sq.mean() / total)
        gap_boot = gap[draws].mean(axis=1)
        lo, hi = _interval(gap_boot)
        stats["headroom_elo"] = {"fit": float(stats["gap"]["mean"] * slope["fit"]),
                                 "slope_range": [float(stats["gap"]["mean"] * slope["low"]),
                                                 float(stats["gap"]["mean"] * slope["high"])],
                                 "ci95_fit": [float(x * slope["fit"]) for x in _interval(gap_boot)],
                                 "widest": [float(min(lo * slope["low"], lo * slope["high"])),
                                            float(max(hi * slope["low"], hi * slope["high"]))]}
        stats["today_gap_to_floor"] = float(TODAY_HELD_OUT_MSE - within.mean())
        # by game phase: thirds of the move number
        phase = np.array([r["move"] / r["length"] for r in records])
        bag = np.array([r["bag"] for r in records])
        stats["by_phase"] = {}
        for name, m in (("early", phase < 1 / 3), ("middle", (phase >= 1 / 3) & (phase < 2 / 3)),
                        ("late", phase >= 2 / 3), ("bag empty", bag == 0)):
            if m.sum() >= 2:
                rows = np.flatnonzero(m)
                sub = rows[rng.integers(len(rows), size=(boot, len(rows)))]
                # each phase's share of the whole gap: its mean gap times its share of the positions
                stats["by_phase"][name] = {"positions": int(m.sum()), "floor": float(within[m].mean()),
                                           "mse": float(sq[m].mean()), "gap": float(gap[m].mean()),
                                           "gap_ci95": _interval(gap[sub].mean(axis=1)),
                                           "share_of_gap": float(gap[m].sum() / gap.sum()) if gap.sum() else 0.0}
        result["kinds"][kind] = stats
    original = np.array([r["original"] for r in records])
    result["original_games"] = {"target_variance": float(original.var(ddof=1)),
                                "shipped_mse": float(((v_true - original) ** 2).mean()),
                                "shipped_mse_ci95": _interval(((v_true - original) ** 2)[draws].mean(axis=1))}
    return result


def report(result: dict) -> str:
    lines = [f"{result['positions']} positions"]
    s = result["elo_per_mse"]
    pairs = ", ".join(f"{x['pair']} {x['slope']:.0f}" for x in s["pairs"])
    lines.append(f"Elo per unit of held-out MSE: least-squares fit {s['fit']:.0f} (pairs: {pairs})")
    o = result["original_games"]
    lines.append(f"original games: target variance {o['target_variance']:.3f}, shipped evaluator MSE "
                 f"{o['shipped_mse']:.3f} [{o['shipped_mse_ci95'][0]:.3f}, {o['shipped_mse_ci95'][1]:.3f}]")
    for kind, st in result["kinds"].items():
        f = lambda x: f"{st[x]['mean']:.4f} [{st[x]['ci95'][0]:.4f}, {st[x]['ci95'][1]:.4f}]"  # noqa: E731
        h = st["headroom_elo"]
        lines.append(f"{kind:>6}: floor {f('floor')}  shipped MSE {f('mse')}  gap {f('gap')}  "
                     f"(evaluator on each start world {st['world_mse']['mean']:.4f})")
        lines.append(f"        total variance {f('total_variance')}; explained: shipped "
                     f"{st['explained_by_shipped']:.3f}, floor {st['explained_by_floor']:.3f}; "
                     f"0.854 - floor = {st['today_gap_to_floor']:.4f}")
        lines.append(f"        headroom {h['fit']:+.1f} Elo (slopes {h['slope_range'][0]:+.1f} to "
                     f"{h['slope_range'][1]:+.1f}; gap interval x fit {h['ci95_fit'][0]:+.1f} to "
                     f"{h['ci95_fit'][1]:+.1f}; "
                     f"widest {h['widest'][0]:+.1f} to {h['widest'][1]:+.1f})")
        if "within_view_covariance" in st:
            lines.append(f"        over the worlds of a view: the evaluator's variance "
                         f"{st['within_view_value_variance']:.4f}, its covariance with the result "
                         f"{st['within_view_covariance']:.4f}")
        if "world_gap_to_full_floor" in st:
            w = st["world_gap_to_full_floor"]
            lines.append(f"        the evaluator on each re-dealt world less the full floor: {w['mean']:.4f} "
                         f"[{w['ci95'][0]:.4f}, {w['ci95'][1]:.4f}]")
        for name, ph in st["by_phase"].items():
            lines.append(f"        {name:>9} ({ph['positions']} positions): floor {ph['floor']:.4f}  shipped MSE "
                         f"{ph['mse']:.4f}  gap {ph['gap']:.4f} [{ph['gap_ci95'][0]:.4f}, {ph['gap_ci95'][1]:.4f}] "
                         f"({ph['share_of_gap']:.0%} of the whole gap)")
    return "\n".join(lines)


def _write(path: Path, payload: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)  # replaced whole


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--positions", type=int, default=2000)
    p.add_argument("--continuations", type=int, default=8, help="K plays to the end per position and kind")
    p.add_argument("--policy", default="selfplay-afterstate", help="agent spec playing both seats")
    p.add_argument("--kinds", default="full,info", help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="the JSON file (default results/f0_<policy>_<kinds>_s<seed>.json)")
    p.add_argument("--every", type=int, default=10, help="write the JSON every this many positions")
    p.add_argument("--analyse", type=Path, help="only print the figures of this JSON file")
    p.add_argument("--first", type=int, help="with --analyse: only its first FIRST positions")
    a = p.parse_args(argv)
    if a.analyse is not None:
        payload = json.loads(a.analyse.read_text())
        records = payload["records"][:a.first]
        print(f"{a.analyse}: policy {payload['policy']}, {payload['continuations']} continuations, "
              f"{payload['seconds']:.0f} s, {payload['machine']}")
        result = analyse(records, payload["kinds"])
        print(report(result))
        return result
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    if not kinds or any(k not in KINDS for k in kinds) or a.positions < 1 or a.continuations < 2:
        p.error(f"kinds must be of {KINDS}, positions >= 1, continuations >= 2")
    name = f"f0_{a.policy}_{'-'.join(kinds)}_s{a.seed}".replace(":", "_").replace("=", "").replace(",", "_")
    out = a.out or Path("results") / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"positions": a.positions, "continuations": a.continuations, "policy": a.policy, "kinds": kinds,
              "seed": a.seed, "evaluator": str(EVALUATOR.name)}
    records: list[dict] = []
    if out.exists():
        old = json.loads(out.read_text())
        if {k: old.get(k) for k in config if k != "positions"} == {k: config[k] for k in config if k != "positions"}:
            records = old["records"][:a.positions]
            print(f"resuming {out}: {len(records)} positions done", flush=True)
    print(describe(), f"load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"F0: policy {a.policy}, {a.positions} positions x {a.continuations} continuations x kinds {kinds}, "
          f"seed {a.seed} -> {out}", flush=True)
    net = load_net(str(EVALUATOR), "cpu").evaluator.packed()
    players = [make(a.policy, seed=0) for _ in range(NUM_PLAYERS)]
    scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
    from tqdm import tqdm
    start = time.perf_counter()
    with tqdm(total=a.positions, initial=len(records), desc="positions", mininterval=5, file=sys.stdout) as bar:
        for index in range(len(records), a.positions):
            state, facts = position(index, a.seed, players)
            facts.update(continuations(state, facts, kinds, a.continuations, a.seed, players, net, scratch))
            records.append(facts)
            bar.update(1)
            if len(records) % a.every == 0 or len(records) == a.positions:
                _write(out, {**config, "seconds": time.perf_counter() - start, "machine": describe(),
                             "records": records})
    result = analyse(records, kinds)
    _write(out, {**config, "seconds": time.perf_counter() - start, "machine": describe(), "records": records,
                 "result": result})
    print(report(result), flush=True)
    return result


if __name__ == "__main__":
    main()
