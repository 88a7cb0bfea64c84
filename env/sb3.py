"""One policy for every seat: the PettingZoo AEC env as a `gymnasium.Env` for
Stable-Baselines3 and sb3-contrib's MaskablePPO (self-play).

    from sb3_contrib import MaskablePPO
    from env.sb3 import maskable_selfplay_env

    model = MaskablePPO("MlpPolicy", maskable_selfplay_env(num_players=3))
    model.learn(total_timesteps=2048)

`OnePolicyForEverySeat` follows PettingZoo's SB3 action-masking pattern: every seat's
turn goes to the one policy. It is a `pettingzoo.utils.BaseWrapper` and, because
gymnasium 1.x wrappers (sb3-contrib's ``ActionMasker``) accept only a ``gymnasium.Env``,
a ``gymnasium.Env`` too. It needs only PettingZoo and Gymnasium; `maskable_selfplay_env`
adds ``ActionMasker`` and so needs the ``sb3`` extra, imported when it is called.

====================  ===================================================================
observation_space     ``Box(1338,) float32``: the mover's observation (`env.observation`)
action_space          Discrete(491), team variant Discrete(501)
reset(seed, options)  ``(observation of the first mover, {})``; as the AEC env's reset
step(action)          plays `action` for the seat to move; returns the observation of the
                      *next* mover, the reward the acting seat gathered in that step, and
                      the acting seat's terminated, truncated and info
action_mask()         the mover's legal actions, bool (what ``ActionMasker`` reads)
illegal_actions       how many illegal actions `step` was given (see below)
====================  ===================================================================

Rewards follow the AEC convention: 0 until the game ends, then every seat's final
reward (docs/rules.md). The policy sees only the acting seat's: the reward of the last
move is the last mover's final reward, and the other seats' final rewards reach no
transition (the episode has ended for the one trajectory SB3 keeps). That is PettingZoo's
pattern, kept as it is; a learner that needs every seat's reward should use the vector
env ``TwentyFourSeven-v1`` (docs/interop.md).

An illegal action does not raise: the AEC env's ``TerminateIllegalWrapper`` ends the game
there with reward -1 for the mover and 0 for the others (every seat terminated and
truncated), the game itself unchanged. MaskablePPO never takes one; `illegal_actions`
counts them for other learners.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import BaseWrapper

from engine.extras import require



class OnePolicyForEverySeat(BaseWrapper, gymnasium.Env):
    """A PettingZoo AEC env whose observations are ``{"observation", "action_mask"}``
    dicts (this project's `env.env`), stepped as one ``gymnasium.Env``; see the module
    docstring."""

    def __init__(self, aec_env: AECEnv):
        _check_aec_env(aec_env)
        super().__init__(aec_env)
        agent = aec_env.possible_agents[0]
        # the Gymnasium attributes hide BaseWrapper's per-agent space methods
        self.observation_space = aec_env.observation_space(agent)["observation"]
        self.action_space = aec_env.action_space(agent)
        self.illegal_actions = 0

    def reset(self, seed: int | None = None, options: dict | None = None):
        """A new game; the first mover's observation and an empty info."""
        super().reset(seed=seed, options=options)
        return self.observe(self.agent_selection), {}

    def step(self, action):
        """Play `action` for the seat to move (see the module docstring)."""
        mover = self.agent_selection
        self.illegal_actions += not self.action_mask()[int(action)]
        super().step(action)
        return (self.observe(self.agent_selection), self._cumulative_rewards[mover],
                self.terminations[mover], self.truncations[mover], self.infos[mover])

    def observe(self, agent):
        """`agent`'s observation vector (the AEC observation without its mask)."""
        return super().observe(agent)["observation"]

    def action_mask(self) -> np.ndarray:
        """The legal actions of the seat to move, bool."""
        return super().observe(self.agent_selection)["action_mask"].astype(bool)


def maskable_selfplay_env(num_players: int = 2, team: bool = False):
    """The AEC env (`env.env`) for `num_players` seats (or the team variant) in
    `OnePolicyForEverySeat` and sb3-contrib's ``ActionMasker``: ready for
    ``MaskablePPO("MlpPolicy", ...)``. ImportError naming the extra without sb3-contrib."""
    from .aec import env as aec_env

    require("sb3_contrib", "maskable_selfplay_env")
    from sb3_contrib.common.wrappers import ActionMasker
    return ActionMasker(OnePolicyForEverySeat(aec_env(num_players=num_players, team=team)),
                        _mover_mask)


def _mover_mask(env) -> np.ndarray:
    """The mask of the seat to move (`OnePolicyForEverySeat.action_mask`), for ActionMasker."""
    return env.action_mask()


def _check_aec_env(aec_env) -> None:
    """ValueError unless `aec_env` is an AEC env with dict observations holding an
    ``observation`` Box and an ``action_mask``, and one action space for every agent."""
    if not isinstance(aec_env, AECEnv):
        raise ValueError(f"OnePolicyForEverySeat wraps a PettingZoo AEC env such as env.env(num_players=3), "
                         f"got {type(aec_env).__name__}")
    agents = list(aec_env.possible_agents)
    space = aec_env.observation_space(agents[0])
    if not (isinstance(space, gymnasium.spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces)):
        raise ValueError(f"OnePolicyForEverySeat needs observations {{'observation', 'action_mask'}}, "
                         f"got the space {space}")
    if any(aec_env.action_space(a) != aec_env.action_space(agents[0]) for a in agents):
        raise ValueError("OnePolicyForEverySeat needs one action space for every agent (one policy plays them all)")
