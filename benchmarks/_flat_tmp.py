import sys, numpy as np
from numba import njit
from engine import rules, layout
from engine.kernels import kernel, rewards, place, pass_turn, legal_placements
from engine.determinize import unseen_tiles, deal_unseen
from agents.policy_kernels import rollout, epsilon_threshold
from agents.base import Agent, register
from agents.search_kernels import _apply

@kernel
def flat(grid, info, seat, iters, eps, rng, legal, sums, counts, sg, si, scratch, rw):
    n = legal_placements(grid, info, legal)
    tiles = scratch[16:56]
    nu = unseen_tiles(grid, info, seat, scratch[:11], tiles)
    for i in range(n):
        sums[i] = 0.0; counts[i] = 0
    for it in range(iters):
        k = it % n
        rng = deal_unseen(grid, info, seat, tiles, nu, rng, sg, si)
        _apply(sg, si, legal[k])
        rng, _ = rollout(sg, si, rng, eps, 0)
        rewards(si, rw)
        sums[k] += rw[seat]; counts[k] += 1
    best = 0
    for i in range(n):
        if sums[i] / max(counts[i], 1) > sums[best] / max(counts[best], 1):
            best = i
    return legal[best]

@register("flat")
class Flat(Agent):
    def __init__(self, iterations=1000, epsilon=0.15):
        super().__init__()
        self.it = iterations; self.eps = epsilon_threshold(epsilon)
        self.sg = np.zeros((80,10), np.int16); self.si = np.zeros(layout.INFO_LEN, np.int64)
        self.legal = np.zeros(490, np.int64); self.sums = np.zeros(490); self.counts = np.zeros(490, np.int64)
        self.sc = np.zeros(64, np.int64); self.rw = np.zeros(4)
    def act(self, obs, view):
        legal = view.legal_actions()
        if len(legal) == 1: return legal[0]
        g, i = view.public_arrays()
        return int(flat(g, i, view.seat, self.it, self.eps, np.uint64(self.rng.integers(2**63)), self.legal, self.sums, self.counts, self.sg, self.si, self.sc, self.rw))
from agents.policy_kernels import greedy_placement
from engine.layout import CELL_OF_PAD
@kernel
def pg(grid, info, rng):
    rng, p, v = greedy_placement(grid, info, rng)
    if p < 0: return 490
    return CELL_OF_PAD[p] * 10 + v - 1
@register("plaingreedy")
class PG(Agent):
    def act(self, obs, view):
        g, i = view.public_arrays()
        return int(pg(g, i, np.uint64(self.rng.integers(2**63))))
sys.argv = ["x"] + sys.argv[1:]
sys.path.insert(0, "benchmarks"); import agent_strength as S
S.main()
