"""Progress bars that suit where they are written.

On a terminal, a tqdm bar redraws itself in place with carriage returns. Redirected to a
file or a pipe (a CI log, ``train.py ... > log 2>&1``), those redraws pile up into one
endless line, hundreds of KB of it. `progress` returns a tqdm bar that, when its stream is
not a terminal, writes plain lines instead: one line per redraw, no carriage returns or
cursor moves, at most one line every `PLAIN_INTERVAL` seconds (and the final state when it
closes). Everything else is tqdm's: same arguments, same methods.
"""

from __future__ import annotations

import re
import sys
import time

from tqdm import tqdm

PLAIN_INTERVAL = 30.0  # seconds between two plain lines of one bar (a log file, not a terminal)
_CONTROL = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # cursor moves (nested bars)


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class PlainLines:
    """A stream that turns tqdm's redraws into whole lines: carriage returns end a line,
    cursor moves and blank lines (a bar clearing itself) are dropped."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        for line in _CONTROL.sub("", text).replace("\r", "\n").split("\n"):
            line = line.rstrip()
            if line.strip():
                self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


class Progress(tqdm):
    """tqdm, in plain lines when its stream is not a terminal (see the module doc)."""

    def __init__(self, *args, file=None, **kwargs):
        stream = sys.stderr if file is None else file
        self._plain = not is_terminal(stream)
        self._shown_at, self._shown_n = None, None
        if self._plain:
            stream = PlainLines(stream)
            kwargs["mininterval"] = max(kwargs.get("mininterval", 0.1), PLAIN_INTERVAL)
            kwargs["dynamic_ncols"] = False
            kwargs.setdefault("ascii", True)
        super().__init__(*args, file=stream, **kwargs)

    def display(self, msg=None, pos=None):
        # a redraw in plain mode, asked for by set_postfix or a write above the bar: at most
        # one line per interval; the last one (close() disables the bar first) always shows
        if self._plain and msg is None:
            now = time.monotonic()
            if self.disable:  # closing: the last line, unless the one shown already says it
                if self._shown_n == self.n:
                    return True
            elif self._shown_at is not None and now - self._shown_at < self.mininterval:
                return True
            self._shown_at, self._shown_n = now, self.n
        return super().display(msg, pos)


def progress_bar(*args, **kwargs) -> Progress:
    """A `Progress` bar: tqdm's arguments (``file`` default stderr)."""
    return Progress(*args, **kwargs)
