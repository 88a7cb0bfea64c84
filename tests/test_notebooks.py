"""The notebooks in notebooks/ run from top to bottom (fast mode).

Each notebook reads ``NOTEBOOK_FAST=1`` in its first code cell and shrinks its game
counts, so the same code runs in seconds. The notebook is executed by nbclient in a
Jupyter kernel started in notebooks/ (as when opened there); a failing cell fails the
test with the cell's error. Nothing is written back: the committed copies keep the
outputs of their full run: re-run and save one with ``python tests/test_notebooks.py --full
NAME`` (e.g. ``02``) after changing what it measures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", exc_type=ImportError)
nbclient = pytest.importorskip("nbclient", exc_type=ImportError)
pytest.importorskip("ipykernel", exc_type=ImportError)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CELL_TIMEOUT = 1800  # seconds per cell: fast mode needs a few, but a cold numba cache compiles for many minutes


def execute(path: Path, fast: bool = True, timeout: int = CELL_TIMEOUT, nb=None):
    """Run a notebook (or `nb`, read from it) in a kernel started in its folder; return the
    executed copy (the file on disk is not changed). On a failing cell nbclient raises
    CellExecutionError; `nb` then holds the outputs up to that cell."""
    nb = nbformat.read(path, as_version=4) if nb is None else nb
    env = dict(os.environ, NOTEBOOK_FAST="1" if fast else "0",
               MPLBACKEND="module://matplotlib_inline.backend_inline")  # inline figures, whatever CI sets
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=env)  # the kernel's environment (start_kernel's env); cwd = the notebook's folder
    return nb


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


def test_notebooks_exist():
    names = [p.name for p in notebook_paths()]
    assert names[:3] == ["01_engine_benchmark.ipynb", "02_agent_strength.ipynb", "03_tour.ipynb"], names


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_runs_in_fast_mode(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    try:
        execute(path, fast=True, nb=nb)
    finally:
        nbformat.write(nb, tmp_path / path.name)  # the executed copy, for a look after a failure
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # the first code cell reads the fast flag, and it was on
    texts = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                    if o.get("output_type") == "stream")
    assert "fast mode" in texts


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_committed_notebook_has_full_run_outputs(path):
    """The committed copy was executed in full (not fast) mode, every code cell in order."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), "run every cell before committing"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run the notebook top to bottom"
    streams = "".join(o.get("text", "") for c in code for o in c.get("outputs", []) if o.get("output_type") == "stream")
    assert "full run" in streams and "fast mode" not in streams
    assert not [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    images = [o for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {})
              or "image/svg+xml" in o.get("data", {})]
    assert images, "a notebook committed without its figures"


if __name__ == "__main__":  # python tests/test_notebooks.py [--full] [NAME ...]: execute and save in place
    full = "--full" in sys.argv
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for p in notebook_paths():
        if names and not any(n in p.name for n in names):
            continue
        print(f"executing {p.name} ({'full' if full else 'fast'}) ...", flush=True)
        executed = execute(p, fast=not full, timeout=3600)
        if full:
            nbformat.write(executed, p)
        print(f"  done: {p.name}", flush=True)
