"""Small files that must never be half-written: atomic replace, and the offsets checkpoint.

``atomic_write`` is write-temp, fsync, rename, fsync-directory: after a crash
the file holds either the old or the new content, never a mix.

Each partition directory keeps ``offsets.checkpoint`` (Kafka keeps the same two
numbers per data dir in ``log-start-offset-checkpoint`` and
``recovery-point-offset-checkpoint``)::

    0                       <- format version
    log-start-offset 1200
    recovery-point 5400

A missing or unreadable checkpoint reads as (0, 0): recovery then scans every
segment, which is slow but never loses data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CHECKPOINT_FILE_NAME = "offsets.checkpoint"
TEMP_SUFFIX = ".tmp"
_VERSION = "0"
_DEFAULT_MODE = 0o644


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int = _DEFAULT_MODE) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves old or new, whole.

    ``mode`` is the new file's permissions from its creation (before the umask): a
    secret (SCRAM credentials: 0o600) is never readable by others, not even briefly.

    If writing, syncing or renaming fails (a full disk: ENOSPC, EDQUOT; EIO)
    the temporary file is removed before the error is re-raised: ``path``
    keeps its old content and nothing is left behind to fill the disk further
    or to puzzle whoever lists the directory.
    """
    temp = path.with_name(path.name + TEMP_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            if mode != _DEFAULT_MODE:
                os.fchmod(fd, mode)  # a leftover temp file keeps its old mode: narrow it
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        _remove_quietly(temp)
        raise
    fsync_directory(path.parent)


def _remove_quietly(path: Path) -> None:
    """Best-effort unlink on an error path: the original error is what matters."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


@dataclass(frozen=True, slots=True)
class OffsetsCheckpoint:
    """The two offsets a partition log needs to reopen without a full scan."""

    log_start_offset: int = 0
    recovery_point: int = 0

    @classmethod
    def read(cls, directory: Path) -> OffsetsCheckpoint:
        try:
            lines = (directory / CHECKPOINT_FILE_NAME).read_text("ascii").split("\n")
        except (FileNotFoundError, UnicodeDecodeError):
            return cls()
        if not lines or lines[0].strip() != _VERSION:
            return cls()
        values: dict[str, int] = {}
        for line in lines[1:]:
            name, _, value = line.partition(" ")
            try:
                values[name] = int(value)
            except ValueError:
                continue
        try:
            return cls(values["log-start-offset"], values["recovery-point"])
        except KeyError:
            return cls()

    def write(self, directory: Path) -> None:
        text = (
            f"{_VERSION}\nlog-start-offset {self.log_start_offset}\n"
            f"recovery-point {self.recovery_point}\n"
        )
        atomic_write(directory / CHECKPOINT_FILE_NAME, text.encode("ascii"))
