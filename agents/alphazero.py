"""AlphaZero-style search with a network (`alphazero:PATH,iterations=N`), and the batched
search driver that self-play training shares with it.

The tree policy and the evaluator are separate: `agents.az_kernels` walks the tree in
numba; `BatchedSearch.run` asks the network for the priors and values of the B leaves
of each simulation step in one batch.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

from engine import access, rules
from engine.determinize import SCRATCH_LEN
from env.observation import OBS_SIZE

from . import features
from .az_kernels import MAX_DEPTH, expand_and_backup, reset_trees, select_leaves
from .base import Agent, boolean, choice, number, positive_int, register, seconds, warm_up_view
from .neural import NetPolicy, softmax
from .nets import load_net, resolve_device
from .search import ISMCTSAgent


LEAVES = ("value", "rollout")


class BatchedSearch:
    """PUCT search for B roots at once, over determinized worlds, guided by a network."""

    def __init__(self, policy: NetPolicy, batch: int, simulations: int, c_puct: float = 1.5,
                 max_nodes: int | None = None):
        self.policy = policy
        self.simulations = simulations
        self.c_puct = c_puct
        a = policy.num_actions
        m = max_nodes or simulations + 1
        self.child = np.full((batch, m, a), -1, dtype=np.int32)
        self.visits = np.zeros((batch, m, a), dtype=np.float32)
        self.value_sum = np.zeros((batch, m, a), dtype=np.float32)
        self.prior = np.zeros((batch, m, a), dtype=np.float32)
        self.node_count = np.ones(batch, dtype=np.int64)
        self.node_visits = np.zeros((batch, m), dtype=np.float32)
        self.expanded = np.zeros((batch, m), dtype=np.bool_)
        self.sim_grid, self.sim_info = access.new_arrays(batch)
        self.legal = np.zeros((batch, rules.NUM_PLACEMENT_ACTIONS), dtype=np.int64)
        self.path_nodes = np.zeros((batch, MAX_DEPTH), dtype=np.int64)
        self.path_actions = np.zeros((batch, MAX_DEPTH), dtype=np.int64)
        self.path_movers = np.zeros((batch, MAX_DEPTH), dtype=np.int64)
        self.path_len = np.zeros(batch, dtype=np.int64)
        self.leaf = np.zeros(batch, dtype=np.int64)
        self.leaf_obs = np.zeros((batch, OBS_SIZE), dtype=np.float32)
        self.leaf_mask = np.zeros((batch, rules.NUM_TEAM_ACTIONS), dtype=np.bool_)
        self.terminal = np.zeros((batch, 4), dtype=np.float64)
        self.scratch = np.zeros((batch, SCRATCH_LEN), dtype=np.int64)

    def _evaluate(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = self.policy.num_actions
        priors = np.zeros((len(active), a), dtype=np.float32)
        values = np.zeros((len(active), 4), dtype=np.float32)
        rows = np.flatnonzero(active)
        exposure = None
        if self.policy.needs_exposure:  # the leaves' states are in sim_grid/sim_info
            exposure = features.exposure(self.sim_grid, self.sim_info, rows)[rows]
        logits, vals = self.policy.logits_values(self.leaf_obs[rows], self.leaf_mask[rows, :a], exposure)
        priors[rows] = softmax(logits)
        values[rows] = vals
        return priors, values

    def run(self, root_grid: np.ndarray, root_info: np.ndarray, active: np.ndarray, rng_state: np.ndarray,
            rng: np.random.Generator | None = None, dirichlet: tuple[float, float] | None = None,
            deadline: float | None = None) -> np.ndarray:
        """Search every active root; returns the root visit counts (B, num_actions).
        `rng_state` (uint64 per root) drives the world sampling and is advanced in place.
        `dirichlet` = (alpha, fraction) adds root noise; `deadline` (time.perf_counter())
        stops early, after at least one simulation."""
        reset_trees(self.child, self.visits, self.value_sum, self.prior, self.node_count,
                    self.node_visits, self.expanded)
        for step in range(self.simulations + 1):  # step 0 evaluates the roots
            select_leaves(root_grid, root_info, active, rng_state, self.child, self.visits, self.value_sum,
                          self.prior, self.node_count, self.node_visits, self.expanded, self.c_puct,
                          self.sim_grid, self.sim_info, self.legal, self.path_nodes, self.path_actions,
                          self.path_movers, self.path_len, self.leaf, self.leaf_obs, self.leaf_mask,
                          self.terminal, self.scratch)
            priors, values = self._evaluate(active)
            expand_and_backup(active, self.child, self.visits, self.value_sum, self.prior, self.node_visits,
                              self.expanded, self.leaf, priors, values, self.terminal, self.path_nodes,
                              self.path_actions, self.path_movers, self.path_len, self.sim_info)
            if step == 0 and dirichlet is not None and rng is not None:
                self._add_root_noise(active, rng, *dirichlet)
            if deadline is not None and step >= 1 and time.perf_counter() >= deadline:
                break
        return self.visits[:, 0, :].copy()

    def _add_root_noise(self, active, rng, alpha, fraction):
        for b in np.flatnonzero(active):
            legal = np.flatnonzero(self.prior[b, 0] > 0)
            if len(legal) > 1:
                noise = rng.dirichlet([alpha] * len(legal))
                self.prior[b, 0, legal] = (1 - fraction) * self.prior[b, 0, legal] + fraction * noise


@register("alphazero")
class AlphaZeroAgent(Agent):
    """`alphazero:PATH[,iterations=N][,time=S][,c=1.5][,leaf=value|rollout][,prior=W][,widen=X]
    [,depth=D][,evaluator=true|false]`: search over sampled worlds guided by a trained
    network; plays the most visited action.

    leaf=value (default): AlphaZero's PUCT with the network's priors and its value at
    the leaves (`BatchedSearch`); `c` is the PUCT constant.
    leaf=rollout: the old name of ``ismcts:net=PATH`` (see `agents.search`): ISMCTS with
    the root ordered by the network's policy, `prior` its progressive bias, `widen`
    ISMCTS's progressive widening, and the network's fast evaluator scoring rollouts cut
    after `depth` placements.

    With `time`, searches until that many seconds have passed (iterations is then the
    cap on tree size). Team show actions are never chosen."""

    parameter_rules = {"c": partial(number, positive=True), "leaf": partial(choice, allowed=LEAVES)}

    def __init__(self, path: str, iterations: int = 200, time: float | None = None, c: float = 1.5,
                 device: str = "cpu", leaf: str = "value", prior: float = 0.0, widen: float | None = None,
                 depth: int | None = None, evaluator: bool = True):
        super().__init__()
        iterations = positive_int("iterations", iterations)
        time = None if time is None else seconds("time", time)
        c = number("c", c, positive=True)
        choice("leaf", leaf, LEAVES)
        boolean("evaluator", evaluator)
        self.check_arguments({"leaf": leaf, "prior": prior, "widen": widen, "depth": depth, "evaluator": evaluator})
        self.time = time
        self.guided = None
        if leaf == "rollout":  # the same search as ismcts:net=PATH
            options = {} if widen is None else {"widen": widen}  # else ismcts's default
            self.guided = ISMCTSAgent(net=path, prior=prior, evaluator=evaluator, device=device, depth=depth,
                                      iterations=iterations, time=time, **options)
        else:
            device = resolve_device(device)  # auto: CUDA when present
            policy = NetPolicy(load_net(path, device), device)
            if time is None:
                self.search = BatchedSearch(policy, 1, iterations, c)
            else:  # search until the deadline, in a tree of at most `iterations` (>= 4096) nodes
                self.search = BatchedSearch(policy, 1, 10**9, c, max_nodes=max(iterations, 4096))
        self._active = np.ones(1, dtype=np.bool_)

    @classmethod
    def check_arguments(cls, arguments) -> None:
        a = arguments
        if a["leaf"] == "value" and (a["prior"] != 0.0 or a["widen"] is not None or a["depth"] is not None
                                     or not a["evaluator"]):
            raise ValueError("prior, widen, depth and evaluator are parameters of leaf=rollout")

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        if self.guided is not None:
            self.guided.seed(None if seed is None else seed + 1)

    def warm_up(self) -> None:
        """One network call and one simulation on a fixed position (kernels compiled, torch
        warmed) before the first timed move."""
        if self.guided is not None:
            self.guided.warm_up()
            return
        grid, info = warm_up_view().public_arrays()
        self.search.run(grid[None], info[None], self._active, np.zeros(1, dtype=np.uint64),
                        deadline=time.perf_counter())

    def act(self, observation, view) -> int:
        if self.guided is not None:
            return self.guided.act(observation, view)
        legal = view.legal_actions()
        if len(legal) == 1:
            return int(legal[0])
        grid, info = view.public_arrays()
        rng_state = np.array([self.rng.integers(0, 2**63)], dtype=np.uint64)
        deadline = None if self.time is None else time.perf_counter() + self.time
        visits = self.search.run(grid[None], info[None], self._active, rng_state, deadline=deadline)[0]
        scores = np.full(len(visits), -1.0)
        scores[legal] = visits[legal]
        return int(np.argmax(scores))
