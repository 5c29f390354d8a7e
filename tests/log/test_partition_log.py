"""PartitionLog on real files: appends, reads, rolls, offsets, timestamps, retention."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkette.log import LogConfig, OffsetOutOfRange, PartitionLog, RecordBatchTooLarge
from kafkette.log.segment import segment_file_name
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches

BASE_TS = 1_700_000_000_000


def append(log: PartitionLog, batch: bytearray):
    return log.append(batch, [validate_batch(batch)])


def bases_in(data: bytes) -> list[int]:
    return [h.base_offset for h in iter_batches(data)]


def fill(log: PartitionLog, count: int, *, records: int = 3, value_size: int = 40,
         ts_step: int = 10) -> list[bytes]:
    """Append ``count`` batches; return each batch's bytes as stored (offsets patched)."""
    stored = []
    for i in range(count):
        batch = log_batches.build_sized_batch(
            records, value_size, base_timestamp=BASE_TS + i * ts_step, seed=i
        )
        append(log, batch)
        stored.append(bytes(batch))
    return stored


def open_log(path: Path, clock, **config) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**config), clock, recover=False)


def test_append_assigns_contiguous_offsets_and_patches_buffer(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    first = log_batches.build_sized_batch(3, 10)
    second = log_batches.build_sized_batch(2, 10)
    info1 = append(log, first)
    info2 = append(log, second)
    assert (info1.base_offset, info1.last_offset) == (0, 2)
    assert (info2.base_offset, info2.last_offset) == (3, 4)
    assert info1.log_append_time_ms == -1
    assert validate_batch(second).base_offset == 3
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 5, 5)
    log.close()


def test_append_of_several_batches_in_one_buffer(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    parts = [log_batches.build_sized_batch(n, 5) for n in (1, 4, 2)]
    buffer = bytearray(b"".join(parts))
    headers = iter_batches(buffer)
    info = log.append(buffer, headers)
    assert (info.base_offset, info.last_offset) == (0, 6)
    assert bases_in(log.read(0, 1 << 20).to_bytes()) == [0, 1, 5]
    log.close()


def test_append_rejects_headers_not_covering_buffer(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    batch = log_batches.build_sized_batch(1, 5)
    with pytest.raises(ValueError):
        log.append(batch + b"\x00", [validate_batch(batch)])
    with pytest.raises(ValueError):
        log.append(batch, [])
    assert log.log_end_offset == 0
    log.close()


def test_batch_larger_than_segment_is_refused(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=200)
    with pytest.raises(RecordBatchTooLarge):
        append(log, log_batches.build_sized_batch(5, 100))
    log.close()


def test_read_returns_whole_batches_within_max_bytes(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, index_interval_bytes=100)
    stored = fill(log, 20)
    size = len(stored[0])
    # Offset 4 lies inside the second batch (offsets 3..5): it starts there.
    info = log.read(4, 3 * size)
    assert info.to_bytes() == b"".join(stored[1:4])
    # One byte short of three batches: only two fit.
    assert info.regions[0].position == size
    assert log.read(4, 3 * size - 1).to_bytes() == b"".join(stored[1:3])
    # The first batch is returned whole even when larger than max_bytes.
    assert log.read(4, 1).to_bytes() == stored[1]
    assert log.read(0, 0).to_bytes() == stored[0]
    log.close()


def test_read_at_log_end_is_empty_and_outside_raises(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    fill(log, 2)
    empty = log.read(6, 1000)
    assert empty.regions == [] and empty.to_bytes() == b""
    assert (empty.log_start_offset, empty.high_watermark, empty.log_end_offset) == (0, 6, 6)
    with pytest.raises(OffsetOutOfRange):
        log.read(7, 1000)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 1000)
    log.close()


def test_regions_can_be_sent_with_sendfile(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    stored = fill(log, 5)
    info = log.read(0, 1 << 20)
    out_path = tmp_path / "out"
    with open(out_path, "wb") as out:
        for region in info.regions:
            sent = 0
            while sent < region.length:
                sent += os.sendfile(
                    out.fileno(), region.file.fileno(), region.position + sent,
                    region.length - sent,
                )
    assert out_path.read_bytes() == b"".join(stored)
    log.close()


def test_roll_on_segment_bytes_and_read_spans_segments(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000)
    stored = fill(log, 30)
    bases = log.segment_base_offsets
    assert len(bases) > 3
    for base in bases:
        assert (tmp_path / "t-0" / segment_file_name(base, ".log")).exists()
        assert os.path.getsize(tmp_path / "t-0" / segment_file_name(base, ".log")) <= 1000
    # Reading everything, one fetch at a time, yields every batch once, in order.
    collected, offset = [], 0
    while offset < log.log_end_offset:
        data = log.read(offset, 10_000).to_bytes()
        headers = iter_batches(data)
        assert headers, f"no progress at {offset}"
        collected.append(data)
        offset = headers[-1].next_offset
    assert b"".join(collected) == b"".join(stored)
    log.close()


def test_roll_on_segment_ms_uses_batch_timestamps(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_ms=100)
    fill(log, 5, ts_step=40)  # timestamps 0,40,80,120,160 after the first
    # Rolls when the incoming batch is > 100 ms after the segment's first batch.
    assert log.segment_base_offsets == [0, 9]
    log.close()


def test_roll_on_full_index(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, index_interval_bytes=0, max_index_bytes=24)
    fill(log, 10)
    # Index holds 2 time entries (24 // 12): entries are added from the second
    # batch on, so a segment rolls after 3 batches.
    assert log.segment_base_offsets == [0, 9, 18, 27]
    log.close()


def test_offset_for_timestamp_and_max_timestamp(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, index_interval_bytes=150)
    fill(log, 40, ts_step=10)  # batch i: offsets 3i..3i+2, max ts BASE+10i+2
    assert len(log.segment_base_offsets) > 2
    for i in (0, 7, 19, 33, 39):
        assert log.offset_for_timestamp(BASE_TS + 10 * i) == (3 * i, BASE_TS + 10 * i + 2)
        assert log.offset_for_timestamp(BASE_TS + 10 * i + 3) == (
            (3 * (i + 1), BASE_TS + 10 * (i + 1) + 2) if i < 39 else None
        )
    assert log.offset_for_timestamp(0) == (0, BASE_TS + 2)
    assert log.offset_for_timestamp(BASE_TS + 10_000) is None
    assert log.max_timestamp_offset() == (119, BASE_TS + 392)
    log.close()
    reopened = open_log(tmp_path / "t-0", clock, segment_bytes=1000, index_interval_bytes=150)
    assert reopened.offset_for_timestamp(BASE_TS + 190) == (57, BASE_TS + 192)
    assert reopened.max_timestamp_offset() == (119, BASE_TS + 392)
    reopened.close()


def test_timestamps_out_of_order_find_first_batch_reaching_target(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, index_interval_bytes=0)
    for ts in (100, 500, 200, 600, 300):
        append(log, log_batches.build_batch([b"x"], base_timestamp=ts))
    assert log.offset_for_timestamp(150) == (1, 500)
    assert log.offset_for_timestamp(550) == (3, 600)
    assert log.max_timestamp_offset() == (3, 600)
    log.close()


def test_empty_log_timestamp_lookups(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None
    log.close()


def test_log_append_time_rewrites_timestamps(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    batch = log_batches.build_sized_batch(2, 5, base_timestamp=5)
    info = append(log, batch)
    assert info.log_append_time_ms == clock.now_ms
    header = validate_batch(log.read(0, 1000).to_bytes())  # CRC still right
    assert header.max_timestamp == clock.now_ms
    assert log.max_timestamp_offset() == (1, clock.now_ms)
    log.close()


def test_retention_by_time_uses_largest_timestamp(tmp_path, clock):
    clock.now_ms = BASE_TS
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, retention_ms=1000)
    fill(log, 30, ts_step=100)  # timestamps BASE .. BASE+2900
    bases = log.segment_base_offsets
    clock.now_ms = BASE_TS + 1000 + 1500  # batches with max ts < BASE+1500 expired
    deleted = log.apply_retention()
    assert deleted > 0
    remaining = log.segment_base_offsets
    assert remaining == bases[deleted:]
    assert log.log_start_offset == remaining[0]
    # The first kept segment holds a batch at or after BASE+1500.
    first_kept_max_ts = max(h.max_timestamp for h in iter_batches(log.read(
        remaining[0], 1 << 20).to_bytes()))
    assert first_kept_max_ts > BASE_TS + 1500
    with pytest.raises(OffsetOutOfRange):
        log.read(remaining[0] - 1, 100)
    log.close()


def test_retention_deletes_expired_active_segment_by_rolling(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, retention_ms=1000)
    fill(log, 3)
    clock.now_ms = BASE_TS + 10_000
    assert log.apply_retention() == 1
    assert log.segment_base_offsets == [9]
    assert (log.log_start_offset, log.log_end_offset) == (9, 9)
    assert log.read(9, 100).regions == []
    # An empty active segment is never deleted.
    assert log.apply_retention() == 0
    info = append(log, log_batches.build_sized_batch(1, 5, base_timestamp=clock.now_ms))
    assert info.base_offset == 9
    log.close()


def test_retention_by_bytes(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, retention_bytes=2500)
    fill(log, 40)
    before = log.size_bytes
    assert log.apply_retention() > 0
    # Kafka's rule: drop oldest segments only while what remains is still at
    # least retention.bytes, so the log stays within one segment above it.
    first_segment = log.read(log.log_start_offset, 1 << 20).size
    assert 2500 <= log.size_bytes < before
    assert log.size_bytes - first_segment < 2500
    log.close()


def test_retention_off_for_compact_policy(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, retention_bytes=10,
                   retention_ms=1, cleanup_policy="compact")
    fill(log, 20)
    clock.advance(10**9)
    assert log.apply_retention() == 0
    log.close()


def test_delete_records_advances_start_and_persists(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000)
    stored = fill(log, 30)
    bases = log.segment_base_offsets
    target = bases[2] + 1
    assert log.delete_records_before(target) == target
    assert log.segment_base_offsets == bases[2:]
    # Reading at the new start returns the whole batch that holds it.
    data = log.read(target, 1).to_bytes()
    assert data == stored[bases[2] // 3]
    with pytest.raises(OffsetOutOfRange):
        log.read(target - 1, 100)
    # Lower values do not move it back; beyond the high watermark is refused.
    assert log.delete_records_before(3) == target
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(log.log_end_offset + 1)
    assert log.offset_for_timestamp(0) == (target, BASE_TS + 10 * (bases[2] // 3) + 2)
    log.close()
    reopened = open_log(tmp_path / "t-0", clock, segment_bytes=1000)
    assert reopened.log_start_offset == target
    assert reopened.delete_records_before(-1) == reopened.log_end_offset
    reopened.close()


def test_truncate_to_cuts_at_batch_boundary_and_appends_continue(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, index_interval_bytes=50)
    stored = fill(log, 30)
    log.truncate_to(40)  # offset 40 is inside batch 13 (39..41): it goes entirely
    assert log.log_end_offset == 39
    assert log.read(0, 1 << 20).to_bytes() != b""
    assert max(log.segment_base_offsets) <= 39
    new_batch = log_batches.build_sized_batch(2, 5)
    info = append(log, new_batch)
    assert info.base_offset == 39
    collected, offset = b"", 0
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        collected += data
        offset = iter_batches(data)[-1].next_offset
    assert collected == b"".join(stored[:13]) + new_batch
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=1000), clock,
                                 recover=True)
    assert reopened.log_end_offset == 41
    reopened.close()


def test_truncate_below_first_segment_restarts_log(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000)
    fill(log, 30)
    log.delete_records_before(50)
    log.apply_retention()
    first = log.segment_base_offsets[0]
    log.truncate_to(first - 5)
    assert (log.log_start_offset, log.log_end_offset) == (first - 5, first - 5)
    assert log.segment_base_offsets == [first - 5]
    assert append(log, log_batches.build_sized_batch(1, 5)).base_offset == first - 5
    log.close()


def test_flush_messages_advances_recovery_point(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, flush_interval_messages=4)
    fill(log, 1)  # 3 messages unflushed
    assert log.recovery_point == 0
    fill(log, 1)  # 6 >= 4: flushed
    assert log.recovery_point == 6
    log.close()


def test_flush_ms_is_checked_by_maybe_flush(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, flush_interval_ms=1000)
    fill(log, 2)
    log.maybe_flush()
    assert log.recovery_point == 0
    clock.advance(1000)
    log.maybe_flush()
    assert log.recovery_point == 6
    log.close()


def test_maybe_flush_flushes_rolled_segments(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000)
    fill(log, 30)
    log.maybe_flush()
    assert log.recovery_point == log.segment_base_offsets[-1]
    log.close()


def test_clean_reopen_keeps_everything(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, index_interval_bytes=100)
    stored = fill(log, 30)
    log.close()
    reopened = open_log(tmp_path / "t-0", clock, segment_bytes=1000, index_interval_bytes=100)
    assert reopened.log_end_offset == 90
    assert reopened.recovery_point == 90
    info = append(reopened, log_batches.build_sized_batch(1, 5))
    assert info.base_offset == 90
    assert reopened.read(87, 1).to_bytes() == stored[-1]
    reopened.close()


def test_closed_log_refuses_use(tmp_path, clock):
    from kafkette.log import LogClosed

    log = open_log(tmp_path / "t-0", clock)
    log.close()
    log.close()  # idempotent
    with pytest.raises(LogClosed):
        append(log, log_batches.build_sized_batch(1, 5))
    with pytest.raises(LogClosed):
        log.read(0, 10)


def test_region_outlives_deletion_of_its_segment(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1000, retention_ms=1000)
    stored = fill(log, 30)
    region_info = log.read(0, 1 << 20)
    first_segment = tmp_path / "t-0" / segment_file_name(0, ".log")
    clock.now_ms = BASE_TS + 10**9
    assert log.apply_retention() > 0
    assert not first_segment.exists()
    data = region_info.to_bytes()  # the unlinked file is still readable
    assert data == b"".join(stored[: len(iter_batches(data))])
    log.close()
