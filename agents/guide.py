"""A trained network as the guide of a search: the root's expansion order and prior from
its policy, and its fast evaluator for cut rollouts (`ismcts:net=PATH`).

Kept apart from `agents.search` so that a search without a network never imports torch.
"""

from __future__ import annotations

import numpy as np

from engine import rules
from env.observation import OBS_SIZE, encode_arrays

from . import features
from .neural import NetPolicy, softmax
from .nets import load_net, resolve_device


class NetworkGuide:
    """One forward pass per move: the legal placements ranked by the policy's logits.

    The pass is small enough that torch's thread pool costs more than it saves: with
    several intra-op threads, waking them after each search more than doubles the call
    and leaves a timed search fewer iterations. So run torch on one thread wherever a
    timed agent plays (`torch.set_num_threads(1)`), as the tournament and self-play
    workers do."""

    def __init__(self, path: str, device: str = "cpu"):
        device = resolve_device(device)
        self.net = load_net(path, device)
        self.policy = NetPolicy(self.net, device)
        self._obs = np.zeros((1, OBS_SIZE), dtype=np.float32)

    def packed_evaluator(self) -> np.ndarray | None:
        """The fast evaluator packed for `agents.value_kernels`, or None if the network has none."""
        return None if self.net.evaluator is None else self.net.evaluator.packed()

    def root_order(self, view, with_prior: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """(the legal placements, best logit first; their policy probabilities in that
        order if `with_prior`, else None). Team show actions are never searched."""
        grid, info = view.public_arrays()
        encode_arrays(grid, info, view.seat, self._obs[0])
        mask = view.legal_action_mask()[None, : self.policy.num_actions]
        exposure = (features.exposure(grid, info, kind=self.policy.exposure_kind)[None] if self.policy.needs_exposure
                    else None)
        logits, _ = self.policy.logits_values(self._obs, mask, exposure)
        legal = np.flatnonzero(mask[0, : rules.NUM_PLACEMENT_ACTIONS])
        order = legal[np.argsort(-logits[0, legal], kind="stable")]
        prior = softmax(logits[0, order]) if with_prior and len(order) else None
        return order, prior
