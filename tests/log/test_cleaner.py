"""The log cleaner on real partition logs: latest value per key, offsets kept, tombstones."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from kafkette.log import PartitionLog
from kafkette.log.cleaner import CleanAborted, Throttler, clean_log
from kafkette.log.offset_map import OffsetMap
from kafkette.log.segment_swap import cleaned_path
from kafkette.wire.records import decode_batches
from tests.log.compaction_data import (
    COMPACT,
    all_records,
    append,
    clean,
    keyed_batch,
    latest,
    write_rounds,
)


def test_clean_keeps_latest_value_per_key_at_original_offsets(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    written = write_rounds(log, rounds=10, keys=12)
    end = log.log_end_offset
    before = latest((o, k, v) for o, (k, v) in written.items())
    size_before = log.size_bytes
    stats = clean(log, clock())
    assert stats is not None and stats.groups >= 1
    after = all_records(log)
    assert log.log_end_offset == end
    # Everything in closed segments is unique per key; only the active segment may repeat.
    active = log.segment_base_offsets[-1]
    closed_keys = [k for o, k, _ in after if o < active]
    assert len(closed_keys) == len(set(closed_keys))
    assert latest(after) == before
    for offset, key, value in after:
        assert written[offset] == (key, value)  # same record at the same offset
    assert log.size_bytes < size_before / 2
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=True)
    assert all_records(reopened) == after
    reopened.close()


def test_read_inside_removed_range_returns_next_batch(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=30, keys=4)
    assert clean(log, clock()) is not None
    offsets = [o for o, _, _ in all_records(log)]
    removed = sorted(set(range(log.log_start_offset, log.log_end_offset)) - set(offsets))
    assert len(removed) > 40, "the clean removed too little"
    for gap in removed[::7]:
        position, first = gap, None
        while first is None:  # as a consumer: fetch, skip empty batches, fetch on
            batches = decode_batches(log.read(position, 1 << 16).to_bytes())
            assert batches[0][0].last_offset >= position
            found = [r.offset for _, rs in batches for r in rs if r.offset >= gap]
            first = found[0] if found else None
            position = batches[-1][0].next_offset
        assert first == min(o for o in offsets if o >= gap)
    log.close()


def test_tombstones_kept_until_delete_horizon_then_removed(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=4, keys=8)
    append(log, keyed_batch([(b"key-3", None)], timestamp=clock()))
    write_rounds(log, rounds=2, keys=8)  # pushes the tombstone out of the active segment
    append(log, keyed_batch([(b"key-5", None)], timestamp=clock()))
    log.roll()
    append(log, keyed_batch([(b"other", b"x")]))
    stats = clean(log, clock())
    assert stats.next_delete_horizon_ms == clock() + COMPACT.delete_retention_ms
    records = all_records(log)
    assert latest(records)[b"key-5"][1] is None  # tombstone kept for now
    assert b"key-3" in latest(records)  # re-written later
    clock.advance(COMPACT.delete_retention_ms + 1)
    clean(log, clock())
    records = all_records(log)
    assert b"key-5" not in latest(records)
    assert all(k != b"key-5" for _, k, _ in records)
    log.close()


def test_idempotent_empty_batches_keep_headers_the_table_remembers(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    for seq in range(20):
        append(log, keyed_batch([(b"k", b"v%d" % seq)], producer_id=7, base_sequence=seq))
    log.roll()
    clean(log, clock())
    data = log.read(log.log_start_offset, 1 << 20).to_bytes()
    batches = decode_batches(data)
    remembered = {b.last_offset for b in log.producer_state.table.get(7).batches}
    kept_empty = {h.last_offset for h, records in batches if not records}
    assert kept_empty <= remembered and len(kept_empty) == 4  # 5 remembered, 1 holds the value
    assert [r.value for _, rs in batches for r in rs] == [b"v19"]
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=True)
    entry = reopened.producer_state.table.get(7)
    assert entry.batches[-1].last_sequence == 19
    reopened.close()


def test_small_offset_map_cleans_in_several_passes(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    written = write_rounds(log, rounds=6, keys=40)
    expected = latest((o, k, v) for o, (k, v) in written.items())
    checkpoint, passes = 0, 0
    while passes < 50:
        stats = clean(log, clock(), checkpoint=checkpoint, memory=24 * 30)
        if stats is None:
            break
        assert stats.end_offset > checkpoint
        checkpoint, passes = stats.end_offset, passes + 1
    assert passes > 1
    assert latest(all_records(log)) == expected
    log.close()


def test_aborted_clean_leaves_log_untouched(tmp_path, clock):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=20, keys=8)
    assert len(log.segment_base_offsets) > 2
    before = all_records(log)
    abort = threading.Event()
    abort.set()
    with pytest.raises(CleanAborted):
        clean_log(log, 0, OffsetMap(1 << 20), clock(), Throttler(1e308, abort))
    assert all_records(log) == before
    assert not cleaned_path(log.directory, 0).exists()
    log.close()


def test_recovery_completes_a_swap_and_drops_a_cleaned_file(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, COMPACT, clock, recover=False)
    write_rounds(log, rounds=6, keys=8)
    bases = log.segment_base_offsets
    expected = latest(all_records(log))
    log.close()
    # A half-done swap: the cleaned copy of the first two segments committed as .swap,
    # the second old segment already renamed to .deleted, the first still in place.
    scratch = tmp_path / "scratch"
    import shutil

    shutil.copytree(directory, scratch)
    cleaner_log = PartitionLog.open(scratch, COMPACT, clock, recover=False)
    clean(cleaner_log, clock())
    cleaner_log.close()
    clean_copy = (scratch / f"{bases[0]:020d}.log").read_bytes()
    first_clean_batches = decode_batches(clean_copy)
    covered_end = first_clean_batches[-1][0].next_offset
    swap = directory / f"{bases[0]:020d}.log.swap"
    swap.write_bytes(clean_copy)
    for base in bases[1:]:
        if base < covered_end:
            old = directory / f"{base:020d}.log"
            old.rename(old.with_name(old.name + ".deleted"))
    (directory / f"{bases[-1]:020d}.log.cleaned").write_bytes(b"garbage")
    reopened = PartitionLog.open(directory, COMPACT, clock, recover=True)
    assert latest(all_records(reopened)) == expected
    names = sorted(p.name for p in directory.iterdir())
    assert not [n for n in names if n.endswith((".swap", ".cleaned", ".deleted"))]
    reopened.close()


def test_reads_and_appends_while_cleaning_see_every_surviving_record(tmp_path, clock):
    """A reader racing the swaps never skips a record that survives (it retries a
    segment replaced under it) and appends go on into the active segment."""
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=10, keys=12)
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            seen = all_records(log)
            last = latest(seen)
            if len(last) != 12 and not failures:
                failures.append(f"a reader saw {len(last)} keys")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(10):
            write_rounds(log, rounds=2, keys=12)
            log.roll()
            clean(log, clock())
            assert not failures, failures
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert not failures, failures
    records = all_records(log)
    assert latest(records) == {
        f"key-{k}".encode(): latest(records)[f"key-{k}".encode()] for k in range(12)
    }
    log.close()


def test_retention_delete_records_and_list_offsets_on_compacted_logs(tmp_path, clock):
    config = replace(COMPACT, cleanup_policy="compact,delete", retention_bytes=4096)
    log = PartitionLog.open(tmp_path / "t-0", config, clock, recover=False)
    write_rounds(log, rounds=30, keys=6)
    clean(log, clock())
    # ListOffsets by timestamp answers the first batch at or after it (a kept empty
    # batch too: the broker then reads on to the first record); offsets stay. A read
    # moves past a segment's tail of empty batches, so the first batch read may be later.
    first_batch = decode_batches(log.read(log.log_start_offset, 1).to_bytes())[0][0]
    assert first_batch.base_offset > log.log_start_offset  # the clean left a gap at the start
    found = log.offset_for_timestamp(0)
    assert found is not None and log.log_start_offset < found[0] <= first_batch.base_offset
    write_rounds(log, rounds=20, keys=6)  # not cleaned yet: over retention.bytes
    assert log.size_bytes > 4096
    assert log.apply_retention() > 0  # delete still applies to compact,delete
    assert log.size_bytes <= 4096 + config.segment_bytes and log.log_start_offset > 0
    records = all_records(log)
    assert records
    # DeleteRecords inside a removed range moves the start; reads go on from there.
    target = records[len(records) // 2][0]
    log.delete_records_before(target)
    assert all(o >= target for o, _, _ in all_records(log))
    log.close()
    compact_only = PartitionLog.open(
        tmp_path / "t-1", replace(COMPACT, retention_ms=1),
        clock, recover=False,
    )
    write_rounds(compact_only, rounds=30, keys=6)
    clock.advance(10_000)
    assert compact_only.apply_retention() == 0  # compact alone: no time/size retention
    compact_only.close()


def test_cleaned_segment_indexes_equal_a_rebuild(tmp_path, clock):
    directory = tmp_path / "t-0"
    # An interval below one header: every segment, even a header-only one, is indexed.
    config = replace(COMPACT, segment_bytes=16384, index_interval_bytes=16)
    log = PartitionLog.open(directory, config, clock, recover=False)
    write_rounds(log, rounds=60, keys=30)
    assert clean(log, clock()) is not None
    log.close()
    indexes = {p.name: p.read_bytes() for p in directory.glob("*index")}
    assert any(indexes.values())
    for path in directory.glob("*index"):
        path.unlink()
    rebuilt = PartitionLog.open(directory, config, clock, recover=True)
    rebuilt.close()
    assert {p.name: p.read_bytes() for p in directory.glob("*index")} == indexes


def test_throttle_holds_cleaner_io_to_the_rate(tmp_path, clock):
    import time

    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=40, keys=8)
    size = log.size_bytes
    rate = size / 0.5  # reads alone take at least ~0.5 s at this rate
    started = time.monotonic()
    stats = clean_log(log, 0, OffsetMap(1 << 20), clock(), Throttler(rate, threading.Event()))
    took = time.monotonic() - started
    assert stats is not None and stats.bytes_read >= size
    assert took >= 0.8 * (stats.bytes_read + stats.bytes_written) / rate - 0.1
    log.close()


def test_manager_picks_by_dirty_ratio_and_moves_the_checkpoint(tmp_path, clock):
    from kafkette.log.cleaner import CleanerConfig
    from kafkette.log.cleaner_checkpoint import CLEANER_CHECKPOINT_FILE, read_cleaner_checkpoint
    from kafkette.log.cleaner_manager import LogCleanerManager

    lazy = replace(COMPACT, min_cleanable_dirty_ratio=0.9)
    dirty = PartitionLog.open(tmp_path / "a-0", COMPACT, clock, recover=False)
    delete_only = PartitionLog.open(
        tmp_path / "b-0", replace(COMPACT, cleanup_policy="delete"),
        clock, recover=False,
    )
    for log in (dirty, delete_only):
        write_rounds(log, rounds=20, keys=8)
    manager = LogCleanerManager(tmp_path, CleanerConfig(), clock)
    logs = [("a", 0, dirty), ("b", 0, delete_only)]
    stats = manager.clean_one(logs, threading.Event())
    assert stats is not None
    checkpoint = read_cleaner_checkpoint(tmp_path / CLEANER_CHECKPOINT_FILE)
    assert checkpoint == {("a", 0): stats.end_offset}
    assert manager.clean_one(logs, threading.Event()) is None  # clean now; b is not compacted
    # A little new data: dirty ratio below 0.9 -> not cleaned under the lazy config.
    dirty.update_config(lazy)
    write_rounds(dirty, rounds=1, keys=8)
    dirty.roll()
    assert manager.clean_one(logs, threading.Event()) is None
    dirty.update_config(COMPACT)
    assert manager.clean_one(logs, threading.Event()) is not None
    dirty.close()
    delete_only.close()


def test_max_compaction_lag_rolls_the_active_segment(tmp_path, clock):
    config = replace(COMPACT, segment_bytes=1 << 20, max_compaction_lag_ms=1000)
    assert config.roll_ms == 1000
    assert replace(config, cleanup_policy="delete").roll_ms == (
        config.segment_ms
    )
    log = PartitionLog.open(tmp_path / "t-0", config, clock, recover=False)
    append(log, keyed_batch([(b"k", b"1")], timestamp=clock()))
    append(log, keyed_batch([(b"k", b"2")], timestamp=clock() + 500))
    assert len(log.segment_base_offsets) == 1
    append(log, keyed_batch([(b"k", b"3")], timestamp=clock() + 1500))
    assert len(log.segment_base_offsets) == 2  # the lag forced a roll: now cleanable
    log.close()


def test_pace_runs_after_each_group_and_may_stop_the_clean(tmp_path, clock):
    """The broker waits between groups (LogCleanerManager); a stop there leaves a whole log."""
    from kafkette.log.cleaner import CleanSession, clean_log_with

    def session(job):
        return CleanSession(job, OffsetMap(1 << 20), Throttler(1e308, threading.Event()))

    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    written = write_rounds(log, rounds=10, keys=12)
    before = latest((o, k, v) for o, (k, v) in written.items())
    waits: list[float] = []
    stats = clean_log_with(log, 0, clock(), session, pace=waits.append)
    assert stats is not None and stats.groups >= 2
    assert len(waits) == stats.groups and all(seconds >= 0 for seconds in waits)
    assert latest(all_records(log)) == before

    other = PartitionLog.open(tmp_path / "u-0", COMPACT, clock, recover=False)
    written = write_rounds(other, rounds=10, keys=12)
    before = latest((o, k, v) for o, (k, v) in written.items())

    def stop(_seconds: float) -> None:
        raise CleanAborted("broker stopping")

    with pytest.raises(CleanAborted):
        clean_log_with(other, 0, clock(), session, pace=stop)
    assert latest(all_records(other)) == before  # the first group swapped, the rest as written
    assert not list(other.directory.glob("*.cleaned")) and not list(other.directory.glob("*.swap"))
    other.close()
    reopened = PartitionLog.open(tmp_path / "u-0", COMPACT, clock, recover=True)
    assert latest(all_records(reopened)) == before
    reopened.close()
    log.close()
