"""One evaluation run, start to finish: check, play (or resume), analyze, write."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Sequence

import yaml

from agents.play import TimeLimits
from engine.extras import optional
from engine.files import atomic_write_text

from .config import EvalConfig
from .executor import Executor, load_plugins, make_local_executor, precompile
from .report import analyze, format_results, write_games_csv, write_json
from .stats import Sprt
from .tournament import GameResult, Journal, Schedule, play_tournament

OUTPUT_FILES = ("games.jsonl", "games.csv", "results.json", "config.yaml", "ratings.png", "winrate.png",
                "scores.png")


def make_executor(workers: int, imports: Sequence[str] = (), start_method: str = "spawn",
                  limits: TimeLimits | None = None, backend: str = "process",
                  ray_address: str | None = None) -> Executor:
    """Where a run's games are played: ``backend="process"``, this machine
    (`evaluation.executor`); ``"ray"``, a Ray cluster (`evaluation.ray_executor`, imported
    only then: ray is an optional extra; 0 workers = every CPU of the cluster)."""
    if backend == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(workers, imports, limits, ray_address, start_method)
    if backend != "process":
        raise ValueError(f"unknown executor backend {backend!r}: 'process' or 'ray'")
    return make_local_executor(workers, imports, start_method, limits)


def check_agents(cfg: EvalConfig) -> None:
    """Build every agent of the validated `cfg` once (and seat it) so a bad one fails
    before any game runs (cfg.validate() has parsed the specs and checked their files
    without building them); then, for local workers, compile their kernels here once
    (`executor.precompile`)."""
    load_plugins(cfg.imports)
    for player in dict.fromkeys(cfg.lineup):
        agent = player.build(seed=0)  # ValueError on bad parameters
        try:
            agent.reset(0, cfg.players, cfg.team)
        except Exception as exc:
            raise ValueError(f"agent {str(player)!r} cannot play a {cfg.players}-player game: {exc}") from exc
    if cfg.executor == "process":  # workers on this machine load what this process compiles
        precompile(cfg.lineup, cfg.imports)


def prepare_out(cfg: EvalConfig, fresh: bool = False) -> Path:
    """Create the output directory; refuse to mix two different runs in one directory."""
    out = Path(cfg.out)
    saved = out / "config.yaml"
    if fresh:
        for name in OUTPUT_FILES:
            (out / name).unlink(missing_ok=True)
    elif saved.exists() and (out / "games.jsonl").exists():
        try:
            old = EvalConfig.from_dict(yaml.safe_load(saved.read_text()) or {}, str(saved))
        except ValueError:
            old = None
        mine = cfg.fingerprint()
        theirs = old.fingerprint() if old is not None else {}
        diff = [k for k in mine if mine[k] != theirs.get(k)]
        if diff:
            what = ", ".join(f"{k}: {theirs.get(k)!r} there, {mine[k]!r} now" for k in diff)
            raise ValueError(f"{out} holds a different run ({what}); use another --out, or --fresh to start over")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(saved, yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    return out


def run_evaluation(cfg: EvalConfig, fresh: bool = False, echo=print) -> dict:
    """Play the tournament `cfg` describes (resuming from cfg.out), write every output,
    print the summary and return results.json's content."""
    if cfg.out is None:
        cfg.out = cfg.default_out()
    cfg.validate()
    check_agents(cfg)
    out = prepare_out(cfg, fresh)
    labels = cfg.labels()
    schedule = Schedule(cfg.lineup, cfg.players, cfg.games, cfg.seed, cfg.team, cfg.seating, cfg.one_vs_rest)
    workers = cfg.num_workers()
    limits = cfg.time_limits()
    echo(f"evaluating {', '.join(labels)} -> {out}\n  {schedule.num_jobs} games = {schedule.num_deals} deals x "
         f"{schedule.jobs_per_deal} games per deal ({len(schedule.tables)} table(s), every seating); "
         f"{_workers_text(cfg, workers, schedule.num_jobs)}; time limits: {limits.move:g} s a move, "
         f"{limits.game:g} s a game per seat")
    sprt = Sprt(cfg.sprt[0], cfg.sprt[1], cfg.sprt_alpha, cfg.sprt_beta) if cfg.sprt else None
    journal = Journal(out / "games.jsonl")
    resumed = len(journal.load())
    if resumed:
        echo(f"  resuming: {resumed} game(s) already in {journal.path}")
    start = time.perf_counter()
    interrupted = False
    try:
        records, stop = play_tournament(
            schedule, lambda todo: make_executor(min(workers, todo) if workers else 0, cfg.imports,
                                                 cfg.start_method, limits, cfg.executor, cfg.ray_address),
            journal, labels, cfg.save_games, sprt, cfg.progress)
    except KeyboardInterrupt:  # Ctrl-C: the results of the games finished so far, then say so
        interrupted, stop = True, None
        records = [GameResult.from_line(line, schedule.team) for _, line in sorted(journal.load().items())]
    elapsed = time.perf_counter() - start
    res = analyze(records, schedule, labels, bootstrap=cfg.bootstrap, anchor=cfg.anchor_index(),
                  prior_draws=cfg.prior_draws, seed=cfg.seed)
    if stop is not None:
        res["sprt"] = dict(stop.test.result.to_dict(), elo0=cfg.sprt[0], elo1=cfg.sprt[1],
                           alpha=cfg.sprt_alpha, beta=cfg.sprt_beta,
                           unit="duplicate set (one deal, every seating); score of the first agent")
    res["time_limits"] = {"move": limits.move, "game": limits.game,
                          "rule": "a seat over either limit forfeits: it ranks last, the others keep their order"}
    res["config"] = cfg.to_dict()
    res["seconds"] = round(elapsed, 1)
    if interrupted:
        res["interrupted"] = f"after {len(records)} of {schedule.num_jobs} games; a rerun resumes"
    write_json(out / "results.json", res)
    write_games_csv(out / "games.csv", records, cfg.players)
    files = ["results.json", "games.csv", "games.jsonl"]
    if cfg.plots and res["games"] and optional("matplotlib", "the tournament's plots"):
        from .plots import write_plots

        files += [p.name for p in write_plots(res, records, out)]
    echo(format_results(res, res.get("sprt")))
    echo(f"\n{res['games']} games ({min(resumed, len(records))} resumed) in {elapsed:.1f} s; "
         f"wrote {', '.join(files)} in {out}")
    sys.stdout.flush()
    if interrupted:
        raise EvaluationInterrupted(res)
    return res


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the tournament; the results of the finished games are written
    (`results` holds them, marked "interrupted"), and a rerun resumes."""

    def __init__(self, results: dict):
        super().__init__(results.get("interrupted", "interrupted"))
        self.results = results


def _workers_text(cfg: EvalConfig, workers: int, jobs: int) -> str:
    if cfg.executor == "ray":
        where = cfg.ray_address or "a local Ray instance"
        return f"Ray workers on {where} ({min(workers, jobs) if workers else 'one per CPU'})"
    return f"{min(workers, jobs)} worker process(es)"
