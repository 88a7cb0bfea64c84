"""Monte Carlo tree search agents for a game of hidden tiles, on the one search core
(`agents.search.core`) with one settings record (`agents.settings.SearchSettings`):

* ``ismcts``: single-observer information-set MCTS (Cowling, Powley & Whitehouse 2012):
  one tree over the mover's information sets, a new world sampled every iteration;
  with ``net=PATH`` a trained network orders the root (`agents.search.guide`), ``prior``
  adds its policy as a progressive bias and its fast evaluator scores cut rollouts;
* ``pimc``: perfect-information Monte Carlo: a UCT search in each of `determinizations`
  sampled worlds, root visit counts summed;
* ``cheat``: UCT on the true state (an upper bound, ``cheating = True``).

This module sizes the tree, spends the budget (``time`` counts the whole move, a network
call included) and picks the root child with the most visits (ties: the best mean reward
for the mover, then the lowest id). In the team variant a search also shows its partner
a tile on every turn it may (`show_before`): it finds its placement first, then shows, then
places it; the partner's worlds keep the shown tile (team of two against the same search
that never showed: 0.617 [0.587, 0.644] over 1,000 games, docs/status.md). It reads a tile
its partner shows the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import time as _time
from dataclasses import dataclass, field

import numpy as np

from engine import GameState, kernel_cache, layout, rules
from engine.determinize import SCRATCH_LEN as SAMPLER_SCRATCH_LEN
from engine.determinize import sample_world

from agents.base import Agent, PolicyModel, register, warm_up_view
from agents.parameters import positive_int
from agents.policy_kernels import SCRATCH_LEN, greedy_ranking, scoring_cells
from agents.settings import GUIDED, NAMES, SHARED, SearchSettings

from . import core as sk
from . import tree as parts


def search_settings(settings: SearchSettings | None, parameters: dict) -> SearchSettings:
    """The settings an agent is built from: `settings`, or the record of `parameters`
    (a spec's), not both."""
    if settings is None:
        return SearchSettings(**parameters)
    if parameters:
        raise TypeError(f"give settings or search parameters, not both (got {sorted(parameters)})")
    if not isinstance(settings, SearchSettings):
        raise TypeError(f"settings must be a SearchSettings, got {type(settings).__name__}")
    return settings


# A search target is modelled by a network's raw policy softened to this temperature: the
# maximum-likelihood temperature of `selfplay:time=0.01`'s and `ismcts:time=0.01`'s moves
# under the shipped 2-player network (research/search_target_model.py, benchmarks/RESULTS.md).
SEARCH_MODEL_TEMPERATURE = 1.0


class MCTSAgent(Agent):
    """Shared budget handling and action choice; subclasses say which root to search."""

    @classmethod
    def check_arguments(cls, arguments) -> None:
        """The settings record's cross-checks, before the agent is built (`agents.check_spec`)."""
        settings = SearchSettings(**{k: v for k, v in arguments.items() if k in NAMES})
        settings.check_guided(arguments.get("net") is not None)

    def __init__(self, settings: SearchSettings | None = None, evaluated: bool = False, **parameters) -> None:
        super().__init__()
        self.settings = s = search_settings(settings, parameters)
        s.check_guided(getattr(self, "_guide", None) is not None)
        self._params = s.kernel_parameters(evaluated)
        self._tree = parts.new_tree(self.iterations + 1 if self.time is None else 1 << 14)
        self._work = parts.new_workspace()
        # a random rollout to the end is the engine's own playout; other rollouts the policy's loop
        random_to_end = s.epsilon == 1.0 and self.depth == 0
        self._leaf = "playout" if random_to_end else "rollout"
        self.use_search(sk.SEARCHES[s.expand, self._leaf])
        self._keys = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.int64)
        self._rank_grid = np.zeros((layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        self._rank_info = np.zeros(layout.INFO_LEN, dtype=np.int64)
        self._rank_scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
        self.last_iterations = 0  # simulations run for the last move (for benchmarks)
        self._act_started = 0.0
        self._planned: int | None = None  # team variant: the placement found before this turn's show
        self._shown = 0  # team variant: the value this seat shows its partner (0: none)

    # --- the settings: read from the one record, never copied --------------------------------
    @property
    def iterations(self) -> int:
        return self.settings.iterations

    @property
    def time(self) -> float | None:
        return self.settings.time

    @property
    def depth(self) -> int:
        """The rollout depth the kernels use (`SearchSettings.rollout_depth`)."""
        return self._params.depth

    @contextlib.contextmanager
    def warm_up_budget(self):
        """Within the block: two iterations a move, no time budget, a fixed random stream;
        after it, the agent's settings and random stream as they were."""
        settings, rng = self.settings, self.rng
        self.settings, self.rng = dataclasses.replace(settings, iterations=2, time=None), np.random.default_rng(0)
        try:
            yield
        finally:
            self.settings, self.rng = settings, rng

    # --- the budget -------------------------------------------------------------------------
    def _run(self, grid, info, observer, iterations, seconds, rng):
        """Search from a fresh tree; returns (rng, iterations run)."""
        tree = self._tree
        sk.reset_tree(tree.nodes, tree.values, tree.meta)
        if seconds is None:
            return self._simulate(grid, info, observer, iterations, rng), iterations
        return self._simulate_until(grid, info, observer, _time.perf_counter() + seconds, rng)

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

    def use_search(self, kernel, data=None) -> None:
        """Search with `kernel`, the core with its parts (`core.run`; one of
        `core.SEARCHES`, or your own), passing `data` to its parts."""
        self._kernel, self._data = kernel, data

    def use_evaluator(self, packed: np.ndarray) -> None:
        """Score rollouts cut before the game's end with a packed `agents.networks.evaluator`
        MLP instead of as if the game had ended there."""
        if self.depth > 0:
            self._leaf = "evaluator"
            self.use_search(sk.SEARCHES[self.settings.expand, "evaluator"], parts.new_evaluator(packed))

    def compile_parts(self) -> tuple[str, ...]:
        """The parts of the search compiled on their own (`compile_part`), unless the search
        kernel is cached, the longest first (a worker free takes the next): its moves (the
        leaf's rollout with the root's ranking: they share the greedy policy's kernels), its
        world and its expansion."""
        if kernel_cache.is_cached(self._kernel) or self._kernel is not sk.SEARCHES.get((self.settings.expand,
                                                                                         self._leaf)):
            return ()  # cached, or a kernel of the caller's (`use_search`): its parts are its own
        return ("moves", "world", "expand")

    def compile_part(self, name: str) -> None:
        """Compile part `name`: "world", "expand", "moves" (the leaf and the root's ranking),
        or the leaf alone ("leaf") or the root's ranking alone ("root")."""
        view = warm_up_view()
        grid, info = view.public_arrays()
        if name != "root":
            search_parts = sk.PARTS[self.settings.expand, self._leaf]
            sk.compile_part(search_parts, "leaf" if name == "moves" else name, grid, info, view.seat, self._params,
                            parts.new_workspace(), self._data)
        if name in ("moves", "root") and self._ranks_root():
            self._rank_root(view)

    def _call(self, grid, info, observer, iterations, rng):
        return self._kernel(grid, info, observer, iterations, self._params, np.uint64(rng), self._tree, self._work,
                            self._data)

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
    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        self._planned, self._shown = None, 0

    def act(self, observation, view) -> int:
        if self._planned is not None:  # the show is made: the placement found before it
            action, self._planned = self._planned, None
            return action
        action = self.act_with_visits(view)[0]
        show = self.show_before(view, action)
        if show is None:
            return action
        self._planned = action
        return show

    def show_before(self, view, action: int) -> int | None:
        """The show action to play before `action` (a placement this seat found), or None.
        It keeps its current show while it still holds that value after the placement;
        else it shows the value it will still hold that would score on the most open
        cells of the board after the placement (`policy_kernels.scoring_cells`: where the
        partner can leave or make room for it), ties to the higher (high tiles close the 24s)."""
        if not view.team or action >= rules.PASS_ACTION:
            return None  # (no show outside the team variant: the legal mask is not built again)
        shows = view.show_actions()
        if not shows:
            return None
        left = view.hand.copy()
        left[rules.decode_action(action)[1] - 1] -= 1  # the hand after the placement (index v - 1)
        if self._shown and left[self._shown - 1] > 0:
            return None  # the partner keeps seeing a value this seat still holds
        values = [v for v in (a - rules.SHOW_BASE + 1 for a in shows) if left[v - 1] > 0]
        if not values:
            return None
        grid, info = view.public_arrays()
        after = GameState(grid.copy(), info.copy())
        after.step(action)  # the public board after the placement (only the board is read)
        counts = np.zeros(rules.MAX_VALUE + 1, dtype=np.int64)
        scoring_cells(*after.arrays, counts)
        self._shown = max(values, key=lambda v: (counts[v], v))
        return rules.show_action(self._shown)

    def warm_up(self) -> None:
        """Search the first move of a fixed game for two iterations: compiles (or loads)
        every kernel a move uses. The agent's budget and random stream are left as they were."""
        with self.warm_up_budget():
            self.act_with_visits(warm_up_view())

    def act_with_visits(self, view) -> tuple[int, np.ndarray, np.ndarray]:
        """The chosen action, and the root's visit counts and summed rewards for the
        mover per action id (length NUM_ACTIONS): the targets when this search teaches a
        network. A forced move (one legal action) is not searched: visits 1, reward 0."""
        self._act_started = _time.perf_counter()  # `time` covers the whole move, ranking included
        legal = view.legal_actions()
        if len(legal) == 1:
            self.last_iterations = 0
            visits = np.zeros(rules.NUM_ACTIONS, dtype=np.int64)
            visits[legal[0]] = 1
            return int(legal[0]), visits, np.zeros(rules.NUM_ACTIONS)
        self._tree.meta[parts.ORDER_LEN] = 0
        if self._ranks_root():
            self._rank_root(view)
        visits, value_sums = self._search(view)
        return self._best(visits, value_sums), visits, value_sums

    def policy_model(self, num_players: int, team: bool) -> PolicyModel:
        """A search has no closed-form policy: the shipped network of the game models it,
        its top move, its reach at SEARCH_MODEL_TEMPERATURE (a guided search: its own
        network, `ISMCTSAgent.policy_model`)."""
        from agents import shipped
        from agents.networks.checkpoints import load_net

        return self._network_model(load_net(str(shipped.network(num_players, team)), "cpu"))

    @staticmethod
    def _network_model(net) -> PolicyModel:
        return PolicyModel("network", net=net, temperature=0.0, reach_temperature=SEARCH_MODEL_TEMPERATURE)

    def position_value(self, view) -> float:
        """The search's value of `view`'s position for `view.seat`, whoever is to move:
        the root's mean reward for that seat (`core.simulation_rewards` units) after the
        agent's budget, searched from the seat's information set. The root's children
        are expanded by the search's own expansion rule (no network order: the seat to
        move may be another). A game that is over is valued exactly. What a judge uses to
        value a move (`evaluation.analysis`)."""
        state_grid, state_info = view.public_arrays()
        if view.is_over:
            out = np.zeros(4)
            sk.simulation_rewards(state_info, out, self._params.margin)
            return float(out[view.seat])
        self._act_started = _time.perf_counter()
        self._tree.meta[parts.ORDER_LEN] = 0
        self._tree.prior[:] = 0.0
        _, self.last_iterations = self._run(state_grid, state_info, view.seat, self.iterations,
                                            self._seconds_left(), self._seed64())
        nodes, values = self._tree.nodes, self._tree.values
        return float(values[sk.ROOT, view.seat] / max(nodes[sk.ROOT, sk.VISITS], 1))

    def _ranks_root(self) -> bool:
        """Whether the root's children are expanded in a computed order (`_rank_root`)."""
        return self.settings.expand == "greedy"

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
    trained network (`net`, `prior`, `evaluator`)."""

    checkpoint_parameters = ("net",)

    @staticmethod
    def load_checkpoint(path: str) -> None:
        from agents.networks.checkpoints import load_net  # torch is imported only for a network-guided search

        load_net(path)

    def __init__(self, net: str | None = None, settings: SearchSettings | None = None, **parameters) -> None:
        self.net_path = net
        self._guide = None
        packed = None
        settings = search_settings(settings, parameters)
        settings.check_guided(net is not None)
        if net is not None:
            from .guide import NetworkGuide  # torch is only imported for a network-guided search

            self._guide = NetworkGuide(net)
            packed = self._guide.packed_evaluator() if settings.evaluator else None
        super().__init__(settings, evaluated=packed is not None)
        if packed is not None:
            self.use_evaluator(packed)

    def _ranks_root(self) -> bool:
        return self._guide is not None or super()._ranks_root()

    def compile_parts(self) -> tuple[str, ...]:
        """A network-guided search's moves are two parts, side by side: the leaf (its rollout
        and the fast evaluator) and the root's order (the network's pass: observation,
        exposure features, placement logits), which share no kernel worth waiting for."""
        found = super().compile_parts()
        if self._guide is None or not found:
            return found
        return ("leaf", "root", "world", "expand")

    def policy_model(self, num_players: int, team: bool) -> PolicyModel:
        if self._guide is None:
            return super().policy_model(num_players, team)
        return self._network_model(self._guide.net)

    def _rank_root(self, view) -> None:
        """The root's order by the network's policy, best logit first; with `prior` its
        probabilities are the root prior."""
        if self._guide is None:
            super()._rank_root(view)
            return
        order, prior = self._guide.root_order(view, with_prior=self._params.prior > 0)
        self._tree.order[: len(order)] = order
        self._tree.meta[parts.ORDER_LEN] = len(order)
        if prior is not None:
            self._tree.prior[:] = 0.0
            self._tree.prior[order] = prior

    def _search(self, view):
        grid, info = view.public_arrays()
        return self._single_tree(grid, info, view.seat, view.seat)


@register("pimc")
class PIMCAgent(MCTSAgent):
    """Perfect-information Monte Carlo: UCT in each of `determinizations` sampled worlds,
    root visits summed over the worlds."""

    def __init__(self, determinizations: int = 20, settings: SearchSettings | None = None, **parameters) -> None:
        super().__init__(settings, **parameters)
        self.determinizations = positive_int("determinizations", determinizations)
        self._check_budget(self.time, self.iterations, self.determinizations)
        self._world_grid = np.zeros_like(self._work.grid)
        self._world_info = np.zeros_like(self._work.info)
        self._sampler_scratch = np.zeros(SAMPLER_SCRATCH_LEN, dtype=np.int64)

    @classmethod
    def check_arguments(cls, arguments) -> None:
        super().check_arguments(arguments)
        cls._check_budget(arguments["time"], arguments["iterations"], arguments["determinizations"])

    @staticmethod
    def _check_budget(time, iterations, determinizations) -> None:
        if time is None and iterations < determinizations:
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


def show_search_parameters(cls, guided: bool = False) -> None:
    """make() checks a spec's parameters against the constructor's signature: show a
    search agent's as its own (not `settings`) followed by the settings record's (which
    it takes as **parameters), the network-guided ones when `guided`."""
    own = [p for p in inspect.signature(cls.__init__).parameters.values()
           if p.kind != p.VAR_KEYWORD and p.name != "settings"]
    names = {p.name for p in own}
    shared = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
              for f in dataclasses.fields(SearchSettings)
              if f.name not in names and (f.name in SHARED or guided and f.name in GUIDED)]
    cls.__init__.__signature__ = inspect.Signature(own + shared)


@dataclass(frozen=True)
class GuidedSearch:
    """A network-guided ``ismcts`` as self-play, Ray and the ladder carry it: the path of
    the network's checkpoint and the search settings (no spec string inside)."""

    net: str
    settings: SearchSettings = field(default_factory=SearchSettings)

    def build(self, seed: int | None = None):
        """The agent (`ISMCTSAgent`), seeded; its `spec` is the label."""
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


show_search_parameters(ISMCTSAgent, guided=True)
show_search_parameters(PIMCAgent)


@register("cheat")
class CheatingMCTSAgent(MCTSAgent):
    """UCT on the true state, hidden tiles and bag order included (an upper bound)."""

    cheating = True

    def __init__(self, settings: SearchSettings | None = None, **parameters) -> None:
        super().__init__(settings, **parameters)

    def _search(self, view):
        state = view.full_state(self)
        grid, info = state.arrays
        return self._single_tree(grid, info, -1, view.seat)


show_search_parameters(CheatingMCTSAgent)
