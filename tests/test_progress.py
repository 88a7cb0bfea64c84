"""Progress bars (evaluation/progress.py): in place on a terminal, plain lines when the
output is redirected to a file or a pipe (no carriage returns piling up in a log)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BARS = """
import sys
from tqdm import tqdm
from evaluation.progress import progress_bar
bar = progress_bar(total=2000, desc="games", unit="game")
for i in range(2000):
    bar.update(1)
    bar.set_postfix_str(f"evaluating vs greedy: {i}/2000 games")  # a redraw each time
    if i == 1000:
        tqdm.write("a line above the bar", file=sys.stderr)
bar.close()
for _ in progress_bar(range(300), desc="inner", leave=False):
    pass
print("done")
"""


def test_redirected_progress_is_plain_lines(tmp_path):
    log = tmp_path / "log"
    with log.open("w") as f:
        run = subprocess.run([sys.executable, "-c", BARS], cwd=ROOT, stdout=subprocess.PIPE, stderr=f, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert run.returncode == 0 and run.stdout == "done\n"
    text = log.read_text()
    assert "\r" not in text and "\x1b" not in text, repr(text[:500])
    lines = text.splitlines()
    assert "a line above the bar" in lines
    bars = [line for line in lines if line != "a line above the bar"]
    # the start and the end of each bar (another line only if the loop outlasts PLAIN_INTERVAL)
    assert bars[0].startswith("games:   0%") and any(line.startswith("games: 100%") for line in bars)
    assert all(line.startswith(("games:", "inner:")) for line in bars) and len(bars) < 20, lines


def test_a_terminal_still_gets_a_bar_drawn_in_place():
    leader, follower = pty.openpty()
    try:
        run = subprocess.run([sys.executable, "-c", BARS], cwd=ROOT, stdout=subprocess.PIPE, stderr=follower,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
        os.close(follower)
        follower = None
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert run.returncode == 0
    assert b"\r" in b"".join(chunks)  # tqdm's own redraws
