"""The learner of expert iteration: the network and how it learns from a search's games.

`Learner` holds the network (policy, value and the optional fast evaluator), its two
optimizers, a replay buffer of search-labelled positions and the random generator that
draws minibatches. Each position gives the network three targets:

* policy: the search's root visit distribution ** target_power, normalised;
* value: every seat's final reward, rotated so slot 0 is the mover, blended with its
  final margin (`engine.kernels.margins`, the search's; partners share it) by `margin_weight`;
* fast evaluator (``net.evaluator_hidden`` > 0, `agents.networks.Evaluator`): every seat's
  final search reward (`agents.search.core.simulation_rewards`) from the mover's
  full-state features; `ismcts:net=PATH` scores its cut rollouts with it.

With ``symmetries`` on, each minibatch row is shown turned by a random quarter turn of the
board (`engine.symmetry`: the rules cannot tell the turns apart), its policy target turned
with it and its value target unchanged: four times the positions for the same games.

Policy and value learn in one-cycle minibatch runs (`fit_policy_value`), the evaluator
on its own optimizer and schedule (`fit_evaluator`). The settings are the ``selfplay``
section's (`training.config.SelfPlayConfig`); `training.selfplay` decides which games it
learns from.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from agents.networks import NetPolicy, PolicyValueNet, features
from agents.networks.evaluator import NUM_FEATURES as NUM_STATE_FEATURES
from agents.search.core import simulation_rewards
from agents.settings import MARGIN
from engine import rules, symmetry
from engine.kernels import margins as margins_kernel
from engine.kernels import rewards as rewards_kernel
from env.observation import OBS_SIZE, turn_observations
from evaluation.progress import progress_bar

from .config import TrainConfig


def slot_seats(mover: np.ndarray, num_players: int) -> np.ndarray:
    """(N, n): the seat in each value slot of each position (slot k is the seat k places
    after the mover): the rotation of every value target and of the fast evaluator's output."""
    return (mover[:, None] + np.arange(num_players)[None, :]) % num_players


def rotated_to_movers(per_seat: np.ndarray, game: np.ndarray, mover: np.ndarray, num_players: int) -> np.ndarray:
    """Rows per_seat[game[i]] (absolute seats) rotated so slot 0 is mover[i]; float32 (N, 4)."""
    n = num_players
    values = np.zeros((len(game), 4), dtype=np.float32)
    values[:, :n] = per_seat[game[:, None], slot_seats(mover, n)]
    return values


class ReplayBuffer:
    """Training examples (observations and policy targets stored as float16).

    Per position: the mover's observation, legal mask, policy target, value target
    (rotated, slot 0 = mover), exposure features (`agents.networks.features`), and for the fast
    evaluator the mover's full-state features (`agents.networks.evaluator`) with every slot's
    final search reward (`agents.search.core.simulation_rewards` of the final position)."""

    FIELDS = ("obs", "mask", "policy", "value", "exposure", "state_features", "search_value")

    def __init__(self, capacity: int, num_actions: int):
        self.obs = np.zeros((capacity, OBS_SIZE), dtype=np.float16)
        self.mask = np.zeros((capacity, num_actions), dtype=np.bool_)
        self.policy = np.zeros((capacity, num_actions), dtype=np.float16)
        self.value = np.zeros((capacity, 4), dtype=np.float32)
        self.exposure = np.zeros((capacity, features.NUM_FEATURES), dtype=np.float16)
        self.state_features = np.zeros((capacity, NUM_STATE_FEATURES), dtype=np.float16)
        self.search_value = np.zeros((capacity, 4), dtype=np.float32)
        self.size = 0

    def add(self, **rows) -> None:
        """Append rows of every field (arrays or lists of rows, as keyword arguments named
        as `FIELDS`)."""
        if set(rows) != set(self.FIELDS):
            raise ValueError(f"ReplayBuffer.add needs exactly the fields {self.FIELDS}, got {sorted(rows)}")
        rows = {k: np.asarray(v) for k, v in rows.items()}
        count = len(rows["obs"])
        if self.size + count > len(self.obs):
            raise ValueError(f"ReplayBuffer.add: {count} rows do not fit ({self.size} of {len(self.obs)} used)")
        for name, values in rows.items():
            getattr(self, name)[self.size:self.size + count] = values
        self.size += count

    def sample(self, batch: int, rng: np.random.Generator):
        idx = rng.integers(0, self.size, size=batch)
        return (self.obs[idx].astype(np.float32), self.mask[idx], self.policy[idx].astype(np.float32),
                self.value[idx], self.exposure[idx].astype(np.float32))


class Learner:
    """The network, its optimizers and its replay buffer (see the module doc)."""

    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.settings = cfg.selfplay
        self.num_players, self.team = cfg.num_players, cfg.team
        self.device = device
        self.rng = np.random.default_rng(cfg.seed)  # draws the minibatches
        torch.manual_seed(cfg.seed)
        self.num_actions = rules.num_actions(cfg.team)
        cfg.net.num_actions = self.num_actions
        self.net = PolicyValueNet(cfg.net).to(device)
        # the fast evaluator learns on its own schedule (`fit_evaluator`), not in `fit_policy_value`
        tower = [p for name, p in self.net.named_parameters() if not name.startswith("evaluator.")]
        self.optimizer = torch.optim.AdamW(tower, lr=self.settings.learning_rate,
                                           weight_decay=self.settings.weight_decay)
        self.evaluator_optimizer = None
        if self.net.evaluator is not None:
            self.evaluator_optimizer = torch.optim.Adam(self.net.evaluator.parameters(),
                                                        lr=self.settings.evaluator_learning_rate)
        self.buffer = ReplayBuffer(0, self.num_actions)

    def policy(self) -> NetPolicy:
        return NetPolicy(self.net, self.device)

    # --- examples ------------------------------------------------------------------------
    def fill(self, games: list[tuple[object, float]]) -> int:
        """Replace the replay buffer with these search games (`training.teacher.TeacherGames`,
        each with its policy target's power; see `add_search_games`); its size."""
        self.buffer = ReplayBuffer(max(sum(len(data.obs) for data, _ in games), 1), self.num_actions)
        for data, target_power in games:
            self.add_search_games(data, target_power)
        return self.buffer.size

    def add_search_games(self, data, target_power: float) -> None:
        """Add a search's games (`training.teacher.TeacherGames`) to the replay buffer: the
        policy target is the root visit distribution ** `target_power`, normalised (the
        visits of a progressively widened search spread over the moves expanded first;
        a power > 1 sharpens them toward the moves the search prefers). A row of zeros
        (a league opponent's move) stays zeros: no policy target, its value still counts."""
        width = self.num_actions
        mask = np.zeros((len(data.mask), width), dtype=np.bool_)
        policy = np.zeros((len(data.policy), width), dtype=np.float32)
        mask[:, :data.mask.shape[1]] = data.mask[:, :width]
        sharp = data.policy.astype(np.float64) ** target_power
        total = sharp.sum(axis=1, keepdims=True)
        policy[:, :data.policy.shape[1]] = (sharp / np.where(total > 0, total, 1.0))[:, :width]
        self.buffer.add(obs=data.obs, mask=mask, policy=policy,
                        value=self.value_targets(data.final_info, data.game, data.mover),
                        exposure=data.exposure, state_features=data.state_features,
                        search_value=self.search_value_targets(data.final_info, data.game, data.mover))

    def value_targets(self, final_info: np.ndarray, game: np.ndarray, mover: np.ndarray) -> np.ndarray:
        """Every seat's final reward blended with its final margin by `margin_weight`,
        rotated so slot 0 is the mover. The margin is the search's (`engine.kernels.margins`,
        the term `agents.search.core.simulation_rewards` adds): tanh(lead / 100), the lead
        being the seat's minutes minus the mean of the *other* seats' (team variant: its
        team's minus the other team's, so partners get the same target and the teams
        opposite ones). Until issue 71 it was the seat's minutes minus the mean of *all*
        seats' (partners apart): (n - 1) / n of this lead, so 2 players' targets were
        tanh(difference / 200)."""
        rewards = np.zeros((len(final_info), 4))
        margins = np.zeros((len(final_info), 4))
        for g in range(len(final_info)):
            rewards_kernel(final_info[g], rewards[g])
            margins_kernel(final_info[g], margins[g])
        w = self.settings.margin_weight
        return rotated_to_movers((1 - w) * rewards + w * margins, game, mover, self.num_players)

    def search_value_targets(self, final_info: np.ndarray, game: np.ndarray, mover: np.ndarray) -> np.ndarray:
        """The fast evaluator's targets: every seat's search reward of the final position
        (`agents.search.core.simulation_rewards` with ISMCTS's default margin), rotated so slot 0
        is the mover."""
        finals = np.zeros((len(final_info), 4))
        for g in range(len(final_info)):
            simulation_rewards(final_info[g], finals[g], MARGIN)
        return rotated_to_movers(finals, game, mover, self.num_players)


    # --- learning ------------------------------------------------------------------------
    def fit_policy_value(self, steps: int, peak_lr: float, progress: str | None = None) -> dict:
        """`steps` minibatch steps of policy cross-entropy + value MSE on the replay buffer,
        on one learning-rate cycle (warm-up to `peak_lr`, anneal toward 0); a tqdm bar
        titled `progress` if given."""
        for group in self.optimizer.param_groups:
            group["betas"] = (0.9, 0.999)
        # a tenth of the steps warm up; OneCycleLR divides by (warm-up steps - 1), so a warm-up
        # of exactly one step (10 steps in all) takes a little more
        warm_up = 0.1 if abs(0.1 * steps - 1.0) > 1e-9 else 0.15
        schedule = torch.optim.lr_scheduler.OneCycleLR(self.optimizer, peak_lr, total_steps=steps, pct_start=warm_up)
        self.net.train()
        n = self.num_players
        stats = {"policy_loss": [], "value_loss": [], "entropy": []}
        for _ in progress_bar(range(steps), desc=progress, unit="step", disable=progress is None, leave=False):
            obs, mask, target, value, exposure = self.buffer.sample(self.settings.batch_size, self.rng)
            if self.settings.symmetries:
                obs, mask, target, exposure = self._turned(obs, mask, target, exposure)
            e = torch.as_tensor(exposure, device=self.device) if self.net.needs_exposure else None
            o = torch.as_tensor(obs, device=self.device)
            m = torch.as_tensor(mask, device=self.device)
            t = torch.as_tensor(target, device=self.device)
            v = torch.as_tensor(value, device=self.device)
            logits, values = self.net(o, m, e)
            logp = F.log_softmax(logits, dim=1)
            # the mean over the rows that have a policy target (a league opponent's move has none)
            targeted = (t.sum(dim=1) > 0).sum().clamp(min=1)
            policy_loss = -(t * logp).sum(dim=1).sum() / targeted
            value_loss = F.mse_loss(values[:, :n], v[:, :n])
            loss = policy_loss + value_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            schedule.step()
            with torch.no_grad():
                p = logp.exp()
                stats["entropy"].append(float(-(p * logp.clamp(min=-30)).sum(dim=1).mean()))
            stats["policy_loss"].append(policy_loss.item())
            stats["value_loss"].append(value_loss.item())
        for group in self.optimizer.param_groups:  # OneCycleLR leaves its own betas behind
            group["lr"], group["betas"] = peak_lr, (0.9, 0.999)
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def _turned(self, obs, mask, target, exposure):
        """The minibatch with each position turned by a random quarter turn of the board
        (`engine.symmetry`): the same position for the rules, so the same value target."""
        turns = self.rng.integers(0, symmetry.NUM_TURNS, size=len(obs))
        return (turn_observations(obs, turns), symmetry.turn_action_rows(mask, turns),
                symmetry.turn_action_rows(target, turns), symmetry.turn_action_rows(exposure, turns))

    def fit_evaluator(self, steps: int, examples: tuple[np.ndarray, np.ndarray], progress: str | None = None,
                      anneal: bool = False) -> dict:
        """Minibatch steps of the fast evaluator (MSE to the search-reward targets) on
        `examples` (state features, search-reward targets), with `anneal` on a cosine
        schedule from evaluator_learning_rate to 0; {} when the network has none."""
        inputs, targets = examples
        size = len(inputs)

        def sample(batch, rng):
            idx = rng.integers(0, size, size=batch)
            return inputs[idx].astype(np.float32), targets[idx]
        if self.net.evaluator is None or steps == 0 or size == 0:
            return {}
        evaluator = self.net.evaluator.train()
        lr = self.settings.evaluator_learning_rate
        n, team = self.num_players, self.team
        losses = []
        for step in progress_bar(range(steps), desc=progress, unit="step", disable=progress is None, leave=False):
            for group in self.evaluator_optimizer.param_groups:
                group["lr"] = lr * 0.5 * (1 + np.cos(np.pi * step / steps)) if anneal else lr
            x, target = sample(self.settings.evaluator_batch_size, self.rng)
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

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The optimizers' and random generators' state (the network's weights are saved
        beside it; the buffer is refilled from stored games)."""
        return {"optimizer": self.optimizer.state_dict(),
                "evaluator_optimizer": None if self.evaluator_optimizer is None else
                self.evaluator_optimizer.state_dict(),
                "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if (self.evaluator_optimizer is None) != (state.get("evaluator_optimizer") is None):
            raise ValueError("the checkpoint's fast evaluator does not match net.evaluator_hidden")
        if self.evaluator_optimizer is not None:
            self.evaluator_optimizer.load_state_dict(state["evaluator_optimizer"])
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"].cpu())  # read_checkpoint maps tensors to the device
