"""Reads that must not wait for the disk (``reads_without_waiting``), on real files.

The event loop reads a Fetch's bytes this way: cached bytes come back as a
normal read would give them; bytes the kernel would have to read from disk
raise WouldBlock (never an OSError, which the fetch path treats as a failed
disk). Pages are dropped from the page cache with ``posix_fadvise(DONTNEED)``
after an fsync, which file systems without a page cache of their own (tmpfs)
ignore: there the eviction tests skip, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from log_batches import build_sized_batch

from kafkette.log.config import LogConfig
from kafkette.log.file_region import (
    SegmentFile,
    WouldBlock,
    nowait_reads_supported,
    reads_without_waiting,
)
from kafkette.log.partition_log import PartitionLog
from kafkette.wire.record_batch import read_header, validate_batch

pytestmark = pytest.mark.skipif(
    not nowait_reads_supported(), reason="no preadv2(RWF_NOWAIT) on this platform"
)


def drop_from_page_cache(path: Path) -> None:
    """fsync ``path`` (dirty pages are never dropped), then ask the kernel to drop its pages."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def refuses_once_evicted(path: Path, read) -> bool:
    """Drop ``path``'s pages, then True if ``read()`` without waiting raises WouldBlock.

    Up to five tries: under load the kernel can keep or bring back a page between the
    drop and the read (writeback finishing, readahead for another reader). A reader
    that never refuses fails all five.
    """
    for _ in range(5):
        drop_from_page_cache(path)
        try:
            with reads_without_waiting():
                read()
        except WouldBlock:
            return True
    return False


def require_eviction(directory: Path) -> None:
    """Skip unless dropping a file's pages really makes RWF_NOWAIT reads of it refuse here."""
    probe = directory / "eviction-probe"
    probe.write_bytes(os.urandom(64 * 1024))
    drop_from_page_cache(probe)
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
    except BlockingIOError:
        return
    finally:
        os.close(fd)
        probe.unlink()
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


def test_uncached_bytes_raise_would_block_and_read_normally_outside(tmp_path: Path) -> None:
    require_eviction(tmp_path)
    data = os.urandom(256 * 1024)
    path = tmp_path / "cold.log"
    path.write_bytes(data)
    file = SegmentFile(path, create=False)
    try:
        assert refuses_once_evicted(path, lambda: file.pread(4096, 128 * 1024))
        assert not issubclass(WouldBlock, OSError)  # the fetch path's "disk failed" branch
        assert file.pread(4096, 128 * 1024) == data[128 * 1024 : 132 * 1024]  # blocking read
    finally:
        file.close()


def test_log_read_of_evicted_segment_would_block_then_reads_in_full(
    tmp_path: Path, clock
) -> None:
    """PartitionLog.read scans batch headers with pread: evicted, it refuses as a whole;
    the same read without the mode (what the worker thread does) returns the batches."""
    require_eviction(tmp_path)
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock, recover=False)
    try:
        for i in range(200):
            batch = build_sized_batch(10, 100, seed=i)
            log.append(batch, [validate_batch(batch)])
        log.flush()
        segment = next((tmp_path / "t-0").glob("*.log"))
        assert refuses_once_evicted(segment, lambda: log.read(1005, 64 * 1024).to_bytes())
        data = log.read(1005, 64 * 1024).to_bytes()
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
