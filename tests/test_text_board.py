"""The one text board (`env.render.board_text`): every cell state reads differently, and
the env's text mode, the terminal game and `evaluate.py replay` all draw it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import env as env_pkg
from engine import GameState, rules
from engine.view import PlayerView
from env import render
from evaluation.replay import replay_text
from humanplay import terminal
from humanplay.session import Session


def _cells(text: str) -> list[str]:
    """The 49 cells of a text board, row by row (5 characters each)."""
    rows = [line for line in text.splitlines() if line[:3].strip().isdigit() and len(line) > 5]
    assert len(rows) == rules.BOARD_SIZE
    return [row[5:].ljust(5 * rules.BOARD_SIZE)[5 * c:5 * c + 5] for row in rows for c in range(rules.BOARD_SIZE)]


def test_every_cell_state_reads_differently():
    states = {
        "empty": render.cell_text(0, False, False, False),
        "empty double time": render.cell_text(0, True, False, False),
        "time out": render.cell_text(0, False, True, False),
        "time out on double time": render.cell_text(0, True, True, False),
        **{f"tile {v}": render.cell_text(v, False, False, False) for v in range(1, 11)},
        **{f"tile {v} on double time": render.cell_text(v, True, False, False) for v in range(1, 11)},
        **{f"last move {v}": render.cell_text(v, False, False, True) for v in range(1, 11)},
        **{f"last move {v} on double time": render.cell_text(v, True, False, True) for v in range(1, 11)},
    }
    assert all(len(text) == 5 for text in states.values())
    for (a, ta), (b, tb) in itertools.combinations(states.items(), 2):
        assert ta.strip() != tb.strip(), f"{a} and {b} both read {ta!r}"
    # the case of issue 57: a 2 on a Double Time cell is not an empty Double Time cell
    assert render.cell_text(2, True, False, False) != render.cell_text(0, True, False, False)


def test_a_board_shows_each_cell_as_the_engine_has_it():
    state = GameState.new(2, seed=8)
    rng = np.random.default_rng(0)
    while not (state.timeout_cells and any(state.board.ravel()[c] for c in rules.DOUBLE_TIME_CELLS)):
        legal = state.legal_actions()
        state.step(legal[rng.integers(len(legal))])
        if state.is_over:
            state, rng = GameState.new(2, seed=int(rng.integers(1000))), rng
    text = render.board_text(state)
    assert render.LEGEND in text
    board = state.board.ravel()
    last = rules.decode_action(state.last_action)[0]
    for cell, shown in enumerate(_cells(text)):
        expect = render.cell_text(int(board[cell]), cell in rules.DOUBLE_TIME_CELLS,
                                  cell in state.timeout_cells, cell == last)
        assert shown == expect, (cell, shown, expect)


def test_hands_and_names():
    state = GameState.new(4, seed=1, team=True)
    text = render.board_text(state, viewer=2, names=["you", "greedy", "partner", None])
    assert "hand of player 2 (partner): " in text and "player 3 0 min" in text
    assert "hand of" not in render.board_text(state, viewer=-1)
    view = PlayerView(state, 1)
    assert "hand of player 1: " in render.board_text(view)
    for bad, viewer in ((view, 0), (state, 4)):
        try:
            render.board_text(bad, viewer=viewer)
        except ValueError as exc:
            assert "viewer" in str(exc)
        else:
            raise AssertionError("a bad viewer was drawn")


def test_env_terminal_and_replay_draw_the_same_board(tmp_path):
    session = Session.new(["greedy"], seed=4, hint_spec="greedy")
    for _ in range(3):
        session.play(session.legal_actions()[0])
    names = terminal.names(session)
    board = render.board_text(session.view, names=names)
    assert terminal.board_text(session.view, session) == board
    written = []
    terminal.run(session, tmp_path / "g.jsonl", read=lambda prompt: "quit", write=written.append)
    assert board in written
    # the replay: the same board of the same game, from the record, with the same names
    record = session.record()
    replayed = replay_text(record)
    state = GameState.from_deal(record["deal"], 2)
    for a in record["actions"]:
        state.step(a)
    assert render.board_text(state, names=["human", "greedy"]) in replayed
    assert "scores so far (game not finished)" in replayed and "final" not in replayed
    # the env's text mode
    e = env_pkg.raw_env(render_mode="ansi")
    e.reset(options={"deal": record["deal"]})
    for a in record["actions"]:
        e.step(a)
    assert e.render() == render.board_text(state)


def test_one_action_text_for_every_front_end():
    texts = [rules.action_text(a) for a in range(rules.NUM_TEAM_ACTIONS)]
    assert len(set(texts)) == rules.NUM_TEAM_ACTIONS  # every id its own words
    assert rules.action_text(rules.action_id(rules.cell_of(2, 3), 7)) == "7 at (2,3)"
    assert rules.action_text(rules.PASS_ACTION) == "pass" and rules.action_text(rules.show_action(4)) == "show 4"
    assert rules.action_text(-1) == "action -1 (ids are 0..500)"


def test_an_id_out_of_range_names_the_range_of_the_games_own_variant():
    assert rules.action_text(-1, team=False) == "action -1 (ids are 0..490)"
    assert rules.action_text(495, team=False) == "action 495 (ids are 0..490)"  # a show: teams only
    assert rules.action_text(501, team=True) == "action 501 (ids are 0..500)"
    assert rules.action_text(495, team=True) == "show 5"
    two = GameState.new(2, seed=1)
    with pytest.raises(ValueError, match=r"out of range 0\.\.490\)"):
        two.step(600)
    team = GameState.new(4, team=True, seed=1)
    with pytest.raises(ValueError, match=r"out of range 0\.\.500\)"):
        team.step(600)
    session = Session.new(["greedy"], seed=4, hint_spec="greedy")
    for text in ("600", "495"):
        with pytest.raises(ValueError, match=r"ids are 0\.\.490\)"):
            terminal.parse_move(text, session)
    with pytest.raises(ValueError, match=r"action 495 \(ids are 0\.\.490\) is not legal now"):
        session.play(495)
    session = Session.new(["greedy"], seed=4, hint_spec="greedy")
    move = session.play(session.legal_actions()[0])[0]
    assert move.text == rules.action_text(move.action)
    record = session.record()
    assert f"{rules.action_text(record['actions'][0]):<12}" in replay_text(record)
