"""Statistics of evaluation/: known inputs, known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.ratings import bradley_terry, openskill_ratings
from evaluation.stats import (Sprt, deal_bootstrap_weights, effective_ranking, elo_to_score, game_sides, gsprt_llr,
                              likelihood_of_superiority, pairwise, per_deal, percentile_interval, score_to_elo,
                              sprt, sprt_bounds, wilson_interval)


# --- Wilson ---------------------------------------------------------------------------------
def test_wilson_7_of_10():
    lo, hi = wilson_interval(7, 10)
    assert lo == pytest.approx(0.3968, abs=1e-4) and hi == pytest.approx(0.8922, abs=1e-4)


def test_wilson_edges():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(0.7225, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(5, 10)  # symmetric around 1/2; draws may make it fractional
    assert lo + hi == pytest.approx(1.0)
    assert wilson_interval(5.5, 11)[0] + wilson_interval(5.5, 11)[1] == pytest.approx(1.0)


# --- Bradley-Terry --------------------------------------------------------------------------
def test_bradley_terry_two_agents():
    # 3 wins to 1: odds 3, the gap is 400 log10(3) = 190.85 Elo
    elo = bradley_terry(np.array([[0, 3], [1, 0]]), prior_draws=0)
    assert elo == pytest.approx([0.0, -400 * math.log10(3)])
    # draws count half: 2 wins, 2 draws, 0 losses = 3 points to 1
    assert bradley_terry(np.array([[0, 2 + 1], [0 + 1, 0]]), prior_draws=0) == pytest.approx(elo)


def test_bradley_terry_recovers_consistent_crosstable():
    strength = np.array([1.0, 2.0, 4.0, 0.5])
    n = 60.0  # games per pair, split exactly as the model expects
    points = n * strength[:, None] / (strength[:, None] + strength[None, :])
    np.fill_diagonal(points, 0)
    want = 400 * np.log10(strength / strength[0])
    assert bradley_terry(points, prior_draws=0, anchor=0) == pytest.approx(want, abs=1e-6)
    centred = bradley_terry(points, prior_draws=0, anchor=None)
    assert centred.mean() == pytest.approx(0, abs=1e-9)
    assert centred - centred[2] == pytest.approx(want - want[2], abs=1e-6)
    assert 1 / (1 + 10 ** ((want[0] - want[2]) / 400)) == pytest.approx(0.8)  # the expected score of 2 against 0


def test_bradley_terry_hand_made_table():
    # A beats B 6-4, B beats C 6-4, A beats C 7-3: ratings strictly ordered A > B > C
    points = np.array([[0, 6, 7], [4, 0, 6], [3, 4, 0]])
    elo = bradley_terry(points, prior_draws=0)
    assert elo[0] == 0 and elo[0] > elo[1] > elo[2]
    # the MLE condition: each agent's expected points equal its actual points
    p = 1 / (1 + 10 ** ((elo[None, :] - elo[:, None]) / 400))
    games = points + points.T
    assert (games * p).sum(1) - np.diag(games * p) == pytest.approx(points.sum(1), abs=1e-6)


def test_bradley_terry_prior_keeps_a_sweep_finite():
    elo = bradley_terry(np.array([[0, 2000], [0, 0]]), prior_draws=1)
    assert elo[1] == pytest.approx(-400 * math.log10(2000.5 / 0.5))


def test_bradley_terry_rejects_disconnected():
    points = np.zeros((4, 4))
    points[0, 1] = points[1, 0] = 1
    points[2, 3] = points[3, 2] = 1
    with pytest.raises(ValueError, match="connected"):
        bradley_terry(points)


# --- SPRT -------------------------------------------------------------------------------------
def test_sprt_bounds():
    lo, hi = sprt_bounds(0.05, 0.05)
    assert hi == pytest.approx(math.log(19)) and lo == pytest.approx(-math.log(19))


def test_gsprt_llr_known_value():
    x = [1.0, 0.5, 0.75, 0.25]
    s0, s1 = elo_to_score(0), elo_to_score(100)
    mean = 0.625
    var = (sum((v - mean) ** 2 for v in x) + 0.25) / 5
    assert gsprt_llr(x, 0, 100) == pytest.approx(4 * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var))
    assert gsprt_llr([], 0, 100) == 0.0


def test_sprt_decisions_on_synthetic_sequences():
    strong = sprt([1.0] * 100, 0, 50)
    assert strong.decision == "H1" and strong.llr >= strong.upper and strong.units < 10
    weak = sprt([0.0] * 100, 0, 50)
    assert weak.decision == "H0" and weak.units < 10
    even = sprt([1.0, 0.0] * 1000, 0, 50)  # exactly elo 0 = elo0: accept H0, eventually
    assert even.decision == "H0" and 100 < even.units < 1000
    assert sprt([1.0, 0.0] * 10, 0, 50).decision is None  # too few to tell
    # a 60% scorer (~ +70 Elo) against [0, 50]: H1
    assert sprt([1.0, 1.0, 1.0, 0.0, 0.0] * 400, 0, 50).decision == "H1"


def test_sprt_stops_at_first_crossing():
    test = Sprt(0, 50)
    for _ in range(50):
        decision = test.feed(1.0)
    assert decision == "H1" and test.result.units < 10
    assert len(test.scores) == test.result.units  # later units ignored
    with pytest.raises(ValueError):
        Sprt(10, 0)


def test_elo_score_round_trip():
    assert elo_to_score(0) == 0.5
    assert score_to_elo(elo_to_score(123.0)) == pytest.approx(123.0)
    assert likelihood_of_superiority(10, 10) == 0.5 and likelihood_of_superiority(30, 10) > 0.99


# --- pairwise outcomes and the bootstrap --------------------------------------------------------
def test_pairwise_two_player_orientation():
    pw = pairwise([(0, (1, 0), [50, 80], [1, 0], False),   # agent 0 (seat 1) wins
                   (0, (0, 1), [30, 30], [0, 0], False)])  # draw
    assert pw.a.tolist() == [0, 0] and pw.b.tolist() == [1, 1]
    assert pw.score.tolist() == [1.0, 0.5] and pw.margin.tolist() == [30.0, 0.0]


def test_pairwise_multiplayer_and_team():
    # 3 players, agents (2, 0, 2): agent 2 twice; seats 0 and 2 are not compared
    pw = pairwise([(4, (2, 0, 2), [10, 20, 30], [2, 1, 0], False)])
    assert len(pw) == 2 and set(pw.deal) == {4}
    assert sorted(pw.score.tolist()) == [0.0, 1.0]  # agent 0 beats seat 0, loses to seat 2
    # team: one comparison on team minutes and places
    pw = pairwise([(0, (0, 1, 0, 1), [10, 20, 30, 5], [0, 1, 0, 1], True)])
    assert len(pw) == 1 and pw.score[0] == 1.0 and pw.margin[0] == 15.0
    assert game_sides((0, 1, 0, 1), [1, 2, 3, 4], [1, 0, 1, 0], True) == [(0, 4.0, 1), (1, 6.0, 0)]


def test_per_deal_sums_and_bootstrap():
    pw = pairwise([(0, (0, 1), [10, 0], [0, 1], False), (1, (0, 1), [0, 10], [1, 0], False),
                   (1, (1, 0), [5, 5], [0, 0], False)])
    pd = per_deal(pw, 2, 2)
    tot = pd.total()
    assert tot.games[0, 1] == 3 and tot.points[0, 1] == 1.5 and tot.points[1, 0] == 1.5
    assert tot.wins[0, 1] == 1 and tot.draws[0, 1] == 1 and tot.margin[0, 1] == 0
    w = deal_bootstrap_weights(2, 500, seed=3)
    assert w.shape == (500, 2) and np.all(w.sum(1) == 2)
    assert np.array_equal(w, deal_bootstrap_weights(2, 500, seed=3))  # reproducible
    boot = pd.total(w)
    assert boot.games.shape == (500, 2, 2)
    # deal 0 twice: 1 game, a win; deal 1 twice: 2 games, 0.5 points
    only0 = w[:, 0] == 2
    assert np.all(boot.points[only0, 0, 1] == 2) and np.all(boot.games[only0, 0, 1] == 2)
    ci = percentile_interval(np.array([[1.0], [2.0], [3.0], [np.nan]]))
    assert ci.shape == (1, 2) and ci[0, 0] == pytest.approx(1.05) and ci[0, 1] == pytest.approx(2.95)


def test_paired_differences_cancel_what_the_deals_share():
    from evaluation.report import format_results, paired_differences

    # agents 0 and 1 each play the opponent 2 once per deal. Half the deals the opponent
    # wins both games (the deal favours it), half it loses both; agent 0 also wins one
    # hard deal in ten that agent 1 loses. Paired, the only difference left is that one.
    games = []
    for d in range(400):
        easy = d % 2 == 0
        for a in (0, 1):
            win = easy or (a == 0 and d % 20 == 1)
            games.append((d, (a, 2), [10, 0] if win else [0, 10], [0, 1] if win else [1, 0], False))
    pd = per_deal(pairwise(games), 3, 400)
    tot, boot = pd.total(), pd.total(deal_bootstrap_weights(400, 2000, seed=1))
    labels = ["x", "y", "o"]
    [versus_o] = [p for p in paired_differences(tot, boot, labels) if p["opponent"] == "o"]
    assert versus_o["agents"] == ["x", "y"] and versus_o["scores"] == [0.55, 0.5]
    assert versus_o["difference"] == pytest.approx(0.05)
    lo, hi = versus_o["difference_ci95"]
    assert 0.0 < lo < 0.05 < hi < 0.08  # the difference's own spread: 20 deals of 400
    own = percentile_interval(boot.points[:, 0, 2] / boot.games[:, 0, 2])
    assert hi - lo < (own[1] - own[0]) / 2  # far narrower than agent x's own interval
    # x and y never met, so nothing is compared through either of them: o is the only opponent
    assert len(paired_differences(tot, boot, labels)) == 1
    res = {"agents": labels, "players": 2, "team": False, "games": 800, "void_games": 0, "deals": 400,
           "schedule": {"tables": [["x", "o"], ["y", "o"]], "seatings_per_table": 1},
           "rating_method": {"anchor": "x = 0", "ci95": "none"}, "ratings": {}, "pairs": {},
           "paired": [versus_o]}
    assert "x      y       o         0.550-0.500      +0.050" in format_results(res)


def test_openskill_orders_a_consistent_winner():
    # agent a always finishes in place a, whatever its seat
    games = [((0, 1, 2), (0, 1, 2)), ((1, 2, 0), (1, 2, 0)), ((2, 0, 1), (2, 0, 1))] * 10
    fit = openskill_ratings(games, 3)
    assert fit[0]["ordinal"] > fit[1]["ordinal"] > fit[2]["ordinal"]
    assert openskill_ratings([((0, 0, 1), (0, 1, 2))], 2) is None  # an agent twice at a table


def test_effective_ranking_puts_the_forfeiter_last():
    assert effective_ranking([1, 0], 0, False) == [1, 0]
    assert effective_ranking([1, 0], 1, False) == [0, 1]  # seat 0 was behind, but 1 forfeited
    assert effective_ranking([2, 0, 1], 1, False) == [1, 2, 0]
    assert effective_ranking([0, 0, 2], 2, False) == [0, 0, 2]
    assert effective_ranking([0, 1, 0, 1], 3, True) == [0, 1, 0, 1]
    assert effective_ranking([0, 1, 0, 1], 2, True) == [1, 0, 1, 0]
    assert effective_ranking([0, 1], None, False) == [0, 1]


def test_sweeps_get_a_real_interval():
    from evaluation.report import resample_sweeps

    # agent 0 beat agent 1 in all 40 games (20 deals x 2); the deal bootstrap alone cannot vary that
    pw = pairwise([(d, (0, 1) if s == 0 else (1, 0), [100, 0] if s == 0 else [0, 100], [0, 1] if s == 0 else [1, 0],
                    False) for d in range(20) for s in range(2)])
    pd = per_deal(pw, 2, 20)
    tot, boot = pd.total(), pd.total(deal_bootstrap_weights(20, 400, seed=0))
    assert np.all(boot.points[:, 0, 1] == 40)
    elo = bradley_terry(tot.points, prior_draws=1, anchor=1)
    pts = resample_sweeps(boot, tot, elo, seed=0)
    assert np.array_equal(pts[:, 0, 1] + pts[:, 1, 0], boot.games[:, 0, 1])
    elo_b = np.array([bradley_terry(p, prior_draws=1, anchor=1) for p in pts])
    lo, hi = percentile_interval(elo_b)[0]
    assert lo < elo[0] - 100 and hi == pytest.approx(elo[0])
    assert np.array_equal(pts, resample_sweeps(boot, tot, elo, seed=0))  # reproducible
