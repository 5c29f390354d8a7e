"""The descriptor cache: bounded open files, reopen on demand, regions keep their fd."""

from __future__ import annotations

import os
import threading

import pytest

from kafkette.log import DataDir, LogConfig
from kafkette.log.file_region import DESCRIPTORS, SegmentFile, default_budget
from kafkette.log.segment import LogSegment
from kafkette.wire.record_batch import validate_batch
from tests.log import log_batches


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def small_budget(monkeypatch):
    """A budget of 8 descriptors for the test (the cache is process-wide)."""
    monkeypatch.setattr(DESCRIPTORS, "budget", 8)
    return 8


def test_budget_is_half_the_descriptor_limit():
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert default_budget() == max(16, min(soft, 2 << 20) // 2)


def test_open_files_stay_within_the_budget_and_reopen_on_demand(tmp_path, small_budget):
    files = []
    for i in range(40):
        file = SegmentFile(tmp_path / f"{i}.log", create=True, open_now=True)
        file.pwrite_all(f"payload {i}".encode(), 0)
        files.append(file)
        assert DESCRIPTORS.open_count <= small_budget
    for _ in range(3):
        for i, file in enumerate(files):
            assert file.pread(64, 0) == f"payload {i}".encode()
            assert DESCRIPTORS.open_count <= small_budget
    assert sum(file.is_open for file in files) <= small_budget
    for file in files:
        file.close()


def test_recently_used_files_keep_their_descriptor(tmp_path, small_budget):
    hot = SegmentFile(tmp_path / "hot.log", create=True, open_now=True)
    hot.pwrite_all(b"hot", 0)
    cold = [SegmentFile(tmp_path / f"{i}.log", create=True) for i in range(30)]
    opens_before = DESCRIPTORS.opens
    for file in cold:
        file.pwrite_all(b"x", 0)
        assert hot.pread(3, 0) == b"hot"  # used between every cold open
    # The hot file was never evicted, so it was never reopened.
    assert DESCRIPTORS.opens - opens_before == len(cold)
    assert hot.is_open
    for file in [hot, *cold]:
        file.close()


def test_a_region_keeps_a_valid_descriptor_after_eviction(tmp_path, small_budget):
    file = SegmentFile(tmp_path / "a.log", create=True, open_now=True)
    file.pwrite_all(b"0123456789", 0)
    region = file.region(2, 5)
    inode = os.stat(file.path).st_ino
    others = [SegmentFile(tmp_path / f"{i}.log", create=True, open_now=True) for i in range(20)]
    assert not file.is_open  # evicted: the file dropped its descriptor ...
    assert os.fstat(region.file.fileno()).st_ino == inode  # ... the region did not
    assert region.read() == b"23456"
    fd = region.file.fileno()
    del region
    with pytest.raises(OSError):
        os.fstat(fd)  # closed with the last reference
    for other in [file, *others]:
        other.close()


def test_a_deleted_file_is_never_recreated(tmp_path, small_budget):
    open_path, evicted_path = tmp_path / "open.log", tmp_path / "evicted.log"
    evicted = SegmentFile(evicted_path, create=True)
    evicted.pwrite_all(b"data", 0)
    others = [SegmentFile(tmp_path / f"{i}.log", create=True, open_now=True) for i in range(20)]
    assert not evicted.is_open
    still_open = SegmentFile(open_path, create=True, open_now=True)
    still_open.pwrite_all(b"data", 0)
    held = still_open.region(0, 4)
    for path, file in ((open_path, still_open), (evicted_path, evicted)):
        path.unlink()
        file.forget()
    others += [SegmentFile(tmp_path / f"{i}.b.log", create=True, open_now=True) for i in range(20)]
    assert held.read() == b"data"  # a reader that held it reads the unlinked inode
    with pytest.raises(ValueError):
        evicted.pread(4, 0)  # no descriptor left, and no reopen
    with pytest.raises(ValueError):
        evicted.pwrite_all(b"more", 4)
    assert not open_path.exists() and not evicted_path.exists()
    for other in others:
        other.close()


def test_threads_reading_while_others_evict(tmp_path, small_budget):
    files = []
    for i in range(32):
        file = SegmentFile(tmp_path / f"{i}.log", create=True)
        file.pwrite_all(bytes([i]) * 4096, 0)
        files.append(file)
    errors: list[BaseException] = []

    def reader(start: int) -> None:
        try:
            for round_ in range(300):
                i = (start + round_ * 7) % len(files)
                assert files[i].pread(4096, 0) == bytes([i]) * 4096
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert DESCRIPTORS.open_count <= small_budget
    for file in files:
        file.close()


def test_a_data_dir_of_many_partitions_holds_few_descriptors(tmp_path, clock, small_budget):
    before = open_fds()
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("many", 300, {})
    batch = log_batches.build_sized_batch(3, 20)
    for p in range(0, 300, 7):
        data_dir.partition("many", p).append(bytearray(batch), [validate_batch(batch)])
    assert open_fds() - before <= small_budget + 4
    for p in range(0, 300, 7):
        assert data_dir.partition("many", p).read(0, 1 << 20).to_bytes()[12:] == batch[12:]
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert open_fds() - before <= small_budget + 4
    assert reopened.partition("many", 294).log_end_offset == 3
    assert reopened.partition("many", 1).log_end_offset == 0
    # Idle empty partitions got no index files, and their logs were never opened.
    assert not list((tmp_path / "many-1").glob("*.index"))
    reopened.close()


def test_a_segment_deleted_after_eviction_reads_as_empty(tmp_path, clock, small_budget):
    """A reader that looked a segment up before retention deleted it finds nothing there."""
    segment = LogSegment.create(tmp_path, 0, LogConfig(), clock())
    batch = log_batches.build_sized_batch(2, 10)
    segment.write(batch)
    segment.record_append([(len(batch), 1, 0)], LogConfig().index_interval_bytes)
    assert segment.find_batch(0, 0, segment.size) == (0, len(batch), 0)
    others = [SegmentFile(tmp_path / f"{i}.x", create=True, open_now=True) for i in range(20)]
    assert not segment.log.is_open
    segment.delete_files()
    assert segment.find_batch(0, 0, segment.size) is None
    assert segment.extent_within(0, 1 << 20, 0, segment.size) == 0
    assert list(tmp_path.glob("0000*")) == []  # nothing recreated
    for other in others:
        other.close()


def test_a_retired_file_reads_its_old_inode_after_its_path_is_replaced(tmp_path):
    """A clean's swap puts another file at a segment's path: holders of the old
    segment must keep reading the old bytes, even if it had no descriptor."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"old bytes")
    file = SegmentFile(path, create=False)
    assert not file.is_open
    file.retire()
    replacement = tmp_path / "swap"
    replacement.write_bytes(b"new bytes, longer")
    os.replace(replacement, path)
    assert file.pread(9, 0) == b"old bytes"
    assert file.size() == 9
    assert file.is_closed
    file.close()
