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
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from agents.nets import read_checkpoint, resolve_device, save_checkpoint
from training.config import config_to_dict, load_config
from training.evaluation import evaluate_policy
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
    best_score = -np.inf
    if args.resume:
        best_score = resume(run, trainer, device, args.salvage_metrics)

    progress = tqdm(total=cfg.iterations, initial=trainer.iteration, desc=f"{cfg.algorithm} {cfg.name}",
                    unit="it", dynamic_ncols=True)
    while trainer.iteration < cfg.iterations:
        start = time.perf_counter()
        metrics = trainer.run_iteration()
        metrics["seconds"] = time.perf_counter() - start
        it = trainer.iteration
        if it % cfg.eval.every == 0 or it == cfg.iterations:
            for opponent, agent in zip(cfg.eval.opponents, cfg.eval.lineup):  # its label, its typed agent
                def shown(done, total, opponent=opponent):  # the bar says what it waits for
                    progress.set_postfix_str(f"evaluating vs {opponent}: {done}/{total} games")

                result = evaluate_policy(trainer.policy(), agent, cfg.eval.games, seed=cfg.seed + it,
                                         num_players=cfg.num_players, team=cfg.team, progress=shown)
                metrics[f"eval_win_rate_vs_{opponent}"] = result["win_rate"]
                metrics[f"eval_margin_vs_{opponent}"] = result["mean_margin"]
            rates = [metrics[f"eval_win_rate_vs_{o}"] for o in cfg.eval.opponents]
            score = float(np.mean(rates)) if rates else it  # best.pt: the best mean win rate so far
            if score >= best_score:
                best_score = score
                save_checkpoint(run.best, trainer.net, iteration=it, config=config_to_dict(cfg))
            save_checkpoint(run.checkpoint, trainer.net, trainer=trainer.state_dict(), best_score=best_score,
                            iteration=it)
        run.log(it, metrics)
        progress.update(1)
        shown = {k: f"{v:.3f}" for k, v in metrics.items() if k.startswith("eval_win_rate")}
        if shown:
            progress.set_postfix(shown)
    progress.close()
    curve = run.plot_learning_curve()
    print(f"done: {run.path} (checkpoint {run.checkpoint}, best {run.best}, curve {curve})")
    return run.path


def resume(run: RunDir, trainer, device, salvage_metrics: bool) -> float:
    """Load the run's checkpoint into `trainer` and check the run's files against it
    (nothing is written until all of it is found sound); returns the best eval score."""
    payload = read_checkpoint(run.checkpoint, device)
    try:
        trainer.net.load_state_dict(payload["model"])
        trainer.load_state_dict(payload["trainer"])
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise SystemExit(f"error: checkpoint {run.checkpoint} does not match this config: {exc}")
    run.resume_at(trainer.iteration, salvage_metrics)
    print(f"resumed {run.path} at iteration {trainer.iteration}")
    return payload.get("best_score", -np.inf)


if __name__ == "__main__":
    try:
        main()
    except ValueError as exc:
        sys.exit(f"error: {exc}")
