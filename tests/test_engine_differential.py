"""Differential test: the numba engine (`GameState`) against the plain-Python oracle
(`ReferenceGame`) over many complete games.

Both engines get the same deal (`random_deal(seed)` via `from_deal`) and the same
actions; after every action the whole public and hidden state is compared, and at
the end the scores, ranking and rewards. Games mix 2/3/4 players and the team
variant (where show actions are chosen now and then), and several policies: uniform
random, and "adversarial" ones that push lines towards 24 (highest value first, most
points first) so Time Outs, 24s, 24-in-7, sets of 4 and long runs show up.

The default run plays FAST_CHUNKS x FAST_CHUNK_GAMES = 1,000 games; the ``slow`` part
plays SLOW_CHUNKS x SLOW_CHUNK_GAMES = 5,000 more in independent chunks (xdist spreads
them over workers). A second test rebuilds mid-game positions with `from_position` on
both engines and compares *every* legal move from them, which reaches scoring
situations a single line of play rarely does.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from engine import GameState, kernels, layout, random_deal, rules
from engine.reference import ReferenceGame

CONFIGS = ((2, False), (3, False), (4, False), (4, True))
POLICIES = ("random", "high", "greedy", "mixed")

FAST_CHUNKS, FAST_CHUNK_GAMES = 4, 250  # 1,000 games by default
SLOW_CHUNKS, SLOW_CHUNK_GAMES = 10, 500  # 5,000 more under -m slow
SLOW_SEED_BASE = 1_000_000

# What a whole chunk must have produced, so the comparison is not vacuous.
MUST_SEE = {"sum7", "sum24", "24in7", "run3", "run4", "run5", "set3", "set4", "24/7",
            "double_time", "pass", "timeout", "show", "tie_break", "draw"}
SLOW_MUST_SEE = MUST_SEE | {"run6"}


class CachedReference(ReferenceGame):
    """The oracle with its slowest pure function, "the legal placements of a seat",
    memoised on everything it reads (board, stones, the seat's hand). Within a turn
    the reference recomputes it up to four times; the cache only saves that time."""

    def _placements(self, seat: int) -> list[int]:
        key = (seat, tuple(map(tuple, self._board)), tuple(self._hands[seat]),
               frozenset(self._stones))
        memo = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            if len(memo) >= 8:
                memo.clear()
            memo[key] = super()._placements(seat)
        return list(memo[key])


def _key(c):
    return (c[0], c[1] or "", int(c[2]))


def breakdown(game) -> list[tuple[str, str, int]]:
    return sorted(_key(c) for c in game.last_breakdown)


def compare(g: GameState, r: ReferenceGame, where: str) -> None:
    """Everything both engines expose must agree."""
    assert g.current_player == r.current_player, where
    assert g.turn == r.turn, where
    assert g.is_over == r.is_over, where
    assert g.hand_sizes.tolist() == r.hand_sizes.tolist(), where
    assert g.hands.tolist() == r.hands.tolist(), where
    assert g.bag_size == r.bag_size, where
    assert g.bag.tolist() == r.bag.tolist(), where
    assert g.scores.tolist() == r.scores.tolist(), where
    assert g.timeout_cells == r.timeout_cells, where
    assert g.board.tolist() == r.board.tolist(), where
    assert g.shown_tiles.tolist() == r.shown_tiles.tolist(), where
    assert g.pass_facts.tolist() == r.pass_facts.tolist(), where


def _points_of(g: GameState, action: int) -> int:
    grid, info = g.arrays
    return int(kernels.apply_action(grid.copy(), info.copy(), action))


def choose(policy: str, g: GameState, legal: list[int], shows: list[int],
           rng: np.random.Generator) -> int:
    """An action by `policy`; in the team variant a show now and then."""
    if shows and rng.random() < 0.2:
        return int(shows[rng.integers(len(shows))])
    if legal == [rules.PASS_ACTION]:
        return rules.PASS_ACTION
    if policy == "mixed":
        policy = POLICIES[rng.integers(3)]
    if policy == "random":
        return int(legal[rng.integers(len(legal))])
    arr = np.asarray(legal)
    if policy == "high":  # the highest value held, on a random cell
        values = arr % rules.MAX_VALUE
        best = arr[values == values.max()]
        return int(best[rng.integers(len(best))])
    # greedy: the most minutes; ties broken by higher value, then at random
    pts = np.array([_points_of(g, int(a)) for a in arr]) * 16 + arr % rules.MAX_VALUE
    best = arr[pts == pts.max()]
    return int(best[rng.integers(len(best))])


def play_pair(seed: int, num_players: int, team: bool, policy: str, seen: Counter) -> None:
    deal = random_deal(seed)
    g = GameState.from_deal(deal, num_players, team)
    r = CachedReference.from_deal(deal, num_players, team)
    rng = np.random.default_rng(seed)
    tag = f"seed={seed} players={num_players} team={team} policy={policy}"
    compare(g, r, tag + " at start")
    assert g.removed.tolist() == r.removed.tolist(), tag
    while True:
        where = f"{tag} turn={g.turn}"
        legal, ref_legal = g.legal_actions(), r.legal_actions()
        assert legal == ref_legal, where
        shows, ref_shows = g.show_actions(), r.show_actions()
        assert shows == ref_shows, where
        mask = g.legal_action_mask()
        assert np.flatnonzero(mask).tolist() == (legal + shows if legal else []), where
        if r.is_over:
            break
        action = choose(policy, g, legal, shows, rng)
        mover = g.current_player
        pts = g.step(action)
        ref_pts = r.step(action)
        where += f" action={action}"
        assert pts == ref_pts, where
        assert breakdown(g) == breakdown(r), where
        compare(g, r, where)
        assert g.last_action == action, where
        # what the chunk has exercised
        if action == rules.PASS_ACTION:
            seen["pass"] += 1
        elif action >= rules.SHOW_BASE:
            seen["show"] += 1
        else:
            seen.update(c[0] for c in g.last_breakdown)
            seen["timeout"] += bool(g.timeout_cells)
            seen["points"] += pts
        assert g.scores[mover] == r.scores[mover], where
    assert g.scores.tolist() == r.scores.tolist(), tag
    assert g.ranking().tolist() == r.ranking().tolist(), tag
    assert np.allclose(g.rewards(), r.rewards(), atol=1e-12), tag
    assert abs(g.rewards().sum()) < 1e-9, tag
    places = g.ranking().tolist()
    scores = g.scores.tolist()
    if team:  # compare the two teams through seats 0 and 1
        scores, places = [scores[0] + scores[2], scores[1] + scores[3]], places[:2]
    pairs = [(a, b) for a in range(len(places)) for b in range(a + 1, len(places))]
    seen["draw"] += any(places[a] == places[b] for a, b in pairs)
    seen["tie_break"] += any(scores[a] == scores[b] and places[a] != places[b] for a, b in pairs)


def play_chunk(base_seed: int, num_games: int) -> Counter:
    seen: Counter = Counter()
    for i in range(num_games):
        seed = base_seed + i
        num_players, team = CONFIGS[i % len(CONFIGS)]
        policy = POLICIES[(i // len(CONFIGS)) % len(POLICIES)]
        play_pair(seed, num_players, team, policy, seen)
        seen["games"] += 1
    return seen


@pytest.mark.parametrize("chunk", range(FAST_CHUNKS))
def test_differential_fast(chunk):
    seen = play_chunk(chunk * FAST_CHUNK_GAMES, FAST_CHUNK_GAMES)
    assert seen["games"] == FAST_CHUNK_GAMES
    missing = MUST_SEE - {k for k, v in seen.items() if v}
    assert not missing, f"chunk never produced {sorted(missing)}: {dict(seen)}"


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(SLOW_CHUNKS))
def test_differential_slow(chunk):
    seen = play_chunk(SLOW_SEED_BASE + chunk * SLOW_CHUNK_GAMES, SLOW_CHUNK_GAMES)
    assert seen["games"] == SLOW_CHUNK_GAMES
    missing = SLOW_MUST_SEE - {k for k, v in seen.items() if v}
    assert not missing, f"chunk never produced {sorted(missing)}: {dict(seen)}"


# ----------------------------------------------------------------- every move from a position
def positions(seed: int, count: int):
    """Mid-game positions (board, hands, bag, seat, players, team) from greedy/random play."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        num_players, team = CONFIGS[len(out) % len(CONFIGS)]
        g = GameState.from_deal(random_deal(int(rng.integers(2**62))), num_players, team)
        stop = int(rng.integers(3, 30))
        policy = ("greedy", "high", "random")[len(out) % 3]
        while not g.is_over and g.turn < stop:
            legal = g.legal_actions()
            g.step(choose(policy, g, legal, [], rng))
        if g.is_over:
            continue
        board = {divmod(int(c), 7): int(v) for c, v in enumerate(g.board.ravel()) if v}
        hands = [[v + 1 for v in range(10) for _ in range(int(h[v]))] for h in g.hands]
        out.append((board, hands, g.bag.tolist(), g.current_player, num_players, team))
    return out


def check_every_move(position) -> int:
    board, hands, bag, seat, num_players, team = position
    g = GameState.from_position(board, hands, num_players, team, seat, bag)
    # numba's from_position marks the Time Outs of the board at once, the reference's
    # only takes given ones (and marks after the next placement): hand them over
    r = ReferenceGame.from_position(board, hands, num_players, team, seat, bag,
                                    timeout_cells=g.timeout_cells)
    compare(g, r, f"{position}")
    assert g.legal_actions() == r.legal_actions()
    assert g.show_actions() == r.show_actions()
    assert g.is_over == r.is_over
    for action in g.legal_actions() + g.show_actions():
        g2, r2 = g.clone(), r.clone()
        where = f"{position} action={action}"
        assert g2.step(action) == r2.step(action), where
        assert breakdown(g2) == breakdown(r2), where
        compare(g2, r2, where)
        assert g2.legal_actions() == r2.legal_actions(), where
        assert g2.ranking().tolist() == r2.ranking().tolist(), where
    return len(g.legal_actions())


@pytest.mark.parametrize("seed", range(2))
def test_every_move_from_positions(seed):
    moves = sum(check_every_move(p) for p in positions(seed, 12))
    assert moves > 100


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 110))
def test_every_move_from_positions_slow(seed):
    moves = sum(check_every_move(p) for p in positions(seed, 25))
    assert moves > 200


def test_compare_catches_a_difference():
    """The harness itself: a one-point difference in one seat's score is caught."""
    deal = random_deal(0)
    g, r = GameState.from_deal(deal, 2), ReferenceGame.from_deal(deal, 2)
    compare(g, r, "equal")
    g.arrays[1][layout.SCORE + 1] += 1
    with pytest.raises(AssertionError):
        compare(g, r, "score differs")
