"""numba's on-disk cache of this project's kernels: a notice when a process compiles, and
one invalidation rule across files.

numba compiles a kernel on its first call and, with ``cache=True``, saves the machine code
(in ``__pycache__`` next to the source, or under ``NUMBA_CACHE_DIR``), so later processes
load it in milliseconds. Two things numba does not do, done here on import of
`engine.kernels` (before any kernel is defined):

* **Say that it compiles.** On a cold cache the first game step, env step, search or
  training iteration waits while numba compiles, silently. `announce_compiles` prints a
  line to stderr when this process starts compiling a group of the project's kernels
  (`GROUPS`: the engine, the envs, the greedy policy, the search, ...), naming the group
  and how long it takes cold (benchmarks/cold_start.py measures it); each group once per
  process, on its own line (above a progress bar, through tqdm), and only for a top-level
  compile (the kernels a search compiles inside it belong to the search's line). numba's
  ``numba:compile`` event fires only on a cache miss, so a warm cache prints nothing, and
  neither does a worker process that loads what its parent compiled
  (`evaluation.executor.precompile`).
* **Invalidate across files.** numba keys a cached kernel on the contents of its own
  source file only, but kernels call and inline kernels of other files (the env and the
  agents call `engine.kernels.place`, ...): after an edit of ``engine/kernels.py`` the
  cached agent kernels would keep running the old engine. `check_sources` fingerprints
  every file of `KERNEL_FILES` and, when the fingerprint differs from the one stored next
  to the cache, deletes the cached kernels of all of them, so everything recompiles.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import sys
from pathlib import Path

from .files import atomic_write_text

# Every module that compiles numba kernels with cache=True (tests/test_kernel_cache.py
# checks that none is missing), relative to the directory holding the packages.
KERNEL_FILES = (
    "engine/kernels.py", "engine/access.py", "engine/batch.py", "engine/determinize.py",
    "env/observation.py", "env/step_kernels.py",
    "agents/policy_kernels.py", "agents/search/core.py", "agents/networks/evaluator.py", "agents/networks/placement.py",
    "agents/networks/features.py", "agents/search/br_kernels.py", "agents/search/afterstate.py",
    "training/opponents.py",
)
PROJECT_PACKAGES = ("engine", "env", "agents", "training", "evaluation")
STAMP_NAME = "kernel_sources.sha256"
ROOT = Path(__file__).resolve().parents[1]

# What a cold compile of each group of kernels is, by the module of its top-level kernel,
# and the CPU seconds it takes on one quiet core of a small machine (AMD EPYC, numba 0.68;
# benchmarks/cold_start.py --kernels, benchmarks/RESULTS.md 2026-12-06). First match wins.
GROUPS = (
    ("engine.", "the engine", 5),
    ("env.observation", "the observation encoder", 5),
    ("env.", "the environments", 20),
    ("agents.search.core", "the search agents (ismcts, pimc, cheat)", 20),
    ("agents.search.br_kernels", "the best response (br, evaluate.py exploit)", 50),
    ("agents.policy_kernels", "the greedy and rollout policies", 10),
    ("agents.", "the agents' features and evaluators", 20),
    ("training.", "training's batched opponents", 30),
)
NOTICE = "compiling numba kernels"  # every notice line starts so


def notice(module: str) -> str | None:
    """The notice line for a top-level compile of a kernel of `module` (None: not ours)."""
    for prefix, what, seconds in GROUPS:
        if module.startswith(prefix):
            return (f"{NOTICE} for {what} (not in numba's cache yet; cached for later runs): about {seconds} s "
                    "of CPU cold, more on a busy machine ...")
    return None


def source_fingerprint(paths) -> str:
    """sha256 over the names and contents of the kernel source files that exist."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dir_of(source: Path) -> Path | None:
    """The directory numba caches `source`'s kernels in (its own choice of locator:
    ``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the file, else a user-wide one)."""
    try:
        from numba.core.caching import CacheImpl

        for locator_class in CacheImpl._locator_classes:
            locator = locator_class.from_function(cache_dir_of, str(source))
            if locator is not None:
                return Path(locator.get_cache_path())
    except Exception:  # a numba without this layout: no invalidation (see the module doc)
        return None
    return None


def drop_stale(paths, cache_dir_for=cache_dir_of) -> bool:
    """If the sources in `paths` changed since the fingerprint stored next to the first
    one's cache, delete every cached kernel of every file in `paths` and store the new
    fingerprint. Returns whether it deleted. Never raises for a read-only cache: numba
    then cannot write there either."""
    paths = [Path(p) for p in paths]
    stamp_dir = cache_dir_for(paths[0])
    if stamp_dir is None:
        return False
    stamp = stamp_dir / STAMP_NAME
    fingerprint = source_fingerprint(paths)
    try:
        if stamp.read_text().strip() == fingerprint:
            return False
    except OSError:
        pass  # no stamp yet: a fresh cache, or one written before this rule
    for path in paths:
        directory = cache_dir_for(path)
        if directory is None or not directory.is_dir():
            continue
        for cached in [*directory.glob(f"{path.stem}.*.nbi"), *directory.glob(f"{path.stem}.*.nbc")]:
            try:
                cached.unlink()
            except OSError:
                pass  # another process removed it first
    try:
        atomic_write_text(stamp, fingerprint + "\n")
    except OSError:
        pass
    return True


def check_sources() -> bool:
    """`drop_stale` over this project's `KERNEL_FILES`."""
    return drop_stale([ROOT / name for name in KERNEL_FILES])


_listener = None


def say(line: str) -> None:
    """Print `line` to stderr on its own line: through tqdm when it is loaded (it clears a
    progress bar of this process and draws it again below), else plainly."""
    tqdm = sys.modules.get("tqdm")
    if tqdm is not None and hasattr(tqdm, "tqdm"):
        tqdm.tqdm.write(line, file=sys.stderr)
        sys.stderr.flush()
    else:
        print(line, file=sys.stderr, flush=True)


def announce_compiles() -> None:
    """Print the `notice` of a group of kernels to stderr when this process first compiles
    (rather than loads from the cache) a top-level kernel of that group; each group once.
    Calling it again does nothing."""
    global _listener
    if _listener is not None or os.environ.get(QUIET):
        return
    from numba.core import event

    class CompileNotice(event.Listener):
        def __init__(self):
            self.shown: set[str] = set()
            self.depth = 0

        def on_start(self, ev):
            self.depth += 1
            if self.depth > 1:  # compiled inside another kernel's compile: its line covers it
                return
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            line = notice(getattr(func, "__module__", "") or "")
            if line is not None and line not in self.shown:
                self.shown.add(line)
                say(line)

        def on_end(self, ev):
            self.depth -= 1

    _listener = CompileNotice()
    event.register("numba:compile", _listener)


# --- compiling kernel groups side by side ------------------------------------------------------
QUIET = "TWENTYFOURSEVEN_COMPILE_WORKER"  # set in a compile worker's environment: it prints no notice


def is_cached(dispatcher) -> bool:
    """Whether numba's cache holds a compiled version of `dispatcher` (its index file is
    there): a cheap test that compiles and loads nothing."""
    func = dispatcher.py_func
    source = Path(func.__code__.co_filename)
    directory = cache_dir_of(source)
    return directory is not None and any(directory.glob(f"{source.stem}.{func.__qualname__}-*.nbi"))


def _start_worker() -> None:
    """A compile worker leaves Ctrl-C to its parent, which stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(job) -> bool:
    try:
        job()
    except Exception:  # noqa: BLE001 (what it did not cache is compiled by whoever needs it next)
        return False
    return True


def compile_in_parallel(jobs, what: str, *, processes: int | None = None, timeout: float = 900.0) -> None:
    """Run compile `jobs` side by side, each in a fresh process (spawned; at most
    `processes` at a time, default one per core), and return when all are done.

    A job is a picklable callable of no arguments that compiles, and so caches, a group of
    kernels that do not call each other (one part of a search, an agent's warm-up); the
    caller then compiles what calls them, loading them from the cache instead of compiling
    them one after another on one core. Call it only when something is not cached (see
    `is_cached`): a worker costs a second or two to start. A job that fails or is still
    running after `timeout` seconds costs time, never correctness: whoever needs its
    kernels next compiles them. Prints one notice line naming `what`."""
    jobs = list(jobs)
    workers = min(len(jobs), processes or os.cpu_count() or 1)
    if workers <= 1 or multiprocessing.current_process().daemon:  # a daemon may not start processes
        for job in jobs:
            _run(job)
        return
    say(f"{NOTICE} for {what} in {workers} processes (not in numba's cache yet; cached for later runs) ...")
    os.environ[QUIET] = "1"  # the workers inherit it as they start: they print no notice (this one did)
    try:
        pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_start_worker)
    finally:
        del os.environ[QUIET]
    try:
        pool.map_async(_run, jobs, chunksize=1).wait(timeout)
    finally:
        pool.terminate()
        pool.join()
