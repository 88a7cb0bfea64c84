"""The cost of each decision (`evaluation/analysis.py`, `evaluate.py analyze`): the judge
charges a known blunder and not the safe move, `--reference` takes any search spec, the
outputs are written, bad input changes nothing."""

from __future__ import annotations

import json

import pytest

from evaluation import cli as evaluate
from agents.play import play_game
from engine import GameState, random_deal, rules
from evaluation import analysis
import agents
from evaluation.analysis import Judge, analyze_decision, analyze_moves, costliest

# A small budget keeps the tests quick; the blunder is found at this budget and at the default.
SMALL = Judge(agents.parse_agent("selfplay:iterations=2000"))


def cell(row: int, col: int, value: int) -> int:
    return rules.action_id(rules.cell_of(row, col), value)


def blunder_position(other_hand=(10, 4, 3, 2, 5, 6), bag=(1, 3, 4, 4, 2, 3)) -> GameState:
    """Seat 0 to move, holding 5 5 6 7 8 9. Row 3 reads 1 2 _ 2 1 3 _: a 5 in the gap at
    (3,2) makes six tiles summing to 14, and a 10 at (3,6) then completes 24 in seven
    tiles, 40 + 60 = 100 minutes for the next seat. Seat 0 sees no 10 anywhere, so all
    four are among the 18 tiles it has not seen and the next seat, holding 6 of them,
    has one in most worlds (here it really does). The tiles in rows 0 and 6 only make
    that pool smaller."""
    board = {(3, 0): 1, (3, 1): 2, (3, 3): 2, (3, 4): 1, (3, 5): 3,
             (0, 0): 6, (0, 2): 6, (0, 4): 7, (0, 6): 7, (6, 0): 8, (6, 2): 8, (6, 4): 9, (6, 6): 9,
             (0, 1): 1, (6, 1): 4}
    hands = [[5, 5, 6, 7, 8, 9], list(other_hand)]
    return GameState.from_position(board, hands, bag=list(bag))


BLUNDER = cell(3, 2, 5)  # opens the 24 in 7 tiles
SAFE = cell(4, 2, 5)  # the same tile below the row: opens nothing
GIFT = cell(3, 6, 10)  # the next seat's 100 minutes


def test_the_position_is_what_the_test_says():
    state = blunder_position()
    assert state.current_player == 0 and BLUNDER in state.legal_actions() and SAFE in state.legal_actions()
    assert state.step(BLUNDER) == 0  # the blunder scores nothing itself
    assert state.step(GIFT) == 100 and {c.kind for c in state.last_breakdown} == {"sum24", "24in7"}


def flags_the_blunder(judge: Judge) -> bool:
    """The judge charges the blunder (a weaker agent's move: it hands the next seat 100
    minutes) a large loss and names another move, and ranks the safe move far above the
    blunder (both valued in the same sampled world: the decision's)."""
    state = blunder_position()
    blunder = analyze_decision(state, BLUNDER, judge)
    safe = analyze_decision(state, SAFE, judge)
    return (blunder.loss >= 0.5 and blunder.best != BLUNDER and safe.values[SAFE] > blunder.values[BLUNDER] + 0.5
            and safe.loss < blunder.loss - 0.5)


@pytest.mark.parametrize("judge", [SMALL, Judge()], ids=["small", "default"])
def test_a_move_that_gives_away_a_24_in_7_is_flagged(judge):
    assert flags_the_blunder(judge)


def test_a_broken_judge_misses_the_blunder(monkeypatch):
    """The check above can fail: with positions valued for the wrong seat, the blunder
    looks like the best move."""
    right = analysis.Tools.value
    monkeypatch.setattr(analysis.Tools, "value", lambda self, world, seat, action, seed:
                        right(self, world, 1 - seat, action, seed))
    assert not flags_the_blunder(SMALL)


def test_the_blunder_is_the_costliest_decision_of_its_game():
    """Seat 0 plays a quiet move, then the blunder; seat 1 takes its 100 minutes."""
    state = blunder_position()
    quiet = cell(0, 5, 7)
    actions = [quiet, cell(6, 5, 6), BLUNDER, GIFT]
    for action in actions:
        assert state.is_legal(action)
        state.step(action)
    decisions = analyze_moves(blunder_position(), actions, SMALL, seats=[0], game=7, labels=["me", "them"])
    assert [d.step for d in decisions] == [0, 2] and {d.player for d in decisions} == {"me"}
    worst = costliest(decisions, 1)[0]
    assert (worst.step, worst.game, worst.played) == (2, 7, BLUNDER) and worst.loss >= 0.5
    row = analysis.game_errors(decisions)[0]
    assert row["error"] == pytest.approx(sum(d.loss for d in decisions)) and row["decisions"] == 2


def test_same_seed_same_answer_the_judges_own_move_costs_nothing_and_the_floor_is_small():
    state = blunder_position()
    a = analyze_decision(state, SAFE, SMALL)
    assert a == analyze_decision(state, SAFE, SMALL)  # the searches and the world are fixed by (seed, game, step)
    assert a.floor_choice is not None and abs(a.floor_loss) < analysis.BLUNDER
    own = analyze_decision(state, a.best, SMALL)
    assert own.loss == 0.0 and own.best == a.best
    assert analysis.Decision.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_the_judge_values_moves_in_the_sampled_world_not_the_real_one():
    """The judge sees what the deciding seat saw: changing the hidden hand and bag of the
    other seat (not the board or the mover's hand) changes nothing for a fixed seed."""
    state = blunder_position()
    other = blunder_position(other_hand=(3, 4, 4, 2, 5, 6), bag=(1, 3, 10, 4, 2, 3))  # the same unseen tiles
    assert other.hands[1].tolist() != state.hands[1].tolist()
    assert analyze_decision(state, BLUNDER, SMALL, floor=False) == analyze_decision(other, BLUNDER, SMALL, floor=False)


@pytest.mark.parametrize("judge, message", [
    (Judge(agents.parse_agent("greedy")), "the judge values moves with its search, and greedy has none"),
    (Judge("selfplay"), "the judge must be a typed agent"),
    (Judge(seed=-1), "seed must be an integer >= 0"),
])
def test_bad_judges_are_refused(judge, message):
    with pytest.raises(ValueError, match=message):
        judge.validate()


# --- evaluate.py analyze ---------------------------------------------------------------------
def saved_run(path, games: int = 2):
    """A run directory with games.jsonl as `evaluate.py --save-games` writes it."""
    path.mkdir()
    lines = []
    for game in range(games):
        import agents

        record = play_game([agents.make("greedy"), agents.make("random", seed=game)], random_deal(game)).to_dict()
        lines.append(json.dumps({"game": game, "deal_index": game, "table": 0, "labels": ["greedy", "random"],
                                 **record, "moves": len(record["actions"])}))
    (path / "games.jsonl").write_text("\n".join(lines) + "\n")
    return path


FAST = ["--reference", "selfplay:iterations=200", "--no-progress"]


def test_cli_analyze_writes_the_report(tmp_path, capsys):
    run = saved_run(tmp_path / "run")
    assert evaluate.main(["analyze", str(run), "--agent", "random", *FAST]) == 0
    result = json.loads((run / "analysis.json").read_text())
    assert set(result["players"]) == {"random"} and result["players"]["random"]["games"] == 2
    assert result["decisions_scored"] == len(result["decisions"]) > 10
    assert all(d["player"] == "random" for d in result["decisions"])
    assert result["judge"]["spec"] == "selfplay:iterations=200" and "units" in result
    assert (run / "analysis.png").stat().st_size > 0
    text = (run / "analysis.md").read_text()
    assert "| `random` | 2 |" in text and "Costliest decisions" in text
    out = capsys.readouterr().out
    assert out.startswith("judge: selfplay:iterations=200\n") and "error per game" in out
    # one game, one seat: its own files beside the run's
    assert evaluate.main(["analyze", str(run / "games.jsonl"), "--game", "1", "--seat", "0", *FAST]) == 0
    one = json.loads((run / "analysis-game-1.json").read_text())
    assert {d["game"] for d in one["decisions"]} == {1} and {d["seat"] for d in one["decisions"]} == {0}


def test_analyze_says_when_the_last_game_is_cut_short(tmp_path, capsys):
    """A games.jsonl whose last line a killed run left half-written: the games before it are
    analysed and a note says which line was left out (it was dropped silently before)."""
    run = saved_run(tmp_path / "run")
    journal = run / "games.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:-1] + [lines[-1][:len(lines[-1]) // 2]]) + "\n")
    assert evaluate.main(["analyze", str(run), "--agent", "random", *FAST]) == 0
    err = capsys.readouterr().err
    assert f"{journal}, line {len(lines)} is cut short" in err and f"the {len(lines) - 1} before it are read" in err
    assert json.loads((run / "analysis.json").read_text())["players"]["random"]["games"] == len(lines) - 1


@pytest.mark.parametrize("args, message", [
    (["NOWHERE"], "error: no such game record file"),
    (["RUN", "--game", "5"], "error: game 5 is not in"),
    (["RUN", "--seat", "2"], "error: seat must be in 0..1, got 2"),
    (["RUN", "--agent", "ismcts"], "error: no seat is played by 'ismcts'"),
    (["RUN", "--reference", "nobody"], "error: unknown agent 'nobody'"),
    (["RUN", "--reference", "greedy"], "error: the judge values moves with its search, and greedy has none"),
    (["RUN", "--seed", "-1"], "error: seed must be an integer >= 0"),
])
def test_cli_analyze_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    run = saved_run(tmp_path / "run", games=1)
    args = [str(run) if a == "RUN" else str(tmp_path / "nowhere") if a == "NOWHERE" else a for a in args]
    assert evaluate.main(["analyze", *FAST, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and len(err.splitlines()) == 1
    assert sorted(p.name for p in run.iterdir()) == ["games.jsonl"]


def test_cli_analyze_refuses_games_saved_without_moves(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "games.jsonl").write_text(json.dumps({"game": 0, "labels": ["a", "b"], "scores": [1, 2]}) + "\n")
    assert evaluate.main(["analyze", str(run), *FAST]) == 2
    assert "--save-games" in capsys.readouterr().err


def test_the_default_judge_is_named_and_three_players_get_plain_ismcts(tmp_path, capsys):
    """Without --reference the report names the validated judge; 3-player games, which
    ship no network, are judged by plain ISMCTS at the same budget."""
    assert analysis.default_judge(2).spec == analysis.JUDGE == "selfplay:iterations=28000"
    assert analysis.default_judge(4, team=True).spec == analysis.JUDGE
    assert analysis.default_judge(3).spec == analysis.JUDGE_WITHOUT_NETWORK
    run = tmp_path / "run"
    run.mkdir()
    record = play_game([agents.make("greedy") for _ in range(3)], random_deal(3), num_players=3).to_dict()
    (run / "games.jsonl").write_text(json.dumps({"game": 0, "labels": ["a", "b", "c"], **record}) + "\n")
    assert evaluate.main(["analyze", str(run), "--seat", "1", "--reference", "ismcts:iterations=100",
                          "--no-progress", "--no-plots"]) == 0
    assert capsys.readouterr().out.startswith("judge: ismcts:iterations=100\n")
    assert json.loads((run / "analysis.json").read_text())["decisions_scored"] > 5
