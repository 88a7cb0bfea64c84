"""benchmarks/cold_start.py measures a row in fresh processes over an empty numba cache,
then a warm one: its JSON carries wall and CPU times, and the compile notice shows on
the cold run only. (No figure is checked: speed is the benchmark's business.)"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cold_start.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.slow  # compiles the engine from an empty cache: 10-40 s depending on the load
def test_engine_row_cold_then_warm():
    proc = run("--rows", "engine", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout.strip().splitlines()[-1])["rows"]["engine"]
    for run_kind in ("cold", "warm"):
        assert {"wall_s", "cpu_s", "setup_s", "first_s", "first_cpu_s"} <= set(row[run_kind])
        assert row[run_kind]["wall_s"] > 0 and row[run_kind]["cpu_s"] > 0
    assert row["cold"]["compile_notice"] and not row["warm"]["compile_notice"]


def test_bad_arguments_are_clear_errors(tmp_path):
    for args, message in [(("--root", str(tmp_path)), "not a checkout"), (("--timeout", "0"), "--timeout"),
                          (("--rows", "nope"), "invalid choice")]:
        proc = run(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


@pytest.mark.slow  # compiles the engine and the greedy agent from an empty cache: 20-60 s
def test_workers_load_what_the_parent_compiled(tmp_path):
    """A tournament with 2 worker processes on an empty numba cache: the parent compiles
    every kernel once (`evaluation.executor.precompile`) and no worker compiles any of
    them again; each compile notice line is printed once."""
    from benchmarks.cold_start import child_env, compile_summary, read_compile_log

    log = tmp_path / "compiles.jsonl"
    proc = subprocess.Popen([sys.executable, "evaluate.py", "--agents", "greedy", "random", "--games", "8",
                             "--workers", "2", "--no-plots", "--no-progress", "--out", str(tmp_path / "out")],
                            cwd=ROOT, env=child_env(ROOT, str(tmp_path / "numba"), str(log)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    compiles = read_compile_log(str(log))
    summary = compile_summary(compiles, proc.pid)
    assert summary["parent_compiles"] > 0, "the cold path did not run: nothing compiled in the parent"
    workers = sorted({(c["kernel"], c["args"]) for c in compiles if c["pid"] != proc.pid})
    assert summary["repeated"] == 0 and not workers, f"compiled in a worker: {workers}"
    notices = [line for line in err.splitlines() if "compiling numba kernels" in line]
    assert notices and len(notices) == len(set(notices)), notices


def test_the_web_move_row_plays_the_move_the_page_would():
    """cold_start's web_move row sends the person's first legal move as play.js does."""
    from benchmarks.cold_start import _first_legal_action
    from engine import rules

    assert _first_legal_action({"can_pass": True, "legal": {}}) == rules.PASS_ACTION
    action = _first_legal_action({"can_pass": False, "legal": {"17": [3, 5], "20": [1]}})
    assert rules.decode_action(action) == (17, 3)


def _compiled_apart(decorator: ast.expr) -> bool:
    """A decorator that makes a numba kernel compiled on its own once per argument types
    it is called with: `kernel`, or `njit`/`jit` without inline="always" (an inlined one
    is typed at each call site instead) and without an explicit signature (which casts).
    The engine's `helper`s are compiled apart too, but are small, and LLVM inlines them:
    a literal step makes a specialised copy of a tenth of a second, on purpose."""
    text = ast.unparse(decorator)
    explicit = isinstance(decorator, ast.Call) and decorator.args and isinstance(decorator.args[0], ast.Constant)
    return text.split(".")[-1] == "kernel" or ("jit" in text and not explicit
                                                and 'inline="always"' not in text.replace("'", '"'))


def test_no_kernel_is_called_with_a_literal_argument():
    """numba compiles a kernel once more for each literal argument it is called with from
    jitted code (`True`, `0`: `Literal[bool](True)`, `Literal[int](0)`), seconds of compile
    each (the best response compiled the rollout policy three times and the deal twice):
    jitted code passes typed values (`np.bool_(True)`, `np.int64(0)`)."""
    trees = {path: ast.parse(path.read_text()) for folder in ("engine", "agents", "env")
             for path in sorted((ROOT / folder).rglob("*.py"))}
    kernels = {node.name for tree in trees.values() for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and any(_compiled_apart(d) for d in node.decorator_list)}
    assert {"policy_placement", "rollout", "deal_copied", "greedy_choice"} <= kernels
    found = []
    for path, tree in trees.items():
        jitted = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                  and any("jit" in ast.unparse(d) or ast.unparse(d).endswith(("kernel", "helper"))
                          for d in node.decorator_list)]
        for function in jitted:
            for call in ast.walk(function):
                callee = getattr(call, "func", None)
                name = getattr(callee, "id", None) or getattr(callee, "attr", None)
                if isinstance(call, ast.Call) and name in kernels:
                    literals = [ast.unparse(a) for a in call.args if isinstance(a, ast.Constant)
                                or isinstance(a, ast.UnaryOp) and isinstance(a.operand, ast.Constant)]
                    if literals:
                        found.append(f"{path.relative_to(ROOT)}:{call.lineno} {function.name} -> {name}({literals})")
    assert not found, found


def test_the_kernels_helpers_are_inlined_by_llvm_not_by_numba():
    """The helpers of the engine, the world deal and the policies are `engine.kernels.helper`s
    (numba's `forceinline`: compiled once, inlined by LLVM), not `inline="always"` (numba
    copies and types the helper again at every call site): a third of the cold compile
    (benchmarks/RESULTS.md, cold-start 2026-12-07 18:15)."""
    from engine.kernels import place

    assert place.targetoptions["forceinline"] is True and place.targetoptions["_nrt"] is False  # a helper
    files = ["engine/kernels.py", "engine/access.py", "engine/determinize.py", "agents/policy_kernels.py",
             "agents/networks/evaluator.py"]
    decorators = [(f"{name}:{node.lineno} {node.name}", ast.unparse(d)) for name in files
                  for node in ast.walk(ast.parse((ROOT / name).read_text())) if isinstance(node, ast.FunctionDef)
                  for d in node.decorator_list]
    numba_inlined = [where for where, d in decorators if "inline=" in d.replace("forceinline", "")]
    assert not numba_inlined, numba_inlined
    helpers = sum(d == "helper" for _, d in decorators)
    assert helpers >= 90, helpers
