"""Where the web game's agents think: bounded pools of worker processes, off the
request path.

An agent's move (and a hint) is CPU work that holds the GIL, so it runs in another
process; the server's event loop only checks requests, applies moves, draws the page and
writes the database. A job carries the game as data (`game_data`: the record plus seed
and hint agent); the worker rebuilds the session, lets the agents move (or asks the
hint agent) and sends back the actions (or the hint). Workers keep no game between jobs,
so any worker serves any game and a restarted server needs none of them.

Two pools, so that slow thinkers never queue in front of fast ones:

* ``fast``: jobs whose agents are all cheap (`FAST_AGENTS`: greedy, random), at normal
  priority;
* ``slow``: everything else (searching agents, the default ``ismcts:time=1`` hint), at a
  lower CPU priority (``nice``), so a room full of hint requests slows the hints, not
  the other players' moves.

Each pool takes at most `limit` jobs at once (running plus waiting); one more is refused
with `Saturated` (the server answers 503 with Retry-After) instead of queueing without
bound. A job that runs past `timeout` seconds is abandoned with `TimeoutError`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from agents.base import parse_spec

FAST_AGENTS = frozenset({"greedy", "random"})  # agents that answer in about a millisecond
SLOW_NICE = 10  # the slow pool's CPU priority offset (higher = yields to the rest)


class Saturated(Exception):
    """The pool already holds its limit of jobs; try again after `retry_after` seconds."""

    def __init__(self, pool: str, retry_after: int):
        super().__init__(f"the server is busy ({pool} agents): try again in {retry_after} s")
        self.retry_after = retry_after


def is_fast(specs) -> bool:
    return all(parse_spec(spec)[0] in FAST_AGENTS for spec in specs)


# --- in the worker process -------------------------------------------------------------------
def _start_worker(nice: int, imports: tuple[str, ...]) -> None:
    _exit_with_parent()
    if nice:
        os.nice(nice)
    import importlib

    for name in imports:  # modules that register extra agents (tests)
        importlib.import_module(name)
    from engine import GameState

    GameState.new(2, seed=0).legal_actions()  # load the engine's compiled kernels now, not on a move


def _exit_with_parent() -> None:
    """End this worker when the server is gone (killed with -9, it cannot tell us)."""
    import threading

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-server").start()


def _session(data: dict):
    from .session import session_from_data

    return session_from_data(data)


def reply_job(data: dict, action: int) -> tuple[list[int], float]:
    """The agents' replies to the person's `action` in the game `data`, and the seconds
    they thought."""
    start = time.perf_counter()
    session = _session(data)
    moves = session.play(action)
    return [m.action for m in moves[1:]], time.perf_counter() - start


def advance_job(data: dict) -> tuple[list[int], float]:
    """The agents' moves until the person's turn (a new game where the person is not seat 0)."""
    start = time.perf_counter()
    moves = _session(data).advance()
    return [m.action for m in moves], time.perf_counter() - start


def hint_job(data: dict) -> tuple[dict, float]:
    start = time.perf_counter()
    return _session(data).hint(), time.perf_counter() - start


def warm_job(specs: tuple[str, ...]) -> int:
    """Load what the first real job would: the engine's kernels and each agent's (a short
    game of each), so no player waits for them."""
    from .session import Session

    for spec in specs:
        fast = parse_spec(spec)[0] in FAST_AGENTS
        session = Session.new([spec if fast else "greedy"], seed=0, hint_spec=spec if not fast else "greedy")
        for _ in range(2):
            if session.human_to_move:
                if not fast:
                    session.hint()
                session.play(session.legal_actions()[0])
    return os.getpid()


# --- in the server -----------------------------------------------------------------------------
class Pool:
    """A process pool with a bound on the jobs it holds (see the module doc)."""

    def __init__(self, name: str, workers: int, limit: int, timeout: float, nice: int = 0,
                 imports: tuple[str, ...] = ()):
        self.name, self.workers, self.limit, self.timeout = name, workers, limit, timeout
        self._nice, self._imports = nice, imports
        self._held = 0
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        # spawn, not fork: the server has threads (uvicorn's, numba's) that a fork would copy half-made
        return ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(self._nice, self._imports))

    def warm(self, specs) -> list:
        """Start every worker now (and load its kernels), so the first move is not slow."""
        return [self._executor.submit(warm_job, tuple(specs)) for _ in range(self.workers)]

    @property
    def held(self) -> int:
        return self._held

    async def run(self, fn, *args):
        if self._held >= self.limit:
            raise Saturated(self.name, retry_after=1)
        self._held += 1
        try:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self._executor, fn, *args)
            return await asyncio.wait_for(future, self.timeout)
        except BrokenProcessPool:  # a worker died (killed, out of memory): start new ones
            self._executor = self._new_executor()
            raise RuntimeError(f"a {self.name} worker died during the job; the pool was restarted") from None
        finally:
            self._held -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class Pools:
    """The fast and the slow pool."""

    def __init__(self, workers: int = 2, limit: int = 256, slow_limit: int = 64, timeout: float = 120.0,
                 imports: tuple[str, ...] = ()):
        self.fast = Pool("fast", workers, limit, timeout, 0, imports)
        self.slow = Pool("slow", workers, slow_limit, timeout, SLOW_NICE, imports)

    def for_specs(self, specs) -> Pool:
        return self.fast if is_fast(specs) else self.slow

    def warm(self, specs) -> list:
        """Warm each pool with the agents it will run."""
        fast = [spec for spec in set(specs) if is_fast([spec])]
        return self.fast.warm(fast) + self.slow.warm(sorted(set(specs) - set(fast)))

    def close(self) -> None:
        self.fast.close()
        self.slow.close()
