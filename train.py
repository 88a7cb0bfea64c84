"""Self-play training of 24/7 agents from a YAML config.

    python train.py --config configs/quickstart.yaml
    python train.py --config configs/ppo_2p.yaml --set iterations=500 --set ppo.num_envs=128
    python train.py --resume runs/quickstart          # continue a killed run exactly
    python train.py --resume runs/quickstart --set iterations=200    # ... and train longer

Every run writes runs/<name>/: the resolved config, checkpoint.pt (everything needed to
resume), best.pt, metrics.csv, TensorBoard logs (tb/) and learning_curve.png.
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

from agents.nets import read_checkpoint, save_checkpoint
from training.config import load_config, save_config
from training.evaluation import evaluate_policy
from training.run import RunDir


RESUMABLE_OVERRIDES = {"iterations", "eval.every", "eval.games"}


def make_trainer(cfg, device):
    if cfg.algorithm == "ppo":
        from training.ppo import PPOTrainer

        return PPOTrainer(cfg, device)
    from training.alphazero import AlphaZeroTrainer

    return AlphaZeroTrainer(cfg, device)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML config (see configs/)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its checkpoint")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set iterations=20 --set ppo.num_envs=32")
    parser.add_argument("--runs", default="runs", help="parent directory of run directories (default: runs)")
    args = parser.parse_args(argv)
    if bool(args.config) == bool(args.resume):
        parser.error("give exactly one of --config or --resume")
    return args


def main(argv=None) -> Path:
    args = parse_args(argv)
    if args.resume:
        run_path = Path(args.resume)
        cfg = load_config(run_path / "config.yaml", args.set)
        changed = {item.partition("=")[0].strip() for item in args.set}
        if changed - RESUMABLE_OVERRIDES:
            raise ValueError(f"--set {sorted(changed - RESUMABLE_OVERRIDES)} cannot change on --resume; "
                             f"only {sorted(RESUMABLE_OVERRIDES)} can")
        if changed:  # e.g. train longer: the run's saved config records the new value
            save_config(run_path / "config.yaml", cfg)
    else:
        cfg = load_config(args.config, args.set)
        run_path = Path(args.runs) / cfg.name
    torch.set_num_threads(cfg.torch_threads)
    from agents.nets import resolve_device

    device = resolve_device(cfg.device)
    run = RunDir(run_path, cfg, resume=bool(args.resume))
    trainer = make_trainer(cfg, device)
    best_score = -np.inf
    if args.resume:
        payload = read_checkpoint(run.checkpoint, device)
        try:
            trainer.net.load_state_dict(payload["model"])
            trainer.load_state_dict(payload["trainer"])
        except (KeyError, RuntimeError, ValueError) as exc:
            raise SystemExit(f"error: checkpoint {run.checkpoint} does not match this config: {exc}")
        best_score = payload.get("best_score", -np.inf)
        print(f"resumed {run.path} at iteration {trainer.iteration}")

    progress = tqdm(total=cfg.iterations, initial=trainer.iteration, desc=f"{cfg.algorithm} {cfg.name}",
                    unit="it", dynamic_ncols=True)
    while trainer.iteration < cfg.iterations:
        start = time.perf_counter()
        metrics = trainer.run_iteration()
        metrics["seconds"] = time.perf_counter() - start
        it = trainer.iteration
        if it % cfg.eval.every == 0 or it == cfg.iterations:
            for opponent in cfg.eval.opponents:
                result = evaluate_policy(trainer.policy(), opponent, cfg.eval.games, seed=cfg.seed + it,
                                         num_players=cfg.num_players, team=cfg.team)
                metrics[f"eval_win_rate_vs_{opponent}"] = result["win_rate"]
                metrics[f"eval_margin_vs_{opponent}"] = result["mean_margin"]
            rates = [metrics[f"eval_win_rate_vs_{o}"] for o in cfg.eval.opponents]
            score = float(np.mean(rates)) if rates else it  # best.pt: the best mean win rate so far
            if score >= best_score:
                best_score = score
                save_checkpoint(run.best, trainer.net, iteration=it, config=cfg.__class__.__name__)
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


if __name__ == "__main__":
    try:
        main()
    except ValueError as exc:
        sys.exit(f"error: {exc}")
