"""A fresh deal for the tiles a seat has not seen: what makes an undo honest.

Taking a move back and replaying the same deal would tell the person what they cannot
know: the tile they drew after the undone move is the next tile of the bag, and the
agents' replies showed tiles of their hands. So an undo goes back to the position and
deals every tile the person has not seen afresh: the other hands, the bag and the 3
removed tiles, sampled from the person's view by the engine (`PlayerView.sample_world`,
which honours every public fact: hand sizes, passes, a partner's shown tile).

A game is kept as a deal plus its actions (the record format), so the sampled world is
written back into a deal: every position of the deal whose tile the person has seen (the
start tile, their own hand and draws, every tile since played on the board) keeps its
value, and the unseen positions (the removed tiles, the rest of the bag, the tiles now in
other hands) take the sampled world's tiles. The new deal replays the same actions to
the same public position, which is checked; a sample that does not fit the history (an
earlier pass the engine's pass facts no longer describe) is drawn again.

The new deal depends only on what the person has seen and on the random stream: two
games that differ only in hidden tiles get the same new deal (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine import GameState, rules
from engine.view import PlayerView

MAX_TRIES = 64  # samples drawn before giving up (rarely more than one is needed)


class RedealError(ValueError):
    """No deal of the unseen tiles fits the game's history (after MAX_TRIES samples)."""


def _history(deal: np.ndarray, num_players: int, team: bool, actions: Sequence[int]):
    """Replay `actions`, following each deal position: who holds it now, and the least
    value it must have for every pass of its holder while held to stay legal.
    Returns (state, holdings: seat -> positions, need: position -> least value)."""
    state = GameState.from_deal(deal, num_players, team)
    size = rules.hand_size(num_players)
    holdings = {s: list(range(4 + s * size, 4 + (s + 1) * size)) for s in range(num_players)}
    need: dict[int, int] = {}
    for action in actions:
        mover = state.current_player
        bag_before = rules.NUM_TILES - state.bag_size
        if action < rules.PASS_ACTION:
            value = rules.decode_action(action)[1]
            held = holdings[mover]
            # equal tiles are interchangeable: the latest one taken leaves first
            held.pop(max(i for i, p in enumerate(held) if deal[p] == value))
        state.step(action)
        if action < rules.PASS_ACTION and rules.NUM_TILES - state.bag_size > bag_before:
            holdings[mover].append(bag_before)
        elif action == rules.PASS_ACTION:
            cap = int(state.pass_facts[mover, 0])  # every tile held then was above it
            for p in holdings[mover]:
                need[p] = max(need.get(p, 0), cap + 1)
    return state, holdings, need


def _public(state: GameState, seat: int) -> tuple:
    view = PlayerView(state, seat)
    return (view.board.tolist(), view.scores.tolist(), view.hand_sizes.tolist(), view.hand.tolist(),
            view.bag_size, view.is_over, view.current_player, view.partner_shown, view.turn,
            state.pass_facts.tolist())


def redeal(deal, num_players: int, team: bool, actions: Sequence[int], seat: int,
           rng: np.random.Generator) -> np.ndarray:
    """A new deal that replays `actions` to the same position as seen by `seat`, with
    every tile `seat` has not seen there dealt afresh. Raises RedealError when no
    sample fits (after MAX_TRIES)."""
    deal = np.asarray(deal, dtype=np.int64)
    actions = [int(a) for a in actions]
    state, holdings, need = _history(deal, num_players, team, actions)
    seen = _public(state, seat)
    bag_at = rules.NUM_TILES - state.bag_size
    others = [s for s in range(num_players) if s != seat]
    view = PlayerView(state, seat)
    for _ in range(MAX_TRIES):
        world = view.sample_world(rng)
        new = deal.copy()
        new[1:4] = world.removed
        new[bag_at:] = world.bag
        fits = True
        for s in others:
            values = sorted((v + 1 for v in range(rules.MAX_VALUE) for _ in range(int(world.hands[s, v]))),
                            reverse=True)
            positions = sorted(holdings[s], key=lambda p: -need.get(p, 0))
            if any(v < need.get(p, 0) for v, p in zip(values, positions)):
                fits = False
                break
            new[positions] = values
        if fits and _replays(new, num_players, team, actions, seat, seen):
            return new.astype(np.int8)
    raise RedealError(f"no fresh deal of the unseen tiles fits this game's history in {MAX_TRIES} tries")


def _replays(deal: np.ndarray, num_players: int, team: bool, actions: list[int], seat: int, seen: tuple) -> bool:
    state = GameState.from_deal(deal, num_players, team)
    for action in actions:
        if not state.is_legal(action):
            return False
        state.step(action)
    return _public(state, seat) == seen
