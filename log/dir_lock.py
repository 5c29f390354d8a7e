"""One process owns a data dir: an OS lock on ``<data dir>/.lock``, as Kafka's FileLock.

Two brokers appending to the same partition files at the same offsets lose
acknowledged records at the next recovery, so the lock is taken before
anything in the dir is read or written and held for the broker's whole life.
``flock`` (not ``lockf``) because its lock belongs to the open file, not to
the process: a second broker *in the same process* (an embedded one in a
test) is refused too, and the kernel drops the lock when the holder dies,
however it dies, so a crash never leaves a stale lock behind.

After locking, the holder writes its pid and host into the file, so that a
refused broker can say who holds the dir. The file itself is never deleted:
removing it while another process opens it would let two processes hold
locks on two different files of the same name.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

LOCK_FILE = ".lock"


class DataDirError(OSError):
    """The data dir cannot be used: the message is one line, fit for an operator."""


class DataDirLocked(DataDirError):
    """Another process holds the data dir's lock."""


class DirLock:
    """An exclusive, non-blocking lock on a data dir; ``release`` (or process exit) frees it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, data_dir: Path) -> DirLock:
        """Create the dir if needed, lock it, record the holder; raises ``DataDirError``."""
        data_dir = Path(data_dir)
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise DataDirError(f"data dir {data_dir} is not a directory") from None
        except OSError as exc:
            raise DataDirError(f"cannot create data dir {data_dir}: {os_reason(exc)}") from None
        if not data_dir.is_dir():
            raise DataDirError(f"data dir {data_dir} is not a directory")
        lock_path = data_dir / LOCK_FILE
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise DataDirError(f"cannot use data dir {data_dir}: {os_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise DataDirLocked(
                    f"data dir {data_dir} is locked by another broker ({holder})"
                ) from None
            raise DataDirError(f"cannot lock data dir {data_dir}: {os_reason(exc)}") from None
        try:
            _write_holder(fd)
        except OSError as exc:
            os.close(fd)
            raise DataDirError(f"cannot write to data dir {data_dir}: {os_reason(exc)}") from None
        return cls(lock_path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock (closing the descriptor drops the flock). Idempotent."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _write_holder(fd: int) -> None:
    text = f"pid={os.getpid()}\nhost={socket.gethostname()}\n".encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)


def _read_holder(fd: int) -> str:
    """``pid 123 on host h`` from the holder's record, or a vaguer phrase if it is not there yet."""
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
    except OSError:
        text = ""
    fields = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line
    )
    pid, host = fields.get("pid", "").strip(), fields.get("host", "").strip()
    if pid and host:
        return f"pid {pid} on {host}"
    if pid:
        return f"pid {pid}"
    return "holder unknown"


def os_reason(exc: OSError) -> str:
    """``read-only file system``, ``address already in use``: the C library's words in lower
    case, without ``[Errno N]``, as every one-line start-up error says them."""
    if isinstance(exc, socket.gaierror) or exc.errno is None:
        text = exc.strerror or str(exc)
    else:
        text = os.strerror(exc.errno)
    return text[:1].lower() + text[1:]
