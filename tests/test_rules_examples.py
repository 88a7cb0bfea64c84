"""The worked examples of docs/rules.md, executed on the numba engine and the reference.

docs/rules.md is the source of the examples: every fenced block marked ``example``,
``deal`` or ``actions`` there is parsed and run here (its notation is described in the
page's "How to read the examples" section), so the page and the engines cannot drift
apart. `GOLDEN` is the minimum the page must hold: the worked examples of the rules this
project implements (board, value placed, cell, minutes).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from engine import GameState, rules
from engine.reference import ReferenceGame

RULES_DOC = Path(__file__).resolve().parent.parent / "docs" / "rules.md"

# (board, value, (row, col), minutes)
GOLDEN = [
    ({(3, 3): 3}, 4, (3, 4), 20),
    ({(3, 3): 5, (3, 4): 6}, 7, (3, 5), 30),
    ({(3, 3): 8, (3, 4): 8}, 8, (3, 2), 90),
    ({(3, 3): 10, (3, 5): 10, (2, 4): 3}, 4, (3, 4), 120),
    ({(3, 0): 2, (3, 1): 3, (3, 2): 4, (3, 3): 5, (3, 4): 1, (3, 5): 1}, 8, (3, 6), 100),
    ({(2, 2): 3, (3, 3): 1}, 4, (2, 1), 40),
    ({(3, 1): 9, (3, 2): 2, (3, 3): 3}, 4, (3, 4), 30),
    ({(3, 1): 6, (3, 2): 5}, 4, (3, 3), 30),
    ({(3, 2): 3, (3, 4): 5}, 4, (3, 3), 30),
    ({(3, 1): 4, (3, 2): 5, (3, 4): 5, (3, 5): 4}, 6, (3, 3), 100),
    ({(3, 2): 10, (3, 3): 10}, 4, (3, 4), 40),
    ({(3, 3): 2}, 2, (2, 2), 0),
]

ENGINES = [GameState, ReferenceGame]
SETUP_KEYS = ("players", "team", "board", "hands", "scores", "to move")
CELL = r"\(\s*(\d)\s*,\s*(\d)\s*\)"


# --- reading the page -------------------------------------------------------------------
def doc_blocks(kind: str, text: str | None = None) -> list[str]:
    """The bodies of the fenced blocks of `kind` (```kind ... ```) in docs/rules.md."""
    text = RULES_DOC.read_text() if text is None else text
    return re.findall(rf"^```{kind}\n(.*?)^```", text, flags=re.S | re.M)


def block_lines(body: str) -> list[tuple[str, str]]:
    """(key, value) per non-empty line, comments after '#' dropped."""
    out = []
    for raw in body.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"example line without 'key:' in docs/rules.md: {raw!r}")
        out.append((key.strip(), value.strip()))
    return out


def parse_cells(text: str) -> list[tuple[int, int]]:
    if text == "none":
        return []
    cells = [(int(r), int(c)) for r, c in re.findall(CELL, text)]
    if not cells:
        raise ValueError(f"no (row,col) cells in {text!r}")
    return cells


def parse_board(text: str) -> dict[tuple[int, int], int]:
    pairs = re.findall(CELL + r"\s*=\s*(\d+)", text)
    if not pairs:
        raise ValueError(f"no (row,col)=value entries in board {text!r}")
    return {(int(r), int(c)): int(v) for r, c, v in pairs}


def parse_hands(text: str) -> list[list[int]]:
    return [[] if part.strip() == "-" else [int(v) for v in part.split()] for part in text.split("|")]


def parse_move(text: str) -> int:
    """'4 at (3,4)', 'pass' or 'show 7' as an action id."""
    if text == "pass":
        return rules.PASS_ACTION
    show = re.fullmatch(r"show\s+(\d+)", text)
    if show:
        return rules.show_action(int(show.group(1)))
    place = re.fullmatch(r"(\d+)\s+at\s+" + CELL, text)
    if not place:
        raise ValueError(f"cannot read the move {text!r}")
    value, row, col = (int(g) for g in place.groups())
    return rules.action_id(rules.cell_of(row, col), value)


def parse_minutes(text: str) -> tuple[int, list[tuple[str, str | None, int]] | None]:
    """'120 = sum24 row 40 + 24/7 - 60' -> (120, [(kind, axis or None, minutes), ...])."""
    total, eq, rest = text.partition("=")
    if not eq:
        return int(total), None
    entries = []
    for part in rest.split("+"):
        kind, axis, minutes = part.split()
        entries.append((kind, None if axis == "-" else axis, int(minutes)))
    return int(total), entries


def parse_setup(lines: list[tuple[str, str]]) -> dict:
    setup = {key: value for key, value in lines if key in SETUP_KEYS}
    players = int(setup.get("players", 2))
    hands = parse_hands(setup["hands"])
    scores = [int(s) for s in setup["scores"].split()] if "scores" in setup else None
    return dict(board=parse_board(setup["board"]), hands=hands, num_players=players,
                team=setup.get("team") == "yes", current_player=int(setup.get("to move", 0)),
                scores=scores)


# --- running an example ----------------------------------------------------------------
def snapshot(game) -> tuple:
    return (game.board.tolist(), game.scores.tolist(), game.hands.tolist(), game.current_player,
            sorted(game.timeout_cells), game.shown_tiles.tolist())


def numbers(text: str) -> list[float]:
    return [float(x) for x in text.split()]


def run_example(engine, body: str) -> None:
    lines = block_lines(body)
    setup = parse_setup(lines)
    game = engine.from_position(setup.pop("board"), setup.pop("hands"), **setup)
    last = None  # the points of the last play:
    for key, value in lines:
        if key in SETUP_KEYS:
            continue
        where = f"{key}: {value}"
        if key == "play":
            action = parse_move(value)
            last = game.step(action)
        elif key == "illegal":
            action = parse_move(value)
            before = snapshot(game)
            assert action not in game.legal_actions() + game.show_actions(), where
            with pytest.raises(ValueError):
                game.step(action)
            assert snapshot(game) == before, f"{where} changed the game"
        elif key == "minutes":
            total, entries = parse_minutes(value)
            assert last == total, where
            if entries is not None:
                got = sorted((c.kind, c.axis, c.minutes) for c in game.last_breakdown)
                assert got == sorted(entries), where
            assert sum(c.minutes for c in game.last_breakdown) == total, where
        elif key == "time outs":
            want = sorted(rules.cell_of(r, c) for r, c in parse_cells(value))
            assert sorted(game.timeout_cells) == want, where
        elif key == "legal":
            moves = re.split(r",\s*(?![^()]*\))", value)  # commas outside (row,col)
            want = [rules.PASS_ACTION] if value == "pass" else sorted(parse_move(m.strip()) for m in moves)
            assert game.legal_actions() == want, where
        elif key == "over":
            assert game.is_over == (value == "yes"), where
        elif key == "ranking":
            assert game.ranking().tolist() == [int(x) for x in value.split()], where
        elif key == "rewards":
            want = numbers(value)
            assert np.allclose(game.rewards(), want, atol=1e-3), where
            assert abs(sum(game.rewards())) < 1e-9, "rewards must add up to 0"
        elif key == "shows":
            want = [] if value == "none" else [rules.show_action(int(v)) for v in value.split()]
            assert game.show_actions() == want, where
        elif key == "shown":
            assert game.shown_tiles.tolist() == [int(v) for v in value.split()], where
        else:
            raise ValueError(f"unknown example line {where!r} in docs/rules.md")


EXAMPLES = doc_blocks("example")


@pytest.fixture(params=ENGINES, ids=lambda e: e.__name__)
def engine(request):
    return request.param


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=lambda i: f"example{i + 1}")
def test_doc_example(engine, index):
    run_example(engine, EXAMPLES[index])


def first_play(body: str):
    """(board, value, (row, col), minutes) of an example that starts with a placement."""
    lines = block_lines(body)
    setup = parse_setup(lines)
    moves = [(k, v) for k, v in lines if k in ("play", "minutes")]
    if len(moves) < 2 or moves[0][0] != "play" or moves[1][0] != "minutes" or moves[0][1] == "pass":
        return None
    action = parse_move(moves[0][1])
    if action >= rules.PASS_ACTION:
        return None
    cell, value = rules.decode_action(action)
    return setup["board"], value, divmod(cell, rules.BOARD_SIZE), parse_minutes(moves[1][1])[0]


def test_doc_holds_every_golden_example():
    in_doc = [first_play(body) for body in EXAMPLES]
    missing = [g for g in GOLDEN if g not in in_doc]
    assert not missing, f"docs/rules.md lacks the golden examples {missing}"


def test_examples_are_numbered_in_order():
    numbers_seen = [int(n) for n in re.findall(r"^\*\*(\d+)\. ", RULES_DOC.read_text(), flags=re.M)]
    assert numbers_seen == list(range(1, len(EXAMPLES) + 1))


def test_action_ids_of_the_doc():
    rows = block_lines("\n".join(line.replace("=", ":", 1) for line in doc_blocks("actions")[0].splitlines()))
    assert len(rows) >= 6
    for move, action_id in rows:
        assert parse_move(move) == int(action_id), move
    assert rules.NUM_ACTIONS == 491 and rules.NUM_TEAM_ACTIONS == 501


def test_deal_convention_of_the_doc(engine):
    (body,) = doc_blocks("deal")
    fields = dict(block_lines(body))
    players = int(fields["players"])
    seats = [[int(v) for v in fields[f"seat {s}"].split()] for s in range(players)]
    start, removed = int(fields["start"]), [int(v) for v in fields["set aside"].split()]
    bag = [int(v) for v in fields["bag"].split()]
    deal = [start, *removed, *(v for hand in seats for v in hand), *bag]
    game = engine.from_deal(deal, players)
    assert game.board[3, 3] == start and int((game.board > 0).sum()) == 1
    assert game.removed.tolist() == removed
    for seat, hand in enumerate(seats):
        assert len(hand) == rules.hand_size(players)
        assert game.hands[seat].tolist() == np.bincount(hand, minlength=11)[1:].tolist()
    assert game.bag.tolist() == bag
    held = game.hands[0].copy()
    action = game.legal_actions()[0]
    game.step(action)
    held[rules.decode_action(action)[1] - 1] -= 1
    held[bag[0] - 1] += 1
    assert game.hands[0].tolist() == held.tolist(), "the mover draws the bag's first tile"


def test_parser_rejects_unknown_lines():
    with pytest.raises(ValueError, match="unknown example line"):
        run_example(GameState, "board: (3,3)=3\nhands: 4 | -\nscore: 20\n")
