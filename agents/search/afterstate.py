"""One-ply lookahead with a network's fast evaluator: afterstate values, as TD-Gammon played.

``afterstate:net=PATH[,worlds=K]`` plays the legal move whose resulting position the fast
evaluator (`agents.networks.evaluator`) values most for the mover, averaged over the same
K worlds dealt from what the mover knows; a move that ends the game is scored by its
exact search reward. No tree, no rollouts: about a millisecond a move at K = 32. It reads
only the evaluator, not the policy head (docs/experiments.md). Show actions are never scored.
"""

from __future__ import annotations

import numpy as np

from engine import access, kernel_cache, kernels, rules
from engine.determinize import SCRATCH_LEN, sample_world

from agents.base import Agent, register, warm_up_view
from agents.networks import evaluator as vk
from agents.networks.checkpoints import load_net
from agents.parameters import positive_int
from agents.settings import MARGIN

from .core import simulation_rewards

kernel_cache.register(__name__, "the agents' features and evaluators", 6)


@kernels.kernel
def afterstate_values(grid, info, seat, actions, worlds, rng, net, world, after, scratch, features, hidden, best,
                      values, out):
    """out[j] = the mean over `worlds` worlds dealt for `seat` of `seat`'s value after
    `actions[j]`: the packed evaluator `net` on the position, or the exact search reward
    where the move ends the game. Scratch: world and after are (grid, info) pairs shaped like
    the state; scratch int64 (SCRATCH_LEN,); features, hidden, best as
    `agents.networks.evaluator.evaluate_position`; values float64 (4,). Returns the advanced rng."""
    world_grid, world_info = world
    after_grid, after_info = after
    for j in range(actions.shape[0]):
        out[j] = 0.0
    for _ in range(worlds):
        rng = sample_world(grid, info, seat, rng, world_grid, world_info, scratch)
        for j in range(actions.shape[0]):
            kernels.copy_state(world_grid, world_info, after_grid, after_info)
            kernels.apply_action(after_grid, after_info, actions[j])
            if access.is_over(after_info):
                simulation_rewards(after_info, values, MARGIN)
            else:
                vk.evaluate_position(after_grid, after_info, net, features, hidden, best, values)
            out[j] += values[seat]
    for j in range(actions.shape[0]):
        out[j] /= worlds
    return rng


@register("afterstate")
class AfterstateAgent(Agent):
    """Plays the move whose afterstate the network's fast evaluator values most (module doc)."""

    checkpoint_parameters = ("net",)
    load_checkpoint = staticmethod(load_net)

    def __init__(self, net: str, worlds: int = 32) -> None:
        super().__init__()
        self.net_path = str(net)
        self.worlds = positive_int("worlds", worlds)
        evaluator = load_net(self.net_path, "cpu").evaluator
        if evaluator is None:
            raise ValueError(f"afterstate: {self.net_path} has no fast evaluator (NetConfig.evaluator_hidden is 0); "
                             "train one with configs/selfplay_2p.yaml")
        self._net = evaluator.packed()
        width = int(max(self._net[1], self._net[2], self._net[3]))
        self._world, self._after = access.new_arrays(), access.new_arrays()
        self._scratch = (np.zeros(SCRATCH_LEN, dtype=np.int64), np.zeros(vk.NUM_FEATURES), np.zeros((3, width)),
                         np.zeros(4, dtype=np.int64), np.zeros(4))

    def move_values(self, view, actions: np.ndarray) -> np.ndarray:
        """The mean afterstate value (float64, one per action) for `view.seat` of each of
        the legal `actions` (int64), over `worlds` worlds drawn from this agent's stream."""
        grid, info = view.public_arrays()
        out = np.zeros(len(actions), dtype=np.float64)
        rng = np.uint64(self.rng.integers(1, 2**63))
        afterstate_values(grid, info, np.int64(view.seat), actions, np.int64(self.worlds), rng, self._net,
                          self._world, self._after, *self._scratch, out)
        return out

    def warm_up(self) -> None:
        view = warm_up_view()
        self.move_values(view, np.array(view.legal_actions()[:1], dtype=np.int64))

    def act(self, observation, view) -> int:
        legal = np.array([a for a in view.legal_actions() if a < rules.SHOW_BASE], dtype=np.int64)
        if len(legal) == 1:
            return int(legal[0])
        return int(legal[int(np.argmax(self.move_values(view, legal)))])


__all__ = ["AfterstateAgent", "afterstate_values"]
