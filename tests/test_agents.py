"""Agents: the registry, legal play in every game mode, greedy's choice, MCTS on
hand-built positions, the world sampler's information discipline, and seeding."""

import itertools
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from agents import make, registered
from agents.base import BUILTIN_MODULES
from agents.play import play_game, replay

ROOT = Path(__file__).resolve().parents[1]
from engine import GameState, rules
from engine.deal import random_deal
from engine.determinize import SCRATCH_LEN, sample_world
from engine.rules import PASS_ACTION, action_id, cell_of
from engine.view import PlayerView
from env import render

MODES = [(2, False), (3, False), (4, False), (4, True)]
MODE_IDS = ["2p", "3p", "4p", "team"]
FAST_SPECS = [
    "random",
    "greedy",
    "policy",
    "ismcts:iterations=60",
    "ismcts:iterations=40,epsilon=1,depth=0,widen=0,expand_after=1,expand=random",
    "pimc:determinizations=3,iterations=30",
    "cheat:iterations=40",
]


# --------------------------------------------------------------------------- registry
def test_builtin_agents_are_registered():
    assert {"random", "greedy", "policy", "ismcts", "pimc", "cheat"} <= set(registered())


def test_one_name_per_agent_the_one_the_docs_use():
    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "status.md").read_text()
    builtin = set(registered()) & set(BUILTIN_MODULES)  # not the test plugins other files register
    assert "cheat" in builtin and "cheating_mcts" not in registered()
    undocumented = [n for n in sorted(builtin) if not re.search("`" + re.escape(n) + "[`:]", docs)]
    assert undocumented == []
    with pytest.raises(ValueError, match=r"unknown agent 'cheating_mcts'.* replaced by cheat \(the same agent"):
        make("cheating_mcts")


@pytest.mark.parametrize("spec", [
    "nosuchagent", "greedy:x=1", "ismcts:iterations=0", "ismcts:iterations=-5", "ismcts:c=-1",
    "ismcts:rollout=nope", "ismcts:epsilon=2", "ismcts:time=0", "ismcts:depth=1.5", "ismcts:safe=3",
    "ismcts:expand=sideways", "ismcts:widen=-1", "pimc:determinizations=0",
    "pimc:determinizations=50,iterations=10", "cheat:bogus=1",
])
def test_bad_specs_raise_value_error(spec):
    with pytest.raises(ValueError):
        make(spec)


def test_spec_parameters_reach_the_agent():
    agent = make("pimc:determinizations=5,iterations=100,c=0.3,epsilon=1,depth=0")
    settings = agent.settings
    assert (agent.determinizations, agent.iterations, agent.depth) == (5, 100, 0)
    assert (settings.c, settings.epsilon) == (0.3, 1.0)
    assert make("cheat").cheating
    assert not make("ismcts").cheating and not make("pimc").cheating


@pytest.mark.parametrize("spec", ["ismcts:time=0.05,depth=2", "pimc:determinizations=2,iterations=30",
                                  "br:target=greedy,iterations=30"])
def test_a_search_reads_its_budget_from_its_settings_and_warm_up_leaves_them(spec):
    """One source for a search's parameters: the SearchSettings record. The agent keeps no
    copy of its budget or depth that a warm-up could overwrite and forget to restore."""
    agent = make(spec, seed=3)
    settings, rng = agent.settings, agent.rng
    assert not {"iterations", "time", "depth"} & set(vars(agent))
    agent.warm_up()
    assert agent.settings is settings and agent.rng is rng
    assert (agent.iterations, agent.time) == (settings.iterations, settings.time)
    assert agent.depth == settings.rollout_depth(False)


def test_only_cheating_agents_see_the_true_state():
    view = PlayerView(GameState.new(2, seed=1), 0)
    with pytest.raises(PermissionError):
        view.full_state(make("ismcts"))
    assert view.full_state(make("cheat")).deal.tolist() == random_deal(1).tolist()


# --------------------------------------------------------------------------- legal play
@pytest.mark.parametrize("spec", FAST_SPECS)
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_agents_play_only_legal_moves(spec, mode):
    num_players, team = mode
    games = 1 if spec.startswith(("ismcts", "pimc", "cheat")) else 6
    for g in range(games):
        agents = [make(spec, seed=100 * g + s) for s in range(num_players)]
        record = play_game(agents, random_deal(1000 + g), num_players, team)
        assert record.forfeit is None, record.error
        assert replay(record).is_over


def test_search_agents_play_against_each_other_in_every_mode():
    specs = ["ismcts:iterations=50", "pimc:determinizations=2,iterations=40", "cheat:iterations=50", "greedy"]
    for (num_players, team), seed in zip(MODES, range(4)):
        agents = [make(specs[s], seed=s) for s in range(num_players)]
        record = play_game(agents, random_deal(seed), num_players, team)
        assert record.forfeit is None, record.error


# --------------------------------------------------------------------------- greedy
def _minutes_of_each_move(state):
    return {a: state.clone().step(a) for a in state.legal_actions() if a != PASS_ACTION}


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_greedy_always_takes_a_maximal_score_move(num_players):
    rng = np.random.default_rng(num_players)
    greedy = make("greedy")
    policy = make("policy", seed=5)
    checked = 0
    for g in range(25):
        state = GameState.new(num_players, seed=g)
        while not state.is_over:
            view = PlayerView(state, state.current_player)
            minutes = _minutes_of_each_move(state)
            for agent in (greedy, policy):
                action = agent.act(None, view)
                if minutes:
                    assert minutes[action] == max(minutes.values())
                    checked += 1
                else:
                    assert action == PASS_ACTION
            legal = state.legal_actions()
            state.step(legal[rng.integers(len(legal))])  # random positions, not greedy ones
    assert checked > 500


def _threat(after, values):
    """The most minutes any of `values` would score on an open cell of `after`."""
    board = {(c // 7, c % 7): int(v) for c, v in enumerate(after.board.flat) if v}
    caps = after.capacities.flat
    best = 0
    for cell in after.frontier_cells:
        for v in values:
            if v <= caps[cell]:
                probe = GameState.from_position(board, [[v], []], current_player=0)
                best = max(best, probe.step(action_id(cell, v)))
    return best


def _random_midgame(seed, moves, rng):
    """A 2-player game after `moves` random moves: (state, the mover's view, the values
    the mover has not seen)."""
    state = GameState.new(2, seed=seed)
    for _ in range(moves):
        legal = state.legal_actions()
        state.step(legal[rng.integers(len(legal))])
    view = PlayerView(state, state.current_player)
    return state, view, [v + 1 for v, n in enumerate(view.unseen_counts()) if n > 0]


def test_greedy_tie_break_leaves_the_fewest_minutes_open():
    greedy = make("greedy")
    rng = np.random.default_rng(0)
    checked = 0
    for g in range(6):
        state, view, unseen = _random_midgame(50 + g, 2 + 3 * g, rng)
        minutes = _minutes_of_each_move(state)
        top = [a for a, m in minutes.items() if m == max(minutes.values())]
        threats = {}
        for a in top:
            after = state.clone()
            after.step(a)
            threats[a] = _threat(after, unseen)
        action = greedy.act(None, view)
        assert action in top and threats[action] == min(threats.values())
        checked += len(top)
    assert checked >= 10


# --------------------------------------------------------------------------- MCTS positions
def _last_move_position():
    # Row 3: 10 10 at (3,5), (3,6). Seat 0 holds one 4, seat 1 nothing, the bag is empty:
    # only 4 on (3,4) scores (10 + 10 + 4 = 24, 40 minutes), and scoring wins; any other
    # placement ends the game 0 - 0 with no tiles left: a draw.
    board = {(3, 5): 10, (3, 6): 10}
    return GameState.from_position(board, [[4], []], num_players=2, current_player=0)


@pytest.mark.parametrize("spec", ["ismcts:iterations=200", "pimc:determinizations=4,iterations=200",
                                  "cheat:iterations=200", "ismcts:iterations=200,epsilon=1,depth=0"])
def test_mcts_finds_the_winning_last_move(spec):
    state = _last_move_position()
    assert len(state.legal_actions()) > 3
    action = make(spec, seed=0).act(None, PlayerView(state, 0))
    assert action == action_id(cell_of(3, 4), 4)
    state.step(action)
    assert state.is_over and state.rewards().tolist() == [1.0, -1.0]


# --------------------------------------------------------------------------- world sampler
def _sample(state, seat, seed):
    grid, info = state.arrays
    out = GameState(np.empty_like(grid), np.empty_like(info))
    sample_world(grid, info, seat, np.uint64(seed), out.arrays[0], out.arrays[1],
                 np.zeros(SCRATCH_LEN, dtype=np.int64))
    return out


def _all_tiles(state):
    counts = np.zeros(11, dtype=np.int64)
    board = state.board
    for v in board[board > 0]:
        counts[v] += 1
    counts[1:] += state.hands.sum(axis=0)
    for v in [*state.bag, *state.removed]:
        counts[v] += 1
    return counts[1:]


def _mid_game(num_players, team, seed, moves):
    state = GameState.new(num_players, seed=seed, team=team)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        if state.is_over:
            break
        shows = state.show_actions()
        if shows and rng.random() < 0.5:
            state.step(shows[rng.integers(len(shows))])
        legal = state.legal_actions()
        state.step(legal[rng.integers(len(legal))])
    return state


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_sampled_worlds_are_consistent_with_the_observation(mode):
    num_players, team = mode
    for seed in range(12):
        state = _mid_game(num_players, team, seed, moves=seed * 2)
        seat = seed % num_players
        world = _sample(state, seat, seed)
        assert _all_tiles(world).tolist() == [4] * 10
        assert world.hand_sizes.tolist() == state.hand_sizes.tolist()
        assert world.hands[seat].tolist() == state.hands[seat].tolist()
        assert world.board.tolist() == state.board.tolist()
        assert world.bag_size == state.bag_size
        assert world.scores.tolist() == state.scores.tolist()
        assert (world.timeout_cells, world.current_player, world.is_over) == (
            state.timeout_cells, state.current_player, state.is_over)
        if team:
            partner = (seat + 2) % 4
            shown = state.shown_tiles[partner]
            assert world.shown_tiles[partner] == shown
            if shown:
                assert world.hands[partner][shown - 1] >= 1
        # the world plays on like a real game
        world.step(world.legal_actions()[0])


def test_sampled_worlds_vary_with_the_seed():
    state = GameState.new(2, seed=3)
    hands = {tuple(_sample(state, 0, s).hands[1]) for s in range(20)}
    assert len(hands) > 10


def test_sampler_never_reads_hidden_tiles():
    # Two games that differ only in what seat 0 cannot see (seat 1's hand, the bag order,
    # the removed tiles) give identical worlds for the same random stream.
    deal = random_deal(11).astype(np.int64)
    hidden = np.r_[1:4, 4 + 6:40]  # removed, seat 1's hand, the bag
    other = deal.copy()
    other[hidden] = np.random.default_rng(0).permutation(deal[hidden])
    a, b = GameState.from_deal(deal, 2), GameState.from_deal(other, 2)
    assert a.hands[1].tolist() != b.hands[1].tolist()
    for s in range(5):
        wa, wb = _sample(a, 0, s), _sample(b, 0, s)
        assert np.array_equal(wa.arrays[0], wb.arrays[0]) and np.array_equal(wa.arrays[1], wb.arrays[1])
    # mid-game: positions built from the same public facts, different hidden tiles
    board = {(3, 3): 5, (3, 4): 2, (2, 2): 7}
    p = GameState.from_position(board, [[1, 2, 3], [4, 4, 9], [6, 10]], num_players=3, bag=[8, 6, 1])
    q = GameState.from_position(board, [[1, 2, 3], [8, 10, 1], [4, 9]], num_players=3, bag=[6, 4, 6])
    for s in range(5):
        wp, wq = _sample(p, 0, s), _sample(q, 0, s)
        assert np.array_equal(wp.arrays[0], wq.arrays[0]) and np.array_equal(wp.arrays[1], wq.arrays[1])


def test_search_agents_decide_the_same_with_different_hidden_tiles():
    deal = random_deal(21).astype(np.int64)
    hidden = np.r_[1:4, 4 + 6:40]
    other = deal.copy()
    other[hidden] = np.random.default_rng(1).permutation(deal[hidden])
    for spec in ("ismcts:iterations=300", "pimc:determinizations=3,iterations=150"):
        actions = [make(spec, seed=4).act(None, PlayerView(GameState.from_deal(d, 2), 0)) for d in (deal, other)]
        assert actions[0] == actions[1], spec


# --------------------------------------------------------------------------- seeding
@pytest.mark.parametrize("spec", ["random", "ismcts:iterations=50", "pimc:determinizations=2,iterations=40",
                                  "cheat:iterations=40", "policy:epsilon=0.3"])
def test_seeded_agents_reproduce_games(spec):
    def run():
        agents = [make(spec), make("greedy")]
        record = play_game(agents, random_deal(5), 2, seeds=[17, 18])
        assert record.forfeit is None, record.error  # two forfeits on move 1 would also be equal
        return record.actions

    first = run()
    assert run() == first


# --------------------------------------------------------------------------- time budgets
NET = str(Path(__file__).resolve().parent / "fixtures" / "net_2p.pt")  # a small trained network
SHORT, LONG = 0.04, 0.3  # seconds a move may take


def timed_moves(spec: str, view: PlayerView, moves: int = 3) -> tuple[float, int]:
    """(median seconds, median simulations) of `moves` searches of one position by a
    warmed-up agent (the first call may load kernels: not part of a move's budget)."""
    agent = make(spec, seed=0)
    agent.warm_up()
    seconds, simulations = [], []
    for _ in range(moves):
        start = time.perf_counter()
        action = agent.act(None, view)
        seconds.append(time.perf_counter() - start)
        simulations.append(agent.last_iterations)
        assert view.legal_actions().count(action) == 1, spec
    return float(np.median(seconds)), int(np.median(simulations))


@pytest.mark.parametrize("spec", ["ismcts:time={}", "pimc:determinizations=4,time={}", "cheat:time={}",
                                  f"ismcts:net={NET},time={{}}"], ids=["ismcts", "pimc", "cheat", "net"])
def test_a_timed_move_keeps_its_budget_and_more_time_buys_more_simulations(spec):
    """A move with `time` ends close after its budget, having used most of it, and 7.5
    times the time runs well over twice the simulations. Medians of three moves; the
    margins hold on a loaded 2-core machine (a time slice lost to another process only
    makes a move run longer in wall time, by about one scheduler slice)."""
    view = PlayerView(GameState.new(2, seed=2), 0)
    short_seconds, short_simulations = timed_moves(spec.format(SHORT), view)
    long_seconds, long_simulations = timed_moves(spec.format(LONG), view)
    for budget, seconds in ((SHORT, short_seconds), (LONG, long_seconds)):
        assert seconds <= 1.25 * budget + 0.05, (spec, budget, seconds)
    assert long_seconds >= 0.75 * LONG, (spec, long_seconds)
    assert long_simulations > 2 * short_simulations > 0, (spec, short_simulations, long_simulations)


def test_a_team_search_shows_its_partner_a_tile_then_places_what_it_found():
    """In the team variant a search finds its placement, shows a tile it will still hold
    after it (the value scoring on the most open cells after it, ties to the higher), then
    places; the partner sees the tile; next turn it keeps the show while it holds the
    value. At 2 players nothing is shown."""
    from agents.policy_kernels import scoring_cells

    state = GameState.new(4, seed=4, team=True)
    agent = make("ismcts:iterations=50", seed=0)
    agent.reset(0, 4, True)
    found = make("ismcts:iterations=50", seed=0).act_with_visits(PlayerView(state, 0))[0]
    show = agent.act(None, PlayerView(state, 0))
    assert show in state.show_actions()
    value = show - rules.SHOW_BASE + 1
    left = state.hands[0].copy()
    left[rules.decode_action(found)[1] - 1] -= 1
    after = state.clone()
    after.step(found)
    counts = np.zeros(rules.MAX_VALUE + 1, dtype=np.int64)
    scoring_cells(*after.arrays, counts)
    held = [v + 1 for v in range(rules.MAX_VALUE) if left[v] > 0]
    assert left[value - 1] > 0 and (counts[value], value) == max((counts[v], v) for v in held)
    state.step(show)
    placed = agent.act(None, PlayerView(state, 0))
    assert placed == found and state.is_legal(placed)
    state.step(placed)
    assert PlayerView(state, 2).partner_shown == value and PlayerView(state, 1).partner_shown == 0
    assert f"shows: {value}" in render.board_text(PlayerView(state, 2))  # a human partner sees it
    while state.current_player != 0:
        state.step(state.legal_actions()[0])
    view = PlayerView(state, 0)
    assert state.hands[0][value - 1] > 0
    keep = [a for a in state.legal_actions() if a < rules.PASS_ACTION and rules.decode_action(a)[1] != value]
    assert keep and agent.show_before(view, keep[0]) is None  # it still holds the value: the show stays
    two = GameState.new(2, seed=4)
    action = make("ismcts:iterations=50", seed=0).act(None, PlayerView(two, 0))
    assert action < rules.PASS_ACTION and two.is_legal(action)


def _scoring_cells_by_reference(state, values) -> Counter:
    """For each value, the open cells where a tile of it would score on `state`'s board:
    the plain-Python reference engine, set up with that board and a hand holding the
    value, plays every legal placement of it on a copy and reads the minutes."""
    from engine.reference import ReferenceGame

    board = {divmod(cell, rules.BOARD_SIZE): int(v) for cell, v in enumerate(np.asarray(state.board).ravel()) if v}
    found = Counter()
    for v in values:
        game = ReferenceGame.from_position(board, [[v], [], [], []], team=True,
                                           timeout_cells=list(state.timeout_cells))
        found[v] = sum(game.clone().step(a) > 0 for a in game.legal_actions() if a < rules.PASS_ACTION)
    return found


def test_scoring_cells_counts_where_each_value_would_score():
    from agents.policy_kernels import scoring_cells

    checked = 0
    for seed in range(12):
        state = GameState.new(4, seed=seed, team=True)
        while not state.is_over:
            counts = np.zeros(rules.MAX_VALUE + 1, dtype=np.int64)
            scoring_cells(*state.arrays, counts)
            held = [v + 1 for v in range(rules.MAX_VALUE) if state.hands[state.current_player][v]]
            by_reference = _scoring_cells_by_reference(state, held)
            assert [int(counts[v]) for v in held] == [by_reference[v] for v in held], (seed, state.turn)
            checked += sum(by_reference.values())
            state.step(state.legal_actions()[0])
    assert checked > 500  # many scoring cells seen, not only empty counts


def test_a_search_shows_the_value_that_scores_on_the_most_cells():
    """Along whole team games: before each placement the value shown is, of those held
    after it, the one that would score on the most open cells of the board after it (the
    reference engine's count), ties to the higher. Several shows differ from simply the
    highest value held, so the rule is seen at work."""
    agent = make("ismcts:iterations=2", seed=0)
    shows = not_highest = 0
    for seed in range(4):
        state = GameState.new(4, seed=seed, team=True)
        while not state.is_over:
            seat = state.current_player
            placements = [a for a in state.legal_actions() if a < rules.PASS_ACTION]
            if placements:
                action = placements[len(placements) // 2]
                agent.reset(seat, 4, True)  # no show kept from before
                show = agent.show_before(PlayerView(state, seat), action)
                after = state.clone()
                after.step(action)
                held = [a - rules.SHOW_BASE + 1 for a in state.show_actions()]
                held = [v for v in held if after.hands[seat][v - 1] > 0]
                if held:
                    counts = _scoring_cells_by_reference(after, held)
                    expected = max(held, key=lambda v: (counts[v], v))
                    assert show == rules.show_action(expected), (seed, state.turn, dict(counts))
                    shows += 1
                    not_highest += expected != max(held)
                else:
                    assert show is None
            state.step(state.legal_actions()[0])
    assert shows > 50 and not_highest >= 5, (shows, not_highest)


# --------------------------------------------------------------------------- strength (slow)
def _duplicate_score(spec_a, spec_b, deals, seed=0):
    score = 0.0
    for i in range(deals):
        deal = random_deal(seed + i)
        for a_seat in (0, 1):
            agents = [make(spec_a), make(spec_b)] if a_seat == 0 else [make(spec_b), make(spec_a)]
            record = play_game(agents, deal, 2, seeds=[i, i + 1])
            assert record.forfeit is None
            r = record.rewards[a_seat]
            score += 1.0 if r > 0 else 0.5 if r == 0 else 0.0
    return score / (2 * deals)


def _expected_best_reply(after, unseen_tiles, held):
    """E[the most minutes the next seat scores with one placement on `after`] when its
    hand is `held` tiles drawn uniformly from `unseen_tiles`: every hand enumerated."""
    best = {v: _threat(after, [v]) for v in set(unseen_tiles)}
    hands = list(itertools.combinations(range(len(unseen_tiles)), held))
    return sum(max(best[unseen_tiles[i]] for i in hand) for hand in hands) / len(hands)


def test_expected_exposure_is_the_next_seats_expected_best_reply():
    """The ``expected`` exposure of each move, against every hand the next seat may hold
    enumerated, in late positions (few unseen tiles) and with hands of 1 to 6 tiles; the
    ``outlook`` is that less FOLLOW_UP x the most the mover's remaining tiles score after it."""
    from agents.networks.features import FOLLOW_UP, exposure

    rng = np.random.default_rng(2)
    checked = 0
    for g, moves in enumerate((16, 24, 27, 30, 34)):
        state, view, _ = _random_midgame(90 + g, moves, rng)
        if state.is_over:
            continue
        grid, info = view.public_arrays()
        expected = exposure(grid, info, kind="expected")
        outlook = exposure(grid, info, kind="outlook")
        worst = exposure(grid, info)
        hand = view.hand
        counts = view.unseen_counts()
        unseen_tiles = [v + 1 for v, n in enumerate(counts) for _ in range(n)]
        held = min(int(state.hand_sizes[1 - view.seat]), len(unseen_tiles))
        legal = [a for a in state.legal_actions() if a != PASS_ACTION]
        for a in legal[::5]:
            after = state.clone()
            after.step(a)
            reply = _expected_best_reply(after, unseen_tiles, held)
            assert expected[a] * 100 == pytest.approx(reply), a
            kept = [v + 1 for v, n in enumerate(hand) if n - (v + 1 == a % 10 + 1) > 0]
            assert outlook[a] * 100 == pytest.approx(reply - FOLLOW_UP * _threat(after, kept)), a
            checked += 1
        assert (expected <= worst + 1e-6).all()
        illegal = np.ones(rules.NUM_PLACEMENT_ACTIONS, dtype=bool)
        illegal[legal] = False
        assert not expected[illegal].any() and not outlook[illegal].any()
    assert checked >= 10
    with pytest.raises(ValueError, match="exposure kind"):
        exposure(grid, info, kind="mean")


@pytest.mark.slow
def test_greedy_beats_random():
    assert _duplicate_score("greedy", "random", 50) >= 0.97


@pytest.mark.slow
def test_ismcts_beats_greedy():
    assert _duplicate_score("ismcts:iterations=1000", "greedy", 25, seed=7000) >= 0.65


def test_exposure_features_are_the_minutes_each_move_leaves_open():
    from agents.networks.features import exposure

    rng = np.random.default_rng(1)
    checked = 0
    for g in range(4):
        state, view, unseen = _random_midgame(70 + g, 3 + 4 * g, rng)
        features = exposure(*view.public_arrays())
        legal = [a for a in state.legal_actions() if a != PASS_ACTION]
        for a in legal[::9]:  # every 9th move: ~40 checks; each probes every open cell and value
            after = state.clone()
            after.step(a)
            assert features[a] * 100 == pytest.approx(_threat(after, unseen)), a
            checked += 1
        illegal = np.ones(rules.NUM_PLACEMENT_ACTIONS, dtype=bool)
        illegal[legal] = False
        assert not features[illegal].any()
    assert checked >= 20
