"""The search settings record: the one place for each search parameter's default, rule,
cross-checks and meaning, and for the kernel's parameter array.

`SearchSettings` is what the search agents (`agents.search`, `agents.best_response`) are
built from and what self-play, Ray and the ladder carry (with a network's path beside
it). Strings are only its edges: `parse` reads the parameters of a spec
(``"iterations=1000,prior=3"``, as the command line and config files give them) and
`spec` writes them back for a label or a saved config. `table` writes the parameters'
table that the search agents' documentation shows.

Parameters (spec ``name:key=value,...``), defaults tuned on duplicate matches against
`greedy` and `ismcts` (verdicts and evidence: docs/status.md):

{table}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from . import search_parts as parts
from .base import boolean, choice, non_negative_int, number, positive_int, probability, seconds
from .policy_kernels import epsilon_threshold

ROLLOUT_DEPTH = 4  # rollout placements at most, scored by the end-of-game guess
EVALUATED_DEPTH = 1  # rollout placements before a network's fast evaluator scores the position
MARGIN = 0.5  # the default margin weight (the fast evaluator learns rewards with it)
EXPANSIONS = {"greedy": parts.EXPAND_GREEDY, "random": parts.EXPAND_RANDOM}


def _expand(name, value):
    return choice(name, value, tuple(EXPANSIONS))


def _time(name, value):
    return None if value is None else seconds(name, value)


def _depth(name, value):
    return None if value is None else non_negative_int(name, value)


def _param(default, rule, doc, guided=False):
    """A settings field: its default, its rule (name, value) -> checked value, its meaning;
    `guided`: a parameter of a network-guided search only (ismcts with net=PATH)."""
    return field(default=default, metadata={"rule": rule, "doc": doc, "guided": guided})


@dataclass(frozen=True)
class SearchSettings:
    """The settings of one Monte Carlo tree search (see the module doc); checked when built."""

    iterations: int = _param(1000, positive_int, "simulations per move (ignored when `time` is given)")
    time: float | None = _param(None, _time, "seconds per move instead of a fixed number of iterations")
    c: float = _param(0.5, number, "UCB's exploration constant (rewards are in [-1 - margin, 1 + margin])")
    epsilon: float = _param(0.1, probability, "random-move probability of the epsilon-greedy rollout (0: greedy, "
                                              "1: uniformly random)")
    depth: int | None = _param(None, _depth, "rollout placements at most (0 = to the game's end); a cut rollout is "
                                             "scored as if the game ended there, or by a network's fast evaluator; "
                                             "default 4, or 1 with the evaluator")
    margin: float = _param(MARGIN, number, "weight of tanh(score lead / 100) added to each reward")
    expand: str = _param("greedy", _expand, "order of new children below the root: ``greedy`` (the rollout "
                                            "policy's) or ``random``; the root's is the greedy ranking or the "
                                            "network's policy")
    expand_after: int = _param(40, non_negative_int, "a node grows children once visited this often (the root "
                                                     "always); before that, simulations roll out from it")
    widen: float = _param(0.5, number, "progressive widening: a node visited n times has at most "
                                       "1 + widen * sqrt(n) children (0 = all legal actions)")
    prior: float = _param(0.0, number, "weight of the network's policy as a progressive bias at the root",
                          guided=True)
    evaluator: bool = _param(True, boolean, "score cut rollouts with the network's fast evaluator", guided=True)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, f.metadata["rule"](f.name, getattr(self, f.name)))

    # --- the edges ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "SearchSettings":
        """The settings of a spec's parameters, ``"iterations=1000,prior=3"`` (retired
        names are one-line errors, `agents.base.RETIRED_PARAMETERS`)."""
        from .base import parse_parameters, refuse_retired_parameters

        if not isinstance(text, str):
            raise ValueError(f"search settings must be a string of key=value parameters, got {text!r}")
        positional, kwargs = parse_parameters(text, text)
        if positional:
            raise ValueError(f"search settings {text!r}: every parameter is key=value, got {positional}")
        refuse_retired_parameters(kwargs, NAMES, f"search settings {text!r}")
        unknown = sorted(set(kwargs) - set(NAMES))
        if unknown:
            raise ValueError(f"search settings {text!r}: unknown parameter(s) {unknown}; known: {', '.join(NAMES)}")
        return cls(**kwargs)

    def spec(self) -> str:
        """The parameters that differ from the defaults, as a spec's ``key=value,...``."""
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out.append(f"{f.name}={_text(value)}")
        return ",".join(out)

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

    def kernel_parameters(self, evaluated: bool = False) -> np.ndarray:
        """The search kernel's parameter record (`search_parts.parameters`); `evaluated`: a
        fast evaluator scores cut rollouts (LEAF_EVALUATOR)."""
        depth = self.rollout_depth(evaluated)
        leaf = parts.LEAF_ROLLOUT if depth == 0 else parts.LEAF_EVALUATOR if evaluated else parts.LEAF_HEURISTIC
        return parts.parameters(self.c, leaf=leaf, depth=depth, epsilon=epsilon_threshold(self.epsilon),
                                margin=self.margin, expand=EXPANSIONS[self.expand], expand_after=self.expand_after,
                                widen=self.widen, prior_weight=self.prior)


def _text(value) -> str:
    """A parameter's value as a spec writes it: true/false, 3 for 3.0, 0.01."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


NAMES = tuple(f.name for f in dataclasses.fields(SearchSettings))
SHARED = tuple(f.name for f in dataclasses.fields(SearchSettings) if not f.metadata["guided"])
GUIDED = tuple(f.name for f in dataclasses.fields(SearchSettings) if f.metadata["guided"])


@dataclass(frozen=True)
class GuidedSearch:
    """A network-guided ``ismcts`` as self-play, Ray and the ladder carry it: the path of
    the network's checkpoint and the search settings (no spec string inside)."""

    net: str
    settings: SearchSettings = field(default_factory=SearchSettings)

    def build(self, seed: int | None = None):
        """The agent (`agents.search.ISMCTSAgent`), seeded; its `spec` is the label."""
        from .search import ISMCTSAgent

        agent = ISMCTSAgent(net=str(self.net), settings=self.settings)
        agent.spec = str(self)
        agent.seed(seed)
        return agent

    @property
    def time(self) -> float | None:
        """The per-move time budget, if the settings give one."""
        return self.settings.time

    def __str__(self) -> str:
        """The spec a user would type for this search (a label for reports and logs)."""
        rest = self.settings.spec()
        return f"ismcts:net={self.net}" + (f",{rest}" if rest else "")


def table() -> str:
    """The parameters' reStructuredText table: name, default, meaning."""
    rows = [(f.name, "none" if f.default is None else str(f.default).lower() if isinstance(f.default, bool)
             else str(f.default), f.metadata["doc"] + (" (ismcts with net=PATH)" if f.metadata["guided"] else ""))
            for f in dataclasses.fields(SearchSettings)]
    line = "============ ======= " + "=" * 60
    body = [f"{n:<12} {d:<7} {m}" for n, d, m in rows]
    return "\n".join([line, *body, line])


__doc__ = __doc__.format(table=table())
