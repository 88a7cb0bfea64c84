"""Where the web game's searching agents think: a bounded pool of worker processes, off
the request path.

The fast agents (`FAST_AGENTS`: greedy, random) answer in well under a millisecond, so
the server's event loop asks them itself (`humanplay.session.Session.replies`: agents
built afresh on a copy of the game). Every other agent's move, and every hint and review,
is CPU work that holds the GIL for up to seconds, so it runs here, in another process:
a job carries the game as data (`Session.data`: the record plus seed and hint agent); the
worker rebuilds the session, lets the agents move (the same `Session.replies`) or asks
the hint agent, and sends back the actions (or the hint). Workers keep no game between
jobs, so any worker serves any game and a restarted server needs none of them. They run
at a lower CPU priority (``nice``), so a room full of hint requests slows the hints, not
the other players' moves.

The pool takes at most `limit` jobs at once (running plus waiting); one more is refused
with `Saturated` (the server answers 503 with Retry-After) instead of queueing without
bound. A job that runs past `timeout` seconds fails with `TimeoutError` and its worker
is killed and replaced; so is a worker that dies.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time

from agents.base import parse_spec

FAST_AGENTS = frozenset({"greedy", "random"})  # agents that answer in well under a millisecond
NICE = 10  # the workers' CPU priority offset (higher = yields to the server's event loop)


class Saturated(Exception):
    """The pool already holds its limit of jobs; try again after `retry_after` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(f"the server is busy (searching agents, hints): try again in {retry_after} s")
        self.retry_after = retry_after


class NotStarted(Exception):
    """The pool has not started: the server still warms it up."""


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
    from . import session  # noqa: F401 (the imports a job needs: a second or two, done before the warm-up)


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


def replies_job(data: dict, action: int | None) -> tuple[list[int], float]:
    """The agents' replies to the person's `action` in the game `data` (None: their moves
    until the person's turn, in a new game), and the seconds they thought."""
    start = time.perf_counter()
    return _session(data).replies(action), time.perf_counter() - start


def hint_job(data: dict) -> tuple[dict, float]:
    start = time.perf_counter()
    return _session(data).hint(), time.perf_counter() - start


def review_job(record: dict, seat: int, step: int) -> tuple[dict, float]:
    """The analysis of one decision of a finished game's review (`humanplay.review`), as
    a dict, and the seconds it took."""
    from .review import analyze_steps

    start = time.perf_counter()
    decision = analyze_steps(record, seat, [step])[0]
    return decision.to_dict(), time.perf_counter() - start


def warm_job(specs: tuple[str, ...]) -> int:
    """Load what the first real job would: the engine's kernels and each agent's (a short
    game of each), so no player waits for them."""
    from agents.base import compile_engine, compile_jobs
    from engine import kernel_cache

    from .session import Session

    # a slow agent is warmed up against greedy (below): its kernels compile with the rest
    sources = specs if is_fast(specs) else (*specs, "greedy")
    if jobs := compile_jobs(sources):  # a cold cache: the search parts first, side by side
        kernel_cache.compile_in_parallel(jobs, "the agents' search parts", meanwhile=compile_engine)
    for spec in specs:
        fast = parse_spec(spec)[0] in FAST_AGENTS
        session = Session.new([spec if fast else "greedy"], seed=0, hint_spec=spec if not fast else "greedy")
        if not fast:
            session.hint()  # once: a hint thinks for its whole budget, and one loads every kernel
        for _ in range(2):
            if session.human_to_move:
                session.play(session.legal_actions()[0])
    return os.getpid()


def _worker_main(conn, nice: int, imports: tuple[str, ...]) -> None:
    """A worker process: import, wait for the agents to warm up with (`Pool.start`), warm
    up, then run each job that comes down the pipe and send back (ok, result); end when the
    server closes the pipe (or dies)."""
    _start_worker(nice, imports)
    try:
        specs = conn.recv()
    except (EOFError, OSError):
        return
    warm_job(specs)
    conn.send("ready")  # started and warm: its first job's time is the job's own
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 (the server reports it; the worker goes on)
            answer = (False, f"{type(exc).__name__}: {exc}")
        conn.send(answer)


# --- in the server -----------------------------------------------------------------------------
class JobError(Exception):
    """A job raised in its worker (a bug, e.g. an agent's illegal move); the message names it."""


STARTUP_TIMEOUT = 600.0  # seconds a worker may take to start (a cold numba cache compiles)


async def _readable(conn, timeout: float) -> None:
    """Wait until `conn` has something to read (or TimeoutError), on the event loop."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(conn.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await asyncio.wait_for(ready, timeout)
    finally:
        loop.remove_reader(conn.fileno())


class Pool:
    """Worker processes, each fed by its own pipe from the event loop (see the module
    doc). No helper thread: a job is written to an idle worker's pipe and its answer
    awaited with the loop's reader, so the event loop never waits on another thread for
    the GIL. A job past `timeout` has its worker killed and replaced."""

    def __init__(self, workers: int, limit: int, timeout: float, nice: int = NICE, imports: tuple[str, ...] = ()):
        self.workers, self.limit, self.timeout = workers, limit, timeout
        self._nice, self._imports = nice, imports
        self._context = multiprocessing.get_context("spawn")  # not fork: the server has threads
        self._held = 0
        self._jobs: asyncio.Queue | None = None
        self._procs: list = [None] * workers
        self._ready = [False] * workers  # a started worker has said it is ready
        self._specs: tuple[str, ...] | None = None  # the agents each worker warms up with, once started
        self._slots: list[asyncio.Task] = []

    @property
    def held(self) -> int:
        return self._held

    @property
    def started(self) -> bool:
        return self._jobs is not None

    def _spawn(self, i: int):
        parent, child = self._context.Pipe()
        proc = self._context.Process(target=_worker_main, args=(child, self._nice, self._imports), daemon=True,
                                     name=f"play247-worker-{i}")
        proc.start()
        child.close()
        self._procs[i] = (proc, parent)
        self._ready[i] = False
        if self._specs is not None:  # a worker replaced after `start` warms up at once
            parent.send(self._specs)
        return proc, parent

    def spawn(self) -> None:
        """Start the worker processes now, to import while the server compiles; they warm
        up with their agents at `start`."""
        for i in range(self.workers):
            if self._procs[i] is None:
                self._spawn(i)

    def _kill(self, i: int) -> None:
        if self._procs[i] is not None:
            proc, conn = self._procs[i]
            self._procs[i] = None
            conn.close()
            proc.kill()
            proc.join(5)

    async def start(self, specs) -> None:
        """Start the workers and warm each with the agents it will run (their kernels
        load now, not on a player's move)."""
        self._jobs, self._specs = asyncio.Queue(), tuple(specs)
        # (the server ran `warm_job` of every agent first, in its own process: on a cold
        # numba cache the workers load those kernels from the cache instead of compiling them)
        for i in range(self.workers):
            if self._procs[i] is None:
                self._spawn(i)
            else:  # spawned early (`spawn`): it waits for its agents
                self._procs[i][1].send(self._specs)
        await asyncio.gather(*(self._call(i, warm_job, ((),), timeout=STARTUP_TIMEOUT)  # each says it is ready
                               for i in range(self.workers)))
        self._slots = [asyncio.create_task(self._serve(i)) for i in range(self.workers)]

    async def _call(self, i: int, fn, args, timeout: float):
        """Run one job on worker i; a dead or late worker is replaced (and the job fails)."""
        if self._procs[i] is None:
            self._spawn(i)
        _, conn = self._procs[i]
        try:
            if not self._ready[i]:  # a new worker's start (imports, kernels) is not the job's time
                await _readable(conn, STARTUP_TIMEOUT)
                if conn.recv() != "ready":
                    raise EOFError
                self._ready[i] = True
            conn.send((fn, args))
            await _readable(conn, timeout)
            ok, value = conn.recv()
        except TimeoutError:
            self._kill(i)
            raise
        except (EOFError, OSError):
            self._kill(i)
            raise RuntimeError("an agents' worker died during the job; it was replaced") from None
        if not ok:
            raise JobError(value)
        return value

    async def _serve(self, i: int) -> None:
        while True:
            fn, args, future = await self._jobs.get()
            if future.done():  # its request gave up (timed out) while it waited
                continue
            try:
                result = await self._call(i, fn, args, self.timeout)
            except Exception as exc:  # noqa: BLE001 (handed to the request that asked)
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(result)

    async def run(self, fn, *args):
        """`fn(*args)` in a worker; Saturated when the pool already holds `limit` jobs,
        NotStarted before `start`."""
        if not self.started:
            raise NotStarted()
        if self._held >= self.limit:
            raise Saturated(retry_after=1)
        self._held += 1
        try:
            future = asyncio.get_running_loop().create_future()
            self._jobs.put_nowait((fn, args, future))
            # each job ahead of it is bounded by `timeout` (and a worker's restart), so this wait is too
            bound = STARTUP_TIMEOUT + self.timeout * (self.limit // self.workers + 1)
            return await asyncio.wait_for(future, bound)
        finally:
            self._held -= 1

    def close(self) -> None:
        for task in self._slots:
            task.cancel()
        for i in range(self.workers):
            self._kill(i)
