"""The best-response search (`br`, agents.search.best_response) and `evaluate.py exploit`.

The exactness test: endgames small enough to solve (empty bag, at most two tiles a hand),
2 players, the target `greedy` (deterministic) moves first; the exact best response over
every world consistent with the response's view *and* with greedy's move is computed
here by enumeration, and `br` with a generous budget must play a move of the same exact
value in at least 95% of 200 positions.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import agents
from agents.base import parse_spec
from agents.play import play_game
from agents.settings import MARGIN
from engine import GameState, random_deal, rules
from engine.view import PlayerView

BR, TARGET = 0, 1


# --- specs ------------------------------------------------------------------------------------
def test_nested_target_spec_in_brackets():
    name, positional, kwargs = parse_spec("br:target=[ismcts:iterations=200,c=0.4],iterations=50")
    assert (name, positional) == ("br", [])
    assert kwargs == {"target": "ismcts:iterations=200,c=0.4", "iterations": 50}
    agent = agents.make("br:target=[policy:epsilon=0.2,safe=false],iterations=50", seed=0)
    assert agent.target == "policy:epsilon=0.2,safe=false"


@pytest.mark.parametrize("spec, words", [
    ("br:target=[greedy,iterations=50", "never closed"),
    ("br:target=greedy],iterations=50", "closes no"),
    ("br:target=gre[edy],iterations=5", "brackets must enclose"),
    ("br:target=[nosuchagent],iterations=5", "unknown agent"),
    ("br:target=[ismcts:iterations=0]", "positive integer"),
    ("br:iterations=5", "target"),
    ("br:target=greedy,particles=-1", "non-negative"),
    ("br:target=greedy,target_rollout=exact", "target_rollout must be one of"),
])
def test_bad_br_specs_are_refused_clearly(spec, words):
    with pytest.raises(ValueError, match=words):
        agents.make(spec)


# --- the contract -----------------------------------------------------------------------------
def test_br_plays_legal_games_reproducibly_in_every_variant():
    for players, team in ((2, False), (3, False), (4, False), (4, True)):
        seats = [agents.make("br:target=greedy,iterations=30", seed=1)] + \
            [agents.make("greedy") for _ in range(players - 1)]
        if team:
            seats[2] = agents.make("br:target=greedy,iterations=30", seed=2)
        first = play_game(seats, random_deal(5), players, team, seeds=list(range(players)))
        again = play_game(seats, random_deal(5), players, team, seeds=list(range(players)))
        assert first.forfeit is None, first.error
        assert first.actions == again.actions


def test_br_against_a_random_target_a_search_and_an_unmodelled_one():
    for target in ("random", "[ismcts:iterations=20]", "selfplay-afterstate:worlds=2"):
        record = play_game([agents.make(f"br:target={target},iterations=40", seed=3),
                            agents.make(target.strip("[]"), seed=4)], random_deal(9))
        assert record.forfeit is None, record.error


def test_a_search_target_is_modelled_by_its_network():
    """A search has no closed-form policy: its guiding network (or the shipped one of the
    player count) models it, its top move in the tree (deterministic: memoized) and its
    reach at SEARCH_MODEL_TEMPERATURE; an agent with no network model stays unmodelled."""
    from agents.search import br_kernels as bk
    from agents.search.best_response import target_model
    from agents.search.mcts import SEARCH_MODEL_TEMPERATURE

    for spec in ("selfplay:iterations=10", "ismcts:iterations=10", "ismcts:net=models/selfplay_2p.pt,iterations=10"):
        model = target_model(agents.make(spec), 0b10, 2, False)
        assert model.config[bk.CONFIG_KIND] == bk.MODEL_NETWORK, spec
        assert model.reals[bk.REAL_TEMPERATURE] == 0.0
        assert model.reals[bk.REAL_REACH_TEMPERATURE] == SEARCH_MODEL_TEMPERATURE == 1.0
    assert target_model(agents.make("selfplay-afterstate"), 0b10, 2, False).config[bk.CONFIG_KIND] == bk.MODEL_NONE


def test_an_agent_is_modelled_by_what_it_declares_not_by_its_type():
    """A new agent kind needs no edit in the best response: one that declares the greedy
    policy (`Agent.policy_model`) is modelled as greedy, its belief filtered like greedy's;
    one that declares nothing is not modelled; a kind the response does not know is a
    clear error."""
    from agents.base import Agent, PolicyModel
    from agents.search import br_kernels as bk
    from agents.search.best_response import target_model

    class LikeGreedy(Agent):
        def __init__(self, kind="greedy"):
            super().__init__()
            self.kind = kind

        def act(self, observation, view):
            return agents.make("greedy").act(observation, view)

        def policy_model(self, num_players, team):
            return PolicyModel(self.kind)

    assert target_model(LikeGreedy(), 0b10, 2, False).config[bk.CONFIG_KIND] == bk.MODEL_GREEDY
    assert target_model(agents.make("policy:epsilon=0.5"), 0b10, 2, False).config[bk.CONFIG_KIND] == bk.MODEL_POLICY
    with pytest.raises(ValueError, match="declares a policy model of kind 'oracle'"):
        target_model(LikeGreedy("oracle"), 0b10, 2, False)
    assert agents.make("br:target=greedy,iterations=5").policy_model(2, False) is None


def test_br_uses_no_hidden_information():
    """Two positions that differ only in the target's hidden hand: same move, same seed."""
    board = {(3, 3): 5, (3, 4): 2, (2, 3): 9}
    moves = []
    for target_hand in ([1, 6, 8], [10, 10, 4]):
        state = GameState.from_position(board, [[3, 7, 2], target_hand], bag=[1, 2, 3, 4, 5])
        agent = agents.make("br:target=greedy,iterations=200", seed=11)
        agent.reset(BR, 2)
        moves.append(agent.act(None, PlayerView(state, BR)))
    assert moves[0] == moves[1]


def test_the_belief_follows_a_greedy_target():
    """After each of greedy's moves, every surviving guess of its hand (with the placed
    tile put back) makes greedy play the move it played."""
    br = agents.make("br:target=greedy,iterations=20,particles=256", seed=5)
    greedy = agents.make("greedy")
    state = GameState.from_deal(random_deal(21), 2)
    br.reset(BR, 2)
    views = [PlayerView(state, 0), PlayerView(state, 1)]
    checked = 0
    while not state.is_over:
        seat = state.current_player
        action = br.act(None, views[0]) if seat == BR else greedy.act(None, views[1])
        resets = br.belief_resets
        br.observe_action(views[BR], seat, action)
        if seat == TARGET and action < rules.PASS_ACTION and br.belief_resets == resets:
            board = {divmod(c, 7): int(v) for c, v in enumerate(state.board.ravel()) if v}
            mine = list(np.repeat(np.arange(1, 11), state.hands[BR]))
            for hand in br._hands[br._weights > 0][:16]:
                guess = list(np.repeat(np.arange(1, 11), hand[TARGET, 1:])) + [rules.decode_action(action)[1]]
                probe = GameState.from_position(board, [mine, guess], current_player=TARGET)
                assert greedy.act(None, PlayerView(probe, TARGET)) == action
                checked += 1
        state.step(action)
    assert checked > 50


def test_the_four_player_belief_keeps_its_guesses_consistent():
    """At 4 players a guess ruled out by one seat's move takes that seat's hand from a
    survivor (the reach factorizes over seats): the guesses stay within the tiles the
    response has not seen, hold the public hand sizes, and die out at most rarely."""
    from engine.determinize import unseen_counts_into

    br = agents.make("br:target=greedy,iterations=20", seed=6)
    seats = [br] + [agents.make("greedy") for _ in range(3)]
    observe = br.observe_action

    def checked_observe(view, seat, action):
        observe(view, seat, action)
        grid, info = view.public_arrays()
        unseen = np.zeros(11, dtype=np.int64)
        unseen_counts_into(grid, info, BR, unseen)
        for hand in br._hands[br._weights > 0]:
            assert np.all(hand[1:4, 1:].sum(axis=0) <= unseen[1:]), "a guess holds tiles that are not unseen"
        checked_observe.calls += 1

    checked_observe.calls = 0
    br.observe_action = checked_observe
    record = play_game(seats, random_deal(31), 4)
    assert record.forfeit is None, record.error
    assert checked_observe.calls > 20 and br.belief_resets <= 3, br.belief_resets


def test_the_memo_of_a_deterministic_targets_moves_is_exact():
    """In one search the response memoizes greedy's move per (tree node, greedy's view):
    across many worlds of one position, at the same node, the memo answers what greedy
    would play. The worlds' hands make greedy play differently, so a key that missed
    the hand would answer wrongly for some of them."""
    from agents.search import br_kernels as bk
    from engine import access
    from engine.determinize import deal_around_hands

    for players, team in ((2, False), (4, True)):
        state = GameState.from_deal(random_deal(13), players, team)
        random = agents.make("random", seed=1)
        while state.turn < 14 or state.current_player != TARGET:
            state.step(random.act(None, PlayerView(state, state.current_player)))
        grid, info = PlayerView(state, BR).public_arrays()
        targets = sum(1 << s for s in range(players) if s not in (BR, rules.partner(BR) if team else BR))
        model = bk.new_model(bk.MODEL_GREEDY, targets)
        hands, weights = np.zeros((64, 4, 11), dtype=np.int64), np.ones(64)
        rng = bk.belief_reset(grid, info, BR, targets, hands, weights, np.uint64(3), model.world_grid,
                              model.world_info, np.zeros(128, dtype=np.int64))
        bk.clear_cache(model)
        world_grid, world_info = access.new_arrays()
        moves = set()
        for i in list(range(64)) * 2:  # each world twice: the second call is answered by the memo
            rng, ok = deal_around_hands(grid, info, BR, hands[i], targets, rng, world_grid, world_info,
                                           np.zeros(128, dtype=np.int64))
            assert ok
            _, expected = bk.target_action(model, world_grid, world_info, np.uint64(0))
            _, memo = bk.cached_target_action(model, 7, world_grid, world_info, np.uint64(0))
            assert memo == expected
            moves.add(int(expected))
        assert len(moves) >= 3


# --- exactness ------------------------------------------------------------------------------


def _endgames(seed: int, most: int = 3):
    """Positions of a greedy game with the bag empty and one or two tiles in each hand,
    rebuilt from their public facts, with the seat to move as the target and the other as
    the response: (position, target seat, greedy's move there), at most `most` of them."""
    state = GameState.from_deal(random_deal(seed), 2)
    greedy = agents.make("greedy")
    found = []
    while not state.is_over and len(found) < most:
        if state.bag_size == 0 and 1 <= min(state.hand_sizes) and max(state.hand_sizes) <= 2:
            board = {divmod(c, 7): int(v) for c, v in enumerate(state.board.ravel()) if v}
            position = GameState.from_position(
                board, [list(np.repeat(np.arange(1, 11), state.hands[s])) for s in range(2)],
                current_player=state.current_player, scores=list(state.scores))
            mover = state.current_player
            found.append((position, mover, greedy.act(None, PlayerView(position, mover))))
        state.step(greedy.act(None, PlayerView(state, state.current_player)))
    return found


def _worlds(position: GameState, br: int) -> list[tuple[float, GameState]]:
    """Every target hand the response cannot rule out from its view, weighted by how many
    arrangements of the unseen tiles give it (the rest are the removed tiles)."""
    target = 1 - br
    unseen = PlayerView(position, br).unseen_counts()  # per value 1..10
    board = {divmod(c, 7): int(v) for c, v in enumerate(position.board.ravel()) if v}
    mine = list(np.repeat(np.arange(1, 11), position.hands[br]))
    worlds = []
    for hand in itertools.combinations_with_replacement(range(1, 11), int(position.hand_sizes[target])):
        counts = np.bincount(hand, minlength=11)[1:]
        if np.any(counts > unseen):
            continue
        weight = math.prod(math.comb(int(u), int(c)) for u, c in zip(unseen, counts))
        hands = [mine, list(hand)] if br == 0 else [list(hand), mine]
        worlds.append((float(weight), GameState.from_position(board, hands, current_player=position.current_player,
                                                              scores=list(position.scores))))
    return worlds


def _utility(state: GameState, br: int) -> float:
    """What the response maximizes: its reward plus the margin term of its search."""
    lead = float(state.scores[br] - state.scores[1 - br])
    return float(state.rewards()[br]) + MARGIN * math.tanh(lead / 100.0)  # br's utility (its default margin)


def _value(worlds: list[tuple[float, GameState]], br: int, greedy) -> float:
    """The exact best-response value of an information set given as its weighted worlds:
    max over the response's moves, expectation over the worlds, greedy's moves grouped by
    what the response sees (the move, whether the game goes on, who moves)."""
    total = sum(w for w, _ in worlds)
    seen = {(s.is_over, s.current_player) for _, s in worlds}
    if len(seen) > 1:
        parts = [[(w, s) for w, s in worlds if (s.is_over, s.current_player) == key] for key in seen]
        return sum(sum(w for w, _ in part) / total * _value(part, br, greedy) for part in parts)
    first = worlds[0][1]
    if first.is_over:
        return sum(w * _utility(s, br) for w, s in worlds) / total
    if first.current_player == br:
        return max(_value(_after(worlds, a), br, greedy) for a in first.legal_actions())
    groups: dict[int, list] = {}
    for w, s in worlds:
        groups.setdefault(greedy.act(None, PlayerView(s, s.current_player)), []).append((w, s))
    return sum(sum(w for w, _ in g) / total * _value(_after(g, a), br, greedy) for a, g in groups.items())


def _after(worlds, action):
    out = []
    for w, s in worlds:
        s = s.clone()
        s.step(action)
        out.append((w, s))
    return out


def exact_agreement(spec: str, positions: int = 200) -> tuple[int, int]:
    """(how many moves of the exact best value, out of how many endgames where the choice
    matters) the agent `spec` (with `seed=`) plays against greedy; see the test below.
    `python -c "from tests.test_best_response import exact_agreement as e;
    print(e('ismcts:iterations=2000'))"` shows what a response that does not model greedy scores."""
    greedy = agents.make("greedy")
    checked = agreed = 0
    seed = 0
    while checked < positions:
        seed += 1
        for position, target, move in _endgames(seed):
            br = 1 - target
            worlds = [(w, s) for w, s in _worlds(position, br) if greedy.act(None, PlayerView(s, target)) == move]
            assert worlds, "the real target hand is always consistent with its own move"
            agent = agents.make(spec, seed=seed)
            agent.reset(br, 2)
            agent.observe_action(PlayerView(position, br), target, move)
            position.step(move)
            worlds = [(w, s) for w, s in _after(worlds, move)
                      if (s.is_over, s.current_player) == (position.is_over, position.current_player)]
            if position.is_over or position.current_player != br or len(position.legal_actions()) < 2:
                continue
            values = {a: _value(_after(worlds, a), br, greedy) for a in position.legal_actions()}
            if max(values.values()) - min(values.values()) < 1e-9:
                continue  # every move is as good: nothing to check
            chosen = agent.act(None, PlayerView(position, br))
            checked += 1
            agreed += values[chosen] >= max(values.values()) - 1e-9
    return agreed, checked


@pytest.mark.slow
def test_br_finds_the_exact_best_response_in_small_endgames():
    """In 200 endgames where the response's choice matters, `br` plays a move of the
    exact best value (its utility: reward plus the margin term) in at least 95%."""
    agreed, checked = exact_agreement("br:target=greedy,iterations=2000")
    assert agreed >= 0.95 * checked, f"{agreed} of {checked}"


# --- evaluate.py exploit ----------------------------------------------------------------------
def test_exploit_command_writes_its_table(tmp_path):
    from evaluation import cli as evaluate

    out = tmp_path / "exploit"
    code = evaluate.main(["exploit", "--target", "greedy", "--br", "iterations=30", "--baseline",
                          "ismcts:iterations=30", "--games", "4", "--seed", "3", "--workers", "1", "--out", str(out),
                          "--no-progress"])
    assert code == 0
    result = json.loads((out / "exploit.json").read_text())
    assert result["br"]["games"] == 4 and result["baseline"]["games"] == 4
    assert result["br"]["spec"] == "br:target=[greedy],iterations=30"
    assert -1 <= result["br"]["mean_reward"] <= 1
    assert result["br_minus_baseline"]["deals"] == 2
    best = max(("br", "baseline"), key=lambda k: result[k]["mean_reward"])
    assert result["lower_bound"]["responder"] == best
    assert result["lower_bound"]["mean_reward"] == result[best]["mean_reward"] >= result["br"]["mean_reward"]
    assert f"Lower bound on the exploitability (the better responder, `{result[best]['spec']}`)" in \
        (out / "exploit.md").read_text()


def test_exploit_plays_plain_ismcts_at_the_best_responses_budget_unless_told_not_to():
    """The second responder by default is plain ISMCTS with the best response's search
    settings, so the reported bound is never worse than plain search's on the same deals."""
    from evaluation.exploit import ExploitConfig, Response

    assert ExploitConfig(target="greedy").baseline_spec() == "ismcts:iterations=1000"
    assert ExploitConfig(target="greedy", br=Response.parse("time=0.01,particles=16")).baseline_spec() == \
        "ismcts:time=0.01"
    assert ExploitConfig(target="greedy", baseline="none").baseline_spec() is None
    assert ExploitConfig(target="greedy", baseline="random").baseline_spec() == "random"


def test_exploit_command_refuses_a_bad_target(tmp_path, capsys):
    from evaluation import cli as evaluate

    assert evaluate.main(["exploit", "--target", "nosuch", "--games", "2", "--out", str(tmp_path)]) == 2
    assert "unknown agent" in capsys.readouterr().err
    assert evaluate.main(["exploit", "--target", "greedy", "--br", "particles=-1", "--out", str(tmp_path)]) == 2
    assert "particles must be a non-negative integer" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_exploit_best_response_is_typed_from_the_parsed_target_and_parameters():
    """`evaluate.py exploit` builds its best response from the parsed --target and --br,
    not from a spec string it assembles: the same record as the spec a user would type."""
    from evaluation.exploit import ExploitConfig, Response

    target = agents.check_spec("policy:epsilon=0.2")
    br = ExploitConfig(target=str(target), br=Response.parse("iterations=30,particles=16,")).best_response(target)
    assert br == agents.parse_agent("br:target=[policy:epsilon=0.2],iterations=30,particles=16")
    assert dict(br.kwargs)["target"] is target
    assert str(br) == "br:target=[policy:epsilon=0.2],iterations=30,particles=16"


def test_exploit_plays_one_seat_against_the_rest_at_four_players(tmp_path):
    from evaluation import cli as evaluate

    out = tmp_path / "x4"
    assert evaluate.main(["exploit", "--target", "greedy", "--players", "4", "--br", "iterations=20", "--games", "4",
                          "--baseline", "none", "--workers", "1", "--out", str(out), "--no-progress"]) == 0
    assert "baseline" not in json.loads((out / "exploit.json").read_text())
    rows = [json.loads(line) for line in (out / "br" / "games.jsonl").read_text().splitlines()]
    assert all(sum(label.startswith("br:") for label in r["labels"]) == 1 for r in rows)


def test_a_ladders_generations_are_rated_by_a_best_response(tmp_path, capsys):
    """`evaluate.py ladder RUN --exploit G`: the raw policy of the first and last
    generations against a best response, on the same deals, paired."""
    from evaluation import cli as evaluate
    from agents.search.mcts import GuidedSearch
    from agents.settings import SearchSettings
    from evaluation.exploit import raw_policy
    from evaluation.ladder import Ladder, load_ladder_games

    run = tmp_path / "run"
    ladder = Ladder(run, anchors=["greedy"], games_per_pair=2, seed=3, workers=1)
    ladder.add_generation(0, agents.parse_agent("checkpoint:tests/fixtures/net_2p.pt"), 1.0)
    ladder.add_generation(1, GuidedSearch("models/selfplay_2p.pt", SearchSettings(iterations=10)), 2.0)
    data = load_ladder_games(run)
    assert data.header(1)["spec"] == "ismcts:net=models/selfplay_2p.pt,iterations=10"
    policy = raw_policy(data.player(1))
    assert str(policy) == "checkpoint:models/selfplay_2p.pt" and policy.args == ("models/selfplay_2p.pt",)
    assert str(raw_policy(data.player(0))) == "checkpoint:tests/fixtures/net_2p.pt"
    with pytest.raises(ValueError, match="names no network"):
        raw_policy(agents.parse_agent("greedy"))
    assert evaluate.main(["ladder", str(run), "--exploit", "2", "--br", "iterations=10,particles=16",
                          "--workers", "1"]) == 0
    result = json.loads((run / "exploitability.json").read_text())
    assert [r["generation"] for r in result["generations"]] == [0, 1]
    assert result["generations"][1]["target"] == "checkpoint:models/selfplay_2p.pt"
    assert result["last_minus_first"]["deals"] == 1
    assert "last minus first" in capsys.readouterr().out
    assert evaluate.main(["ladder", str(run), "--exploit", "2", "--exploit-generations", "7"]) == 2
