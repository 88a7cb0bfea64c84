"""A training run's directory: resolved config, checkpoints, metrics CSV, TensorBoard
logs and the learning-curve picture.

    runs/NAME/config.yaml       the resolved config (checked again on --resume)
    runs/NAME/checkpoint.pt     latest full state: model, optimiser, counters, RNGs, ...
    runs/NAME/best.pt           the checkpoint that did best against the last eval opponent
    runs/NAME/metrics.csv       one row per iteration
    runs/NAME/tb/               TensorBoard event files
    runs/NAME/learning_curve.png
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import yaml

from .config import TrainConfig, config_from_dict, config_to_dict, save_config


class RunDir:
    def __init__(self, path: str | Path, cfg: TrainConfig, resume: bool):
        self.path = Path(path)
        config_file = self.path / "config.yaml"
        if resume:
            if not config_file.is_file():
                raise ValueError(f"cannot resume: {config_file} not found (is {self.path} a run directory?)")
            saved = config_from_dict(yaml.safe_load(config_file.read_text()))
            if config_to_dict(saved) != config_to_dict(cfg):
                diff = _diff(config_to_dict(saved), config_to_dict(cfg))
                raise ValueError(f"cannot resume {self.path}: the config differs from the saved one: {diff}")
        else:
            if (self.path / "checkpoint.pt").exists():
                raise ValueError(f"{self.path} already holds a run; use --resume {self.path} or another name")
            self.path.mkdir(parents=True, exist_ok=True)
            save_config(config_file, cfg)
        self.checkpoint = self.path / "checkpoint.pt"
        self.best = self.path / "best.pt"
        self.metrics_csv = self.path / "metrics.csv"
        from torch.utils.tensorboard import SummaryWriter

        self.tb = SummaryWriter(str(self.path / "tb"))

    def log(self, step: int, metrics: dict) -> None:
        """Append a metrics row (CSV, header grows with new keys) and TensorBoard scalars."""
        rows = []
        if self.metrics_csv.exists():
            with self.metrics_csv.open() as f:
                rows = list(csv.DictReader(f))
        keys = list(rows[0].keys()) if rows else ["iteration"]
        for k in metrics:
            if k not in keys:
                keys.append(k)
        rows = [r for r in rows if int(r["iteration"]) < step]  # a resumed run rewrites later rows
        rows.append({"iteration": step, **metrics})
        with self.metrics_csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                self.tb.add_scalar(k, v, step)
        self.tb.flush()

    def plot_learning_curve(self) -> Path | None:
        """learning_curve.png: evaluation win rates and losses over iterations."""
        from matplotlib.figure import Figure  # not pyplot: leaves a notebook's backend alone

        if not self.metrics_csv.exists():
            return None
        with self.metrics_csv.open() as f:
            rows = list(csv.DictReader(f))
        fig = Figure(figsize=(11, 4))
        left, right = fig.subplots(1, 2)
        for key in rows[0].keys():
            xs = [int(r["iteration"]) for r in rows if r.get(key) not in ("", None)]
            ys = [float(r[key]) for r in rows if r.get(key) not in ("", None)]
            if key.startswith("eval_win_rate_vs_") and xs:
                left.plot(xs, ys, marker="o", label=key.removeprefix("eval_win_rate_vs_"))
            elif key in ("policy_loss", "value_loss", "entropy") and xs:
                right.plot(xs, ys, label=key)
        left.set(title="raw policy win rate vs", xlabel="iteration", ylabel="win rate (draw = 1/2)", ylim=(0, 1))
        left.axhline(0.5, color="grey", lw=0.8, ls="--")
        right.set(title="training losses", xlabel="iteration")
        for ax in (left, right):
            if ax.get_legend_handles_labels()[0]:
                ax.legend()
        fig.suptitle(self.path.name)
        fig.tight_layout()
        out = self.path / "learning_curve.png"
        fig.savefig(out, dpi=100)
        return out


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict) and k != "opponents":
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: saved {a.get(k)!r}, now {b.get(k)!r}")
    return out
