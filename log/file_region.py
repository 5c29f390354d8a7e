"""Segment files behind a bounded descriptor cache, and read results as file regions.

A data dir with 10,000 partitions has at least 30,000 segment files, far more
than the common ``ulimit -n 1024``. So a :class:`SegmentFile` is a *path* that
opens its descriptor on demand; the process-wide :data:`DESCRIPTORS` cache
keeps at most ``budget`` of them open (half of ``RLIMIT_NOFILE`` by default,
the rest is left to sockets, pipes and the rest of the process) and drops the
least recently used one (second-chance "clock": a use only sets a flag, so the
hot path pays no lock and no syscall) when it needs room.

Descriptor lifetime: the descriptor is an :class:`OpenFile` object that closes
its fd when the last Python reference goes (CPython reference counting). The
cache and the file only *drop their reference* when they evict or close, so a
:class:`FileRegion` handed to Fetch (``sendfile``), or a thread in the middle
of a ``pread``, keeps a valid fd for as long as it holds it; the fd number is
never reused under it, and a reader that races with retention or topic
deletion keeps reading the old inode. Such held descriptors may briefly exceed
the budget; they are as many as regions in flight. A region may become
shorter than ``length`` if the log is truncated concurrently: ``sendfile``
then returns short and :meth:`ReadInfo.to_bytes` returns what is left.

A closed or deleted file never reopens (a reopen would recreate an unlinked
file): once it has no descriptor its operations raise :class:`FileGone`.

Reads that must not wait for the disk: inside :func:`reads_without_waiting`,
every ``pread`` of this thread asks the kernel for page-cache bytes only
(``preadv2`` with ``RWF_NOWAIT``) and raises :class:`WouldBlock` instead of
waiting for a disk read; a :class:`ReadLock` held by another thread raises it
too. The event loop reads that way (a Fetch of recent data costs no
worker-thread round trip) and hands the read to a worker thread when it
meets bytes that are not cached.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# Never plan on fewer descriptors than this, whatever the limit says.
MIN_BUDGET = 16
# Above this the limit is effectively unlimited (RLIM_INFINITY and friends).
MAX_BUDGET = 1 << 20


class FileGone(ValueError):
    """The file was closed or deleted and has no descriptor left: it never reopens."""


class WouldBlock(Exception):
    """Inside :func:`reads_without_waiting`: the bytes are not in the page cache.

    Not an OSError on purpose: callers that treat OSError as a failed disk
    must let it through (nothing failed; the read belongs in a worker thread).
    """


class _ReadMode(threading.local):
    nowait = False


_READ_MODE = _ReadMode()
# RWF_NOWAIT reads: Linux >= 4.14 on most file systems; off for good after the first refusal.
_nowait_supported = hasattr(os, "preadv") and hasattr(os, "RWF_NOWAIT")


def nowait_reads_supported() -> bool:
    """Whether :func:`reads_without_waiting` can read at all (else it always raises)."""
    return _nowait_supported


class ReadLock:
    """A lock as readers take it: inside :func:`reads_without_waiting` a lock held by
    another thread (a truncation, a clean's swap) raises :class:`WouldBlock` instead of
    making the event loop wait behind that thread's work."""

    __slots__ = ("_lock",)

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=not _READ_MODE.nowait):
            raise WouldBlock("the lock is held by another thread")

    def __exit__(self, *_exc: object) -> None:
        self._lock.release()


@contextmanager
def reads_without_waiting() -> Iterator[None]:
    """This thread's preads read only cached bytes meanwhile (:class:`WouldBlock` otherwise)."""
    if not _nowait_supported:
        raise WouldBlock("RWF_NOWAIT reads are not supported here")
    _READ_MODE.nowait = True
    try:
        yield
    finally:
        _READ_MODE.nowait = False


def _pread_nowait(fd: int, length: int, position: int) -> bytes:
    """Up to ``length`` cached bytes at ``position``; WouldBlock if any is not cached."""
    global _nowait_supported
    buf = bytearray(length)
    got = 0
    view = memoryview(buf)
    while got < length:
        try:
            n = os.preadv(fd, [view[got:]], position + got, os.RWF_NOWAIT)
        except BlockingIOError:
            raise WouldBlock(f"bytes at {position + got} are not in the page cache") from None
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                _nowait_supported = False  # this kernel or file system: threads it is
                raise WouldBlock("RWF_NOWAIT reads are not supported here") from None
            raise
        if not n:
            break  # end of file
        got += n
    view.release()
    return bytes(buf) if got == length else bytes(buf[:got])


def default_budget() -> int:
    """Half the soft ``RLIMIT_NOFILE`` for data files; the other half for sockets etc."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0 or soft > 2 * MAX_BUDGET:
        soft = 2 * MAX_BUDGET
    return max(MIN_BUDGET, soft // 2)


class OpenFile:
    """One open OS descriptor; closed when the last reference to this object goes."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def fileno(self) -> int:
        return self.fd

    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (short only at end of file)."""
        fd = self.fd
        if _READ_MODE.nowait:
            return _pread_nowait(fd, length, position)
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

    def __del__(self, _close=os.close) -> None:  # os.close bound early: exit-safe
        try:
            _close(self.fd)
        except OSError:
            pass


class DescriptorCache:
    """At most ``budget`` descriptors held by segment files, least recently used dropped.

    Thread-safe: opening and evicting take one lock; using an already open
    file takes none (it sets ``SegmentFile.used``, which the clock hand reads).
    """

    def __init__(self, budget: int) -> None:
        self.budget = max(1, budget)
        self._lock = threading.Lock()
        self._ring: deque[SegmentFile] = deque()  # files with a descriptor (plus dead ones)
        self._open = 0  # files in the ring that hold a descriptor
        self.opens = 0  # descriptors opened so far (for tests and benches)
        self.evictions = 0

    @property
    def open_count(self) -> int:
        """Descriptors held by segment files now (regions in flight may hold more)."""
        return self._open

    def open(self, file: SegmentFile) -> OpenFile:
        """``file``'s descriptor, opening it (and evicting another) if needed."""
        with self._lock:
            handle = file._handle
            if handle is not None:
                return handle
            if file._gone:
                raise FileGone(f"{file.path} is closed or deleted")
            while self._open >= self.budget:
                if not self._evict_one():
                    break
            try:
                fd = os.open(file.path, file._flags, 0o644)
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE) or not self._open:
                    raise
                # Something else took descriptors (sockets): give back half of ours.
                for _ in range((self._open + 1) // 2):
                    self._evict_one()
                fd = os.open(file.path, file._flags, 0o644)
            handle = OpenFile(fd, file.path)
            self.opens += 1
            file._handle = handle
            # Not marked used: a file touched once (a scan, a one-off read) is
            # the first to go; one used again before the hand comes round stays.
            file.used = False
            self._ring.append(file)
            self._open += 1
            return handle

    def release(self, file: SegmentFile, *, keep_handle: bool) -> None:
        """``file`` is closed or deleted: it no longer counts, and never reopens.

        With ``keep_handle`` the file keeps its descriptor (if any) until it is
        itself garbage: readers that looked it up before a deletion go on
        reading the unlinked inode.
        """
        with self._lock:
            if file._gone:
                return
            file._gone = True
            if file._handle is not None:
                self._open -= 1
                if not keep_handle:
                    file._handle = None
            if len(self._ring) > 2 * self._open + 64:
                self._ring = deque(f for f in self._ring if not f._gone and f._handle)

    def retire(self, file: SegmentFile) -> None:
        """Like ``release(keep_handle=True)``, but first opens ``file`` if it has no descriptor.

        For a file whose path is about to name another file (a clean's swap):
        a reader that still holds the old segment must read the old inode,
        never reopen the path and find the new file there.
        """
        with self._lock:
            if file._gone:
                return
            if file._handle is None:  # not counted: it is never evicted, goes with the file
                fd = os.open(file.path, file._flags & ~os.O_CREAT)
                file._handle = OpenFile(fd, file.path)
                self.opens += 1
            else:
                self._open -= 1
            file._gone = True

    def _evict_one(self) -> bool:
        """Drop one descriptor (second chance for recently used ones). Caller holds the lock."""
        ring = self._ring
        for _ in range(2 * len(ring) + 1):
            if not ring:
                return False
            file = ring.popleft()
            if file._gone or file._handle is None:
                continue  # closed or deleted: already uncounted
            if file.used:
                file.used = False
                ring.append(file)
                continue
            file._handle = None  # the fd closes when no region or reader holds it
            self._open -= 1
            self.evictions += 1
            return True
        return False


DESCRIPTORS = DescriptorCache(default_budget())


class SegmentFile:
    """A ``.log`` (or index) file: a path whose descriptor :data:`DESCRIPTORS` manages.

    Thread-safe: positional I/O only (``pread``/``pwrite``), no shared seek
    position; every operation holds its own reference to the descriptor while
    it runs, so an eviction by another thread never closes it underneath.
    ``dirty`` says whether :meth:`fsync` has anything to do.
    """

    __slots__ = ("__weakref__", "_flags", "_gone", "_handle", "dirty", "path", "used")

    def __init__(
        self, path: os.PathLike[str] | str, *, create: bool, open_now: bool = False,
        dirty: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self._flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        self._handle: OpenFile | None = None
        self._gone = False
        self.used = False
        # Only writes make a file dirty: fsyncing a file never written (an empty
        # new segment) has nothing to make durable (its directory entry is the
        # directory's business), and skipping it keeps closing 10,000 idle
        # partitions cheap.
        self.dirty = dirty
        if open_now:
            DESCRIPTORS.open(self)

    def _open_file(self) -> OpenFile:
        handle = self._handle
        if handle is not None:
            self.used = True
            return handle
        return DESCRIPTORS.open(self)

    @property
    def is_open(self) -> bool:
        """Holds a descriptor right now (it may be evicted at any time)."""
        return self._handle is not None

    @property
    def is_closed(self) -> bool:
        return self._gone

    def region(self, position: int, length: int) -> FileRegion:
        """``length`` bytes at ``position``, with a descriptor that stays valid while held."""
        return FileRegion(self._open_file(), position, length)

    def size(self) -> int:
        handle = self._handle
        if handle is not None:
            return os.fstat(handle.fd).st_size
        if self._gone:
            raise FileGone(f"{self.path} is closed or deleted")
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            if self._flags & os.O_CREAT:
                return 0  # not created yet
            raise

    def pread(self, length: int, position: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (short only at end of file)."""
        return self._open_file().pread(length, position)

    def pwrite_all(self, data: bytes | bytearray | memoryview, position: int) -> None:
        """Write all of ``data`` at ``position``, looping on short writes."""
        handle = self._open_file()
        fd = handle.fd
        self.dirty = True
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
        handle = self._open_file()
        self.dirty = True
        os.ftruncate(handle.fd, size)

    def fsync(self) -> None:
        """fsync if anything was written since the last one (opening the file if needed).

        The flag is cleared first, so a write racing with the fsync leaves it set.
        """
        if not self.dirty:
            return
        handle = self._open_file()
        self.dirty = False
        try:
            os.fsync(handle.fd)
        except BaseException:
            self.dirty = True
            raise

    def close(self) -> None:
        """Drop the descriptor; the file never reopens. Idempotent.

        The fd closes as soon as no region or reader still holds it.
        """
        DESCRIPTORS.release(self, keep_handle=False)

    def forget(self) -> None:
        """The file was deleted: never reopen, but readers already holding it keep reading."""
        DESCRIPTORS.release(self, keep_handle=True)

    def retire(self) -> None:
        """Its path is about to name another file: keep reading this inode, never reopen."""
        DESCRIPTORS.retire(self)


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes at ``position`` of ``file``: whole record batches.

    ``file`` is the descriptor itself: hold the region (not just
    ``file.fileno()``) until the bytes are sent, and the fd stays valid.
    """

    file: OpenFile
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
    # The offset a fetch continues from after these regions (the batch after
    # the last one returned): the upper bound of the aborted transactions a
    # read_committed Fetch answers. Only computed when a read has max_offset.
    next_offset: int = -1

    @property
    def size(self) -> int:
        return sum(r.length for r in self.regions)

    def to_bytes(self) -> bytes:
        """The regions' bytes, copied; the fallback when ``sendfile`` is not usable."""
        if len(self.regions) == 1:
            return self.regions[0].read()
        return b"".join(r.read() for r in self.regions)
