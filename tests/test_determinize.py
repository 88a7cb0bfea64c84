"""Determinization uses everything public: passes (GameState.pass_facts) and the rest.

A seat passes only when none of its tiles fits an open cell, so after a pass every seat
knows the passer's tiles are all above the largest open capacity; worlds sampled for
search (engine.determinize, PlayerView.sample_world) must never contradict that, nor
anything else public. Games are seeded, so every check here is deterministic.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from agents import make
from engine import GameState, layout, rules
from engine.batch import check_states
from engine.view import PlayerView

FULL = Counter({v: rules.COPIES_PER_VALUE for v in range(1, rules.MAX_VALUE + 1)})
VARIANTS = [(2, False), (3, False), (4, False), (4, True)]


def _random_action(state: GameState, rng) -> int:
    """Uniform over every legal id, team shows included."""
    return int(rng.choice(np.flatnonzero(state.legal_action_mask())))


def play(num_players: int, team: bool, policy: str, seed: int):
    """Yield (state, mover, action) after every action of one seeded game."""
    rng = np.random.default_rng(seed)
    state = GameState.new(num_players, seed=seed, team=team)
    agents = []
    if policy == "greedy":
        for seat in range(num_players):
            agent = make("greedy", seed=seed * 10 + seat)
            agent.reset(seat, num_players, team)
            agents.append(agent)
    while not state.is_over:
        mover = state.current_player
        if policy == "greedy":
            action = int(agents[mover].act(None, PlayerView(state, mover)))
        else:
            action = _random_action(state, rng)
        state.step(action)
        yield state, mover, action


def tiles_above(state: GameState, seat: int, cap: int) -> int:
    return int(state.hands[seat][cap:].sum())  # column v - 1 holds value v


def _worlds(view: PlayerView, count: int, seed: int):
    rng = np.random.default_rng(seed)
    return [view.sample_world(rng) for _ in range(count)]


def check_world(state: GameState, seat: int, world: GameState) -> None:
    """Everything `seat` knows is the same in `world`, the tiles add up to 40, the
    state is valid (its derived fields, the end flag included, match its tiles) and no
    pass fact is contradicted."""
    view, wview = PlayerView(state, seat), PlayerView(world, seat)
    for name in ("board", "capacities", "hand_sizes", "scores", "pass_facts"):
        assert np.array_equal(getattr(wview, name), getattr(view, name)), name
    for name in ("timeout_cells", "bag_size", "current_player", "turn", "is_over", "last_action",
                 "partner_shown"):
        assert getattr(wview, name) == getattr(view, name), name
    assert np.array_equal(wview.hand, view.hand)
    if view.partner_shown:
        assert world.hands[(seat + 2) % 4][view.partner_shown - 1] >= 1
    board = world.board
    tiles = Counter(board[board > 0].tolist())
    for s in range(state.num_players):
        tiles.update({v + 1: int(c) for v, c in enumerate(world.hands[s]) if c})
    tiles.update(world.bag.tolist())
    tiles.update(world.removed.tolist())
    assert tiles == FULL
    grid, info = world.arrays
    check_states(grid[None].copy(), info[None].copy(), state.num_players, state.team)
    for other, (cap, held) in enumerate(state.pass_facts):
        assert tiles_above(world, other, int(cap)) >= held, (other, cap, held)


@pytest.mark.parametrize("num_players,team", VARIANTS)
def test_pass_facts_are_true_and_tight(num_players, team):
    """Against the real hands: a pass records the largest open capacity and the whole
    hand, every tile of which is above it; the facts stay true as play goes on."""
    passes = 0  # a pass by a seat holding tiles is rare: about one game in five
    for seed in range(40):
        for policy in ("random", "greedy"):
            for state, mover, action in play(num_players, team, policy, 100 + seed):
                cap, held = state.pass_facts[mover]
                if action == rules.PASS_ACTION and state.hand_sizes[mover] > 0:
                    passes += 1
                    assert held == state.hand_sizes[mover]
                    assert cap >= state.capacities.max()  # >: an older, higher bound still holds
                for seat, (cap, held) in enumerate(state.pass_facts):
                    assert tiles_above(state, seat, int(cap)) >= held
                    assert held or not cap
    assert passes >= 5


@pytest.mark.parametrize("num_players,team", VARIANTS)
def test_sampled_worlds_never_contradict_a_pass(num_players, team):
    """Right after a pass (and at later positions while a fact holds), the worlds
    sampled for every other seat keep everything public; the passer's sampled hand has
    no tile that fits anywhere while nothing has left its hand since the pass."""
    checked = right_after = 0
    for seed in range(300):
        if right_after >= 6:
            break
        for policy in ("random", "greedy"):
            later = 0
            for state, mover, action in play(num_players, team, policy, 200 + seed):
                if state.is_over:  # search never samples a finished game (module doc)
                    break
                facts = state.pass_facts
                just_passed = action == rules.PASS_ACTION and facts[mover][1] > 0
                if not just_passed:
                    if facts[:, 1].sum() == 0 or later >= 3:
                        continue
                    later += 1
                for seat in range(num_players):
                    if just_passed and seat == mover:
                        continue
                    for world in _worlds(PlayerView(state, seat), 12, seed * 100 + seat):
                        check_world(state, seat, world)
                        if just_passed:
                            cap = int(facts[mover][0])
                            assert world.hands[mover][:cap].sum() == 0  # nothing <= cap
                    checked += 1
                right_after += just_passed
    assert right_after >= 6 and checked >= right_after * (num_players - 1)


def _position_with_facts(num_players: int, min_seats: int, policy: str = "random"):
    """The first position of a seeded game where at least `min_seats` seats have a pass
    fact, and a seat without one that can place."""
    for seed in range(400):
        for state, mover, action in play(num_players, False, policy, 500 + seed):
            facts = state.pass_facts
            constrained = [s for s in range(num_players) if facts[s][1] > 0 and facts[s][0] > 0]
            if len(constrained) < min_seats or state.is_over:
                continue
            free = [s for s in range(num_players) if s not in constrained
                    and PlayerView(state, s).hand[:state.capacities.max()].sum() > 0]
            if free:
                return state.clone(), free[0]
    raise AssertionError("no such position in 400 games")


def _high_counts(worlds, state, seats):
    facts = state.pass_facts
    return np.array([[tiles_above(w, s, int(facts[s][0])) for s in seats] for w in worlds])


def test_conditional_law_is_exact_with_several_constrained_hands():
    """With two or more pass facts at once (rejection of proposals at work), the worlds
    follow the uniform law conditioned on the facts: the same law as unconstrained worlds
    (sampled with the facts erased) filtered by the facts."""
    state, seat = _position_with_facts(4, 2)
    facts = state.pass_facts
    seats = [s for s in range(4) if facts[s][1] > 0]
    worlds = _worlds(PlayerView(state, seat), 4000, 1)
    erased = state.clone()
    erased.arrays[1][layout.PASS_CAP:layout.PASS_HELD + 4] = 0
    plain = _worlds(PlayerView(erased, seat), 40000, 2)
    plain = [w for w in plain if all(tiles_above(w, s, int(facts[s][0])) >= facts[s][1] for s in seats)]
    assert len(plain) >= 500
    a, b = _high_counts(worlds, state, seats), _high_counts(plain, state, seats)
    assert (a >= facts[seats, 1]).all()
    for j in range(len(seats)):  # each hand's count of tiles above its cap
        for k in range(rules.hand_size(4) + 1):
            pa, pb = (a[:, j] == k).mean(), (b[:, j] == k).mean()
            se = np.sqrt(pb * (1 - pb) / len(b) + pa * (1 - pa) / len(a)) + 1e-3
            assert abs(pa - pb) < 5 * se, (j, k, pa, pb)
    values = np.arange(1, rules.MAX_VALUE + 1)
    for s in seats:  # and each hand's mean tile value
        ma = np.mean([w.hands[s] @ values for w in worlds])
        mb = np.mean([w.hands[s] @ values for w in plain])
        sb = np.std([w.hands[s] @ values for w in plain]) / np.sqrt(len(plain))
        assert abs(ma - mb) < 5 * sb + 0.05, (s, ma, mb)


def test_without_passes_worlds_are_uniform():
    """No pass yet: the first bag tile and an opponent's hand follow the unseen counts."""
    for num_players in (2, 4):
        state = GameState.new(num_players, seed=7)
        rng = np.random.default_rng(0)
        for _ in range(6):
            state.step(_random_action(state, rng))
        assert state.pass_facts[:, 1].sum() == 0
        view = PlayerView(state, 0)
        unseen = view.unseen_counts()
        p = unseen / unseen.sum()
        worlds = _worlds(view, 6000, 3)
        first = np.bincount([int(w.bag[0]) for w in worlds], minlength=rules.MAX_VALUE + 1)[1:]
        se = np.sqrt(p * (1 - p) / len(worlds))
        assert (np.abs(first / len(worlds) - p) < 5 * se + 1e-3).all()
        hand = np.mean([w.hands[1] for w in worlds], axis=0)
        expected = state.hand_sizes[1] * p
        assert (np.abs(hand - expected) < 0.05 + 0.1 * expected).all()


def test_a_pass_by_an_empty_hand_tells_nothing():
    state = GameState.from_position({(3, 3): 5}, [[], [4]], num_players=2)
    state.step(rules.PASS_ACTION)
    assert state.pass_facts.tolist() == [[0, 0], [0, 0]]


def test_pass_facts_follow_placements():
    """Around four 8s no tile above 8 fits (docs/rules.md example 18): seat 0 passes with
    9 10. Seat 1's 1 above the square opens a cell for a 10; seat 0's placement there
    may have used a held tile (held 2 -> 1); its 1 drawn since, placed later, may not."""
    board = {(3, 3): 8, (3, 4): 8, (4, 3): 8, (4, 4): 8}
    state = GameState.from_position(board, [[9, 10], [1, 2, 3]], num_players=2, bag=[4, 1])
    assert state.legal_actions() == [rules.PASS_ACTION]
    state.step(rules.PASS_ACTION)
    assert state.pass_facts.tolist() == [[8, 2], [0, 0]]
    state.step(rules.action_id(rules.cell_of(2, 3), 1))  # seat 1 draws the 4
    state.step(rules.action_id(rules.cell_of(1, 2), 10))  # seat 0 draws the 1
    assert state.pass_facts.tolist() == [[8, 1], [0, 0]]
    state.step(rules.action_id(rules.cell_of(1, 1), 2))
    state.step(rules.action_id(rules.cell_of(0, 0), 1))  # 1 <= 8: not a held tile
    assert state.pass_facts.tolist() == [[8, 1], [0, 0]]
    state.step(rules.action_id(rules.cell_of(0, 1), 3))
    state.step(rules.action_id(rules.cell_of(0, 3), 9))  # the last held tile
    assert state.pass_facts.tolist() == [[0, 0], [0, 0]]


def test_check_states_rejects_a_false_pass_fact():
    state = GameState.new(2, seed=3)
    grid, info = (a[None].copy() for a in state.arrays)
    check_states(grid, info, 2, False)
    info[0, layout.PASS_HELD + 1] = 1  # seat 1 holds a tile above 10: impossible
    info[0, layout.PASS_CAP + 1] = 10
    with pytest.raises(ValueError, match="pass"):
        check_states(grid, info, 2, False)
    info[0, layout.PASS_HELD + 1] = 0  # a cap with nothing held
    with pytest.raises(ValueError, match="pass cap"):
        check_states(grid, info, 2, False)
