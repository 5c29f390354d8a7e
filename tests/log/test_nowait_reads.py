"""Reads that must not wait for the disk (``reads_without_waiting``), on real files.

The event loop reads a Fetch's bytes this way: cached bytes come back as a
normal read would give them; bytes the kernel would have to wait for raise
WouldBlock (never an OSError, which the fetch path treats as a failed disk).
Pages are dropped from the page cache with ``posix_fadvise(DONTNEED)`` after an
fsync, until ``mincore`` sees none of them cached; file systems without a disk
behind their page cache (tmpfs) keep them: there the eviction tests skip,
saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkette.log.config import LogConfig
from kafkette.log.file_region import (
    SegmentFile,
    WouldBlock,
    nowait_reads_supported,
    reads_without_waiting,
)
from kafkette.log.partition_log import PartitionLog
from kafkette.wire.record_batch import read_header, validate_batch
from tests import page_cache
from tests.log.log_batches import build_sized_batch

evict, EVICTION_DEADLINE_S = page_cache.evict, page_cache.EVICTION_DEADLINE_S

pytestmark = pytest.mark.skipif(
    not nowait_reads_supported(), reason="no preadv2(RWF_NOWAIT) on this platform"
)


REFUSED = object()


def read_once_evicted(path: Path, read) -> object:
    """Evict ``path``, then ``read()`` without waiting: its result, or REFUSED (WouldBlock).

    A miss does not always refuse: the kernel starts reading the page in and, if the device
    answered before it looks again (a fast virtual disk, a preempted reader), serves it
    without having made the reader wait. Measured here: one such read in a few dozen on a
    busy two-core machine. Either is right for the event loop; wrong bytes or an OSError
    never are.
    """
    assert evict(path), f"the kernel kept pages of {path} for {EVICTION_DEADLINE_S}s"
    try:
        with reads_without_waiting():
            return read()
    except WouldBlock:
        return REFUSED


def require_eviction(directory: Path) -> None:
    """Skip unless this file system lets a file's pages go."""
    if not page_cache.evicts(directory):
        pytest.skip(f"{directory}'s file system keeps dropped pages (tmpfs?): cannot evict")


def test_cached_bytes_read_the_same_without_waiting(tmp_path: Path) -> None:
    data = os.urandom(100_000)
    path = tmp_path / "cached.log"
    path.write_bytes(data)
    file = SegmentFile(path, create=False)
    try:
        with reads_without_waiting():
            assert file.pread(70_000, 12_345) == data[12_345:82_345]
            assert file.pread(10_000, 95_000) == data[95_000:]  # short only at end of file
            assert file.pread(10, 200_000) == b""
    finally:
        file.close()


def test_uncached_bytes_raise_would_block_or_read_the_same(tmp_path: Path) -> None:
    require_eviction(tmp_path)
    data = os.urandom(256 * 1024)
    path = tmp_path / "cold.log"
    path.write_bytes(data)
    file = SegmentFile(path, create=False)
    try:
        wanted = data[128 * 1024 : 132 * 1024]
        got = read_once_evicted(path, lambda: file.pread(4096, 128 * 1024))
        assert got is REFUSED or got == wanted
        assert not issubclass(WouldBlock, OSError)  # the fetch path's "disk failed" branch
        assert file.pread(4096, 128 * 1024) == wanted  # blocking read
    finally:
        file.close()


def test_log_read_of_evicted_segment_would_block_or_reads_in_full(
    tmp_path: Path, clock
) -> None:
    """PartitionLog.read scans batch headers with pread: evicted, it refuses as a whole (or,
    where the kernel served the miss at once, reads the same); the same read without the
    mode (what the worker thread does) returns the batches."""
    require_eviction(tmp_path)
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock, recover=False)
    try:
        for i in range(200):
            batch = build_sized_batch(10, 100, seed=i)
            log.append(batch, [validate_batch(batch)])
        log.flush()
        segment = next((tmp_path / "t-0").glob("*.log"))
        got = read_once_evicted(segment, lambda: log.read(1005, 64 * 1024).to_bytes())
        data = log.read(1005, 64 * 1024).to_bytes()
        assert got is REFUSED or got == data
        first = read_header(data, 0)
        assert (first.base_offset, first.last_offset) == (1000, 1009)  # the batch holding 1005
        assert len(data) // first.size == (64 * 1024) // first.size  # whole batches that fit
    finally:
        log.close()


def test_read_gives_up_rather_than_wait_for_a_held_state_lock(tmp_path: Path, clock) -> None:
    """A truncation (or a clean's swap) holds the log's state lock while it works on the
    files: a read on the event loop must not wait behind it. The lock is held here by
    another thread, as a truncation would; the read without the mode waits its turn."""
    import threading

    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock, recover=False)
    try:
        batch = build_sized_batch(10, 100)
        log.append(batch, [validate_batch(batch)])
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with log._state_lock:  # stands in for truncate_to's critical section
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(10)
            with reads_without_waiting():
                with pytest.raises(WouldBlock):
                    log.read(0, 1024)
                with pytest.raises(WouldBlock):
                    log.aborted_transactions(0, 10)
            waited = threading.Thread(target=lambda: results.append(log.read(0, 1024).size))
            results: list[int] = []
            waited.start()
            waited.join(0.3)
            assert waited.is_alive() and not results  # a blocking read waits for the lock
        finally:
            release.set()
            holder.join(10)
        waited.join(10)
        assert results == [len(batch)]
        with reads_without_waiting():  # lock free again: the read runs (cached bytes)
            assert log.read(0, 1024).to_bytes() == bytes(batch)  # append patched it in place
    finally:
        log.close()
