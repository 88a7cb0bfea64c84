"""What does the fast evaluator know one move ahead that the raw policy has not learned?

RESULTS.md: "2026-12-04, 20:10-21:45 UTC" (the fast evaluator one move ahead)
Verdict: the afterstate value as a policy input lifts the raw policy only to the afterstate rule's
level (about 0.78 against greedy), not beyond: not adopted.

    python research/afterstate_policy.py                  # the shipped 2-player network
    python research/afterstate_policy.py --games 300 --deals 100 --steps 100   # a quick look

The afterstate value of a move is the network's fast evaluator on the position the move
leads to, for the mover, averaged over worlds dealt from what the mover knows
(`agents.search.afterstate`, the `afterstate:net=PATH` agent). In 2-player games this:

1. Plays `--games` games of the network's search (`ismcts:net=NET,iterations=1000,prior=3`)
   against itself and records every position with more than one legal placement: the
   mover's observation, the search's root visits, and every legal placement's afterstate
   value (`--worlds` worlds). Every tenth game is held out.
2. **Agreement.** On the held-out positions, how often the search's move is the raw
   policy's, the afterstate rule's, and a second search's (another seed: the noise floor).
3. **The afterstate value as an input of the policy**: the policy's logits + w x the
   afterstate value (w learned, one more per-move input like `NetConfig.exposure_skip`),
   fitted to the search's visits cubed (the self-play loop's target) for `--steps` steps
   from the network, against the same fit without the input and against w alone with the
   network frozen. Prints held-out nats and top-1 agreement.
4. With `--deals D`: each policy (argmax, afterstate values from 32 worlds where it reads
   them) and the afterstate rule alone against `greedy` on D duplicate deals.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import agents  # noqa: E402
from agents.networks import features  # noqa: E402
from agents.search.afterstate import AfterstateAgent  # noqa: E402
from agents.base import Agent  # noqa: E402
from agents.networks import load_net, save_checkpoint  # noqa: E402
from agents.networks.model import masked_logits  # noqa: E402
from research.duplicate_deals import deal_scores, mean_and_half_width  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from engine import GameState, random_deal, rules  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from env.observation import OBS_SIZE, encode_arrays  # noqa: E402

NET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "selfplay_2p.pt")
PLACEMENTS = rules.NUM_PLACEMENT_ACTIONS
TARGET_POWER = 3.0  # the loop's policy target: visits ** 3, normalised
PLAY_WORLDS = 32


# --- 1. positions --------------------------------------------------------------------------
def _record(task):
    net, seeds, worlds, second = task
    search = agents.make(f"ismcts:net={net},iterations=1000,prior=3", seed=seeds[0])
    other = agents.make(f"ismcts:net={net},iterations=1000,prior=3", seed=seeds[0] + 7919)
    afterstate = AfterstateAgent(net, worlds)
    afterstate.seed(seeds[0] + 1)
    rows = {k: [] for k in ("obs", "mask", "exposure", "visits", "after", "game", "second")}
    kind = load_net(net).exposure_kind
    for seed in seeds:
        state = GameState.from_deal(random_deal(20_000 + seed), 2)
        while not state.is_over:
            seat, legal = state.current_player, state.legal_actions()
            if len(legal) == 1:
                state.step(legal[0])
                continue
            view = PlayerView(state, seat)
            search.reset(seat, 2)
            action, visits, _ = search.act_with_visits(view)
            grid, info = view.public_arrays()
            obs = np.zeros(OBS_SIZE, dtype=np.float32)
            encode_arrays(grid, info, seat, obs)
            placements = np.array([a for a in legal if a < PLACEMENTS], dtype=np.int64)
            after = np.zeros(PLACEMENTS, dtype=np.float32)
            after[placements] = afterstate.move_values(view, placements)
            if seed in second:
                other.reset(seat, 2)
                rows["second"].append(other.act(None, view))
            else:
                rows["second"].append(-1)
            rows["obs"].append(obs.astype(np.float16))
            rows["mask"].append(view.legal_action_mask()[:rules.NUM_ACTIONS])
            rows["exposure"].append(features.exposure(grid, info, kind=kind).astype(np.float16))
            rows["visits"].append(visits.astype(np.float32))
            rows["after"].append(after)
            rows["game"].append(seed)
            state.step(action)
    return {k: np.array(v) for k, v in rows.items()}


def record_positions(net: str, games: int, worlds: int, workers: int) -> dict:
    """Step 1's positions, every tenth game (game % 10 == 0) also searched a second time."""
    held = {g for g in range(games) if g % 10 == 0}
    tasks = [(net, list(range(i, games, 4 * workers)), worlds, held) for i in range(4 * workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        parts = pool.map(_record, tasks)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# --- 2 and 3. agreement and fits --------------------------------------------------------
def _policy_logits(net, data, w, rows):
    logits, _ = net(torch.as_tensor(data["obs"][rows]).float(), None,
                    torch.as_tensor(data["exposure"][rows]).float())
    place = logits[:, :PLACEMENTS] + w * torch.as_tensor(data["after"][rows])
    return masked_logits(torch.cat([place, logits[:, PLACEMENTS:]], 1), torch.as_tensor(data["mask"][rows]))


def _targets(data):
    sharp = data["visits"].astype(np.float64) ** TARGET_POWER
    return (sharp / sharp.sum(axis=1, keepdims=True)).astype(np.float32)


def held_out_fit(net, data, w, rows, targets) -> tuple[float, float]:
    """(nats a position, top-1 agreement with the most visited move) on `rows`."""
    nats = top = 0.0
    with torch.no_grad():
        for s in range(0, len(rows), 2048):
            r = rows[s:s + 2048]
            logp = torch.log_softmax(_policy_logits(net, data, w, r), 1)
            nats += float(-(torch.as_tensor(targets[r]) * logp).sum())
            top += float((logp.argmax(1).numpy() == data["visits"][r].argmax(1)).sum())
    return nats / len(rows), top / len(rows)


def fit(net_path, data, arm: str, steps: int, seed: int):
    """Fine-tune for `steps` steps: arm "none" (no input), "gain" (w only, network frozen)
    or "joint" (w and the network). Returns (network, w)."""
    torch.manual_seed(seed)
    net = load_net(net_path).train()
    w = torch.nn.Parameter(torch.tensor(0.0 if arm == "none" else 5.0))
    groups = [] if arm == "none" else [{"params": [w], "lr": 0.05}]
    if arm == "gain":
        net.eval()
        for p in net.parameters():
            p.requires_grad_(False)
    else:
        groups.append({"params": net.parameters(), "lr": 5e-4})
    optimizer = torch.optim.Adam(groups)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 0.5 * (1 + np.cos(np.pi * s / steps)))
    targets = _targets(data)
    train_rows = np.flatnonzero(data["game"] % 10 != 0)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        rows = rng.choice(train_rows, 256)
        loss = -(torch.as_tensor(targets[rows]) * torch.log_softmax(_policy_logits(net, data, w, rows), 1)).sum(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return net.eval(), float(w.detach())


# --- 4. play -----------------------------------------------------------------------------
class _PolicyWithAfterstate(Agent):
    """argmax of a checkpoint's placement logits + w x afterstate values (w = 0: the raw policy)."""

    def __init__(self, path: str, w: float) -> None:
        super().__init__()
        from agents.search.guide import NetworkGuide

        self.guide, self.w = NetworkGuide(path), w
        self.afterstate = AfterstateAgent(path, PLAY_WORLDS) if w else None

    def seed(self, seed) -> None:
        super().seed(seed)
        if self.afterstate is not None:
            self.afterstate.seed(seed)

    def act(self, observation, view) -> int:
        legal = view.legal_actions()
        placements = np.array([a for a in legal if a < PLACEMENTS], dtype=np.int64)
        if len(placements) <= 1:
            return int(placements[0]) if len(placements) else int(legal[0])
        score = self.guide.placement_logits(view)[placements].astype(np.float64)
        if self.afterstate is not None:
            score = score + self.w * self.afterstate.move_values(view, placements)
        return int(placements[int(np.argmax(score))])


def _play(task):
    player, seeds = task
    me = AfterstateAgent(player[1], PLAY_WORLDS) if player[0] == "rule" else _PolicyWithAfterstate(*player[1:])
    return deal_scores(me, agents.make("greedy"), seeds)


def against_greedy(player: tuple, deals: int, workers: int) -> tuple[float, float]:
    tasks = [(player, list(range(i, deals, 4 * workers))) for i in range(4 * workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        return mean_and_half_width(np.concatenate([s for s in pool.imap_unordered(_play, tasks)]))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default=NET, help="a checkpoint with a fast evaluator (2 players)")
    parser.add_argument("--games", type=int, default=2400)
    parser.add_argument("--worlds", type=int, default=16, help="worlds per afterstate value in the data")
    parser.add_argument("--steps", type=int, default=500, help="fine-tuning steps of step 3")
    parser.add_argument("--deals", type=int, default=1000, help="duplicate deals of step 4 (0: skip it)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/afterstate_policy", help="where step 3's networks are saved")
    args = parser.parse_args(argv)
    if args.games < 20 or args.worlds < 1 or args.steps < 1 or args.deals < 0 or args.workers < 1:
        raise SystemExit("--games must be >= 20, --worlds and --steps >= 1, --deals >= 0, --workers >= 1")
    if load_net(args.net).evaluator is None:
        raise SystemExit(f"{args.net} has no fast evaluator")
    print(f"machine: {describe()}")
    start = time.perf_counter()
    data = record_positions(args.net, args.games, args.worlds, args.workers)
    held = np.flatnonzero(data["game"] % 10 == 0)
    print(f"{args.games} games of the network's search against itself: {len(data['game'])} positions "
          f"({len(held)} held out), {time.perf_counter() - start:.0f} s")

    best = data["visits"][held].argmax(1)
    legal_after = np.where(data["mask"][held][:, :PLACEMENTS], data["after"][held], -np.inf)
    shipped = load_net(args.net)
    with torch.no_grad():
        policy = _policy_logits(shipped, data, 0.0, held)[:, :PLACEMENTS].argmax(1).numpy()
    result = {"agreement": {"second search": float((data["second"][held] == best).mean()),
                            "raw policy": float((policy == best).mean()),
                            "afterstate rule": float((legal_after.argmax(1) == best).mean())}}
    print("top-1 agreement with the search's move (held-out positions):")
    for name, value in result["agreement"].items():
        print(f"  {name:16s} {value:.3f}")

    os.makedirs(args.out, exist_ok=True)
    targets = _targets(data)
    print(f"the policy fitted {args.steps} steps to the search's visits ** {TARGET_POWER:g} (held-out nats, top-1):")
    nats, top = held_out_fit(shipped, data, 0.0, held, targets)
    print(f"  {'untouched':38s} {nats:.3f}  {top:.3f}")
    players = [("the raw policy, untouched", ("policy", args.net, 0.0))]
    for arm, label in (("none", "fitted, no input (control)"), ("gain", "+ w x afterstate, w alone learned"),
                       ("joint", "+ w x afterstate, w and the network")):
        net, w = fit(args.net, data, arm, args.steps, args.seed)
        nats, top = held_out_fit(net, data, w, held, targets)
        result[arm] = {"nats": nats, "top1": top, "w": w}
        print(f"  {label:38s} {nats:.3f}  {top:.3f}  (w = {w:.2f})")
        path = os.path.join(args.out, f"{arm}.pt")
        save_checkpoint(path, net)
        players.append((label, ("policy", path, w)))
    if args.deals:
        print(f"against greedy, {args.deals} duplicate deals (afterstate values from {PLAY_WORLDS} worlds):")
        for label, player in players + [("the afterstate rule alone", ("rule", args.net))]:
            score, half = against_greedy(player, args.deals, args.workers)
            result[f"greedy: {label}"] = score
            print(f"  {label:38s} {score:.3f} +- {half:.3f}")
    return result


if __name__ == "__main__":
    main()
