"""24/7 as a single-agent Gymnasium environment (``TwentyFourSeven-v0``).

One seat learns; the other seats are played inside the env by opponents. ``import env``
registers the id, so ``gymnasium.make("TwentyFourSeven-v0", num_players=3)`` works, and
``gymnasium.make_vec("TwentyFourSeven-v0", num_envs=N)`` returns the self-play vector
env `env.vector.TwentyFourSevenVectorEnv` (a different contract: every seat's turn).

=====================  ==========================================================
observation space      ``Dict(observation=Box(1338,) float32, action_mask=Box(A,) int8)``
                       (`env.observation`; from the learner's seat)
action space           Discrete(491), team variant Discrete(501) (`engine.rules`)
reward                 ``reward="result"`` (default): the learner's final reward
                       (docs/rules.md) on the last step, else 0; ``reward="points"``:
                       dense, see below
termination            the game is over (or an illegal action, see below)
truncation             never
info                   ``action_mask`` (same as in the observation), ``seat`` (the
                       learner's), ``points`` (minutes of the learner's last action),
                       ``scores`` (every seat's minutes); ``illegal_action`` when ended
                       by one
=====================  ==========================================================

Constructor: ``TwentyFourSevenEnv(num_players=2, team=False, seat=0, opponents=None,
illegal_action="penalty", render_mode=None, reward="result")``.

* ``seat``: the learner's seat, or ``"random"`` for a uniformly random seat each episode
  (drawn from the env's ``np_random``).
* ``opponents``: ``None`` (uniformly random legal actions drawn from ``np_random``, team
  shows included), one opponent for every other seat, or a list with one per seat (the
  learner's entry is ignored). An opponent is either an object with
  ``act(observation, view) -> int`` (`agents.base.Agent`; it gets the observation vector of
  its seat and an `engine.view.PlayerView`; its ``reset(seat, num_players, team)`` is called
  each episode and, on a seeded reset, its ``seed(s)`` with a seed drawn from
  ``np_random``), or a callable ``(observation, action_mask, state) -> int`` where
  ``state`` is the full `GameState` (scripted opponents; it may see hidden tiles).
* ``illegal_action``: ``"penalty"`` (default) ends the episode with reward -1 for an
  illegal or out-of-range action, like PettingZoo's TerminateIllegalWrapper and pgx (what
  ``check_env``'s unmasked random actions need); ``"raise"`` raises ``ValueError`` naming
  the action and the legal choices, and changes nothing.
* ``reward``: ``"result"`` (default) pays only the final reward. ``"points"`` adds a dense
  signal for libraries that learn poorly from one +-1 at the end of a long game: each step
  pays the change of the *minute lead* ``lead = (mine - mean(theirs)) / 100``, where
  ``mine`` is the learner's minutes (team variant: its team's minutes) and ``theirs`` the
  minutes of every opposing seat (team variant: the opposing team's minutes): the lead of
  `engine.kernels.side_lead`, the one the search and the learners score, so partners
  earn the same. The change
  is measured from the learner's previous step (the first step: from the start of the
  game), so it includes what the opponents scored in between. The last step adds the final reward, so an episode pays
  ``lead at the end + final reward`` in all; the illegal-action penalty stays -1.
  The final result still decides who won: a player ranking by minutes maximises both.

Action masking: ``action_masks()`` returns the learner's legal actions as a bool array
(sb3-contrib's ``MaskablePPO`` convention); it is the ``action_mask`` of the last
observation.

Reset: ``reset(seed=s)`` seeds ``np_random``, which draws the deal seed, the random seat
and the random opponents' moves; ``options={"deal": [40 values]}`` plays an explicit
deal. The learner's first observation comes after the seats before it have played.

Version history:
* v0: first release; ``reward="points"`` and ``action_masks()`` added later (the
  default behaviour is unchanged).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from engine import rules
from engine.deal import random_deal
from engine.game import GameState
from engine.kernels import LEAD_SCALE, apply_action, is_legal, legal_mask
from engine.validate import as_int
from engine.view import PlayerView

from . import observation as obs_mod
from . import render as render_mod
from .aec import as_action_id, checked_deal_option

REWARD_MODES = ("result", "points")
POINTS_SCALE = LEAD_SCALE  # minutes per unit of dense reward (reward="points"): the margin's scale


class TwentyFourSevenEnv(gym.Env):
    """One learning seat of 24/7 against built-in opponents (see the module docstring)."""

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(self, num_players: int = 2, team: bool = False, seat: int | str = 0,
                 opponents=None, illegal_action: str = "penalty", render_mode: str | None = None,
                 reward: str = "result"):
        rules.check_game_options(num_players, team)
        self.num_players = int(num_players)
        self.team = bool(team)
        random_seat = isinstance(seat, str) and seat == "random"
        if not (random_seat or (isinstance(seat, (int, np.integer)) and not isinstance(seat, bool)
                                and 0 <= seat < self.num_players)):
            raise ValueError(f"seat must be 0..{self.num_players - 1} or 'random', got {seat!r}")
        self.random_seat = random_seat
        if illegal_action not in ("penalty", "raise"):
            raise ValueError(f"illegal_action must be 'penalty' or 'raise', got {illegal_action!r}")
        self.illegal_action = illegal_action
        if not (isinstance(reward, str) and reward in REWARD_MODES):
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        self.reward_mode = reward
        render_mod.check_render_mode(render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.opponents = self._opponent_table(opponents)
        self.num_actions = rules.num_actions(self.team)
        self.observation_space = obs_mod.observation_space(self.num_actions)
        self.action_space = spaces.Discrete(self.num_actions)
        self.game: GameState | None = None
        self.seat = 0 if random_seat else int(seat)
        self._mask_buf = np.zeros(self.num_actions, dtype=np.bool_)
        self._last_mask = np.zeros(self.num_actions, dtype=np.int8)
        self._lead = 0.0
        self._done = True

    def _opponent_table(self, opponents) -> list:
        if opponents is None:
            return [None] * self.num_players
        if isinstance(opponents, (list, tuple)):
            if len(opponents) != self.num_players:
                raise ValueError(f"opponents: need one entry per seat ({self.num_players}), got {len(opponents)}")
            table = list(opponents)
        else:
            table = [opponents] * self.num_players
        for opp in table:
            if opp is not None and not (hasattr(opp, "act") or callable(opp)):
                raise ValueError(f"an opponent must have act(observation, view) or be a callable "
                                 f"(observation, action_mask, state) -> action; got {opp!r}")
        return table

    # --- episode -----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        # seed and options are checked before np_random or the game changes
        if seed is not None:
            seed = as_int(seed, "seed", 0)
        deal = checked_deal_option(options)
        super().reset(seed=seed)
        if deal is None:
            deal = random_deal(self._draw_seed())
        self.game = GameState.from_deal(deal, self.num_players, self.team)
        self._grid, self._info = self.game.arrays
        if self.random_seat:
            self.seat = int(self.np_random.integers(self.num_players))
        seeded = set()
        for s, opp in enumerate(self.opponents):
            if s == self.seat or opp is None:
                continue
            if seed is not None and hasattr(opp, "seed") and id(opp) not in seeded:
                seeded.add(id(opp))
                opp.seed(self._draw_seed())
            if hasattr(opp, "reset"):
                opp.reset(s, self.num_players, self.team)
        self._points = 0
        self._play_opponents()
        self._done = self.game.is_over
        self._lead = 0.0  # the first step pays the lead from the start of the game
        obs = self._observe()
        info = self._make_info(obs["action_mask"])
        if self.render_mode == "human":
            self.render()
        return obs, info

    def step(self, action):
        if self.game is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset()")
        action_id = as_action_id(action)
        if (action_id is None or not 0 <= action_id < self.num_actions
                or not is_legal(self._grid, self._info, action_id)):
            if self.illegal_action == "raise":
                raise ValueError(self.game.illegal_message(action))
            self._done = True
            obs = self._observe()
            info = self._make_info(obs["action_mask"])
            info["illegal_action"] = True
            return obs, -1.0, True, False, info
        self._points = int(apply_action(self._grid, self._info, action_id))
        self._play_opponents()
        obs = self._observe()
        info = self._make_info(obs["action_mask"])
        reward = 0.0
        if self.reward_mode == "points":
            lead = self._minute_lead()
            reward, self._lead = lead - self._lead, lead
        if self.game.is_over:
            self._done = True
            reward += float(self.game.rewards()[self.seat])
        if self.render_mode == "human":
            self.render()
        return obs, reward, bool(self._done), False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now, as bools (sb3-contrib's MaskablePPO reads this)."""
        return self._last_mask.astype(np.bool_)

    # --- helpers ---------------------------------------------------------------------------

    @property
    def _live(self) -> GameState:
        """The game under way (ValueError before `reset` starts one)."""
        if self.game is None:
            raise ValueError("no game yet: call reset() first")
        return self.game
    def _minute_lead(self) -> float:
        """The learner's minute lead (`engine.kernels.side_lead`) / 100, for reward="points"."""
        return float(self._live.leads()[self.seat]) / POINTS_SCALE

    def _draw_seed(self) -> int:
        return int(self.np_random.integers(0, 2**63 - 1))

    def _play_opponents(self) -> None:
        """Let the other seats act until it is the learner's turn or the game is over."""
        game = self._live
        while not game.is_over:
            seat = game.current_player
            if seat == self.seat:
                return
            action = self._opponent_action(seat)
            if not is_legal(self._grid, self._info, action):
                raise ValueError(f"opponent at seat {seat} ({self.opponents[seat]!r}) chose an "
                                 + game.illegal_message(action))
            apply_action(self._grid, self._info, action)

    def _opponent_action(self, seat: int) -> int:
        opp = self.opponents[seat]
        mask = self._mask_buf
        if opp is None:
            legal_mask(self._grid, self._info, mask)
            legal = mask.nonzero()[0]  # not np.flatnonzero: its wrappers are a visible cost per move
            return int(legal[self.np_random.integers(len(legal))])
        obs = obs_mod.encode(self.game, seat)
        if hasattr(opp, "act"):
            action = opp.act(obs, PlayerView(self._live, seat))
        else:
            legal_mask(self._grid, self._info, mask)
            action = opp(obs, mask.astype(np.int8), self.game)
        action_id = as_action_id(action)
        if action_id is None or not 0 <= action_id < self.num_actions:
            raise ValueError(f"opponent at seat {seat} ({opp!r}) returned {action!r}, not an action id "
                             f"in 0..{self.num_actions - 1}")
        return action_id

    def _observe(self) -> dict:
        obs = np.empty(obs_mod.OBS_SIZE, dtype=np.float32)
        mask = np.zeros(self.num_actions, dtype=np.int8)
        obs_mod.encode_with_mask(self._grid, self._info, self.seat, obs, mask.view(np.bool_))
        self._last_mask = mask
        return {"observation": obs, "action_mask": mask}

    def _make_info(self, mask: np.ndarray) -> dict:
        return {"action_mask": mask, "seat": self.seat, "points": self._points,
                "scores": self._live.scores}

    def render(self):
        return render_mod.render_frame(self.render_mode, self.game, self.seat)
