"""The type checker over the engine and the environments (pyproject.toml, [tool.mypy]):
what a user's own checker sees through the package's py.typed."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_the_engine_and_the_environments():
    api = pytest.importorskip("mypy.api", exc_type=ImportError)
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
                                      str(ROOT / "engine"), str(ROOT / "env")])
    assert status == 0, stdout + stderr


def test_every_top_level_package_says_it_is_typed():
    for package in ("engine", "env", "agents", "evaluation", "training", "humanplay"):
        assert (ROOT / package / "py.typed").is_file(), package
