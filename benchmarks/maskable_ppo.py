"""sb3-contrib's MaskablePPO, with its defaults, learning 24/7 against the random opponent.

    python benchmarks/maskable_ppo.py                      # 200,000 steps, 1,000 test games
    python benchmarks/maskable_ppo.py --steps 20000 --games 200 --reward result
    python benchmarks/maskable_ppo.py --clone 30000 --games 200    # what the policy can hold

A new user's path: ``TwentyFourSeven-v0`` (2 players, the env's uniformly random
opponent), ``MaskablePPO("MultiInputPolicy", env)`` with no tuning (the env's
``action_masks()`` supplies the mask, no wrapper), ``learn(steps)``. Then the trained
policy plays ``--games`` fresh games against the same random opponent, masked and
deterministic, in seat 0 and seat 1 alternately. Prints the score (wins + draws / 2 per
game) with a 95% Wilson interval, the train and test seconds and the machine.
``--clone N`` separates what the default policy can represent from what PPO learns: no
PPO; the same untrained ``MaskablePPO`` policy is fitted by behaviour cloning (cross-entropy,
``--clone-epochs`` passes, Adam at 1e-3) to the greedy agent's moves in N of the learner's
positions (greedy in the learner's seat against the random opponent), then tested alike.
``--torch-threads`` (default 1): on a small machine shared with other jobs, torch's
OpenMP threads spin waiting for each other; with 2 threads one PPO iteration took 7x
the CPU time of 1 thread here.
Needs the ``sb3`` extra (``pip install torch==2.13.0 sb3-contrib``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.machine import describe  # noqa: E402
from env.gym_env import REWARD_MODES, TwentyFourSevenEnv  # noqa: E402
from evaluation.stats import wilson_interval  # noqa: E402


def train(steps: int, reward: str, seed: int):
    from sb3_contrib import MaskablePPO

    env = TwentyFourSevenEnv(reward=reward, seat="random")
    model = MaskablePPO("MultiInputPolicy", env, seed=seed, verbose=0)
    model.learn(total_timesteps=steps, callback=progress_printer())
    return model


def clone_greedy(positions: int, epochs: int, seed: int):
    """An untrained MaskablePPO (defaults) whose policy is fitted to the greedy agent's moves."""
    import numpy as np
    import torch
    from sb3_contrib import MaskablePPO

    from agents import make
    from engine.view import PlayerView

    greedy, env = make("greedy"), TwentyFourSevenEnv(seat="random")
    observations, masks, actions = [], [], []
    obs, _ = env.reset(seed=seed)
    while len(actions) < positions:
        action = greedy.act(None, PlayerView(env.game, env.seat))
        observations.append(obs["observation"])
        masks.append(obs["action_mask"])
        actions.append(action)
        obs, _, done, _, _ = env.step(action)
        if done:
            obs, _ = env.reset()
    model = MaskablePPO("MultiInputPolicy", TwentyFourSevenEnv(seat="random"), seed=seed)
    policy = model.policy
    o, m, a = torch.as_tensor(np.array(observations)), torch.as_tensor(np.array(masks)), torch.as_tensor(actions)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        order, total = torch.randperm(len(a), generator=generator), 0.0
        for start in range(0, len(a), 256):
            i = order[start:start + 256]
            dist = policy.get_distribution({"observation": o[i], "action_mask": m[i].float()},
                                           action_masks=m[i].bool().numpy())
            loss = -dist.log_prob(a[i]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(i)
        print(f"  clone epoch {epoch + 1}: cross-entropy {total / len(a):.3f}", flush=True)
    return model


def progress_printer(every: int = 20_000):
    """A callback printing the steps done and the seconds so far (flushed), every `every` steps."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.start, self.next = time.perf_counter(), every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                print(f"  {self.num_timesteps} steps, {time.perf_counter() - self.start:.0f} s", flush=True)
                self.next += every
            return True

    return Progress()


def score_vs_random(model, games: int, seed: int) -> tuple[float, int, int, int]:
    """(score, wins, draws, losses) of `model` over `games` games against random play."""
    wins = draws = losses = 0
    for i in range(games):
        env = TwentyFourSevenEnv(seat=i % 2)
        obs, _ = env.reset(seed=seed + i)
        done, reward = False, 0.0
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, reward, done, _, _ = env.step(int(action))
        wins += reward > 0
        draws += reward == 0
        losses += reward < 0
    return (wins + draws / 2) / games, wins, draws, losses


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--games", type=int, default=1000)
    ap.add_argument("--reward", choices=REWARD_MODES, default="points")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--clone", type=int, default=0, metavar="N",
                    help="behaviour-clone greedy on N positions instead of PPO (see above)")
    ap.add_argument("--clone-epochs", type=int, default=8)
    args = ap.parse_args(argv)
    if args.steps < 1 or args.games < 1 or args.torch_threads < 1 or args.clone < 0 or args.clone_epochs < 1:
        ap.error("--steps, --games, --torch-threads and --clone-epochs must be positive, --clone >= 0")
    import torch

    torch.set_num_threads(args.torch_threads)
    t0 = time.perf_counter()
    if args.clone:
        model = clone_greedy(args.clone, args.clone_epochs, args.seed)
        what = f"MaskablePPO's default policy cloned from greedy ({args.clone} positions, {args.clone_epochs} epochs)"
    else:
        model = train(args.steps, args.reward, args.seed)
        what = f"MaskablePPO (defaults, MultiInputPolicy), reward={args.reward!r}, {args.steps} steps"
    t1 = time.perf_counter()
    score, w, d, lo = score_vs_random(model, args.games, seed=10**6 + args.seed)
    t2 = time.perf_counter()
    low, high = wilson_interval(w + d / 2, args.games)
    print(f"{what}: score vs random {score:.3f} [{low:.3f}, {high:.3f}] over {args.games} games "
          f"(W/D/L {w}/{d}/{lo}); train {t1 - t0:.0f} s, test {t2 - t1:.0f} s")
    print(f"machine: {describe()}")


if __name__ == "__main__":
    main()
