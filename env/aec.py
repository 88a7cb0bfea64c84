"""24/7: The Game as a PettingZoo AEC environment (``twentyfourseven_v0``).

=====================  ==========================================================
import                 ``from env import env, raw_env``
agents                 ``player_0 .. player_{n-1}`` (n = 2, 3 or 4; team: 4)
actions                Discrete(491), team variant Discrete(501)
observations           ``{"observation": Box(1338,) float32, "action_mask": Box(A,) int8}``
rewards                at the end only: +1/-1/0 (2 players, teams), mean pairwise
                       result with 3-4 players (docs/rules.md)
=====================  ==========================================================

Rules in brief (docs/rules.md has them all): 40 tiles (four each of 1..10) on a 7x7 board. On
your turn put one tile from your hand next to a tile (8-neighbourhood) so that no line
(row, column, both diagonals; empty cells and Time Out stones break lines) through it
sums to more than 24, score minutes for sums of 7 and 24, runs, sets and the 24/7 bonus
(doubled on the 8 Double Time cells), and draw. With no legal placement you pass. The
game ends when nobody can place; most minutes wins (ties: fewer tiles in hand).

Observation: see `env.observation` (one table; 26 planes of 7x7 then 64 features), from
the point of view of the agent observed; it never contains other hands, the bag order or
the removed tiles. ``action_mask`` is the legal-action mask of the agent to move and all
zeros for every other agent (and for everyone once the game is over).

Actions (`engine.rules`): placement ``cell * 10 + (value - 1)`` with ``cell = row * 7 +
col`` (0..489); pass ``490``, legal only when no placement is (then the mask shows only
pass); team variant ``491 + (value - 1)`` shows a tile of that value to your partner,
allowed once per turn before placing, after which the same agent moves again.

Rewards: 0 on every step but the last, which gives every agent its final reward
(`GameState.rewards`); then all agents are terminated (never truncated).
``infos[agent]["points"]`` holds the minutes scored by the last action.

Bad input: `raw_env.step` raises ``ValueError`` naming the action and the legal choices
and changes nothing. `env()` adds the PettingZoo wrappers: an illegal action ends the
game with reward -1 for the offender (`TerminateIllegalWrapper`), an out-of-range
action fails an assertion (`AssertOutOfBoundsWrapper`), and calls out of order raise
(`OrderEnforcingWrapper`).

Seeding: ``reset(seed=s)`` deals ``engine.random_deal(s)``; ``seed=None`` draws fresh
entropy; ``reset(options={"deal": [40 values]})`` plays an explicit deal (docs/rules.md).

Rendering: ``render_mode="ansi"`` returns the text board (scores, the hand of the agent to
move, ``#`` Time Out, ``2x`` Double Time), ``"human"`` prints it, ``"rgb_array"`` returns
an (H, W, 3) uint8 picture (`env.render`).

Version history:
* v0: first release.
"""

from __future__ import annotations

import operator

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from engine import rules
from engine.deal import random_deal
from engine.game import GameState

from . import observation as obs_mod
from . import render as render_mod
from .step_kernels import step_and_observe


def env(**kwargs) -> AECEnv:
    """The wrapped environment: `raw_env` with TerminateIllegalWrapper(illegal_reward=-1),
    AssertOutOfBoundsWrapper and OrderEnforcingWrapper (the PettingZoo classic stack)."""
    e = raw_env(**kwargs)
    e = _TerminateIllegalWrapper(e, illegal_reward=-1)
    e = _AssertOutOfBoundsWrapper(e)
    e = _OrderEnforcingWrapper(e)
    return e


# --- the PettingZoo wrappers, with direct access to the per-step attributes -----------------
# PettingZoo's BaseWrapper forwards every attribute through a chain of __getattr__ calls
# (about 35 per step through three wrappers), which costs three times the env's own step.
# These subclasses read the hot attributes straight from the raw env; nothing else
# changes (they are still instances of the PettingZoo wrappers).
_HOT_ATTRS = ("agent_selection", "agents", "rewards", "terminations", "truncations", "infos",
              "_cumulative_rewards")


def _direct(name: str):
    def set_(self, value):
        setattr(self._raw, name, value)

    # attrgetter is a C call (no Python frame on the wrappers' many reads per step). Before
    # reset the raw env has none of these attributes: the AttributeError makes Python fall
    # back to the wrapper's __getattr__, so OrderEnforcingWrapper still says "cannot be
    # accessed before reset".
    return property(operator.attrgetter(f"_raw.{name}"), set_)


def _fast(wrapper_cls, **methods):
    def __init__(self, env, *args, **kwargs):
        wrapper_cls.__init__(self, env, *args, **kwargs)
        self._raw = env.unwrapped

    namespace = {name: _direct(name) for name in _HOT_ATTRS}
    namespace["__init__"] = __init__
    namespace["__doc__"] = wrapper_cls.__doc__
    namespace["__str__"] = lambda self: str(self.env)
    namespace.update(methods)
    return type(wrapper_cls.__name__, (wrapper_cls,), namespace)


def _bounds_checked_step(self, action):
    """AssertOutOfBoundsWrapper.step with a fast path for a plain in-range int (gymnasium's
    generic Discrete.contains was a quarter of the wrapped step); anything else takes the
    wrapper's own assertion."""
    if type(action) is int and 0 <= action < self._raw.num_actions:
        super(wrappers.AssertOutOfBoundsWrapper, self).step(action)
    else:
        wrappers.AssertOutOfBoundsWrapper.step(self, action)


_TerminateIllegalWrapper = _fast(wrappers.TerminateIllegalWrapper)
_AssertOutOfBoundsWrapper = _fast(wrappers.AssertOutOfBoundsWrapper, step=_bounds_checked_step)
_OrderEnforcingWrapper = _fast(wrappers.OrderEnforcingWrapper)


def as_action_id(action) -> int | None:
    """An action as a Python int (numpy ints and 0-d int arrays too); None if it is not one."""
    if isinstance(action, (bool, np.bool_)):
        return None
    try:
        return operator.index(action)
    except TypeError:
        return None


def checked_deal_option(options) -> np.ndarray | None:
    """The explicit deal of ``reset(options={"deal": [40 values]})``, checked; None when
    not given. Other option names are ignored (PettingZoo's api_test passes some)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
    deal = options.get("deal")
    return None if deal is None else rules.check_deal(deal)


class raw_env(AECEnv):
    """24/7 for `num_players` seats (2..4), or the 4-player team variant (`team=True`)."""

    metadata = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "name": "twentyfourseven_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, num_players: int = 2, team: bool = False, render_mode: str | None = None):
        super().__init__()
        rules.check_game_options(num_players, team)
        render_mod.check_render_mode(render_mode, self.metadata["render_modes"])
        self.num_players = int(num_players)
        self.team = bool(team)
        self.render_mode = render_mode
        self.num_actions = rules.num_actions(self.team)
        self.possible_agents = [f"player_{i}" for i in range(self.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        # Separate (but per-agent identical) space objects, each returned every call.
        self.observation_spaces = {a: obs_mod.observation_space(self.num_actions) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(self.num_actions) for a in self.possible_agents}
        self.game: GameState | None = None  # the full (hidden) state, for tools and tests

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    # --- episode ---------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        deal = checked_deal_option(options)
        if deal is None:
            deal = random_deal(seed)
        self.game = GameState.from_deal(deal, self.num_players, self.team)
        self._grid, self._info = self.game.arrays
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict] = {a: {} for a in self.agents}
        seat = self.game.current_player
        obs = np.empty(obs_mod.OBS_SIZE, dtype=np.float32)
        mask = np.empty(self.num_actions, dtype=np.int8)
        obs_mod.encode_with_mask(self._grid, self._info, seat, obs, mask.view(np.bool_))
        self._cache_seat = seat
        self._cache = {"observation": obs, "action_mask": mask}
        self.agent_selection = self.possible_agents[seat]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent):
        seat = self.agent_name_mapping[agent]
        if seat == self._cache_seat:
            return self._cache
        obs = np.empty(obs_mod.OBS_SIZE, dtype=np.float32)
        obs_mod.encode_arrays(self._grid, self._info, seat, obs)
        return {"observation": obs, "action_mask": np.zeros(self.num_actions, dtype=np.int8)}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action_id = as_action_id(action)
        if action_id is None or not 0 <= action_id < self.num_actions:
            raise ValueError(self._live.illegal_message(action))
        obs = np.empty(obs_mod.OBS_SIZE, dtype=np.float32)
        mask = np.empty(self.num_actions, dtype=np.int8)
        points = step_and_observe(self._grid, self._info, action_id, obs, mask.view(np.bool_))
        if points < 0:
            raise ValueError(self._live.illegal_message(action))
        self._cache_seat = self._live.current_player
        self._cache = {"observation": obs, "action_mask": mask}
        self._cumulative_rewards[agent] = 0.0
        step_info = {"points": int(points)}
        self.infos = {a: step_info for a in self.agents}
        if self._live.is_over:
            final = self._live.rewards()
            self.rewards = {a: float(final[i]) for i, a in enumerate(self.possible_agents)}
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.rewards = dict.fromkeys(self.agents, 0.0)
        self.agent_selection = self.possible_agents[self._cache_seat]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # --- extras --------------------------------------------------------------------------
    @property
    def _live(self) -> GameState:
        """The game under way (ValueError before `reset` starts one)."""
        if self.game is None:
            raise ValueError("no game yet: call reset() first")
        return self.game

    @property
    def last_breakdown(self):
        """The scoring breakdown of the last action (empty after a pass or a show)."""
        return () if self.game is None else self.game.last_breakdown

    def render(self):
        viewer = self.agent_name_mapping.get(self.agent_selection) if self.game is not None else None
        return render_mod.render_frame(self.render_mode, self.game, viewer)

    def close(self) -> None:
        pass
