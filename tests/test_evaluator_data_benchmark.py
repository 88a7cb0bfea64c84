"""benchmarks/evaluator_data.py: TD(lambda) targets by hand, and a whole run on a tiny stored run."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import agents
from agents.nets import NetConfig, PolicyValueNet, load_net, save_checkpoint
from benchmarks import evaluator_data
from engine import GameState
from engine.view import PlayerView
from training import teacher


def test_lambda_returns_by_hand():
    # one 2-player game of three positions (movers 0, 1, 0), then a one-position game (mover 1)
    game, mover = np.array([0, 0, 0, 1]), np.array([0, 1, 0, 1])
    values = np.zeros((4, 4), dtype=np.float32)
    values[:, :2] = [[0.0, 0.0], [0.2, -0.2], [0.6, -0.6], [0.9, -0.9]]  # slot 0 = the mover
    final = np.zeros((4, 4), dtype=np.float32)
    final[:, :2] = [[1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [0.5, -0.5]]  # seat 0 won game 0
    lam = 0.5
    g = evaluator_data.lambda_returns(values, final, game, mover, 2, lam)
    # seat 0's view: position 2 is the last (its final, +1); position 1's next value for seat 0 is
    # -0.2 (its mover is seat 1); position 0 then blends seat 0's value at 1 with its return at 1
    at2 = 1.0
    at1 = (1 - lam) * 0.6 + lam * at2  # the next position's value for seat 0 is +0.6
    at0 = (1 - lam) * -0.2 + lam * at1
    assert g[2, 0] == pytest.approx(at2) and g[1, 1] == pytest.approx(at1) and g[1, 0] == pytest.approx(-at1)
    assert g[0, 0] == pytest.approx(at0) and g[0, 1] == pytest.approx(-at0)
    assert g[3, :2].tolist() == [0.5, -0.5]  # a game's last position keeps its final reward
    assert np.array_equal(evaluator_data.lambda_returns(values, final, game, mover, 2, 1.0), final)


def test_a_whole_run_on_a_tiny_stored_run(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "games" / "gen_000").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"num_players": 2, "team": False}))
    teacher.play_chunk("ismcts:iterations=4", 1, 6, 2, False).save(run / "games" / "gen_000" / "chunk_00000.npz")
    net = PolicyValueNet(NetConfig(channels=4, blocks=1, evaluator_hidden=8))
    (run / "generations").mkdir()
    save_checkpoint(run / "generations" / "gen_000.pt", net)
    rows = evaluator_data.main([str(run), "--shares", "0.5,1", "--widths", "8,4", "--lambdas", "0.5",
                                "--steps", "3", "--held", "2", "--out", str(tmp_path / "fits")])
    assert [(r["target"], r["width"], r["share"], r["games"]) for r in rows] == [
        ("final", 8, 0.5, 2), ("final", 8, 1.0, 4), ("final", 4, 1.0, 4), ("lambda=0.5", 8, 1.0, 4)]
    assert all(np.isfinite(r["held_out_mse"]) for r in rows)
    assert "held-out MSE" in capsys.readouterr().out
    narrow = tmp_path / "fits" / "final_w4_s1.pt"
    assert load_net(narrow).config.evaluator_hidden == 4
    searcher = agents.make(f"ismcts:net={narrow},iterations=8", seed=0)
    state = GameState.new(2, seed=3)
    searcher.reset(0, 2, False)
    assert state.legal_action_mask()[searcher.act(None, PlayerView(state, 0))]
    with pytest.raises(SystemExit):
        evaluator_data.main([str(run), "--held", "6"])
