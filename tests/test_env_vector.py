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
from env.step_kernels import sample_masked
from env.vector import TwentyFourSevenVectorEnv


def random_actions(mask: np.ndarray, rng: np.ndarray) -> np.ndarray:
    out = np.empty(mask.shape[0], dtype=np.int64)
    sample_masked(mask, rng, out)
    return out


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
    rng = np.random.SeedSequence(1).generate_state(n, np.uint64)
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
        rng = np.random.SeedSequence(0).generate_state(n, np.uint64)
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
    rng = np.random.SeedSequence(0).generate_state(3, np.uint64)
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


def test_encode_batch_matches_encode():
    from engine.batch import BatchState

    batch = BatchState.new(5, num_players=4, seed=2)
    seats = np.array([0, 1, 2, 3, 1], dtype=np.int64)
    out = np.empty((5, O.OBS_SIZE), dtype=np.float32)
    O.encode_batch(batch.grid, batch.info, seats, out)
    for i in range(5):
        np.testing.assert_array_equal(out[i], O.encode(batch.game(i), int(seats[i])))
