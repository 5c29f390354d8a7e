"""One ``javac`` at a time per build folder.

Test files run in parallel (pytest-xdist workers), and two of them may need the same classes
compiled into the same folder under ``compat-tests/.build``: the second waits for the first's
lock, then finds the classes fresh and compiles nothing.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (created if missing) for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
