"""Files replaced whole: the one way this toolkit rewrites a file.

`atomic_write` writes to a temporary file beside the target, flushes and syncs it to
disk, then renames it over the target (`os.replace`, atomic on POSIX and Windows): a
reader, or a process killed half-way, sees the old file or the new one, never a torn
one. On any error the temporary file is removed and the old file is left as it was.
It lives in the bottom layer so that every layer above writes its checkpoints, configs,
results, journals, plots and saved games the same way.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import BinaryIO, Callable


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Replace `path` by what `write(binary_file)` writes, all or nothing (its folder is
    made if missing). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")  # one per writer
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """`atomic_write` of a text (UTF-8)."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))
