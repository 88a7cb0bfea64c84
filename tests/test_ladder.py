"""evaluation/ladder.py: the Elo ladder of a self-play run (games, resume, ratings, outputs, CLI)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from evaluation import cli as evaluate
from agents import AgentRecipe, parse_agent
from evaluation.ladder import (GAMES_FILE, JSON_FILE, PLOT_FILE, Ladder, elo_difference, fit_ladder,
                               load_ladder_games, rebuild_ladder, significant_drops)

# A fake self-play run whose generations are ordered by construction: more search is stronger.
GENERATIONS = ["random", "ismcts:iterations=5", "ismcts:iterations=60"]
ANCHORS = ["greedy"]
SETTINGS = dict(anchors=ANCHORS, games_per_pair=24, seed=5, workers=1, previous=2, bootstrap=200)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def wall(generation: int) -> float:
    return 100.0 * (generation + 1)


def game_lines(run: Path) -> list[str]:
    return [line for line in (run / GAMES_FILE).read_text().splitlines() if '"kind":"game"' in line]


def game_key(line: str) -> tuple:
    r = json.loads(line)
    return r["generation"], r["opponent"], r["game"]


@pytest.fixture(scope="module")
def ladder_run(tmp_path_factory):
    """The fake ladder played once; ladder.json is kept after every generation."""
    run = tmp_path_factory.mktemp("ladder") / "run"
    ladder = Ladder(run, **SETTINGS)
    for g, spec in enumerate(GENERATIONS):
        ladder.add_generation(g, parse_agent(spec), wall(g))
        shutil.copy(run / JSON_FILE, run.parent / f"after_gen{g}.json")
    return run


# --- the fake ladder ----------------------------------------------------------------------------
@pytest.mark.slow
def test_ladder_rates_ordered_generations_in_order(ladder_run):
    res = json.loads((ladder_run / JSON_FILE).read_text())
    gens = res["generations"]
    assert [g["generation"] for g in gens] == [0, 1, 2]
    assert [g["spec"] for g in gens] == GENERATIONS
    assert [g["wall_s"] for g in gens] == [wall(0), wall(1), wall(2)]
    assert gens[0]["elo"] < gens[1]["elo"] < gens[2]["elo"]
    for entry in gens + list(res["anchors"].values()):
        lo, hi = entry["elo_ci95"]
        assert lo <= entry["elo"] <= hi
    # games: gen0 plays greedy; gen1 greedy + gen0; gen2 greedy + gen0 + gen1 (24 games a match)
    assert [g["games"] for g in gens] == [24 * 3, 24 * 3, 24 * 3]
    assert res["anchors"] == {"greedy": {"elo": 0.0, "elo_ci95": [0.0, 0.0], "games": 24 * 3}}
    assert res["scale"].startswith("greedy = 0 Elo")
    assert res["games"] == 24 * 6 and res["void_games"] == 0
    diff, lo, hi = elo_difference(ladder_run, 2, 0)
    assert diff > 100 and lo > 0
    assert res["last_minus_first"] == {"first": 0, "last": 2, "elo": pytest.approx(diff, abs=0.06),
                                       "ci95": [pytest.approx(lo, abs=0.06), pytest.approx(hi, abs=0.06)]}
    assert significant_drops(ladder_run) == res["significant_drops"] == []
    assert (ladder_run / PLOT_FILE).read_bytes()[:8] == PNG_MAGIC
    keys = [game_key(line) for line in game_lines(ladder_run)]
    assert len(keys) == len(set(keys)) == 24 * 6


@pytest.mark.slow
def test_resume_after_a_kill_plays_only_the_missing_games(ladder_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(ladder_run, run)
    full = (run / GAMES_FILE).read_text().splitlines()
    games = game_lines(run)
    lost = set(games[-7:])  # gen2's last games: killed before they were written...
    kept = [line for line in full if line not in lost]
    assert full[-1] in lost
    (run / GAMES_FILE).write_text("\n".join(kept) + "\n" + games[-7][:40])  # ...and one torn mid-write
    assert len(load_ladder_games(run).games) == len(games) - 7  # the torn line is skipped

    ladder = Ladder(run, **SETTINGS)
    assert ladder.generations == [0, 1, 2]
    ladder.add_generation(2, parse_agent(" " + GENERATIONS[2]), wall(2) + 50)  # the same spec; the first wall_s is kept
    after = game_lines(run)
    assert sorted(map(game_key, after)) == sorted(map(game_key, games))  # every game once
    assert set(games[:-7]) <= set(after)  # the finished games untouched, not replayed
    assert json.loads((run / JSON_FILE).read_text()) == json.loads((ladder_run / JSON_FILE).read_text())


@pytest.mark.slow
def test_same_seed_same_ladder_whatever_the_workers(ladder_run, tmp_path):
    """Generation 1 played again from scratch, with two workers instead of one."""
    run = tmp_path / "again"
    run.mkdir()
    gen0 = [line for line in (ladder_run / GAMES_FILE).read_text().splitlines()
            if json.loads(line).get("generation", 0) == 0]
    (run / GAMES_FILE).write_text("\n".join(gen0) + "\n")
    Ladder(run, **dict(SETTINGS, workers=2)).add_generation(1, parse_agent(GENERATIONS[1]), wall(1))
    assert json.loads((run / JSON_FILE).read_text()) == json.loads((ladder_run.parent / "after_gen1.json").read_text())


def test_three_player_ladder(tmp_path):
    ladder = Ladder(tmp_path / "run", ["greedy"], players=3, games_per_pair=3, seed=1, workers=1, bootstrap=50)
    res = ladder.add_generation(0, parse_agent("random"), 0.0)
    # one deal, two tables (random random greedy / random greedy greedy), three rotations each
    assert res["games"] == 6 and res["generations"][0]["games"] == 6
    assert res["generations"][0]["elo"] < 0 and res["players"] == 3


# --- checks before any game ---------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [
    (dict(anchors=["nosuchagent"]), "unknown agent 'nosuchagent'"),
    (dict(anchors=["ismcts:iterations=0"]), "iterations"),
    (dict(anchors="greedy"), "list of agent specs or one of typed agents"),
    (dict(anchors=None), "list of agent specs or one of typed agents"),
    (dict(anchors=["greedy", 3]), "list of agent specs or one of typed agents"),
    (dict(anchors=["greedy", AgentRecipe("random", "random")]), "list of agent specs or one of typed agents"),
    (dict(anchors=["greedy", "greedy"]), "distinct"),
    (dict(anchors=[], previous=0), "previous >= 1"),
    (dict(players=5), "ladder: config key 'players' must be 2, 3 or 4"),
    (dict(team=True), "team variant needs players: 4"),
    (dict(games_per_pair=0), "'games' must be >= 1"),
    (dict(seed=-1), "'seed' must be >= 0"),
    (dict(previous=-1), "previous must be an integer >= 0"),
    (dict(workers="2"), "'workers' must be an integer"),
    (dict(move_time_limit=0), "move_time_limit"),
])
def test_bad_settings_are_refused_before_anything_is_written(tmp_path, kw, match):
    args = dict(anchors=["greedy"], workers=1)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        Ladder(tmp_path / "run", **args)
    assert not (tmp_path / "run").exists()


def write_journal(run: Path, records: list[dict]) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / GAMES_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))


def settings(**kw) -> dict:
    out = {"kind": "ladder", "players": 2, "team": False, "seed": 0, "anchors": ["greedy"], "bootstrap": 200,
           "prior_draws": 1.0}
    out.update(kw)
    return out


def header(g: int, spec: str = "random", opponents=("greedy",), wall_s: float = 10.0) -> dict:
    return {"kind": "generation", "generation": g, "spec": spec, "wall_s": wall_s, "games_per_pair": 2,
            "opponents": list(opponents)}


def game(g: int, opponent: str, n: int, deal: int, labels: list[str], scores: list[int]) -> dict:
    ranking = [sorted(scores, reverse=True).index(s) for s in scores]
    return {"kind": "game", "generation": g, "opponent": opponent, "game": n, "deal_index": deal,
            "labels": labels, "scores": scores, "ranking": ranking, "forfeit": None}


def test_add_generation_refuses_bad_input_before_any_game(tmp_path):
    run = tmp_path / "run"
    write_journal(run, [settings(), header(3, wall_s=50.0)])
    before = (run / GAMES_FILE).read_text()
    ladder = Ladder(run, ["greedy"], seed=0, workers=1, bootstrap=200)
    greedy = parse_agent("greedy")
    for args, match in [((4, "greedy", 60.0), "a generation must be a typed agent"),
                        ((4, None, 60.0), "a generation must be a typed agent"),
                        ((2, greedy, 60.0), "generation numbers must increase"),
                        ((3, greedy, 60.0), "is in the ladder as 'random'"),
                        ((4, greedy, 40.0), "cannot go back"),
                        ((4, greedy, float("nan")), "wall_s"),
                        ((-1, greedy, 60.0), "generation must be an integer"),
                        ((True, greedy, 60.0), "generation must be an integer")]:
        with pytest.raises(ValueError, match=match):
            ladder.add_generation(*args)
    assert (run / GAMES_FILE).read_text() == before
    assert not (run / JSON_FILE).exists()


def test_reopening_with_other_settings_is_refused(tmp_path):
    write_journal(tmp_path, [settings(seed=1)])
    with pytest.raises(ValueError, match=r"different ladder \(seed: 1 there, 2 now\)"):
        Ladder(tmp_path, ["greedy"], seed=2, bootstrap=200)


def test_corrupt_line_is_named_and_a_torn_last_line_skipped(tmp_path):
    records = [settings(), header(0), game(0, "greedy", 0, 0, ["gen0", "greedy"], [10, 20])]
    write_journal(tmp_path, records)
    path = tmp_path / GAMES_FILE
    path.write_text(path.read_text() + '{"kind":"game","gen')  # a kill mid-write
    assert len(load_ladder_games(tmp_path).games) == 1
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + ["not json"] + lines[2:3]) + "\n")
    with pytest.raises(ValueError, match=r"ladder_games.jsonl, line 3: not a valid ladder record"):
        load_ladder_games(tmp_path)
    path.write_text("\n".join(lines[:2] + [json.dumps(dict(records[2], generation=7))]) + "\n")
    with pytest.raises(ValueError, match="line 3.*generation 7"):
        load_ladder_games(path)
    no_scores = {k: v for k, v in records[2].items() if k != "scores"}
    path.write_text("\n".join(lines[:2] + [json.dumps(no_scores)]) + "\n")
    with pytest.raises(ValueError, match="line 3.*missing key 'scores'"):
        load_ladder_games(path)
    path.write_text("\n".join(lines[:3] + lines[2:3]) + "\n")
    with pytest.raises(ValueError, match="line 4.*appears twice"):
        load_ladder_games(path)


# --- ratings from hand-made games -----------------------------------------------------------------
def synthetic_ladder(run: Path, gen1_wins: int) -> None:
    """gen0 and gen1 each play greedy on 20 deals (both seatings); gen1 also plays gen0.
    gen0 wins half against greedy; gen1 wins `gen1_wins` of its 40 games against each."""
    records = [settings(), header(0), header(1, "greedy", ("gen0", "greedy"), 20.0)]
    for d in range(20):
        for seat in range(2):
            n = 2 * d + seat
            win = d % 2 == 0
            records.append(game(0, "greedy", n, d, ["gen0", "greedy"][::1 - 2 * seat],
                                ([30, 10] if win else [10, 30])[::1 - 2 * seat]))
            for opponent in ("gen0", "greedy"):
                win = n < gen1_wins
                records.append(game(1, opponent, n, d, ["gen1", opponent][::1 - 2 * seat],
                                    ([30, 10] if win else [10, 30])[::1 - 2 * seat]))
    records.sort(key=lambda r: r.get("generation", -1))
    write_journal(run, records)


def test_elo_difference_and_significant_drops(tmp_path):
    synthetic_ladder(tmp_path / "up", gen1_wins=34)
    diff, lo, hi = elo_difference(tmp_path / "up", 1, "gen0")
    assert 150 < diff < 450 and 0 < lo < diff < hi
    assert elo_difference(tmp_path / "up", "greedy", 0)[0] == pytest.approx(0.0, abs=1e-6)
    assert significant_drops(tmp_path / "up") == []

    synthetic_ladder(tmp_path / "down", gen1_wins=6)
    drops = significant_drops(tmp_path / "down")
    assert [(d["generation"], d["previous"]) for d in drops] == [(1, 0)]
    assert drops[0]["elo"] < 0 and drops[0]["ci95"][1] < 0
    with pytest.raises(ValueError, match="no player 'gen7'"):
        elo_difference(tmp_path / "up", 7, 0)
    with pytest.raises(TypeError, match="ladder_games must be"):
        elo_difference(42, 1, 0)


def test_fit_counts_every_pair_of_a_three_player_game():
    # A always first, B second, C last: in pairwise terms A > B > C
    records = [game(0, "x", n, n, [["A", "B", "C"], ["B", "C", "A"], ["C", "A", "B"]][n % 3],
                    [[30, 20, 10], [20, 10, 30], [10, 30, 20]][n % 3]) for n in range(30)]
    fit = fit_ladder(records, ["A", "B", "C", "D"], team=False, pin="B", bootstrap=100)
    assert fit.elo[1] == 0.0 and fit.elo[0] > 0 > fit.elo[2]
    assert np.isnan(fit.elo[3]) and list(fit.games) == [30, 30, 30, 0]  # D never played
    assert fit.difference("A", "C")[0] > fit.difference("A", "B")[0] > 0


# --- the command line ------------------------------------------------------------------------------
def test_team_games_count_once_per_game():
    records = [game(0, "x", n, n, [["A", "B", "A", "B"], ["B", "A", "B", "A"]][n % 2],
                    [[30, 10, 20, 10], [10, 30, 10, 20]][n % 2]) for n in range(20)]
    for r in records:  # team places: the team of seats 0+2 against 1+3
        r["ranking"] = [0, 1, 0, 1] if r["labels"][0] == "A" else [1, 0, 1, 0]
    fit = fit_ladder(records[:19] + [dict(records[19], ranking=[0, 1, 0, 1])], ["A", "B"], team=True, bootstrap=50)
    assert list(fit.games) == [20, 20] and fit.elo[0] == 0.0 and fit.elo[1] < 0
    # A wins 19 of 20 (game 19 seats B on 0+2); with one virtual draw: 400 log10(19.5 / 1.5)
    assert fit.elo[1] == pytest.approx(-400 * np.log10(19.5 / 1.5), abs=0.5)


def test_cli_rebuilds_the_ladder_from_its_journal(tmp_path, capsys):
    synthetic_ladder(tmp_path, gen1_wins=30)
    void = dict(game(1, "greedy", 99, 0, ["gen1", "greedy"], [0, 0]), scores=[], ranking=[], error="crash")
    with (tmp_path / GAMES_FILE).open("a") as f:
        f.write(json.dumps(void) + "\n")
    assert evaluate.main(["ladder", str(tmp_path), "--plot-only"]) == 2
    assert "no ladder.json" in capsys.readouterr().err
    assert evaluate.main(["ladder", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "gen1" in out and "greedy = 0 Elo" in out
    res = json.loads((tmp_path / JSON_FILE).read_text())
    assert [g["generation"] for g in res["generations"]] == [0, 1] and res["generations"][1]["spec"] == "greedy"
    assert res["games"] == 120 and res["void_games"] == 1
    assert res == rebuild_ladder(tmp_path)  # the same from the same journal
    (tmp_path / PLOT_FILE).unlink()
    assert evaluate.main(["ladder", str(tmp_path), "--plot-only"]) == 0
    assert (tmp_path / PLOT_FILE).read_bytes()[:8] == PNG_MAGIC
    assert evaluate.main(["ladder", str(tmp_path / "missing")]) == 2
    assert "no such run directory" in capsys.readouterr().err
