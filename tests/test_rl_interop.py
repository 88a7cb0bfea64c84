"""Mainstream RL libraries on our envs: the Gymnasium env's ``action_masks()`` and its
dense ``reward="points"`` mode, and sb3-contrib's MaskablePPO training on it unaided."""

from __future__ import annotations

import numpy as np
import pytest

from engine import rules
from env.gym_env import POINTS_SCALE, TwentyFourSevenEnv

CONFIGS = [dict(num_players=2), dict(num_players=3, seat=1), dict(num_players=4, team=True, seat=3)]
IDS = ["2p", "3p", "team"]


def lead(env: TwentyFourSevenEnv) -> float:
    """The learner's minute lead, computed here from the scores (the documented formula)."""
    scores = env.game.scores
    if env.team:
        sides = [sum(scores[s] for s in team) for team in rules.TEAMS]
        mine = 0 if env.seat in rules.TEAMS[0] else 1
    else:
        sides, mine = list(scores), env.seat
    theirs = [x for i, x in enumerate(sides) if i != mine]
    return (sides[mine] - np.mean(theirs)) / POINTS_SCALE


def run_episode(env, seed, rng):
    """Play masked random actions; return (rewards, leads after each step, final reward)."""
    obs, info = env.reset(seed=seed)
    rewards, leads, done = [], [0.0], False  # the lead is counted from the game's start
    while not done:
        mask = env.action_masks()
        assert mask.dtype == np.bool_ and np.array_equal(mask, obs["action_mask"].astype(bool))
        assert np.array_equal(mask, info["action_mask"].astype(bool))
        obs, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        rewards.append(reward)
        leads.append(lead(env))
    return rewards, leads, float(env.game.rewards()[env.seat])


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_points_reward_pays_the_change_of_the_minute_lead(cfg):
    rng = np.random.default_rng(0)
    rewards, leads, final = run_episode(TwentyFourSevenEnv(reward="points", **cfg), 3, rng)
    expected = np.diff(leads)
    expected[-1] += final
    assert np.allclose(rewards, expected)
    assert sum(rewards) == pytest.approx(leads[-1] + final)
    assert any(r != 0 for r in rewards[:-1])  # dense: minutes pay before the end


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_default_reward_is_unchanged(cfg):
    rng = np.random.default_rng(1)
    rewards, _, final = run_episode(TwentyFourSevenEnv(**cfg), 4, rng)
    assert all(r == 0 for r in rewards[:-1]) and rewards[-1] == final


def test_points_mode_with_illegal_action_and_bad_mode():
    env = TwentyFourSevenEnv(reward="points")
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, done, _, info = env.step(illegal)
    assert reward == -1.0 and done and info["illegal_action"]
    for bad in ("dense", None, 1):
        with pytest.raises(ValueError, match="reward"):
            TwentyFourSevenEnv(reward=bad)


def test_action_masks_show_team_actions():
    env = TwentyFourSevenEnv(num_players=4, team=True)
    env.reset(seed=2)
    mask = env.action_masks()
    assert mask.shape == (rules.NUM_TEAM_ACTIONS,)
    assert mask[rules.SHOW_BASE:].any()


def train_briefly_and_play_to_the_end(model, env) -> None:
    """256 learning steps, then one game played by the model with the env's masks."""
    model.learn(total_timesteps=256)
    obs, _ = env.reset(seed=5)
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, _ = env.step(int(action))


@pytest.mark.slow
def test_maskable_ppo_learns_on_the_env_unaided():
    """A short MaskablePPO run (the 200,000-step run is benchmarks/maskable_ppo.py): the
    mask comes from action_masks() with no wrapper and every action it takes is legal
    (the env raises on an illegal one)."""
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two OpenMP threads spin against each other on 2 shared cores
    try:
        env = TwentyFourSevenEnv(reward="points", illegal_action="raise", seat="random")
        train_briefly_and_play_to_the_end(MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64,
                                                      n_epochs=1, seed=0), env)
        assert env.game.is_over
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_the_pettingzoo_action_mask_drives_maskable_ppo():
    """PettingZoo's documented pattern for SB3 action masking: a wrapper that hands every
    seat's turn to one policy and reads the mask from ``observe(agent)["action_mask"]``.
    gymnasium 1.x wrappers (sb3-contrib's ActionMasker) accept only a ``gymnasium.Env``,
    so the wrapper is one too (docs/interop.md). Every action taken is legal (the env
    raises on an illegal one)."""
    pytest.importorskip("sb3_contrib")
    import gymnasium
    import torch
    from pettingzoo.utils import BaseWrapper
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    from env import aec

    class OnePolicyForEverySeat(BaseWrapper, gymnasium.Env):
        def reset(self, seed=None, options=None):
            super().reset(seed, options)
            agent = self.possible_agents[0]
            self.observation_space = super().observation_space(agent)["observation"]
            self.action_space = super().action_space(agent)
            return self.observe(self.agent_selection), {}

        def step(self, action):
            mover = self.agent_selection
            super().step(action)
            return (self.observe(self.agent_selection), self._cumulative_rewards[mover],
                    self.terminations[mover], self.truncations[mover], self.infos[mover])

        def observe(self, agent):
            return super().observe(agent)["observation"]

        def action_mask(self):
            return super().observe(self.agent_selection)["action_mask"].astype(bool)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        seats = OnePolicyForEverySeat(aec.env(num_players=3))
        seats.reset(seed=0)
        env = ActionMasker(seats, lambda e: e.action_mask())
        train_briefly_and_play_to_the_end(MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1,
                                                      seed=0), env)
        assert seats.unwrapped.game.is_over
    finally:
        torch.set_num_threads(threads)


def test_the_maskable_ppo_benchmark_clones_greedy_into_the_default_policy(capsys):
    """benchmarks/maskable_ppo.py --clone: the default policy fitted to greedy's moves, then
    tested against random (a few positions and games: the path runs and reports)."""
    pytest.importorskip("sb3_contrib")
    import torch

    from benchmarks import maskable_ppo

    threads = torch.get_num_threads()
    try:
        maskable_ppo.main(["--clone", "300", "--clone-epochs", "2", "--games", "2"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "clone epoch 2: cross-entropy" in out
    assert "cloned from greedy (300 positions, 2 epochs): score vs random" in out
