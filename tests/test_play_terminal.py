"""The terminal game driven through its input, and the game records it shares with the
web app and tournaments."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import agents
from humanplay import cli as play
from agents.play import play_game
from engine import GameState, random_deal, rules
from engine.game import Combination
from evaluation.replay import load_game, replay_text
from humanplay import terminal
from env.render import breakdown_text
from humanplay.session import Session, load_record

HINT = "ismcts:iterations=200"


class Script:
    """Feeds lines to the game as a person would type them; records what it printed."""

    def __init__(self, lines):
        self.lines = list(lines)
        self.out: list[str] = []

    def read(self, prompt: str) -> str:
        if callable(self.lines[0]):
            return self.lines.pop(0)()
        return self.lines.pop(0)

    def write(self, text: str) -> None:
        self.out.append(text)

    @property
    def text(self) -> str:
        return "\n".join(self.out)


def _typed(session: Session) -> str:
    """The first legal placement of `session` as 'row col value' (or 'pass'); once the
    game is over, an empty line (no review)."""
    if session.is_over:
        return ""
    action = session.legal_actions()[0]
    if action == rules.PASS_ACTION:
        return "pass"
    cell, value = rules.decode_action(action)
    return f"{cell // 7} {cell % 7} {value}"


def test_scripted_game_bad_move_hint_undo_to_the_end(tmp_path):
    session = Session.new(["greedy"], seed=4, hint_spec=HINT)
    first = _typed(session)
    start_board = session.view.board.tolist()
    # 1 move, 3 bad inputs, hint, undo (back to the start), undo with nothing to undo, then play on
    script = Script([first, "9 9 9", "3 3 5", "hello", "hint", "undo", "undo", "moves"]
                    + [lambda: _typed(session)] * 60)
    record = terminal.run(session, tmp_path / "g.jsonl", script.read, script.write)
    text = script.text
    assert "not played: row and column are 0..6, got (9,9)" in text
    assert "not played: (3,3) is taken" in text
    assert "unknown command 'hello'" in text
    assert f"hint ({HINT}): play " in text and "% of visits" in text
    assert "took back 2 move(s)" in text
    assert "nothing to undo" in text
    assert "game over: " in text and "type review for a review" in text and "review: your" not in text
    assert session.is_over and record["scores"] == session.view.scores.tolist()
    assert record["actions"][0] == rules.action_id(rules.cell_of(*map(int, first.split()[:2])), int(first.split()[2]))
    # the game went on from the undone position: the record replays from the deal
    replayed = GameState.from_deal(record["deal"], 2)
    assert replayed.board.tolist() == start_board
    for a in record["actions"]:
        replayed.step(a)
    assert replayed.scores.tolist() == record["scores"]
    # every placement printed its breakdown
    assert "player 0 (you): " in text and ("sum 7" in text or "sum 24" in text)


def test_a_hand_of_one_is_one_tile_on_the_boards(tmp_path):
    """The terminal's boards give each hand's size: "1 tile", never "1 tiles" (the hands
    run out at the end of a game), in play and in the review's boards."""
    from humanplay.review import review_text

    session = Session.new(["greedy"], seed=4, hint_spec="greedy")
    script = Script([lambda: _typed(session)] * 60)
    record = terminal.run(session, tmp_path / "g.jsonl", script.read, script.write)
    assert session.is_over
    assert re.search(r"\b1 tile\b", script.text) and not re.search(r"\b1 tiles\b", script.text)
    state = GameState.from_deal(record["deal"], 2)
    for step, action in enumerate(record["actions"]):  # the first move after which a hand holds one tile
        state.step(action)
        if 1 in state.hand_sizes.tolist():
            break
    move = {"number": step + 1, "step": step, "better": action, "move": "m", "points": 0, "breakdown": "",
            "better_move": "b", "better_points": 0, "better_breakdown": "", "value": 0.5, "share": 0.25}
    text = review_text({"moves": [move], "decisions": 9, "error": 0.5, "share": 0.25, "judge": "judge: j"}, record)  # its board: after that move
    assert re.search(r"\b1 tile\b", text) and not re.search(r"\b1 tiles\b", text)


def test_quit_saves_a_record_that_opens_in_evaluate_replay_and_play_load(tmp_path, monkeypatch, capsys):
    session = Session.new(["greedy"], seed=2, hint_spec=HINT)
    script = Script([_typed(session), "quit"])
    save = tmp_path / "quit.jsonl"
    terminal.run(session, save, script.read, script.write)
    assert "game saved to" in script.text
    rec = load_game(save, 0)  # evaluate.py replay's reader
    shown = replay_text(rec)
    assert "player 0 (human)" in shown and "scores so far (game not finished)" in shown
    assert "final" not in shown
    assert rec["actions"] == session.actions and len(rec["actions"]) == 2
    # play.py --load goes on with it (greedy replies as before), then quits again
    lines = iter(["quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert play.main(["--load", str(save), "--save", str(tmp_path / "again.jsonl"), "--hint", HINT]) == 0
    again = json.loads((tmp_path / "again.jsonl").read_text())
    assert again["actions"] == rec["actions"] and again["labels"] == ["human", "greedy"]


def test_ctrl_c_saves_the_game_and_prints_the_command_that_continues(tmp_path, monkeypatch, capsys):
    def ctrl_c(prompt=""):
        raise KeyboardInterrupt

    session = Session.new(["greedy"], seed=2, hint_spec=HINT)
    script = Script([_typed(session), ctrl_c])
    save = tmp_path / "ctrl-c.jsonl"
    with pytest.raises(KeyboardInterrupt):
        terminal.run(session, save, script.read, script.write)
    assert f"continue: python play.py --load {save}" in script.text
    assert load_game(save, 0)["actions"] == session.actions and len(session.actions) == 2
    # play.py: the same, exit status 130 and no traceback (nothing but the saved line after it)
    moves = [_typed(Session.new(["greedy"], seed=3, hint_spec=HINT))]  # one move, then Ctrl-C
    monkeypatch.setattr("builtins.input", lambda prompt="": moves.pop() if moves else ctrl_c())
    assert play.main(["--seed", "3", "--save", str(tmp_path / "main.jsonl"), "--hint", HINT]) == 130
    out = capsys.readouterr()
    assert f"continue: python play.py --load {tmp_path / 'main.jsonl'}" in out.out and "Traceback" not in out.err
    assert len(json.loads((tmp_path / "main.jsonl").read_text())["actions"]) == 2


def test_tournament_record_opens_for_play_and_replay(tmp_path, monkeypatch):
    deal = random_deal(9)
    game = play_game([agents.make("greedy"), agents.make("random", seed=1)], deal).to_dict()
    line = {"game": 3, "deal_index": 1, "table": 0, "labels": ["greedy", "random"], "deal_seed": 9,
            "seats": ["greedy", "random"], **game}
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"game": 2, "labels": ["x"]}) + "\n" + json.dumps(line) + "\n")
    record = load_record(path, 3)
    session = Session.from_record(record, seat=1, hint_spec=HINT)
    assert session.is_over and session.actions == game["actions"]
    assert session.labels == ["greedy", "human"]
    steps = Script(["", "", "b", "5", "q"])
    terminal.replay(session, steps.read, steps.write)
    assert "move 2/" in steps.text and "move 5/" in steps.text
    monkeypatch.setattr("builtins.input", lambda prompt="": "q")
    assert play.main(["--load", str(path), "--game", "3", "--seat", "1"]) == 0


@pytest.mark.parametrize("record, message", [
    ({"deal": [1] * 40, "num_players": 2, "actions": []}, "four of each value"),
    ({"deal": list(random_deal(0)), "num_players": 2, "actions": [489, 489]}, "not legal"),
    ({"deal": list(random_deal(0)), "num_players": 5, "actions": []}, "num_players"),
    ({"num_players": 2, "actions": []}, "lacks deal"),
    ([1, 2], "JSON object"),
])
def test_bad_records_are_refused(record, message):
    with pytest.raises(ValueError, match=message):
        Session.from_record(record)


def test_bad_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no such game record"):
        load_record(tmp_path / "none.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1: not JSON"):
        load_record(bad)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="seat must be"):
        Session.new(["greedy"], seat=2)
    with pytest.raises(ValueError, match="bad parameters"):
        Session.new(["greedy:depth=2"])
    with pytest.raises(ValueError, match="one per other seat"):
        Session.new(["greedy", "random"], num_players=4)
    assert play.main(["--team", "--players", "2"]) == 2


def test_breakdown_words():
    combos = (Combination("sum24", "row", 40), Combination("run4", "col", 40), Combination("double_time", None, 80))
    assert breakdown_text(combos, 160) == "sum 24 (row) + run of 4 (col), doubled: 160"
    assert breakdown_text((), 0) == "no minutes"


def _hidden_twin(deal: np.ndarray, num_players: int) -> np.ndarray:
    """The deal with every tile seat 0 cannot see shuffled: start tile and seat 0's hand
    kept, the set-aside tiles, the other hands and the bag permuted among themselves."""
    hand = rules.hand_size(num_players)
    hidden = [1, 2, 3] + list(range(4 + hand, rules.NUM_TILES))
    twin = deal.copy()
    twin[hidden] = np.roll(deal[hidden], 7)
    assert not np.array_equal(twin, deal)
    return twin


def test_nothing_hidden_reaches_the_screen_or_the_hint(tmp_path):
    deal = random_deal(21)
    outputs = []
    for d in (deal, _hidden_twin(deal, 2)):
        session = Session(d, 2, False, 0, ["greedy"], seed=5, hint_spec=HINT)
        script = Script(["hint", "moves", "quit"])
        terminal.run(session, tmp_path / "h.jsonl", script.read, script.write)
        outputs.append(script.out[:-1])  # all but the line naming the saved file
    assert outputs[0] == outputs[1]


def test_team_shows_are_seen_only_by_the_partner():
    session = Session.new(["greedy"], 4, True, seat=1, seed=2, hint_spec=HINT)
    value = next(v + 1 for v in range(rules.MAX_VALUE) if session.view.hand[v])
    moves = session.play(terminal.parse_move(f"show {value}", session))
    assert [m.action for m in moves] == [rules.show_action(value)]
    show = moves[0]
    assert show.public(3, True)["move"] == f"show {value}"  # the partner
    assert show.public(0, True) == {"seat": 1, "action": None, "move": "shows a tile to its partner",
                                    "points": 0, "breakdown": ""}
    with pytest.raises(ValueError, match="cannot show"):
        terminal.parse_move(f"show {value}", session)  # once a turn


# --- undo is honest: no undo after the end, and an undo deals the unseen tiles afresh -----------
def test_no_undo_once_the_game_is_over(tmp_path):
    session = Session.new(["greedy"], seed=6, hint_spec=HINT)
    while not session.is_over:
        session.play(session.legal_actions()[0])
    record = session.record()  # the whole deal is public now
    with pytest.raises(ValueError, match="game is over"):
        session.undo()
    assert session.record() == record
    script = Script([])
    assert terminal._command("undo", session, tmp_path / "x.jsonl", script.write)
    assert "game is over" in script.text and session.record() == record


def test_undo_deals_what_the_person_has_not_seen_afresh(tmp_path):
    """Two games that differ only in tiles seat 0 has not seen: after a move and its undo
    they are the same game (the unseen tiles were dealt again from what seat 0 saw), so
    the undone move told nothing about the bag or the other hand."""
    deal = random_deal(23)
    sessions = []
    for d in (deal, _hidden_twin(deal, 2)):
        session = Session(d, 2, False, 0, ["greedy"], seed=5, hint_spec=HINT)
        script = Script([_typed(session), "undo", "quit"])
        terminal.run(session, tmp_path / "u.jsonl", script.read, script.write)
        assert "took back 2 move(s)" in script.text
        sessions.append(session)
    a, b = (s.record() for s in sessions)
    assert a["deal"] == b["deal"] and a["actions"] == b["actions"] == []
    # and the fresh deal is a real one: the game plays on from it and its record replays
    session = sessions[0]
    for _ in range(3):
        session.play(session.legal_actions()[0])
    session.undo()
    replayed = GameState.from_deal(session.record()["deal"], 2)
    for action in session.actions:
        replayed.step(action)
    assert replayed.scores.tolist() == session.view.scores.tolist()
    assert replayed.hands.tolist() == session._state.hands.tolist()


def test_undo_redeals_in_bigger_games_and_keeps_what_was_seen():
    """Undos deep into 3- and 4-player and team games: each undo comes back to the same
    public position and hand, and playing the same move again does not always draw the
    tile drawn before (the bag was dealt afresh)."""
    for players, team, seat in ((3, False, 1), (4, False, 2), (4, True, 3)):
        session = Session.new(["greedy"], players, team, seat, seed=players + seat, hint_spec=HINT)
        redrawn = 0
        for _ in range(12):
            before = (session.view.board.tolist(), session.view.hand.tolist(), session.view.scores.tolist())
            action = session.legal_actions()[0]
            session.play(action)
            if session.is_over:
                break
            drawn = session.view.hand.tolist()
            session.undo()
            assert (session.view.board.tolist(), session.view.hand.tolist(),
                    session.view.scores.tolist()) == before
            session.play(action)
            redrawn += session.view.hand.tolist() != drawn
            if session.is_over:
                break
        assert len(session.actions) > 3 and redrawn > 0, (players, team)


# --- the review after the game --------------------------------------------------------------------
def test_review_at_the_end_shows_the_three_costliest_moves_and_the_better_ones(tmp_path, monkeypatch):
    from evaluation.analysis import analyze_game
    from humanplay import review as review_module

    session = Session.new(["greedy"], seed=4, hint_spec=HINT)
    script = Script(["review"] + [lambda: _typed(session) or "review"] * 40)
    # "review" during the game is refused; then the game is played to the end and reviewed
    terminal.run(session, tmp_path / "r.jsonl", script.read, script.write)
    text = script.text
    assert "a review is for a finished game" in text
    assert "review: your 3 costliest move(s) of " in text
    assert review_module.judge_line(2, False) in text and "judge: selfplay:iterations=28000 (it scores " in text
    # the same analysis, run apart: the review lists its three costliest decisions, in order
    record = session.record()
    judge, tools = review_module.judge_for(2, False)
    decisions = analyze_game(record, judge, seats=[0], floor=False, tools=tools)
    worst = sorted(decisions, key=lambda d: -d.loss)[:3]
    listed = [line for line in script.out[-1].splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert [line.split(":")[0] for line in listed] == [f"{k}. move {d.move_number}" for k, d in enumerate(worst, 1)]
    for d in worst:
        assert f"you played {rules.action_text(d.played)} " in text
        assert f"the judge plays {rules.action_text(d.best)} " in text
        assert f"yours gave away about {max(round(50 * d.loss), 1)}% of a win" in text
    # each better move is shown on the board, marked as the last move
    board = script.out[-1].split("the board with the judge's move (marked *):")[1]
    cell, value = rules.decode_action(worst[0].best)
    line = board.splitlines()[4 + cell // 7]  # the status, scores and column lines come first
    assert re.search(rf"\b{value}\)?\*", line)  # "7*", or "( 7)*" on a Double Time cell


def test_play_load_review_of_a_saved_game(tmp_path, capsys):
    session = Session.new(["greedy"], seed=8, hint_spec=HINT)
    while not session.is_over:
        session.play(session.legal_actions()[-1])
    path = tmp_path / "done.jsonl"
    path.write_text(json.dumps(session.record()) + "\n")
    assert play.main(["--load", str(path), "--review"]) == 0
    out = capsys.readouterr().out
    assert "costliest move(s)" in out and "the judge plays " in out and "judge: selfplay:iterations=28000" in out
    # an unfinished game has no review, and nothing is written
    unfinished = Session.new(["greedy"], seed=8, hint_spec=HINT)
    path.write_text(json.dumps(unfinished.record()) + "\n")
    assert play.main(["--load", str(path), "--review"]) == 2
    assert "is for a finished game" in capsys.readouterr().err
    assert play.main(["--review"]) == 2
    assert "--review needs --load" in capsys.readouterr().err


def test_a_hint_that_waits_for_the_background_compile_says_so_first(tmp_path, monkeypatch):
    """On a cold cache the hint's search compiles in the background while the person reads
    the board; that thread prints nothing (a line from it landed on the `your move>`
    prompt), and a hint asked while it runs first says how long it waits, on its own line."""
    import threading

    from engine import kernel_cache

    done = threading.Event()
    said = []
    monkeypatch.setattr(kernel_cache, "say", said.append)

    def slow_compile(jobs, what, **kw):
        if kw.get("announce", True):
            kernel_cache.say(f"compiling {what}")
        done.wait(0.5)

    monkeypatch.setattr(kernel_cache, "compile_in_parallel", slow_compile)
    monkeypatch.setattr(agents, "compile_jobs", lambda sources: ["a job"])
    session = Session.new(["greedy"], seed=2, hint_spec="greedy")
    script = Script(["hint", "quit"])
    terminal.run(session, tmp_path / "h.jsonl", script.read, script.write)
    lines = script.text.splitlines()
    wait = next(i for i, line in enumerate(lines) if line.startswith("the hint's search is compiling"))
    assert f"about {terminal.HINT_COLD_SECONDS} s" in lines[wait] and lines[wait + 1].startswith("hint (greedy)")
    assert said == []  # the background compile said nothing over the prompt


def test_a_search_partners_show_reaches_the_persons_screen_and_page():
    """The AI partner (seat 2, a search) shows a tile; the person (seat 0) sees its value on
    the terminal board, in the move list and in the web page's state; an opponent does not."""
    from humanplay.web import view_state
    session = Session.new(["ismcts:iterations=20"], 4, True, seat=0, seed=3, hint_spec=HINT)
    placement = next(a for a in session.legal_actions() if a < rules.PASS_ACTION)
    moves = session.play(placement)
    shows = [m for m in moves if m.action >= rules.SHOW_BASE]
    assert [m.seat for m in shows] == [1, 2, 3]  # every search seat shows before its first placement
    value = shows[1].action - rules.SHOW_BASE + 1
    view = session.view
    assert view.partner_shown == value
    assert f"shows: {value}" in terminal.board_text(view, session).splitlines()[-1]
    assert shows[1].public(0, True)["move"] == f"show {value}"
    assert shows[0].public(0, True)["move"] == "shows a tile to its partner"  # an opponent's stays hidden
    assert view_state(view, session, [], [], "g")["partner_shows"] == value
