"""Issue 70, item 1 (go/no-go, offline): does a deeper self-play teacher make a better student?

RESULTS.md: "2026-12-07, 01:59-02:50 UTC"
Verdict: no-go: the raw policy fitted to 28,000-simulation targets scores 0.497 [0.470, 0.522]
against the one fitted to today's 1,000-simulation targets (100 steps; 0.504 [0.479, 0.530]
with a fresh policy head, 0.510 [0.500, 0.519] over 9,000 games and three learner seeds with
the trainer's 300 steps; bar 0.53), and the 28,000 labels cost 41x the CPU (60.1 ms a position).

The shipped self-play teacher (`selfplay.search: iterations=1000,prior=3`,
configs/selfplay_2p.yaml) searches less than the agent plays (`selfplay:time=0.01`, about
3,500 simulations here). This script labels the same positions with the same search at
three budgets and fits the shipped network to each label set with identical steps:

1. ``label``: plays 2-player games of the shipped agent at its play budget
   (`selfplay:iterations=3500`, one seeded search per seat; game g's deal is
   ``random_deal(10**6 + seed * 1000 + g)`` as in `lever_games.py`) and, at every decision,
   labels the mover's view with three more searches of the shipped network, built exactly as
   the trainer builds its teacher (`GuidedSearch(models/selfplay_2p.pt,
   SearchSettings(iterations=N, prior=3)).build(seed)`, one per seat and budget, reseeded
   and reset at each game as `training.teacher.play_chunk` resets them, warmed up before any
   search is timed), N = 1,000 (today's teacher), 3,500 and 28,000; `act_with_visits`'s root
   visit counts, stored as the teacher stores them
   (visits / visits.sum(); a forced move: one visit). With each position it keeps what the
   trainer keeps (`training.teacher.TeacherGames`: observation, mask, exposure features,
   the 72 state features, game, mover, each game's final info) and the process CPU seconds of
   each budget's searches. Chunks of `--chunk` games, resumable, `--workers` processes.
2. ``fit``: for each budget, `training.learner.Learner` with configs/selfplay_2p.yaml's
   settings (batch 256, AdamW, weight decay 1e-4, learner seed `--fit-seed`: the same
   minibatch rows for every budget), its network replaced by the shipped `models/selfplay_2p.pt` (all of it: the tower,
   policy and value heads; the fast evaluator is not trained), the buffer filled by
   `Learner.fill` (policy target visits ** target_power 3, normalised; value target the
   game's result and margin, identical for every budget) from the training games, then
   `fit_policy_value(--steps, --lr)` (one learning-rate cycle: the trainer's step, a fresh
   optimizer). The held-out games (every 10th) give each student's cross-entropy against
   each label set and its top-1 agreement with each search's most visited move.
   Students: ``results/distill/student_<N>.pt`` (play them as ``checkpoint:PATH``).
   ``--steps``/``--lr``/``--fit-seed`` vary the fit (the same for all three budgets),
   ``--fresh-head`` re-initialises the policy head and trains it alone (policy loss) on the
   frozen shipped tower, ``--tag`` names the students and ``fit<tag>.json``.
3. The matches are `evaluate.py` runs (the entry's commands, under results/distill/);
   ``gate`` reads their games.csv and prints each run's 28,000-vs-1,000 score and the
   pooled score of each fit (bootstrap over deals) and the verdict.

    nice -n 19 python research/distill_gate.py label --games 400 --chunk 10 --workers 2
    nice -n 19 python research/distill_gate.py fit --steps 100 --tag _s100
    nice -n 19 python evaluate.py --agents checkpoint:results/distill/student_28000_s100.pt \
        checkpoint:results/distill/student_1000_s100.pt --games 1000 --seed 70 --workers 2 --no-plots \
        --out results/distill/h2h_s100
    python research/distill_gate.py gate
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BUDGETS = (1000, 3500, 28000)
PLAY_ITERATIONS = 3500
NUM_PLAYERS = 2
NET = "models/selfplay_2p.pt"
POLICY_HEAD = ("place_head", "other_head", "points_gain", "exposure_gain")  # the parameters only the policy reads
CONFIG = "configs/selfplay_2p.yaml"
OUT = Path("results/distill")


def label_chunk(args) -> str:
    """Play and label games [first, first + count) (see the module doc); writes one .npz."""
    first, count, seed, path = args
    import torch

    torch.set_num_threads(1)
    from agents.networks import evaluator, features, load_net
    from agents.search.mcts import GuidedSearch
    from agents.settings import SearchSettings
    from engine import GameState, random_deal, rules
    from engine.files import atomic_write
    from engine.view import PlayerView
    from env.observation import encode

    exposure_kind = load_net(NET).exposure_kind

    def search(iterations: int, s: int):
        return GuidedSearch(NET, SearchSettings(iterations=iterations, prior=3.0)).build(seed=s)

    rows = {k: [] for k in ("obs", "mask", "exposure", "state_features", "game", "mover", "played")}
    labels = {b: [] for b in BUDGETS}
    cpu = {b: 0.0 for b in BUDGETS}
    finals = []
    players = [search(PLAY_ITERATIONS, None) for s in range(NUM_PLAYERS)]
    labellers = {b: [search(b, None) for s in range(NUM_PLAYERS)] for b in BUDGETS}
    for agent in [*players, *(x for seats in labellers.values() for x in seats)]:
        agent.warm_up()  # compiled (or read from numba's cache) before any search is timed
    for local, g in enumerate(range(first, first + count)):
        base = seed * 100_003 + g * 11
        for s in range(NUM_PLAYERS):
            players[s].seed(base + s)
            for i, b in enumerate(BUDGETS):
                labellers[b][s].seed(base + 1000 * (i + 1) + s)
        state = GameState.from_deal(random_deal(10**6 + seed * 1000 + g), NUM_PLAYERS)
        for s in range(NUM_PLAYERS):
            players[s].reset(s, NUM_PLAYERS)
            for b in BUDGETS:
                labellers[b][s].reset(s, NUM_PLAYERS)
        while not state.is_over:
            seat = state.current_player
            view = PlayerView(state, seat)
            for b in BUDGETS:
                t = time.process_time()
                _, visits, _ = labellers[b][seat].act_with_visits(view)
                cpu[b] += time.process_time() - t
                labels[b].append((visits / visits.sum()).astype(np.float32))
            action = players[seat].act(None, view)
            rows["obs"].append(encode(state, seat).astype(np.float16))
            rows["mask"].append(state.legal_action_mask()[: rules.NUM_ACTIONS])
            rows["exposure"].append(features.exposure(*state.arrays, kind=exposure_kind).astype(np.float16))
            rows["state_features"].append(evaluator.mover_features(*state.arrays).astype(np.float32))
            rows["game"].append(local)
            rows["mover"].append(seat)
            rows["played"].append(action)
            state.step(action)
        finals.append(state.arrays[1].copy())
    out = {k: np.array(v) for k, v in rows.items()}
    out.update({f"policy_{b}": np.array(labels[b]) for b in BUDGETS})
    out.update({f"cpu_{b}": np.float64(cpu[b]) for b in BUDGETS})
    out["final_info"] = np.array(finals, dtype=np.int64)
    out["first"] = np.int64(first)
    atomic_write(Path(path), lambda f: np.savez(f, **out))
    return path


def _start_worker() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def label(a) -> None:
    a.out.mkdir(parents=True, exist_ok=True)
    jobs = [(first, min(a.chunk, a.games - first), a.seed, str(a.out / f"labels_{first:05d}_{a.seed}.npz"))
            for first in range(0, a.games, a.chunk)]
    todo = [j for j in jobs if not Path(j[3]).is_file()]
    start = time.perf_counter()
    print(f"{len(jobs) - len(todo)} of {len(jobs)} chunks stored; labelling {len(todo)} with {a.workers} workers",
          flush=True)
    if a.workers <= 1:
        done = map(label_chunk, todo)
    else:
        pool = ProcessPoolExecutor(a.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker)
        done = pool.map(label_chunk, todo)
    for i, path in enumerate(done, 1):
        print(f"  {i}/{len(todo)} {path} ({time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.1f})",
              flush=True)


def load_labels(out: Path, seed: int):
    """Every stored chunk as one TeacherGames per budget (game indices global) and the CPU."""
    from training.teacher import TeacherGames

    parts = [dict(np.load(p)) for p in sorted(out.glob(f"labels_*_{seed}.npz"))]
    offsets = np.cumsum([0] + [len(p["final_info"]) for p in parts[:-1]])
    cat = {k: np.concatenate([p[k] for p in parts]) for k in
           ("obs", "mask", "exposure", "state_features", "mover", "played", "final_info",
            *(f"policy_{b}" for b in BUDGETS))}
    cat["game"] = np.concatenate([p["game"] + o for p, o in zip(parts, offsets)])
    cpu = {b: float(sum(p[f"cpu_{b}"] for p in parts)) for b in BUDGETS}
    games = {b: TeacherGames(obs=cat["obs"], mask=cat["mask"], policy=cat[f"policy_{b}"], exposure=cat["exposure"],
                             state_features=cat["state_features"], game=cat["game"], mover=cat["mover"],
                             final_info=cat["final_info"]) for b in BUDGETS}
    return games, cat, cpu


def subset(data, rows: np.ndarray):
    """The TeacherGames of these rows (final_info kept whole: game indices stay valid)."""
    from training.teacher import TeacherGames

    return TeacherGames(obs=data.obs[rows], mask=data.mask[rows], policy=data.policy[rows],
                        exposure=data.exposure[rows], state_features=data.state_features[rows],
                        game=data.game[rows], mover=data.mover[rows], final_info=data.final_info)


def sharpened(policy: np.ndarray, power: float) -> np.ndarray:
    s = policy.astype(np.float64) ** power
    return s / s.sum(axis=1, keepdims=True)


def policy_logp(net, data) -> np.ndarray:
    """The network's log-policy (legal moves) on every row of `data`."""
    import torch
    from torch.nn import functional as F

    out = []
    net.eval()
    with torch.no_grad():
        for i in range(0, len(data.obs), 1024):
            o = torch.as_tensor(data.obs[i:i + 1024].astype(np.float32))
            m = torch.as_tensor(data.mask[i:i + 1024])
            e = torch.as_tensor(data.exposure[i:i + 1024].astype(np.float32)) if net.needs_exposure else None
            logits, _ = net(o, m, e)
            out.append(F.log_softmax(logits, dim=1).numpy())
    return np.concatenate(out)


def heldout_report(nets: dict, games: dict, rows: np.ndarray, power: float) -> dict:
    """Per network: cross-entropy against each budget's sharpened targets and top-1
    agreement with each budget's most visited move, on the held-out rows."""
    report = {}
    best = {b: games[b].policy[rows].argmax(axis=1) for b in BUDGETS}
    targets = {b: sharpened(games[b].policy[rows], power) for b in BUDGETS}
    for name, net in nets.items():
        logp = policy_logp(net, subset(games[BUDGETS[0]], rows))
        top = logp.argmax(axis=1)
        report[name] = {f"xent_{b}": float(-(targets[b] * np.maximum(logp, -30)).sum(axis=1).mean())
                        for b in BUDGETS}
        report[name].update({f"top1_{b}": float((top == best[b]).mean()) for b in BUDGETS})
    return report


def fit_weighted(learner, steps: int, peak_lr: float, value_weight: float, frozen_tower: bool = False) -> dict:
    """`Learner.fit_policy_value` with the value loss weighted by `value_weight` (0: the
    policy's cross-entropy alone; the value head then gets no gradient): the same one-cycle
    schedule, minibatch draws and loss otherwise (no symmetries, as configs/selfplay_2p.yaml)."""
    import torch
    from torch.nn import functional as F

    warm_up = 0.1 if abs(0.1 * steps - 1.0) > 1e-9 else 0.15
    schedule = torch.optim.lr_scheduler.OneCycleLR(learner.optimizer, peak_lr, total_steps=steps, pct_start=warm_up)
    # a frozen tower stays in eval mode (its batch-norm statistics unchanged); the heads have no batch norm
    net, n = (learner.net.eval() if frozen_tower else learner.net.train()), learner.num_players
    stats = {"policy_loss": [], "value_loss": []}
    for _ in range(steps):
        obs, mask, target, value, exposure = learner.buffer.sample(learner.settings.batch_size, learner.rng)
        e = torch.as_tensor(exposure) if net.needs_exposure else None
        logits, values = net(torch.as_tensor(obs), torch.as_tensor(mask), e)
        t = torch.as_tensor(target)
        policy_loss = -(t * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
        value_loss = F.mse_loss(values[:, :n], torch.as_tensor(value)[:, :n])
        loss = policy_loss + value_weight * value_loss
        learner.optimizer.zero_grad()
        loss.backward()
        learner.optimizer.step()
        schedule.step()
        stats["policy_loss"].append(policy_loss.item())
        stats["value_loss"].append(value_loss.item())
    return {k: float(np.mean(v)) for k, v in stats.items()}


def fit(a) -> None:
    import torch

    torch.set_num_threads(1)
    from agents.networks import load_net, save_checkpoint
    from training.config import load_config
    from training.learner import Learner

    games, cat, cpu = load_labels(a.out, a.seed)
    held = cat["game"] % 10 == 9
    train_rows, held_rows = np.flatnonzero(~held), np.flatnonzero(held)
    shipped = load_net(NET)
    cfg = load_config(CONFIG, [f"seed={a.fit_seed}"])
    summary = {"positions": len(cat["obs"]), "games": len(cat["final_info"]),
               "train_positions": len(train_rows), "heldout_positions": len(held_rows),
               "forced_positions": int((cat["mask"].sum(axis=1) == 1).sum()),
               "cpu_seconds": cpu, "cpu_ms_per_position": {b: 1000 * cpu[b] / len(cat["obs"]) for b in BUDGETS},
               "steps": a.steps, "lr": a.lr, "value_weight": a.value_weight, "fresh_head": a.fresh_head,
               "batch_size": cfg.selfplay.batch_size,
               "target_power": cfg.selfplay.target_power, "symmetries": cfg.selfplay.symmetries,
               "fit_seed": cfg.seed, "students": {}}
    # how far apart the label sets are: top-1 agreement of each search's most visited move
    best = {b: cat[f"policy_{b}"].argmax(axis=1) for b in BUDGETS}
    searched = cat["mask"].sum(axis=1) > 1
    summary["label_top1_agreement_with_28000"] = {b: float((best[b] == best[28000])[searched].mean())
                                                  for b in BUDGETS}
    summary["label_top1_agreement_with_played"] = {b: float((best[b] == cat["played"])[searched].mean())
                                                   for b in BUDGETS}
    nets = {"shipped": shipped}
    for b in BUDGETS:
        cfg = load_config(CONFIG, [f"seed={a.fit_seed}"])
        learner = Learner(cfg, torch.device("cpu"))
        learner.net.load_state_dict(shipped.state_dict())
        if a.fresh_head:  # a fresh policy head on the shipped (frozen) tower: it learns only these targets
            torch.manual_seed(cfg.seed)
            for module in (learner.net.place_head, *learner.net.other_head):
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            for name, p in learner.net.named_parameters():
                p.requires_grad_(name.split(".")[0] in POLICY_HEAD)
        learner.fill([(subset(games[b], train_rows), cfg.selfplay.target_power)])
        t = time.process_time()
        stats = (learner.fit_policy_value(a.steps, a.lr) if a.value_weight == 1.0 and not a.fresh_head
                 else fit_weighted(learner, a.steps, a.lr, 0.0 if a.fresh_head else a.value_weight, a.fresh_head))
        stats["cpu_seconds"] = time.process_time() - t
        path = a.out / f"student_{b}{a.tag}.pt"
        save_checkpoint(path, learner.net, distilled_from=b, steps=a.steps)
        summary["students"][b] = {"path": str(path), **stats}
        nets[f"student_{b}"] = load_net(path)
        print(f"student {b}: {stats}", flush=True)
    summary["heldout"] = heldout_report(nets, games, held_rows, summary["target_power"])
    (a.out / f"fit{a.tag}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


def head_to_head(out: Path) -> dict:
    """{arm: {run folder: [(deal, the 28,000-target student's score) per game]}} from every
    games.csv under `out` where student_28000<arm>.pt met student_1000<arm>.pt (draws half)."""
    import csv
    import re

    arms: dict = {}
    for path in sorted(out.glob("*/games.csv")):
        with open(path) as f:
            for row in csv.DictReader(f):
                names = [re.search(r"student_(\d+)(.*)\.pt$", row[f"seat{s}"]) for s in (0, 1)]
                if (not all(names) or {n.group(1) for n in names} != {"28000", "1000"}
                        or names[0].group(2) != names[1].group(2)):
                    continue
                deep = 0 if names[0].group(1) == "28000" else 1
                score = 0.5 if row["winner"] == "draw" else float(row["winner"] == row[f"seat{deep}"])
                runs = arms.setdefault(names[0].group(2), {})
                runs.setdefault(path.parent.name, []).append((int(row["deal"]), score))
    return arms


def bootstrap(units: list[list[float]], seed: int = 0, draws: int = 4000) -> tuple[float, float, float]:
    """The mean score and a 95% bootstrap interval over units (the games of one deal in one run)."""
    sums = np.array([sum(u) for u in units])
    counts = np.array([len(u) for u in units])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(units), size=(draws, len(units)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return sums.sum() / counts.sum(), *np.percentile(means, [2.5, 97.5])


def gate(a) -> None:
    """The 28,000-target student against the 1,000-target one, per run and pooled per arm
    (fit variant and seed: the students' file suffix), and the verdict on the primary arm."""
    arms = head_to_head(a.out)
    pooled = {}
    for arm, runs in sorted(arms.items()):
        units = []
        for run, games in runs.items():
            by_deal: dict = {}
            for deal, score in games:
                by_deal.setdefault(deal, []).append(score)
            units += list(by_deal.values())
            m, lo, hi = bootstrap(list(by_deal.values()))
            print(f"{arm or '(none)'} {run}: {m:.3f} [{lo:.3f}, {hi:.3f}] over {len(games)} games")
        m, lo, hi = bootstrap(units)
        pooled[arm] = (m, lo, hi, sum(len(u) for u in units))
        print(f"{arm or '(none)'} pooled: {m:.3f} [{lo:.3f}, {hi:.3f}] over {pooled[arm][3]} games")
    families: dict = {}  # the same fit with other seeds pooled: _s300, _s300_seed1, _s300_seed2 -> _s300
    for arm in arms:
        families.setdefault(arm.split("_seed")[0], []).append(arm)
    for family, members in sorted(families.items()):
        if len(members) > 1:
            units = []
            for arm in members:
                for run, games in arms[arm].items():
                    by_deal: dict = {}
                    for deal, score in games:
                        by_deal.setdefault(deal, []).append(score)
                    units += list(by_deal.values())
            m, lo, hi = bootstrap(units)
            print(f"{family} all fit seeds ({len(members)}): {m:.3f} [{lo:.3f}, {hi:.3f}] over "
                  f"{sum(len(u) for u in units)} games")
    best = max(pooled.values(), key=lambda x: x[0]) if pooled else None
    if best:
        print(f"gate (GO at >= 0.53): best arm {best[0]:.3f}: {'GO' if best[0] >= 0.53 else 'NO-GO'}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("label")
    lab.add_argument("--games", type=int, default=400)
    lab.add_argument("--chunk", type=int, default=8)
    lab.add_argument("--workers", type=int, default=2)
    f = sub.add_parser("fit")
    f.add_argument("--steps", type=int, default=300, help="policy/value steps (configs/selfplay_2p.yaml's train_steps)")
    f.add_argument("--lr", type=float, default=0.0005, help="the cycle's peak (selfplay_2p.yaml's learning_rate)")
    f.add_argument("--value-weight", type=float, default=1.0, help="1: the trainer's loss; 0: the policy alone")
    f.add_argument("--fit-seed", type=int, default=0, help="the learner's seed (minibatch draws, initial heads)")
    f.add_argument("--fresh-head", action="store_true",
                   help="re-initialise the policy head and train it alone (policy loss) on the frozen shipped tower")
    f.add_argument("--tag", default="", help="students and fit.json named with this suffix")
    sub.add_parser("gate")
    for q in (lab, f, sub.choices["gate"]):
        q.add_argument("--seed", type=int, default=70)
        q.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    {"label": label, "fit": fit, "gate": gate}[a.command](a)


if __name__ == "__main__":
    main()
