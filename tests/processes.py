"""Helpers for tests that kill processes and check what is left running (Linux /proc)."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


def running(pid: int) -> bool:
    """Whether the process runs (a zombie has exited, waiting for its new parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def children(pid: int) -> list[int]:
    """The process ids of `pid`'s children."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def exit_or_kill(pids: list[int], seconds: float) -> bool:
    """Wait up to `seconds` for every process in `pids` to exit. True if they all did;
    otherwise kill the ones still running (so a failed test leaves nothing behind) and
    return False."""
    deadline = time.monotonic() + seconds
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            for pid in pids:
                if running(pid):
                    os.kill(pid, signal.SIGKILL)
            return False
        time.sleep(0.1)
    return True


@dataclass(frozen=True)
class ExitingJob:
    """An executor's job (`evaluation.executor.Job`) whose worker process exits (code 3)
    while the file `marker` exists, removing it first when `once`; else it runs `job`."""

    marker: str
    job: object = None
    once: bool = True

    def run(self, limits, on_move):
        if os.path.exists(self.marker):
            if self.once:
                os.unlink(self.marker)
            os._exit(3)
        return self.job.run(limits, on_move)


class TorchThreads:
    """An executor's job: the number of torch threads where it runs."""

    def run(self, limits, on_move):
        import torch

        return torch.get_num_threads()
