"""OpenSpiel's own search bots behind our `Agent` interface, on ``python_twentyfourseven``.

* ``openspiel-ismcts:simulations=1000,c=2.0,rollouts=1`` (or ``time=`` seconds per move):
  OpenSpiel's python ``ISMCTSBot`` with a random-rollout evaluator (the C++ bot cannot
  resample a python game), from a world drawn by `PlayerView.sample_world`;
* ``openspiel-mcts:simulations=1000,c=2.0,rollouts=1``: OpenSpiel's python ``MCTSBot`` on
  the true state (every hand, the bag's contents): a cheating baseline.

They run a few dozen simulations a second on this game: in evaluate.py give budgets above
~1,000 a larger ``--move-time-limit`` than its default. Each move starts an OpenSpiel
state at the position the agent sees (`env.openspiel.state_at`). Needs the ``openspiel``
extra; building the agent without it says what to install.
"""

from __future__ import annotations

import time

import numpy as np

from engine.extras import require

from .base import Agent, register
from .parameters import positive_int


def _openspiel():
    """(pyspiel, env.openspiel, ismcts, mcts), or a clear error without the extra."""
    pyspiel = require("pyspiel", "the OpenSpiel agents (openspiel-ismcts, openspiel-mcts)")
    from open_spiel.python.algorithms import ismcts, mcts
    from env import openspiel as adapter

    return pyspiel, adapter, ismcts, mcts


MIN_SIMULATIONS = 2  # OpenSpiel's ISMCTS needs two: the first only expands the root


class OpenSpielAgent(Agent):
    """Shared setup: one OpenSpiel game per table size, a fresh bot per move."""

    parameter_rules = {"rollouts": positive_int}

    def __init__(self, simulations: int = 1000, c: float = 2.0, rollouts: int = 1) -> None:
        super().__init__()
        self.pyspiel, self.adapter, self.ismcts, self.mcts = _openspiel()
        self.simulations, self.c, self.rollouts = simulations, c, rollouts
        self._games: dict[tuple[int, bool], object] = {}

    def _game(self, view):
        key = (view.num_players, view.team)
        if key not in self._games:
            self._games[key] = self.pyspiel.load_game(
                self.adapter.GAME_NAME, {"players": key[0], "team": key[1]})
        return self._games[key]

    def _random_state(self) -> np.random.RandomState:
        # OpenSpiel's bots take the legacy RandomState; it is seeded from our own stream
        return np.random.RandomState(int(self.rng.integers(2**31)))

    def _evaluator(self, random_state):
        return self.mcts.RandomRolloutEvaluator(n_rollouts=self.rollouts, random_state=random_state)

    def act(self, observation, view) -> int:
        legal = view.legal_actions() + view.show_actions()
        if len(legal) == 1:
            return legal[0]
        game = self._game(view)
        state = self.adapter.state_at(game, self._root_world(view))
        return int(self._search(game, state))


@register("openspiel-ismcts")
class OpenSpielISMCTSAgent(OpenSpielAgent):
    """OpenSpiel's python ISMCTS (see the module docstring); ``time`` replaces the
    simulation count by seconds per move."""

    def __init__(self, simulations: int = 1000, c: float = 2.0, rollouts: int = 1,
                 time: float | None = None) -> None:
        self.check_arguments({"simulations": simulations})
        super().__init__(simulations, c, rollouts)
        self.time = time

    @classmethod
    def check_arguments(cls, arguments) -> None:
        if arguments["simulations"] < MIN_SIMULATIONS:
            raise ValueError(f"simulations must be at least {MIN_SIMULATIONS} (the first only "
                             f"expands the root), got {arguments['simulations']}")

    def _root_world(self, view):
        return view.sample_world(self.rng)

    def _search(self, game, state):
        random_state = self._random_state()
        bot = TimedISMCTSBot(self.ismcts, game, self._evaluator(random_state), self.c,
                             self.simulations, random_state, self.time)
        return bot.step(state)


@register("openspiel-mcts")
class OpenSpielMCTSAgent(OpenSpielAgent):
    """OpenSpiel's python MCTS on the true state: a cheating baseline."""

    cheating = True

    def _root_world(self, view):
        return view.full_state(self)

    def _search(self, game, state):
        random_state = self._random_state()
        bot = self.mcts.MCTSBot(game, self.c, self.simulations, self._evaluator(random_state),
                                solve=False, random_state=random_state)
        return bot.step(state)


def TimedISMCTSBot(ismcts, game, evaluator, c, simulations, random_state, seconds):
    """OpenSpiel's python ISMCTSBot, searching `simulations` times or, with `seconds`,
    for that long (at least one simulation). Built by a function because the class is
    only importable with the extra."""

    class _Bot(ismcts.ISMCTSBot):
        def run_search(self, state):
            if seconds is None:
                return super().run_search(state)
            # the same search, its loop bounded by the clock: the bot's own steps in order
            self.reset()
            legal = state.legal_actions()
            if len(legal) == 1:
                return [(legal[0], 1.0)]
            root = self.create_new_node(state)
            deadline = time.perf_counter() + seconds
            runs = 0
            # the first simulation only expands the root: two make a policy
            while runs < MIN_SIMULATIONS or time.perf_counter() < deadline:
                self.run_simulation(self.sample_root_state(state))
                runs += 1
            return self.get_final_policy(state, self.filter_illegals(root, legal))

    return _Bot(game, evaluator, c, simulations, random_state=random_state,
                allow_inconsistent_action_sets=True)
