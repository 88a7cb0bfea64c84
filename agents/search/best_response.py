"""``br``: an approximate best response to a fixed agent, by ISMCTS-BR.

The best response (BR) plays one seat (or, in the team variant, one team) against a fixed
*target* agent in every other seat and knows the target's policy; its score is a lower
bound on the target's exploitability (Timbers et al., "Approximate Exploitability", IJCAI
2022; `python evaluate.py exploit`). docs/exploitability.md describes the search, which
targets are modelled and how, and the parameters; the kernels are in `br_kernels`.

This module builds the target's model from what the target declares about itself
(`Agent.policy_model`: exactly for ``random``, ``greedy``, ``policy`` and a network's raw
policy; a search target by a network's raw policy; an agent that declares nothing is not
modelled: plain ISMCTS), keeps the belief about the target's hands up to
date as the game loop reports the moves (`observe_action`), and searches with the
parameters of ``ismcts`` plus ``target``, ``particles`` and ``target_rollout``.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from engine import kernel_cache, rules

from agents.base import Agent, check_spec, is_typed, register
from agents.parameters import choice, non_negative_int
from agents.settings import SearchSettings

from . import br_kernels as bk
from . import core as sk
from . import tree
from .mcts import MCTSAgent, show_search_parameters

DEFAULT_PARTICLES = 512
TARGET_ROLLOUTS = ("fast", "model")  # the target's rollout moves: the greedy rollout policy's, or its model's


def target_spec(name: str, value):
    """The checked `target` parameter: a typed agent (`agents.AgentRecipe`,
    `agents.search.mcts.GuidedSearch`), or a complete agent spec, parsed here once (the
    spec's edge, `check_spec`)."""
    if is_typed(value):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be an agent spec, e.g. target=greedy or target=[ismcts:iterations=200], "
                         f"got {value!r}")
    try:
        return check_spec(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from exc


MODEL_KINDS = {"greedy": bk.MODEL_GREEDY, "random": bk.MODEL_RANDOM, "policy": bk.MODEL_POLICY,
               "network": bk.MODEL_NETWORK}


def target_model(target: Agent, seats: int, num_players: int, team: bool,
                 fast_rollout: bool = True) -> bk.TargetModel:
    """The numba model of a built target agent for this game (`br_kernels.MODEL_*`), from
    what the target declares (`Agent.policy_model`): its seats (bitmask) and its policy, or
    MODEL_NONE when it declares none; `fast_rollout`: the target's rollout moves are the
    greedy rollout policy's."""
    declared = target.policy_model(num_players, team)
    if declared is None:
        return bk.new_model(bk.MODEL_NONE, seats)
    if declared.kind not in MODEL_KINDS:
        raise ValueError(f"{target.name} declares a policy model of kind {declared.kind!r}; the best response "
                         f"models {', '.join(MODEL_KINDS)}")
    kind = MODEL_KINDS[declared.kind]
    if kind != bk.MODEL_NETWORK:
        return bk.new_model(kind, seats, declared.epsilon_threshold, declared.safe, fast_rollout=fast_rollout)
    from agents.networks.features import FOLLOW_UP

    net = declared.net
    exposure = net.exposure_kind if net.needs_exposure else None
    return bk.new_model(bk.MODEL_NETWORK, seats, net=net.packed_placement(), exposure=exposure,
                        temperature=declared.temperature, reach_temperature=declared.reach_temperature,
                        follow_up=FOLLOW_UP if exposure == "outlook" else 0.0, fast_rollout=fast_rollout)


@register("br")
class BestResponseAgent(MCTSAgent):
    """ISMCTS-BR against a fixed target (see the module doc)."""

    observes_actions = True  # the game loop calls observe_action for every move
    parameter_rules = {"target": target_spec, "target_rollout": partial(choice, allowed=TARGET_ROLLOUTS)}

    def policy_model(self, num_players: int, team: bool) -> None:
        return None  # a best response is not modelled (its moves answer another agent's)

    def __init__(self, target: str, particles: int = DEFAULT_PARTICLES, target_rollout: str = TARGET_ROLLOUTS[0],
                 settings: SearchSettings | None = None, **parameters) -> None:
        super().__init__(settings, **parameters)
        self.target_rollout = choice("target_rollout", target_rollout, TARGET_ROLLOUTS)
        recipe = target_spec("target", target)
        self.target = str(recipe)  # its label
        self.particles = non_negative_int("particles", particles)
        self._target = recipe.build()
        self._models: dict[tuple[int, int, bool], bk.TargetModel] = {}
        self._use_model(0, 2, False)
        self._scratch = np.zeros(128, dtype=np.int64)
        self._belief_rng = np.uint64(0)
        self.belief_resets = 0  # the belief restarted from plain worlds (all guesses died)
        self._seat = 0
        self._started = False  # the belief was built this game
        self._informed = False  # observe_action was called since the last act
        self._acted = False
        self._own_hand = None  # this seat's hand before its own last move, and that move
        self._own_action = None

    # --- the game ---------------------------------------------------------------------------
    def _use_model(self, seat: int, num_players: int, team: bool) -> None:
        """The target's model for this seat and game (built once per seat and game kind)."""
        key = (seat, num_players, team)
        br_seats = {seat, rules.partner(seat)} if team else {seat}
        if key not in self._models:
            seats = sum(1 << s for s in range(num_players) if s not in br_seats)
            self._models[key] = target_model(self._target, seats, num_players, team, self.target_rollout == "fast")
        self._model = self._models[key]
        kind = int(self._model.config[bk.CONFIG_KIND])
        self._network_target = kind == bk.MODEL_NETWORK  # its searches and belief compile the network
        # reach weighting needs the target's probabilities: known for random, greedy, networks
        self._weighted = kind in (bk.MODEL_RANDOM, bk.MODEL_GREEDY, bk.MODEL_NETWORK) and self.particles > 0
        size = self.particles if kind != bk.MODEL_NONE else 0
        if getattr(self, "_hands", None) is None or self._hands.shape[0] != size:
            self._hands = np.zeros((size, 4, 11), dtype=np.int64)
            self._weights = np.ones(size, dtype=np.float64)
            self._weights_before = np.empty(size, dtype=np.float64)  # the belief update's scratch

    def reset(self, seat: int, num_players: int, team: bool = False) -> None:
        super().reset(seat, num_players, team)
        self._seat = seat
        self._use_model(seat, num_players, team)
        self._started = self._informed = self._acted = False
        self._own_hand = self._own_action = None
        self._belief_rng = np.uint64(self.rng.integers(0, 2**63))

    def observe_action(self, view, seat: int, action: int) -> None:
        """`seat` is about to play `action` in the game `view` shows (this agent's view,
        before the move). Updates the belief; show actions are never passed here."""
        if not self._hands.shape[0]:
            return
        self._informed = True
        self._sync(view)
        if seat == self._seat:
            self._own_hand = view.hand.copy()
            self._own_action = int(action)
        elif (int(self._model.config[bk.CONFIG_SEATS]) >> seat) & 1:
            self._target_move(view, int(action))
            if not self._weights.sum() > 0:  # every guess died: fresh guesses that fit this move
                self.belief_resets += 1
                self._restart(view)
                self._target_move(view, int(action))
                if not self._weights.sum() > 0:  # none fits it: plain worlds from the next position on
                    self._started = False
                    return
            self._normalize(view)

    def _target_move(self, view, action: int) -> None:
        grid, info = view.public_arrays()
        update = bk.BELIEF_TARGET_MOVES[self._network_target]
        self._belief_rng = np.uint64(update(grid, info, self._seat, self._hands, self._weights, self._weights_before,
                                            action, self._model, self._belief_rng))

    def _sync(self, view) -> None:
        """Bring the belief up to `view`: build it at the game's start, weigh this seat's
        own draws since its last move, deal the target seats' draws."""
        grid, info = view.public_arrays()
        seats = int(self._model.config[bk.CONFIG_SEATS])
        if not self._started:
            self._started = True
            self._restart(view)
            return
        if self._own_hand is not None:
            before = self._own_hand.copy()
            if self._own_action < rules.PASS_ACTION:
                before[rules.decode_action(self._own_action)[1] - 1] -= 1
            gained = view.hand - before
            drawn = np.repeat(np.arange(1, 11), np.maximum(gained, 0)).astype(np.int64)
            self._own_hand = self._own_action = None
            if len(drawn) and self._weighted:
                bk.belief_observer_draws(grid, info, self._seat, seats, self._hands, self._weights, drawn,
                                         self._scratch)
                self._normalize(view)
        self._belief_rng = np.uint64(bk.belief_target_draws(grid, info, self._seat, seats, self._hands,
                                                            self._weights, self._belief_rng, self._scratch))
        self._normalize(view)

    def _restart(self, view) -> None:
        grid, info = view.public_arrays()
        self._belief_rng = np.uint64(bk.belief_reset(
            grid, info, self._seat, int(self._model.config[bk.CONFIG_SEATS]), self._hands, self._weights,
            self._belief_rng, self._model.world_grid, self._model.world_info, self._scratch))

    def _normalize(self, view) -> None:
        """Resample when the weights degenerate; restart when every guess died."""
        w = self._weights
        total = w.sum()
        if not total > 0:
            self.belief_resets += 1
            self._restart(view)
            return
        ess = total * total / float((w * w).sum())
        if ess < 0.5 * len(w):
            self._resample()

    def _resample(self) -> None:
        """Systematic resampling: every particle weight 1 after."""
        w = self._weights
        n = len(w)
        cdf = np.cumsum(w / w.sum())
        u = (self.rng.random() + np.arange(n)) / n
        index = np.minimum(np.searchsorted(cdf, u, side="right"), n - 1)
        self._hands[:] = self._hands[index]
        w[:] = 1.0

    def warm_up(self) -> None:
        """Compile (or load) every kernel of the belief and the search: a few moves of a
        fixed game with a two-iteration search. Budget and random stream are kept."""
        from engine import GameState
        from engine.view import PlayerView

        with self.warm_up_budget():
            state = GameState.new(2, seed=0)
            views = [PlayerView(state, 0), PlayerView(state, 1)]
            self.reset(1, 2)
            for _ in range(3):
                seat = state.current_player
                action = self.act(None, views[1]) if seat == 1 else state.legal_actions()[0]
                self.observe_action(views[1], seat, action)
                state.step(action)

    def compile_parts(self) -> tuple[str, ...]:
        """The parts compiled on their own (`compile_part`), unless the search is cached:
        the deals (the search's worlds and the belief's updates: the determinizations),
        the moves (the leaf's rollout and the root's ranking: the target's and the greedy
        policy's kernels) and the expansion."""
        if kernel_cache.is_cached(bk.SEARCHES[self.settings.expand, self._network_target]):
            return ()
        return ("deals", "moves", "expand")

    def compile_part(self, name: str) -> None:
        from engine import GameState
        from engine.view import PlayerView

        state = GameState.new(2, seed=0)
        view = PlayerView(state, 1)
        self.reset(1, 2)
        grid, info = view.public_arrays()
        part = {"deals": "world", "moves": "leaf"}.get(name, name)
        sk.compile_part(bk.PARTS[self.settings.expand], part, grid, info, view.seat, self._params, tree.new_workspace(),
                        (self._model, self._hands))
        if name == "moves":
            self._rank_root(view)
        elif name == "deals" and self._hands.shape[0]:  # the belief's start and its update for a target's move
            self.observe_action(view, 0, int(state.legal_actions()[0]))

    # --- the search -------------------------------------------------------------------------
    def _search(self, view):
        if self._hands.shape[0]:
            if self._acted and not self._informed or (not self._started and view.turn > 0):
                # the game loop does not report moves (not `play_game`): no reach weighting
                self._started = False
            self._sync(view)
            if not np.all(self._weights == self._weights[0]):
                self._resample()
        self._acted, self._informed = True, False
        grid, info = view.public_arrays()
        return self._single_tree(grid, info, view.seat, view.seat)

    def _call(self, grid, info, observer, iterations, rng):
        bk.clear_cache(self._model)  # the memo's node ids are this search's
        self.use_search(bk.SEARCHES[self.settings.expand, self._network_target], (self._model, self._hands))
        return super()._call(grid, info, observer, iterations, rng)


show_search_parameters(BestResponseAgent)
