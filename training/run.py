"""A training run's directory: resolved config, checkpoints, metrics CSV, TensorBoard
logs and the learning-curve picture.

    runs/NAME/config.yaml       the resolved config (checked again on --resume)
    runs/NAME/checkpoint.pt     latest full state: model, optimiser, counters, RNGs, ...
    runs/NAME/best.pt           the checkpoint that did best against the eval opponents
    runs/NAME/metrics.csv       one row per iteration
    runs/NAME/tb/               TensorBoard event files
    runs/NAME/learning_curve.png

Nothing here is lost to a kill or a full disk: files that are rewritten (config.yaml,
checkpoints, the picture) are written to a temporary file and renamed over the old one,
and metrics.csv is appended to and synced row by row (rewritten the same all-or-nothing
way when a new metric adds a column). A resume first checks what it finds and refuses,
naming the file and leaving it untouched, if anything is damaged or missing.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
from pathlib import Path

from engine.extras import optional
from engine.files import atomic_write

from .config import TrainConfig, config_from_dict, keys_read, missing_keys, read_config_file, save_config

# Config keys a resumed run may change (`train.py --resume RUN --set KEY=VALUE`).
# Where games run is not part of a run's identity: a Ray run and a local run store the same games.
RESUMABLE_KEYS = frozenset({"iterations", "eval.every", "eval.games", "selfplay.executor", "selfplay.ray_address"})


class MetricsDamaged(ValueError):
    """metrics.csv is not a clean sequence of rows for iterations 1, 2, ..."""


class RunDir:
    """The files of one run. A new run refuses a directory that already holds one; a
    resumed run (`resume=True`) checks the saved config against `cfg` (only
    `RESUMABLE_KEYS` may differ) and changes nothing until `resume_at` has checked the
    rest."""

    def __init__(self, path: str | Path, cfg: TrainConfig, resume: bool):
        self.path = Path(path)
        self.config_file = self.path / "config.yaml"
        self.checkpoint = self.path / "checkpoint.pt"
        self.best = self.path / "best.pt"
        self.metrics_csv = self.path / "metrics.csv"
        self.cfg = cfg
        self._header: list[str] | None = None
        self._tb = None
        if resume:
            self.config_changed = self._check_saved_config(cfg)
        else:
            self._start(cfg)

    # --- starting and resuming ------------------------------------------------------------
    def _start(self, cfg: TrainConfig) -> None:
        earlier = [p.name for p in (self.checkpoint, self.metrics_csv) if p.exists()]
        if earlier:
            raise ValueError(f"{self.path} already holds a run ({', '.join(earlier)}); "
                             f"use --resume {self.path} to go on with it, or --set name=NEW for a new run")
        self.path.mkdir(parents=True, exist_ok=True)
        save_config(self.config_file, cfg)
        self.config_changed = False

    def _check_saved_config(self, cfg: TrainConfig) -> bool:
        """Whether `cfg` changes the saved config (in RESUMABLE_KEYS only; else ValueError)."""
        if not self.config_file.is_file():
            raise ValueError(f"cannot resume: {self.config_file} not found (is {self.path} a run directory?)")
        data = read_config_file(self.config_file)
        top, nested = missing_keys(data)
        if top:
            raise ValueError(f"cannot resume {self.path}: {self.config_file} lacks the keys {top}; it is damaged "
                             "(cut short?) or not a saved run config. It is left as it is.")
        if nested:
            print(f"note: {self.config_file} has no {', '.join(nested)} (written by an older version?); "
                  "using their defaults")
        try:
            saved = config_from_dict(data)
        except ValueError as exc:
            raise ValueError(f"cannot resume {self.path}: {self.config_file}: {exc}") from exc
        diff = _diff(keys_read(saved), keys_read(cfg))  # an unread section may differ (its defaults moved)
        fixed = [line for line in diff if line.partition(":")[0] not in RESUMABLE_KEYS]
        if fixed:
            raise ValueError(f"cannot resume {self.path}: the config differs from the saved one: {fixed}")
        return bool(diff)

    def resume_at(self, iteration: int, salvage_metrics: bool = False) -> None:
        """Check metrics.csv against a checkpoint at `iteration` and make the run ready
        to continue from it: drop the rows of later iterations (they are run again) and
        save the config if `--set` changed it. Damage within the first `iteration` rows
        (a cut or malformed line, rows missing) is a ValueError that leaves the file as
        it is, unless `salvage_metrics`: then the file is copied aside and its intact
        rows kept. Damage only after them (a kill while a later row was written) needs
        no salvage: those rows are dropped anyway, and the file is copied aside first."""
        header, rows, damage = self._scan_metrics()
        if damage is None and len(rows) < iteration:
            last = int(rows[-1]["iteration"]) if rows else 0
            damage = f"rows are missing: its last row is iteration {last}, the checkpoint is at iteration {iteration}"
        if damage is not None and len(rows) < iteration and not salvage_metrics:
            raise ValueError(f"cannot resume {self.path}: {self.metrics_csv} is damaged: {damage}. It is left as "
                             "it is; to continue without the lost rows, resume with --salvage-metrics (a copy "
                             "of the damaged file is kept)")
        if damage is not None:
            header, rows = self._salvage_metrics(damage, header, rows, iteration)
        elif len(rows) > iteration:
            print(f"{self.metrics_csv}: dropping the rows of iterations {iteration + 1}-{len(rows)}, after the "
                  "checkpoint (they are run again)")
            rows = rows[:iteration]
            self._rewrite_metrics(header, rows)
        self._header = header or None
        if self.config_changed:  # e.g. train longer: the saved config records the new value
            save_config(self.config_file, self.cfg)

    def _salvage_metrics(self, damage: str, header: list[str], rows: list[dict],
                         iteration: int) -> tuple[list[str], list[dict]]:
        """Copy the damaged file aside and keep its intact `rows` up to `iteration`; the
        iterations whose rows were lost get empty rows, so the file stays one row per
        iteration and the gap shows."""
        rows = rows[:iteration]
        intact = len(rows)
        rows += [{"iteration": k} for k in range(intact + 1, iteration + 1)]
        copy = _unused_name(self.metrics_csv.with_name(self.metrics_csv.name + ".damaged"))
        if self.metrics_csv.exists():
            shutil.copy2(self.metrics_csv, copy)
        header = header or ["iteration"]
        self._rewrite_metrics(header, rows)
        lost = f"; iterations {intact + 1}-{iteration} have empty rows" if intact < iteration else ""
        print(f"warning: {self.metrics_csv} was damaged ({damage}); the damaged file is saved as {copy}; "
              f"kept the rows of iterations 1-{intact}{lost}")
        return header, rows

    # --- metrics --------------------------------------------------------------------------
    def log(self, step: int, metrics: dict) -> None:
        """Append a metrics row (synced to disk) and TensorBoard scalars. A metric not
        seen before adds a column: the file is then rewritten whole, all or nothing."""
        if self._header is None:
            self._header = self._read_metrics()[0] if self.metrics_csv.exists() else []
        row = {"iteration": step, **metrics}
        new_keys = [k for k in row if k not in self._header]
        if new_keys or not self.metrics_csv.exists():
            rows = self._read_metrics()[1] if self.metrics_csv.exists() else []
            self._rewrite_metrics(self._header + new_keys, rows + [row])
            self._header = self._header + new_keys
        else:
            with self.metrics_csv.open("a", newline="") as f:
                csv.DictWriter(f, fieldnames=self._header).writerow(row)
                f.flush()
                os.fsync(f.fileno())
        tb = self._tensorboard()
        if tb is None:
            return
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                tb.add_scalar(k, v, step)
        tb.flush()

    def _tensorboard(self):
        """The run's TensorBoard writer (tb/), or None without the [plots] extra."""
        if self._tb is None and optional("tensorboard", "the TensorBoard logs (tb/)"):
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(self.path / "tb"))
        return self._tb

    def intact_metrics(self) -> list[dict]:
        """The rows of metrics.csv up to its first damaged line (none: [])."""
        return self._scan_metrics()[1]

    def _read_metrics(self) -> tuple[list[str], list[dict]]:
        """(header, rows) of metrics.csv, empty when there is none; MetricsDamaged if
        any line is cut or malformed or the rows are not iterations 1, 2, ... in order."""
        header, rows, damage = self._scan_metrics()
        if damage:
            raise MetricsDamaged(damage)
        return header, rows

    def _scan_metrics(self) -> tuple[list[str], list[dict], str | None]:
        """(header, the rows before the first damaged line, what the damage is or None)."""
        if not self.metrics_csv.exists():
            return [], [], None
        text = self.metrics_csv.read_text(errors="replace")
        try:
            lines = list(csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            return [], [], f"it is not readable as CSV ({exc})"
        cut = bool(text) and not text.endswith("\n")
        if not lines or not lines[0] or lines[0][0] != "iteration" or (cut and len(lines) == 1):
            return [], [], "its first line is not a header starting with 'iteration'"
        header, rows = lines[0], []
        for number, line in enumerate(lines[1:], start=2):
            if cut and number == len(lines):
                return header, rows, f"its last line ({number}) is cut short (no line end)"
            row = _parse_row(header, line, expected=len(rows) + 1)
            if isinstance(row, str):
                return header, rows, f"line {number} {row}"
            rows.append(row)
        return header, rows, None

    def _rewrite_metrics(self, header: list[str], rows: list[dict]) -> None:
        def write(f):
            text = io.StringIO(newline="")
            writer = csv.DictWriter(text, fieldnames=header or ["iteration"], restval="")
            writer.writeheader()
            writer.writerows(rows)
            f.write(text.getvalue().encode())

        atomic_write(self.metrics_csv, write)

    # --- the picture ------------------------------------------------------------------------
    def plot_learning_curve(self) -> Path | None:
        """learning_curve.png: evaluation win rates and losses over iterations (None: no
        rows yet, or no matplotlib: the [plots] extra)."""
        if not optional("matplotlib", "the learning curve (learning_curve.png)"):
            return None
        from matplotlib.figure import Figure  # not pyplot: leaves a notebook's backend alone

        header, rows = self._read_metrics()
        if not rows:
            return None
        fig = Figure(figsize=(11, 4))
        left, right = fig.subplots(1, 2)
        for key in header:
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
        atomic_write(out, lambda f: fig.savefig(f, format="png", dpi=100))
        return out


def _parse_row(header: list[str], line: list[str], expected: int) -> dict | str:
    """The row of a CSV line, or what is wrong with it (it must be iteration `expected`)."""
    if len(line) != len(header):
        return f"has {len(line)} fields, the header {len(header)}"
    try:
        iteration = int(line[0])
    except ValueError:
        return f"has iteration {line[0]!r}, not a number"
    if iteration != expected:
        return f"is iteration {iteration}, expected {expected} (rows must be iterations 1, 2, ... in order)"
    return dict(zip(header, line))


def _unused_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate, n = path.with_name(f"{path.name}.{n}"), n + 1
    return candidate


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict) and k != "opponents":
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}: saved {a.get(k)!r}, now {b.get(k)!r}")
    return out
