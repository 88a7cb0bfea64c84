"""PNG plots of a tournament (matplotlib): ratings, win rates, scores.

Figures are built with `matplotlib.figure.Figure`, never pyplot, so writing them does
not switch the backend of a Jupyter kernel or open windows."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from engine.files import atomic_write

from .tournament import GameResult


def _subplots(*grid, figsize):
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid)


def plot_ratings(res: dict, path: Path) -> None:
    """Elo with 95% bootstrap intervals, strongest on top."""
    labels = list(res["ratings"])[::-1]
    vals = np.array([res["ratings"][a]["value"] for a in labels], dtype=float)
    ci = np.array([[np.nan if x is None else x for x in res["ratings"][a]["ci95"]] for a in labels], dtype=float)
    err = np.abs(np.stack([vals - ci[:, 0], ci[:, 1] - vals]))
    fig, ax = _subplots(figsize=(7, 0.6 * len(labels) + 1.5))
    ax.errorbar(vals, range(len(labels)), xerr=np.nan_to_num(err), fmt="o", capsize=4)
    ax.set_yticks(range(len(labels)), labels)
    ax.axvline(0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(f"Elo ({res['rating_method']['anchor']}); bars: 95% CI")
    ax.set_title("Bradley-Terry ratings")
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


def plot_winrate_matrix(res: dict, path: Path) -> None:
    """Row agent's win rate (draws half) against each column agent."""
    labels = list(res["ratings"])
    k = len(labels)
    m = np.full((k, k), np.nan)
    for p in res["pairs"].values():
        m[labels.index(p["agent"]), labels.index(p["opponent"])] = p["win_rate"]
    fig, ax = _subplots(figsize=(1.1 * k + 3, 1.0 * k + 2))
    im = ax.imshow(m, cmap="RdYlGn", vmin=0, vmax=1)
    for i in range(k):
        for j in range(k):
            if np.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(k), labels, rotation=30, ha="right")
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("opponent")
    ax.set_title("win rate of row agent (draw = 1/2)")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


def plot_scores(records: Sequence[GameResult], labels: list[str], path: Path) -> None:
    """Distribution of each agent's minutes per game (per seat)."""
    per_agent: dict[str, list[int]] = {a: [] for a in labels}
    for r in records:
        for label, score in zip(r.labels, r.scores):  # a void game has no scores
            per_agent[label].append(score)
    data = [per_agent[a] for a in labels]
    fig, axes = _subplots(1, 2, figsize=(11, 4))
    hi = max((max(d) for d in data if d), default=1)
    bins = np.linspace(0, hi + 10, 40)
    for label, d in zip(labels, data):
        if d:
            axes[0].hist(d, bins=bins, histtype="step", lw=1.5, label=f"{label} (mean {np.mean(d):.0f})")
    axes[0].set_xlabel("minutes per game")
    axes[0].set_ylabel("games")
    axes[0].legend(fontsize=8)
    boxes = [d if d else [np.nan] for d in data]
    try:
        axes[1].boxplot(boxes, orientation="horizontal", showmeans=True)
    except TypeError:  # matplotlib < 3.10
        axes[1].boxplot(boxes, vert=False, showmeans=True)
    axes[1].set_yticks(range(1, len(labels) + 1), labels)
    axes[1].set_xlabel("minutes per game")
    fig.suptitle("score distributions")
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


def write_plots(res: dict, records: Sequence[GameResult], out: Path) -> list[Path]:
    out = Path(out)
    paths = [out / "ratings.png", out / "winrate.png", out / "scores.png"]
    plot_ratings(res, paths[0])
    plot_winrate_matrix(res, paths[1])
    plot_scores(records, res["labels"], paths[2])
    return paths
