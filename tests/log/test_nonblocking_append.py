"""PartitionLog.append(nonblocking=True): the event loop's append, which never waits.

It must refuse (AppendWouldBlock) with nothing changed whenever the append would
wait for the write lock, roll a segment, persist a new leader epoch or fsync, and
otherwise append exactly as the blocking append does.
"""

from __future__ import annotations

import threading

import pytest

from kafkette.log import LogConfig, PartitionLog
from kafkette.log.partition_log import AppendWouldBlock
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches


def batch_of(seed: int, records: int = 3) -> bytearray:
    return log_batches.build_sized_batch(records, 40, seed=seed)


def open_log(path, clock, **config) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**config), clock, recover=False)


def test_appends_as_the_blocking_append_does(tmp_path, clock):
    log = open_log(tmp_path, clock)
    first = batch_of(1)
    second = batch_of(2)
    info = log.append(first, [validate_batch(first)], nonblocking=True)
    assert (info.base_offset, info.last_offset) == (0, 2)
    info = log.append(second, [validate_batch(second)])
    assert (info.base_offset, info.last_offset) == (3, 5)
    data = log.read(0, 1 << 20).to_bytes()
    assert [h.base_offset for h in iter_batches(data)] == [0, 3]
    log.close()


def test_refuses_while_another_thread_holds_the_write_lock(tmp_path, clock):
    log = open_log(tmp_path, clock)
    held = threading.Event()
    release = threading.Event()

    def retention_like() -> None:
        with log._write_lock:  # what apply_retention or a truncation holds
            held.set()
            release.wait(10)

    worker = threading.Thread(target=retention_like)
    worker.start()
    try:
        assert held.wait(10)
        batch = batch_of(1)
        with pytest.raises(AppendWouldBlock):
            log.append(batch, [validate_batch(batch)], nonblocking=True)
        assert log.log_end_offset == 0
    finally:
        release.set()
        worker.join(10)
    info = log.append(batch, [validate_batch(batch)], nonblocking=True)
    assert info.base_offset == 0 and log.log_end_offset == 3
    log.close()


def test_refuses_a_roll_then_the_blocking_append_rolls(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=300)
    first = batch_of(1)
    log.append(first, [validate_batch(first)], nonblocking=True)
    second = batch_of(2)
    size_before = log.size_bytes
    with pytest.raises(AppendWouldBlock):
        log.append(second, [validate_batch(second)], nonblocking=True)
    assert (log.log_end_offset, log.size_bytes, log.segment_base_offsets) == (3, size_before, [0])
    info = log.append(second, [validate_batch(second)])
    assert info.base_offset == 3 and log.segment_base_offsets == [0, 3]
    log.close()


def test_refuses_an_append_that_must_fsync(tmp_path, clock):
    log = open_log(tmp_path, clock, flush_interval_messages=4)
    first = batch_of(1)
    log.append(first, [validate_batch(first)], nonblocking=True)  # 3 messages: no flush
    assert log.recovery_point == 0
    second = batch_of(2)
    with pytest.raises(AppendWouldBlock):
        log.append(second, [validate_batch(second)], nonblocking=True)
    assert log.log_end_offset == 3
    log.append(second, [validate_batch(second)])
    assert log.recovery_point == 6
    log.close()


def test_refuses_a_new_leader_epoch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    batch = batch_of(1)
    batch[12:16] = (5).to_bytes(4, "big")  # partitionLeaderEpoch, outside the CRC
    with pytest.raises(AppendWouldBlock):
        log.append(batch, [validate_batch(batch)], nonblocking=True)
    assert log.leader_epoch_cache.latest_epoch != 5 and log.log_end_offset == 0
    log.append(batch, [validate_batch(batch)])
    assert log.leader_epoch_cache.latest_epoch == 5
    log.close()
