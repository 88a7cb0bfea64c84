"""One lead, one margin, one team target (issue 71): every place that scores a seat by its
minute lead (the search's rewards, the learner's value and evaluator targets, the
Gymnasium env's dense reward) reads `engine.kernels.side_lead`, so in the team variant
partners get identical targets and the two teams opposite ones, and without teams the
learner's margin is the search's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.search.core import simulation_rewards
from agents.settings import MARGIN
from engine import GameState, random_deal
from engine.kernels import LEAD_SCALE, leads, margins, score_leads
from env.gym_env import TwentyFourSevenEnv
from training.config import config_from_dict, load_config
from training.learner import Learner

SEEDS = (0, 1, 2, 3)  # random team games that do not end level (checked)


def documented_lead(scores, team: bool, seat: int) -> float:
    """docs/rules.md in plain Python: the seat's side's minutes minus the mean of the
    opposing sides' minutes; a team's side is its two seats' sum."""
    scores = [int(x) for x in scores]
    sides = [scores[0] + scores[2], scores[1] + scores[3]] if team else scores
    mine = seat % 2 if team else seat
    others = [x for i, x in enumerate(sides) if i != mine]
    return sides[mine] - sum(others) / len(others)


def random_game(seed: int, num_players: int = 4, team: bool = True):
    """A game of random legal placements to the end: (deal, actions, final state)."""
    deal = random_deal(seed)
    game = GameState.from_deal(deal, num_players, team=team)
    rng = np.random.default_rng(seed)
    actions = []
    while not game.is_over:
        action = int(rng.choice(game.legal_actions()))
        actions.append(action)
        game.step(action)
    return deal, actions, game


@pytest.fixture(scope="module")
def team_games():
    games = [random_game(seed) for seed in SEEDS]
    for _, _, game in games:  # a level game would make "opposite" and "identical" trivial
        assert documented_lead(game.scores, True, 0) != 0
    return games


def assert_one_team_value(values):
    """Partners identical, the teams opposite (exactly), not all zero."""
    values = np.asarray(values, dtype=np.float64)
    assert values[0] == values[2] and values[1] == values[3], values
    assert values[0] == -values[1] and values[0] != 0, values


def test_the_engine_gives_partners_one_lead_and_the_teams_opposite_ones(team_games):
    for _, _, game in team_games:
        info = game.arrays[1]
        lead, margin = np.zeros(4), np.zeros(4)
        leads(info, lead)
        margins(info, margin)
        assert_one_team_value(lead)
        assert_one_team_value(margin)
        assert np.array_equal(game.leads(), lead)
        assert np.array_equal(score_leads(game.scores, True), lead)
        assert lead.tolist() == [documented_lead(game.scores, True, s) for s in range(4)]
        assert np.allclose(margin, np.tanh(lead / LEAD_SCALE), rtol=0, atol=1e-15)
        assert LEAD_SCALE == 100.0


def test_the_search_scores_partners_by_their_teams_result_and_lead(team_games):
    for deal, actions, final in team_games:
        game = GameState.from_deal(deal, 4, team=True)
        for step, action in enumerate(actions + [None]):
            if step % 7 == 0 or action is None:  # cut simulations too, and the end
                out = np.zeros(4)
                simulation_rewards(game.arrays[1], out, MARGIN)
                bonus = MARGIN * math.tanh(documented_lead(game.scores, True, 0) / 100.0)
                expected = game.rewards() + np.array([bonus, -bonus, bonus, -bonus])
                assert np.allclose(out, expected, rtol=0, atol=1e-12)  # as before issue 71
                if action is None or documented_lead(game.scores, True, 0) != 0:
                    assert_one_team_value(out)
            if action is not None:
                game.step(action)


@pytest.mark.parametrize("margin_weight", [None, 1.0], ids=["shipped-team-config", "margin-only"])
def test_the_learner_gives_partners_identical_value_and_evaluator_targets(team_games, margin_weight):
    overrides = [] if margin_weight is None else [f"selfplay.margin_weight={margin_weight}"]
    cfg = load_config("selfplay_team", overrides)  # configs/selfplay_team.yaml: margin_weight 0.2
    assert cfg.team and cfg.selfplay.margin_weight > 0
    w = cfg.selfplay.margin_weight
    learner = Learner(cfg, torch.device("cpu"))
    final_info = np.stack([game.arrays[1] for _, _, game in team_games])
    game_index = np.repeat(np.arange(len(team_games)), 4)
    mover = np.tile(np.arange(4), len(team_games))
    for targets in (learner.value_targets(final_info, game_index, mover),
                    learner.search_value_targets(final_info, game_index, mover)):
        for g, (_, _, game) in enumerate(team_games):
            per_mover = []
            for m in range(4):  # slot k holds seat (mover + k) % 4: back to absolute seats
                row = targets[4 * g + m]
                per_mover.append([row[(s - m) % 4] for s in range(4)])
            for seats in per_mover:
                assert seats == per_mover[0]  # whichever seat moved, one value per seat
            assert_one_team_value(per_mover[0])
    value = learner.value_targets(final_info, game_index, mover)
    for g, (_, _, game) in enumerate(team_games):
        margin = math.tanh(documented_lead(game.scores, True, 0) / 100.0)
        expected = (1 - w) * game.rewards()[0] + w * margin
        assert value[4 * g, 0] == pytest.approx(expected, abs=1e-6)  # float32 targets


def test_the_points_reward_pays_partners_the_same_lead(team_games):
    """The Gymnasium env's dense reward, for a learner in each seat of the same game:
    an episode pays the learner's final lead / 100 plus its final reward."""
    for deal, actions, final in team_games:
        paid = []
        for seat in range(4):
            moves = iter(actions)
            env = TwentyFourSevenEnv(num_players=4, team=True, seat=seat, reward="points",
                                     opponents=lambda obs, mask, state: next(moves))
            env.reset(seed=0, options={"deal": [int(v) for v in deal]})
            total, done = 0.0, False
            while not done:
                _, reward, done, _, _ = env.step(next(moves))
                total += reward
            assert env.game.scores.tolist() == final.scores.tolist()
            expected = documented_lead(final.scores, True, seat) / 100.0 + final.rewards()[seat]
            assert total == pytest.approx(expected, abs=1e-9)
            paid.append(total - final.rewards()[seat])
        assert paid[0] == pytest.approx(paid[2], abs=1e-12) and paid[1] == pytest.approx(paid[3], abs=1e-12)
        assert paid[0] == pytest.approx(-paid[1], abs=1e-12) and paid[0] != 0


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_without_teams_the_learners_margin_is_the_searchs(num_players):
    """margin_weight 1: the value target is the margin alone, which must be the term the
    search adds to the rewards: tanh((minutes - mean of the *others'*) / 100); for 2
    players tanh(difference / 100) (before issue 71 the learner had tanh(difference / 200))."""
    learner = Learner(config_from_dict({"algorithm": "selfplay", "num_players": num_players,
                                        "selfplay": {"margin_weight": 1.0}}), torch.device("cpu"))
    games = [random_game(seed, num_players, team=False)[2] for seed in range(3)]
    final_info = np.stack([game.arrays[1] for game in games])
    targets = learner.value_targets(final_info, np.arange(3), np.zeros(3, dtype=np.int64))
    for g, game in enumerate(games):
        search = np.zeros(4)
        simulation_rewards(game.arrays[1], search, 1.0)
        search_margin = search[:num_players] - game.rewards()
        expected = [math.tanh(documented_lead(game.scores, False, s) / 100.0) for s in range(num_players)]
        assert np.allclose(targets[g, :num_players], search_margin, rtol=0, atol=1e-6)  # float32 targets
        assert np.allclose(search_margin, expected, rtol=0, atol=1e-12)
        if num_players == 2:
            difference = float(game.scores[0] - game.scores[1])
            assert difference != 0
            assert targets[g, 0] == pytest.approx(math.tanh(difference / 100.0), abs=1e-6)
