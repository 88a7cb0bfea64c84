"""evaluate.py and evaluation/: schedule, config, determinism, resume, forfeits, CLI."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents import AgentRecipe, parse_agent
from evaluation import EvalConfig, run_evaluation
from evaluation.executor import GameJob, SerialExecutor, load_plugins, run_job
from evaluation.tournament import GameResult, Journal, Schedule, make_tables, play_tournament, seatings_of

ROOT = Path(__file__).resolve().parents[1]
HELPERS = str(ROOT / "tests" / "test_evaluate_agents.py")  # registers first / crasher / illegal
load_plugins([HELPERS])


def cfg(tmp_path, name="run", **kw) -> EvalConfig:
    base = dict(agents=["random", "first"], games=8, seed=1, workers=1, out=str(tmp_path / name),
                bootstrap=50, plots=False, progress=False, imports=[HELPERS])
    base.update(kw)
    return EvalConfig.from_dict(base)


def run_quiet(c: EvalConfig, **kw) -> dict:
    return run_evaluation(c, echo=lambda *a: None, **kw)


def read(path) -> str:
    return Path(path).read_text()


# --- schedule ----------------------------------------------------------------------------------
def test_tables_and_seatings():
    assert make_tables(3, 2) == [(0, 1), (0, 2), (1, 2)]
    assert make_tables(2, 3) == [(0, 0, 1), (0, 1, 1)]
    assert make_tables(4, 3) == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert make_tables(3, 4, team=True) == [(0, 1, 0, 1), (0, 2, 0, 2), (1, 2, 1, 2)]
    assert seatings_of((0, 1)) == [(0, 1), (1, 0)]
    assert seatings_of((0, 1, 0, 1)) == [(0, 1, 0, 1), (1, 0, 1, 0)]  # repeats dropped
    assert len(seatings_of((0, 1, 2), "permutations")) == 6
    assert len(seatings_of((0, 1, 2, 3), "permutations")) == 24
    assert len(seatings_of((0, 0, 1), "permutations")) == 3


def test_duplicate_sets_give_each_agent_each_seat():
    s = Schedule(["a", "b", "c"], 3, games=7, seed=0)
    assert s.num_deals == 3 and s.jobs_per_deal == 3 and s.num_jobs == 9  # rounded up to whole sets
    for deal in range(s.num_deals):
        jobs = [s.job(j) for j in s.deal_jobs(deal)]
        assert len({j.deal_seed for j in jobs}) == 1  # one deal, every seating
        for seat in range(3):
            assert sorted(j.seating[seat] for j in jobs) == ["a", "b", "c"]
    assert len({s.job(j).deal_seed for j in range(s.num_jobs)}) == 3


def test_job_ids_do_not_depend_on_game_count():
    small = Schedule(["a", "b", "c"], 2, games=4, seed=5)
    big = Schedule(["a", "b", "c"], 2, games=40, seed=5)
    assert [small.job(j) for j in range(small.num_jobs)] == [big.job(j) for j in range(small.num_jobs)]
    assert Schedule(["a", "b"], 2, 4, seed=6).job(0).deal_seed != small.job(0).deal_seed


# --- config --------------------------------------------------------------------------------------
def test_config_rejects_unknown_and_mistyped_keys(tmp_path):
    with pytest.raises(ValueError, match="unknown config key 'gmaes' .did you mean 'games'"):
        EvalConfig.from_dict({"agents": ["random"], "gmaes": 3})
    with pytest.raises(ValueError, match="config key 'games' must be an integer"):
        EvalConfig.from_dict({"games": "many"})
    with pytest.raises(ValueError, match="config key 'team' must be true or false"):
        EvalConfig.from_dict({"team": "yes"})
    bad = tmp_path / "bad.yaml"
    bad.write_text("agents: [random, greedy\n")
    with pytest.raises(ValueError, match="malformed YAML"):
        EvalConfig.from_yaml(bad)
    with pytest.raises(ValueError, match="at least 2 agents"):
        EvalConfig.from_dict({"agents": ["random"]}).validate()
    with pytest.raises(ValueError, match="team variant needs players: 4"):
        EvalConfig.from_dict({"agents": ["random", "first"], "team": True}).validate()
    with pytest.raises(ValueError, match="exactly 2 agents"):
        EvalConfig.from_dict({"agents": ["random", "first", "greedy"], "sprt": "0,50"}).validate()


def test_config_file_and_overrides():
    c = EvalConfig.from_yaml(ROOT / "configs" / "eval_quick.yaml").validate()
    assert c.agents[:2] == ["random", "greedy"] and c.players == 2
    o = c.override(games=6, sprt="0,50", agents=["random", "greedy"], workers=None)
    assert o.games == 6 and o.sprt == [0.0, 50.0] and o.workers == c.workers
    assert EvalConfig.from_dict({"agents": ["random", "random"]}).labels() == ["random", "random#2"]
    assert EvalConfig.from_dict({"agents": ["greedy", "random"]}).anchor_index() == 1


def test_the_flags_take_their_choices_and_defaults_from_the_config():
    """evaluate.py repeats no choice or default of EvalConfig: a flag with choices offers its
    field's, and a "(default X)" in its help is its field's default."""
    import re
    import typing

    from evaluation import cli as evaluate

    checked, defaults = 0, EvalConfig()
    for action in evaluate.run_parser()._actions:
        field = EvalConfig.model_fields.get(action.dest)
        if field is None or field.default is None:
            continue
        if action.choices is not None:
            assert tuple(action.choices) == typing.get_args(field.annotation), action.dest
            checked += 1
        shown = re.search(r"\(default ([^)]+)\)", action.help or "")
        if shown:
            value = getattr(defaults, action.dest)
            assert shown.group(1) in (str(value), f"{value:g}" if isinstance(value, float) else None), action.dest
            checked += 1
    assert checked >= 12


# --- executor ----------------------------------------------------------------------------------
def test_run_job_record_is_plain_and_reproducible():
    first = parse_agent("first")
    job = GameJob(job_id=7, deal_seed=123, seating=(parse_agent("random"), first), seeds=(1, 2))
    a, b = run_job(job), run_job(job)
    a.pop("seconds"), b.pop("seconds")
    assert a == b and a["game"] == 7 and len(a["scores"]) == 2 and a["forfeit"] is None
    assert a["seats"] == ["random", "first"]
    json.dumps(a)
    void = run_job(GameJob(job_id=1, deal_seed=1, seating=(AgentRecipe("no_such_agent", "no_such_agent"), first),
                           seeds=(1, 2)))
    assert void["ranking"] == [] and "unknown agent" in void["error"]


def test_workers_build_typed_agents_without_reading_a_spec(monkeypatch):
    """A job carries typed agents, parsed once at the edge: its worker builds them without
    parsing any text (its label need not even be a spec), alone or in a process pool."""
    import agents.base
    from evaluation.executor import ProcessExecutor

    seating = (AgentRecipe("not a spec: greedy!", "greedy"), AgentRecipe("[random]", "random"))
    jobs = [GameJob(job_id=n, deal_seed=n, seating=seating, seeds=(1, 2)) for n in range(2)]

    def no_parsing(spec, *_):
        raise AssertionError(f"a worker parsed the spec {spec!r}")

    monkeypatch.setattr(agents.base, "parse_spec", no_parsing)
    for record in [run_job(job) for job in jobs]:
        assert record["forfeit"] is None and record["error"] is None, record["error"]
        assert record["seats"] == ["not a spec: greedy!", "[random]"] and len(record["scores"]) == 2
    with ProcessExecutor(1, start_method="fork") as pool:  # its worker inherits the patched parser
        records = list(pool.map_jobs(jobs))
    assert [r["error"] for r in records] == [None, None] and records[0]["seats"] == ["not a spec: greedy!", "[random]"]


# --- whole runs -------------------------------------------------------------------------------------
def test_results_schema_and_files(tmp_path):
    c = cfg(tmp_path, agents=["random", "first", "random"], games=6, save_games=True, plots=True)
    res = run_quiet(c)
    out = Path(c.out)
    for name in ("results.json", "games.csv", "games.jsonl", "config.yaml", "ratings.png", "winrate.png",
                 "scores.png"):
        assert (out / name).is_file(), name
    saved = json.loads(read(out / "results.json"))
    assert saved["agents"] == ["random", "first", "random"] and saved["games"] == 18 == res["games"]
    assert set(saved["ratings"]) == {"random", "first", "random#2"}
    assert saved["ratings"]["random"]["value"] == 0 and saved["ratings"]["random"]["ci95"] == [0, 0]
    for r in saved["ratings"].values():
        assert r["ci95"][0] <= r["value"] <= r["ci95"][1]
    pair = saved["pairs"]["first vs random"]
    for key in ("games", "wins", "draws", "losses", "win_rate", "win_rate_ci95", "win_rate_ci95_wilson",
                "mean_margin", "margin_ci95", "mean_minutes"):
        assert key in pair
    assert pair["games"] == 6 and pair["wins"] + pair["draws"] + pair["losses"] == 6
    mirror = saved["pairs"]["random vs first"]
    assert mirror["wins"] == pair["losses"] and mirror["win_rate"] == pytest.approx(1 - pair["win_rate"])
    assert len(saved["paired"]) == 3  # each agent as the common opponent of the other two
    for p in saved["paired"]:
        assert p["difference"] == pytest.approx(p["scores"][0] - p["scores"][1], abs=2e-4)
        assert p["difference_ci95"][0] <= p["difference"] <= p["difference_ci95"][1]
    rows = list(csv.DictReader(open(out / "games.csv")))
    assert [int(r["game"]) for r in rows] == list(range(18))
    assert rows[0]["seat0"] == "random" and rows[0]["winner"] in ("random", "first", "draw")


def test_identical_games_whatever_the_worker_count(tmp_path):
    one = cfg(tmp_path, "w1", agents=["random", "first", "random"], games=4, workers=1)
    two = cfg(tmp_path, "w2", agents=["random", "first", "random"], games=4, workers=2)
    r1, r2 = run_quiet(one), run_quiet(two)
    assert read(Path(one.out) / "games.csv") == read(Path(two.out) / "games.csv")
    assert r1["ratings"] == r2["ratings"] and r1["pairs"] == r2["pairs"]


def test_resume_after_interruption_matches_a_full_run(tmp_path):
    full = cfg(tmp_path, "full", games=10)
    run_quiet(full)
    part = cfg(tmp_path, "part", games=10)
    schedule = Schedule(part.validate().lineup, 2, part.games, part.seed)

    class Interrupted(SerialExecutor):  # Ctrl-C after 4 games
        def map_jobs(self, jobs):
            for n, rec in enumerate(super().map_jobs(jobs)):
                if n == 4:
                    raise KeyboardInterrupt
                yield rec

    Path(part.out).mkdir(parents=True)
    journal = Journal(Path(part.out) / "games.jsonl")
    with pytest.raises(KeyboardInterrupt):
        play_tournament(schedule, lambda n: Interrupted([HELPERS]), journal, part.labels(), progress=False)
    kept = journal.load()
    assert sorted(kept) == [0, 1, 2, 3]
    with open(journal.path, "a") as f:  # a kill in the middle of a write
        f.write('{"game": 9, "deal_ind')
    played = []

    class Counting(SerialExecutor):
        def map_jobs(self, jobs):
            for rec in super().map_jobs(jobs):
                played.append(rec["game"])
                yield rec

    import evaluation.run as run_module

    real = run_module.make_executor
    run_module.make_executor = lambda *a, **k: Counting([HELPERS])
    try:
        run_quiet(part)
    finally:
        run_module.make_executor = real
    assert sorted(played) == list(range(4, 10))  # finished games were not replayed
    assert read(Path(part.out) / "games.csv") == read(Path(full.out) / "games.csv")
    a = json.loads(read(Path(part.out) / "results.json"))
    b = json.loads(read(Path(full.out) / "results.json"))
    assert a["ratings"] == b["ratings"] and a["pairs"] == b["pairs"]
    # more games later: only the new deals are played
    played.clear()
    run_module.make_executor = lambda *a, **k: Counting([HELPERS])
    try:
        run_quiet(part.override(games=12))
    finally:
        run_module.make_executor = real
    assert sorted(played) == [10, 11]


def test_resume_refuses_a_different_run(tmp_path):
    run_quiet(cfg(tmp_path, games=2))
    with pytest.raises(ValueError, match="holds a different run.*seed"):
        run_quiet(cfg(tmp_path, games=2, seed=99))
    run_quiet(cfg(tmp_path, games=2, seed=99), fresh=True)


def test_forfeits_are_recorded_and_the_tournament_goes_on(tmp_path):
    c = cfg(tmp_path, agents=["first", "crasher:after=3", "illegal"], games=4)
    res = run_quiet(c)
    assert res["games"] == 12
    # illegal forfeits all 8 of its games (its first move); crasher the 4 against first
    assert res["ratings"]["crasher:after=3"]["forfeits"] == 4 and res["ratings"]["illegal"]["forfeits"] == 8
    assert res["ratings"]["crasher:after=3"]["forfeit_reasons"] == {"error": 4}
    assert res["ratings"]["illegal"]["forfeit_reasons"] == {"illegal": 8}
    assert res["pairs"]["first vs crasher:after=3"]["wins"] == 4
    rows = list(csv.DictReader(open(Path(c.out) / "games.csv")))
    bad = [r for r in rows if r["forfeit"]]
    assert len(bad) == 12 and all(r["error"] for r in bad)
    assert {r["forfeit_reason"] for r in bad} == {"error", "illegal"}
    assert any("crasher agent gives up" in r["error"] for r in bad)
    assert any("illegal action 999" in r["error"] for r in bad)


def test_bad_spec_fails_before_any_game(tmp_path):
    c = cfg(tmp_path, agents=["random", "nosuchagent"])
    with pytest.raises(ValueError, match="unknown agent 'nosuchagent'"):
        run_quiet(c)
    with pytest.raises(ValueError, match="bad parameters"):
        run_quiet(cfg(tmp_path, agents=["random", "crasher:bogus=1"]))
    missing = tmp_path / "none.pt"
    with pytest.raises(ValueError, match=f"bad agent spec 'checkpoint:{missing}': checkpoint not found"):
        run_quiet(cfg(tmp_path, agents=["random", f"checkpoint:{missing}"]))
    assert not (Path(c.out) / "games.jsonl").exists()


def test_sprt_stops_a_lopsided_match_early(tmp_path):
    c = cfg(tmp_path, agents=["first", "crasher:after=0"], games=400, sprt=[0.0, 50.0])
    res = run_quiet(c)
    assert res["sprt"]["decision"] == "H1" and res["sprt"]["llr"] >= res["sprt"]["upper"]
    assert res["games"] == 2 * res["sprt"]["units"] < 40
    rows = list(csv.DictReader(open(Path(c.out) / "games.csv")))
    assert len(rows) == res["games"]


def test_multiplayer_and_team_runs(tmp_path):
    res = run_quiet(cfg(tmp_path, "p3", agents=["random", "first"], players=3, games=3))
    assert res["games"] == 6 and res["schedule"]["tables"] == [["random", "random", "first"],
                                                               ["random", "first", "first"]]
    # each 3-seat game compares the lone agent with both others
    assert res["pairs"]["first vs random"]["games"] == 12
    # per table: "first" alone at a table of two randoms, and with two seats against one
    lone, pair_of = res["tables"]
    assert lone["seats"] == ["random", "random", "first"] and lone["games"] == 3
    assert lone["agents"]["first"]["num_seats"] == 1 and lone["agents"]["first"]["comparisons"] == 6
    assert pair_of["agents"]["first"]["num_seats"] == 2 and pair_of["agents"]["first"]["comparisons"] == 6
    for table in res["tables"]:
        for a in table["agents"].values():
            assert a["score_ci95"][0] <= a["score"] <= a["score_ci95"][1]
    points = sum(t["agents"]["first"]["score"] * t["agents"]["first"]["comparisons"] for t in res["tables"])
    assert points / 12 == pytest.approx(res["pairs"]["first vs random"]["win_rate"], abs=1e-3)  # 4-digit rounding
    res = run_quiet(cfg(tmp_path, "p4", agents=["random", "first", "random"], players=4, games=4))
    assert res["openskill"] is None  # every table of 4 seats one of the 3 agents twice: no Plackett-Luce fit
    res = run_quiet(cfg(tmp_path, "team", agents=["random", "first"], players=4, team=True, games=4))
    assert res["games"] == 4 and res["pairs"]["first vs random"]["games"] == 4 and res["tables"] is None


def test_three_player_runs_fit_plackett_luce_on_the_finishing_orders(tmp_path):
    """The openskill ratings of a 3-agent, 3-seat run are the Plackett-Luce updates of its
    games in id order, each seat a team of one ranked by its finishing place: recomputed
    here with openskill itself from games.csv."""
    from openskill.models import PlackettLuce

    c = cfg(tmp_path, "p3", agents=["random", "first", "greedy"], players=3, games=3)
    res = run_quiet(c)
    model = PlackettLuce()
    ratings = {label: model.rating() for label in c.labels()}
    rows = sorted(csv.DictReader(open(Path(c.out) / "games.csv")), key=lambda r: int(r["game"]))
    assert len(rows) == res["games"] == 3
    for row in rows:
        seats = [row[f"seat{s}"] for s in range(3)]
        rated = model.rate([[ratings[a]] for a in seats], ranks=[float(row[f"rank{s}"]) for s in range(3)])
        for label, (rating,) in zip(seats, rated):
            ratings[label] = rating
    assert set(res["openskill"]) == set(ratings)
    for label, r in ratings.items():
        fit = res["openskill"][label]
        assert fit == pytest.approx({"mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()}, abs=1e-3), label
    assert len({fit["mu"] for fit in res["openskill"].values()}) == 3  # the games moved the ratings apart


# --- command line ---------------------------------------------------------------------------------
def cli(*args, timeout=120):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, str(ROOT / "evaluate.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_help():
    p = cli("--help")
    assert p.returncode == 0
    for word in ("--agents", "--games", "--workers", "--sprt", "--save-games", "replay", "bootstrap", "Wilson",
                 "--move-time-limit", "--game-time-limit", "forfeit_reason"):
        assert word in p.stdout
    assert cli("replay", "--help").returncode == 0


def test_cli_run_and_replay(tmp_path):
    out = tmp_path / "cli"
    p = cli("--agents", "random", "first", "--games", "4", "--workers", "1", "--out", str(out), "--bootstrap",
            "50", "--save-games", "--no-plots", "--no-progress", "--import", HELPERS)
    assert p.returncode == 0, p.stderr
    assert "Ratings: Bradley-Terry" in p.stdout and "first" in p.stdout
    assert json.loads(read(out / "results.json"))["games"] == 4
    p = cli("replay", str(out / "games.jsonl"), "--game", "2")
    assert p.returncode == 0, p.stderr
    assert "final board" in p.stdout and "  1. player 0 (random)" in p.stdout
    p = cli("replay", str(out), "--game", "2", "--step", "3")
    assert "board after 3 move(s)" in p.stdout
    assert cli("replay", str(out), "--game", "99").returncode == 2


def test_cli_one_vs_rest_plays_only_the_table_of_the_first_agent_alone(tmp_path):
    out = tmp_path / "alone"
    p = cli("--agents", "first", "random", "--players", "4", "--one-vs-rest", "--games", "4", "--workers", "1",
            "--out", str(out), "--bootstrap", "20", "--no-plots", "--no-progress", "--import", HELPERS)
    assert p.returncode == 0, p.stderr
    saved = json.loads(read(out / "results.json"))
    assert saved["schedule"]["tables"] == [["first", "random", "random", "random"]] and saved["games"] == 4
    assert [sorted(r[f"seat{s}"] for s in range(4)) for r in csv.DictReader(open(out / "games.csv"))] == [
        ["first", "random", "random", "random"]] * 4
    p = cli("--agents", "first", "random", "greedy", "--one-vs-rest", "--out", str(tmp_path / "three"),
            "--import", HELPERS)
    assert p.returncode == 2 and "one_vs_rest needs exactly 2 agents" in p.stderr


def test_cli_clear_errors(tmp_path):
    p = cli("--agents", "random", "nosuch", "--out", str(tmp_path / "x"), "--no-progress")
    assert p.returncode == 2 and "unknown agent 'nosuch'" in p.stderr and "Traceback" not in p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("agents: [random, first]\nworkers: two\n")
    p = cli("--config", str(bad))
    assert p.returncode == 2 and "bad.yaml: config key 'workers' must be an integer" in p.stderr
    p = cli("--agents", "random", "ismcts:time=nan", "--out", str(tmp_path / "y"))
    assert p.returncode == 2 and "time must be a finite number of seconds > 0" in p.stderr
    p = cli("--agents", "random", "greedy", "--move-time-limit", "inf", "--out", str(tmp_path / "z"))
    assert p.returncode == 2 and "move_time_limit must be a finite number of seconds > 0" in p.stderr
    assert not (tmp_path / "y").exists() and not (tmp_path / "z").exists()


def test_a_game_result_takes_its_places_once_from_its_journal_line():
    """The typed record the statistics read: a forfeit made explicit in its places (the
    forfeiter last, the others in their order), the line kept to be written back as read."""
    line = {"game": 3, "deal_index": 1, "table": 0, "labels": ["a", "b", "c"], "deal_seed": 9,
            "scores": [50, 80, 80], "ranking": [2, 0, 0], "rewards": [-1.0, 0.0, 1.0], "forfeit": 1,
            "error": "RuntimeError: gave up\ntraceback", "moves": 7}  # a journal older than forfeit reasons
    game = GameResult.from_line(line, team=False)
    assert game.places == (1, 2, 0) and game.winner() == "c" and not game.void
    assert (game.forfeit, game.forfeit_reason, game.moves, game.line) == (1, "error", 7, line)
    assert game.sides((0, 1, 2)) == [(0, 50.0, 1), (1, 80.0, 2), (2, 80.0, 0)]
    team = GameResult.from_line(dict(line, labels=["a", "b", "a", "b"], scores=[1, 2, 3, 4], ranking=[0, 1, 0, 1],
                                     forfeit=2, forfeit_reason="illegal"), team=True)
    assert team.places == (1, 0, 1, 0) and team.winner() == "b" and team.forfeit_reason == "illegal"
    void = GameResult.from_line({"game": 4, "deal_index": 2, "labels": ["a", "b"], "scores": [], "ranking": [],
                                 "forfeit": None, "error": "ValueError: no net"}, team=False)
    assert void.void and void.winner() == "void" and void.places == void.scores == () and void.forfeit_reason is None
    draw = GameResult.from_line(dict(line, ranking=[1, 0, 0], forfeit=None), team=False)
    assert draw.places == (1, 0, 0) and draw.winner() == "draw" and draw.forfeit_reason is None


# --- Ctrl-C: the results so far, and the command that resumes ------------------------------------
@pytest.mark.slow
def test_ctrl_c_writes_the_results_so_far_and_prints_the_command_that_resumes(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) to a running
    tournament whose output is redirected: exit 130, no traceback, results.json, games.csv
    and the summary for the finished games, plain progress lines, and the resume command,
    which then plays only the games still missing."""
    out = tmp_path / "out"
    command = ["--agents", "ismcts:iterations=3000", "greedy", "--games", "40", "--workers", "1", "--out", str(out),
               "--no-plots"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with (tmp_path / "stdout").open("w") as stdout, (tmp_path / "stderr").open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "evaluate.py", *command], cwd=ROOT, env=env, stdout=stdout,
                                stderr=stderr, start_new_session=True)
        try:
            journal = out / "games.jsonl"
            deadline = time.monotonic() + 900  # a guard against a hang, not a timing
            while not (journal.exists() and journal.read_text().count("\n") >= 1):
                assert proc.poll() is None and time.monotonic() < deadline, "no game finished"
                time.sleep(0.1)
            os.killpg(proc.pid, signal.SIGINT)
            assert proc.wait(timeout=600) == 130
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    printed, errors = (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()
    assert "Traceback" not in errors and "\r" not in errors, errors[-3000:]
    results = json.loads((out / "results.json").read_text())
    played = results["games"]
    assert 1 <= played < 40 and results["interrupted"].startswith(f"after {played} of 40 games")
    assert len(list(csv.DictReader((out / "games.csv").open()))) == played
    assert "win rate" in printed and f"interrupted after {played} of 40 games" in printed
    resume = printed.rsplit("resume with: ", 1)[1].strip()
    assert resume == "python evaluate.py " + " ".join(command)
    again = subprocess.run([sys.executable, *resume.split()[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming: {played} game(s) already in" in again.stdout
    final = json.loads((out / "results.json").read_text())
    assert final["games"] == 40 and "interrupted" not in final


def test_a_plugin_file_in_a_package_is_the_module_of_its_name(tmp_path, monkeypatch):
    """`--import pkg/plug.py` and `--import pkg.plug` load one module, not two: numba's
    cache of a plugin's kernels imports it by its module name, and a second copy of the
    file registered its agents twice ("already registered"). A file outside any package
    on sys.path still loads once under a name of its own."""
    import sys

    pkg = tmp_path / "plugpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plug.py").write_text("from agents.base import register\nfrom agents.simple import RandomAgent\n\n"
                                 "@register('plug-x')\nclass PlugX(RandomAgent):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import importlib

        module = importlib.import_module("plugpkg.plug")
        load_plugins([str(pkg / "plug.py")])  # before: a second copy, and the error
        assert sys.modules["plugpkg.plug"] is module
        loose = tmp_path / "loose" / "plug2.py"
        loose.parent.mkdir()
        loose.write_text("LOADED = True\n")
        load_plugins([str(loose)])
        load_plugins([str(loose)])
        assert sum(name.startswith("_eval_plugin_") and name.endswith("plug2_py") for name in sys.modules) == 1
    finally:
        from agents.base import _REGISTRY

        _REGISTRY.pop("plug-x", None)
        for name in [n for n in sys.modules if n.startswith("plugpkg") or n.endswith("plug2_py")]:
            del sys.modules[name]
