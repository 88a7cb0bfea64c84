"""The search settings record: the one place for each search parameter's default, rule,
cross-checks and meaning, and for the kernels' parameter record.

`SearchSettings` is what the search agents are built from and what self-play, Ray and the
ladder carry. A field's rule checks a parameter of that name for any agent (`RULES`); the
fields the kernels read make their parameter record (`kernel_parameters`, a NamedTuple
read by name, ``params.c``). Strings are only its edges: `parse`, `spec`, `table`.

Parameters (spec ``name:key=value,...``), defaults tuned on duplicate matches against
`greedy` and `ismcts` (verdicts and evidence: docs/status.md):

{table}
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from dataclasses import dataclass, field
from functools import partial

from .parameters import (boolean, choice, non_negative_int, number, parse_parameters, positive_int, probability,
                         refuse_retired_parameters, seconds)
from .policy_kernels import epsilon_threshold

ROLLOUT_DEPTH = 4  # rollout placements at most, scored by the end-of-game guess
EVALUATED_DEPTH = 1  # rollout placements before a network's fast evaluator scores the position
MARGIN = 0.5  # the default margin weight (the fast evaluator learns rewards with it)
EXPANSIONS = ("greedy", "random")  # `agents.search.core.expand_greedy`, `expand_random`


def setting(default, rule, doc, kernel=None, guided=False):
    """A settings field: its default, its rule (name, value) -> checked value, its meaning;
    `kernel`: its type in the kernel's parameter record (float, int, or a conversion), None
    for a parameter the kernels do not read; `guided`: a parameter of a network-guided
    search only (ismcts with net=PATH)."""
    return field(default=default, metadata={"rule": rule, "doc": doc, "kernel": kernel, "guided": guided})


@dataclass(frozen=True)
class SearchSettings:
    """The settings of one Monte Carlo tree search (see the module doc); checked when built."""

    iterations: int = setting(1000, positive_int, "simulations per move (ignored when `time` is given)")
    time: float | None = setting(None, seconds, "seconds per move instead of a fixed number of iterations")
    c: float = setting(0.5, number, "UCB's exploration constant (rewards are in [-1 - margin, 1 + margin])",
                       kernel=float)
    epsilon: float = setting(0.1, probability, "random-move probability of the epsilon-greedy rollout (0: greedy, "
                                               "1: uniformly random)", kernel=epsilon_threshold)
    depth: int | None = setting(None, non_negative_int, "rollout placements at most (0 = to the game's end); a cut "
                                "rollout is scored as if the game ended there, or by a network's fast evaluator; "
                                "default 4, or 1 with the evaluator", kernel=int)
    margin: float = setting(MARGIN, number, "weight of tanh(score lead / 100) added to each reward", kernel=float)
    expand: str = setting("greedy", partial(choice, allowed=EXPANSIONS), "order of new children below the root: "
                          "``greedy`` (the rollout policy's) or ``random``; the root's is the greedy ranking or the "
                          "network's policy")
    expand_after: int = setting(40, non_negative_int, "a node grows children once visited this often (the root "
                                                      "always); before that, simulations roll out from it", kernel=int)
    widen: float = setting(0.5, number, "progressive widening: a node visited n times has at most "
                                        "1 + widen * sqrt(n) children (0 = all legal actions)", kernel=float)
    prior: float = setting(0.0, number, "weight of the network's policy as a progressive bias at the root",
                           kernel=float, guided=True)
    evaluator: bool = setting(True, boolean, "score cut rollouts with the network's fast evaluator", guided=True)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None or f.default is not None:  # None stays None where it is the default
                object.__setattr__(self, f.name, f.metadata["rule"](f.name, value))

    # --- the edges ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "SearchSettings":
        """The settings of a spec's parameters, ``"iterations=400,c=0.7"`` (retired
        names are one-line errors, `agents.parameters.RETIRED_PARAMETERS`)."""
        if not isinstance(text, str):
            raise ValueError(f"search settings must be a string of key=value parameters, got {text!r}")
        positional, kwargs = parse_parameters(text, text)
        if positional:
            raise ValueError(f"search settings {text!r}: every parameter is key=value, got {positional}")
        return cls.of_parameters(kwargs, f"search settings {text!r}")

    @classmethod
    def of_parameters(cls, kwargs: dict, where: str) -> "SearchSettings":
        """The settings of parsed ``key=value`` parameters; `where` names them in errors."""
        names = tuple(f.name for f in dataclasses.fields(cls))
        refuse_retired_parameters(kwargs, names, where)
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise ValueError(f"{where}: unknown parameter(s) {unknown}; known: {', '.join(names)}")
        return cls(**kwargs)

    def changed(self) -> dict:
        """The parameters that differ from the defaults, by name (an agent's keyword arguments)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}

    def spec(self) -> str:
        """The parameters that differ from the defaults, as a spec's ``key=value,...``."""
        return ",".join(f"{name}={value_text(value)}" for name, value in self.changed().items())

    def __str__(self) -> str:
        return self.spec()

    # --- the checks and the kernel --------------------------------------------------------
    def check_guided(self, guided: bool) -> None:
        """`prior` and `evaluator` are parameters of a network-guided search."""
        if not guided and (self.prior != 0.0 or not self.evaluator):
            raise ValueError("prior and evaluator are parameters of a network-guided search: give net=PATH")

    def rollout_depth(self, evaluated: bool) -> int:
        """`depth`, or its default: 1 when a network's fast evaluator scores cut rollouts, else 4."""
        if self.depth is not None:
            return self.depth
        return EVALUATED_DEPTH if evaluated else ROLLOUT_DEPTH

    def kernel_parameters(self, evaluated: bool = False):
        """The search kernels' parameter record (`kernel_record`) of these settings;
        `evaluated`: a fast evaluator scores cut rollouts (the default depth is 1)."""
        resolved = dataclasses.replace(self, depth=self.rollout_depth(evaluated))
        return kernel_record(type(self))(*(f.metadata["kernel"](getattr(resolved, f.name))
                                           for f in dataclasses.fields(self) if f.metadata["kernel"]))

    @classmethod
    def table(cls) -> str:
        """The parameters' reStructuredText table: name, default, meaning."""
        rows = [(f.name, "none" if f.default is None else str(f.default).lower() if isinstance(f.default, bool)
                 else str(f.default), f.metadata["doc"] + (" (ismcts with net=PATH)" if f.metadata["guided"] else ""))
                for f in dataclasses.fields(cls)]
        line = "============ ======= " + "=" * 60
        body = [f"{n:<12} {d:<7} {m}" for n, d, m in rows]
        return "\n".join([line, *body, line])


def kernel_record(cls: type) -> type:
    """The NamedTuple type of `cls`' kernel parameter record (`cls.Record`): the fields
    that have a kernel type, in field order."""
    if "Record" not in vars(cls):
        record = namedtuple("Record", [f.name for f in dataclasses.fields(cls) if f.metadata["kernel"]],
                            module=cls.__module__)
        record.__qualname__ = f"{cls.__qualname__}.Record"  # pickled by name in numba's cache index
        cls.Record = record
    return cls.Record


def value_text(value) -> str:
    """A parameter's value as a spec writes it: true/false, 3 for 3.0, 0.01."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


# The shipped networks' search, the one place for it: self-play trains with it, the `selfplay`
# agent plays it (at 1000 iterations, or `time=`), its prior measured against none (docs/status.md).
SELFPLAY_SEARCH = SearchSettings(iterations=1000, prior=3.0)

NAMES = tuple(f.name for f in dataclasses.fields(SearchSettings))
RULES = {f.name: f.metadata["rule"] for f in dataclasses.fields(SearchSettings)}  # `agents.base.check_parameters`
SHARED = tuple(f.name for f in dataclasses.fields(SearchSettings) if not f.metadata["guided"])
GUIDED = tuple(f.name for f in dataclasses.fields(SearchSettings) if f.metadata["guided"])


kernel_record(SearchSettings)
__doc__ = __doc__.format(table=SearchSettings.table())
