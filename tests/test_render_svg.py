"""Board pictures for notebooks (env/render_svg.py): SVG, PNG via matplotlib, Jupyter reprs."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from engine import GameState, rules  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from env import render_svg as R  # noqa: E402
from env.render import breakdown_text  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def midgame(seed=8, min_turn=14):
    """A random game played until it has a Time Out stone, a scoring last move and
    `min_turn` turns."""
    rng = np.random.default_rng(seed)
    g = GameState.new(2, seed=seed)
    while not g.is_over and (g.turn < min_turn or not g.timeout_cells or not g.last_breakdown):
        legal = g.legal_actions()
        g.step(int(legal[rng.integers(len(legal))]))
    assert not g.is_over
    return g


def texts(svg: str) -> list[str]:
    return [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_board_svg_shows_the_position():
    g = midgame()
    svg = R.board_svg(g)
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 300
    board = g.board.ravel()
    values = [t for t in texts(svg) if t and t.isdigit()]
    # every tile value, the 7 + 7 coordinates, the hand tiles
    hand = g.hands[g.current_player]
    assert len(values) == int((board > 0).sum()) + 14 + int(hand.sum())
    circles = list(root.iter(f"{SVG}circle"))
    assert len(circles) == len(g.timeout_cells)
    empty_double = [c for c in rules.DOUBLE_TIME_CELLS if board[c] == 0 and c not in g.timeout_cells]
    tiles_on_double = [c for c in rules.DOUBLE_TIME_CELLS if board[c] > 0]
    assert texts(svg).count("2×") == len(empty_double) + len(tiles_on_double)
    outlined = [r for r in root.iter(f"{SVG}rect") if r.get("stroke") == R.LAST]
    assert len(outlined) == 1  # the last move
    caption = " ".join(t for t in texts(svg) if t)
    assert f"turn {g.turn}" in caption and f"player_{g.current_player} to move" in caption
    points = sum(c.minutes for c in g.last_breakdown)
    assert "last move:" in caption and breakdown_text(g.last_breakdown, points) in caption
    assert f"hand of player_{g.current_player}" in caption
    for s in range(2):
        assert f"player_{s}: {int(g.scores[s])} min" in caption


def test_options_marks_viewer_caption_title():
    g = midgame()
    legal = g.legal_actions()
    svg = R.board_svg(g, marks=[(legal[0], "greedy"), (legal[-1], "mcts", "#00aa00")], title="two ideas", viewer=-1)
    root = ET.fromstring(svg)
    dashed = [r for r in root.iter(f"{SVG}rect") if r.get("stroke-dasharray")]
    assert len(dashed) == 2 and dashed[1].get("stroke") == "#00aa00"
    words = texts(svg)
    assert "greedy" in words and "mcts" in words and "two ideas" in words
    assert not any(w and w.startswith("hand of") for w in words)
    bare = R.board_svg(g, caption=False, coords=False)
    assert "turn" not in " ".join(t for t in texts(bare) if t)
    assert float(ET.fromstring(bare).get("height")) < float(root.get("height"))
    assert R.board_svg(g, marks=[rules.PASS_ACTION]).count("stroke-dasharray") == 0  # nothing to mark


def test_player_view_fresh_game_and_game_over():
    g = GameState.new(3, seed=1)
    svg = R.board_svg(PlayerView(g, 2))  # a view shows its own hand only
    assert "hand of player_2" in " ".join(t for t in texts(svg) if t)
    assert "last move" not in svg
    team = GameState.new(4, seed=2, team=True)
    assert "teams: 0+2" in R.board_svg(team)
    rng = np.random.default_rng(0)
    while not g.is_over:
        legal = g.legal_actions()
        g.step(int(legal[rng.integers(len(legal))]))
    assert "game over" in R.board_svg(g)


def test_png_and_matplotlib():
    import matplotlib.pyplot as plt

    g = midgame()
    png = R.render_png(g, marks=[g.legal_actions()[0]])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    fig, axes = plt.subplots(1, 2, figsize=(8, 5))
    assert R.draw_board(g, ax=axes[0], caption=False) is fig
    assert len(axes[0].patches) >= 16 + int((g.board > 0).sum()) and len(axes[0].texts) >= int((g.board > 0).sum())
    plt.close(fig)


def test_picture_object(tmp_path):
    g = midgame()
    assert "a title" in R.show(g, title="a title")._repr_svg_()
    pic = R.show(g, titles=["mid-game"])
    svg = pic._repr_svg_()
    before = svg
    g.step(g.legal_actions()[0])  # the picture is a snapshot
    assert pic._repr_svg_() == before and "mid-game" in svg
    assert pic._repr_html_().startswith("<div") and "<svg" in pic._repr_html_()
    assert pic.save(tmp_path / "b.svg").read_text().startswith("<svg")
    assert pic.save(tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    row = R.show(GameState.new(2, seed=0), g, titles=["start", "later"], marks=[None, [g.legal_actions()[0]]])
    root = ET.fromstring(row._repr_svg_())
    assert len(root.findall(f"{SVG}svg")) == 2
    with pytest.raises(ValueError):
        row.to_png()
    with pytest.raises(ValueError):
        R.show()


def test_breakdown_of_a_state_stepped_by_the_env():
    """The env steps the GameState with its own kernels; the caption still shows the score."""
    import env as env_pkg

    e = env_pkg.raw_env()
    e.reset(seed=3)
    rng = np.random.default_rng(1)
    while not e.last_breakdown:
        legal = np.flatnonzero(e.observe(e.agent_selection)["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
    caption = " ".join(t for t in texts(R.board_svg(e.game)) if t)
    assert breakdown_text(e.last_breakdown, sum(c.minutes for c in e.last_breakdown)) in caption
