"""numba's cache of the project's kernels: every cached kernel module is covered by the
cross-file invalidation rule, an edit drops the caches of all of them, and a cold cache
(only) prints the compile notice."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine import kernel_cache

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_with_cached_kernels_is_listed():
    cached = set()
    for package in kernel_cache.PROJECT_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if re.search(r"njit\([^)]*cache=True|^@(kernels\.)?kernel\b", path.read_text(), re.M):
                cached.add(path.relative_to(ROOT).as_posix())
    assert cached == set(kernel_cache.KERNEL_FILES)


def _fake_cache(directory: Path, stem: str) -> list[Path]:
    files = [directory / f"{stem}.f-12.py311.nbi", directory / f"{stem}.f-12.py311.1.nbc"]
    for f in files:
        f.write_bytes(b"compiled")
    return files


def test_an_edit_of_one_kernel_file_drops_the_cache_of_all(tmp_path):
    sources = [tmp_path / "src" / "kernels.py", tmp_path / "src" / "search_kernels.py"]
    sources[0].parent.mkdir()
    for s in sources:
        s.write_text("x = 1\n")
    caches = {s: tmp_path / f"cache_{s.stem}" for s in sources}
    for c in caches.values():
        c.mkdir()
    unrelated = [caches[sources[0]] / "kernels.cpython-311.pyc", caches[sources[0]] / "other.g-3.py311.nbi"]
    for f in unrelated:
        f.write_bytes(b"keep")

    def drop():
        return kernel_cache.drop_stale(sources, cache_dir_for=caches.get)

    assert drop()  # no fingerprint yet: whatever is cached predates the rule
    files = _fake_cache(caches[sources[0]], "kernels") + _fake_cache(caches[sources[1]], "search_kernels")
    assert not drop()  # nothing changed: the cache stays
    assert all(f.exists() for f in files)
    sources[0].write_text("x = 2\n")  # the engine changed: its callers' machine code is stale too
    assert drop()
    assert not any(f.exists() for f in files)
    assert all(f.exists() for f in unrelated)
    assert not drop()


def _first_deal(cache_dir: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", "import engine; print(engine.random_deal(5)[:3])"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_compile_notice_on_a_cold_cache_only(tmp_path):
    assert kernel_cache.NOTICE in _first_deal(tmp_path)
    assert kernel_cache.NOTICE not in _first_deal(tmp_path)


def test_every_kernel_module_has_a_notice_naming_its_group():
    for name in kernel_cache.KERNEL_FILES:
        module = name.removesuffix(".py").replace("/", ".")
        line = kernel_cache.notice(module)
        assert line is not None and line.startswith(kernel_cache.NOTICE) and " s of CPU" in line, module
    assert "search agents" in kernel_cache.notice("agents.search.core")
    assert kernel_cache.notice("numba.cpython.builtins") is None  # numba's own helpers: no line


GAME = """
from humanplay.session import Session
session = Session.new(["greedy"], seed=1, hint_spec="greedy")
session.play(session.legal_actions()[0])
"""


def _run(code: str, cache_dir: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


@pytest.mark.slow
def test_a_warm_cache_prints_no_notice_for_a_follow_up(tmp_path):
    """A game compiles the engine (the notice says so); the next process, on that warm
    cache, asks for a hint, whose move score samples a world (`determinize.sample_world`,
    which the game itself never calls): it compiles nothing and prints no notice.
    (A resume's state check, `setup_position`: tests/test_training.py's Ctrl-C test.)"""
    assert kernel_cache.NOTICE in _run(GAME, tmp_path)
    follow_up = _run(GAME + "print(session.hint()['move'])\n", tmp_path)
    assert kernel_cache.NOTICE not in follow_up, follow_up


# A child's prologue: `compiled` lists the kernels this process compiles (not loads).
_COMPILE_LOG = """
import json
from numba.core import event
compiled = []
class Log(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Log())
"""

_SIDE_BY_SIDE = _COMPILE_LOG + """
import functools
import engine
from engine import kernel_cache, kernels
before = [kernel_cache.is_cached(kernels.shuffle_deal), kernel_cache.is_cached(kernels.reset)]
kernel_cache.compile_in_parallel([functools.partial(engine.random_deal, 0),
                                  functools.partial(engine.GameState.new, 2, 0)], "a test", processes=2)
after = [kernel_cache.is_cached(kernels.shuffle_deal), kernel_cache.is_cached(kernels.reset)]
engine.random_deal(1)
engine.GameState.new(2, 1)
print(json.dumps({"before": before, "after": after, "compiled_here": compiled}))
"""


def test_compile_in_parallel_compiles_in_other_processes_and_this_one_loads(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _SIDE_BY_SIDE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["before"] == [False, False]
    assert result["after"] == [True, True]
    assert "shuffle_deal" not in result["compiled_here"] and "reset" not in result["compiled_here"]
    notices = [line for line in proc.stderr.splitlines() if kernel_cache.NOTICE in line]
    assert sum("a test in 2 processes" in line for line in notices) == 1, proc.stderr
    assert sum("for the engine" in line for line in notices) <= 1, proc.stderr  # this process's; the workers say nothing


_SEARCH_PARTS = _COMPILE_LOG + """
import agents
from agents.policy_kernels import rollout
from agents.search import core
from engine import determinize, kernel_cache
agent = agents.make("ismcts:iterations=20", seed=0)
parts = list(agent.compile_parts())
kernel_cache.compile_in_parallel(agents.compile_jobs(["ismcts:iterations=20"]), "a test", processes=2)
kernels = {"rollout": rollout, "deal_copied": determinize.deal_copied, "expand_greedy": core.expand_greedy,
           "search_greedy_rollout": core.search_greedy_rollout}
cached = {name: kernel_cache.is_cached(k) for name, k in kernels.items()}
agent.warm_up()
print(json.dumps({"parts": parts, "cached": cached, "compiled_here": compiled,
                  "parts_when_warm": list(agents.make("ismcts:iterations=20").compile_parts())}))
"""


@pytest.mark.slow  # compiles a search from an empty cache: 30-60 s of CPU
def test_a_search_compiles_its_parts_side_by_side_then_loads_them(tmp_path):
    """On a cold cache an ismcts agent's parts (world, expansion, its moves: the leaf's
    rollout and the root's ranking) compile in other processes; its search kernel then compiles here and loads them
    instead of compiling them again; on a warm cache there is nothing to do."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _SEARCH_PARTS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["parts"] == ["world", "expand", "moves"]
    assert result["cached"] == {"rollout": True, "deal_copied": True, "expand_greedy": True,
                                "search_greedy_rollout": False}
    assert "search_greedy_rollout" in result["compiled_here"]
    assert not {"rollout", "deal_copied", "expand_greedy", "greedy_ranking"} & set(result["compiled_here"])
    assert result["parts_when_warm"] == []
