"""The OpenSpiel adapter (env.openspiel) and OpenSpiel's bots behind our agent interface
(agents.openspiel_bots): OpenSpiel's own random-simulation test, agreement with the
engine, what each seat's strings and tensors reveal, resampling, and the bots playing."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", exc_type=ImportError)

from agents import check_spec, make  # noqa: E402
from agents.base import BUILTIN_MODULES  # noqa: E402
from agents.play import play_game  # noqa: E402
from engine import GameState, random_deal, rules  # noqa: E402
from env import openspiel as adapter  # noqa: E402

CONFIGS = [{"players": 2}, {"players": 3}, {"players": 4}, {"players": 4, "team": True}]
IDS = ["2p", "3p", "4p", "team"]
SAMPLER = pyspiel.UniformProbabilitySampler(0.0, 1.0)


def load(params):
    return pyspiel.load_game(adapter.GAME_NAME, params)


def random_step(state, rng) -> None:
    if state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        state.apply_action(int(rng.choice(outcomes, p=probs)))
    else:
        state.apply_action(int(rng.choice(state.legal_actions())))


def play_to_end(state, rng):
    while not state.is_terminal():
        random_step(state, rng)
    return state


def test_load_with_parameters_and_game_info():
    game = pyspiel.load_game(adapter.GAME_NAME, {"players": 4, "team": True})
    assert game.num_players() == 4 and game.num_distinct_actions() == rules.NUM_TEAM_ACTIONS
    assert game.max_chance_outcomes() == rules.MAX_VALUE
    default = pyspiel.load_game(adapter.GAME_NAME)
    assert default.num_players() == 2 and default.num_distinct_actions() == rules.NUM_ACTIONS
    kind = default.get_type()
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL


@pytest.mark.parametrize("params", [{"players": 5}, {"players": 1}, {"players": 2, "team": True},
                                    {"players": 3, "team": True}])
def test_bad_parameters_are_refused(params):
    with pytest.raises((ValueError, pyspiel.SpielError), match="players|team"):
        load(params)


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_openspiel_random_sim_test(params):
    pyspiel.random_sim_test(load(params), num_sims=2, serialize=True, verbose=False)


def test_chance_outcomes_are_the_copies_left():
    state = load({}).new_initial_state()
    assert state.chance_outcomes() == [(v, 0.1) for v in range(10)]
    state.apply_action(4)  # the start tile is a 5
    probs = dict(state.chance_outcomes())
    assert probs[4] == pytest.approx(3 / 39) and probs[0] == pytest.approx(4 / 39)
    with pytest.raises((ValueError, RuntimeError)):
        state.apply_action(10)


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_play_matches_the_engine(params):
    """The chance outcomes in order are a deal; the engine playing that deal with the
    same decisions agrees on every legal set, the scores and the returns."""
    rng = np.random.default_rng(7)
    state = load(params).new_initial_state()
    decisions = []
    while not state.is_terminal():
        if not state.is_chance_node():
            decisions.append((state.current_player(), state.legal_actions()))
        random_step(state, rng)
    events = state._events
    drawn = [v for kind, _, v in events if kind in ("deal", "draw")]
    left = [v + 1 for v in range(10) for _ in range(state._pool[v])]
    game = GameState.from_deal(drawn + left, params["players"], params.get("team", False))
    actions = [v for kind, _, v in events if kind == "act"]
    for (seat, legal), action in zip(decisions, actions):
        assert game.current_player == seat
        assert legal == sorted(game.legal_actions() + game.show_actions())
        game.step(action)
    assert game.is_over
    assert state.returns() == pytest.approx(game.rewards().tolist())
    assert sum(state.returns()) == pytest.approx(0.0)


def two_deals_differing_for_seat_1():
    """Two deals alike for seat 0 (start tile, its hand, the bag) whose removed tiles and
    seat 1 hand differ."""
    for seed in range(12, 200):
        deal = random_deal(seed)
        removed, hand1 = deal[1:4], deal[10:16]
        if set(removed.tolist()) - set(hand1.tolist()):
            break
    other = deal.copy()
    v = next(x for x in deal[1:4] if x not in deal[10:16])
    i = 1 + int(np.flatnonzero(deal[1:4] == v)[0])
    other[i], other[10] = deal[10], deal[i]
    return deal, other


def state_from_deal(game, deal, decisions=0):
    """Deal `deal` through the chance nodes, then make `decisions` first-legal moves."""
    state = game.new_initial_state()
    k = 0
    while state.is_chance_node() and state._game is None:
        state.apply_action(int(deal[k]) - 1)
        k += 1
    order = list(deal[k:])
    while decisions and not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(int(order.pop(0)) - 1)
        else:
            state.apply_action(state.legal_actions()[0])
            decisions -= 1
    while state.is_chance_node():
        state.apply_action(int(order.pop(0)) - 1)
    return state


def test_strings_and_tensors_hide_what_a_seat_may_not_see():
    game = load({})
    a_deal, b_deal = two_deals_differing_for_seat_1()
    for decisions in (0, 1):
        a, b = state_from_deal(game, a_deal, decisions), state_from_deal(game, b_deal, decisions)
        assert a.information_state_string(0) == b.information_state_string(0)
        assert a.observation_string(0) == b.observation_string(0)
        assert a.observation_tensor(0) == b.observation_tensor(0)
        assert a.information_state_tensor(0) == b.information_state_tensor(0)
        assert a.information_state_string(1) != b.information_state_string(1)
        assert a.observation_string(1) != b.observation_string(1)


def team_states_after_two_shows():
    """Two team games alike but for the value seat 0 shows its partner."""
    game = load({"players": 4, "team": True})
    rng = np.random.default_rng(3)
    while True:
        base = game.new_initial_state()
        while base.is_chance_node():
            random_step(base, rng)
        shows = [a for a in base.legal_actions() if a >= rules.SHOW_BASE]
        if len(shows) >= 2:
            break
    states = []
    for show in shows[:2]:
        s = base.clone()
        s.apply_action(show)
        states.append(s)
    return states


def test_a_team_show_is_seen_by_the_partner_only():
    a, b = team_states_after_two_shows()
    for seat in (1, 3):
        assert a.information_state_string(seat) == b.information_state_string(seat)
        assert a.observation_string(seat) == b.observation_string(seat)
        assert a.observation_tensor(seat) == b.observation_tensor(seat)
        assert a.information_state_tensor(seat) == b.information_state_tensor(seat)
    assert a.information_state_string(2) != b.information_state_string(2)
    assert a.observation_tensor(2) != b.observation_tensor(2)
    assert a.information_state_tensor(2) != b.information_state_tensor(2)


def public_facts(state, player):
    game = state._game
    return (game.board.tolist(), game.scores.tolist(), game.hand_sizes.tolist(), game.bag_size,
            game.hands[player].tolist(), game.timeout_cells, game.turn, game.current_player,
            state.current_player(), len(state.history()), state._pending)


@pytest.mark.parametrize("params", CONFIGS, ids=IDS)
def test_resampled_states_share_the_information_state(params):
    game = load(params)
    rng = np.random.default_rng(5)
    state = game.new_initial_state()
    checked = differed = 0
    step = 0
    while not state.is_terminal():
        if state.is_chance_node() or step % 7:
            random_step(state, rng)
            step += not state.is_chance_node()
            continue
        step += 1
        for player in range(game.num_players()):
            key = state.information_state_string(player)
            for _ in range(2):
                world = state.resample_from_infostate(player, SAMPLER)
                assert world.information_state_string(player) == key
                assert world.observation_string(player) == state.observation_string(player)
                assert world.observation_tensor(player) == state.observation_tensor(player)
                assert world.information_state_tensor(player) == state.information_state_tensor(player)
                assert public_facts(world, player) == public_facts(state, player)
                assert world.legal_actions() == state.legal_actions() or world.current_player() != player
                differed += world._game.hands.tolist() != state._game.hands.tolist()
                checked += 1
                if state._team:  # the partner still shows what it showed
                    partner = rules.partner(player)
                    assert world._game.shown_tiles[partner] == state._game.shown_tiles[partner]
        random_step(state, rng)
    assert checked >= 8 and differed > checked // 2


def test_resampling_during_the_deal_and_bad_player():
    state = load({"players": 3}).new_initial_state()
    for v in [3, 1, 2, 3, 4, 5, 6, 7, 8]:
        state.apply_action(v)
    hidden = sorted(v for kind, owner, v in state._events if owner not in (-1, 1))
    redealt = []
    for _ in range(10):
        world = state.resample_from_infostate(1, SAMPLER)
        assert world.information_state_string(1) == state.information_state_string(1)
        redealt.append(sorted(v for kind, owner, v in world._events if owner not in (-1, 1)))
    assert any(r != hidden for r in redealt)  # drawn from every unseen tile, not permuted
    with pytest.raises(ValueError, match="player"):
        state.resample_from_infostate(3, SAMPLER)


def test_state_at_a_position_and_its_resampling():
    game = load({})
    position = GameState.new(2, seed=4)
    position.step(position.legal_actions()[0])
    state = adapter.state_at(game, position)
    assert state.current_player() == position.current_player == 1
    assert state.legal_actions() == position.legal_actions()
    world = state.resample_from_infostate(1, SAMPLER)
    assert world.information_state_string(1) == state.information_state_string(1)
    assert world._game.hands[1].tolist() == position.hands[1].tolist()
    with pytest.raises(ValueError, match="players"):
        adapter.state_at(load({"players": 3}), position)
    with pytest.raises(TypeError):
        adapter.state_at(game, "not a position")


def test_python_ismcts_bot_plays_on_the_full_game():
    from open_spiel.python.algorithms import ismcts, mcts

    game = load({})
    rs = np.random.RandomState(0)
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rs), 2.0, 8, random_state=rs,
                           allow_inconsistent_action_sets=True)
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    for _ in range(3):
        while state.is_chance_node():
            random_step(state, rng)
        action = bot.step(state)
        assert action in state.legal_actions()
        state.apply_action(action)


def test_openspiel_agents_are_registered_and_checked():
    assert {"openspiel-ismcts", "openspiel-mcts"} <= set(BUILTIN_MODULES)  # make finds them unaided
    check_spec("openspiel-ismcts:simulations=100,time=0.5")
    for bad in ("openspiel-ismcts:simulations=1", "openspiel-mcts:rollouts=0", "openspiel-ismcts:time=0",
                "openspiel-mcts:depth=3"):
        with pytest.raises(ValueError):
            check_spec(bad)
    assert make("openspiel-mcts").cheating and not make("openspiel-ismcts").cheating


@pytest.mark.parametrize("specs, players, team", [
    (["openspiel-ismcts:simulations=4", "random"], 2, False),
    (["openspiel-mcts:simulations=4", "random", "openspiel-ismcts:time=0.001", "random"], 4, True),
])
def test_openspiel_agents_play_whole_games(specs, players, team):
    agents = [make(spec, seed=i) for i, spec in enumerate(specs)]
    record = play_game(agents, random_deal(9), players, team)
    assert record.error is None and record.forfeit is None
    assert sum(record.rewards) == pytest.approx(0.0)
