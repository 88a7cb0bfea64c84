"""numba's on-disk cache of this project's kernels: a notice when a process compiles, and
one invalidation rule across files.

numba compiles a kernel on its first call and, with ``cache=True``, saves the machine code
(in ``__pycache__`` next to the source, or under ``NUMBA_CACHE_DIR``), so later processes
load it in milliseconds. Two things numba does not do, done here on import of
`engine.kernels` (before any kernel is defined):

* **Say that it compiles.** On a cold cache the first game step, env step or training
  iteration waits while numba compiles, silently. `announce_compiles` prints one line to
  stderr when this process first compiles one of the project's kernels (numba's
  ``numba:compile`` event fires only on a cache miss; a warm cache prints nothing).
* **Invalidate across files.** numba keys a cached kernel on the contents of its own
  source file only, but kernels call and inline kernels of other files (the env and the
  agents call `engine.kernels.place`, ...): after an edit of ``engine/kernels.py`` the
  cached agent kernels would keep running the old engine. `check_sources` fingerprints
  every file of `KERNEL_FILES` and, when the fingerprint differs from the one stored next
  to the cache, deletes the cached kernels of all of them, so everything recompiles.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

# Every module that compiles numba kernels with cache=True (tests/test_kernel_cache.py
# checks that none is missing), relative to the directory holding the packages.
KERNEL_FILES = (
    "engine/kernels.py", "engine/access.py", "engine/batch.py", "engine/determinize.py",
    "env/observation.py", "env/step_kernels.py",
    "agents/policy_kernels.py", "agents/search_kernels.py", "agents/value_kernels.py", "agents/net_kernels.py",
    "agents/features.py", "agents/br_kernels.py", "agents/afterstate.py",
    "training/opponents.py",
)
PROJECT_PACKAGES = ("engine", "env", "agents", "training", "evaluation")
STAMP_NAME = "kernel_sources.sha256"
ROOT = Path(__file__).resolve().parents[1]

# Rough CPU time of a cold compile on a small machine (benchmarks/cold_start.py measures it).
NOTICE = ("compiling numba kernels (first run only; cached for later runs): about 10 s for the "
          "engine, up to a minute or two when the envs, agents and training all start")


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
        stamp_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=stamp_dir, prefix=STAMP_NAME)
        with os.fdopen(fd, "w") as f:
            f.write(fingerprint + "\n")
        os.replace(tmp, stamp)
    except OSError:
        pass
    return True


def check_sources() -> bool:
    """`drop_stale` over this project's `KERNEL_FILES`."""
    return drop_stale([ROOT / name for name in KERNEL_FILES])


_listener = None


def announce_compiles() -> None:
    """Print `NOTICE` to stderr once, when this process first compiles (rather than
    loads from the cache) a kernel of this project. Calling it again does nothing."""
    global _listener
    if _listener is not None:
        return
    from numba.core import event

    class CompileNotice(event.Listener):
        shown = False

        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            if not self.shown and getattr(func, "__module__", "").split(".")[0] in PROJECT_PACKAGES:
                self.shown = True
                print(NOTICE, file=sys.stderr, flush=True)

        def on_end(self, ev):
            pass

    _listener = CompileNotice()
    event.register("numba:compile", _listener)
