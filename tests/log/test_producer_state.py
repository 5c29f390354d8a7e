"""Producer state of a partition log: snapshot files, corrupt ones ignored, rebuild by replay.

The invariant behind every test here: the table a log holds after any open,
crash or truncation equals the table built by replaying every batch header
of the log as it now is (what a log with no snapshot at all rebuilds).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kafkette.log import LogConfig, PartitionLog
from kafkette.log.producer_snapshot import (
    SNAPSHOT_SUFFIX,
    InvalidSnapshot,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    read_snapshot,
    snapshot_file_name,
    write_snapshot,
)
from kafkette.log.producer_state import ProducerStateTable
from kafkette.log.producer_state_manager import SNAPSHOTS_KEPT
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches

CONFIG = dict(segment_bytes=1024, index_interval_bytes=128)
CHILD = Path(__file__).with_name("producer_crash_child.py")


class Producer:
    """Builds the consecutive batches of one idempotent producer."""

    def __init__(self, producer_id: int, epoch: int = 0) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.sequence = 0

    def next(self, count: int = 3) -> bytearray:
        batch = log_batches.build_idempotent_batch(
            self.producer_id, self.epoch, self.sequence, count
        )
        self.sequence += count
        return batch


def append(log: PartitionLog, batch: bytearray) -> int:
    return log.append(batch, [validate_batch(batch)]).base_offset


def state_of(table: ProducerStateTable) -> dict:
    """The table without append times (a replay stamps them with its own clock)."""
    return {
        producer_id: (
            entry.epoch,
            [(b.first_sequence, b.last_sequence, b.base_offset, b.last_offset)
             for b in entry.batches],
        )
        for producer_id, entry in table.items()
    }


def state_from_full_replay(directory: Path, tmp_path: Path, clock) -> dict:
    """Open a copy of ``directory`` without its snapshots: every header is replayed."""
    copy = tmp_path / f"replay-{random.randrange(1 << 30)}"
    shutil.copytree(directory, copy)
    for path in copy.glob(f"*{SNAPSHOT_SUFFIX}"):
        path.unlink()
    log = PartitionLog.open(copy, LogConfig(**CONFIG), clock, recover=True)
    try:
        assert log.producer_state.loaded_snapshot is None
        return state_of(log.producer_state.table)
    finally:
        log.close(flush=False)


def fill(log: PartitionLog, producers: list[Producer], batches: int, seed: int = 1) -> list:
    """Append ``batches`` batches from the producers in a seeded order, with a few
    non-idempotent batches in between; returns (producer, batch bytes, base offset)."""
    rng = random.Random(seed)
    appended = []
    for i in range(batches):
        if i % 7 == 3:
            append(log, log_batches.build_sized_batch(2, 20, seed=i))
            continue
        producer = rng.choice(producers)
        batch = producer.next(rng.randint(1, 4))
        appended.append((producer, bytes(batch), append(log, batch)))
    return appended


def open_log(directory: Path, clock, *, recover: bool = False) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(**CONFIG), clock, recover=recover)


# ---------------------------------------------------------------- snapshot files


def _sample_table() -> ProducerStateTable:
    table = ProducerStateTable()
    offset = 0
    for producer_id, epoch, batches in ((7, 2, 8), (3, 0, 1), (2**40, 5, 5)):
        producer = Producer(producer_id, epoch)
        for _ in range(batches):
            header = validate_batch(producer.next(3))
            table.record(header, offset, 1_700_000_000_000 + offset)
            offset += header.last_offset_delta + 1
    return table


def test_snapshot_round_trip_keeps_every_remembered_batch(tmp_path) -> None:
    table = _sample_table()
    write_snapshot(tmp_path, 1234, table, sync=True)
    assert (tmp_path / "00000000000000001234.snapshot").exists()
    assert snapshot_file_name(1234) == "00000000000000001234.snapshot"
    assert list_snapshots(tmp_path) == [1234]
    loaded = read_snapshot(tmp_path, 1234)
    assert state_of(loaded) == state_of(table)
    assert len(state_of(loaded)[7][1]) == 5  # the last five of eight batches
    for producer_id, entry in table.items():
        assert loaded.get(producer_id).last_append_ms == entry.last_append_ms
    assert encode_snapshot(1234, loaded) == encode_snapshot(1234, table)
    assert not list(tmp_path.glob("*.tmp"))


def test_every_flipped_byte_or_cut_of_a_snapshot_is_refused() -> None:
    data = encode_snapshot(99, _sample_table())
    for position in range(len(data)):
        for bit in (0x01, 0x80):
            damaged = bytearray(data)
            damaged[position] ^= bit
            with pytest.raises(InvalidSnapshot):
                decode_snapshot(bytes(damaged), 99)
    for length in range(len(data)):
        with pytest.raises(InvalidSnapshot):
            decode_snapshot(data[:length], 99)
    with pytest.raises(InvalidSnapshot):
        decode_snapshot(data + b"\0", 99)
    with pytest.raises(InvalidSnapshot):
        decode_snapshot(data, 100)  # renamed: holds another offset
    assert state_of(decode_snapshot(data, 99)) == state_of(_sample_table())


# ------------------------------------------------------- a log's snapshots and rebuild


def test_snapshots_at_roll_and_close_and_a_clean_open_replays_nothing(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    producers = [Producer(1), Producer(2)]
    appended = fill(log, producers, 60)
    bases = log.segment_base_offsets
    assert len(bases) > SNAPSHOTS_KEPT + 1
    # One snapshot per roll (at the new segment's base), the newest few kept.
    assert list_snapshots(directory) == bases[-SNAPSHOTS_KEPT:]
    live = state_of(log.producer_state.table)
    end = log.log_end_offset
    log.close()
    assert list_snapshots(directory)[-1] == end

    reopened = open_log(directory, clock)
    assert reopened.producer_state.loaded_snapshot == end
    assert reopened.producer_state.replayed_batches == 0
    assert state_of(reopened.producer_state.table) == live
    # A retry of any of a producer's last five batches is answered as a duplicate.
    for _producer, batch, base in appended[-5:]:
        verdict = reopened.check_sequence(validate_batch(bytearray(batch)))
        assert verdict.duplicate_of is not None and verdict.duplicate_of.base_offset == base
    # And each producer continues where it was.
    for producer in producers:
        assert reopened.check_sequence(validate_batch(producer.next(2))).append
    reopened.close()


def test_crash_rebuilds_from_newest_snapshot_plus_replay(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    fill(log, [Producer(1), Producer(2), Producer(3)], 80)
    live = state_of(log.producer_state.table)
    active_base = log.segment_base_offsets[-1]
    batches_in_active = sum(1 for _ in log_batches_in(log, active_base))
    # The housekeeping tick flushed the rolled segments (as it does at least
    # once a minute): only the active segment is unflushed. (Recovery replays
    # from a snapshot at or below the first unflushed segment, as Kafka's
    # recoverSegment, so that its abort index is recomputed.)
    log.maybe_flush()
    # The process dies: no close, no snapshot at the log end.
    reopened = open_log(directory, clock, recover=True)
    assert reopened.producer_state.loaded_snapshot == active_base
    assert reopened.producer_state.replayed_batches == batches_in_active
    assert state_of(reopened.producer_state.table) == live
    assert live == state_from_full_replay(directory, tmp_path, clock)
    reopened.close()
    del log


def log_batches_in(log: PartitionLog, start: int):
    """Headers of every batch from ``start`` to the log end."""
    offset = start
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        headers = iter_batches(data)
        yield from headers
        offset = headers[-1].next_offset


@pytest.mark.parametrize("damage", ["flip", "torn", "empty", "garbage"])
def test_corrupt_snapshot_is_ignored_and_state_rebuilt(tmp_path, clock, caplog, damage) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    fill(log, [Producer(1), Producer(2)], 50)
    live = state_of(log.producer_state.table)
    end = log.log_end_offset
    log.close()
    newest = directory / snapshot_file_name(end)
    data = bytearray(newest.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x10
    elif damage == "torn":
        data = data[: len(data) - 7]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(os.urandom(len(data)))
    newest.write_bytes(data)

    reopened = open_log(directory, clock)
    assert state_of(reopened.producer_state.table) == live
    assert reopened.producer_state.loaded_snapshot < end
    assert reopened.producer_state.replayed_batches > 0
    assert not newest.exists()  # refused once, then deleted
    assert "ignoring producer snapshot" in caplog.text
    reopened.close()


def test_truncation_rebuilds_state_of_the_prefix(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    producer = Producer(5)
    appended = []
    for _ in range(40):
        batch = producer.next(3)
        appended.append((bytes(batch), append(log, batch)))
    assert len(log.segment_base_offsets) > 3
    cut_batch, cut_offset = appended[25]
    log.truncate_to(cut_offset)
    assert log.log_end_offset == cut_offset
    assert all(offset <= cut_offset for offset in list_snapshots(directory))
    table = log.producer_state.table
    # The batch at the cut and everything after it are gone: its retry is appended again.
    assert log.check_sequence(validate_batch(bytearray(cut_batch))).append
    later_batch, _ = appended[30]
    verdict = log.check_sequence(validate_batch(bytearray(later_batch)))
    assert verdict.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # The batch before the cut is still a duplicate, answered with its offset.
    before_batch, before_offset = appended[24]
    verdict = log.check_sequence(validate_batch(bytearray(before_batch)))
    assert verdict.duplicate_of is not None and verdict.duplicate_of.base_offset == before_offset
    assert state_of(table) == state_from_full_replay(directory, tmp_path, clock)
    # Appends go on from the prefix; a restart agrees.
    append(log, bytearray(cut_batch))
    live = state_of(log.producer_state.table)
    log.close()
    reopened = open_log(directory, clock)
    assert state_of(reopened.producer_state.table) == live
    reopened.close()


def test_truncation_below_the_first_segment_forgets_every_producer(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    fill(log, [Producer(1)], 30)
    log.delete_records_before(log.segment_base_offsets[2])
    log.apply_retention()
    first = log.segment_base_offsets[0]
    log.truncate_to(first - 1)
    assert len(log.producer_state.table) == 0
    assert list_snapshots(directory) == []
    log.close()


def test_snapshots_above_the_recovered_log_end_are_deleted(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    fill(log, [Producer(1), Producer(2)], 40)
    bases = log.segment_base_offsets
    del log  # crash
    # As after a power loss: the last two segments are gone, their snapshots not.
    for base in bases[-2:]:
        for suffix in (".log", ".index", ".timeindex"):
            # index files are created at their first entry: they may not exist
            (directory / f"{base:020d}{suffix}").unlink(missing_ok=True)
    reopened = open_log(directory, clock, recover=True)
    end = reopened.log_end_offset
    assert end == bases[-2]
    assert all(offset <= end for offset in list_snapshots(directory))
    assert state_of(reopened.producer_state.table) == state_from_full_replay(
        directory, tmp_path, clock
    )
    reopened.close()


def test_deleting_segments_deletes_their_snapshots_but_keeps_producers(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    quiet = Producer(1)
    append(log, quiet.next(2))
    fill(log, [Producer(2)], 40)
    live = state_of(log.producer_state.table)
    log.delete_records_before(log.log_end_offset)  # DeleteRecords up to the end
    first = log.segment_base_offsets[0]
    assert all(offset >= first for offset in list_snapshots(directory))
    # As in Kafka (KIP-360): the quiet producer's data is gone but its state stays,
    # so its next batch continues in sequence.
    assert state_of(log.producer_state.table) == live
    assert log.check_sequence(validate_batch(quiet.next(1))).append
    log.close()
    reopened = open_log(directory, clock)
    assert state_of(reopened.producer_state.table) == live
    reopened.close()


def test_idle_producers_expire(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(
        directory, LogConfig(**CONFIG, producer_id_expiration_ms=60_000), clock, recover=False
    )
    old, recent = Producer(1), Producer(2)
    append(log, old.next())
    clock.advance(30_000)
    append(log, recent.next())
    clock.advance(30_000)
    log.maybe_flush()
    assert log.producer_state.table.get(1) is None
    assert log.producer_state.table.get(2) is not None
    # Unknown again, so (KIP-360) any sequence is accepted from it.
    assert log.check_sequence(validate_batch(old.next())).append
    log.close()
    reopened = PartitionLog.open(directory, LogConfig(**CONFIG), clock, recover=False)
    assert reopened.producer_state.table.get(1) is None
    reopened.close()


def test_fencing_and_out_of_order_survive_a_restart(tmp_path, clock) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    producer = Producer(9, epoch=3)
    append(log, producer.next())
    del log  # crash
    reopened = open_log(directory, clock, recover=True)
    stale = log_batches.build_idempotent_batch(9, 2, 0, 1)
    assert reopened.check_sequence(validate_batch(stale)).error == ErrorCode.INVALID_PRODUCER_EPOCH
    gap = log_batches.build_idempotent_batch(9, 3, producer.sequence + 1, 1)
    verdict = reopened.check_sequence(validate_batch(gap))
    assert verdict.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    reopened.close()


# ------------------------------------------------------------------------ kill -9


def _run_child_until_killed(directory: Path, acks_wanted: int) -> list[tuple[int, int, int, int]]:
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory)], stdout=subprocess.PIPE, text=True
    )
    acks = []
    try:
        ready = process.stdout.readline().split()
        assert ready and ready[0] == "ready", ready
        for line in process.stdout:
            acks.append(tuple(map(int, line.split())))
            if len(acks) >= acks_wanted:
                break
        os.kill(process.pid, signal.SIGKILL)
        for line in process.stdout:
            acks.append(tuple(map(int, line.split())))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return acks


def test_kill_9_at_any_moment_leaves_state_that_loads(tmp_path, clock) -> None:
    """Tiny segments: nearly every append rolls and writes a snapshot, so kills land
    inside snapshot writes; every reopen must rebuild exactly the replayed state."""
    directory = tmp_path / "t-0"
    rng = random.Random(7)
    for _ in range(4):
        acks = _run_child_until_killed(directory, rng.randint(20, 200))
        assert acks
        log = open_log(directory, clock, recover=True)
        try:
            assert not list(directory.glob("*.tmp"))
            assert all(o <= log.log_end_offset for o in list_snapshots(directory))
            assert state_of(log.producer_state.table) == state_from_full_replay(
                directory, tmp_path, clock
            )
            # Each producer's last acknowledged batches are duplicates (four, not five:
            # one batch may have been written but not acknowledged before the kill).
            last_five: dict[int, list] = {}
            for producer_id, sequence, count, base in acks:
                last_five.setdefault(producer_id, []).append((sequence, count, base))
            for producer_id, batches in last_five.items():
                for sequence, count, base in batches[-4:]:
                    retry = log_batches.build_idempotent_batch(producer_id, 0, sequence, count)
                    verdict = log.check_sequence(validate_batch(retry))
                    assert verdict.duplicate_of is not None, (producer_id, sequence)
                    assert verdict.duplicate_of.base_offset == base
        finally:
            log.close(flush=False)

