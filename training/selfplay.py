"""Generational self-play: expert iteration with the fast search as the improvement operator.

Generation 0 (the warm start) imitates a plain search: `warm_start_games` games of
`warm_start_teacher` (numba ISMCTS, no network) playing every seat. The network learns
its root visit distributions (policy), the games' results (value) and, in its fast
evaluator, the final search reward of every position (`agents.networks.evaluator`).

Generation g >= 1 plays `games_per_generation` games of *generation g-1's own search*:
network ``generations/gen_<g-1>.pt`` with the `search` settings (an
`agents.search.mcts.GuidedSearch`, what ``ismcts:net=PATH,<search>`` builds), i.e. ISMCTS whose root is ordered by
network g-1's policy and whose cut rollouts are scored by evaluator g-1 (Anthony, Tian &
Barber 2017: the apprentice guides the expert, the expert teaches the apprentice). The
network then continues training on those games (policy and value: the last `window`
generations; the fast evaluator: the last `evaluator_window`, by default every
generation, since a position's final result stays a fair target as play improves and the
evaluator is what makes the search strong), and searches generation g+1's games. Every
training example after the warm start comes from the generations' own play.

The policy target of a self-play move is the root visit distribution ** `target_power`.
A league (`league_fraction` > 0;
Lanctot et al. 2017 on self-overfitting): that share of the games seats an earlier
generation's search (drawn uniformly from generations 0 to g-2) in one seat, or in one
team; its moves too train only the values.

After each generation the network is saved as ``runs/NAME/generations/gen_<g>.pt`` and
rated on the Elo ladder (`evaluation.ladder`): duplicate-deal matches against the
previous generations and fixed anchors, one Bradley-Terry scale, ``ladder.json`` and
``ladder.png``. Games are played in worker processes, chunk by chunk, each finished chunk
kept under ``runs/NAME/games/gen_<g>/``, so a killed run resumes mid-generation without
playing a finished game again.

The network and how it learns (targets, minibatch steps, optimizers) are
`training.learner.Learner`'s; this module decides which games it learns from. Every
setting is in the config's ``selfplay`` section.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from agents.networks import save_checkpoint
from agents.search.mcts import GuidedSearch
from agents.settings import SearchSettings

from .config import TrainConfig, config_to_dict
from .learner import Learner
from .teacher import TeacherGames, teacher_games


def generation_file(run_path: Path, generation: int) -> Path:
    return run_path / "generations" / f"gen_{generation:03d}.pt"


class SelfPlayTrainer:
    """One `run_iteration` is one generation (see the module doc)."""

    def __init__(self, cfg: TrainConfig, device: torch.device, run_path: str | Path):
        self.cfg = cfg
        self.sc = cfg.selfplay
        self.learner = Learner(cfg, device)
        self.iteration = 0
        self.games = 0  # games learnt from so far, all generations
        self.positions = 0
        self.run_path = Path(run_path)
        self.wall_seconds = 0.0  # training time so far, all generations (the ladder's x axis)
        self._data: list[tuple[int, TeacherGames]] = []  # the last `window` generations' (generation, games)
        # the last `evaluator_window` generations' (state features, search-reward targets)
        self._evaluator_data: list[tuple[np.ndarray, np.ndarray]] = []
        self._ladder = None  # the run's Elo ladder, opened at the first rating

    @property
    def net(self):
        return self.learner.net

    def policy(self):
        """The network's raw policy (what train.py's evaluation plays)."""
        return self.learner.policy()

    # --- one generation ----------------------------------------------------------------
    def run_iteration(self) -> dict:
        start = time.perf_counter()
        g = self.iteration
        games = self._games(g)
        self.games += len(games.final_info)
        self.positions += len(games.obs)
        if g == 0:
            metrics = self._learn(games, self.sc.warm_start_steps, self.sc.warm_start_learning_rate,
                                  self.sc.warm_start_evaluator_steps)
        else:
            metrics = self._learn(games, self.sc.train_steps, self.sc.learning_rate, self.sc.evaluator_steps)
        path = generation_file(self.run_path, g)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(path, self.net, generation=g, config=config_to_dict(self.cfg))
        self.iteration += 1
        metrics.update(self._rate(g, self.wall_seconds + time.perf_counter() - start))
        self.wall_seconds += time.perf_counter() - start
        metrics.update({"generation": g, "games": self.games, "positions": self.positions,
                        "wall_seconds": self.wall_seconds})
        return metrics

    def search(self, generation: int, settings: SearchSettings) -> GuidedSearch:
        """Generation `generation`'s network searched with `settings`."""
        return GuidedSearch(str(generation_file(self.run_path, generation)), settings)

    def _games(self, generation: int, progress: bool = True) -> TeacherGames:
        """A generation's games: the warm start's teacher for generation 0, else the previous
        generation's search; chunks already stored are read back, the others played."""
        operator = {}  # the warm start: no league
        if generation == 0:
            teacher, count = self.sc.teacher, self.sc.warm_start_games  # typed at the config's edge
        else:
            teacher, count = self.search(generation - 1, self.sc.search), self.sc.games_per_generation
            if self.sc.league_fraction > 0 and generation >= 2:  # the generations before the teacher's
                league = tuple(self.search(g, self.sc.search) for g in range(generation - 1))
                operator.update(league=league, league_fraction=self.sc.league_fraction)
        return teacher_games(teacher, count, self.cfg.seed * 10_007 + generation, self.cfg.num_players, self.cfg.team,
                             workers=self.sc.workers, progress=progress,
                             store=self.run_path / "games" / f"gen_{generation:03d}",
                             executor=self.sc.executor, ray_address=self.sc.ray_address,
                             exposure=self.net.exposure_kind, **operator)

    def _learn(self, games: TeacherGames, steps: int, peak_lr: float, evaluator_steps: int) -> dict:
        """Refill the buffer with the last `window` generations' games, then one cycle of
        policy/value steps (warm-up to `peak_lr`, anneal) and the evaluator's steps on the
        last `evaluator_window` generations' positions."""
        self._keep(self.iteration, games)
        size = self.learner.fill([(part, self.sc.target_power) for _, part in self._data])
        stats = self.learner.fit_policy_value(steps, peak_lr, progress=f"generation {self.iteration}: learning")
        examples = tuple(np.concatenate(part) for part in zip(*self._evaluator_data))
        stats.update(self.learner.fit_evaluator(evaluator_steps, examples, anneal=True,
                                                progress=f"generation {self.iteration}: evaluator"))
        stats["training_positions"] = size
        stats["evaluator_positions"] = len(examples[0])
        return stats

    def _keep(self, generation: int, games: TeacherGames) -> None:
        """Add a generation's games to the policy window (whole) and to the evaluator's
        (only its state features and targets, so keeping every generation stays small)."""
        self._data = (self._data + [(generation, games)])[-self.sc.window:]
        targets = self.learner.search_value_targets(games.final_info, games.game, games.mover)
        self._evaluator_data.append((games.state_features.astype(np.float16), targets))
        if self.sc.evaluator_window:
            self._evaluator_data = self._evaluator_data[-self.sc.evaluator_window:]

    def _rate(self, generation: int, wall_seconds: float) -> dict:
        """Add the new generation (ready after `wall_seconds` of training) to the Elo
        ladder; its Elo and interval as metrics."""
        if self.sc.ladder_games == 0:
            return {}
        from evaluation.ladder import Ladder

        if self._ladder is None:  # one ladder for the run: it keeps the generations it was given typed
            self._ladder = Ladder(self.run_path, anchors=list(self.sc.anchors), players=self.cfg.num_players,
                                  team=self.cfg.team, games_per_pair=self.sc.ladder_games, seed=self.cfg.seed,
                                  workers=self.sc.workers, previous=self.sc.ladder_previous, progress=True,
                                  executor=self.sc.executor, ray_address=self.sc.ray_address)
        # the ladder's file records the typed search as the spec a user would type (its label)
        table = self._ladder.add_generation(generation, self.search(generation, self.sc.play), wall_seconds)
        row = next(r for r in table["generations"] if r["generation"] == generation)
        metrics = {"ladder_elo": row["elo"], "ladder_elo_lo": row["elo_ci95"][0], "ladder_elo_hi": row["elo_ci95"][1]}
        if self.sc.ladder_exploit_games:
            from evaluation.exploit import exploit_generations

            result = exploit_generations(self.run_path, [generation], self.sc.ladder_exploit_games,
                                         workers=self.sc.workers, progress=False)
            mine = next(r for r in result["generations"] if r["generation"] == generation)
            metrics["exploitability"] = mine["mean_reward"]
        return metrics

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The learner's state and the run's counters; no games: the ones the learner
        holds are the stored chunks of the last generations, read back on resume."""
        return {**self.learner.state_dict(), "iteration": self.iteration, "games": self.games,
                "positions": self.positions, "wall_seconds": self.wall_seconds}

    def load_state_dict(self, state: dict) -> None:
        self.learner.load_state_dict(state)
        self.iteration, self.games, self.positions = state["iteration"], state["games"], state["positions"]
        self.wall_seconds = float(state.get("wall_seconds", 0.0))
        self._data, self._evaluator_data = [], []
        window = self.iteration if self.sc.evaluator_window == 0 else max(self.sc.window, self.sc.evaluator_window)
        for g in range(max(0, self.iteration - window), self.iteration):
            self._keep(g, self._games(g, progress=False))
