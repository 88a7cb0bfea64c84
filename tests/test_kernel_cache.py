"""numba's cache of the project's kernels: every cached kernel module registers itself (the
engine names none above it), an edit drops the caches of the modules that import the edited
file, and a cold cache (only) prints the compile notice."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine import kernel_cache

ROOT = Path(__file__).resolve().parents[1]


PRODUCT = ("engine", "env", "agents", "evaluation", "training", "humanplay")
CACHED = re.compile(r"njit\([^)]*cache=True|^@(kernels\.)?kernel\b", re.M)
REGISTER = re.compile(r"^kernel_cache\.register\(__name__, ", re.M)


def kernel_modules() -> dict[str, Path]:
    """Every module of the product that compiles numba kernels with cache=True."""
    found = {}
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if CACHED.search(path.read_text()):
                found[".".join(path.relative_to(ROOT).with_suffix("").parts)] = path
    return found


def test_every_module_with_cached_kernels_registers_after_its_imports_before_its_kernels():
    """The engine knows no module above it: each kernel module registers itself, after its
    imports (so that what it imports has registered) and before its first kernel (so that a
    stale cache is gone before numba could load it)."""
    modules = kernel_modules()
    assert {"engine.kernels", "agents.search.core", "training.opponents"} <= set(modules)
    for name, path in modules.items():
        source = path.read_text()
        register = REGISTER.search(source)
        assert register, f"{name} compiles cached kernels but does not call kernel_cache.register(__name__, ...)"
        line = source[:register.start()].count("\n") + 1
        tree = ast.parse(source)
        imports = [n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        kernels = [n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.decorator_list]
        assert max(imports) < line < min(kernels), name
        importlib.import_module(name)
    assert set(modules) <= set(kernel_cache.REGISTERED)


def test_the_sources_of_a_module_are_what_it_imports_from_the_project():
    core = {p.relative_to(ROOT).as_posix() for p in kernel_cache.sources("agents.search.core")}
    assert {"agents/search/core.py", "engine/kernels.py", "engine/layout.py", "engine/rules.py",
            "agents/policy_kernels.py", "agents/networks/evaluator.py", "agents/search/tree.py"} <= core
    assert not {"training/opponents.py", "env/step_kernels.py", "engine/kernel_cache.py", "agents/base.py"} & core
    for name in kernel_modules():
        paths = {p.relative_to(ROOT).as_posix() for p in kernel_cache.sources(name)}
        assert "engine/rules.py" in paths and name.replace(".", "/") + ".py" in paths, name
        if name.startswith("engine."):
            assert all(p.startswith("engine/") for p in paths), name  # the engine depends on nothing above it


def _fake_cache(directory: Path, stem: str) -> list[Path]:
    files = [directory / f"{stem}.f-12.py311.nbi", directory / f"{stem}.f-12.py311.1.nbc"]
    for f in files:
        f.write_bytes(b"compiled")
    return files


def test_an_edit_drops_the_caches_of_the_modules_that_import_it_and_no_other(tmp_path):
    """low <- mid <- top (through a package's submodule import), other beside them: an edit
    of low drops low's, mid's and top's cached kernels, not other's; an edit of other drops
    only its own."""
    code = {"a/low.py": "X = 1\n", "a/mid.py": "from a.low import X\n", "b/top.py": "from a import mid  # m\n",
            "b/other.py": "import numpy\nimport a\n"}
    for name, text in code.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "a" / "__init__.py").write_text("")
    caches = {}
    for name in code:
        caches[tmp_path / name] = tmp_path / "cache" / name.replace("/", "_")
        caches[tmp_path / name].mkdir(parents=True)
    modules = {name.removesuffix(".py").replace("/", "."): tmp_path / name for name in code}

    def register_all():
        """What registering each module does: the names of those whose caches were dropped."""
        kernel_cache.top_level_imports.cache_clear()
        return {m for m, path in modules.items()
                if kernel_cache.drop_stale(path, kernel_cache.sources(m, tmp_path, {"a", "b"}), caches.get)}

    assert register_all() == set(modules)  # no fingerprint yet: whatever is cached predates the rule
    files = {m: _fake_cache(caches[path], path.stem) for m, path in modules.items()}
    unrelated = caches[modules["a.low"]] / "low.cpython-311.pyc"
    unrelated.write_bytes(b"keep")
    assert register_all() == set()  # nothing changed: every cache stays
    (tmp_path / "a" / "low.py").write_text("X = 2\n")  # a constant the others compiled in
    assert register_all() == {"a.low", "a.mid", "b.top"}
    assert [m for m, fs in files.items() if any(f.exists() for f in fs)] == ["b.other"] and unrelated.exists()
    (tmp_path / "b" / "other.py").write_text("import numpy\nimport a\nY = 3\n")
    assert register_all() == {"b.other"}
    assert register_all() == set()


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
    for module in kernel_modules():
        importlib.import_module(module)
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
    """On a cold cache an ismcts agent's parts (its moves: the leaf's rollout and the
    root's ranking, then its world and expansion) compile in other processes; its search kernel then compiles here and loads them
    instead of compiling them again; on a warm cache there is nothing to do."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _SEARCH_PARTS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["parts"] == ["moves", "world", "expand"]  # the longest first
    assert result["cached"] == {"rollout": True, "deal_copied": True, "expand_greedy": True,
                                "search_greedy_rollout": False}
    assert "search_greedy_rollout" in result["compiled_here"]
    assert not {"rollout", "deal_copied", "expand_greedy", "greedy_ranking"} & set(result["compiled_here"])
    assert result["parts_when_warm"] == []
