"""PPO self-play on the vectorised env, with action masking and an opponent pool.

Each game of the vector env gets, when it is dealt, an opponent kind drawn from
``ppo.opponents``: "self" (every seat is played, and learned from, by the current
network), "past" (one learner seat; the others are played by a pooled snapshot),
"random" or "greedy" (the built-in agents). The only reward is the final one
(docs/rules.md), so each learner move is credited with its seat's final reward
(Monte Carlo return, gamma = 1) and the value head is the baseline. Moves of games
still running when a batch ends wait in `pending` for the next batch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from agents.networks import NetPolicy, PolicyValueNet
from engine import rules
from engine.batch import check_states
from engine.kernels import LEAD_SCALE
from env.vector import TwentyFourSevenVectorEnv
from evaluation.progress import progress_bar

from .config import TrainConfig
from .opponents import batch_greedy_actions, random_actions

KINDS = ("self", "past", "random", "greedy")


@dataclass
class Moves:
    """Learner moves waiting for their game to end (parallel arrays)."""

    obs: list = field(default_factory=list)
    mask: list = field(default_factory=list)
    action: list = field(default_factory=list)
    logp: list = field(default_factory=list)
    game: list = field(default_factory=list)  # vector-env game index
    seat: list = field(default_factory=list)
    episode: list = field(default_factory=list)  # which deal of that game slot
    points: list = field(default_factory=list)  # minutes the move scored

    def add(self, obs, mask, action, logp, game, seat, episode, points):
        self.obs.append(obs)
        self.mask.append(mask)
        self.action.append(action)
        self.logp.append(logp)
        self.game.append(game)
        self.seat.append(seat)
        self.episode.append(episode)
        self.points.append(points)

    def arrays(self) -> dict:
        if not self.obs:
            return {}
        return {k: np.concatenate(getattr(self, k)) for k in self.__dataclass_fields__}


class PPOTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.pc = cfg.ppo
        self.device = device
        self.rng = np.random.default_rng(cfg.seed)
        torch.manual_seed(cfg.seed)
        num_actions = rules.num_actions(cfg.team)
        cfg.net.num_actions = num_actions
        self.net = PolicyValueNet(cfg.net).to(device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=self.pc.learning_rate, eps=1e-5)
        self.envs = TwentyFourSevenVectorEnv(self.pc.num_envs, cfg.num_players, cfg.team)
        obs, info = self.envs.reset(seed=cfg.seed)
        self.obs, self.mask = obs["observation"], obs["action_mask"]
        self.current = info["current_player"]
        n = self.pc.num_envs
        self.kind = np.zeros(n, dtype=np.int64)
        self.learner_seat = np.zeros(n, dtype=np.int64)
        self.past_index = np.zeros(n, dtype=np.int64)
        self.episode = np.zeros(n, dtype=np.int64)
        self.pool: list[dict] = [copy.deepcopy(self.net.state_dict())]
        self.opponent_net = PolicyValueNet(cfg.net).to(device).eval()
        self.pending = Moves()
        self.iteration = 0
        self.env_steps = 0
        self.games = 0
        for i in range(n):
            self._assign(i)

    # --- who plays where ----------------------------------------------------------------
    def _assign(self, i: int) -> None:
        weights = np.array([self.pc.opponents.get(k, 0.0) for k in KINDS], dtype=np.float64)
        self.kind[i] = self.rng.choice(len(KINDS), p=weights / weights.sum())
        self.learner_seat[i] = self.rng.integers(self.cfg.num_players)
        self.past_index[i] = self.rng.integers(len(self.pool))

    def _learner_rows(self) -> np.ndarray:
        return (self.kind == KINDS.index("self")) | (self.current == self.learner_seat)

    # --- collecting -----------------------------------------------------------------------
    @torch.no_grad()
    def _policy(self, net, obs, mask):
        o = torch.as_tensor(obs, device=self.device)
        m = torch.as_tensor(mask, device=self.device).bool()
        logits, values = net(o, m)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        return action.cpu().numpy(), dist.log_prob(action).cpu().numpy()

    def _opponent_actions(self, rows: np.ndarray, actions: np.ndarray) -> None:
        kinds = self.kind[rows]
        rnd = rows[kinds == KINDS.index("random")]
        if len(rnd):
            actions[rnd] = random_actions(self.mask, rnd, self.rng)
        greedy = rows[kinds == KINDS.index("greedy")]
        if len(greedy):
            which = np.zeros(len(actions), dtype=np.bool_)
            which[greedy] = True
            out = np.zeros(len(actions), dtype=np.int64)
            batch_greedy_actions(*self.envs.arrays, which, out)
            actions[greedy] = out[greedy]
        past = rows[kinds == KINDS.index("past")]
        for index in np.unique(self.past_index[past]):
            sel = past[self.past_index[past] == index]
            self.opponent_net.load_state_dict(self.pool[index])
            actions[sel], _ = self._policy(self.opponent_net, self.obs[sel], self.mask[sel])

    def collect(self) -> tuple[dict, np.ndarray, dict]:
        """Step the vector env `steps_per_iteration` times. Returns the learner moves of
        the games that ended (arrays), their returns, and per opponent kind the final
        rewards of the learner."""
        n = self.pc.num_envs
        final_rewards = {}  # (game slot, episode) -> every seat's final reward
        finished = {k: [] for k in KINDS}
        self.net.eval()
        # the first batch of a process shows its steps: numba compiles the env and opponent
        # kernels during its first step (once per machine; cached after)
        first = not getattr(self, "_collected", False)
        self._collected = True
        for _ in progress_bar(range(self.pc.steps_per_iteration), desc="collecting the first batch",
                              unit="step", disable=not first, leave=False):
            learner = self._learner_rows()
            actions = np.zeros(n, dtype=np.int64)
            rows = np.flatnonzero(learner)
            if len(rows):
                acts, logp = self._policy(self.net, self.obs[rows], self.mask[rows])
                actions[rows] = acts
            self._opponent_actions(np.flatnonzero(~learner), actions)
            obs, _, terminated, _, info = self.envs.step(actions)
            if len(rows):
                self.pending.add(self.obs[rows].copy(), self.mask[rows].copy(), acts, logp, rows,
                                 self.current[rows].copy(), self.episode[rows].copy(), info["points"][rows].copy())
            self.env_steps += n
            for i in np.flatnonzero(terminated):
                rewards = info["final_info"]["rewards_all"][i].copy()
                final_rewards[(i, self.episode[i])] = rewards
                if self.kind[i] != KINDS.index("self"):
                    finished[KINDS[self.kind[i]]].append(rewards[self.learner_seat[i]])
                self.episode[i] += 1
                self.games += 1
                self._assign(i)
            self.obs, self.mask = obs["observation"], obs["action_mask"]
            self.current = info["current_player"]
        data = self.pending.arrays()
        if not data:
            return {}, np.zeros(0, np.float32), finished
        ended = np.array([(g, e) in final_rewards for g, e in zip(data["game"], data["episode"])], dtype=bool)
        returns = self._returns({k: v[ended] for k, v in data.items()}, final_rewards)
        self.pending = Moves()
        if (~ended).any():
            self.pending.add(*(data[k][~ended] for k in Moves.__dataclass_fields__))
        return {k: v[ended] for k, v in data.items()}, returns, finished

    def _returns(self, moves: dict, final_rewards: dict) -> np.ndarray:
        """Monte Carlo return of each move (gamma = 1), in [-1, 1] like the value head:
        (1 - w) x the seat's final reward + w x tanh(minutes that seat scores from this
        move on / 100), with w = `points_reward` (0 = the final reward only). The second
        term is the seat's own minutes, not its lead (`engine.kernels.side_lead`), on the
        margin's scale (`engine.kernels.LEAD_SCALE`); in the team variant partners' returns
        differ by it."""
        returns = np.zeros(len(moves["game"]), dtype=np.float32)
        future = {}  # (game, episode, seat) -> minutes scored by later moves
        for t in range(len(returns) - 1, -1, -1):  # moves are stored in time order
            key = (moves["game"][t], moves["episode"][t], moves["seat"][t])
            future[key] = future.get(key, 0) + moves["points"][t]
            w = self.pc.points_reward
            returns[t] = (1 - w) * final_rewards[key[:2]][key[2]] + w * np.tanh(future[key] / LEAD_SCALE)
        return returns

    # --- learning ---------------------------------------------------------------------------
    def update(self, batch: dict, returns: np.ndarray) -> dict:
        self.net.train()
        obs = torch.as_tensor(batch["obs"], device=self.device)
        mask = torch.as_tensor(batch["mask"], device=self.device).bool()
        actions = torch.as_tensor(batch["action"], device=self.device)
        old_logp = torch.as_tensor(batch["logp"], device=self.device)
        ret = torch.as_tensor(returns, dtype=torch.float32, device=self.device)
        size = len(ret)
        stats = {"policy_loss": [], "value_loss": [], "entropy": [], "approx_kl": [], "clip_fraction": []}
        for _ in range(self.pc.epochs):
            order = torch.as_tensor(self.rng.permutation(size), device=self.device)
            for start in range(0, size, self.pc.minibatch_size):
                idx = order[start:start + self.pc.minibatch_size]
                logits, values = self.net(obs[idx], mask[idx])
                dist = torch.distributions.Categorical(logits=logits)
                logp = dist.log_prob(actions[idx])
                value = values[:, 0]  # slot 0: the mover's own final reward
                adv = ret[idx] - value.detach()
                if len(idx) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                ratio = torch.exp(logp - old_logp[idx])
                policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - self.pc.clip, 1 + self.pc.clip) * adv).mean()
                value_loss = 0.5 * ((value - ret[idx]) ** 2).mean()
                entropy = dist.entropy().mean()
                loss = policy_loss + self.pc.value_coef * value_loss - self.pc.entropy_coef * entropy
                self.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), self.pc.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    stats["policy_loss"].append(policy_loss.item())
                    stats["value_loss"].append(value_loss.item())
                    stats["entropy"].append(entropy.item())
                    stats["approx_kl"].append((old_logp[idx] - logp).mean().item())
                    stats["clip_fraction"].append(((ratio - 1).abs() > self.pc.clip).float().mean().item())
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def run_iteration(self) -> dict:
        """Collect one batch and learn from it; returns the metrics of this iteration."""
        batch, returns, finished = self.collect()
        metrics: dict = {"games": self.games, "env_steps": self.env_steps}
        if len(returns):
            metrics.update(self.update(batch, returns))
            metrics["batch_moves"] = len(returns)
        for kind, rewards in finished.items():
            if rewards and kind != "self":
                metrics[f"selfplay_reward_vs_{kind}"] = float(np.mean(rewards))
        self.iteration += 1
        if self.iteration % self.pc.snapshot_every == 0:
            self.pool.append(copy.deepcopy(self.net.state_dict()))
            self.pool = self.pool[-self.pc.pool_size:]
            self.past_index %= len(self.pool)
        return metrics

    def policy(self) -> NetPolicy:
        return NetPolicy(self.net, self.device)

    # --- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        env = self.envs.get_state()
        # checked now as the resume will check it (`env.set_state`): a state that could not
        # be resumed fails here, and the resume's check compiles nothing the run did not
        check_states(env["grid"], env["info"], env["num_players"], env["team"])
        return {
            "optimizer": self.optimizer.state_dict(), "iteration": self.iteration,
            "env_steps": self.env_steps, "games": self.games, "pool": self.pool,
            "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "env": env, "obs": self.obs, "mask": self.mask, "current": self.current,
            "kind": self.kind, "learner_seat": self.learner_seat, "past_index": self.past_index,
            "episode": self.episode, "pending": self.pending.arrays(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration, self.env_steps, self.games = state["iteration"], state["env_steps"], state["games"]
        self.pool = state["pool"]
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"].cpu())  # read_checkpoint maps tensors to the device
        self.envs.set_state(state["env"])
        self.obs, self.mask, self.current = state["obs"], state["mask"], state["current"]
        for key in ("kind", "learner_seat", "past_index", "episode"):
            setattr(self, key, state[key])
        self.pending = Moves()
        if state["pending"]:
            p = state["pending"]
            self.pending.add(*(p[k] for k in Moves.__dataclass_fields__))
