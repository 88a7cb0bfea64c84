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


def one_policy_for_every_seat(aec_env):
    """PettingZoo's documented pattern for SB3 action masking: a wrapper that hands every
    seat's turn to one policy and reads the mask from ``observe(agent)["action_mask"]``.
    gymnasium 1.x wrappers (sb3-contrib's ActionMasker) accept only a ``gymnasium.Env``,
    so the wrapper is one too (docs/interop.md). It counts the illegal actions it is
    given: the wrapped AEC env does not raise on one, its TerminateIllegalWrapper ends the
    game there with reward -1 for the mover (see the test below)."""
    import gymnasium
    from pettingzoo.utils import BaseWrapper

    class Wrapper(BaseWrapper, gymnasium.Env):
        illegal_actions = 0

        def reset(self, seed=None, options=None):
            super().reset(seed, options)
            agent = self.possible_agents[0]
            self.observation_space = super().observation_space(agent)["observation"]
            self.action_space = super().action_space(agent)
            return self.observe(self.agent_selection), {}

        def step(self, action):
            mover = self.agent_selection
            self.illegal_actions += not self.action_mask()[int(action)]
            super().step(action)
            return (self.observe(self.agent_selection), self._cumulative_rewards[mover],
                    self.terminations[mover], self.truncations[mover], self.infos[mover])

        def observe(self, agent):
            return super().observe(agent)["observation"]

        def action_mask(self):
            return super().observe(self.agent_selection)["action_mask"].astype(bool)

    return Wrapper(aec_env)


def test_an_illegal_action_in_the_wrapped_aec_env_ends_the_game_with_a_penalty(caplog):
    """What an SB3 policy meets if it ignores the mask: no exception, the episode ends
    (PettingZoo's wrapper marks every seat terminated and truncated alike), the mover
    gets -1, the others 0, and the game itself is not over (nothing was placed)."""
    from env import aec

    seats = one_policy_for_every_seat(aec.env(num_players=3))
    seats.reset(seed=0)
    mover, game = seats.agent_selection, seats.unwrapped.game
    board, turn = game.board.copy(), game.turn
    illegal = int(np.flatnonzero(~seats.action_mask())[0])
    _, reward, terminated, truncated, _ = seats.step(illegal)
    assert "Illegal move made, game terminating" in caplog.text  # PettingZoo's logger, not an exception
    assert reward == -1 and terminated and truncated and seats.illegal_actions == 1
    assert all(seats.terminations.values()) and all(seats.truncations.values()) and {a: r for a, r in seats.rewards.items() if a != mover} == \
        {a: 0 for a in seats.possible_agents if a != mover}
    assert not game.is_over and game.turn == turn and np.array_equal(game.board, board)


def train_briefly_and_play_to_the_end(model, env) -> None:
    """256 learning steps, then one game played by the model with the env's masks."""
    model.learn(total_timesteps=256)
    obs, _ = env.reset(seed=5)
    done = False
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, done, _, _ = env.step(int(action))


def parameters(model) -> list:
    return [p.detach().clone() for p in model.policy.parameters()]


def moved(before: list, model) -> bool:
    """Whether training changed the policy's weights (a learn() that did nothing leaves them)."""
    import torch

    return any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))


@pytest.mark.slow
def test_maskable_ppo_trains_on_the_env_unaided():
    """A short MaskablePPO run (the 200,000-step run is benchmarks/maskable_ppo.py; 256
    steps are too few to measure that it learned to play): the mask comes from
    action_masks() with no wrapper, every action it takes is legal (the env is built to
    raise on an illegal one), its updates change the policy and it plays a game to the end."""
    pytest.importorskip("sb3_contrib", exc_type=ImportError)
    import torch
    from sb3_contrib import MaskablePPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two OpenMP threads spin against each other on 2 shared cores
    try:
        env = TwentyFourSevenEnv(reward="points", illegal_action="raise", seat="random")
        model = MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0)
        before = parameters(model)
        train_briefly_and_play_to_the_end(model, env)
        assert env.game.is_over and moved(before, model)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_the_pettingzoo_action_mask_drives_maskable_ppo():
    """MaskablePPO through `one_policy_for_every_seat` on the 3-player AEC env: every
    action it takes, training and playing, is legal (counted by the wrapper: an illegal
    one would only end an episode early), its updates change the policy and the last
    game is played to its end."""
    pytest.importorskip("sb3_contrib", exc_type=ImportError)
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    from env import aec

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        seats = one_policy_for_every_seat(aec.env(num_players=3))
        seats.reset(seed=0)
        env = ActionMasker(seats, lambda e: e.action_mask())
        model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0)
        before = parameters(model)
        train_briefly_and_play_to_the_end(model, env)
        assert seats.unwrapped.game.is_over and moved(before, model)
        assert seats.illegal_actions == 0
    finally:
        torch.set_num_threads(threads)


def test_the_maskable_ppo_benchmark_clones_greedy_into_the_default_policy(capsys):
    """benchmarks/maskable_ppo.py --clone: the default policy fitted to greedy's moves, then
    tested against random (a few positions and games: the path runs and reports)."""
    pytest.importorskip("sb3_contrib", exc_type=ImportError)
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
