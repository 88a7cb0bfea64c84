"""An agent's parameters: the rules that check a value (`positive_int`, `seconds`, ...),
the reader of a spec's ``key=value`` text, and the parameters the measurements retired.

The rule for a parameter of a given name is the same for every agent that takes it:
`agents.base.PARAMETER_RULES` and the search settings' (`agents.settings.RULES`) name them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# Agent parameters the measurements rejected (``name``) or values of them (``name=value``),
# and why, in a few words (evidence: docs/status.md). A spec that gives one is a one-line
# error; a parameter an agent still takes under that name (device, safe of `policy`) is
# only refused where the agent no longer takes it.
RETIRED_PARAMETERS = {
    "gumbel": "the Gumbel root lost: no better than UCB at the root and a flat ladder (docs/status.md); drop it",
    "c_visit": "a parameter of the retired Gumbel root and completed-Q targets; drop it",
    "c_scale": "a parameter of the retired Gumbel root and completed-Q targets; drop it",
    "halving": "sequential halving at the root scored no better than UCB (0.612-0.637 against 0.627-0.636); drop it",
    "leaf": "leaf=value (PUCT with the network's value at every leaf) lost badly at equal time (0.23-0.29); cut "
            "rollouts scored by the fast evaluator are the only leaf: drop leaf=",
    "selection": "selection=puct went with leaf=value (it lost at equal time); UCB is the only selection: drop "
                 "selection=",
    "device": "it placed the network of the retired leaf=value; a search's network runs in numba on the CPU: drop "
              "device=",
    "rollout": "use epsilon=0 for greedy rollouts, epsilon=1 for random ones (rollout=epsilon is the default)",
    "safe": "greedy rollouts always break ties toward safe moves (safe=false was never better): drop safe=",
    "symmetries": "averaging the raw policy over the board's quarter turns at play time added +0.006-0.009, inside "
                  "the noise, at four times the cost: drop symmetries=",
    "expand=evaluator": "growing deeper nodes by the evaluator one move ahead gained +0.01 at equal time (noise) "
                        "and no stronger self-play loop: use expand=greedy (the default)",
    "expand=policy": "it was expand=greedy under another name: use expand=greedy (the default)",
}


def refuse_retired_parameters(kwargs: dict[str, Any], accepted, where: str) -> None:
    """A one-line ValueError for the first retired parameter (or value) of `kwargs` that the
    agent does not take (`accepted`: the names it does)."""
    for key, value in kwargs.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        reason = RETIRED_PARAMETERS.get(f"{key}={text}")
        if reason is None and key not in accepted:
            reason = RETIRED_PARAMETERS.get(key)
        if reason is not None:
            raise ValueError(f"{where}: {key}={text} was retired: {reason}")



def parse_parameters(text: str, spec: str) -> tuple[list[str], dict[str, Any]]:
    """The parameters of a spec, ``"a=1,b=x,path"`` (the text after ``name:``), as
    (positional, keyword) with typed values; `spec` names them in errors."""
    positional: list[str] = []
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in _split_parameters(spec, text))):
        key, eq, value = part.partition("=")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            typed = value[1:-1].strip()
        elif "[" in part or "]" in part:
            raise ValueError(f"bad agent spec {spec!r}: brackets must enclose a whole value, as in "
                             f"target=[ismcts:iterations=200,c=0.4]; got {part!r}")
        else:
            typed = _typed(value)
        if eq:
            kwargs[key.strip()] = typed
        else:
            positional.append(part)
    return positional, kwargs


def _split_parameters(spec: str, rest: str) -> list[str]:
    """`rest` split at the commas outside square brackets; unbalanced brackets are an error."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"bad agent spec {spec!r}: a ']' closes no '['")
        elif ch == "," and depth == 0:
            parts.append(rest[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"bad agent spec {spec!r}: a '[' is never closed")
    parts.append(rest[start:])
    return parts


def _typed(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text



def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def non_negative_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def number(name: str, value) -> float:
    """A finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    return float(value)


def seconds(name: str, value) -> float:
    """A time budget: a finite number of seconds > 0 (nan, inf, 0 or less would let a
    search run forever or not at all)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


def probability(name: str, value) -> float:
    p = number(name, value)
    if p > 1:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return p


def boolean(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return bool(value)


def choice(name: str, value, allowed) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value
