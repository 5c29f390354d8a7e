"""Read results as file regions, so the broker can ``os.sendfile`` them.

A :class:`SegmentFile` owns one OS file descriptor. A region keeps a reference
to it, and the descriptor is closed only when the log is closed *and* no
region refers to it any more (CPython reference counting), so a reader that
races with retention or topic deletion keeps reading the old inode instead of
whatever file reuses the descriptor number. A region may become shorter than
``length`` if the log is truncated concurrently: ``sendfile`` then returns
short and :meth:`ReadInfo.to_bytes` returns what is left.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field


class SegmentFile:
    """An open ``.log`` file (or index file): one descriptor shared by writer and readers.

    Thread-safe: positional I/O only (``pread``/``pwrite``), no shared seek
    position. A deleted segment is unlinked and simply dropped: the descriptor
    is closed when the last Python reference (e.g. a reader's region) goes away.
    """

    __slots__ = ("__weakref__", "_fd", "_lock", "path")

    def __init__(self, path: os.PathLike[str] | str, *, create: bool) -> None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self.path = os.fspath(path)
        self._fd: int | None = os.open(self.path, flags, 0o644)
        self._lock = threading.Lock()

    def fileno(self) -> int:
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        return fd

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def size(self) -> int:
        return os.fstat(self.fileno()).st_size

    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (short only at end of file)."""
        fd = self.fileno()
        data = os.pread(fd, length, position)
        if len(data) == length or not data:
            return data
        parts = [data]
        got = len(data)
        while got < length:
            more = os.pread(fd, length - got, position + got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def pwrite_all(self, data: bytes | bytearray | memoryview, position: int) -> None:
        """Write all of ``data`` at ``position``, looping on short writes."""
        fd = self.fileno()
        written = os.pwrite(fd, data, position)
        if written == len(data):
            return
        view = memoryview(data)[written:]
        position += written
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fileno(), size)

    def fsync(self) -> None:
        os.fsync(self.fileno())

    def close(self) -> None:
        """Close now; only for shutdown, when no reader may still hold a region."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes at ``position`` of ``file``: whole record batches.

    Hold the region (not just ``file.fileno()``) until the bytes are sent.
    """

    file: SegmentFile
    position: int
    length: int

    def read(self) -> bytes:
        return self.file.pread(self.length, self.position)


@dataclass(frozen=True, slots=True)
class ReadInfo:
    """What :meth:`PartitionLog.read` returns: regions plus the offsets snapshot.

    ``regions`` is empty when the fetch offset equals the log end offset.
    The offsets are those seen when the read started (Fetch returns them).
    """

    regions: list[FileRegion] = field(default_factory=list)
    log_start_offset: int = 0
    high_watermark: int = 0
    log_end_offset: int = 0

    @property
    def size(self) -> int:
        return sum(r.length for r in self.regions)

    def to_bytes(self) -> bytes:
        """The regions' bytes, copied; the fallback when ``sendfile`` is not usable."""
        if len(self.regions) == 1:
            return self.regions[0].read()
        return b"".join(r.read() for r in self.regions)
