"""AlphaZero-style self-play training.

Each iteration plays `games_per_iteration` self-play games in lockstep. Every move is
chosen by `agents.lockstep.LockstepSearch` (the one search core with PUCT over worlds
sampled from the mover's information, network priors and leaf values: the search of
``ismcts:net=PATH,leaf=value``) with Dirichlet noise at the root; the
first `temperature_moves` moves of each seat are sampled from the visit counts, later
ones take the most visited action. Every position becomes a training example: the
mover's observation and mask, the visit distribution (policy target) and every seat's
final reward, rotated so slot 0 is the mover (value target; optionally blended with the
score margin). Examples go to a replay buffer; each iteration then takes
`train_steps_per_iteration` minibatch steps on cross-entropy + value MSE.

With ``net.evaluator_hidden`` > 0 the network also carries a fast evaluator
(`agents.nets.Evaluator`), fitted on its own (`fit_evaluator`: after the warm start's
fitting, and `evaluator_steps_per_iteration` steps after each iteration) to predict the
final search reward of every position in the buffer from the full state's features;
`ismcts:net=PATH` scores its cut rollouts with it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from agents import features, value_kernels
from agents.lockstep import LockstepSearch
from agents.neural import NetPolicy
from agents.nets import PolicyValueNet
from agents.search_kernels import MARGIN, simulation_rewards
from engine import access, rules
from engine.batch import batch_legal_mask, batch_reset, batch_step
from env.observation import OBS_SIZE, encode_batch

from .config import TrainConfig


class ReplayBuffer:
    """A ring buffer of training examples (observations and policy targets stored as float16).

    Per position: the mover's observation, legal mask, policy target, value target
    (rotated, slot 0 = mover), exposure features (`agents.features`), and for the fast
    evaluator the mover's full-state features (`agents.value_kernels`) with every slot's
    final search reward (`agents.search_kernels.simulation_rewards` of the final position)."""

    FIELDS = ("obs", "mask", "policy", "value", "exposure", "state_features", "search_value")

    def __init__(self, capacity: int, num_actions: int):
        self.obs = np.zeros((capacity, OBS_SIZE), dtype=np.float16)
        self.mask = np.zeros((capacity, num_actions), dtype=np.bool_)
        self.policy = np.zeros((capacity, num_actions), dtype=np.float16)
        self.value = np.zeros((capacity, 4), dtype=np.float32)
        self.exposure = np.zeros((capacity, features.NUM_FEATURES), dtype=np.float16)
        self.state_features = np.zeros((capacity, value_kernels.NUM_FEATURES), dtype=np.float16)
        self.search_value = np.zeros((capacity, 4), dtype=np.float32)
        self.size = 0
        self.next = 0

    def add(self, **rows) -> None:
        """Append rows of every field (arrays or lists of rows, as keyword arguments named
        as `FIELDS`); the oldest rows make way when full."""
        if set(rows) != set(self.FIELDS):
            raise ValueError(f"ReplayBuffer.add needs exactly the fields {self.FIELDS}, got {sorted(rows)}")
        rows = {k: np.asarray(v) for k, v in rows.items()}
        count = len(rows["obs"])
        capacity = len(self.obs)
        if count > capacity:  # only the newest `capacity` rows would survive
            rows = {k: v[-capacity:] for k, v in rows.items()}
            count = capacity
        idx = (self.next + np.arange(count)) % capacity
        for name, values in rows.items():
            getattr(self, name)[idx] = values
        self.next = int((self.next + count) % capacity)
        self.size = min(self.size + count, capacity)

    def sample(self, batch: int, rng: np.random.Generator):
        idx = rng.integers(0, self.size, size=batch)
        return (self.obs[idx].astype(np.float32), self.mask[idx], self.policy[idx].astype(np.float32),
                self.value[idx], self.exposure[idx].astype(np.float32))

    def sample_evaluator(self, batch: int, rng: np.random.Generator):
        """(state_features, search_value) of `batch` random positions."""
        idx = rng.integers(0, self.size, size=batch)
        return self.state_features[idx].astype(np.float32), self.search_value[idx]

    def state_dict(self) -> dict:
        n = self.size
        return {**{name: getattr(self, name)[:n].copy() for name in self.FIELDS}, "next": self.next}

    def load_state_dict(self, state: dict) -> None:
        n = len(state["obs"])
        for name in self.FIELDS:
            getattr(self, name)[:n] = state.get(name, 0.0)  # a field newer than the checkpoint: zeros
        self.size, self.next = n, state["next"]


class AlphaZeroTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.ac = cfg.alphazero
        self.device = device
        self.rng = np.random.default_rng(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.num_actions = rules.num_actions(cfg.team)
        cfg.net.num_actions = self.num_actions
        self.net = PolicyValueNet(cfg.net).to(device)
        # the fast evaluator learns on its own schedule (`fit_evaluator`), not in `train`
        tower = [p for name, p in self.net.named_parameters() if not name.startswith("evaluator.")]
        self.optimizer = torch.optim.AdamW(tower, lr=self.ac.learning_rate, weight_decay=self.ac.weight_decay)
        self.evaluator_optimizer = None
        if self.net.evaluator is not None:
            self.evaluator_optimizer = torch.optim.Adam(self.net.evaluator.parameters(),
                                                        lr=self.ac.evaluator_learning_rate)
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
        grid, info = access.new_arrays(b)
        batch_reset(grid, info, self.rng.integers(0, 2**62, size=b), n, int(self.cfg.team))
        search = LockstepSearch(self.policy(), b, self.ac.simulations, self.ac.c_puct)
        rng_state = self.rng.integers(0, 2**63, size=b).astype(np.uint64)
        examples = []  # (game, mover, obs, mask, policy target)
        moves_made = np.zeros((b, 4), dtype=np.int64)
        obs = np.zeros((b, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((b, self.num_actions), dtype=np.bool_)
        state_features = np.zeros((b, value_kernels.NUM_FEATURES), dtype=np.float32)
        self.net.eval()
        # the first self-play batch of a process shows its moves (numba compiles on first use)
        first = not getattr(self, "_played", False)
        self._played = True
        bar = tqdm(desc="first self-play batch", unit="move", disable=not first, leave=False)
        while True:
            active = ~access.games_over(info)
            if not active.any():
                break
            bar.update(1)
            visits = search.run(grid, info, active, rng_state, self.rng,
                                (self.ac.dirichlet_alpha, self.ac.dirichlet_fraction))
            movers = access.movers(info).copy()
            encode_batch(grid, info, movers, obs)
            batch_legal_mask(grid, info, masks)
            exposure = features.exposure(grid, info, np.flatnonzero(active), kind=self.net.exposure_kind)
            value_kernels.batch_mover_features(grid, info, state_features)
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
                examples.append((g, mover, obs[g].copy(), masks[g].copy(), target, exposure[g],
                                 state_features[g].copy()))
            points = np.zeros(b, dtype=np.int64)
            batch_step(grid, info, np.where(active, actions, rules.PASS_ACTION), points)
        bar.close()
        self._add_examples(examples, grid, info)
        self.games += b
        self.positions += len(examples)
        scores = access.scores_of(info, self.cfg.num_players)
        return {"selfplay_positions": len(examples), "selfplay_mean_minutes": float(scores.mean())}

    def _add_examples(self, examples: list, grid: np.ndarray, info: np.ndarray) -> None:
        """Add (game, mover, obs, mask, policy target, exposure, state features) examples
        of the finished games `info` to the replay buffer, with their value targets."""
        game = np.array([e[0] for e in examples], dtype=np.int64)
        mover = np.array([e[1] for e in examples], dtype=np.int64)
        self.buffer.add(obs=[e[2] for e in examples], mask=[e[3] for e in examples],
                        policy=[e[4] for e in examples], value=self._value_targets(info, game, mover),
                        exposure=[e[5] for e in examples], state_features=[e[6] for e in examples],
                        search_value=self._search_value_targets(info, game, mover))

    def _value_targets(self, final_info: np.ndarray, game: np.ndarray, mover: np.ndarray) -> np.ndarray:
        """Every seat's final reward, rotated so slot 0 is the mover, blended with the
        score margin (tanh of minutes ahead of the mean / 100) by `margin_weight`."""
        from engine.kernels import rewards as rewards_kernel

        n = self.cfg.num_players
        rewards = np.zeros((len(final_info), 4))
        for g in range(len(final_info)):
            rewards_kernel(final_info[g], rewards[g])
        scores = access.scores_of(final_info, n).astype(np.float64)
        margins = np.zeros((len(final_info), 4))
        margins[:, :n] = np.tanh((scores - scores.mean(axis=1, keepdims=True)) / 100.0)
        w = self.ac.margin_weight
        return self._rotated_to_movers((1 - w) * rewards + w * margins, game, mover)

    def _search_value_targets(self, final_info: np.ndarray, game: np.ndarray, mover: np.ndarray) -> np.ndarray:
        """The fast evaluator's targets: every seat's search reward of the final position
        (`agents.search_kernels.simulation_rewards` with ISMCTS's default margin), rotated so slot 0
        is the mover."""
        finals = np.zeros((len(final_info), 4))
        for g in range(len(final_info)):
            simulation_rewards(final_info[g], finals[g], MARGIN)
        return self._rotated_to_movers(finals, game, mover)

    def _rotated_to_movers(self, per_seat: np.ndarray, game: np.ndarray, mover: np.ndarray) -> np.ndarray:
        """Rows per_seat[game[i]] (absolute seats) rotated so slot 0 is mover[i]; float32 (N, 4)."""
        n = self.cfg.num_players
        seats = (mover[:, None] + np.arange(n)[None, :]) % n
        values = np.zeros((len(game), 4), dtype=np.float32)
        values[:, :n] = per_seat[game[:, None], seats]
        return values

    # --- learning ------------------------------------------------------------------------
    def train(self, steps: int | None = None, progress: str | None = None, schedule=None) -> dict:
        """Minibatch steps on the replay buffer (a tqdm bar titled `progress` if given)."""
        self.net.train()
        n = self.cfg.num_players
        stats = {"policy_loss": [], "value_loss": [], "entropy": []}
        steps = steps or self.ac.train_steps_per_iteration
        for _ in tqdm(range(steps), desc=progress, unit="step", disable=progress is None, leave=False):
            obs, mask, target, value, exposure = self.buffer.sample(self.ac.batch_size, self.rng)
            e = torch.as_tensor(exposure, device=self.device) if self.net.needs_exposure else None
            o = torch.as_tensor(obs, device=self.device)
            m = torch.as_tensor(mask, device=self.device)
            t = torch.as_tensor(target, device=self.device)
            v = torch.as_tensor(value, device=self.device)
            logits, values = self.net(o, m, e)
            logp = F.log_softmax(logits, dim=1)
            # the mean over the rows that have a policy target (a cheap search's move has none)
            targeted = (t.sum(dim=1) > 0).sum().clamp(min=1)
            policy_loss = -(t * logp).sum(dim=1).sum() / targeted
            value_loss = F.mse_loss(values[:, :n], v[:, :n])
            loss = policy_loss + value_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if schedule is not None:
                schedule.step()
            with torch.no_grad():
                p = logp.exp()
                stats["entropy"].append(float(-(p * logp.clamp(min=-30)).sum(dim=1).mean()))
            stats["policy_loss"].append(policy_loss.item())
            stats["value_loss"].append(value_loss.item())
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def fit_evaluator(self, steps: int, progress: str | None = None, anneal: bool = False,
                      examples: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
        """Minibatch steps of the fast evaluator (MSE to the search-reward targets), with
        `anneal` on a cosine schedule from evaluator_learning_rate to 0; {} when the
        network has none. It learns from the replay buffer, or from `examples`
        (state features, search-reward targets) when given."""
        if examples is None:
            sample, size = self.buffer.sample_evaluator, self.buffer.size
        else:
            features, targets = examples
            size = len(features)

            def sample(batch, rng):
                idx = rng.integers(0, size, size=batch)
                return features[idx].astype(np.float32), targets[idx]
        if self.net.evaluator is None or steps == 0 or size == 0:
            return {}
        evaluator = self.net.evaluator.train()
        lr = self.ac.evaluator_learning_rate
        n, team = self.cfg.num_players, self.cfg.team
        losses = []
        for step in tqdm(range(steps), desc=progress, unit="step", disable=progress is None, leave=False):
            for group in self.evaluator_optimizer.param_groups:
                group["lr"] = lr * 0.5 * (1 + np.cos(np.pi * step / steps)) if anneal else lr
            x, target = sample(self.ac.evaluator_batch_size, self.rng)
            values = evaluator(torch.as_tensor(x, device=self.device), n, team)
            loss = F.mse_loss(values[:, :n], torch.as_tensor(target[:, :n], device=self.device))
            self.evaluator_optimizer.zero_grad()
            loss.backward()
            self.evaluator_optimizer.step()
            losses.append(loss.item())
        for group in self.evaluator_optimizer.param_groups:
            group["lr"] = lr
        evaluator.eval()
        return {"evaluator_loss": float(np.mean(losses[-max(1, steps // 10):]))}  # the last tenth

    # --- optional warm start: imitate a teacher ----------------------------------------
    def imitation_warm_start(self) -> dict:
        """Fill the replay buffer with `pretrain_games` games of the teacher playing
        itself and fit the network to them for `pretrain_steps` steps, so self-play
        starts from a sensible policy (as AlphaGo started from supervised learning).

        Teacher ``greedy``: the greedy agent's move is the policy target (games played
        in one batch). Any search agent spec (``ismcts:iterations=1000``): its root visit
        distribution is the target, games played in worker processes (expert iteration's
        first step, see `training.teacher`). Value target: the final rewards."""
        teacher = self.ac.pretrain_teacher
        if teacher == "greedy":
            self._greedy_games(self.ac.pretrain_games)
        else:
            from .teacher import teacher_games

            seed = int(self.rng.integers(2**31))
            data = teacher_games(teacher, self.ac.pretrain_games, seed, self.cfg.num_players, self.cfg.team,
                                 workers=self.ac.pretrain_workers, exposure=self.net.exposure_kind)
            self.add_search_games(data, self.ac.pretrain_target_power)
            self.positions += len(data.obs)
        self.games += self.ac.pretrain_games
        # one cycle: warm up to pretrain_learning_rate, anneal to ~0, then self-play
        # continues at learning_rate
        schedule = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, self.ac.pretrain_learning_rate,
                                                       total_steps=self.ac.pretrain_steps, pct_start=0.05)
        stats = self.train(self.ac.pretrain_steps, progress="fitting the teacher's moves", schedule=schedule)
        for group in self.optimizer.param_groups:
            group["lr"], group["betas"] = self.ac.learning_rate, (0.9, 0.999)
        stats.update(self.fit_evaluator(self.ac.pretrain_evaluator_steps, progress="fitting the evaluator",
                                        anneal=True))
        return {f"pretrain_{k}": v for k, v in stats.items()}

    def add_search_games(self, data, target_power: float) -> None:
        """Add a search's games (`training.teacher.TeacherGames`) to the replay buffer: the
        policy target is the root visit distribution ** `target_power`, normalised (the
        visits of a progressively widened search spread over the moves expanded first;
        a power > 1 sharpens them toward the moves the search prefers). A row of zeros
        (a cheap search's move) stays zeros: no policy target, its value still counts."""
        width = self.num_actions
        mask = np.zeros((len(data.mask), width), dtype=np.bool_)
        policy = np.zeros((len(data.policy), width), dtype=np.float32)
        mask[:, :data.mask.shape[1]] = data.mask[:, :width]
        sharp = data.policy.astype(np.float64) ** target_power
        total = sharp.sum(axis=1, keepdims=True)
        policy[:, :data.policy.shape[1]] = (sharp / np.where(total > 0, total, 1.0))[:, :width]
        self.buffer.add(obs=data.obs, mask=mask, policy=policy,
                        value=self._value_targets(data.final_info, data.game, data.mover),
                        exposure=data.exposure, state_features=data.state_features,
                        search_value=self._search_value_targets(data.final_info, data.game, data.mover))

    def _greedy_games(self, games: int) -> None:
        """Greedy-vs-greedy games in one batch; greedy's move is the policy target."""
        from .opponents import batch_greedy_actions

        n = self.cfg.num_players
        grid, info = access.new_arrays(games)
        batch_reset(grid, info, self.rng.integers(0, 2**62, size=games), n, int(self.cfg.team))
        obs = np.zeros((games, OBS_SIZE), dtype=np.float32)
        masks = np.zeros((games, self.num_actions), dtype=np.bool_)
        state_features = np.zeros((games, value_kernels.NUM_FEATURES), dtype=np.float32)
        actions = np.zeros(games, dtype=np.int64)
        points = np.zeros(games, dtype=np.int64)
        examples = []
        while not access.games_over(info).all():
            active = ~access.games_over(info)
            movers = access.movers(info).copy()
            encode_batch(grid, info, movers, obs)
            batch_legal_mask(grid, info, masks)
            batch_greedy_actions(grid, info, active, actions)
            exposure = features.exposure(grid, info, np.flatnonzero(active), kind=self.net.exposure_kind)
            value_kernels.batch_mover_features(grid, info, state_features)
            for g in np.flatnonzero(active):
                target = np.zeros(self.num_actions, dtype=np.float32)
                target[actions[g]] = 1.0
                examples.append((g, movers[g], obs[g].copy(), masks[g].copy(), target, exposure[g],
                                 state_features[g].copy()))
            batch_step(grid, info, np.where(active, actions, rules.PASS_ACTION), points)
        self._add_examples(examples, grid, info)
        self.positions += len(examples)

    def run_iteration(self) -> dict:
        if self.iteration == 0 and self.ac.pretrain_games > 0:
            warm = self.imitation_warm_start()
        else:
            warm = {}
        metrics = self.self_play()
        metrics.update(warm)
        metrics.update(self.train())
        metrics.update(self.fit_evaluator(self.ac.evaluator_steps_per_iteration))
        self.iteration += 1
        metrics.update({"games": self.games, "positions": self.positions, "replay_size": self.buffer.size})
        return metrics

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(),
                "evaluator_optimizer": None if self.evaluator_optimizer is None else
                self.evaluator_optimizer.state_dict(),
                "iteration": self.iteration, "games": self.games,
                "positions": self.positions, "rng": self.rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(), "buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if (self.evaluator_optimizer is None) != (state.get("evaluator_optimizer") is None):
            raise ValueError("the checkpoint's fast evaluator does not match net.evaluator_hidden")
        if self.evaluator_optimizer is not None:
            self.evaluator_optimizer.load_state_dict(state["evaluator_optimizer"])
        self.iteration, self.games, self.positions = state["iteration"], state["games"], state["positions"]
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"].cpu())  # read_checkpoint maps tensors to the device
        self.buffer.load_state_dict(state["buffer"])
