"""Games on a Ray cluster: the only module that imports ``ray`` (the ``ray`` extra).

Two layers:

* **`RayJobPool`**, generic: runs picklable jobs on a pool of Ray actors, each holding one
  handler built once from a picklable factory (``factory()`` returns a callable
  ``handler(job) -> result``). Results come back as each job finishes. An actor that dies
  (its node lost, the OOM killer, ``ray.kill``) is replaced, and the job it was running is
  run again on another actor, up to ``max_retries`` times; a job whose call outlives
  ``call_timeout`` has its actor killed and counts as such a loss. A job either comes back
  whole or not at all, so a caller never sees half a result. Every actor's process runs
  with numba, OpenMP, MKL and OpenBLAS limited to the CPUs Ray gives it
  (`worker_runtime_env`): Ray sets ``OMP_NUM_THREADS`` itself, not ``NUMBA_NUM_THREADS``.
* **`map_on_ray`**: a pool's jobs on a cluster in one call (connecting and disconnecting),
  with files from the driver published once (``ray.put``) and copied to each node's temp
  directory for the handlers (self-play: `training.teacher` plays its chunk jobs with it,
  each generation's network one such file).
* **`RayExecutor`**, the tournament `Executor`: each actor's handler is the one-worker
  local executor that ``--workers 1`` uses (`evaluation.executor.make_local_executor`), so a
  game on Ray is played by exactly the code, seeds and time-limit enforcement of a local
  run; games go to an actor in batches (`games_per_call`: a Ray call costs about a quick
  game's CPU), and a batch whose actor dies is played again whole.

What runs where (the driver, one compile task per node, one actor per worker) and what
every node needs: docs/ray.md.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import itertools
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from engine.extras import require

ray = require("ray", "the Ray executor (--executor ray, selfplay.executor: ray)")
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

try:
    from ray.exceptions import AuthenticationError
except ImportError:  # an older Ray, without token authentication
    class AuthenticationError(Exception):
        """Never raised: this Ray has no token authentication."""

from agents.play import TimeLimits
from engine.files import atomic_write

from .executor import SETUP_TIME_LIMIT, Executor, GameJob, load_plugins, make_local_executor, precompile

ROOT = Path(__file__).resolve().parents[1]  # the checkout the driver runs (put on workers' PYTHONPATH)
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
CONNECT_TIMEOUT = 10.0  # seconds a cluster's address gets to answer (ray.init itself waits minutes)
AUTH_PROBE_TIMEOUT = 5.0  # seconds the cluster gets to refuse this process's token (it takes milliseconds)
CLOSE_TIMEOUT = 10.0  # seconds an actor gets to stop its child processes before it is killed
MAX_GAMES_PER_CALL = 8  # tournament games sent to an actor in one call (see games_per_call)
# One call at a time on each actor: then the call running when an actor dies is known for sure
# (a result sent just before the death can be lost in transit, so with calls queued behind it a
# finished quick job could be blamed for the next one's crash). Batches of games amortise the
# round trip between calls.
CALLS_PER_ACTOR = 1
PEEK_JOBS = 256  # the first jobs whose agents are compiled on every node before play (a duplicate set)
FILES_DIR = "toolkit-ray-files"  # in each node's temp directory: published files, named by content


# --- connecting -------------------------------------------------------------------------------
def connect(address: str | None = None) -> bool:
    """Connect to the cluster at `address` (``ray start --head`` prints it), or start a local
    Ray instance when `address` is None. Returns whether this call connected (the caller
    then disconnects with `ray.shutdown`); False when this process was already connected."""
    if ray.is_initialized():
        return False
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ValueError(f"ray address must be a non-empty string such as 'auto' or 'HOST:6379', got {address!r}")
    try:
        if address is None:
            ray.init(include_dashboard=False)
        else:
            check_reachable(address.strip())
            check_authentication(address.strip())
            ray.init(address=address.strip())
    except ConnectionError as exc:
        raise ValueError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from exc
    except AuthenticationError:  # ray.init's own check: token mode on and no token here
        raise ValueError(authentication_advice(address)) from None
    return True


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise ValueError unless something accepts a connection at a ``HOST:PORT`` address
    within `timeout` seconds (other forms, such as ``auto``, are left to Ray)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in host:
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ValueError(f"nothing answers at the Ray address {address!r} ({exc}); start a cluster there with "
                         f"`ray start --head` or pass the address it printed") from None


def check_authentication(address: str, timeout: float = AUTH_PROBE_TIMEOUT) -> None:
    """Raise ValueError, in one line with the fix, when the cluster at `address` refuses
    this process for its authentication token (Ray's token authentication, see
    docs/ray.md). ``ray.init`` retries such a refusal for about 20 s and then says only
    that it cannot connect; one call to the cluster's GCS, with the client ``ray.init``
    itself opens first, gets the refusal at once. Any other outcome, or no answer within
    `timeout` seconds, is left to ``ray.init``, as is a Ray without token authentication
    (the private classes used here then do not import)."""
    try:
        from ray._raylet import AuthenticationMode, AuthenticationTokenLoader, GcsClient, get_authentication_mode
    except ImportError:
        return
    token_mode = get_authentication_mode() == AuthenticationMode.TOKEN
    if token_mode and not AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        raise ValueError(authentication_advice(address))  # (a GCS client would abort the process)
    refused = threading.Event()

    def probe() -> None:
        try:
            GcsClient(address=address)
        except AuthenticationError:
            refused.set()
        except Exception:  # not Ray's GCS, a time-out: ray.init reports it
            pass

    thread = threading.Thread(target=probe, name="ray-authentication-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    if refused.is_set():
        raise ValueError(authentication_advice(address))


def authentication_advice(address: str | None) -> str:
    """One line: why the cluster at `address` refuses this process, and the fix."""
    from ray._raylet import AuthenticationMode, AuthenticationTokenLoader, get_authentication_mode

    where = f"the Ray cluster at {address}" if address else "the Ray cluster"
    fix = "the cluster's token (`ray get-auth-token` on its head node prints it) in RAY_AUTH_TOKEN or ~/.ray/auth_token"
    if get_authentication_mode() != AuthenticationMode.TOKEN:
        return (f"{where} has token authentication on and this process sent no token: set RAY_AUTH_MODE=token "
                f"and put {fix} (see docs/ray.md)")
    if not AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        return f"{where} needs an authentication token and RAY_AUTH_MODE=token found none here: put {fix} " \
               f"(see docs/ray.md)"
    return f"{where} refused this process's authentication token: put {fix} (see docs/ray.md)"


def cluster_cpus() -> int:
    """Whole CPUs the connected cluster offers (0 if none)."""
    return int(ray.cluster_resources().get("CPU", 0))


def worker_runtime_env(cpus: int) -> dict:
    """The runtime environment of a worker given `cpus` CPUs: every thread pool sized to them
    (set before the worker imports numba or torch, which read them once), and the driver's
    checkout first on the import path."""
    env = {var: str(cpus) for var in THREAD_VARS}
    # Ray expands ${VAR} from the node's environment (unset: an empty entry, the worker's
    # directory, which Ray puts on a worker's path anyway)
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}${{PYTHONPATH}}"
    return {"env_vars": env}


def on_every_node(fn: Callable[[], Any], cpus: int = 1, timeout: float = SETUP_TIME_LIMIT) -> list:
    """Run `fn()` once on each live node that has `cpus` CPUs, all nodes at once; return the
    results (``cpus=0``: also on nodes whose CPUs are all held, one thread each). Raises
    RuntimeError if a node does not finish within `timeout` seconds."""
    refs = [_call.options(num_cpus=cpus, runtime_env=worker_runtime_env(max(cpus, 1)), max_retries=1,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(fn)
            for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= cpus]
    try:
        return ray.get(refs, timeout=timeout)
    except GetTimeoutError:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise RuntimeError(f"a node did not finish its set-up within {timeout:g} s") from None


@ray.remote
def _call(fn):
    return fn()


# --- the generic pool ---------------------------------------------------------------------------
@ray.remote
class _JobWorker:
    """One pool actor: builds its handler once, then runs jobs with it, one at a time, in
    the order they were submitted (a plain actor: no concurrency groups, which would let
    queued calls run out of order). An actor killed while busy takes the tournament
    handler's game process with it: that process exits when its parent is gone
    (`evaluation.executor`)."""

    def __init__(self, factory: Callable[[], Callable]):
        self.handler = factory()

    def ready(self) -> bool:
        return True

    def run(self, job):
        return self.handler(job)

    def close(self) -> None:
        close = getattr(self.handler, "close", None)
        if close is not None:
            close()


@dataclass
class _Task:
    job: Any
    attempts: int = 0  # how many actors died while running it


@dataclass
class _Slot:
    """An actor and the calls queued on it, oldest (the one running) first."""

    actor: Any
    starting: Any  # the actor's `ready` call until it returns, then None
    deadline: float | None  # when the actor must have started, or its running call be back
    calls: collections.deque = field(default_factory=collections.deque)  # (ref, _Task)


class RayJobPool:
    """Runs jobs on up to `size` Ray actors of `cpus` CPUs each (see the module docstring).

    `factory` is a picklable zero-argument callable (a class, a `functools.partial`) that
    builds a handler in each actor; `max_retries` how often a job is run again after its
    actor died; `call_timeout` the most seconds one call may run once its actor has
    started (None: no limit); `start_timeout` the most seconds an actor may take to be
    placed and build its handler.
    """

    def __init__(self, factory: Callable[[], Callable], size: int, cpus: int = 1, max_retries: int = 2,
                 call_timeout: float | None = None, start_timeout: float = SETUP_TIME_LIMIT):
        if not callable(factory):
            raise TypeError(f"factory must be a callable that builds a handler, got {type(factory).__name__}")
        for name, value, low in (("size", size, 1), ("cpus", cpus, 1), ("max_retries", max_retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, value in (("call_timeout", call_timeout), ("start_timeout", start_timeout)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        if not ray.is_initialized():
            raise RuntimeError("RayJobPool needs a Ray connection first (ray_executor.connect)")
        self.factory, self.size, self.cpus = factory, size, cpus
        self.max_retries, self.call_timeout, self.start_timeout = max_retries, call_timeout, start_timeout
        self.replaced = 0  # actors found dead or stopped, and replaced (for tests and logs)
        self._start_failures = 0  # actors in a row that died or timed out before they started
        self._slots: list[_Slot] = []
        self._actor_options = dict(num_cpus=cpus, runtime_env=worker_runtime_env(cpus), max_restarts=0)

    def map_unordered(self, jobs: Iterable) -> Iterator[tuple[Any, Any]]:
        """Yield ``(job, result)`` for every job, in the order they finish. A job whose
        handler raises stops the run with that error. Actors still busy when the caller
        stops early (or on an error) are ended, so a later call never sees their results."""
        try:
            yield from self._run(iter(jobs))
        finally:
            busy = [slot for slot in self._slots if slot.calls]
            self._slots = [slot for slot in self._slots if not slot.calls]
            for slot in busy:
                ray.kill(slot.actor, no_restart=True)

    def _run(self, source: Iterator) -> Iterator[tuple[Any, Any]]:
        # jobs waiting for a started actor: those taken back from lost actors first, then up
        # to `size` new ones looked ahead (empty once the source is spent)
        todo: collections.deque[_Task] = collections.deque()
        while True:
            self._submit(todo, source)
            if not todo and not any(slot.calls for slot in self._slots):
                return
            watched = {slot.starting: slot for slot in self._slots if slot.starting is not None}
            watched.update((ref, slot) for slot in self._slots for ref, _ in slot.calls)
            ready, _ = ray.wait(list(watched), num_returns=1, timeout=self._wait_timeout())
            for ref in ready:
                slot = watched[ref]
                if slot not in self._slots:
                    continue  # already found dead: its calls were taken back
                try:
                    result = ray.get(ref)
                except RayActorError as exc:
                    # calls run in order: those that returned before the actor died are
                    # results, and the loss is the first call still unfinished
                    for task, finished in self._finished_calls(slot):
                        yield task.job, finished
                    self._lost(slot, todo, f"its Ray worker died ({_first_line(exc)})")
                    continue
                if ref == slot.starting:
                    slot.starting = None
                    slot.deadline = None
                    self._start_failures = 0
                    continue
                index = next(i for i, (call, _) in enumerate(slot.calls) if call == ref)
                _, task = slot.calls[index]
                del slot.calls[index]
                if index == 0:  # the next queued call starts now
                    slot.deadline = self._call_deadline(slot)
                yield task.job, result
            now = time.monotonic()
            for slot in [s for s in self._slots if s.deadline is not None and now > s.deadline]:
                ray.kill(slot.actor, no_restart=True)
                why = (f"its Ray worker did not start within {self.start_timeout:g} s" if slot.starting is not None
                       else f"it ran more than {self.call_timeout:g} s; its Ray worker was stopped")
                self._lost(slot, todo, why)

    def _submit(self, todo: collections.deque, source: Iterator) -> None:
        """Queue waiting jobs (taken-back ones first) on started actors with room, and start
        actors, up to `size`, for the jobs still waiting. A job never waits on an actor that
        has not started: after a node is lost, its replacement may never find a free CPU
        (the cluster is smaller now), and the job goes to a surviving actor instead."""
        while len(todo) < self.size:
            job = next(source, _END)
            if job is _END:
                break
            todo.append(_Task(job))
        for slot in self._slots:
            while todo and slot.starting is None and len(slot.calls) < CALLS_PER_ACTOR:
                task = todo.popleft()
                slot.calls.append((slot.actor.run.remote(task.job), task))
                if len(slot.calls) == 1:
                    slot.deadline = self._call_deadline(slot)
        starting = sum(slot.starting is not None for slot in self._slots)
        while len(todo) > starting and len(self._slots) < self.size:
            actor = _JobWorker.options(**self._actor_options).remote(self.factory)
            self._slots.append(_Slot(actor, actor.ready.remote(), time.monotonic() + self.start_timeout))
            starting += 1

    @staticmethod
    def _finished_calls(slot: _Slot) -> list[tuple[_Task, Any]]:
        """The leading calls of a dead actor that had returned, with their results (taken
        off the slot)."""
        finished = []
        while slot.calls:
            ref, task = slot.calls[0]
            if not ray.wait([ref], timeout=0)[0]:
                break
            try:
                result = ray.get(ref)
            except RayActorError:
                break
            finished.append((task, result))
            slot.calls.popleft()
        return finished

    def _lost(self, slot: _Slot, todo: collections.deque, why: str) -> None:
        """An actor is gone: drop it and take its jobs back (the running one counts a loss).
        An actor that never started counts against the workers' start: more than
        `max_retries` such losses in a row (a handler that cannot be built) stop the run."""
        self._slots.remove(slot)
        self.replaced += 1
        if slot.starting is not None:
            self._start_failures += 1
            if self._start_failures > self.max_retries:
                raise RuntimeError(f"{self._start_failures} Ray worker(s) in a row failed to start: {why}")
        tasks = [task for _, task in slot.calls]
        if tasks:
            tasks[0].attempts += 1
            if tasks[0].attempts > self.max_retries:
                raise RuntimeError(f"job {_describe(tasks[0].job)} was lost {tasks[0].attempts} time(s): {why}")
        todo.extendleft(reversed(tasks))

    def _call_deadline(self, slot: _Slot) -> float | None:
        """When the actor's running call must be back (None: nothing running, or no limit)."""
        if slot.starting is not None:
            return slot.deadline
        if not slot.calls or self.call_timeout is None:
            return None
        return time.monotonic() + self.call_timeout

    def _wait_timeout(self) -> float | None:
        deadlines = [s.deadline for s in self._slots if s.deadline is not None]
        return None if not deadlines else max(0.0, min(deadlines) - time.monotonic())

    def close(self) -> None:
        """Let every actor stop its handler (a bounded wait), then end the actors."""
        slots, self._slots = self._slots, []
        started = [s for s in slots if s.starting is None]  # one still waiting for a CPU would not answer
        try:
            if started:
                ray.wait([s.actor.close.remote() for s in started], num_returns=len(started), timeout=CLOSE_TIMEOUT)
        finally:
            for slot in slots:
                ray.kill(slot.actor, no_restart=True)

    def __enter__(self) -> "RayJobPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_END = object()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _describe(job) -> str:
    if isinstance(job, tuple) and job and all(hasattr(j, "job_id") for j in job):  # a batch of games
        return "with games " + ", ".join(f"#{j.job_id}" for j in job)
    job_id = getattr(job, "job_id", None)
    return f"#{job_id}" if job_id is not None else repr(job)[:100]


# --- jobs that need the driver's files ---------------------------------------------------------
def publish_files(paths: Iterable[str | os.PathLike]) -> dict[str, Any]:
    """Each file's bytes put in the cluster's object store once: {path: object ref}. A node
    fetches a file at most once, however many of its workers read it."""
    published = {}
    for path in dict.fromkeys(str(p) for p in paths):
        try:
            published[path] = ray.put(Path(path).read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot publish {path} to the Ray workers: {exc}") from exc
    return published


def local_files(published: dict[str, Any]) -> dict[str, str]:
    """On a worker: {driver path: local copy} of every published file. A copy is named by
    its content's hash in the node's temp directory and written whole, then renamed, so a
    node's workers share one copy and a replaced worker finds it (copies stay there, like
    numba's cache; one per distinct file)."""
    folder = Path(tempfile.gettempdir()) / FILES_DIR
    folder.mkdir(exist_ok=True)
    copies = {}
    for path, ref in published.items():
        data = ray.get(ref, timeout=SETUP_TIME_LIMIT)
        target = folder / (hashlib.sha256(data).hexdigest() + Path(path).suffix)
        if not target.is_file():
            atomic_write(target, lambda f, data=data: f.write(data))
        copies[path] = str(target)
    return copies


class WithLocalFiles:
    """A picklable callable: ``fn(local_files(published))``, e.g. a pool factory whose
    handler reads the driver's files (their refs travel inside it)."""

    def __init__(self, fn: Callable[[dict[str, str]], Any], published: dict[str, Any]):
        self.fn, self.published = fn, published

    def __call__(self):
        return self.fn(local_files(self.published))


def map_on_ray(factory: Callable[[dict[str, str]], Callable], jobs: Sequence, workers: int = 0,
               address: str | None = None, files: Iterable[str | os.PathLike] = (),
               warm: Callable[[dict[str, str]], Any] | None = None, max_retries: int = 2,
               call_timeout: float | None = None) -> Iterator[tuple[Any, Any]]:
    """Yield ``(job, result)`` for every job as it finishes, run by the handlers that
    ``factory(copies)`` builds in `workers` actors of one CPU (0: one per CPU of the
    cluster at `address`; None: a local Ray instance, stopped afterwards). `files` are
    published once and ``copies`` maps each to its local copy on the actor's node;
    `warm(copies)` runs once per node first (a numba compile into the node's cache).
    A job whose actor dies is run again (`RayJobPool`)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0 = every CPU of the cluster), got {workers!r}")
    jobs = list(jobs)
    if not jobs:
        return
    connected = connect(address)
    try:
        cpus = cluster_cpus()
        if cpus < 1:
            raise ValueError("the Ray cluster has no CPU to run jobs on")
        published = publish_files(files)
        if warm is not None:
            on_every_node(WithLocalFiles(warm, published))
        size = min(workers or cpus, cpus, len(jobs))  # an actor beyond the CPUs would never start
        with RayJobPool(WithLocalFiles(factory, published), size, max_retries=max_retries,
                        call_timeout=call_timeout) as pool:
            yield from pool.map_unordered(jobs)
    finally:
        if connected:
            ray.shutdown()


# --- tournaments ---------------------------------------------------------------------------------
class GamePlayer:
    """A pool actor's handler for tournament games: the local one-worker executor plays a
    batch of games (a tuple of `GameJob`) and returns their records."""

    def __init__(self, imports: Sequence[str], limits: TimeLimits | None, start_method: str = "spawn"):
        self.executor = make_local_executor(1, imports, start_method, limits)

    def __call__(self, batch: tuple[GameJob, ...]) -> list[dict]:
        return list(self.executor.map_jobs(batch))

    def close(self) -> None:
        self.executor.close()


def warm_node(imports: Sequence[str], specs: Sequence) -> None:
    """Compile (or load) the engine's kernels and those of the typed agents `specs`
    (`evaluation.executor.precompile`) into this node's cache."""
    precompile(specs, imports)


def game_call_timeout(players: int, limits: TimeLimits | None, games: int = 1) -> float | None:
    """The most one call of `games` games may take when every seat uses its whole clock,
    plus set-up (building and warming the agents, a worker restart)."""
    if limits is None:
        return None
    return 2 * SETUP_TIME_LIMIT + games * (players * limits.game + 60.0)


def games_per_call(peeked: int, workers: int) -> int:
    """Games sent to an actor in one call: a Ray call costs about as much CPU as a quick
    game, so games go in batches, small enough that every worker still gets several
    (a short tournament keeps one game a call, a lost actor costs little to replay)."""
    return max(1, min(MAX_GAMES_PER_CALL, peeked // (4 * workers)))


def _batches(jobs: Iterator[GameJob], size: int) -> Iterator[tuple[GameJob, ...]]:
    while batch := tuple(itertools.islice(jobs, size)):
        yield batch


class RayExecutor(Executor):
    """Tournament games as jobs of a `RayJobPool`: `workers` actors of one CPU each (0, or
    more than the cluster has: one per CPU of the cluster), connected to `address` (None:
    a local Ray instance)."""

    def __init__(self, workers: int = 0, imports: Sequence[str] = (), limits: TimeLimits | None = None,
                 address: str | None = None, start_method: str = "spawn", max_retries: int = 2):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be an integer >= 0 (0 = every CPU of the cluster), got {workers!r}")
        load_plugins(imports)  # a bad plugin fails here, not in every actor
        self.imports = [_absolute(item) for item in imports]
        self.limits, self.start_method, self.max_retries = limits, start_method, max_retries
        self._connected = connect(address)
        cpus = cluster_cpus()
        if cpus < 1:
            self.close()
            raise ValueError("the Ray cluster has no CPU to run games on")
        self.workers = min(workers, cpus) if workers else cpus  # an actor beyond the CPUs would never start
        self._pool: RayJobPool | None = None
        self._warmed: set = set()  # the typed agents already compiled on every node

    def map_jobs(self, jobs: Iterable[GameJob]) -> Iterator[dict]:
        jobs = iter(jobs)
        first = list(itertools.islice(jobs, PEEK_JOBS))
        if not first:
            return
        todo = [agent for agent in dict.fromkeys(agent for job in first for agent in job.seating)
                if agent not in self._warmed]
        if todo:  # a later call (the ladder's next match) finds the pool's idle actors holding every CPU
            on_every_node(functools.partial(warm_node, self.imports, todo), cpus=0 if self._pool is not None else 1)
            self._warmed.update(todo)
        players = max(len(job.seating) for job in first)
        size = games_per_call(len(first), self.workers)
        if self._pool is None:
            factory = functools.partial(GamePlayer, self.imports, self.limits, self.start_method)
            self._pool = RayJobPool(factory, self.workers, max_retries=self.max_retries)
        # a batch whose actor dies is played again whole: its games were not handed out yet
        self._pool.call_timeout = game_call_timeout(players, self.limits, size)
        for _, records in self._pool.map_unordered(_batches(itertools.chain(first, jobs), size)):
            yield from records

    def close(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.close()
            self._pool = None
        if getattr(self, "_connected", False):
            ray.shutdown()
            self._connected = False


def _absolute(item: str) -> str:
    """A plugin file as an absolute path (actors do not share the driver's directory)."""
    if item.endswith(".py") or os.sep in item:
        return str(Path(item).resolve())
    return item
