"""`PlayerView`: what one seat may see of a game, for agents.

Agents get a view instead of the `GameState`: it exposes the public state and the
seat's own hand, and samples full worlds consistent with them (`sample_world`) for
search. `full_state()` is for agents marked ``cheating`` only (upper-bound baselines).
"""

from __future__ import annotations

import numpy as np

from . import rules
from .determinize import SCRATCH_LEN, sample_world, unseen_counts
from .game import GameState


class PlayerView:
    """Read-only view of `state` from `seat`'s point of view."""

    __slots__ = ("_state", "seat")

    def __init__(self, state: GameState, seat: int):
        if not 0 <= seat < state.num_players:
            raise ValueError(f"seat {seat} out of range for {state.num_players} players")
        self._state = state
        self.seat = seat

    # --- public information -------------------------------------------------------------
    num_players = property(lambda self: self._state.num_players)
    team = property(lambda self: self._state.team)
    current_player = property(lambda self: self._state.current_player)
    is_over = property(lambda self: self._state.is_over)
    turn = property(lambda self: self._state.turn)
    scores = property(lambda self: self._state.scores)
    hand_sizes = property(lambda self: self._state.hand_sizes)
    bag_size = property(lambda self: self._state.bag_size)
    board = property(lambda self: self._state.board)
    timeout_cells = property(lambda self: self._state.timeout_cells)
    capacities = property(lambda self: self._state.capacities)
    last_action = property(lambda self: self._state.last_action)
    pass_facts = property(lambda self: self._state.pass_facts)
    last_breakdown = property(lambda self: self._state.last_breakdown)

    @property
    def hand(self) -> np.ndarray:
        """This seat's hand: counts per value (index v - 1)."""
        return self._state.hands[self.seat]

    @property
    def partner_shown(self) -> int:
        """Team variant: the value the partner shows to this seat (0 = none)."""
        if not self.team:
            return 0
        return int(self._state.shown_tiles[rules.partner(self.seat)])

    def unseen_counts(self) -> np.ndarray:
        return unseen_counts(self._state, self.seat)

    def legal_actions(self) -> list[int]:
        """The seat to move's legal placements (or [pass]); only meaningful on this seat's turn."""
        return self._state.legal_actions()

    def legal_action_mask(self) -> np.ndarray:
        return self._state.legal_action_mask()

    def show_actions(self) -> list[int]:
        return self._state.show_actions()

    # --- worlds for search ---------------------------------------------------------------
    def sample_world(self, rng: np.random.Generator) -> GameState:
        """A full game consistent with this seat's information (hidden tiles resampled)."""
        grid, info = self._state.arrays
        out = GameState(np.empty_like(grid), np.empty_like(info))
        seed = np.uint64(rng.integers(0, 2**63))
        sample_world(grid, info, self.seat, seed, out.arrays[0], out.arrays[1],
                     np.zeros(SCRATCH_LEN, dtype=np.int64))
        return out

    def public_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(grid, info) of the real game, for numba search kernels that only read its
        public part through `determinize.sample_world`. Read-only by contract."""
        return self._state.arrays

    def full_state(self, agent) -> GameState:
        """The true state (a copy); only for agents marked ``cheating = True``."""
        if not getattr(agent, "cheating", False):
            raise PermissionError(f"{agent!r} is not a cheating agent and may not see hidden tiles")
        return self._state.clone()
