"""numba's on-disk cache of this project's kernels: a notice when a process compiles, and
one invalidation rule across files.

numba compiles a kernel on its first call and, with ``cache=True``, saves the machine code
(in ``__pycache__`` next to the source, or under ``NUMBA_CACHE_DIR``), so later processes
load it in milliseconds. Two things numba does not do, done here for every module that
calls `register` (each module that compiles kernels with ``cache=True`` does, after its
imports and before its first kernel; the engine names no module above it):

* **Say that it compiles.** On a cold cache the first game step, env step, search or
  training iteration waits while numba compiles, silently. `announce_compiles` prints a
  line to stderr when this process starts compiling a group of the project's kernels
  (the group a module registered with: the engine, the envs, the greedy policy, the
  search, ...), naming the group and how long it takes cold (benchmarks/cold_start.py
  measures it); each group once per process, on its own line (above a progress bar,
  through tqdm), and only for a top-level compile (the kernels a search compiles inside it
  belong to the search's line). numba's ``numba:compile`` event fires only on a cache
  miss, so a warm cache prints nothing, and neither does a worker process that loads what
  its parent compiled.
* **Invalidate across files.** numba keys a cached kernel on the contents of its own
  source file only, but kernels call and inline kernels and constants of other files (the
  envs and the searches call ``engine.kernels.place``, read ``engine.layout``'s offsets):
  after an edit of ``engine/kernels.py`` the cached search kernels would keep running the
  old engine. `register` fingerprints the module's file and every file of the project it
  imports at its top level, directly or through others (`sources`: read from the import
  statements, so the set is the same in every process whatever else it imported), and
  when the fingerprint differs from the one stored next to the module's cache, deletes
  that module's cached kernels, before any of them is loaded. A module that imports the
  edited file registers after it, so its kernels go too; the others stay.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import re
import signal
import sys
from pathlib import Path

from .files import atomic_write_text

STAMP_SUFFIX = ".sources.sha256"  # the fingerprint of a module's sources, beside its cached kernels
ROOT = Path(__file__).resolve().parents[1]  # the directory holding the packages (a checkout, site-packages)
NOTICE = "compiling numba kernels"  # every notice line starts so

# module -> (what its kernels are, CPU seconds of a cold compile on one core of a small machine:
# AMD EPYC, numba 0.68; benchmarks/cold_start.py --kernels, benchmarks/RESULTS.md: cold-start
# 2026-12-07 18:15, after the helpers went to LLVM's inlining; training's opponents 2026-12-06)
REGISTERED: dict[str, tuple[str, int]] = {}
ENGINE = ("the engine", 3)  # the group of every kernel module of engine/ (other groups: where they live)


def register(module: str, what: str, seconds: int) -> None:
    """Called by a module that compiles kernels with ``cache=True``, as
    ``kernel_cache.register(__name__, "the search agents", 10)``, after its imports and before its
    first kernel: drops its cached kernels if its sources changed (`drop_stale` over
    `sources`), and names its group for the compile notice (`notice`)."""
    REGISTERED[module] = (what, seconds)
    path = getattr(sys.modules.get(module), "__file__", None)
    if path is not None:
        drop_stale(Path(path), sources(module))
    announce_compiles()


def notice(module: str) -> str | None:
    """The notice line for a top-level compile of a kernel of `module` (None: not a
    registered module)."""
    if module not in REGISTERED:
        return None
    what, seconds = REGISTERED[module]
    return (f"{NOTICE} for {what} (not in numba's cache yet; cached for later runs): about {seconds} s "
            "of CPU cold, more on a busy machine ...")


_IMPORT = re.compile(r"^(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))", re.M)


def module_file(module: str, root: Path = ROOT) -> Path | None:
    """The source file of the dotted `module` under `root` (a module or a package)."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def top_level_imports(path: Path, module: str, root: Path = ROOT) -> frozenset[str]:
    """The dotted modules that `path` (the module `module`) imports at its top level:
    ``from X import a`` names X (when something of it is not a submodule) and X.a (when it
    is); ``import X.Y`` names X.Y; relative imports are resolved."""
    source = re.sub(r"#[^\n]*", "", path.read_text()).replace("\\\n", " ")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for dots, name, names, plain in _IMPORT.findall(source):
        if plain:
            found.update(part.split()[0] for part in plain.split(",") if part.strip())
            continue
        if dots:
            base = package.split(".")
            base = base[:len(base) - (len(dots) - 1)]
            name = ".".join(base + ([name] if name else []))
        items = [item.split()[0] for item in names.strip("()").split(",") if item.strip()]
        submodules = [f"{name}.{item}" for item in items if module_file(f"{name}.{item}", root) is not None]
        found.update(submodules)
        if len(submodules) < len(items):
            found.add(name)
    return frozenset(found)


_SOURCES: dict[tuple, tuple[Path, ...]] = {}


def sources(module: str, root: Path = ROOT, packages=None) -> tuple[Path, ...]:
    """The files `module`'s kernels may depend on: its own and, followed through their
    top-level imports, those of every module it imports from `packages` (default: the
    top-level packages of the registered modules and of `module`), sorted."""
    if packages is None:
        packages = {name.split(".")[0] for name in (*REGISTERED, module)}
    key = (module, str(root), tuple(sorted(packages)))
    if root == ROOT and key in _SOURCES:
        return _SOURCES[key]
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or name == __name__ or name.split(".")[0] not in packages:
            continue  # this module is the machinery, not kernel code
        path = module_file(name, root)
        if path is None:
            continue
        seen[name] = path
        todo.extend(top_level_imports(path, name, root))
    result = tuple(sorted(set(seen.values())))
    if root == ROOT:
        _SOURCES[key] = result
    return result


def source_fingerprint(paths) -> str:
    """sha256 over the names and contents of the source files that exist."""
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


def drop_stale(owner: Path, paths, cache_dir_for=cache_dir_of) -> bool:
    """If the sources in `paths` (`owner`'s file and what it imports) changed since the
    fingerprint stored next to `owner`'s cache, delete `owner`'s cached kernels and store
    the new fingerprint. Returns whether it deleted. Never raises for a read-only cache:
    numba then cannot write there either."""
    owner = Path(owner)
    directory = cache_dir_for(owner)
    if directory is None:
        return False
    stamp = directory / (owner.stem + STAMP_SUFFIX)
    fingerprint = source_fingerprint(paths)
    try:
        if stamp.read_text().strip() == fingerprint:
            return False
    except OSError:
        pass  # no stamp yet: a fresh cache, or one written before this rule
    if directory.is_dir():
        for cached in [*directory.glob(f"{owner.stem}.*.nbi"), *directory.glob(f"{owner.stem}.*.nbc")]:
            try:
                cached.unlink()
            except OSError:
                pass  # another process removed it first
    try:
        atomic_write_text(stamp, fingerprint + "\n")
    except OSError:
        pass
    return True


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


def compile_in_parallel(jobs, what: str, *, processes: int | None = None, timeout: float = 900.0,
                        announce: bool = True, meanwhile=None) -> None:
    """Run compile `jobs` side by side, each in a fresh process (spawned; at most
    `processes` at a time, default one per core), and return when all are done.

    A job is a picklable callable of no arguments that compiles, and so caches, a group of
    kernels that do not call each other (one part of a search, an agent's warm-up); the
    caller then compiles what calls them, loading them from the cache instead of compiling
    them one after another on one core. Call it only when something is not cached (see
    `is_cached`): a worker costs a second or two to start. A job that fails or is still
    running after `timeout` seconds costs time, never correctness: whoever needs its
    kernels next compiles them. Prints one notice line naming `what` (not with `announce`
    false: a caller that runs it in the background says so itself, on its own line).
    `meanwhile`: a callable of no arguments run here while the workers start (they take
    seconds to import), e.g. compiling kernels that several jobs call, which they then load
    from the cache instead of each compiling them; like a job, it never raises."""
    jobs = list(jobs)
    workers = min(len(jobs), processes or os.cpu_count() or 1)
    if workers <= 1 or multiprocessing.current_process().daemon:  # a daemon may not start processes
        for job in jobs:
            _run(job)
        return
    if announce:
        say(f"{NOTICE} for {what} in {workers} processes (not in numba's cache yet; cached for later runs) ...")
    os.environ[QUIET] = "1"  # the workers inherit it as they start: they print no notice (this one did)
    try:
        pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_start_worker)
    finally:
        del os.environ[QUIET]
    try:
        done = pool.map_async(_run, jobs, chunksize=1)
        if meanwhile is not None:
            _run(meanwhile)
        done.wait(timeout)
    finally:
        pool.terminate()
        pool.join()
