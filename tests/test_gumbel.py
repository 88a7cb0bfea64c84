"""The Gumbel root (agents/gumbel.py, ismcts gumbel=k) and its completed-Q policy target."""

import numpy as np
import pytest

import agents
from agents import gumbel
from agents import search_parts as parts
from test_search_core import ROOT, middle_game_view

NET = str(ROOT / "models" / "selfplay_2p.pt")


def test_gumbel_top_k_samples_without_replacement_from_the_softmax_and_repeats_under_a_seed():
    logits = np.log([0.5, 0.3, 0.2])
    first, g = gumbel.gumbel_top_k(logits, 3, np.random.default_rng(7))
    again, g2 = gumbel.gumbel_top_k(logits, 3, np.random.default_rng(7))
    assert np.array_equal(first, again) and np.array_equal(g, g2)
    assert sorted(first.tolist()) == [0, 1, 2]
    assert np.all(np.diff((g + logits)[first]) <= 0)  # best g + logit first
    assert len(gumbel.gumbel_top_k(logits, 2, np.random.default_rng(7))[0]) == 2
    rng = np.random.default_rng(0)
    draws = np.array([gumbel.gumbel_top_k(logits, 2, rng)[0] for _ in range(20_000)])
    # the first ~ softmax(logits); the second ~ the rest renormalised: P(0 then 1) = 0.5 * 0.3 / 0.5
    assert np.allclose(np.bincount(draws[:, 0], minlength=3) / 20_000, [0.5, 0.3, 0.2], atol=0.015)
    assert abs(np.mean((draws[:, 0] == 0) & (draws[:, 1] == 1)) - 0.3) < 0.015
    assert abs(np.mean((draws[:, 0] == 1) & (draws[:, 1] == 0)) - 0.3 * 0.5 / 0.7) < 0.015
    assert not np.any(draws[:, 0] == draws[:, 1])
    with pytest.raises(ValueError, match="k must be"):
        gumbel.gumbel_top_k(logits, 0, rng)
    with pytest.raises(ValueError, match="finite"):
        gumbel.gumbel_top_k(np.array([0.0, np.nan]), 1, rng)


def test_completed_q_target_is_the_hand_computed_softmax():
    logits = np.log([1.0, 2.0, 1.0])  # prior 1/4, 1/2, 1/4
    q, visits, root_value = np.array([0.5, -0.5, 0.0]), np.array([2, 1, 0]), 0.2
    # v_mix = (0.2 + 3 * (0.25 * 0.5 + 0.5 * -0.5) / 0.75) / 4 = -0.075 completes the unvisited action;
    # rescaled over [-0.5, 0.5]: 1, 0, 0.425; sigma = (50 + 2) * 0.1 * that = 5.2, 0, 2.21
    assert np.allclose(gumbel.completed_q(q, visits, np.array([0.25, 0.5, 0.25]), root_value), [0.5, -0.5, -0.075])
    expected = np.exp([0.0 + 5.2, np.log(2.0) + 0.0, 0.0 + 2.21])
    target = gumbel.improved_policy(logits, q, visits, root_value)
    assert np.allclose(target, expected / expected.sum())
    # nothing visited: every action's Q is the root value, the target is the prior
    assert np.allclose(gumbel.improved_policy(logits, np.zeros(3), np.zeros(3, int), 0.3), [0.25, 0.5, 0.25])


def test_gumbel_root_searches_k_sampled_candidates_repeatably_and_gives_its_target():
    view = middle_game_view()
    spec = f"ismcts:net={NET},gumbel=4,iterations=120"
    agent = agents.make(spec, seed=5)
    action, visits, _ = agent.act_with_visits(view)
    again = agents.make(spec, seed=5).act_with_visits(view)
    assert action == again[0] and np.array_equal(visits, again[1])
    candidates = set(agent._tree.order[:4].tolist())
    assert set(np.flatnonzero(visits)) == candidates and visits.sum() == 120 and action in candidates
    assert agent._tree.meta[parts.ORDER_LEN] > 4
    target = agent.improved_policy()
    legal = view.legal_action_mask()[: len(target)]
    assert abs(target.sum() - 1) < 1e-9 and np.all(target[~legal] == 0) and np.all(target[legal] > 0)
    # other seeds sample other candidates (Gumbel noise), not always the policy's first four
    seen = {tuple(sorted(np.flatnonzero(agents.make(spec, seed=s).act_with_visits(view)[1]))) for s in range(4)}
    assert len(seen) > 1


@pytest.mark.parametrize("spec, message", [
    ("ismcts:gumbel=4", "give net=PATH"), (f"ismcts:net={NET},gumbel=1", "at least 2"),
    (f"ismcts:net={NET},gumbel=4,halving=4", "not both"), (f"ismcts:net={NET},gumbel=4,leaf=value", "leaf=rollout"),
    (f"ismcts:net={NET},c_scale=0", "c_scale"), (f"ismcts:net={NET},c_visit=-1", "c_visit")])
def test_gumbel_root_refuses_bad_parameters(spec, message):
    with pytest.raises(ValueError, match=message):
        agents.make(spec)
    if "net=" in spec:  # a config's check, before any agent is built
        with pytest.raises(ValueError, match=message):
            agents.check_spec(spec)
