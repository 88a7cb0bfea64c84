"""Vector env tests: make_vec and the spaces, agreement with the single-game engine
(observations, masks, rewards, final observations) through auto-resets, determinism,
explicit deals, illegal actions, and 3-4 player and team games."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from engine import GameState, rules
from env import observation as O
from env.vector import TwentyFourSevenVectorEnv


def random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action of every game."""
    return np.array([rng.choice(np.flatnonzero(row)) for row in mask], dtype=np.int64)


def test_make_vec_and_spaces():
    v = gym.make_vec("TwentyFourSeven-v0", num_envs=5, num_players=3)
    assert isinstance(v, TwentyFourSevenVectorEnv) and v.num_envs == 5 and v.num_players == 3
    assert v.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert v.single_action_space == gym.spaces.Discrete(rules.NUM_ACTIONS)
    assert v.action_space.shape == (5,)
    assert v.single_observation_space["observation"].shape == (O.OBS_SIZE,)
    assert v.observation_space["action_mask"].shape == (5, rules.NUM_ACTIONS)
    obs, info = v.reset(seed=0)
    assert v.observation_space.contains(obs)
    assert info["current_player"].tolist() == [0] * 5
    team = gym.make_vec("TwentyFourSeven-v0", num_envs=2, num_players=4, team=True)
    assert team.single_action_space.n == rules.NUM_TEAM_ACTIONS
    with pytest.raises(ValueError):
        TwentyFourSevenVectorEnv(num_envs=0)


@pytest.mark.parametrize("cfg", [dict(num_players=2), dict(num_players=3), dict(num_players=4),
                                 dict(num_players=4, team=True)], ids=["2p", "3p", "4p", "team"])
def test_vector_agrees_with_engine_through_autoreset(cfg):
    """Replay every game of the batch on GameState: same observations, masks, rewards and
    final observations, across auto-resets."""
    n = 6
    v = TwentyFourSevenVectorEnv(num_envs=n, **cfg)
    obs, info = v.reset(seed=3)
    games = [v.game(i) for i in range(n)]
    rng = np.random.default_rng(1)
    finished = 0
    for _ in range(120):
        for i, g in enumerate(games):
            assert info["current_player"][i] == g.current_player
            np.testing.assert_array_equal(obs["observation"][i], O.encode(g, g.current_player))
            np.testing.assert_array_equal(obs["action_mask"][i].astype(bool),
                                          g.legal_action_mask()[: v.num_actions])
        actions = random_actions(obs["action_mask"], rng)
        movers = info["current_player"].copy()
        obs, reward, term, trunc, info = v.step(actions)
        assert not trunc.any()
        assert obs["action_mask"] is info["action_mask"]
        for i, g in enumerate(games):
            points = g.step(int(actions[i]))
            assert info["points"][i] == points
            if g.is_over:
                assert term[i]
                np.testing.assert_allclose(info["rewards_all"][i], g.rewards())
                assert reward[i] == pytest.approx(g.rewards()[movers[i]])
                assert info["_final_obs"][i]
                final = info["final_obs"][i]
                np.testing.assert_array_equal(final["observation"], O.encode(g, int(movers[i])))
                assert not final["action_mask"].any()
                np.testing.assert_array_equal(info["final_info"]["scores"][i], g.scores)
                games[i] = v.game(i)  # the fresh game dealt in its place
                assert games[i].turn == 0 and not games[i].is_over
                finished += 1
            else:
                assert not term[i] and reward[i] == 0 and not info["rewards_all"][i].any()
                if "final_obs" in info:
                    assert info["final_obs"][i] is None and not info["_final_obs"][i]
    assert finished >= n


def test_vector_determinism_and_streams():
    def run(seed, n=8):
        v = TwentyFourSevenVectorEnv(num_envs=n)
        obs, _ = v.reset(seed=seed)
        rng = np.random.default_rng(0)
        out = []
        for _ in range(80):
            obs, reward, term, _, info = v.step(random_actions(obs["action_mask"], rng))
            out.append((obs["observation"].copy(), reward.copy(), term.copy()))
        return out, v

    a, va = run(11)
    b, _ = run(11)
    assert all(np.array_equal(x, y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
    c, _ = run(12)
    assert not np.array_equal(a[0][0], c[0][0])
    # reset() without a seed continues np_random: a new, different deal
    first = va.game(0).deal
    va.reset()
    assert not np.array_equal(first, va.game(0).deal)


def test_vector_explicit_deals():
    from engine import random_deal

    deals = np.stack([random_deal(s) for s in range(3)])
    v = TwentyFourSevenVectorEnv(num_envs=3, num_players=3)
    obs, _ = v.reset(options={"deals": deals})
    for i in range(3):
        g = GameState.from_deal(deals[i], 3)
        np.testing.assert_array_equal(v.game(i).deal, deals[i])
        np.testing.assert_array_equal(obs["observation"][i], O.encode(g, 0))
    v.reset(options={"deals": deals[0]})
    assert all(np.array_equal(v.game(i).deal, deals[0]) for i in range(3))
    with pytest.raises(ValueError):
        v.reset(options={"deals": deals[:2]})


def test_vector_illegal_actions_raise_and_change_nothing():
    v = TwentyFourSevenVectorEnv(num_envs=4)
    obs, _ = v.reset(seed=0)
    mask = obs["action_mask"]
    actions = np.array([np.flatnonzero(m)[0] for m in mask])
    actions[2] = np.flatnonzero(mask[2] == 0)[0]
    actions[3] = 10_000
    state = [a.copy() for a in (v._grid, v._info)]
    with pytest.raises(ValueError, match=r"games? \[2, 3\]") as err:
        v.step(actions)
    assert "legal actions" in str(err.value)
    np.testing.assert_array_equal(v._grid, state[0])
    np.testing.assert_array_equal(v._info, state[1])
    with pytest.raises(ValueError):
        v.step(actions[:3])
    with pytest.raises(ValueError):
        v.step(actions.astype(np.float64))
    actions[2:] = [np.flatnonzero(m)[0] for m in mask[2:]]
    v.step(actions)
    with pytest.raises(RuntimeError):
        TwentyFourSevenVectorEnv(num_envs=2).step(np.zeros(2, dtype=np.int64))


def test_vector_copy_false_reuses_buffers():
    v = TwentyFourSevenVectorEnv(num_envs=3, copy=False)
    obs, _ = v.reset(seed=1)
    rng = np.random.default_rng(0)
    obs2, *_ = v.step(random_actions(obs["action_mask"], rng))
    assert obs2["observation"] is obs["observation"]
    fresh = TwentyFourSevenVectorEnv(num_envs=3)
    obs, _ = fresh.reset(seed=1)
    obs3, *_ = fresh.step(random_actions(obs["action_mask"], rng))
    assert obs3["observation"] is not obs["observation"]


def test_vector_render():
    v = TwentyFourSevenVectorEnv(num_envs=2, render_mode="ansi")
    v.reset(seed=0)
    frames = v.render()
    assert len(frames) == 2 and "scores:" in frames[0]


# ----------------------------------------------------------------- bad input
def _snapshot(v: TwentyFourSevenVectorEnv):
    return [a.copy() for a in (v._grid, v._info, v._rng, v._deals)] + [v.np_random.bit_generator.state]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def test_vector_actions_any_int_dtype_without_recompiling():
    """A strided, read-only, narrow or byte-swapped action array gives the same step as
    an int64 one and never a new compiled version of vec_step (minutes: a 'hang')."""
    from env.step_kernels import vec_step

    def fresh():
        v = TwentyFourSevenVectorEnv(num_envs=4)
        obs, _ = v.reset(seed=5)
        return v, np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]], dtype=np.int64)

    v, actions = fresh()
    expected = v.step(actions)[0]["observation"]
    versions = len(vec_step.signatures)
    readonly = actions.copy()
    readonly.flags.writeable = False
    for variant in (np.repeat(actions, 2)[::2], readonly, actions.astype(np.int16), actions.astype(np.uint32),
                    actions.astype(">i8"), actions.tolist()):
        v, _ = fresh()
        np.testing.assert_array_equal(v.step(variant)[0]["observation"], expected)
    assert len(vec_step.signatures) == versions


def test_vector_reports_real_values():
    v = TwentyFourSevenVectorEnv(num_envs=4)
    v.reset(seed=0)
    before = _snapshot(v)
    with pytest.raises(ValueError, match=r"actions\[1\] = 18446744073709551615 is out of range 0\.\.490"):
        v.step(np.array([0, 2**64 - 1, 0, 0], dtype=np.uint64))
    for bad in (None, "0123", np.ones(4, dtype=bool), np.full(4, np.nan), [0, 1, 2], np.zeros((4, 1), int)):
        with pytest.raises(ValueError, match="actions"):
            v.step(bad)
    assert _same(_snapshot(v), before)


def test_vector_set_state_checks_everything():
    v = TwentyFourSevenVectorEnv(num_envs=3, num_players=3)
    obs, _ = v.reset(seed=2)
    v.step(random_actions(obs["action_mask"], np.random.default_rng(0)))
    saved = v.get_state()
    other = TwentyFourSevenVectorEnv(num_envs=3, num_players=3)
    other.reset(seed=9)
    before = _snapshot(other)

    def broken(**changes):
        state = dict(saved, **changes)
        return {k: x for k, x in state.items() if x is not _DROP}

    info = saved["info"].copy()
    info[1, 5] = 9  # the seat to move of game 1
    frontier = saved["info"].copy()
    frontier[2, 1] = 0  # game 2's frontier bitboard
    cases = {
        "missing": broken(rng=_DROP), "unknown": broken(extra=1), "grid": broken(grid=saved["grid"][:2]),
        "info": broken(info=info), "state['info']": broken(info=frontier),
        "num_players": broken(num_players=4), "team": broken(team="no"),
        "rng": broken(rng=saved["rng"].astype(np.float64)), "np_random": broken(np_random={"state": 1}),
        "deals": broken(deals=None), "dict": [saved],
    }
    for what, state in cases.items():
        with pytest.raises(ValueError) as err:
            other.set_state(state)
        assert not isinstance(err.value, KeyError), what
        assert _same(_snapshot(other), before), f"{what} changed the env"
    with pytest.raises(ValueError, match=r"missing \['rng'\]"):
        other.set_state(broken(rng=_DROP))
    other.set_state(saved)
    assert _same(_snapshot(other), _snapshot(v))


_DROP = object()


def test_vector_reset_and_options_checked_first():
    v = TwentyFourSevenVectorEnv(num_envs=2)
    v.reset(seed=1)
    before = _snapshot(v)
    for kw in (dict(seed=-1), dict(seed=1.5), dict(seed="1"), dict(options=[1]),
               dict(options={"deals": [1] * 40}), dict(options={"deals": np.zeros((3, 40))}), dict(seed=3, options={"deals": "x"})):
        with pytest.raises(ValueError):
            v.reset(**kw)
        assert _same(_snapshot(v), before), kw
    for kw in (dict(team="no"), dict(num_players=4, team="yes"), dict(copy="no"), dict(num_envs=2.0)):
        with pytest.raises(ValueError):
            TwentyFourSevenVectorEnv(**kw)
    with pytest.raises(ValueError, match="game index"):
        v.game(2)


# --- TwentyFourSeven-v1: every seat's reward from step -------------------------------------
def test_v1_is_the_same_class_with_per_seat_rewards():
    v0 = gym.make_vec("TwentyFourSeven-v0", num_envs=2)
    v1 = gym.make_vec("TwentyFourSeven-v1", num_envs=2, num_players=3, copy=False)
    assert type(v0) is type(v1) is TwentyFourSevenVectorEnv
    assert not v0.per_seat_rewards and v1.per_seat_rewards
    assert (v1.num_envs, v1.num_players, v1.copy) == (2, 3, False)
    single = gym.make("TwentyFourSeven-v1")  # the single-agent env did not change: one learner
    assert type(single.unwrapped) is type(gym.make("TwentyFourSeven-v0").unwrapped)
    with pytest.raises(ValueError, match="v1 always"):
        gym.make_vec("TwentyFourSeven-v1", num_envs=2, per_seat_rewards=False)
    for bad in ("yes", 2, None):
        with pytest.raises(ValueError, match="per_seat_rewards"):
            TwentyFourSevenVectorEnv(num_envs=2, per_seat_rewards=bad)


@pytest.mark.parametrize("cfg", [dict(num_players=2), dict(num_players=3), dict(num_players=4, team=True)],
                         ids=["2p", "3p", "team"])
def test_v1_rewards_are_the_v0_rewards_of_every_seat(cfg):
    """v0 and v1 on the same seed and actions: v1's reward rows are v0's
    info["rewards_all"] rows, the acting seat's entry is v0's reward, a row is zero
    while its game goes on, and at a game's end it holds every seat's final reward
    (zero-sum: the row sums to 0) and sums over the steps to the game's rewards."""
    n = 4
    v0 = gym.make_vec("TwentyFourSeven-v0", num_envs=n, **cfg)
    v1 = gym.make_vec("TwentyFourSeven-v1", num_envs=n, **cfg)
    obs0, info0 = v0.reset(seed=11)
    obs1, info1 = v1.reset(seed=11)
    rng = np.random.default_rng(2)
    totals, finished = np.zeros((n, v1.num_players)), 0
    for _ in range(150):
        np.testing.assert_array_equal(obs0["observation"], obs1["observation"])
        actions = random_actions(obs1["action_mask"], rng)
        movers = info1["current_player"].copy()
        games = [v1.game(i) for i in range(n)]
        obs0, r0, term0, _, info0 = v0.step(actions)
        obs1, r1, term1, _, info1 = v1.step(actions)
        assert r0.shape == (n,) and r1.shape == (n, v1.num_players) and r1.dtype == np.float64
        np.testing.assert_array_equal(term0, term1)
        np.testing.assert_array_equal(r1, info0["rewards_all"])
        np.testing.assert_array_equal(r1[np.arange(n), movers], r0)
        np.testing.assert_array_equal(info1["rewards_all"], r1)
        totals += r1
        for i in np.flatnonzero(term1):
            games[i].step(int(actions[i]))
            np.testing.assert_allclose(totals[i], games[i].rewards())
            assert r1[i].sum() == pytest.approx(0.0) and r1[i].any()
            totals[i] = 0.0
            finished += 1
        assert not r1[~term1].any()
    assert finished >= n
