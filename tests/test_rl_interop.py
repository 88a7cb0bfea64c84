"""Mainstream RL libraries on our envs: the Gymnasium env's ``action_masks()`` and its
dense ``reward="points"`` mode, sb3-contrib's MaskablePPO training on it unaided, and
the one-policy-every-seat wrapper (`env.sb3`) with MaskablePPO and its example script
(examples/selfplay_maskable_ppo.py)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import rules
from env.gym_env import POINTS_SCALE, TwentyFourSevenEnv
from env.sb3 import OnePolicyForEverySeat

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


def test_an_illegal_action_in_the_wrapped_aec_env_ends_the_game_with_a_penalty(caplog):
    """What an SB3 policy meets if it ignores the mask: no exception, the episode ends
    (PettingZoo's wrapper marks every seat terminated and truncated alike), the mover
    gets -1, the others 0, and the game itself is not over (nothing was placed)."""
    from env import aec

    seats = OnePolicyForEverySeat(aec.env(num_players=3))
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
    """MaskablePPO on `env.sb3.maskable_selfplay_env` (the 3-player AEC env in
    OnePolicyForEverySeat and ActionMasker): every action it takes, training and playing,
    is legal (counted by the wrapper: an illegal one would only end an episode early), its
    updates change the policy and the last game is played to its end."""
    pytest.importorskip("sb3_contrib", exc_type=ImportError)
    import torch
    from sb3_contrib import MaskablePPO

    from env.sb3 import maskable_selfplay_env

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = maskable_selfplay_env(num_players=3)
        seats = env.env
        assert isinstance(seats, OnePolicyForEverySeat) and env.observation_space.shape == (1338,)
        model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0)
        before = parameters(model)
        train_briefly_and_play_to_the_end(model, env)
        assert seats.unwrapped.game.is_over and moved(before, model)
        assert seats.illegal_actions == 0
    finally:
        torch.set_num_threads(threads)


def test_the_wrapper_refuses_what_it_cannot_wrap_and_names_the_sb3_extra(monkeypatch):
    """Bad input is a ValueError naming what it needs; without sb3-contrib,
    `maskable_selfplay_env` is an ImportError naming the extra (the module itself
    imports without it)."""
    import sys

    from gymnasium import spaces
    from pettingzoo import AECEnv

    from env import sb3

    class NoMask(AECEnv):
        possible_agents = ["a", "b"]

        def observation_space(self, agent):
            return spaces.Box(0, 1, (3,))

        def action_space(self, agent):
            return spaces.Discrete(2)

    for bad in ("env", TwentyFourSevenEnv()):
        with pytest.raises(ValueError, match="PettingZoo AEC env"):
            OnePolicyForEverySeat(bad)
    with pytest.raises(ValueError, match="action_mask"):
        OnePolicyForEverySeat(NoMask())
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)
    monkeypatch.setitem(sys.modules, "sb3_contrib.common.wrappers", None)
    with pytest.raises(ImportError, match=r'pip install "twentyfourseven\[sb3\]"'):
        sb3.maskable_selfplay_env()


def test_the_wrapper_hands_every_seat_to_one_policy():
    """A 2-player game through the wrapper, random legal actions: the observation `step`
    returns is the next mover's, its mask the mover's, rewards 0 until the last step,
    whose reward is the last mover's final reward."""
    from env import aec

    seats = OnePolicyForEverySeat(aec.env(num_players=2))
    obs, info = seats.reset(seed=4)
    assert info == {} and seats.observation_space.contains(obs)
    rng, rewards, done = np.random.default_rng(0), [], False
    while not done:
        game = seats.unwrapped.game
        assert np.array_equal(seats.action_mask(), game.legal_action_mask()[:rules.NUM_ACTIONS])
        assert np.array_equal(obs, seats.unwrapped.observe(f"player_{game.current_player}")["observation"])
        mover = game.current_player
        obs, reward, done, truncated, _ = seats.step(int(rng.choice(np.flatnonzero(seats.action_mask()))))
        rewards.append(reward)
    assert not truncated and seats.illegal_actions == 0 and game.is_over
    assert all(r == 0 for r in rewards[:-1]) and rewards[-1] == game.rewards()[mover]


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


def test_the_selfplay_example_trains_and_plays_random(capsys, monkeypatch):
    """examples/selfplay_maskable_ppo.py with a tiny budget: MaskablePPO learns by
    self-play through env.sb3 (3 players), then its policy plays `random` as an agent of
    this project, every game to its end without a forfeit, and the score is reported."""
    pytest.importorskip("sb3_contrib", exc_type=ImportError)
    import importlib.util
    import sys
    from pathlib import Path

    import torch

    path = Path(__file__).resolve().parents[1] / "examples" / "selfplay_maskable_ppo.py"
    spec = importlib.util.spec_from_file_location("selfplay_maskable_ppo", path)
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)  # its dataclass looks itself up there
    spec.loader.exec_module(example)
    threads = torch.get_num_threads()
    try:
        score = example.main(["--timesteps", "64", "--games", "3", "--players", "3"])
    finally:
        torch.set_num_threads(threads)
    assert score.games == 3 and score.forfeits == 0 and 0.0 <= score.mean <= 1.0
    assert "MaskablePPO self-play, 3 players, 64 steps" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        example.main(["--timesteps", "0"])
