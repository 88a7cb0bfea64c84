"""Environment tests: the observation encoding (layout, content, no hidden information),
the PettingZoo AEC env (api_test, seed_test, rewards, passing, bad input, team variant,
rendering) and the single-agent Gymnasium env (check_env, make, seeding, opponents,
illegal actions)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

import env as env_pkg
from engine import GameState, random_deal, rules
from engine.determinize import unseen_counts
from engine.view import PlayerView
from env import observation as O
from env import render

CONFIGS = [dict(num_players=2), dict(num_players=3), dict(num_players=4),
           dict(num_players=4, team=True)]
CONFIG_IDS = ["2p", "3p", "4p", "team"]


def random_moves(game: GameState, count: int, rng: np.random.Generator, shows: bool = False) -> None:
    """Play `count` uniformly random legal actions (placements/pass; shows if asked)."""
    for _ in range(count):
        if game.is_over:
            return
        mask = game.legal_action_mask()
        if not shows:
            mask[rules.SHOW_BASE:] = False
        legal = np.flatnonzero(mask)
        game.step(int(legal[rng.integers(len(legal))]))


# --- observation -----------------------------------------------------------------------------
def test_layout_constants():
    assert O.PLANE_SHAPE == (O.NUM_PLANES, 7, 7)
    assert O.OBS_SIZE == O.NUM_PLANES * 49 + O.NUM_VECTOR_FEATURES
    assert O.V_OVER == O.NUM_VECTOR_FEATURES - 1
    obs = np.arange(3 * O.OBS_SIZE, dtype=np.float32).reshape(3, O.OBS_SIZE)
    planes, vec = O.split(obs)
    assert planes.shape == (3, *O.PLANE_SHAPE) and vec.shape == (3, O.NUM_VECTOR_FEATURES)
    assert planes[1, 2, 3, 4] == obs[1, 2 * 49 + 3 * 7 + 4]
    assert vec[2, 0] == obs[2, O.PLANES_SIZE]
    with pytest.raises(ValueError):
        O.split(np.zeros(10))


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_points_planes_give_what_each_placement_scores(num_players):
    """P_POINTS + v - 1 holds, for the seat to move, the minutes every legal placement of v
    scores (played out on a copy of the game) / 100, and 0 on every other cell."""
    rng = np.random.default_rng(num_players)
    scoring = 0
    for seed in range(6):
        game = GameState.new(num_players, seed=seed)
        while not game.is_over:
            planes, _ = O.split(O.encode(game, game.current_player))
            expected = np.zeros((rules.MAX_VALUE, 49), dtype=np.float32)
            for action in game.legal_actions():
                if action < rules.PASS_ACTION:
                    cell, v = divmod(action, rules.MAX_VALUE)
                    expected[v, cell] = game.clone().step(action) / O.POINTS_SCALE
            np.testing.assert_array_equal(planes[O.P_POINTS:O.P_POINTS + 10].reshape(10, 49), expected)
            scoring += int((expected > 0).sum())
            random_moves(game, 1, rng)
    assert scoring > 100  # the games really met scoring placements


@pytest.mark.parametrize("cfg", CONFIGS, ids=CONFIG_IDS)
def test_encode_matches_state(cfg):
    rng = np.random.default_rng(3)
    game = GameState.new(seed=11, **cfg)
    random_moves(game, 14, rng, shows=True)
    n = game.num_players
    for seat in range(n):
        obs = O.encode(game, seat)
        assert obs.dtype == np.float32 and obs.shape == (O.OBS_SIZE,)
        assert np.all(obs >= O.OBS_LOW) and np.all(obs <= O.OBS_HIGH)
        d = O.describe(obs)
        planes, vec = O.split(obs)
        np.testing.assert_array_equal(d["board"], game.board)
        timeout = np.zeros(49, bool)
        timeout[game.timeout_cells] = True
        np.testing.assert_array_equal(d["timeout"].ravel(), timeout)
        opened = np.zeros(49, bool)
        opened[game.frontier_cells] = True
        np.testing.assert_array_equal(d["open"].ravel(), opened)
        np.testing.assert_array_equal(d["capacity"], game.capacities)
        empty = (game.board.ravel() == 0) & ~timeout
        np.testing.assert_array_equal(planes[O.P_EMPTY].ravel().astype(bool), empty)
        dt = np.zeros(49)
        dt[list(rules.DOUBLE_TIME_CELLS)] = 1
        np.testing.assert_array_equal(planes[O.P_DOUBLE].ravel(), dt)
        np.testing.assert_array_equal(d["hand"], game.hands[seat])
        np.testing.assert_array_equal(d["unseen"], unseen_counts(game, seat))
        rot = [(seat + k) % n for k in range(n)]
        np.testing.assert_array_equal(d["scores"][:n], game.scores[rot])
        np.testing.assert_array_equal(d["hand_sizes"][:n], game.hand_sizes[rot])
        assert np.all(d["scores"][n:] == 0)
        np.testing.assert_allclose(vec[O.V_SCORE_DIFF:O.V_SCORE_DIFF + n - 1],
                                   (game.scores[rot[1:]] - game.scores[seat]) / 100, rtol=1e-6)
        assert d["bag"] == game.bag_size and d["turn"] == game.turn and d["seat"] == seat
        assert d["to_move"] == (seat == game.current_player)
        assert vec[O.V_NUM_PLAYERS + n - 2] == 1 and vec[O.V_TEAM] == game.team
        last = game.last_action
        if 0 <= last < rules.PASS_ACTION:
            assert planes[O.P_LAST].ravel()[last // 10] == 1 and planes[O.P_LAST].sum() == 1


def test_partner_shown_tile_in_team_observation():
    game = GameState.new(4, seed=5, team=True)
    v = int(np.flatnonzero(game.hands[0])[0]) + 1
    game.step(rules.show_action(v))
    partner = O.split(O.encode(game, 2))[1]
    assert partner[O.V_PARTNER_SHOWN + v - 1] == 1
    mover = O.split(O.encode(game, 0))[1]
    assert mover[O.V_OWN_SHOWN + v - 1] == 1 and mover[O.V_SHOWN_THIS_TURN] == 1
    np.testing.assert_array_equal(O.describe(O.encode(game, 2))["unseen"], unseen_counts(game, 2))
    for opponent in (1, 3):  # opponents see nothing of the shown value
        vec = O.split(O.encode(game, opponent))[1]
        assert vec[O.V_PARTNER_SHOWN:O.V_OWN_SHOWN + 10].sum() == 0


# --- hidden information ---------------------------------------------------------------------
def test_hidden_information_does_not_leak_at_deal():
    """Seat 0's observation ignores the opponent's hand, the bag order and the removed tiles."""
    rng = np.random.default_rng(0)
    base = random_deal(42)
    hidden = np.r_[1:4, 10:40]  # removed tiles, seat 1's hand, the bag (2 players)
    for _ in range(10):
        deal = base.copy()
        deal[hidden] = rng.permutation(deal[hidden])
        assert sorted(deal) == sorted(base) and not np.array_equal(deal, base)
        a, b = GameState.from_deal(base, 2), GameState.from_deal(deal, 2)
        np.testing.assert_array_equal(O.encode(a, 0), O.encode(b, 0))


def test_hidden_information_does_not_leak_during_play():
    """Same public play, different hidden tiles (removed tiles and bag tail swapped):
    the observations of the seat whose hand agrees stay identical move after move."""
    base = random_deal(7)
    deal = base.copy()
    tail = np.r_[1:4, 32:40]  # removed tiles and the bag tail nobody draws in 8 moves each
    deal[tail] = np.random.default_rng(1).permutation(deal[tail])
    deal[[1, 39]] = deal[[39, 1]]
    a, b = GameState.from_deal(base, 2), GameState.from_deal(deal, 2)
    assert not np.array_equal(a.deal, b.deal)
    rng = np.random.default_rng(2)
    for _ in range(16):
        np.testing.assert_array_equal(O.encode(a, 0), O.encode(b, 0))
        np.testing.assert_array_equal(O.encode(a, 1), O.encode(b, 1))
        legal = a.legal_actions()
        action = legal[rng.integers(len(legal))]
        a.step(action)
        b.step(action)


def test_opponent_show_is_not_visible():
    """Team variant: an opponent showing its partner a tile changes nothing for me."""
    deal = random_deal(3)
    shown, plain = GameState.from_deal(deal, 4, team=True), GameState.from_deal(deal, 4, team=True)
    first = shown.legal_actions()[0]
    for g in (shown, plain):
        g.step(first)  # seat 0 places; seat 1 to move
    v = int(np.flatnonzero(shown.hands[1])[-1]) + 1
    shown.step(rules.show_action(v))
    placement = next(a for a in shown.legal_actions() if a % 10 + 1 != v)
    shown.step(placement)
    plain.step(placement)
    for seat in (0, 2):
        np.testing.assert_array_equal(O.encode(shown, seat), O.encode(plain, seat))
    assert not np.array_equal(O.encode(shown, 3), O.encode(plain, 3))


def hidden_positions(num_players: int, seat: int, keep=()) -> np.ndarray:
    """Deal positions (docs/rules.md, "The deal convention") hidden from `seat` at the
    start: the 3 removed tiles, every other seat's hand and the bag; minus `keep`."""
    size = rules.hand_size(num_players)
    own = range(4 + seat * size, 4 + (seat + 1) * size)
    return np.array([i for i in range(1, rules.NUM_TILES) if i not in own and i not in keep])


@pytest.mark.parametrize("cfg", CONFIGS, ids=CONFIG_IDS)
def test_no_seat_sees_the_other_hands_at_the_deal(cfg):
    """Every seat's first observation is the same whatever the tiles it cannot see: the
    removed tiles, every other hand and the bag, shuffled together in 10 ways."""
    n = cfg["num_players"]
    rng = np.random.default_rng(n)
    base = random_deal(40 + n)
    for seat in range(n):
        hidden = hidden_positions(n, seat)
        for _ in range(10):
            deal = base.copy()
            deal[hidden] = rng.permutation(deal[hidden])
            assert not np.array_equal(deal, base)
            a, b = GameState.from_deal(base, **cfg), GameState.from_deal(deal, **cfg)
            assert not all(np.array_equal(a.hands[s], b.hands[s]) for s in range(n) if s != seat)
            np.testing.assert_array_equal(O.encode(a, seat), O.encode(b, seat))


def test_the_shown_tile_is_all_a_partner_sees_of_a_hand():
    """Team variant: seat 0 shows seat 2 one tile. Every seat's observation is the same
    whatever else seat 0 holds (and whatever the other hidden tiles are): its partner sees
    the shown value and nothing more of its hand, the opponents not even that."""
    rng = np.random.default_rng(5)
    base = random_deal(44)
    size = rules.hand_size(4)
    shown_at = 4 + size - 1  # the last tile of seat 0's hand (deal positions 4-8): the one it shows
    show = rules.show_action(int(base[shown_at]))
    for seat in range(4):
        hidden = hidden_positions(4, seat, keep=(shown_at,))  # seat 0 must still hold the shown value
        for _ in range(10):
            deal = base.copy()
            deal[hidden] = rng.permutation(deal[hidden])
            a, b = GameState.from_deal(base, 4, team=True), GameState.from_deal(deal, 4, team=True)
            if seat != 0:
                assert not np.array_equal(a.hands[0], b.hands[0])  # seat 0 holds other tiles
            a.step(show)
            b.step(show)
            np.testing.assert_array_equal(O.encode(a, seat), O.encode(b, seat))
    assert PlayerView(a, 2).partner_shown == int(base[shown_at])


@pytest.mark.parametrize("cfg", CONFIGS[1:], ids=CONFIG_IDS[1:])
def test_no_seat_sees_the_other_hands_during_play(cfg):
    """3-4 players and teams, positions met after random play (shows included): every
    world consistent with what a seat knows (engine.determinize: the other hands, the
    bag and the removed tiles redealt; a partner's shown tile kept) gives that seat the
    same observation as the real game, and the worlds really differ in the other hands."""
    n = cfg["num_players"]
    rng = np.random.default_rng(10 + n)
    checked_shows = 0
    for seed in range(3):
        game = GameState.new(seed=seed, **cfg)
        for moves in (4, 10, 16):
            random_moves(game, moves - game.turn, rng, shows=True)
            if game.team and game.show_actions():
                game.step(game.show_actions()[0])  # the mover's partner sees a shown tile now
            for seat in range(n):
                view = PlayerView(game, seat)
                checked_shows += bool(view.partner_shown)
                differ = False
                for _ in range(4):
                    world = view.sample_world(rng)
                    np.testing.assert_array_equal(O.encode(world, seat), O.encode(game, seat))
                    differ |= any(not np.array_equal(world.hands[s], game.hands[s]) for s in range(n) if s != seat)
                assert differ, (seed, moves, seat)
    assert checked_shows > 0 or not cfg.get("team")


# --- PettingZoo AEC ------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", CONFIGS, ids=CONFIG_IDS)
def test_pettingzoo_api_and_seed(cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(env_pkg.env(**cfg), num_cycles=1000)
        api_test(env_pkg.raw_env(**cfg), num_cycles=1000)
        seed_test(lambda: env_pkg.env(**cfg), num_cycles=500)


def play_aec(e, rng, seed=None, options=None):
    """Play one game with random legal actions; return (cumulative rewards, steps)."""
    e.reset(seed=seed, options=options)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    steps = 0
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        totals[agent] += reward
        if term or trunc:
            e.step(None)
            continue
        mask = obs["action_mask"]
        assert mask.dtype == np.int8 and mask.any()
        for other in e.possible_agents:
            if other != agent:
                assert not e.observe(other)["action_mask"].any()
        legal = np.flatnonzero(mask)
        e.step(int(legal[rng.integers(len(legal))]))
        steps += 1
    return totals, steps


def test_aec_rewards_at_the_end_match_engine():
    e = env_pkg.raw_env(num_players=3)
    rng = np.random.default_rng(0)
    deal = random_deal(9)
    e.reset(options={"deal": deal})
    np.testing.assert_array_equal(e.game.deal, deal)
    game = GameState.from_deal(deal, 3)
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        if term:
            assert reward == pytest.approx(game.rewards()[e.agent_name_mapping[agent]])
            e.step(None)
            continue
        assert reward == 0 and not trunc
        np.testing.assert_array_equal(obs["observation"], O.encode(game, game.current_player))
        legal = np.flatnonzero(obs["action_mask"])
        action = int(legal[rng.integers(len(legal))])
        points = game.step(action)
        e.step(action)
        assert e.infos[agent]["points"] == points
    assert game.is_over and e.agents == []


def test_aec_seeding_and_deal_option():
    a, b = env_pkg.raw_env(), env_pkg.raw_env()
    a.reset(seed=123)
    b.reset(seed=123)
    np.testing.assert_array_equal(a.game.deal, random_deal(123))
    np.testing.assert_array_equal(a.observe("player_0")["observation"], b.observe("player_0")["observation"])
    rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
    assert play_aec(a, rng1, seed=4) == play_aec(b, rng2, seed=4)
    with pytest.raises(ValueError):
        a.reset(options={"deal": [1] * 40})


def test_aec_pass_is_the_only_action_when_nothing_fits():
    e = env_pkg.raw_env()
    rng = np.random.default_rng(1)
    for seed in range(50):
        e.reset(seed=seed)
        for agent in e.agent_iter():
            obs, _, term, _, _ = e.last()
            if term:
                e.step(None)
                continue
            mask = obs["action_mask"]
            if mask[rules.PASS_ACTION]:
                assert np.flatnonzero(mask).tolist() == [rules.PASS_ACTION]
                e.step(rules.PASS_ACTION)
                return
            legal = np.flatnonzero(mask)
            e.step(int(legal[rng.integers(len(legal))]))
    pytest.fail("no forced pass in 50 random games")


def test_aec_illegal_action_raises_and_changes_nothing():
    e = env_pkg.raw_env()
    e.reset(seed=0)
    agent = e.agent_selection
    before = e.observe(agent)["observation"].copy()
    grid, info = (a.copy() for a in e.game.arrays)
    mask = e.observe(agent)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    for bad in (illegal, rules.PASS_ACTION, 495, -1, 10**30, 3.0, "7", None, True):
        with pytest.raises(ValueError, match="legal actions"):
            e.step(bad)
    assert e.agent_selection == agent
    np.testing.assert_array_equal(e.observe(agent)["observation"], before)
    np.testing.assert_array_equal(e.game.arrays[0], grid)
    np.testing.assert_array_equal(e.game.arrays[1], info)
    e.step(np.int32(np.flatnonzero(mask)[0]))  # numpy ints are fine


def test_wrapped_env_conventions():
    e = env_pkg.env()
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before step"):
        e.step(0)  # before reset (OrderEnforcingWrapper)
    e.reset(seed=0)
    agent = e.agent_selection
    mask = e.last()[0]["action_mask"]
    with pytest.raises(AssertionError):
        e.step(rules.NUM_ACTIONS)  # out of range
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(int(np.flatnonzero(mask == 0)[0]))  # illegal: ends the game
    assert all(e.terminations.values())
    assert e.rewards[agent] == -1 and all(r == 0 for a, r in e.rewards.items() if a != agent)
    assert isinstance(e.unwrapped, env_pkg.raw_env)
    assert e.metadata["name"] == "twentyfourseven_v0" and not e.metadata["is_parallelizable"]


def test_spaces_are_the_same_object():
    e = env_pkg.raw_env(num_players=4, team=True)
    for a in e.possible_agents:
        assert e.observation_space(a) is e.observation_space(a)
        assert e.action_space(a) is e.action_space(a)
        assert e.action_space(a).n == rules.NUM_TEAM_ACTIONS
    assert env_pkg.raw_env().action_space("player_0").n == rules.NUM_ACTIONS


def test_team_show_actions():
    e = env_pkg.raw_env(num_players=4, team=True)
    e.reset(seed=2)
    agent = e.agent_selection
    mask = e.observe(agent)["action_mask"]
    shows = np.flatnonzero(mask[rules.SHOW_BASE:]) + 1
    hand = np.flatnonzero(e.game.hands[0]) + 1
    np.testing.assert_array_equal(shows, hand)
    v = int(shows[0])
    e.step(rules.show_action(v))
    assert e.agent_selection == agent  # the same seat still places
    mask = e.observe(agent)["action_mask"]
    assert not mask[rules.SHOW_BASE:].any() and mask[:rules.PASS_ACTION].any()
    vec = O.split(e.observe("player_2")["observation"])[1]
    assert vec[O.V_PARTNER_SHOWN + v - 1] == 1
    assert e.infos[agent]["points"] == 0


def test_render_modes():
    e = env_pkg.raw_env(render_mode="ansi")
    rng = np.random.default_rng(0)
    e.reset(seed=8)
    while not e.game.timeout_cells:
        mask = e.observe(e.agent_selection)["action_mask"]
        legal = np.flatnonzero(mask)
        e.step(int(legal[rng.integers(len(legal))]))
    text = e.render()
    assert text == render.board_text(e.game)  # the one text board (tests/test_text_board.py)
    rows = [line for line in text.splitlines() if line[:5].strip().isdigit()]
    assert len(rows) == 7
    board = "\n".join(rows)
    assert "scores:" in text and "hand of player " in text
    assert board.count("##") == len(e.game.timeout_cells) and board.count("*") == 1
    empty_double = [c for c in rules.DOUBLE_TIME_CELLS
                    if e.game.board.ravel()[c] == 0 and c not in e.game.timeout_cells]
    assert board.count("( .)") == len(empty_double)
    picture = env_pkg.raw_env(render_mode="rgb_array")
    picture.reset(options={"deal": e.game.deal})
    img = picture.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert (img == render.DOUBLE_TINT).all(axis=2).any()
    assert not (img == render.LAST).all(axis=2).any()  # no move yet
    img = render.rgb_array(e.game)
    assert (img == render.LAST).all(axis=2).any() and (img == render.STONE).all(axis=2).any()
    with pytest.raises(ValueError):
        env_pkg.raw_env(render_mode="nope")


# --- Gymnasium single agent -------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [dict(), dict(num_players=3, seat="random"),
                                 dict(num_players=4, team=True, seat=1)], ids=["2p", "3p", "team"])
def test_gym_check_env(cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env_pkg.TwentyFourSevenEnv(**cfg).unwrapped, skip_render_check=True)
        made = gym.make("TwentyFourSeven-v0", **cfg)
        check_env(made.unwrapped, skip_render_check=True)
    assert isinstance(made.unwrapped, env_pkg.TwentyFourSevenEnv)


def play_gym(e, seed, rng):
    obs, info = e.reset(seed=seed)
    trace = [obs["observation"].copy()]
    total = 0.0
    while True:
        assert np.array_equal(obs["action_mask"], info["action_mask"]) and obs["action_mask"].any()
        legal = np.flatnonzero(obs["action_mask"])
        obs, reward, term, trunc, info = e.step(int(legal[rng.integers(len(legal))]))
        trace.append(obs["observation"].copy())
        total += reward
        assert not trunc
        if term:
            return total, trace, e.game


def test_gym_reward_seeding_and_seat():
    e = env_pkg.TwentyFourSevenEnv(num_players=3, seat=2)
    total, trace, game = play_gym(e, 17, np.random.default_rng(0))
    assert game.is_over and total == pytest.approx(game.rewards()[2])
    assert O.describe(trace[0])["seat"] == 2 and O.describe(trace[0])["turn"] == 2
    total2, trace2, _ = play_gym(env_pkg.TwentyFourSevenEnv(num_players=3, seat=2), 17, np.random.default_rng(0))
    assert total2 == total and all(np.array_equal(x, y) for x, y in zip(trace, trace2))
    seats = set()
    r = env_pkg.TwentyFourSevenEnv(seat="random")
    for s in range(12):
        r.reset(seed=s)
        seats.add(r.seat)
    assert seats == {0, 1}


def test_gym_illegal_actions():
    e = env_pkg.TwentyFourSevenEnv()
    obs, _ = e.reset(seed=0)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs2, reward, term, trunc, info = e.step(illegal)
    assert reward == -1 and term and not trunc and info["illegal_action"]
    with pytest.raises(RuntimeError):
        e.step(0)
    strict = env_pkg.TwentyFourSevenEnv(illegal_action="raise")
    obs, _ = strict.reset(seed=0)
    grid = strict.game.arrays[1].copy()
    with pytest.raises(ValueError, match="legal actions"):
        strict.step(illegal)
    np.testing.assert_array_equal(strict.game.arrays[1], grid)
    strict.step(int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(ValueError):
        env_pkg.TwentyFourSevenEnv(illegal_action="ignore")
    with pytest.raises(ValueError):
        env_pkg.TwentyFourSevenEnv(seat=2)


class FirstLegal:
    """A tiny agent: the lowest legal action id (through the PlayerView)."""

    def __init__(self):
        self.resets, self.seen = [], 0

    def reset(self, seat, num_players, team=False):
        self.resets.append(seat)

    def act(self, observation, view):
        assert observation.shape == (O.OBS_SIZE,) and O.describe(observation)["seat"] == view.seat
        self.seen += 1
        return view.legal_actions()[0]


def test_gym_opponents():
    agent = FirstLegal()
    e = env_pkg.TwentyFourSevenEnv(num_players=3, seat=1, opponents=agent)
    play_gym(e, 3, np.random.default_rng(0))
    assert agent.resets == [0, 2] and agent.seen > 0
    calls = []

    def scripted(obs, mask, state):
        calls.append(state.current_player)
        return int(np.flatnonzero(mask)[-1])

    e = env_pkg.TwentyFourSevenEnv(num_players=2, seat=0, opponents=[None, scripted])
    play_gym(e, 4, np.random.default_rng(0))
    assert calls and set(calls) == {1}
    bad = env_pkg.TwentyFourSevenEnv(opponents=lambda obs, mask, state: rules.PASS_ACTION, seat=1)
    with pytest.raises(ValueError, match="opponent"):
        bad.reset(seed=0)


def test_gym_render():
    e = gym.make("TwentyFourSeven-v0", render_mode="rgb_array")
    e.reset(seed=0)
    assert e.render().shape[2] == 3
    t = env_pkg.TwentyFourSevenEnv(render_mode="ansi")
    t.reset(seed=0)
    assert "hand of player 0" in t.render()
