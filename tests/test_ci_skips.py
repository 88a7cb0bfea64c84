"""No silent skips in CI (tests/conftest.py): with CI=true a skipped test fails the run.

A deliberately broken optional install, a `ray` package and a `pyspiel` module that raise
ImportError (put first on the path), makes their tests skip, at run time (test_ray.py's
fixtures) and at collection (test_openspiel.py's module-level importorskip). With CI set
the run fails and names every skip, though no test failed; the test that does not need Ray
still runs and passes. (Outside CI the same run exits 0: `skips_fail_the_run`.)

From pytest 9.1 `importorskip` skips only a module that is missing (ModuleNotFoundError) by
default; a module that is there but raises ImportError ends collection with an error. Every
`importorskip` of the tests therefore passes ``exc_type=ImportError`` (pytest >= 8.2,
pyproject.toml), so a broken install is a named skip, which CI turns into a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROKEN = 'raise ImportError("deliberately broken by tests/test_ci_skips.py")\n'
# a check that needs no Ray, one that imports it, one that starts a cluster
SELECTED = "cli_spells or executor_arguments or never_returns"


def run_pytest(tmp_path: Path, ci: str) -> subprocess.CompletedProcess:
    broken = tmp_path / "broken"
    (broken / "ray").mkdir(parents=True)
    (broken / "ray" / "__init__.py").write_text(BROKEN)
    (broken / "pyspiel.py").write_text(BROKEN)
    env = {key: value for key, value in os.environ.items() if key != "CI" and not key.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(broken), str(ROOT)])
    env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "tests/test_ray.py", "tests/test_openspiel.py", "-k", SELECTED],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_broken_optional_install_fails_a_ci_run_instead_of_skipping(tmp_path):
    run = run_pytest(tmp_path, ci="true")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert "1 passed, 3 skipped" in out, out[-3000:]  # nothing failed; the check without Ray ran
    summary = out[out.index("skipped tests fail a CI run"):out.index("short test summary info")]
    assert "test_ray.py::test_executor_arguments_are_checked" in summary
    assert "test_ray.py::test_a_move_that_never_returns_forfeits_on_ray_as_in_a_process" in summary
    assert "test_openspiel.py" in summary and summary.count("deliberately broken") == 3


def test_ci_is_read_from_the_environment(monkeypatch):
    from conftest import skips_fail_the_run

    for value, strict in (("true", True), ("1", True), ("TRUE", True), ("", False), ("false", False), ("0", False)):
        monkeypatch.setenv("CI", value)
        assert skips_fail_the_run() is strict, value
    monkeypatch.delenv("CI")
    assert not skips_fail_the_run()


def test_every_importorskip_treats_a_broken_install_as_a_skip():
    calls = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for call in re.findall(r"importorskip\(([^)]*)\)", path.read_text()):
            if call.strip().startswith('"'):  # a call, not a mention in prose
                calls.append((path.name, call))
    assert calls
    assert [c for c in calls if "exc_type=ImportError" not in c[1]] == []
