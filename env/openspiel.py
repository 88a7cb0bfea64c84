"""24/7 as an OpenSpiel game: ``import env.openspiel`` registers ``python_twentyfourseven``.

    import pyspiel
    import env.openspiel  # noqa: F401  (registers the game)
    game = pyspiel.load_game("python_twentyfourseven", {"players": 4, "team": True})
    state = game.new_initial_state()

Needs the ``openspiel`` extra (``pip install open-spiel==2.0.2``). The state wraps an
engine `GameState`: every legality test, score, end and reward comes from the engine.

=====================  =========================================================
dynamics               sequential
chance                 explicit: every tile dealt or drawn is a chance node whose
                       outcome ``v - 1`` is the tile's value ``v`` (1..10), weighted
                       by the copies of ``v`` not dealt yet
information            imperfect; utility zero-sum; terminal rewards =
                       ``GameState.rewards()`` (docs/rules.md)
parameters             ``players`` (2-4, default 2), ``team`` (default false; needs 4)
actions                the engine's ids (``engine.rules``): 491, team variant 501
strings                ``information_state_string(p)`` (perfect recall: the public
                       moves, p's own tiles and draws, the tiles p's partner showed
                       it), ``observation_string(p)`` (the position as p sees it now)
tensors                ``observation_tensor(p)`` and ``information_state_tensor(p)``:
                       both `env.observation.encode` (1338 floats; zeros before the
                       deal is complete; at a draw's chance node, the position
                       before the pending placement); shapes
                       ``observation_tensor_shape()`` and
                       ``information_state_tensor_shape()``, ``[1338]``
=====================  =========================================================

The information state tensor is the current observation, not the full history: two
information states whose strings differ (the order of the moves, when each seat passed,
p's earlier hands) can share a tensor, so it is not a perfect-recall key. Use
``information_state_string(p)`` for that (tabular CFR, ISMCTS's nodes). As the input of
a network learner (OpenSpiel's policy-gradient RPG/QPG/A2C, NFSP, DQN) the observation is
adequate: what happens next (the legal moves, every score, the end and the rewards)
depends only on the board, the minutes, the hands and the bag, all of that p may see is
in the observation, and its unseen-tile counts hold what the history says of the hidden
tiles, short of the hints in other seats' passes and earlier shows. It is also the input
every network of this project reads, so a policy learned through OpenSpiel sees what ours
see; and it is 1338 floats, where a one-hot history of every action would be
``max_game_length() * num_distinct_actions()`` (36k floats for 2 players, 92k for the team
variant).

Order of chance nodes: the start tile (public), the 3 removed tiles (seen by nobody),
each seat's hand in seat order (seen by that seat), then after every placement while
the bag is not empty, the tile the mover draws (seen by the mover). A placement that
draws is kept pending until its draw is decided, because the engine draws as part of
the placement and decides the end of the game from the hands after the draw.

`state_at(game, position)` starts a state from an engine position instead of the deal
(what a search agent that sees a `PlayerView` does): its history starts there, its
information state opens with the position as the seat sees it, and it can be resampled
while no move has been made from it (what ISMCTS needs). It has no OpenSpiel action
history, so it is for search, not for serialization.

`resample_from_infostate(p, sampler)` deals the tiles p has not seen with the engine's
determinizer (`engine.view.PlayerView.sample_world`), gives the other seats a history
of draws consistent with their sampled hands and the public moves, and replays it; a
sample the public moves refute (a pass while holding a tile that fits, a show not in
hand) is drawn again.
"""

from __future__ import annotations

import numpy as np

from engine import access, rules
from engine.extras import require
from engine.game import GameState
from engine.kernels import apply_action
from engine.view import PlayerView

from . import observation as obs_mod

require("pyspiel", "the OpenSpiel game (env.openspiel)")  # without the extra: one line naming it
import pyspiel  # noqa: E402

GAME_NAME = "python_twentyfourseven"
DEFAULT_PARAMS = {"players": 2, "team": False}
NUM_VALUES = rules.MAX_VALUE  # chance outcome v - 1 is a tile of value v
MAX_PLACEMENTS = rules.NUM_TILES - 1 - rules.NUM_REMOVED  # tiles that can ever be placed
RESAMPLE_ATTEMPTS = 1000

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="24/7: The Game (python, over the twentyfourseven engine)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=rules.MAX_PLAYERS,
    min_num_players=rules.MIN_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS)


def max_game_length(num_players: int, team: bool) -> int:
    """Decisions in the longest game: every placement may be preceded by a full round of
    passes (one more round ends the game), and in the team variant by one show."""
    return num_players * (MAX_PLACEMENTS + 1) + (MAX_PLACEMENTS if team else 0)


class TwentyFourSevenGame(pyspiel.Game):
    """The OpenSpiel game; ``pyspiel.load_game(GAME_NAME, params)`` builds it."""

    def __init__(self, params=None):
        merged = {**DEFAULT_PARAMS, **(params or {})}
        players, team = merged["players"], merged["team"]
        if isinstance(team, (int, np.integer)) and not isinstance(team, bool) and team in (0, 1):
            team = bool(team)
        if not isinstance(team, (bool, np.bool_)):
            raise ValueError(f"team must be a bool, got {team!r}")
        rules.check_game_options(players, bool(team))
        self.num_seats, self.team = int(players), bool(team)
        info = pyspiel.GameInfo(
            num_distinct_actions=rules.NUM_TEAM_ACTIONS if self.team else rules.NUM_ACTIONS,
            max_chance_outcomes=NUM_VALUES,
            num_players=self.num_seats,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=max_game_length(self.num_seats, self.team))
        super().__init__(_GAME_TYPE, info, {"players": self.num_seats, "team": self.team})

    def new_initial_state(self):
        return TwentyFourSevenState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if params:
            raise ValueError(f"observation parameters are not supported, got {params!r}")
        if iig_obs_type is None:
            iig_obs_type = pyspiel.IIGObservationType(perfect_recall=False)
        return TwentyFourSevenObserver(iig_obs_type)


class TwentyFourSevenState(pyspiel.State):
    """A game in progress. ``_events`` is the whole history as ``(kind, seat, value)``:
    ``("deal", owner, v)`` for a setup tile (owner -1: the start tile, -2: removed),
    ``("act", seat, action)`` for a decision, ``("draw", seat, v)`` for a draw;
    ``_shown`` keeps, after each event, what every seat shows (team variant)."""

    def __init__(self, game):
        super().__init__(game)
        self._num_seats = game.num_seats
        self._team = game.team
        self._num_actions = rules.NUM_TEAM_ACTIONS if game.team else rules.NUM_ACTIONS
        self._deal: list[int] = []  # setup tiles in deal order, until the GameState exists
        self._pool = [rules.COPIES_PER_VALUE] * NUM_VALUES  # copies of each value not dealt yet
        self._game: GameState | None = None
        self._pending = -1  # a placement waiting for its draw
        self._events: list[tuple[str, int, int]] = []
        self._shown: list[tuple[int, ...]] = []
        self._root: GameState | None = None  # the position a `state_at` state starts from
        self._root_text: dict[int, str] = {}  # each seat's view of _root (it never changes)

    # --- who moves -----------------------------------------------------------------------
    def current_player(self):
        if self._game is None or self._pending >= 0:
            return pyspiel.PlayerId.CHANCE
        if self._game.is_over:
            return pyspiel.PlayerId.TERMINAL
        return self._game.current_player

    def is_terminal(self):
        return self._game is not None and self._pending < 0 and self._game.is_over

    def returns(self):
        if not self.is_terminal():
            return [0.0] * self._num_seats
        return [float(r) for r in self._live.rewards()]

    def _legal_actions(self, player):
        mask = self._live.legal_action_mask()[:self._num_actions]
        return np.flatnonzero(mask).tolist()

    def chance_outcomes(self):
        total = sum(self._pool)
        return [(v, c / total) for v, c in enumerate(self._pool) if c]

    # --- moves ---------------------------------------------------------------------------
    @property
    def _live(self) -> GameState:
        """The engine's game (None only while the deal is under way, before any move)."""
        if self._game is None:
            raise ValueError("the deal is not complete yet: no move, reward or legal action exists")
        return self._game

    def _apply_action(self, action):
        action = int(action)
        if self.current_player() == pyspiel.PlayerId.CHANCE:
            self._apply_chance(action)
            return
        game = self._live
        seat = game.current_player
        if not game.is_legal(action):
            raise ValueError(f"illegal action {action} for seat {seat}; legal actions: "
                             f"{self._legal_actions(seat)}")
        self._events.append(("act", seat, action))
        if action < rules.PASS_ACTION and game.bag_size > 0:
            self._pending = action
            self._shown.append(self._shown_now())
        else:
            _apply(game, action)
            self._shown.append(self._shown_now())

    def _apply_chance(self, outcome: int):
        if not 0 <= outcome < NUM_VALUES or self._pool[outcome] == 0:
            raise ValueError(f"chance outcome {outcome} is not possible now; possible: "
                             f"{[v for v, c in enumerate(self._pool) if c]}")
        value = outcome + 1
        self._pool[outcome] -= 1
        if self._game is None:
            self._events.append(("deal", self._deal_owner(len(self._deal)), value))
            self._shown.append(())
            self._deal.append(value)
            if len(self._deal) == self._setup_size():
                self._start_game()
            return
        game, placement, seat = self._game, self._pending, self._game.current_player
        _draw_next(game, value)
        self._pending = -1
        _apply(game, placement)
        self._events.append(("draw", seat, value))
        self._shown.append(self._shown_now())

    def _setup_size(self) -> int:
        return 1 + rules.NUM_REMOVED + self._num_seats * rules.hand_size(self._num_seats)

    def _deal_owner(self, index: int) -> int:
        """Who sees setup tile `index`: -1 everyone (start tile), -2 nobody, else a seat."""
        if index == 0:
            return -1
        if index <= rules.NUM_REMOVED:
            return -2
        return (index - 1 - rules.NUM_REMOVED) // rules.hand_size(self._num_seats)

    def _start_game(self):
        # the bag's order is not decided yet: its tiles follow in any order, and each
        # draw's chance node moves the tile it picks to the front (_draw_next)
        rest = [v + 1 for v in range(NUM_VALUES) for _ in range(self._pool[v])]
        self._game = GameState.from_deal(self._deal + rest, self._num_seats, self._team)
        self._deal = []

    def _shown_now(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self._live.shown_tiles) if self._team else ()

    # --- strings -----------------------------------------------------------------------
    def _action_to_string(self, player, action):
        if player == pyspiel.PlayerId.CHANCE:
            return f"tile {int(action) + 1}"
        return rules.action_text(int(action))

    def __str__(self):
        head = f"24/7 players={self._num_seats} team={self._team}"
        moves = " ".join(_event_text(e, -3, self._team) for e in self._events)
        if self._game is None:
            return f"{head}\ndealing: {moves}"
        pending = f"\npending {rules.action_text(self._pending)}" if self._pending >= 0 else ""
        return f"{head}\n{moves}{pending}\nscores {self._game.scores.tolist()} over={self._game.is_over}"

    # --- sampling worlds -------------------------------------------------------------------
    def resample_from_infostate(self, player_id, probability_sampler):
        """A state `player_id` cannot tell from this one, the hidden tiles drawn at random
        (see the module docstring). `probability_sampler()` seeds the draw."""
        player = int(player_id)
        if not 0 <= player < self._num_seats:
            raise ValueError(f"player must be 0..{self._num_seats - 1}, got {player_id!r}")
        rng = np.random.default_rng(int(probability_sampler() * 2**53))
        game = self.get_game()
        if self._root is not None:
            if self._events:
                raise NotImplementedError("a state started from a position (state_at) can be "
                                          "resampled only before any move is made from it")
            return state_at(game, PlayerView(self._live, player).sample_world(rng))
        key = self.information_state_string(player)
        for _ in range(RESAMPLE_ATTEMPTS):
            outcomes = _sample_history(self, player, rng)
            world = _replay(game, outcomes)
            if world is not None and world.information_state_string(player) == key:
                return world
        raise RuntimeError(f"no world consistent with player {player}'s information found in "
                           f"{RESAMPLE_ATTEMPTS} samples")

    def history_actions(self) -> list[int]:
        """Every action from the start, chance outcomes included (what a replay applies)."""
        return [_event_action(e) for e in self._events]


def state_at(game: TwentyFourSevenGame, position: GameState) -> TwentyFourSevenState:
    """An OpenSpiel state of `game` at an engine `position` (copied): the tiles still in
    the bag are its chance outcomes from here on."""
    if not isinstance(position, GameState):
        raise TypeError(f"position must be an engine GameState, got {type(position).__name__}")
    if (position.num_players, position.team) != (game.num_seats, game.team):
        raise ValueError(f"the position has players={position.num_players} team={position.team}, "
                         f"the game players={game.num_seats} team={game.team}")
    state = game.new_initial_state()
    state._game = position.clone()
    state._root = position.clone()
    counts = np.bincount(position.bag, minlength=NUM_VALUES + 1)[1:]
    state._pool = [int(c) for c in counts]
    return state


def _apply(game: GameState, action: int) -> None:
    """Apply a legal action through the engine's kernel: `GameState.step` would also
    decode the score breakdown, which nothing here reads and search pays for."""
    grid, info = game.arrays
    apply_action(grid, info, action)


def _draw_next(game: GameState, value: int) -> None:
    """Make `value` the next tile of the engine's bag. The bag order is hidden and not
    decided until a draw's chance node picks the tile; the engine draws from the front."""
    _, info = game.arrays
    bag = access.bag_of(info)
    j = int(np.flatnonzero(bag == value)[0])
    bag[0], bag[j] = bag[j], bag[0]


def _event_action(event) -> int:
    kind, _, value = event
    return value if kind == "act" else value - 1


def _event_text(event, viewer: int, team: bool) -> str:
    """One history event as `viewer` sees it (viewer -3: the full truth)."""
    kind, seat, value = event
    full = viewer == -3
    if kind == "deal":
        if seat == -1:
            return f"start:{value}"
        if seat == -2:
            return f"removed:{value if full else '?'}"
        return f"s{seat}+{value if full or seat == viewer else '?'}"
    if kind == "draw":
        return f"s{seat}+{value if full or seat == viewer else '?'}"
    if value >= rules.SHOW_BASE and not (full or seat == viewer or (team and seat == rules.partner(viewer))):
        return f"s{seat}:show ?"
    return f"s{seat}:{rules.action_text(value)}"


# --- resampling ----------------------------------------------------------------------------
def _sample_history(state: TwentyFourSevenState, player: int, rng: np.random.Generator) -> list[int]:
    """The action sequence of `state` with every tile `player` has not seen redrawn."""
    events = state._events
    if state._game is None:
        return _resample_setup(state, player, rng)
    world = PlayerView(state._game, player).sample_world(rng)
    hands = {s: _tile_list(world.hands[s]) for s in range(state._num_seats) if s != player}
    out = [_event_action(e) for e in events]
    for i in range(len(events) - 1, -1, -1):  # back from the sampled hands to the deal
        kind, seat, value = events[i]
        if seat not in hands:
            continue
        hand = hands[seat]
        if kind == "draw":
            out[i] = _take(hand, rng) - 1
        elif kind == "act" and value < rules.PASS_ACTION:
            if not (state._pending >= 0 and i == len(events) - 1):  # the world holds it still
                hand.append(rules.decode_action(value)[1])
        elif kind == "act" and value >= rules.SHOW_BASE and seat != _partner_or_none(player, state._team):
            out[i] = rules.show_action(hand[int(rng.integers(len(hand)))]) if hand else value
    hidden = [int(v) for v in world.removed]
    for i, (kind, seat, _) in enumerate(events):
        if kind == "deal" and seat == -2:
            out[i] = hidden.pop() - 1
        elif kind == "deal" and seat in hands:
            out[i] = _take(hands[seat], rng) - 1
    return out


def _resample_setup(state: TwentyFourSevenState, player: int, rng: np.random.Generator) -> list[int]:
    """During the deal: the tiles dealt face down so far are drawn afresh from every tile
    `player` has not seen (those and the tiles not dealt yet)."""
    events = state._events
    out = [_event_action(e) for e in events]
    hidden = [i for i, (_, owner, _) in enumerate(events) if owner not in (-1, player)]
    unseen = [out[i] for i in hidden] + [v for v in range(NUM_VALUES) for _ in range(state._pool[v])]
    for i, v in zip(hidden, rng.permutation(unseen)):
        out[i] = int(v)
    return out


def _partner_or_none(player: int, team: bool) -> int:
    return rules.partner(player) if team else -1


def _tile_list(counts) -> list[int]:
    return [v + 1 for v in range(NUM_VALUES) for _ in range(int(counts[v]))]


def _take(hand: list[int], rng: np.random.Generator) -> int:
    return hand.pop(int(rng.integers(len(hand))))


def _replay(game, actions: list[int]):
    """A fresh state with `actions` applied, or None if the engine refuses one."""
    state = game.new_initial_state()
    for a in actions:
        if state.is_chance_node():
            if state._pool[a] == 0:
                return None
        elif not state._game.is_legal(a):
            return None
        state.apply_action(a)
    return state


# --- observer -----------------------------------------------------------------------------
class TwentyFourSevenObserver:
    """Strings and tensors of what one seat sees (OpenSpiel's PyObserver interface). With
    ``perfect_recall`` (the information state) the string is the whole history the seat
    saw and the tensor still the current observation (see the module docstring)."""

    def __init__(self, iig_obs_type):
        if iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or not iig_obs_type.public_info:
            raise ValueError("only the single-player observation (public information plus the "
                             "seat's own tiles) is provided")
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.tensor = np.zeros(obs_mod.OBS_SIZE, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state, player):
        self.tensor.fill(0)
        if state._game is not None:
            obs_mod.encode(state._game, player, out=self.tensor)

    def string_from(self, state, player):
        if self.perfect_recall:
            return information_state_text(state, player)
        return observation_text(state, player)


def information_state_text(state: TwentyFourSevenState, player: int) -> str:
    """Everything `player` has seen, in order; after each move of a team game, the tile
    its partner shows it then."""
    partner = _partner_or_none(player, state._team)
    parts = [f"p{player}"]
    if state._root is not None:
        if player not in state._root_text:
            state._root_text[player] = f"from[{_position_text(state._root, player)}]"
        parts.append(state._root_text[player])
    for event, shown in zip(state._events, state._shown):
        parts.append(_event_text(event, player, state._team))
        if partner >= 0 and shown:
            parts.append(f"|{shown[partner]}")
    return " ".join(parts)


def observation_text(state: TwentyFourSevenState, player: int) -> str:
    """The position as `player` sees it now: board, stones, minutes, hand sizes, bag, its
    own hand and, in the team variant, the partner's shown tile."""
    game = state._game
    if game is None:
        mine = [v for kind, seat, v in state._events if kind == "deal" and seat == player]
        start = [v for kind, seat, v in state._events if kind == "deal" and seat == -1]
        return f"p{player} dealing start={start} hand={sorted(mine)}"
    text = _position_text(game, player)
    if state._pending >= 0:
        text += f" pending={rules.action_text(state._pending)}"
    return text


def _position_text(game: GameState, player: int) -> str:
    view = PlayerView(game, player)
    last = view.last_action
    if last >= rules.SHOW_BASE and view.current_player not in (player, rules.partner(player)):
        last = "show ?"  # the mover, still to place, showed its partner a tile
    elif last >= 0:
        last = rules.action_text(last)
    board = "".join(str(v) if v < 10 else "T" for v in view.board.reshape(-1).tolist())
    timeouts = ",".join(map(str, view.timeout_cells))
    text = (f"p{player} board={board} timeouts={timeouts} scores={view.scores.tolist()} "
            f"sizes={view.hand_sizes.tolist()} bag={view.bag_size} hand={_tile_list(view.hand)} "
            f"to_move={view.current_player} last={last} turn={view.turn}")
    if view.team:
        own = int(game.shown_tiles[player])
        text += f" partner_shows={view.partner_shown} i_show={own}"
    return text


pyspiel.register_game(_GAME_TYPE, TwentyFourSevenGame)
