"""Determinization uses everything public: passes (GameState.pass_facts) and the rest.

A seat passes only when none of its tiles fits an open cell, so after a pass every seat
knows the passer's tiles are all above the largest open capacity; worlds sampled for
search (engine.determinize, PlayerView.sample_world) must never contradict that, nor
anything else public. Games are seeded, so every check here is deterministic.
"""

from __future__ import annotations

import math
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


def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def exact_high_count_law(unseen, hands):
    """The exact law of each hand's count of tiles above its cap when `hands` (a list of
    (cap, need, size)) are dealt one after the other from the unseen tiles (counts per
    value 1..10) uniformly, conditioned on every count >= its need. Tiles are grouped
    into classes between consecutive caps; a deal of class counts has weight
    prod C(left in class, dealt from it) (the multivariate hypergeometric law)."""
    bounds = sorted({cap for cap, _, _ in hands}) + [rules.MAX_VALUE]
    classes, low = [], 0
    for b in bounds:
        classes.append(int(unseen[low:b].sum()))  # values low+1..b
        low = b
    law = np.zeros((len(hands), rules.MAX_VALUE + 1))

    def deal(i, left, weight, counts):
        if i == len(hands):
            for j, c in enumerate(counts):
                law[j, c] += weight
            return
        cap, need, size = hands[i]
        first_above = bounds.index(cap) + 1
        for comp in _compositions(size, len(classes)):
            if any(k > n for k, n in zip(comp, left)):
                continue
            above = sum(comp[first_above:])
            if above < need:
                continue
            w = weight * np.prod([math.comb(n, k) for n, k in zip(left, comp)])
            deal(i + 1, [n - k for n, k in zip(left, comp)], w, counts + [above])

    deal(0, classes, 1.0, [])
    return law / law[0].sum()


def _compare_with_exact_law(state, seat, samples):
    """Worlds sampled for `seat`: each constrained hand's count of tiles above its cap
    follows the exact conditional law."""
    facts = state.pass_facts
    seats = [s for s in range(state.num_players) if s != seat and facts[s][1] > 0]
    hands = [(int(facts[s][0]), int(facts[s][1]), int(state.hand_sizes[s])) for s in seats]
    law = exact_high_count_law(PlayerView(state, seat).unseen_counts(), hands)
    worlds = _worlds(PlayerView(state, seat), samples, 1)
    counts = _high_counts(worlds, state, seats)
    for j in range(len(seats)):
        freq = np.bincount(counts[:, j], minlength=rules.MAX_VALUE + 1) / samples
        se = np.sqrt(law[j] * (1 - law[j]) / samples) + 1e-3
        assert (np.abs(freq - law[j]) < 5 * se).all(), (seats[j], freq, law[j])


def test_conditional_law_is_exact_with_several_constrained_hands():
    """Two or more facts from play at once: proposals are rejected at times."""
    state, seat = _position_with_facts(4, 2)
    _compare_with_exact_law(state, seat, 3000)


def test_conditional_law_is_exact_with_partial_facts():
    """Facts that cover part of a hand, different caps (set by hand, true of the real
    hands): here a proposal that skipped the rejection step would be biased."""
    state = GameState.new(4, seed=5)
    rng = np.random.default_rng(5)
    for _ in range(8):
        state.step(_random_action(state, rng))
    info = state.arrays[1]
    for s in (1, 2):
        values = np.repeat(np.arange(1, rules.MAX_VALUE + 1), state.hands[s])
        info[layout.PASS_CAP + s] = np.sort(values)[-2] - 1 - s % 2  # two tiles above it
        info[layout.PASS_HELD + s] = 2
    grid, info = state.arrays
    check_states(grid[None].copy(), info[None].copy(), 4, False)
    assert state.pass_facts[1][0] != state.pass_facts[2][0]
    _compare_with_exact_law(state, 0, 6000)


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
