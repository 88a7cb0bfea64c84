"""Executors: run independent jobs (`Job`) and hand back their results.

Callers only talk to `Executor.map_jobs(jobs)`, which yields one result per finished job,
in any order: a tournament's `GameJob` gives its game's record (a JSON-friendly dict),
self-play's `training.teacher.ChunkJob` a chunk of teacher games. `SerialExecutor` runs
them in this process; `ProcessExecutor` keeps a pool of long-lived worker processes, each
of which imports the plugins, warms the numba kernels once and builds each game's agents
once per (agent, seat), reseeding them for every game. A worker that dies is replaced:
its game is forfeited (below), any other job runs again (at most `JOB_RETRIES` times).
Jobs carry typed agents (`agents.AgentRecipe`: a spec parsed once, at the command line's
or config's edge; `agents.search.mcts.GuidedSearch`): a worker builds them and never
reads a spec string. A cluster backend only has to implement `map_jobs` the same way.

Time limits (`agents.play.TimeLimits`): the game loop forfeits a seat whose move comes
back over its budget. A move that never comes back (a numba kernel cannot be
interrupted) is caught by `ProcessExecutor`: before each move the worker tells the
parent the seat and its budget; if no word comes within the budget plus a grace
(`kill_deadline`), the parent kills the worker, records the forfeit from the moves it
was told of, and starts a fresh worker. `SerialExecutor` cannot stop such a move, so
`make_local_executor` uses one worker process whenever limits are set, even for one worker.

Compiling once: on a cold numba cache every worker would compile the same kernels, each
for itself (once per worker, all at once). `precompile`, run in the parent before any
worker starts (`evaluation.run.check_agents`), compiles what the workers' warm-up and the
agents' `warm_up` need, once; the workers then load it from numba's on-disk cache.

Determinism: a job carries its deal seed and every seat's agent seed, so its record
does not depend on which worker plays it (agents must play the same given the same
`seed()` + `reset()`, the Agent contract).
"""

from __future__ import annotations

import collections
import functools
import importlib
import importlib.util
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from agents.play import GameRecord, TimeLimits

KILL_GRACE_SECONDS = 1.0  # a silent move is stopped this long after its budget ends,
KILL_GRACE_FRACTION = 0.1  # plus this fraction of the budget (the pipe and scheduler lag)
# The most seconds a worker may take to start (imports, engine warm-up) or to build and
# warm up a game's agents: a cold numba compile of the search kernels can take tens of
# minutes on a busy machine, and must not be mistaken for a stuck agent.
SETUP_TIME_LIMIT = 3600.0
PARENT_CHECK_SECONDS = 0.5  # how often a worker checks that its parent is still alive
JOB_RETRIES = 2  # how often a job other than a game runs again after its worker died


class Job(Protocol):
    """What an executor runs: picklable, as is its result (never None). `limits` and
    `on_move` are the game loop's (`agents.play.play_game`); other jobs ignore them."""

    def run(self, limits: TimeLimits | None, on_move: Callable | None) -> Any: ...


@dataclass(frozen=True)
class GameJob:
    """One game to play: everything needed, nothing else."""

    job_id: int
    deal_seed: int
    seating: tuple  # the typed agent of each seat (its str() is its label)
    seeds: tuple[int, ...]  # agent seed per seat
    team: bool = False

    def run(self, limits: TimeLimits | None = None, on_move: Callable | None = None) -> dict:
        return run_job(self, limits, on_move)


class Executor(ABC):
    """Runs jobs. Use as a context manager so workers are cleaned up."""

    @abstractmethod
    def map_jobs(self, jobs: Iterable[Job]) -> Iterator:
        """Yield each job's result as it finishes (any order)."""

    def close(self) -> None:
        """Stop any workers (also on Ctrl-C)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Plays every job in this process, in order. With `limits`, a move that comes back
    late forfeits; a move that never comes back hangs the run (use ProcessExecutor)."""

    def __init__(self, imports: Sequence[str] = (), limits: TimeLimits | None = None):
        load_plugins(imports)
        self.limits = limits

    def map_jobs(self, jobs):
        for job in jobs:
            yield job.run(self.limits, None)


def kill_deadline(start: float, budget: float) -> float:
    """When the parent stops a move that started at `start` with `budget` seconds."""
    return start + budget * (1 + KILL_GRACE_FRACTION) + KILL_GRACE_SECONDS


class ProcessExecutor(Executor):
    """A pool of `workers` long-lived processes (start method spawn by default) that
    enforces `limits` on every move, replacing a worker it has to kill."""

    def __init__(self, workers: int, imports: Sequence[str] = (), start_method: str = "spawn",
                 limits: TimeLimits | None = None):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self._ctx = mp.get_context(start_method)
        self._imports = list(imports)
        self.limits = limits
        self.stopped = 0  # workers killed at a deadline or found dead (for tests)
        self._workers: list[_Worker | None] = [_Worker(self._ctx, self._imports) for _ in range(workers)]

    def map_jobs(self, jobs):
        fresh = ((job, 0) for job in jobs)  # (job, how often its worker died)
        again: collections.deque[tuple[Job, int]] = collections.deque()  # lost by a worker: run first

        def take() -> tuple[Job, int] | None:
            return again.popleft() if again else next(fresh, None)

        pending = take()  # looked ahead: a killed worker is replaced only while jobs remain
        while True:
            for n, worker in enumerate(self._workers):
                if worker is None and pending is not None:
                    worker = self._workers[n] = _Worker(self._ctx, self._imports)
                if pending is not None and worker is not None and worker.ready and worker.job is None \
                        and worker.start(pending, self.limits):
                    pending = take()
            live = [w for w in self._workers if w is not None]
            if pending is None and all(w.job is None for w in live):
                return
            self._wait(live)
            for n, worker in enumerate(self._workers):
                if worker is None:
                    continue
                result, alive = worker.collect()
                if not alive:
                    if worker.job is None and not worker.ready:
                        worker.kill()
                        raise RuntimeError(f"a worker process did not start: {worker.failure()}")
                    if isinstance(worker.job, GameJob):
                        result = worker.stop_record()
                    elif worker.job is not None:
                        again.append(worker.job_again())
                    worker.kill()
                    self._workers[n] = None
                    self.stopped += 1
                if result is not None:
                    yield result
            if pending is None:
                pending = take()

    @staticmethod
    def _wait(workers: list["_Worker"]) -> None:
        """Sleep until a worker speaks or dies, or the nearest deadline."""
        deadlines = [w.deadline for w in workers if w.deadline is not None]
        timeout = None if not deadlines else max(0.0, min(deadlines) - time.monotonic())
        wait([w.conn for w in workers] + [w.process.sentinel for w in workers], timeout)

    def close(self) -> None:
        for worker in self._workers:
            if worker is not None:
                worker.kill()
        self._workers = []


class _Worker:
    """The parent's handle on one worker process, and what it knows of its job: how often
    it was lost before; for a game, the moves played so far, the seat to move and when
    that move must be over."""

    def __init__(self, ctx, imports: list[str]):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, imports), daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.job: Job | None = None
        self.lost = 0
        self.deadline: float | None = time.monotonic() + SETUP_TIME_LIMIT
        self._failure = ""
        self._clear()

    def _clear(self) -> None:
        self.actions: list[int] = []
        self.moving: tuple[int, float | None, str | None] | None = None  # (seat, budget, reason)
        self.started = 0.0

    def start(self, task: tuple[Job, int], limits: TimeLimits | None) -> bool:
        """Hand the worker a (job, times lost); False if it is gone (`collect` will notice)."""
        try:
            self.conn.send((task[0], limits))
        except OSError:
            return False
        self._clear()
        (self.job, self.lost), self.started = task, time.perf_counter()
        # a game's set-up has a deadline (then each timed move its own); other jobs take their time
        self.deadline = time.monotonic() + SETUP_TIME_LIMIT if isinstance(self.job, GameJob) else None
        return True

    def job_again(self) -> tuple[Job, int]:
        """The job the dead worker was running, to run again: RuntimeError once it was
        lost more than `JOB_RETRIES` times (a job that kills its worker would never end)."""
        if self.lost >= JOB_RETRIES:
            raise RuntimeError(f"{self.job!r:.200} was lost {self.lost + 1} times: its worker died ({self.failure()})")
        return self.job, self.lost + 1

    def collect(self) -> tuple[Any, bool]:
        """Read what the worker said; (a finished job's result or None, whether the worker
        may go on). False: it died, or its deadline passed (the caller replaces it). A job
        that raised raises its error here."""
        try:
            while self.conn.poll():
                kind, *body = self.conn.recv()
                if kind == "ready":
                    self.ready, self.deadline = True, None
                elif kind == "failed":
                    self._failure = body[0]
                elif kind == "move":
                    seat, budget, reason, actions = body
                    self.actions.extend(actions)
                    self.moving = (seat, budget, reason)
                    self.deadline = None if budget is None else kill_deadline(time.monotonic(), budget)
                elif kind == "done":
                    self.job, self.deadline = None, None
                    return body[0], True
                elif kind == "raised":
                    error, trace = body
                    self.job, self.deadline = None, None
                    error.add_note(f"in the worker process:\n{trace}")
                    raise error
        except (EOFError, OSError):  # the worker closed its end: it is dying
            self.process.join(5)
            return None, False
        if not self.process.is_alive():
            return None, False
        return None, self.deadline is None or time.monotonic() < self.deadline

    def failure(self) -> str:
        code = self.process.exitcode
        return self._failure or (f"not ready within {SETUP_TIME_LIMIT:g} s" if code is None else f"exit code {code}")

    def stop_record(self) -> dict:
        """The record of the job this worker was playing when it was stopped: a forfeit
        of the seat to move (time limit, or a crash), else a void game."""
        from agents.play import forfeited_game, time_limit_error

        job, code = self.job, self.process.exitcode
        elapsed = time.perf_counter() - self.started
        if self.moving is None:
            why = f"exit code {code}" if code is not None else f"more than {SETUP_TIME_LIMIT:g} s"
            return _void_record(job, f"RuntimeError: the worker stopped while building or warming up the agents "
                                     f"({why})", elapsed)
        seat, budget, reason = self.moving
        import engine

        deal = engine.random_deal(job.deal_seed)
        if code is None and reason is not None:  # alive: its move went over the deadline
            error = time_limit_error(reason, seat, job.seating[seat], budget,
                                     "the move never came back: its worker process was stopped")
        else:
            reason = "crash"
            error = f"the worker process died (exit code {code}) while seat {seat} ({job.seating[seat]}) was moving"
        game = forfeited_game(deal, len(job.seating), job.team, self.actions, seat, reason, error)
        return _job_record(job, game.to_dict(), elapsed)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def make_local_executor(workers: int, imports: Sequence[str] = (), start_method: str = "spawn",
                        limits: TimeLimits | None = None) -> Executor:
    """This machine's executor: serial in this process only when one worker is asked for
    and there are no limits to enforce; else a pool of at least one worker process. (A
    Ray cluster's, `evaluation.ray_executor.RayExecutor`, builds on this one; a run picks
    between them in `evaluation.run.make_executor`.)"""
    if workers <= 1 and limits is None:
        return SerialExecutor(imports)
    return ProcessExecutor(max(1, workers), imports, start_method, limits)


# --- what runs in a worker ---------------------------------------------------------------
_AGENTS: dict[tuple[object, int], object] = {}  # (typed agent, seat) -> agent, built once per process


def _worker_main(conn, imports: list[str]) -> None:
    """A worker process: start up, then run each (job, limits) the parent sends (a game
    tells it before every move who moves with what budget); send back the result, or the
    job's error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    exit_with_parent()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one job per core: no nested thread pools
    if "torch" in sys.modules:  # imported with the parent's main module (train.py): too late for the variables
        sys.modules["torch"].set_num_threads(1)
    try:
        load_plugins(imports)
        warm_up()
    except BaseException as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        raise
    conn.send(("ready",))
    while True:
        try:
            job, limits = conn.recv()
        except EOFError:  # the parent is gone
            return
        sent = 0

        def on_move(seat, budget, reason, actions):
            nonlocal sent
            conn.send(("move", seat, budget, reason, actions[sent:]))
            sent = len(actions)

        try:
            conn.send(("done", job.run(limits, on_move)))
        except Exception as exc:  # the job's own error (a game never raises: run_job)
            conn.send(("raised", exc, traceback.format_exc()))


def exit_with_parent() -> None:
    """End this worker process (started by ``multiprocessing``) as soon as its parent is
    gone, even in the middle of a move: a parent killed outright (SIGKILL, ``ray.kill`` of
    the actor that ran it) cannot stop it, and an orphan would play on alone, holding a
    core. The parent is the one that started the process, so a parent that died while the
    worker was still importing is caught too."""
    parent = mp.parent_process()
    parent_pid = parent.pid if parent is not None else os.getppid()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def warm_up() -> None:
    """Compile (or load from cache) the engine kernels with one quick random game (agents
    warm up their own kernels: `warm_up_agent`)."""
    import engine
    from agents import AgentRecipe
    from agents.play import play_game

    random = AgentRecipe("random", "random")
    play_game([random.build(0), random.build(1)], engine.random_deal(0), 2)


def warm_up_agent(agent) -> None:
    """Compile (or load) what `agent`'s first move needs: its own `warm_up`, and for a
    network agent (`agents.networks.policy.NetAgent`: checkpoint:...) the observation and
    exposure features it reads, which it does not warm up itself."""
    agent.warm_up()
    neural = sys.modules.get("agents.networks.policy")  # not imported: no network agent (and no torch import for it)
    if neural is not None and isinstance(agent, neural.NetAgent):
        import engine
        from agents.networks.features import exposure
        from env.observation import encode

        state = engine.GameState.new(2, seed=0)
        encode(state, 0)
        exposure(*state.arrays)


def precompile(specs: Sequence, imports: Sequence[str] = ()) -> None:
    """In the parent, before the workers start: compile (or load) everything a worker's
    warm-up and the typed agents `specs` compile, so that each worker loads it from numba's
    cache instead of compiling it again for itself (the compile notice, if any, is
    printed here, once). On a cold cache the agents' parts that compile on their own
    (`Agent.compile_parts`) compile first, side by side, one process per core."""
    from agents.base import compile_jobs
    from engine import kernel_cache

    load_plugins(imports)
    built = {recipe: recipe.build(seed=0) for recipe in dict.fromkeys(specs)}
    jobs = [functools.partial(_with_plugins, tuple(imports), job) for job in compile_jobs(built, built)]
    if jobs:
        kernel_cache.compile_in_parallel(jobs, "the agents' search parts")
    warm_up()
    for agent in built.values():
        warm_up_agent(agent)


def _with_plugins(imports: tuple[str, ...], job) -> None:
    load_plugins(imports)
    job()


def _agent(player, seat: int):
    key = (player, seat)
    if key not in _AGENTS:
        agent = player.build()
        warm_up_agent(agent)  # kernels compiled (or loaded) before the first timed move
        _AGENTS[key] = agent
    return _AGENTS[key]


def run_job(job: GameJob, limits: TimeLimits | None = None, on_move=None) -> dict:
    """Play one job; return its record. Never raises: an agent that raises, plays an
    illegal move or goes over `limits` forfeits (play_game), and any other failure makes
    a void game (``ranking`` empty, ``error`` set)."""
    import engine
    from agents.play import play_game

    start = time.perf_counter()
    try:
        deal = engine.random_deal(job.deal_seed)
        players = [_agent(player, seat) for seat, player in enumerate(job.seating)]
        game = play_game(players, deal, len(players), job.team, list(job.seeds), limits, on_move).to_dict()
    except Exception as exc:  # setup failure (bad checkpoint, reset() raised): a void game
        return _void_record(job, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}",
                            time.perf_counter() - start)
    return _job_record(job, game, time.perf_counter() - start)


def _job_record(job: GameJob, game: dict, seconds: float) -> dict:
    record = {"game": job.job_id, "deal_seed": job.deal_seed, "seats": [str(p) for p in job.seating],
              "seeds": list(job.seeds)}
    record.update(game)
    record["seconds"] = round(seconds, 4)
    return record


def _void_record(job: GameJob, error: str, seconds: float) -> dict:
    game = GameRecord(deal=[], num_players=len(job.seating), team=job.team, error=error)
    return _job_record(job, game.to_dict(), seconds)


def load_plugins(imports: Sequence[str]) -> None:
    """Import modules (``pkg.mod``) or files (``path/to/file.py``), e.g. to register agents.
    A file inside a package importable from ``sys.path`` is imported by its module name (so
    it is the same module as ``--import pkg.mod``, which numba's cache of its kernels
    imports by that name); any other file once per process under a name derived from its
    absolute path."""
    for item in imports:
        if item.endswith(".py") or os.sep in item:
            path = Path(item).resolve()
            if not path.is_file():
                raise ValueError(f"--import: file not found: {item}")
            dotted = _module_name(path)
            if dotted is not None and Path(getattr(importlib.import_module(dotted), "__file__", "")).resolve() == path:
                continue  # imported under its own name (a name that resolves elsewhere falls through)
            name = "_eval_plugin_" + "".join(c if c.isalnum() else "_" for c in str(path))
            if name in sys.modules:
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            try:
                importlib.import_module(item)
            except ModuleNotFoundError as exc:
                raise ValueError(f"--import: cannot import module {item!r}: {exc}") from exc


def _module_name(path: Path) -> str | None:
    """The dotted name under which `path` (a .py file) is importable from ``sys.path``
    through packages (every folder between has an ``__init__.py``), or None."""
    if path.suffix != ".py":
        return None
    for entry in sys.path:
        root = Path(entry or os.getcwd()).resolve()
        try:
            parts = path.with_suffix("").relative_to(root).parts
        except ValueError:
            continue
        folders = [root.joinpath(*parts[:k]) for k in range(1, len(parts))]
        if parts and all((folder / "__init__.py").is_file() for folder in folders) and \
                all(part.isidentifier() for part in parts):
            return ".".join(parts)
    return None
