"""The optional parts of the toolkit and the extras that install them.

A core install (``pip install twentyfourseven``) has the engine, the environments, the
agents, tournaments and training. The rest comes with a named extra of pyproject.toml
(``pip install "twentyfourseven[web]"``). Code that uses an optional library imports it
through `require`, so a missing extra is one line that names it, not a traceback:

    >>> require("starlette", "the web game")   # ImportError without the [web] extra:
    MissingExtra: the web game: starlette is not installed; pip install "twentyfourseven[web]"

Outputs that only decorate a run (a tournament's PNG plots, TensorBoard logs) are skipped
with one such line instead (`optional`), so the run itself works on a core install.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

# Each optional top-level module, and the extra of pyproject.toml that installs it.
EXTRAS = {
    "starlette": "web", "uvicorn": "web", "httptools": "web",
    "matplotlib": "plots", "tensorboard": "plots",
    "ray": "ray",
    "pyspiel": "openspiel", "open_spiel": "openspiel",
    "stable_baselines3": "sb3", "sb3_contrib": "sb3",
}


class MissingExtra(ImportError):
    """An optional library is not installed; the message names the extra to install."""


def install_hint(module: str) -> str:
    """The pip command that installs `module` (a top-level name of `EXTRAS`)."""
    return f'pip install "twentyfourseven[{EXTRAS[module.partition(".")[0]]}]"'


def require(module: str, feature: str) -> ModuleType:
    """Import `module` (e.g. "matplotlib.figure"); if its library is missing, MissingExtra
    saying that `feature` needs it and which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        if top not in EXTRAS:
            raise
        raise MissingExtra(f"{feature}: {top} is not installed; {install_hint(top)}") from exc


_said: set[str] = set()


def optional(module: str, feature: str) -> ModuleType | None:
    """`require` for a by-product: None if the library is missing, after one line on
    stderr (once per process and feature) that `feature` is skipped and how to get it."""
    try:
        return require(module, feature)
    except MissingExtra as exc:
        if feature not in _said:
            _said.add(feature)
            print(f"skipped {exc}", file=sys.stderr, flush=True)
        return None


def command(script: str) -> str:
    """How the user started `script` ("train", "evaluate" or "play"), for the commands a
    run prints: ``python train.py`` from a checkout, ``twentyfourseven-train`` installed."""
    started = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return f"twentyfourseven-{script}" if started.startswith("twentyfourseven-") else f"python {script}.py"
