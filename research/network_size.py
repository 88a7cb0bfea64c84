"""Does a larger network predict the search better? Network sizes on one generation's games.

RESULTS.md: "2026-12-04, 11:56-14:50 UTC" (network size and the target's noise floor)
RESULTS.md: "2026-12-04, 14:50-16:55 UTC" (the board's four symmetries in the learner)
Verdict: a 4x larger tower (64x4) is no better than 32x2 at the data and steps measured (1.799 against
1.796 nats at 4,000 steps): data, not capacity, limits the raw policy.

    python research/network_size.py                       # 32x2 and 64x4, CPU or GPU
    python research/network_size.py --sizes 32x2,64x4,128x6 --games 8000 --steps 6000

Plays `--games` 2-player games of a search (default: the shipped self-play network's search,
the data a next generation would learn from; stored under `--store`, so a rerun reuses them),
holds out every tenth chunk of games, and trains one network per size with the self-play
learner (`training.learner`: visits ** `--target-power` policy targets, margin-blended
values, one learning-rate cycle of `--steps` minibatches) on the device `--device` (auto:
CUDA when present). For each size it prints the held-out policy cross-entropy, how often
the network's best move is the search's most visited one (top-1), the value MSE and the
training time. Two references sit beside them: the shipped network on the same held-out
positions, and the noise floor of the target itself, measured on `--floor-games` fresh
games: how often two independent searches of the same position agree on the best move,
and the cross-entropy of one search's target against the mean of four others'. A network
cannot be expected to agree with the search more often than two searches agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import agents  # noqa: E402
from agents.networks import load_net, resolve_device  # noqa: E402
from agents.search.selfplay import shipped_network  # noqa: E402
from benchmarks.machine import describe, machine_info  # noqa: E402
from engine import GameState  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from training.config import config_from_dict  # noqa: E402
from training.learner import Learner  # noqa: E402
from training.teacher import GAMES_PER_CHUNK, TeacherGames, teacher_games  # noqa: E402

FLOOR_SEARCHES = 5


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'32x2,64x4' -> [(32, 2), (64, 4)] (channels x residual blocks)."""
    try:
        sizes = [tuple(int(n) for n in item.split("x")) for item in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(len(s) != 2 or min(s) < 1 for s in sizes):
        raise SystemExit(f"--sizes: expected CHANNELSxBLOCKS[,...] such as 32x2,64x4, got {text!r}")
    return sizes


def split_games(games: TeacherGames) -> tuple[TeacherGames, TeacherGames]:
    """(training games, held-out games): every tenth chunk of games is held out."""
    held = (games.game // GAMES_PER_CHUNK) % 10 == 0
    return subset(games, ~held), subset(games, held)


def subset(games: TeacherGames, rows: np.ndarray) -> TeacherGames:
    kept = np.unique(games.game[rows])
    renumber = np.full(len(games.final_info), -1)
    renumber[kept] = np.arange(len(kept))
    return TeacherGames(obs=games.obs[rows], mask=games.mask[rows], policy=games.policy[rows], q=games.q[rows],
                        exposure=games.exposure[rows], state_features=games.state_features[rows],
                        game=renumber[games.game[rows]], mover=games.mover[rows], final_info=games.final_info[kept])


def held_out_scores(net, learner: Learner, device: torch.device) -> dict:
    """Policy cross-entropy against the held-out targets, top-1 agreement with the
    search's most visited move and value MSE, over the held-out buffer of `learner`."""
    buffer, n = learner.buffer, learner.buffer.size
    best = buffer.policy[:n].astype(np.float32).argmax(axis=1)
    cross_entropy = top1 = value_error = 0.0
    net.eval()
    with torch.no_grad():
        for start in range(0, n, 2048):
            rows = slice(start, min(n, start + 2048))
            logits, values = net(torch.as_tensor(buffer.obs[rows].astype(np.float32), device=device),
                                 torch.as_tensor(buffer.mask[rows], device=device),
                                 torch.as_tensor(buffer.exposure[rows].astype(np.float32), device=device))
            target = torch.as_tensor(buffer.policy[rows].astype(np.float32), device=device)
            cross_entropy += float(-(target * torch.log_softmax(logits, 1)).sum())
            top1 += int((logits.argmax(1).cpu().numpy() == best[rows]).sum())
            value = torch.as_tensor(buffer.value[rows, :2], device=device)
            value_error += float(((values[:, :2] - value) ** 2).mean(1).sum())
    return {"policy_ce": cross_entropy / n, "top1": top1 / n, "value_mse": value_error / n}


def target_noise_floor(teacher, games: int, power: float, seed: int) -> dict:
    """Run FLOOR_SEARCHES independent searches at every position of `games` games of the
    first one: their top-1 agreement and the cross-entropy of one target against the others'
    mean (see the module doc)."""
    rng = np.random.default_rng(seed)
    searches = [teacher.build(seed=seed + k) for k in range(FLOOR_SEARCHES)]
    agree, cross_entropy = [], []
    for _ in range(games):
        state = GameState.new(2, seed=int(rng.integers(2**62)))
        while not state.is_over:
            seat = state.current_player
            targets = []
            for search in searches:
                search.reset(seat, 2)
                _, visits, _ = search.act_with_visits(PlayerView(state, seat))
                sharp = visits.astype(np.float64) ** power
                targets.append(sharp / sharp.sum())
            if np.count_nonzero(targets[0]) > 1:
                agree.append(np.mean([np.argmax(targets[0]) == np.argmax(t) for t in targets[1:]]))
                others = np.mean(targets[1:], axis=0)
                cross_entropy.append(float(-(targets[0] * np.log(np.maximum(others, 1e-6))).sum()))
            state.step(int(np.argmax(targets[0])))
    return {"positions": len(agree), "top1_agreement": float(np.mean(agree)),
            "policy_ce": float(np.mean(cross_entropy))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", default=None,
                        help="the search whose games are learned (default: the shipped 2-player network's, 1,000 "
                             "iterations, prior 3)")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--sizes", default="32x2,64x4")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--target-power", type=float, default=3.0)
    parser.add_argument("--floor-games", type=int, default=20)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--store", default="runs/network_size/games")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", choices=("off", "on", "both"), default="off",
                        help="train on positions turned by random quarter turns of the board (selfplay.symmetries); "
                             "both: each size twice, plain and turned (row NAME+turns)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    sizes = parse_sizes(args.sizes)
    if args.games < 20 or args.steps < 10 or args.floor_games < 0:
        raise SystemExit("--games must be >= 20, --steps >= 10, --floor-games >= 0")
    device = resolve_device(args.device)
    shipped_path = shipped_network(2)
    teacher = agents.parse_agent(args.teacher or f"ismcts:net={shipped_path},iterations=1000,prior=3")  # its edge
    shipped = load_net(shipped_path, device)
    log = (lambda *a: None) if args.json else print
    log(f"machine: {describe()}; learner on {device}")

    games = teacher_games(teacher, args.games, args.seed, workers=args.workers, store=Path(args.store),
                          exposure=shipped.exposure_kind, progress=not args.json)
    train, held = split_games(games)
    net_settings = {k: v for k, v in vars(shipped.config).items() if k != "num_actions"}

    def learner_for(channels: int, blocks: int, turned: bool = False) -> Learner:
        cfg = config_from_dict({"algorithm": "selfplay", "num_players": 2, "seed": args.seed,
                                "net": {**net_settings, "channels": channels, "blocks": blocks},
                                "selfplay": {"batch_size": args.batch_size, "margin_weight": 0.2,
                                             "symmetries": turned}})
        return Learner(cfg, device)

    probe = learner_for(32, 2)
    probe.fill([(held, args.target_power)])
    result = {"machine": machine_info(), "device": str(device), "teacher": str(teacher),
              "train_positions": len(train.obs), "held_out_positions": len(held.obs),
              "shipped": held_out_scores(shipped, probe, device), "sizes": {}}
    log(f"{len(train.obs)} training positions, {len(held.obs)} held out; shipped network: {result['shipped']}")
    variants = {"off": [False], "on": [True], "both": [False, True]}[args.turns]
    for (channels, blocks), turned in ((size, turned) for size in sizes for turned in variants):
        learner = learner_for(channels, blocks, turned)
        learner.fill([(train, args.target_power)])
        start = time.perf_counter()
        stats = learner.fit_policy_value(args.steps, args.learning_rate)
        scores = held_out_scores(learner.net, probe, device)
        tower = sum(p.numel() for name, p in learner.net.named_parameters() if not name.startswith("evaluator."))
        row = {"parameters": tower, "train_policy_loss": stats["policy_loss"], **scores,
               "seconds": time.perf_counter() - start}
        name = f"{channels}x{blocks}" + ("+turns" if turned else "")
        result["sizes"][name] = row
        log(f"{name}: {row}")
    if args.floor_games:
        result["floor"] = target_noise_floor(teacher, args.floor_games, args.target_power, args.seed + 1)
        log(f"the target's own noise: {result['floor']}")
    if args.json:
        print(json.dumps(result))
    else:
        print(f"\n{'network':>11} {'parameters':>11} {'held-out CE':>12} {'top-1':>7} {'value MSE':>10} {'seconds':>8}")
        print(f"{'shipped':>11} {'':>11} {result['shipped']['policy_ce']:12.3f} {result['shipped']['top1']:7.3f} "
              f"{result['shipped']['value_mse']:10.3f}")
        for name, row in result["sizes"].items():
            print(f"{name:>11} {row['parameters']:11,} {row['policy_ce']:12.3f} {row['top1']:7.3f} "
                  f"{row['value_mse']:10.3f} {row['seconds']:8.0f}")
        if "floor" in result:
            print(f"{'two searches':>11} {'':>11} {result['floor']['policy_ce']:12.3f} "
                  f"{result['floor']['top1_agreement']:7.3f}   (the target's own noise)")
    return result


if __name__ == "__main__":
    main()
