"""The files that ship with the toolkit: the trained networks and the configs.

In a checkout they are the top-level folders ``models/`` (``selfplay_2p.pt``, ...) and
``configs/`` (``quickstart.yaml``, ...). A wheel installs the same files as the data
packages ``agents.shipped_models`` and ``agents.shipped_configs`` (pyproject.toml maps the
two folders there), so an install used far from any checkout finds them as well. Code asks
this module for them, never builds a path of its own.

    >>> from agents import shipped
    >>> shipped.folder("models") / "selfplay_2p.pt"     # the 2-player network
    >>> shipped.config_file("quickstart")                # configs/quickstart.yaml
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

KINDS = ("models", "configs")
CHECKOUT = Path(__file__).resolve().parents[1]


def folder(kind: str) -> Path:
    """The folder of the shipped `kind` ("models" or "configs"): the installed data package
    if there is one, else the checkout's top-level folder."""
    if kind not in KINDS:
        raise ValueError(f"no shipped files of kind {kind!r}; the kinds are {', '.join(KINDS)}")
    spec = find_spec(f"agents.shipped_{kind}")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return CHECKOUT / kind


def config_names() -> list[str]:
    """The names of the shipped configs (``quickstart``, ``selfplay_2p``, ...)."""
    return sorted(path.stem for path in folder("configs").glob("*.yaml"))


def config_file(name: str | Path) -> Path:
    """A config by path, or a shipped one by its name: ``configs/quickstart.yaml`` (an
    existing file) is that file; ``quickstart`` or ``quickstart.yaml`` (no folder part, no
    such file here) is the shipped config. ValueError naming the shipped ones otherwise."""
    path = Path(name)
    if path.is_file():
        return path
    if path.parent == Path(".") and path.suffix in ("", ".yaml"):
        candidate = folder("configs") / f"{path.stem}.yaml"
        if candidate.is_file():
            return candidate
    raise ValueError(f"config file not found: {name} (a path, or a shipped config by name: "
                     f"{', '.join(config_names())})")


def network(num_players: int, team: bool = False) -> Path:
    """The shipped self-play network for this game: ``selfplay_team.pt`` for the team
    variant, else ``selfplay_<n>p.pt`` (ValueError, naming the config that trains one, if
    there is none: 3 players)."""
    name = "selfplay_team.pt" if team else f"selfplay_{num_players}p.pt"
    path = folder("models") / name
    if not path.is_file():
        config = "configs/selfplay_team.yaml" if team else "configs/selfplay_2p.yaml or selfplay_4p.yaml"
        variant = "the team variant" if team else f"{num_players} players"
        raise ValueError(f"no self-play network is shipped for {variant} ({path} is missing); train one with "
                         f"train.py ({config}) and play it as ismcts:net=runs/NAME/generations/gen_<last>.pt")
    return path
