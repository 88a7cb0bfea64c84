"""A trained network as the guide of a search: the root's expansion order and prior from
its policy, and its fast evaluator for cut rollouts (`ismcts:net=PATH`).

Kept apart from `agents.search.mcts` so that a search without a network never imports torch.
"""

from __future__ import annotations

import numpy as np

from engine import rules
from env.observation import OBS_SIZE, encode_arrays

from agents.networks import features, placement
from agents.networks.checkpoints import load_net
from agents.networks.policy import softmax


class NetworkGuide:
    """One forward pass per move: the legal placements ranked by the policy's logits.

    The pass runs in numba (`agents.networks.placement`, the network's weights packed once),
    not in torch: for one position torch's per-operation overhead costs several times
    the arithmetic, most of all right after a search has filled the caches, and the
    move's time is better spent searching."""

    def __init__(self, path: str):
        self.net = load_net(path, "cpu")
        self._placement_net = self.net.packed_placement()
        self._scratch = placement.new_scratch(self._placement_net)
        self._obs = np.zeros(OBS_SIZE, dtype=np.float32)
        self._logits = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.float32)
        self._no_exposure = np.zeros(rules.NUM_PLACEMENT_ACTIONS, dtype=np.float32)

    def packed_evaluator(self) -> np.ndarray | None:
        """The fast evaluator packed for `agents.networks.evaluator`, or None if the network has none."""
        return None if self.net.evaluator is None else self.net.evaluator.packed()

    def placement_logits(self, view) -> np.ndarray:
        """The policy's logit of every placement action (float32, NUM_PLACEMENT_ACTIONS;
        illegal ones included, unmasked) at the position `view` shows its seat."""
        grid, info = view.public_arrays()
        encode_arrays(grid, info, view.seat, self._obs)
        exposure = (features.exposure(grid, info, kind=self.net.exposure_kind) if self.net.needs_exposure
                    else self._no_exposure)
        placement.placement_logits(self._obs, exposure, self._placement_net, *self._scratch, self._logits)
        return self._logits

    def root_logits(self, view) -> tuple[np.ndarray, np.ndarray]:
        """(the legal placements in action order, their logits as float64). Team show
        actions are never searched."""
        logits = self.placement_logits(view)
        legal = np.flatnonzero(view.legal_action_mask()[: rules.NUM_PLACEMENT_ACTIONS])
        return legal, logits[legal].astype(np.float64)

    def root_order(self, view, with_prior: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """(the legal placements, best logit first; their policy probabilities in that
        order if `with_prior`, else None)."""
        legal, logits = self.root_logits(view)
        ranks = np.argsort(-logits, kind="stable")
        prior = softmax(logits[ranks]) if with_prior and len(legal) else None
        return legal[ranks], prior
