"""The log on a filesystem that runs out of space: nothing half-written, service resumes.

Each test mounts a small tmpfs (``small_filesystem`` in tests/conftest.py),
fills it with a filler file, checks that the failing write leaves files and
offsets exactly as before, then deletes the filler and checks that the same
objects carry on in place (no reopen), and that a reopen finds everything.
"""

from __future__ import annotations

import errno

import pytest

from kafkette.log import DataDir, LogConfig, PartitionLog
from kafkette.log.checkpoint import TEMP_SUFFIX, OffsetsCheckpoint, atomic_write
from kafkette.log.segment import segment_file_name
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches

PAGE = 4096


def append(log: PartitionLog, batch: bytearray):
    return log.append(batch, [validate_batch(batch)])


def temp_files(root) -> list:
    return sorted(root.rglob(f"*{TEMP_SUFFIX}"))


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_temp(small_filesystem):
    fs = small_filesystem(256)
    target = fs.path / "topics.json"
    atomic_write(target, b"old")
    fs.fill()
    with pytest.raises(OSError) as failure:
        atomic_write(target, b"n" * (3 * PAGE))
    assert failure.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old"
    assert temp_files(fs.path) == []
    fs.free()
    atomic_write(target, b"n" * (3 * PAGE))
    assert target.read_bytes() == b"n" * (3 * PAGE)
    assert temp_files(fs.path) == []


def test_checkpoint_write_on_a_full_disk_fails_cleanly_and_is_retried(small_filesystem, clock):
    fs = small_filesystem(256)
    log = PartitionLog.open(fs.path / "t-0", LogConfig(), clock, recover=False)
    append(log, log_batches.build_sized_batch(3, 10))
    log.flush()
    fs.fill()
    with pytest.raises(OSError):
        log.write_checkpoint()
    assert temp_files(fs.path) == []
    assert OffsetsCheckpoint.read(fs.path / "t-0").recovery_point == 0
    fs.free()
    log.write_checkpoint()  # still due: the failed one was not counted as written
    assert OffsetsCheckpoint.read(fs.path / "t-0").recovery_point == 3
    log.close()


def test_append_on_a_full_disk_publishes_nothing_and_resumes_in_place(small_filesystem, clock):
    fs = small_filesystem(512)
    directory = fs.path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), clock, recover=False)
    kept = []
    for i in range(3):
        batch = log_batches.build_sized_batch(2, 100, seed=i)
        append(log, batch)
        kept.append(bytes(batch))
    segment_path = directory / segment_file_name(0, ".log")
    size_before = segment_path.stat().st_size
    assert size_before % PAGE, "the segment's last page has room: the failing write is partial"
    fs.fill()

    too_big = log_batches.build_sized_batch(4, 3 * PAGE, seed=9)
    with pytest.raises(OSError) as failure:
        append(log, too_big)
    assert failure.value.errno == errno.ENOSPC
    # The bytes that did fit in the last page were cut off again: nothing visible.
    assert segment_path.stat().st_size == size_before
    assert log.log_end_offset == 6
    assert log.read(0, 1 << 20).to_bytes() == b"".join(kept)

    fs.free()
    retry = log_batches.build_sized_batch(4, 3 * PAGE, seed=9)
    info = append(log, retry)
    assert (info.base_offset, info.last_offset) == (6, 9)
    kept.append(bytes(retry))
    assert log.read(0, 1 << 20).to_bytes() == b"".join(kept)
    log.close()

    reopened = PartitionLog.open(directory, LogConfig(), clock, recover=True)
    data = reopened.read(0, 1 << 20).to_bytes()
    assert data == b"".join(kept)
    assert [h.base_offset for h in iter_batches(data)] == [0, 2, 4, 6]
    reopened.close()


def test_topic_creation_on_a_full_disk_is_not_remembered(small_filesystem, clock):
    fs = small_filesystem(256)
    data_dir = DataDir.open(fs.path / "data", LogConfig(), clock)
    data_dir.create_topic("before", 1, {})
    fs.fill()
    with pytest.raises(OSError):
        data_dir.create_topic("during", 2, {})
    assert "during" not in data_dir.topics
    assert temp_files(fs.path) == []
    fs.free()
    data_dir.create_topic("during", 2, {})  # the same change, retried, now succeeds
    data_dir.close()
    reopened = DataDir.open(fs.path / "data", LogConfig(), clock)
    assert sorted(reopened.topics) == ["before", "during"]
    reopened.close()


def test_close_on_a_full_disk_writes_no_clean_marker(small_filesystem, clock):
    fs = small_filesystem(256)
    data_dir = DataDir.open(fs.path / "data", LogConfig(), clock)
    data_dir.create_topic("t", 2, {})
    for index in range(2):
        append(data_dir.partition("t", index), log_batches.build_sized_batch(3, 10))
    fs.fill()
    with pytest.raises(OSError):
        data_dir.close()  # the offsets checkpoints cannot be written
    assert not (fs.path / "data" / ".kafka_cleanshutdown").exists()
    assert temp_files(fs.path) == []
    fs.free()
    reopened = DataDir.open(fs.path / "data", LogConfig(), clock)  # recovers
    assert [reopened.partition("t", i).log_end_offset for i in range(2)] == [3, 3]
    reopened.close()


def test_flush_per_append_on_a_full_disk_fails_no_append_for_its_index(small_filesystem, clock):
    """``flush.messages=1``: a batch that fits in the log's last page is written and
    published; the index entry it adds cannot be (no free page). The append must not
    be reported as failed, or a producer would retry a batch that is already there."""
    fs = small_filesystem(256)
    directory = fs.path / "t-0"
    config = LogConfig(index_interval_bytes=1, flush_interval_messages=1)
    log = PartitionLog.open(directory, config, clock, recover=False)
    first = log_batches.build_sized_batch(2, 10)
    append(log, first)  # no index entry yet: the index file is not even created
    index_file = directory / segment_file_name(0, ".index")
    assert not index_file.exists() or index_file.stat().st_size == 0
    fs.fill()
    second = log_batches.build_sized_batch(2, 10, seed=1)
    info = append(log, second)  # its index entry stays pending
    assert (info.base_offset, log.log_end_offset) == (2, 4)
    fs.free()
    log.close()  # writes the pending entry
    reopened = PartitionLog.open(directory, config, clock, recover=True)
    assert reopened.read(0, 1 << 20).to_bytes() == bytes(first) + bytes(second)
    reopened.close()
