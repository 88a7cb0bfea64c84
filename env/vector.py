"""N games of 24/7 stepped in one numba call: a self-play `gymnasium.vector.VectorEnv`.

``gymnasium.make_vec("TwentyFourSeven-v1", num_envs=N, num_players=2, team=False)``
returns `TwentyFourSevenVectorEnv` with ``per_seat_rewards=True`` (through the
registration's ``vector_entry_point``, `make_v1`); ``"TwentyFourSeven-v0"`` returns it
with the v0 rewards (the default). Unlike the single-agent env there are no built-in
opponents: every step takes one action per game *for whichever seat is to move*, so one
policy plays all seats (self-play).

=======================  ========================================================
single_observation_space ``Dict(observation=Box(1338,) float32, action_mask=Box(A,) int8)``
                         from the point of view of the seat to move (`env.observation`)
single_action_space      Discrete(491), team variant Discrete(501)
observation_space        the batched Dict: ``observation (N, 1338)``, ``action_mask (N, A)``
action_space             MultiDiscrete([A] * N)
step(actions)            actions: int array (N,), one per game
reward, v0 (N,) float64  the final reward (docs/rules.md) of the seat that just acted, when
                         its action ended the game; else 0
reward, v1 (N, P)        every seat's reward this step (P = num_players): game i's row is
float64                  its final rewards (``GameState.rewards()``) on the step that ends
                         it, else zeros; the same values as ``info["rewards_all"]``, whose
                         row for the acting seat is v0's reward (pgx's convention)
terminated (N,) bool     the action ended the game; truncated is always False
info["current_player"]   (N,) int64: the seat to move in the returned observation
info["action_mask"]      (N, A) int8: the same array as ``obs["action_mask"]``
info["rewards_all"]      (N, num_players) float64: every seat's final reward (0 while
                         a game goes on), for self-play learners
info["points"]           (N,) int64: minutes scored by the action just taken
=======================  ========================================================

Auto-reset: ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``). When game i
ends, the same step returns its reward and termination, and the observation, mask and
``current_player`` of the *fresh* game dealt in its place. As in Gymnasium's
SyncVectorEnv, ``info["final_obs"]`` is then an object array (None where no game ended)
holding the finished game's last observation dict (from the seat that made the last
move, all-zero mask), with ``info["_final_obs"]`` the (N,) bool mask of finished games;
``info["final_info"]`` holds ``scores`` (N, num_players) and ``rewards_all`` for those
games, masked by ``info["final_info"]["_scores"]`` etc. and ``info["_final_info"]``.

Illegal actions: before anything changes, every action is checked against its game; if
any is illegal (or out of range), `step` raises ``ValueError`` listing the bad game
indices, their actions and legal choices, and no game changes.

Bad input: `step` takes any array-like of N ints of any integer dtype and layout (copied
into the C-contiguous int64 array the step kernel is compiled for, so no input triggers
a recompile); floats, bools, strings, None, a wrong shape or an id outside 0..A-1 raise
``ValueError`` naming the value as given (a uint64 ``2**64 - 1`` is not reported as -1).
`reset` checks its seed and options, and `set_state` its keys, types, shapes and every
game (`engine.batch.check_states`), before anything changes.

Seeding: ``reset(seed=s)`` seeds ``np_random``, which gives each game its own splitmix64
stream; game i's deals (the first and every auto-reset) come from that stream only, so
runs are reproducible and independent of the thread count. ``reset()`` without a seed
continues ``np_random``. ``reset(options={"deals": (N, 40) or (40,) values})`` starts
from explicit deals (auto-resets still draw from the streams).

``copy=True`` (default) returns fresh arrays every step; ``copy=False`` reuses the same
output buffers (faster, but a returned array changes on the next step).

Version history (the env ids of ``gymnasium.make_vec``; `env/__init__.py` registers both):
* v0: first release. ``step`` returns the reward of the seat that just acted, shape (N,);
  every seat's reward is in ``info["rewards_all"]``.
* v1: ``step`` returns every seat's reward, shape (N, num_players) (``per_seat_rewards=True``),
  as pgx does; the values are v0's ``info["rewards_all"]``, which v1 still returns. Nothing
  else changed: observations, masks, auto-reset, info and seeding are v0's. Wrappers that
  expect a reward of shape (N,) (``RecordEpisodeStatistics`` and the like) need v0.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from engine import access, rules, validate
from engine.batch import check_states
from engine.game import GameState

from . import observation as obs_mod
from . import render as render_mod
from .step_kernels import vec_reset, vec_reset_from_deals, vec_step

_INT64 = np.dtype(np.int64)
_STATE_KEYS = frozenset({"grid", "info", "rng", "deals", "np_random", "num_players", "team"})


def _checked_bit_generator_state(bit_generator, saved):
    """`saved` if it is a valid state for a bit generator of this type (tried on a
    fresh one, so the env's own generator is untouched), else ValueError."""
    trial = type(bit_generator)()
    try:
        trial.state = saved
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"state['np_random'] is not a {type(bit_generator).__name__} state: {exc!r}") from None
    return saved


class TwentyFourSevenVectorEnv(VectorEnv):
    """`num_envs` games of 24/7 for `num_players` seats (or the team variant), self-play."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["ansi", "rgb_array"]}

    def __init__(self, num_envs: int = 1, num_players: int = 2, team: bool = False, copy: bool = True,
                 render_mode: str | None = None, per_seat_rewards: bool = False):
        """`per_seat_rewards`: `step` returns every seat's reward, (N, num_players) (v1),
        instead of the acting seat's, (N,) (v0); see the module docstring."""
        rules.check_game_options(num_players, team)
        num_envs = validate.as_int(num_envs, "num_envs", 1)
        render_mod.check_render_mode(render_mode, self.metadata["render_modes"])
        self.num_envs = int(num_envs)
        self.num_players = int(num_players)
        self.team = bool(team)
        self.copy = validate.as_flag(copy, "copy")
        self.per_seat_rewards = validate.as_flag(per_seat_rewards, "per_seat_rewards")
        self.render_mode = render_mode
        self.num_actions = rules.num_actions(self.team)
        self.single_observation_space = obs_mod.observation_space(self.num_actions)
        self.single_action_space = spaces.Discrete(self.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        n = self.num_envs
        self._grid, self._info = access.new_arrays(n)
        self._rng = np.zeros(n, dtype=np.uint64)
        self._deals = np.zeros((n, rules.NUM_TILES), dtype=np.int64)
        self._bad = np.zeros(n, dtype=np.bool_)
        self._ended = np.zeros(n, dtype=np.int64)  # the kernel lists finished games here
        self._final_obs = np.zeros((n, obs_mod.OBS_SIZE), dtype=np.float32)
        self._final_scores = np.zeros((n, self.num_players), dtype=np.int64)
        self._final_mask = np.zeros(self.num_actions, dtype=np.int8)  # shared, read-only
        self._final_mask.flags.writeable = False
        self._buffers: tuple[np.ndarray, ...] | None = None  # the step's outputs, reused unless copy
        self._started = False

    # --- buffers -------------------------------------------------------------------------
    def _outputs(self):
        """(obs, mask, current, reward, rewards_all, terminated, points): fresh, or the
        reused buffers when copy=False."""
        if self.copy or self._buffers is None:
            n = self.num_envs
            bufs = (np.empty((n, obs_mod.OBS_SIZE), dtype=np.float32),
                    np.empty((n, self.num_actions), dtype=np.int8),
                    np.empty(n, dtype=np.int64),
                    np.empty(n, dtype=np.float64),
                    np.empty((n, self.num_players), dtype=np.float64),
                    np.empty(n, dtype=np.bool_),
                    np.empty(n, dtype=np.int64))
            if not self.copy:
                self._buffers = bufs
            return bufs
        return self._buffers

    # --- the API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        # everything is checked before np_random or any game changes
        if seed is not None:
            seed = validate.as_int(seed, "seed", 0)
        deals = self._checked_deals(options)
        super().reset(seed=seed)
        n = self.num_envs
        self._rng[:] = self.np_random.integers(0, 2**63 - 1, size=n, dtype=np.int64).astype(np.uint64)
        obs, mask, current, *_ = self._outputs()
        if deals is None:
            vec_reset(self._grid, self._info, self._rng, self._deals, self.num_players, int(self.team),
                      obs, mask, current)
        else:
            vec_reset_from_deals(self._grid, self._info, deals, self.num_players, int(self.team),
                                 obs, mask, current)
        self._started = True
        return ({"observation": obs, "action_mask": mask},
                {"current_player": current, "action_mask": mask})

    def _checked_deals(self, options) -> np.ndarray | None:
        """options['deals'] as an (N, 40) int64 array of checked deals, or None."""
        if options is None:
            return None
        if not isinstance(options, dict):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
        deals = options.get("deals")
        if deals is None:
            return None
        n = self.num_envs
        try:
            given = np.asarray(deals)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"options['deals'] must be an array of deals: {exc}") from None
        if given.ndim == 1:
            given = np.broadcast_to(given, (n, given.shape[0]))
        if given.shape != (n, rules.NUM_TILES):
            raise ValueError(f"options['deals'] must have shape ({n}, {rules.NUM_TILES}) or "
                             f"({rules.NUM_TILES},), got {given.shape}")
        return np.stack([rules.check_deal(d) for d in given]).astype(np.int64)

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        acts = actions
        # The common case (a fresh or reused int64 buffer) skips numpy's checks; anything
        # else is checked and copied into the one array type vec_step is compiled for.
        if not (type(acts) is np.ndarray and acts.dtype is _INT64 and acts.shape == (self.num_envs,)
                and acts.flags.carray):
            acts = self._as_actions(actions)
        obs, mask, current, reward, rewards_all, terminated, points = self._outputs()
        num_bad, num_finished = vec_step(
            self._grid, self._info, acts, self._rng, self._deals, self.num_players, int(self.team),
            obs, mask, reward, rewards_all, terminated, current, points, self._final_obs,
            self._final_scores, self._bad, self._ended)
        if num_bad:
            raise ValueError(self._illegal_message(acts))
        info = {"current_player": current, "action_mask": mask, "rewards_all": rewards_all,
                "points": points}
        if num_finished:
            self._add_final_info(info, terminated, rewards_all, num_finished)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        if self.per_seat_rewards:
            reward = rewards_all
        return {"observation": obs, "action_mask": mask}, reward, terminated, truncated, info

    def _as_actions(self, actions) -> np.ndarray:
        return validate.as_int_array(actions, "actions", (self.num_envs,), 0, self.num_actions - 1)

    def _add_final_info(self, info: dict, terminated, rewards_all, num_finished: int) -> None:
        """The finished games' last observations, scores and rewards, Gymnasium-style.
        Kept to a few numpy calls: right after the kernel the caches hold game data, and
        each extra call here costs tens of microseconds per step."""
        done = terminated.copy()
        ended = self._ended[:num_finished].tolist()
        rows = self._final_obs[ended]  # one copy for all finished games
        final = np.empty(self.num_envs, dtype=object)  # all None
        for k, i in enumerate(ended):
            final[i] = {"observation": rows[k], "action_mask": self._final_mask}
        info["final_obs"] = final
        info["_final_obs"] = done
        info["final_info"] = {"scores": self._final_scores.copy(), "_scores": done,
                              "rewards_all": rewards_all.copy(), "_rewards_all": done}
        info["_final_info"] = done

    def _illegal_message(self, acts: np.ndarray) -> str:
        bad = np.flatnonzero(self._bad)
        details = "; ".join(f"game {i}: {self.game(i).illegal_message(int(acts[i]))}" for i in bad[:5])
        more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
        return (f"illegal actions in games {bad[:20].tolist()}{' ...' if len(bad) > 20 else ''}"
                f"; no game was changed. {details}{more}")

    # --- inspection -------------------------------------------------------------------------
    def game(self, i: int) -> GameState:
        """Game i (0..num_envs-1) as an independent `GameState` copy (full state, hidden
        tiles included)."""
        i = validate.as_int(i, "game index", 0, self.num_envs - 1)
        return GameState(self._grid[i].copy(), self._info[i].copy())

    @property
    def current_player(self) -> np.ndarray:
        return access.movers(self._info).copy()

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The live (grid, info) arrays of all games, stacked (see `engine.access`), for
        batch kernels that read them (a greedy opponent's move); not copies, so do not
        write to them."""
        return self._grid, self._info

    def get_state(self) -> dict:
        """Everything needed to continue these games exactly (for training checkpoints)."""
        return {"grid": self._grid.copy(), "info": self._info.copy(), "rng": self._rng.copy(),
                "deals": self._deals.copy(), "np_random": self.np_random.bit_generator.state,
                "num_players": self.num_players, "team": self.team}

    def set_state(self, state: dict) -> None:
        """Restore games saved by `get_state` (same num_envs, players and variant).
        Everything is checked first (keys, types, shapes, every game's state: see
        `engine.batch.check_states`); a bad state raises ValueError and changes nothing."""
        if not isinstance(state, dict):
            raise ValueError(f"state must be a dict from get_state(), got {type(state).__name__}")
        missing = sorted(_STATE_KEYS - set(state))
        unknown = sorted(map(str, set(state) - _STATE_KEYS))
        if missing or unknown:
            raise ValueError(f"state from get_state() must have the keys {sorted(_STATE_KEYS)}; "
                             f"missing {missing}, unknown {unknown}")
        if not (validate.as_int(state["num_players"], "state['num_players']") == self.num_players
                and validate.as_flag(state["team"], "state['team']") == self.team):
            raise ValueError(f"state['num_players'] and state['team'] ({state['num_players']!r}, "
                             f"{state['team']!r}) do not match this env ({self.num_players}, {self.team})")
        n = self.num_envs
        grid = validate.as_int_array(state["grid"], "state['grid']", self._grid.shape, dtype=np.int16)
        info = validate.as_int_array(state["info"], "state['info']", self._info.shape)
        rng = validate.as_int_array(state["rng"], "state['rng']", (n,), dtype=np.uint64)
        deals = validate.as_int_array(state["deals"], "state['deals']", self._deals.shape)
        try:
            check_states(grid, info, self.num_players, self.team)
        except ValueError as exc:
            raise ValueError(f"state['grid'], state['info']: {exc}") from None
        if access.games_over(info).any():  # the env deals a finished game afresh at once
            raise ValueError(f"state['info']: games {np.flatnonzero(access.games_over(info)).tolist()} are "
                             f"over; a vector env never holds a finished game")
        bit_generator = _checked_bit_generator_state(self.np_random.bit_generator, state["np_random"])
        self._grid[:] = grid
        self._info[:] = info
        self._rng[:] = rng
        self._deals[:] = deals
        self.np_random.bit_generator.state = bit_generator
        self._started = True

    def render(self):
        if self.render_mode is None or not self._started:
            return None
        draw = render_mod.rgb_array if self.render_mode == "rgb_array" else render_mod.ansi
        return tuple(draw(self.game(i)) for i in range(self.num_envs))


def make_v1(num_envs: int = 1, **kwargs) -> TwentyFourSevenVectorEnv:
    """``gymnasium.make_vec("TwentyFourSeven-v1", ...)``: the vector env with every seat's
    reward from `step` (``per_seat_rewards=True``); `kwargs` as for the class."""
    if "per_seat_rewards" in kwargs:
        raise ValueError("TwentyFourSeven-v1 always returns every seat's reward; for the acting "
                         "seat's reward use TwentyFourSeven-v0 (per_seat_rewards is not an option here)")
    return TwentyFourSevenVectorEnv(num_envs, per_seat_rewards=True, **kwargs)
