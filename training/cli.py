"""Self-play training of 24/7 agents from a YAML config.

    python train.py --config configs/quickstart.yaml
    python train.py --config configs/ppo_2p.yaml --set iterations=500 --set ppo.num_envs=128
    python train.py --resume runs/quickstart          # continue a killed run exactly
    python train.py --resume runs/quickstart --set iterations=200    # ... and train longer

Every run writes runs/<name>/: the resolved config, checkpoint.pt (everything needed to
resume), best.pt, metrics.csv, TensorBoard logs (tb/) and learning_curve.png. The whole
config (agent specs and the checkpoints they name included) is checked before any work
starts; a resume checks the run's files first and refuses, changing nothing, if one is
damaged.
Evaluate a trained network with evaluate.py, e.g. `--agents checkpoint:runs/NAME/best.pt greedy`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from engine.extras import MissingExtra, command, install_hint
from agents.networks import read_checkpoint, resolve_device, save_checkpoint
from evaluation.progress import progress_bar
from training.config import config_to_dict, load_config
from training.policy_games import evaluate_policy
from training.run import RESUMABLE_KEYS, RunDir


def make_trainer(cfg, device, run_path: Path | None = None):
    if cfg.algorithm == "ppo":
        from training.ppo import PPOTrainer

        return PPOTrainer(cfg, device)
    from training.selfplay import SelfPlayTrainer  # the config allows ppo and selfplay only

    return SelfPlayTrainer(cfg, device, run_path)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML config (see configs/)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its checkpoint")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set iterations=20 --set ppo.num_envs=32")
    parser.add_argument("--runs", default="runs", help="parent directory of run directories (default: runs)")
    parser.add_argument("--salvage-metrics", action="store_true",
                        help="with --resume: if metrics.csv is damaged, keep a copy of it and go on with its "
                             "intact rows (without this, a damaged metrics.csv stops the resume)")
    args = parser.parse_args(argv)
    if bool(args.config) == bool(args.resume):
        parser.error("give exactly one of --config or --resume")
    if args.salvage_metrics and not args.resume:
        parser.error("--salvage-metrics goes with --resume")
    return args


def main(argv=None) -> Path:
    args = parse_args(argv)
    stop = StopRequest()
    with stop.installed():  # from here on, Ctrl-C stops after the iteration under way
        return _train(args, stop)


def _train(args, stop: "StopRequest") -> Path:
    if args.resume:
        changed = {item.partition("=")[0].strip() for item in args.set}
        if changed - RESUMABLE_KEYS:
            raise ValueError(f"--set {sorted(changed - RESUMABLE_KEYS)} cannot change on --resume; "
                             f"only {sorted(RESUMABLE_KEYS)} can")
        run_path = Path(args.resume)
        if not (run_path / "config.yaml").is_file():
            raise ValueError(f"cannot resume: {run_path / 'config.yaml'} not found (is {run_path} a run directory?)")
        try:
            cfg = load_config(run_path / "config.yaml", args.set)
        except ValueError as exc:
            raise ValueError(f"cannot resume {run_path}: {exc}") from exc  # the message names the file
    else:
        cfg = load_config(args.config, args.set)
        run_path = Path(args.runs) / cfg.name
    torch.set_num_threads(cfg.torch_threads)
    device = resolve_device(cfg.device)
    run = RunDir(run_path, cfg, resume=bool(args.resume))
    trainer = make_trainer(cfg, device, run.path)
    best = Best()
    if args.resume:
        best = resume(run, trainer, device, args.salvage_metrics)
        if trainer.iteration >= cfg.iterations:  # nothing to train, and nothing was changed
            print(f"{run.path} is already at iteration {trainer.iteration}: the target of {cfg.iterations} "
                  f"iterations is reached, nothing to train (nothing changed). To train longer: "
                  f"{command('train')} --resume {run.path} --set iterations=N (N > {trainer.iteration})")
            print(summary(run, cfg, best, trainer.iteration, trained=0, seconds=0.0))
            return run.path

    first, started = trainer.iteration, time.perf_counter()
    saved = trainer.iteration  # the iteration checkpoint.pt holds (0: none yet)
    stop.what = lambda: f"stopping after iteration {trainer.iteration + 1} (its checkpoint is saved)"
    progress = progress_bar(total=cfg.iterations, initial=trainer.iteration, desc=f"{cfg.algorithm} {cfg.name}",
                            unit="it", dynamic_ncols=True)
    stopped_at_once = False
    try:
        while trainer.iteration < cfg.iterations and not stop.requested:
            if train_one(trainer, cfg, run, best, progress):
                saved = trainer.iteration
            if stop.requested and saved < trainer.iteration:  # what a resume starts from
                save_checkpoint(run.checkpoint, trainer.net, trainer=trainer.state_dict(),
                                best_score=best.score, iteration=trainer.iteration)
                saved = trainer.iteration
    except KeyboardInterrupt:  # the second Ctrl-C: the iteration under way is lost, the files are sound
        stopped_at_once = True
    finally:
        progress.close()
    stop.what = lambda: "writing the curve and the summary first"
    curve = run.plot_learning_curve()
    print(summary(run, cfg, best, saved, trained=trainer.iteration - first,
                  seconds=time.perf_counter() - started, curve=curve))
    if saved < cfg.iterations:
        if not run.checkpoint.is_file():  # stopped before the first checkpoint
            again = ("run the same command" if not run.metrics_csv.exists()
                     else f"remove {run.path} and run the same command")
            print(f"interrupted before the first checkpoint: nothing to resume; to start again, {again}")
            raise Interrupted(run.path)
        lost = (f" (stopped at once: iteration {saved + 1} onwards will run again)"
                if stopped_at_once and trainer.iteration > saved else "")
        print(f"interrupted at iteration {saved} of {cfg.iterations}{lost}; resume with: "
              f"{command('train')} --resume {run.path}")
        raise Interrupted(run.path)
    return run.path


class Interrupted(Exception):
    """The run stopped on Ctrl-C with its files written and said how to resume (train.py
    exits 130). Not a KeyboardInterrupt: the stop is handled, the caller may go on."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self.path = path


class StopRequest:
    """Ctrl-C (SIGINT) while train.py runs: the first asks to stop after the iteration
    under way (before the first one: not to start), the second stops at once
    (KeyboardInterrupt). `what()` says what the first one does."""

    def __init__(self):
        self.requested = False
        self.what: Callable[[], str] = lambda: "stopping before training starts"

    @contextlib.contextmanager
    def installed(self):
        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            print(f"\nCtrl-C: {self.what()}; Ctrl-C again to stop at once", file=sys.stderr, flush=True)

        try:
            previous = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread: Ctrl-C keeps its usual meaning
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


@dataclasses.dataclass
class Best:
    """best.pt: the best mean evaluation win rate so far and its iteration."""
    score: float = -np.inf
    iteration: int | None = None


def train_one(trainer, cfg, run: RunDir, best: Best, progress) -> bool:
    """One iteration: train, evaluate when due (then save checkpoint.pt and perhaps
    best.pt), log its metrics; whether it saved checkpoint.pt."""
    start = time.perf_counter()
    metrics = trainer.run_iteration()
    metrics["seconds"] = time.perf_counter() - start
    it = trainer.iteration
    due = it % cfg.eval.every == 0 or it == cfg.iterations
    if due:
        for opponent, agent in zip(cfg.eval.opponents, cfg.eval.lineup):  # its label, its typed agent
            def shown(done, total, opponent=opponent):  # the bar says what it waits for
                progress.set_postfix_str(f"evaluating vs {opponent}: {done}/{total} games")

            result = evaluate_policy(trainer.policy(), agent, cfg.eval.games, seed=cfg.seed + it,
                                     num_players=cfg.num_players, team=cfg.team, progress=shown)
            metrics[f"eval_win_rate_vs_{opponent}"] = result["win_rate"]
            metrics[f"eval_margin_vs_{opponent}"] = result["mean_margin"]
        rates = [metrics[f"eval_win_rate_vs_{o}"] for o in cfg.eval.opponents]
        score = float(np.mean(rates)) if rates else it  # best.pt: the best mean win rate so far
        if score >= best.score:
            best.score, best.iteration = score, it
            save_checkpoint(run.best, trainer.net, iteration=it, config=config_to_dict(cfg))
        save_checkpoint(run.checkpoint, trainer.net, trainer=trainer.state_dict(), best_score=best.score,
                        iteration=it)
        if rates:
            progress.write(f"iteration {it}: raw policy {win_rates_text(cfg, metrics)}; best.pt: iteration "
                           f"{best.iteration}", file=sys.stdout)
    run.log(it, metrics)
    progress.update(1)
    shown = {k: f"{v:.3f}" for k, v in metrics.items() if k.startswith("eval_win_rate")}
    if shown:
        progress.set_postfix(shown)
    return due


def eval_games(cfg) -> int:
    """Games of one evaluation against one opponent (`evaluate_policy` rounds up to whole
    seat rotations)."""
    rotations = 2 if cfg.team else cfg.num_players
    return -(-cfg.eval.games // rotations) * rotations


def win_rates_text(cfg, metrics: dict) -> str:
    """'vs random 0.950 [0.835, 0.986], vs greedy ...' (95% Wilson intervals over the games)."""
    from evaluation.stats import wilson_interval

    games = eval_games(cfg)
    parts = []
    for opponent in cfg.eval.opponents:
        rate = metrics.get(f"eval_win_rate_vs_{opponent}")
        if rate in (None, ""):
            continue
        rate = float(rate)
        lo, hi = wilson_interval(rate * games, games)
        parts.append(f"vs {opponent} {rate:.3f} [{lo:.3f}, {hi:.3f}]")
    return ", ".join(parts) + f" ({games} games each; 95% intervals)" if parts else "not evaluated yet"


def summary(run: RunDir, cfg, best: Best, saved: int, trained: int, seconds: float, curve: Path | None = None) -> str:
    """What the run learned and where its files are: the last evaluation, best.pt, the files."""
    rows = run.intact_metrics()
    evaluated = [r for r in rows if any(r.get(f"eval_win_rate_vs_{o}") not in (None, "") for o in cfg.eval.opponents)]
    where = f"at iteration {saved} of {cfg.iterations} (checkpoint.pt)" if saved else "no checkpoint yet"
    lines = [f"{cfg.name}: {where}"
             + (f"; {trained} iteration(s) in {seconds:.0f} s this time" if trained else "")]
    if evaluated:
        last = evaluated[-1]
        lines.append(f"  last evaluation, iteration {last['iteration']}: raw policy {win_rates_text(cfg, last)}")
    if best.iteration is not None:
        lines.append(f"  best checkpoint: {run.best} (iteration {best.iteration}, mean win rate {best.score:.3f})")
    files = [name for name in ("config.yaml", "checkpoint.pt", "best.pt", "metrics.csv", "learning_curve.png", "tb")
             if (run.path / name).exists()]
    lines.append(f"  files in {run.path}/: {', '.join(files)}")
    if curve is None and not (run.path / "learning_curve.png").exists():
        why = "no iteration finished" if not rows else f"matplotlib is not installed; {install_hint('matplotlib')}"
        lines.append(f"  (no learning curve: {why})")
    if run.best.is_file() and saved >= cfg.iterations:
        lines += next_commands(run, cfg)
    return "\n".join(lines)


def next_commands(run: RunDir, cfg) -> list[str]:
    """What to try after a finished run: its best network in a tournament and in a game,
    a longer run, and the recipe of the shipped agent."""
    net = f"checkpoint:{run.best}"
    return ["next:",
            f"  {command('evaluate')} --agents {net} greedy random --games 100    # rate it",
            f"  {command('play')} --opponents {net}    # play against it",
            f"  {command('train')} --resume {run.path} --set iterations={2 * cfg.iterations}    # train it longer",
            f"  {command('train')} --config selfplay_2p    # the shipped agent's recipe (hours: models/README.md)"]


def resume(run: RunDir, trainer, device, salvage_metrics: bool) -> Best:
    """Load the run's checkpoint into `trainer` and check the run's files against it
    (nothing is written until all of it is found sound, nor when the run has already
    reached its target); returns the best eval score and its iteration."""
    payload = read_checkpoint(run.checkpoint, device)
    try:
        trainer.net.load_state_dict(payload["model"])
        trainer.load_state_dict(payload["trainer"])
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"checkpoint {run.checkpoint} does not match this config: {exc}") from None
    best = Best(payload.get("best_score", -np.inf))
    if run.best.is_file():
        best.iteration = read_checkpoint(run.best, device).get("iteration")
    if trainer.iteration >= run.cfg.iterations:
        return best
    run.resume_at(trainer.iteration, salvage_metrics)
    print(f"resumed {run.path} at iteration {trainer.iteration}")
    return best


def run(argv: list[str] | None = None) -> int:
    """The command line (`python train.py`, the console command `twentyfourseven-train`):
    `main` with its errors as exit codes. A usage error is one line and exit 2 (as
    evaluate.py and play.py); an interrupt exits 130."""
    try:
        main(argv)
    except (ValueError, MissingExtra) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted:
        return 130
    except KeyboardInterrupt:  # a second Ctrl-C outside the iterations (startup, the final files)
        print("\ninterrupted at once: the run's files are as its last checkpoint left them", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(run())
