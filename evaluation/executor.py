"""Executors: run independent game jobs and hand back plain result records.

The tournament only talks to `Executor.map_jobs(jobs)`, which yields one record (a
JSON-friendly dict) per finished job, in any order. `SerialExecutor` plays in this
process; `ProcessExecutor` keeps a pool of long-lived worker processes, each of which
imports the plugins, warms the numba kernels once and builds each agent once per
(spec, seat), reseeding it for every game. A cluster backend only has to implement
`map_jobs` the same way.

Determinism: a job carries its deal seed and every seat's agent seed, so its record
does not depend on which worker plays it (agents must play the same given the same
`seed()` + `reset()`, the Agent contract).
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence


@dataclass(frozen=True)
class GameJob:
    """One game to play: everything needed, nothing else."""

    job_id: int
    deal_seed: int
    seating: tuple[str, ...]  # agent spec per seat
    seeds: tuple[int, ...]  # agent seed per seat
    team: bool = False


class Executor(ABC):
    """Runs game jobs. Use as a context manager so workers are cleaned up."""

    @abstractmethod
    def map_jobs(self, jobs: Iterable[GameJob]) -> Iterator[dict]:
        """Yield one result record per job as each finishes (any order)."""

    def close(self) -> None:
        """Stop any workers (also on Ctrl-C)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Plays every job in this process, in order."""

    def __init__(self, imports: Sequence[str] = ()):
        load_plugins(imports)

    def map_jobs(self, jobs):
        for job in jobs:
            yield run_job(job)


class ProcessExecutor(Executor):
    """A pool of `workers` long-lived processes (start method spawn by default)."""

    def __init__(self, workers: int, imports: Sequence[str] = (), start_method: str = "spawn"):
        ctx = mp.get_context(start_method)
        self._pool = ctx.Pool(workers, initializer=_init_worker, initargs=(list(imports),))

    def map_jobs(self, jobs):
        yield from self._pool.imap_unordered(run_job, jobs, chunksize=1)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


def make_executor(workers: int, imports: Sequence[str] = (), start_method: str = "spawn") -> Executor:
    return SerialExecutor(imports) if workers <= 1 else ProcessExecutor(workers, imports, start_method)


# --- what runs in a worker ---------------------------------------------------------------
_AGENTS: dict[tuple[str, int], object] = {}  # (spec, seat) -> agent, built once per process


def _init_worker(imports: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one game per core: no nested thread pools
    load_plugins(imports)
    warm_up()


def warm_up() -> None:
    """Compile (or load from cache) the engine kernels with one quick random game."""
    import agents
    import engine
    from agents.play import play_game

    play_game([agents.make("random", 0), agents.make("random", 1)], engine.random_deal(0), 2)


def _agent(spec: str, seat: int):
    key = (spec, seat)
    if key not in _AGENTS:
        import agents

        _AGENTS[key] = agents.make(spec)
    return _AGENTS[key]


def run_job(job: GameJob) -> dict:
    """Play one job; return its record. Never raises: an agent that raises or plays an
    illegal move forfeits (play_game), and any other failure makes a void game
    (``ranking`` empty, ``error`` set)."""
    import engine
    from agents.play import play_game

    record = {"game": job.job_id, "deal_seed": job.deal_seed, "seats": list(job.seating),
              "seeds": list(job.seeds)}
    start = time.perf_counter()
    try:
        deal = engine.random_deal(job.deal_seed)
        players = [_agent(spec, seat) for seat, spec in enumerate(job.seating)]
        game = play_game(players, deal, len(players), job.team, list(job.seeds)).to_dict()
    except Exception as exc:  # setup failure (bad checkpoint, reset() raised): a void game
        game = {"deal": [], "num_players": len(job.seating), "team": job.team, "actions": [], "scores": [],
                "ranking": [], "rewards": [], "forfeit": None,
                "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"}
    record.update(game)
    record["seconds"] = round(time.perf_counter() - start, 4)
    return record


def load_plugins(imports: Sequence[str]) -> None:
    """Import modules (``pkg.mod``) or files (``path/to/file.py``), e.g. to register agents.
    A file is imported once per process under a name derived from its absolute path."""
    for item in imports:
        if item.endswith(".py") or os.sep in item:
            path = Path(item).resolve()
            if not path.is_file():
                raise ValueError(f"--import: file not found: {item}")
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
