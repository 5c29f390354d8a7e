"""Fixtures shared by the log and broker tests: a real, small, fillable filesystem.

Full-disk behaviour is tested on a real filesystem that really runs out of
space (a size-limited tmpfs), not on a mocked ``os.write``: the kernel then
decides where a write stops short, as it would on a user's disk.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The one way test modules reach shared helpers: the repository root on sys.path, once, here
# (the first conftest pytest loads), and plain imports. Under ``--import-mode=importlib`` no
# test folder is on sys.path, so helpers are named from the root: ``from tests.broker import
# group_helpers``, ``from tests.reference_kafka import reference_script``, and bench's harness
# for what tests share with it: ``from bench.harness.serve_process import ServeProcess`` (the
# child ``kafkette serve``), ``from bench.harness.raw_wire import call`` (one raw request).
REPO_ROOT = str(Path(__file__).resolve().parents[1])
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

FILLER_NAME = "filler"
_CHUNKS = (1 << 16, 1 << 12, 1 << 9, 1)


class SmallFilesystem:
    """A mounted tmpfs of ``size_kib``; ``fill()`` takes every free byte, ``free()`` gives
    them back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / FILLER_NAME

    def fill(self) -> int:
        """Write the filler file until the filesystem refuses (ENOSPC); returns its size."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in _CHUNKS:
                block = b"\0" * chunk
                while True:
                    try:
                        if os.write(fd, block) < chunk:
                            break
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        return self.filler.stat().st_size

    def free(self) -> None:
        self.filler.unlink()

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Callable[[int], SmallFilesystem]]:
    """Factory: ``small_filesystem(size_kib) -> SmallFilesystem`` mounted under tmp_path.

    Skips (with the reason) where mounting is not permitted, e.g. not root.
    """
    mounted: list[Path] = []

    def mount(size_kib: int) -> SmallFilesystem:
        mount_point = tmp_path / f"small-fs-{len(mounted)}"
        mount_point.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(mount_point)]
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            pytest.skip("cannot mount a small tmpfs here: no mount command")
        if result.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {result.stderr.strip()}")
        mounted.append(mount_point)
        return SmallFilesystem(mount_point)

    yield mount
    for mount_point in reversed(mounted):
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
