"""AlphaZero-style self-play training.

Each iteration plays `games_per_iteration` self-play games in lockstep. Every move is
chosen by `agents.alphazero.BatchedSearch` (PUCT over worlds sampled from the mover's
information, network priors and leaf values) with Dirichlet noise at the root; the
first `temperature_moves` moves of each seat are sampled from the visit counts, later
ones take the most visited action. Every position becomes a training example: the
mover's observation and mask, the visit distribution (policy target) and every seat's
final reward, rotated so slot 0 is the mover (value target; optionally blended with the
score margin). Examples go to a replay buffer; each iteration then takes
`train_steps_per_iteration` minibatch steps on cross-entropy + value MSE.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from agents.alphazero import BatchedSearch
from agents.neural import NetPolicy
from agents.nets import PolicyValueNet
from engine import layout, rules
from engine.batch import batch_legal_mask, batch_reset, batch_step
from env.observation import OBS_SIZE, encode_batch

from .config import TrainConfig


class ReplayBuffer:
    """A ring buffer of training examples (observations stored as float16)."""

    def __init__(self, capacity: int, num_actions: int):
        self.obs = np.zeros((capacity, OBS_SIZE), dtype=np.float16)
        self.mask = np.zeros((capacity, num_actions), dtype=np.bool_)
        self.policy = np.zeros((capacity, num_actions), dtype=np.float32)
        self.value = np.zeros((capacity, 4), dtype=np.float32)
        self.size = 0
        self.next = 0

    def add(self, obs, mask, policy, value) -> None:
        for i in range(len(obs)):
            k = self.next
            self.obs[k], self.mask[k], self.policy[k], self.value[k] = obs[i], mask[i], policy[i], value[i]
            self.next = (k + 1) % len(self.obs)
            self.size = min(self.size + 1, len(self.obs))

    def sample(self, batch: int, rng: np.random.Generator):
        idx = rng.integers(0, self.size, size=batch)
        return self.obs[idx].astype(np.float32), self.mask[idx], self.policy[idx], self.value[idx]

    def state_dict(self) -> dict:
        n = self.size
        return {"obs": self.obs[:n].copy(), "mask": self.mask[:n].copy(), "policy": self.policy[:n].copy(),
                "value": self.value[:n].copy(), "next": self.next}

    def load_state_dict(self, state: dict) -> None:
        n = len(state["obs"])
        self.obs[:n], self.mask[:n], self.policy[:n], self.value[:n] = (state["obs"], state["mask"],
                                                                        state["policy"], state["value"])
        self.size, self.next = n, state["next"]


class AlphaZeroTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.ac = cfg.alphazero
        self.device = device
        self.rng = np.random.default_rng(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.num_actions = rules.NUM_TEAM_ACTIONS if cfg.team else rules.NUM_ACTIONS
        cfg.net.num_actions = self.num_actions
        self.net = PolicyValueNet(cfg.net).to(device)
        self.optimizer = torch.optim.AdamW(self.net.parameters(), lr=self.ac.learning_rate,
                                           weight_decay=self.ac.weight_decay)
        self.buffer = ReplayBuffer(self.ac.replay_size, self.num_actions)
        self.iteration = 0
        self.games = 0
        self.positions = 0

    def policy(self) -> NetPolicy:
        return NetPolicy(self.net, self.device)

    # --- self-play ----------------------------------------------------------------------
    def self_play(self) -> dict:
        """Play one batch of games; add their positions to the replay buffer."""
        b = self.ac.games_per_iteration
        n = self.cfg.num_players
        grid = np.zeros((b, layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        info = np.zeros((b, layout.INFO_LEN), dtype=np.int64)
        batch_reset(grid, info, self.rng.integers(0, 2**62, size=b), n, int(self.cfg.team))
        search = BatchedSearch(self.policy(), b, self.ac.simulations, self.ac.c_puct)
        rng_state = self.rng.integers(0, 2**63, size=b).astype(np.uint64)
        examples = []  # (game, mover, obs, mask, policy target)
        moves_made = np.zeros((b, 4), dtype=np.int64)
        obs = np.zeros((b, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((b, self.num_actions), dtype=np.bool_)
        self.net.eval()
        while True:
            active = info[:, layout.OVER] == 0
            if not active.any():
                break
            visits = search.run(grid, info, active, rng_state, self.rng,
                                (self.ac.dirichlet_alpha, self.ac.dirichlet_fraction))
            movers = info[:, layout.CURRENT].copy()
            encode_batch(grid, info, movers, obs)
            batch_legal_mask(grid, info, masks)
            actions = np.zeros(b, dtype=np.int64)
            for g in np.flatnonzero(active):
                counts = visits[g]
                target = counts / counts.sum()
                mover = movers[g]
                if moves_made[g, mover] < self.ac.temperature_moves:
                    actions[g] = self.rng.choice(len(target), p=target)
                else:
                    actions[g] = int(np.argmax(counts))
                moves_made[g, mover] += 1
                examples.append((g, mover, obs[g].copy(), masks[g].copy(), target))
            points = np.zeros(b, dtype=np.int64)
            batch_step(grid, info, np.where(active, actions, rules.PASS_ACTION), points)
        self._add_examples(examples, grid, info)
        self.games += b
        self.positions += len(examples)
        scores = info[:, layout.SCORE:layout.SCORE + self.cfg.num_players]
        return {"selfplay_positions": len(examples), "selfplay_mean_minutes": float(scores.mean())}

    def _add_examples(self, examples: list, grid: np.ndarray, info: np.ndarray) -> None:
        """Give each (game, mover, obs, mask, policy target) its value target (every seat's
        final reward rotated so slot 0 is the mover, blended with the score margin) and
        add them to the replay buffer."""
        from engine.kernels import rewards as rewards_kernel

        n = self.cfg.num_players
        rewards = np.zeros((len(grid), 4))
        margins = np.zeros((len(grid), 4))
        for g in range(len(grid)):
            rewards_kernel(info[g], rewards[g])
            scores = info[g, layout.SCORE:layout.SCORE + n].astype(np.float64)
            margins[g, :n] = np.tanh((scores - scores.mean()) / 100.0)
        w = self.ac.margin_weight
        values = []
        for g, mover, _, _, _ in examples:
            seats = (mover + np.arange(n)) % n
            value = np.zeros(4, dtype=np.float32)
            value[:n] = (1 - w) * rewards[g, seats] + w * margins[g, seats]
            values.append(value)
        self.buffer.add([e[2] for e in examples], [e[3] for e in examples], [e[4] for e in examples], values)

    # --- learning ------------------------------------------------------------------------
    def train(self, steps: int | None = None) -> dict:
        self.net.train()
        n = self.cfg.num_players
        stats = {"policy_loss": [], "value_loss": [], "entropy": []}
        for _ in range(steps or self.ac.train_steps_per_iteration):
            obs, mask, target, value = self.buffer.sample(self.ac.batch_size, self.rng)
            o = torch.as_tensor(obs, device=self.device)
            m = torch.as_tensor(mask, device=self.device)
            t = torch.as_tensor(target, device=self.device)
            v = torch.as_tensor(value, device=self.device)
            logits, values = self.net(o, m)
            logp = F.log_softmax(logits, dim=1)
            policy_loss = -(t * logp).sum(dim=1).mean()
            value_loss = F.mse_loss(values[:, :n], v[:, :n])
            loss = policy_loss + value_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            with torch.no_grad():
                p = logp.exp()
                stats["entropy"].append(float(-(p * logp.clamp(min=-30)).sum(dim=1).mean()))
            stats["policy_loss"].append(policy_loss.item())
            stats["value_loss"].append(value_loss.item())
        return {k: float(np.mean(v)) for k, v in stats.items()}

    # --- optional warm start: imitate the greedy agent --------------------------------------
    def imitation_warm_start(self) -> dict:
        """Fill the replay buffer with `pretrain_games` greedy-vs-greedy games (policy
        target: greedy's move; value target: the final rewards) and fit the network to
        them for `pretrain_steps` steps, so self-play starts from a sensible policy
        (as AlphaGo started from supervised learning)."""
        from .opponents import batch_greedy_actions

        n, games = self.cfg.num_players, self.ac.pretrain_games
        grid = np.zeros((games, layout.GRID_CELLS, layout.GRID_CHANNELS), dtype=np.int16)
        info = np.zeros((games, layout.INFO_LEN), dtype=np.int64)
        batch_reset(grid, info, self.rng.integers(0, 2**62, size=games), n, int(self.cfg.team))
        obs = np.zeros((games, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((games, self.num_actions), dtype=np.bool_)
        actions = np.zeros(games, dtype=np.int64)
        points = np.zeros(games, dtype=np.int64)
        examples = []
        while (info[:, layout.OVER] == 0).any():
            active = info[:, layout.OVER] == 0
            movers = info[:, layout.CURRENT].copy()
            encode_batch(grid, info, movers, obs)
            batch_legal_mask(grid, info, masks)
            batch_greedy_actions(grid, info, active, actions)
            for g in np.flatnonzero(active):
                target = np.zeros(self.num_actions, dtype=np.float32)
                target[actions[g]] = 1.0
                examples.append((g, movers[g], obs[g].copy(), masks[g].copy(), target))
            batch_step(grid, info, np.where(active, actions, rules.PASS_ACTION), points)
        self._add_examples(examples, grid, info)
        stats = self.train(self.ac.pretrain_steps)
        return {f"pretrain_{k}": v for k, v in stats.items()}

    def run_iteration(self) -> dict:
        if self.iteration == 0 and self.ac.pretrain_games > 0:
            warm = self.imitation_warm_start()
        else:
            warm = {}
        metrics = self.self_play()
        metrics.update(warm)
        metrics.update(self.train())
        self.iteration += 1
        metrics.update({"games": self.games, "positions": self.positions, "replay_size": self.buffer.size})
        return metrics

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "iteration": self.iteration, "games": self.games,
                "positions": self.positions, "rng": self.rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(), "buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration, self.games, self.positions = state["iteration"], state["games"], state["positions"]
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        self.buffer.load_state_dict(state["buffer"])
