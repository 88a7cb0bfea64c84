"""Monte Carlo tree search agents for a game of hidden tiles.

Three ways to search a position whose other hands and bag are hidden:

* ``ismcts`` — single-observer information-set MCTS (Cowling, Powley & Whitehouse 2012):
  one tree over the mover's information sets; every iteration samples a new world
  consistent with what the mover knows and descends only through actions legal in it,
  with availability counts in UCB.
* ``pimc`` — perfect-information Monte Carlo: `determinizations` worlds, a separate UCT
  search in each (iterations / determinizations each), root visit counts summed.
* ``cheat`` (alias ``cheating_mcts``) — UCT on the true state (every hand and the bag
  order): an upper-bound baseline, marked ``cheating = True``.

All three run on the one search core (`agents.search_kernels`, where the algorithm is
written out, with its parts chosen in `agents.search_parts`); this module parses
parameters, sizes the tree, spends the budget and picks the action: the root child with
the most visits (ties: the best mean reward for the mover, then the lowest action id).

Parameters (spec ``name:key=value,...``), defaults tuned on duplicate matches against
`greedy` (see the README):

================ ========= ===========================================================
iterations       1000      simulations per move (ignored when `time` is given)
time             none      seconds per move instead of a fixed number of iterations
selection        ucb       ``ucb``: UCB1 with availability counts; ``puct``: AlphaZero's PUCT
                           with a prior (a network's policy at the root, else uniform)
c                0.5       exploration constant (rewards are in [-1 - margin, 1 + margin]);
                           1.5 with selection=puct
rollout          epsilon   rollout policy: ``random``, ``greedy`` or ``epsilon`` (greedy
                           with probability 1 - epsilon, else a random placement)
epsilon          0.1       random-move probability of the ``epsilon`` rollout
safe             true      greedy rollouts break ties among non-scoring moves toward
                           *safe* ones (that open no 7 or 24 next to the new tile)
depth            4         rollout placements at most (0 = to the end of the game); a cut
                           rollout is scored as if the game ended there
margin           0.5       weight of tanh(score lead / 100) added to each reward
expand           greedy    order of new children: ``greedy`` (root: the greedy agent's
                           key; below: the rollout policy's), ``policy`` (the rollout
                           policy's everywhere), ``random``, or ``evaluator`` (ismcts
                           with a net: root as greedy; below: the move whose afterstate
                           the network's fast evaluator values most for the mover)
expand_after     40        a node grows children once visited this often (the root
                           always); before that, simulations roll out from it
widen            0.5       progressive widening: a node visited n times has at most
                           1 + widen * sqrt(n) children (0 = all legal actions)
halving          0         sequential halving at the root (ismcts, cheat): 0 = UCB there
                           too; k >= 2 = the first k moves of the root's order (the greedy
                           ranking, or a network's policy) share the budget in ceil(log2 k)
                           phases, each spread evenly over the moves left and keeping the
                           better half by mean reward; the last one left is played (the
                           returned visits are the phases' shares, not a policy)
determinizations 20        pimc only: worlds to search
================ ========= ===========================================================

With 1,000 iterations the defaults amount to a shallow search over the ~16 moves the
greedy agent ranks best, each judged by short greedy rollouts in sampled worlds.

``ismcts`` also takes a trained network (``ismcts:net=PATH``, a checkpoint written by
train.py): one forward pass per move (in numba, `agents.net_kernels`) orders the root's
children by the network's policy instead of the greedy ranking (with progressive
widening, the simulations go to the moves the network ranks best), ``prior`` > 0 adds
the policy's probabilities as a progressive bias to the root's UCB, and if the network
carries a fast evaluator (`agents.nets.Evaluator`) and ``evaluator`` is true, rollouts
stop after ``depth`` placements (default 1 instead of 4) and the evaluator scores the
position reached, in numba (`agents.value_kernels`), instead of the guess that the
current leader wins. The network call counts in ``time``.

With ``leaf=value`` no rollout is played: every simulation stops at the new leaf and the
network's value scores it (its policy is the prior of the leaf's children), the search of
AlphaZero over sampled worlds (`agents.lockstep`; selection defaults to ``puct``). Far
fewer simulations fit in a move, one network call each.

================ ========= ===========================================================
net              none      ismcts only: a checkpoint whose policy orders the root
prior            0         weight of the network's progressive bias at the root (UCB)
evaluator        true      score cut rollouts with the network's fast evaluator
leaf             rollout   ``rollout`` (cut rollouts, see above) or ``value`` (the
                           network's value at every new leaf)
device           cpu       where the network of ``leaf=value`` runs: cpu, cuda[:N] or auto
                           (the root's ordering and the evaluator always run in numba)
gumbel           0         k >= 2: a Gumbel root (Danihelka et al. 2022, `agents.gumbel`):
                           k candidates sampled without replacement from the policy
                           (Gumbel-top-k), sequential halving over them as with
                           ``halving``, ranked by g + logit + sigma(completed Q); the best
                           one left is played (0 = off)
c_visit, c_scale 50, 0.1   sigma(q) = (c_visit + most visits) * c_scale * q, q in [0, 1]
================ ========= ===========================================================

`improved_policy()` gives the last move's completed-Q policy target, softmax(logits +
sigma(completed Q)) (with or without ``gumbel``): what self-play can train the policy on
instead of the visit counts.

Team variant: search agents never show tiles to their partner (show actions are never
chosen), but they do use a tile the partner shows them.
"""

from __future__ import annotations

import inspect
import time as _time
from functools import partial

import numpy as np

from engine import layout, rules
from engine.determinize import SCRATCH_LEN as SAMPLER_SCRATCH_LEN
from engine.determinize import sample_world

from . import gumbel as gumbel_math
from . import search_kernels as sk
from . import search_parts as parts
from .base import (Agent, boolean, choice, non_negative_int, number, positive_int, probability, register,
                   seconds, warm_up_view)
from .policy_kernels import epsilon_threshold, greedy_ranking
from .gumbel import softmax

ROLLOUTS = ("random", "greedy", "epsilon")
ROLLOUT_DEPTH = 4  # rollout placements at most, scored by the end-of-game guess
EVALUATED_DEPTH = 1  # rollout placements before a network's fast evaluator scores the position
EXPANSIONS = ("greedy", "policy", "random", "evaluator")
EXPAND_CODES = {"greedy": parts.EXPAND_GREEDY, "policy": parts.EXPAND_GREEDY, "random": parts.EXPAND_RANDOM,
                "evaluator": parts.EXPAND_EVALUATOR}
SELECTIONS = tuple(parts.SELECTIONS)  # ucb, puct
DEFAULT_C = {"ucb": 0.5, "puct": 1.5}
LEAVES = ("rollout", "value")


def halving_candidates(value, name: str = "halving") -> int:
    """The checked `halving` (or `gumbel`) parameter: 0 (off: UCB at the root) or a number
    of root candidates >= 2."""
    k = non_negative_int(name, value)
    if k == 1:
        raise ValueError(f"{name} must be 0 (off: UCB at the root) or at least 2 (the root's candidates)")
    return k


class MCTSAgent(Agent):
    """Shared budget handling and action choice; subclasses say which root to search."""

    expands_by_evaluator = False  # whether expand=evaluator can be given (a network's evaluator)

    parameter_rules = {"rollout": partial(choice, allowed=ROLLOUTS), "expand": partial(choice, allowed=EXPANSIONS),
                       "selection": partial(choice, allowed=SELECTIONS),
                       "halving": lambda name, value: halving_candidates(value, name)}

    def __init__(self, iterations: int = 1000, time: float | None = None, c: float | None = None,
                 rollout: str = "epsilon", epsilon: float = 0.1, safe: bool = True, depth: int = ROLLOUT_DEPTH,
                 margin: float = sk.MARGIN, expand: str = "greedy", expand_after: int = 40,
                 widen: float = 0.5, selection: str = "ucb", halving: int = 0) -> None:
        super().__init__()
        self.iterations = positive_int("iterations", iterations)
        self.time = None if time is None else seconds("time", time)
        self.selection = choice("selection", selection, SELECTIONS)
        self.c = number("c", DEFAULT_C[self.selection] if c is None else c)
        self.rollout = choice("rollout", rollout, ROLLOUTS)
        self.epsilon = probability("epsilon", epsilon)
        self.safe = boolean("safe", safe)
        self.depth = non_negative_int("depth", depth)
        self.margin = number("margin", margin)
        self.expand = choice("expand", expand, EXPANSIONS)
        if self.expand == "evaluator" and not self.expands_by_evaluator:
            raise ValueError(f"expand=evaluator needs a network's fast evaluator: use ismcts:net=PATH "
                             f"({self.name} has none)")
        self.expand_after = non_negative_int("expand_after", expand_after)
        self.widen = number("widen", widen)
        self.halving = halving_candidates(halving)
        if self.halving and (self.selection != "ucb" or self.expand not in ("greedy", "evaluator")):
            raise ValueError("halving needs selection=ucb and expand=greedy or evaluator (its candidates are the "
                             "first of the root's order)")
        self._params = parts.parameters(
            self.c, leaf=parts.LEAF_ROLLOUT if self.depth == 0 else parts.LEAF_HEURISTIC, depth=self.depth,
            epsilon=epsilon_threshold({"random": 1.0, "greedy": 0.0}.get(rollout, self.epsilon)), safe=self.safe,
            margin=self.margin, expand=EXPAND_CODES[self.expand],
            expand_after=self.expand_after, widen=self.widen, selection=parts.SELECTIONS[self.selection])
        self._tree = parts.new_tree(self.iterations + 1 if self.time is None else 1 << 14)
        self._work = parts.new_workspace()
        self._keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
        self._rank_grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        self._rank_info = np.zeros(layout.INFO_LEN, dtype=np.int64)
        self._rank_scratch = np.zeros(128, dtype=np.int64)
        self.last_iterations = 0  # simulations run for the last move (for benchmarks)
        self._chosen = None  # the move sequential halving chose (None: the most visited)
        self._forced = None  # the last move's only legal action, if it had one (it was not searched)
        self._act_started = 0.0

    # --- the budget -------------------------------------------------------------------------
    def _run(self, grid, info, observer, iterations, seconds, rng):
        """Search from a fresh tree; returns (rng, iterations run)."""
        tree = self._tree
        sk.reset_tree(tree.nodes, tree.values, tree.meta)
        if seconds is None:
            return self._simulate(grid, info, observer, iterations, rng), iterations
        return self._simulate_until(grid, info, observer, _time.perf_counter() + seconds, rng)

    def _run_halving(self, grid, info, observer, seat, iterations, seconds, rng):
        """Search from a fresh tree by sequential halving at the root: the first
        `halving` actions of the root order are the candidates; each of ceil(log2 k)
        phases gets an equal share of the budget, spread evenly over the candidates left
        (the kernel simulates the least-visited one), and keeps the better half by mean
        reward for `seat`. Returns (rng, iterations run, the last candidate left)."""
        tree = self._tree
        sk.reset_tree(tree.nodes, tree.values, tree.meta)
        k = min(self.halving, int(tree.meta[parts.ORDER_LEN]))
        phases = int(np.ceil(np.log2(k)))
        start = _time.perf_counter()
        done = 0
        try:
            for phase in range(phases):
                self._params[parts.P_ROOT_HALVING] = k
                if seconds is None:
                    share = iterations // phases + (iterations % phases if phase == phases - 1 else 0)
                    rng = self._simulate(grid, info, observer, share, rng)
                    done += share
                else:
                    rng, ran = self._simulate_until(grid, info, observer, start + seconds * (phase + 1) / phases, rng)
                    done += ran
                self._rank_candidates(seat, k)
                k = (k + 1) // 2
        finally:
            self._params[parts.P_ROOT_HALVING] = 0
        return rng, done, int(self._tree.order[0])

    def _rank_candidates(self, seat, k):
        """Reorder the root order's first k actions by `_candidate_scores`, best first
        (ties keep their order)."""
        order = self._tree.order
        candidates = order[:k].copy()
        order[:k] = candidates[np.argsort(-self._candidate_scores(seat, candidates), kind="stable")]

    def _candidate_scores(self, seat, candidates):
        """Sequential halving's ranking key of each candidate: its mean reward for `seat`
        (-inf for one never simulated, so it goes last)."""
        actions, visits, vals = self._root_stats(seat)
        mean = np.full(rules.NUM_ACTIONS, -np.inf)
        mean[actions] = np.where(visits > 0, vals / np.maximum(visits, 1), -np.inf)
        return mean[candidates]

    def _simulate(self, grid, info, observer, iterations, rng):
        """Run `iterations` simulations on the current tree (grown to fit them)."""
        needed = int(self._tree.meta[parts.COUNT]) + iterations
        if self._tree.nodes.shape[0] < needed:
            self._tree = parts.grown(self._tree, needed)
        return self._call(grid, info, observer, iterations, rng)

    def _simulate_until(self, grid, info, observer, deadline, rng):
        """Run simulations on the current tree in growing chunks until `deadline`
        (perf_counter seconds); returns (rng, simulations run)."""
        done, chunk = 0, 16
        while True:
            if self._tree.meta[parts.COUNT] + chunk > self._tree.nodes.shape[0]:
                self._tree = parts.grown(self._tree, 2 * (int(self._tree.meta[parts.COUNT]) + chunk))
            start = _time.perf_counter()
            rng = self._call(grid, info, observer, chunk, rng)
            done += chunk
            now = _time.perf_counter()
            left = deadline - now
            if left <= 0:
                return rng, done
            per = max(now - start, 1e-7) / chunk
            chunk = int(max(1, min(4 * chunk, left / 4 / per)))

    def use_evaluator(self, packed: np.ndarray) -> None:
        """Score rollouts cut before the game's end with a packed `agents.value_kernels`
        MLP instead of as if the game had ended there."""
        rows = parts.MOVE_VALUE_ROWS if self.expand == "evaluator" else 0  # the table only where it is read
        self._work = parts.new_workspace(packed, move_value_rows=rows)
        if self.depth > 0:
            self._params[parts.P_LEAF] = parts.LEAF_EVALUATOR

    def _call(self, grid, info, observer, iterations, rng):
        return sk.search(grid, info, observer, iterations, self._params, np.uint64(rng), self._tree, self._work)

    def _root_stats(self, seat):
        """(actions, visits, summed value for `seat`) of the root's children."""
        nodes, values, meta = self._tree.nodes, self._tree.values, self._tree.meta
        count = int(meta[parts.COUNT])
        kids = np.nonzero(nodes[1:count, sk.PARENT] == sk.ROOT)[0] + 1
        return nodes[kids, sk.ACTION], nodes[kids, sk.VISITS], values[kids, seat]

    @staticmethod
    def _best(visits, value_sums):
        """Index of the action with the most visits; ties: best mean value, then lowest id
        (callers pass arrays indexed by action id)."""
        mean = np.where(visits > 0, value_sums / np.maximum(visits, 1), -np.inf)
        order = np.lexsort((-mean, -visits))  # primary: visits, then mean; stable on id
        return int(order[0])

    def _seed64(self):
        return np.uint64(self.rng.integers(0, 2**63))

    # --- acting -----------------------------------------------------------------------------
    def act(self, observation, view) -> int:
        return self.act_with_visits(view)[0]

    def warm_up(self) -> None:
        """Search the first move of a fixed game for two iterations: compiles (or loads)
        every kernel a move uses. The agent's budget and random stream are left as they were."""
        budget, rng = (self.iterations, self.time), self.rng
        self.iterations, self.time, self.rng = 2, None, np.random.default_rng(0)
        try:
            self.act_with_visits(warm_up_view())
        finally:
            (self.iterations, self.time), self.rng = budget, rng

    def act_with_visits(self, view) -> tuple[int, np.ndarray, np.ndarray]:
        """The chosen action, and the root's visit counts and summed rewards for the
        mover per action id (length NUM_ACTIONS): the targets when this search teaches a
        network. A forced move (one legal action) is not searched: visits 1, reward 0."""
        self._act_started = _time.perf_counter()  # `time` covers the whole move, ranking included
        legal = view.legal_actions()
        self._forced = int(legal[0]) if len(legal) == 1 else None
        if len(legal) == 1:
            self.last_iterations = 0
            visits = np.zeros(rules.NUM_ACTIONS, dtype=np.int64)
            visits[legal[0]] = 1
            return int(legal[0]), visits, np.zeros(rules.NUM_ACTIONS)
        self._tree.meta[parts.ORDER_LEN] = 0
        if self.selection == "puct" and not self._has_root_prior():
            self._tree.priors[0, :] = 0.0
            placements = [a for a in legal if a < rules.NUM_ACTIONS]
            self._tree.priors[0, placements] = 1.0 / len(placements)
        if self._ranks_root():
            self._rank_root(view)
        self._chosen = None
        visits, value_sums = self._search(view)
        action = self._best(visits, value_sums) if self._chosen is None else self._chosen
        return action, visits, value_sums

    def _has_root_prior(self) -> bool:
        """Whether `_rank_root` sets the root prior (a network's policy)."""
        return False

    def _ranks_root(self) -> bool:
        """Whether the root's children are expanded in a computed order (`_rank_root`)."""
        return self.expand in ("greedy", "evaluator")

    def _rank_root(self, view) -> None:
        """Set the order in which the root's children are expanded (the tree's `order`):
        best greedy key first. Network-guided search overrides this with its policy."""
        grid, info = view.public_arrays()
        order = self._tree.order
        n = greedy_ranking(grid, info, self._rank_grid, self._rank_info, self._rank_scratch, order, self._keys)
        order[:n] = order[:n][np.lexsort((order[:n], -self._keys[:n]))]
        self._tree.meta[parts.ORDER_LEN] = n

    def _search(self, view):
        """Per-action (visits, value sums) arrays of length NUM_ACTIONS."""
        raise NotImplementedError

    def _seconds_left(self):
        """What is left of the move's `time` (None: no time budget) after what `act`
        spent before searching (ranking the root's children, a network call)."""
        if self.time is None:
            return None
        return max(self.time - (_time.perf_counter() - self._act_started), 1e-6)

    def _single_tree(self, grid, info, observer, seat):
        if self.halving and self._tree.meta[parts.ORDER_LEN] >= 2:
            rng, self.last_iterations, self._chosen = self._run_halving(
                grid, info, observer, seat, self.iterations, self._seconds_left(), self._seed64())
        else:
            rng, self.last_iterations = self._run(grid, info, observer, self.iterations, self._seconds_left(),
                                                  self._seed64())
        actions, visits, vals = self._root_stats(seat)
        out_visits = np.zeros(rules.NUM_ACTIONS, dtype=np.int64)
        out_values = np.zeros(rules.NUM_ACTIONS, dtype=np.float64)
        out_visits[actions] = visits
        out_values[actions] = vals
        return out_visits, out_values


@register("ismcts")
class ISMCTSAgent(MCTSAgent):
    """Single-observer information-set MCTS (see the module doc), optionally guided by a
    trained network (`net`, `prior`, `evaluator`, `device`, `leaf`)."""

    checkpoint_parameters = ("net",)
    expands_by_evaluator = True
    parameter_rules = {**MCTSAgent.parameter_rules, "leaf": partial(choice, allowed=LEAVES),
                       "gumbel": lambda name, value: halving_candidates(value, name), "c_visit": number,
                       "c_scale": partial(number, positive=True)}

    def __init__(self, net: str | None = None, prior: float = 0.0, evaluator: bool = True, device: str = "cpu",
                 leaf: str = "rollout", depth: int | None = None, selection: str | None = None, gumbel: int = 0,
                 c_visit: float = gumbel_math.C_VISIT, c_scale: float = gumbel_math.C_SCALE, **kwargs) -> None:
        self.prior = number("prior", prior)
        boolean("evaluator", evaluator)
        self.leaf = choice("leaf", leaf, LEAVES)
        self.gumbel = halving_candidates(gumbel, "gumbel")
        self.c_visit = number("c_visit", c_visit)
        self.c_scale = number("c_scale", c_scale, positive=True)
        self.check_arguments({"prior": prior, "evaluator": evaluator, "leaf": leaf, "depth": depth,
                              "gumbel": self.gumbel, "halving": kwargs.get("halving", 0)})
        if net is None and (prior != 0.0 or not evaluator or device != "cpu" or leaf != "rollout" or self.gumbel):
            # (a config may check a search's parameters before it knows the network: not in check_arguments)
            raise ValueError("prior, evaluator, device, leaf and gumbel are parameters of a network-guided search: "
                             "give net=PATH")
        if self.gumbel:  # the Gumbel root is sequential halving over the sampled candidates
            kwargs["halving"] = self.gumbel
        self.net_path = net
        self._guide = None
        packed = None
        if net is not None:
            from .guide import NetworkGuide  # torch is only imported for a network-guided search

            self._guide = NetworkGuide(net, device)
            packed = self._guide.packed_evaluator() if evaluator and leaf == "rollout" else None
        if kwargs.get("expand") == "evaluator" and packed is None:
            raise ValueError("expand=evaluator needs a network's fast evaluator: give net=PATH of a network that "
                             "has one, with evaluator=true and leaf=rollout")
        if depth is None:
            depth = EVALUATED_DEPTH if packed is not None else ROLLOUT_DEPTH
        if selection is None:
            selection = "puct" if leaf == "value" else "ucb"
        if leaf == "value" and kwargs.get("halving"):
            raise ValueError("halving is a parameter of leaf=rollout (leaf=value searches with PUCT)")
        super().__init__(depth=depth, selection=selection, **kwargs)
        if self._guide is not None:
            self._params[parts.P_PRIOR_WEIGHT] = self.prior
        if packed is not None:
            self.use_evaluator(packed)
        self._lockstep = self._value_search() if leaf == "value" else None
        # the last searched root (improved_policy): its legal placements, their logits and
        # Gumbel noise, the searching seat
        self._root_legal = self._root_logits = self._root_noise = None
        self._root_seat = -1

    @classmethod
    def check_arguments(cls, arguments) -> None:
        a = arguments
        if a["prior"] < 0:
            raise ValueError(f"prior must be >= 0, got {a['prior']}")
        if a["leaf"] == "value" and (a["depth"] is not None or not a["evaluator"]):
            raise ValueError("depth and evaluator are parameters of leaf=rollout (leaf=value scores every new "
                             "leaf with the network's value)")
        if a.get("gumbel") and a.get("halving"):
            raise ValueError("give gumbel=k (Gumbel-sampled candidates) or halving=k (the first k of the root's "
                             "order), not both")
        if a.get("gumbel") and a["leaf"] == "value":
            raise ValueError("gumbel is a parameter of leaf=rollout (leaf=value searches with PUCT)")

    def _value_search(self):
        """The network-valued search (`agents.lockstep`) of one root: a tree of `iterations`
        simulations, or with `time` one that grows until the move's time is spent."""
        from .lockstep import LockstepSearch

        capacity = self.iterations + 1 if self.time is None else max(self.iterations, 4096) + 1
        return LockstepSearch(self._guide.policy, 1, self.iterations, self.c, max_nodes=capacity,
                              selection=parts.SELECTIONS[self.selection], margin=0.0, prior_weight=self.prior,
                              widen=self.widen if self.selection == "ucb" else 0.0)

    def _has_root_prior(self) -> bool:
        return self._guide is not None

    def _ranks_root(self) -> bool:
        return self._lockstep is None and (self._guide is not None or super()._ranks_root())

    def _rank_root(self, view) -> None:
        """The root's order by the network's policy: best logit first, or with `gumbel`
        by logit + Gumbel noise (its first `gumbel` are the sampled candidates). The
        logits (and noise) are kept for the candidates' ranking and `improved_policy`."""
        if self._guide is None:
            super()._rank_root(view)
            return
        legal, logits = self._guide.root_logits(view)
        self._root_legal, self._root_logits = legal, logits
        if self.gumbel:
            ranks, self._root_noise = gumbel_math.gumbel_top_k(logits, len(legal), self.rng)
        else:
            ranks = np.argsort(-logits, kind="stable")
        order = legal[ranks]
        self._tree.order[: len(order)] = order
        self._tree.meta[parts.ORDER_LEN] = len(order)
        if (self._params[parts.P_PRIOR_WEIGHT] > 0 or self.selection == "puct") and len(order):
            root_prior = self._tree.priors[0]
            root_prior[:] = 0.0
            root_prior[order] = softmax(logits[ranks])

    def _candidate_scores(self, seat, candidates):
        """With `gumbel`: g + logit + sigma(completed Q) (`agents.gumbel`), else the mean reward."""
        if not self.gumbel:
            return super()._candidate_scores(seat, candidates)
        legal = self._root_legal
        key = np.full(rules.NUM_ACTIONS, -np.inf)
        key[legal] = self._root_noise + gumbel_math.scores(self._root_logits, *self._root_q(seat, legal),
                                                           self.c_visit, self.c_scale)
        return key[candidates]

    def _root_q(self, seat, legal):
        """(mean reward for `seat` of each of the root's actions `legal` (0 if unvisited),
        their visits, the root's mean reward) of the last search."""
        actions, visits, vals = self._root_stats(seat)
        n = np.zeros(rules.NUM_ACTIONS, dtype=np.int64)
        total = np.zeros(rules.NUM_ACTIONS)
        n[actions], total[actions] = visits, vals
        q = total[legal] / np.maximum(n[legal], 1)
        nodes, values = self._tree.nodes, self._tree.values
        root_value = values[sk.ROOT, seat] / max(nodes[sk.ROOT, sk.VISITS], 1)
        return q, n[legal], float(root_value)

    def improved_policy(self) -> np.ndarray:
        """The completed-Q policy target of the last move (`agents.gumbel.improved_policy`):
        softmax(logits + sigma(completed Q)) over the root's legal placements (length
        NUM_ACTIONS, 0 elsewhere); a forced move's is that move. Needs a network and
        leaf=rollout (the search whose root this agent orders)."""
        if self._guide is None or self._lockstep is not None:
            raise ValueError("improved_policy needs a network-guided search with leaf=rollout (net=PATH)")
        target = np.zeros(rules.NUM_ACTIONS)
        if self._forced is not None:
            target[self._forced] = 1.0
            return target
        if self._root_legal is None:
            raise ValueError("improved_policy is the target of the last searched move: act first")
        legal = self._root_legal
        target[legal] = gumbel_math.improved_policy(self._root_logits, *self._root_q(self._root_seat, legal),
                                                    self.c_visit, self.c_scale)
        return target

    def _search(self, view):
        grid, info = view.public_arrays()
        if self._lockstep is None:
            self._root_seat = view.seat
            return self._single_tree(grid, info, view.seat, view.seat)
        left = self._seconds_left()
        if left is None:  # a fixed number of simulations
            deadline, simulations = None, self.iterations
        else:  # until the move's time is spent
            deadline, simulations = _time.perf_counter() + left, 10**9
        visits, value_sums = self._lockstep.run(grid[None], info[None], np.ones(1, dtype=np.bool_),
                                                np.array([self._seed64()], dtype=np.uint64), deadline=deadline,
                                                with_values=True, simulations=simulations)
        self.last_iterations = int(visits[0].sum())
        return visits[0, : rules.NUM_ACTIONS], value_sums[0, : rules.NUM_ACTIONS]


@register("pimc")
class PIMCAgent(MCTSAgent):
    """Perfect-information Monte Carlo: UCT in each of `determinizations` sampled worlds,
    root visits summed over the worlds."""

    def __init__(self, determinizations: int = 20, **kwargs) -> None:
        super().__init__(**kwargs)
        if self.halving:
            raise ValueError("halving is a parameter of ismcts and cheat, not of pimc")
        self.determinizations = positive_int("determinizations", determinizations)
        self.check_arguments({"time": self.time, "iterations": self.iterations,
                              "determinizations": self.determinizations})
        self._world_grid = np.zeros_like(self._work.grid)
        self._world_info = np.zeros_like(self._work.info)
        self._sampler_scratch = np.zeros(SAMPLER_SCRATCH_LEN, dtype=np.int64)

    @classmethod
    def check_arguments(cls, arguments) -> None:
        iterations, determinizations = arguments["iterations"], arguments["determinizations"]
        if arguments["time"] is None and iterations < determinizations:
            raise ValueError(f"iterations ({iterations}) must be at least determinizations ({determinizations})")

    def _search(self, view):
        grid, info = view.public_arrays()
        d = self.determinizations
        per_iter = max(1, self.iterations // d)
        seconds = self._seconds_left()
        per_time = None if seconds is None else seconds / d
        visits = np.zeros(rules.NUM_ACTIONS, dtype=np.int64)
        values = np.zeros(rules.NUM_ACTIONS, dtype=np.float64)
        rng = self._seed64()
        total = 0
        for _ in range(d):
            rng = sample_world(grid, info, view.seat, np.uint64(rng), self._world_grid, self._world_info,
                               self._sampler_scratch)
            rng, done = self._run(self._world_grid, self._world_info, -1, per_iter, per_time, rng)
            total += done
            actions, v, vals = self._root_stats(view.seat)
            visits[actions] += v
            values[actions] += vals
        self.last_iterations = total
        return visits, values


def _show_search_parameters(cls) -> None:
    """make() checks a spec's parameters against the constructor's signature: show a
    subclass's as its own followed by MCTSAgent's (which it passes on as **kwargs)."""
    own = [p for p in inspect.signature(cls.__init__).parameters.values() if p.kind != p.VAR_KEYWORD]
    names = {p.name for p in own}
    shared = [p for name, p in inspect.signature(MCTSAgent.__init__).parameters.items()
              if name != "self" and name not in names]
    cls.__init__.__signature__ = inspect.Signature(own + shared)


_show_search_parameters(ISMCTSAgent)
_show_search_parameters(PIMCAgent)


@register("cheat")
class CheatingMCTSAgent(MCTSAgent):
    """UCT on the true state, hidden tiles and bag order included (an upper bound)."""

    cheating = True

    def _search(self, view):
        state = view.full_state(self)
        grid, info = state.arrays
        return self._single_tree(grid, info, -1, view.seat)


@register("cheating_mcts")
class CheatingMCTSAlias(CheatingMCTSAgent):
    """Same as ``cheat``."""
