"""Transactions in a partition log: LSO, read bounds, the abort index, and its recovery.

The invariant, as for producer state: after any open, crash, truncation or
deletion, the open transactions and every segment's ``.txnindex`` equal what
replaying the log as it now is computes.
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
from kafkette.log.producer_snapshot import SNAPSHOT_SUFFIX
from kafkette.log.transaction_index import (
    ENTRY_SIZE,
    TXN_INDEX_SUFFIX,
    AbortedTxn,
    decode_entries,
)
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import iter_batches, validate_batch
from kafkette.wire.records import ControlRecordType, decode_batches
from tests.log.txn_batches import TxnProducer, append, plain

CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=128)


def open_log(directory: Path, clock, *, recover: bool = False, config=CONFIG) -> PartitionLog:
    return PartitionLog.open(directory, config, clock, recover=recover)


def txn_files(directory: Path) -> dict[int, list[AbortedTxn]]:
    """Every ``.txnindex`` file in ``directory``, decoded (each must be whole)."""
    found = {}
    for path in sorted(directory.glob(f"*{TXN_INDEX_SUFFIX}")):
        data = path.read_bytes()
        assert len(data) % ENTRY_SIZE == 0
        entries, intact = decode_entries(data)
        assert intact
        found[int(path.name.split(".")[0])] = entries
    return found


def index_state(log: PartitionLog) -> dict[int, list[AbortedTxn]]:
    """The in-memory abort entries per segment base (non-empty ones)."""
    return {
        s.base_offset: list(s.txn_index.entries)
        for s in log._segments
        if s.txn_index.entries
    }


def read_offsets(log: PartitionLog, start: int, max_offset: int | None = None) -> list[int]:
    """Offsets of every data record readable from ``start`` (bounded by ``max_offset``)."""
    offsets, position = [], start
    while True:
        info = log.read(position, 1 << 20, max_offset)
        data = info.to_bytes()
        if not data:
            return offsets
        batches = decode_batches(data)
        for header, records in batches:
            if not header.is_control:
                offsets.extend(r.offset for r in records if r.offset >= start)
        position = batches[-1][0].next_offset


def test_lso_open_transactions_and_abort_index(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    p1, p2 = TxnProducer(1), TxnProducer(2)
    append(log, plain(2))  # 0-1
    assert log.last_stable_offset == 2 and log.open_transactions() == []
    base1, _ = append(log, p1.data(3))  # 2-4
    assert base1 == 2
    assert log.last_stable_offset == 2
    assert append(log, p2.data(2)) == (5, 6)
    append(log, p1.data(1))  # 7: extends p1's transaction
    assert log.open_transactions() == [(1, 2), (2, 5)]
    assert log.last_stable_offset == 2
    assert append(log, p1.commit()) == (8, 8)
    assert log.open_transactions() == [(2, 5)]
    assert log.last_stable_offset == 5
    assert log.aborted_transactions(0, log.log_end_offset) == []
    assert txn_files(directory) == {}  # a commit writes no abort entry
    assert append(log, p2.abort()) == (9, 9)
    assert log.open_transactions() == []
    assert log.last_stable_offset == log.high_watermark == 10
    # Kafka's AbortedTxn: producer, first offset, marker offset, LSO after it.
    assert txn_files(directory) == {0: [AbortedTxn(2, 5, 9, 10)]}
    assert log.aborted_transactions(0, 10) == [(2, 5)]
    assert log.aborted_transactions(9, 10) == [(2, 5)]  # lastOffset >= start
    assert log.aborted_transactions(10, 11) == []
    assert log.aborted_transactions(0, 5) == []  # firstOffset < upper bound
    assert log.aborted_transactions(0, 6) == [(2, 5)]
    # The producer's epoch and coordinator epoch are remembered from its marker.
    entry = log.producer_state.table.get(2)
    assert entry is not None and entry.current_txn_first_offset == -1
    assert entry.coordinator_epoch == 0
    log.close()


def test_abort_entry_lso_is_the_earliest_other_open_transaction(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    p1, p2 = TxnProducer(1), TxnProducer(2)
    append(log, p1.data(2))  # 0-1
    append(log, p2.data(2))  # 2-3
    append(log, p2.abort())  # 4: p1 still open at 0
    assert index_state(log) == {0: [AbortedTxn(2, 2, 4, 0)]}
    append(log, p1.abort())  # 5
    assert index_state(log)[0][-1] == AbortedTxn(1, 0, 5, 6)
    # The early stop: the entry for p2 says the LSO was 0 then, so a search
    # with upper bound 0... ends there; with a higher bound both are found.
    assert log.aborted_transactions(0, 6) == [(2, 2), (1, 0)]
    log.close()


def test_read_committed_bound(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    p1 = TxnProducer(1)
    append(log, plain(2))  # 0-1
    append(log, p1.data(2))  # 2-3
    append(log, plain(2))  # 4-5 (after the open transaction)
    lso = log.last_stable_offset
    assert lso == 2
    assert read_offsets(log, 0, lso) == [0, 1]
    assert read_offsets(log, 0) == [0, 1, 2, 3, 4, 5]
    info = log.read(0, 1 << 20, lso)
    assert info.next_offset == 2  # the next fetch position: the upper bound
    empty = log.read(2, 1 << 20, lso)
    assert empty.regions == [] and empty.next_offset == 2
    assert log.read(4, 1 << 20, lso).regions == []  # above the LSO: nothing
    append(log, p1.commit())  # 6
    assert log.last_stable_offset == 7
    assert read_offsets(log, 2, log.last_stable_offset) == [2, 3, 4, 5]
    assert log.read(0, 1 << 20, 7).next_offset == 7
    log.close()


def test_sequence_and_epoch_rules(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    p = TxnProducer(5, epoch=3, coordinator_epoch=4)
    append(log, p.data(2))
    # A non-transactional batch while the producer's transaction is open.
    bad = validate_batch(p.data(1, transactional=False))
    assert log.check_sequence(bad).error == ErrorCode.INVALID_TXN_STATE
    p.sequence -= 1
    # An older epoch, for data and for a marker.
    old = TxnProducer(5, epoch=2)
    assert log.check_sequence(validate_batch(old.data(1))).error == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )
    old_marker = validate_batch(p.marker(ControlRecordType.ABORT, epoch=2))
    assert log.check_sequence(old_marker).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.check_marker(5, 2, 4) == ErrorCode.INVALID_PRODUCER_EPOCH
    # Sequences work as for an idempotent producer: a retry is a duplicate.
    retry = TxnProducer(5, epoch=3)
    assert log.check_sequence(validate_batch(retry.data(2))).duplicate_of is not None
    retry.sequence = 5  # a gap
    assert log.check_sequence(validate_batch(retry.data(1))).error == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    append(log, p.commit())
    # The coordinator epoch of the last marker is remembered: an older one is fenced.
    assert log.check_marker(5, 3, 3) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.check_marker(5, 3, 4) == ErrorCode.NONE
    assert log.check_marker(5, 4, 5) == ErrorCode.NONE
    assert log.check_marker(99, 0, 0) == ErrorCode.NONE  # unknown producer
    # A marker bumping the epoch (an abort on InitProducerId) starts a fresh
    # sequence space: the producer's next batch at that epoch starts at 0.
    append(log, p.marker(ControlRecordType.ABORT, epoch=4, coordinator_epoch=5))
    entry = log.producer_state.table.get(5)
    assert entry is not None and entry.epoch == 4 and entry.coordinator_epoch == 5
    assert list(entry.batches) == []
    # Not 1 (its batch at 0 refused and retried, a later one in flight arrives first):
    # Kafka's inSequence(NO_SEQUENCE, 1) is false. Accepting it left the retried batch
    # at 0 out of order for good (a transactions-v2 producer, whose every transaction
    # starts such an epoch).
    skipped = TxnProducer(5, epoch=4)
    skipped.sequence = 1
    assert log.check_sequence(validate_batch(skipped.data(1))).error == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    bumped = TxnProducer(5, epoch=4)
    append(log, bumped.data(1))
    assert log.open_transactions() == [(5, log.log_end_offset - 1)]
    log.close()


def test_coordinator_writes_without_sequences_open_and_close(tmp_path, clock):
    """TxnOffsetCommit records: transactional, base sequence -1, no sequence bookkeeping."""
    log = open_log(tmp_path / "t-0", clock)
    group_writer = TxnProducer(9, epoch=1)
    base, _ = append(log, group_writer.data(1, keys=[b"g"], sequence=False))
    append(log, group_writer.data(1, keys=[b"g"], sequence=False))
    assert log.open_transactions() == [(9, base)]
    entry = log.producer_state.table.get(9)
    assert entry is not None and list(entry.batches) == []
    append(log, group_writer.commit())
    assert log.open_transactions() == []
    assert log.last_stable_offset == log.log_end_offset
    log.close()


def test_no_abort_index_file_until_an_abort(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    p = TxnProducer(1)
    for _ in range(20):
        append(log, p.data(3))
        append(log, p.commit())
    assert len(log.segment_base_offsets) > 2
    log.close()
    assert not list(directory.glob(f"*{TXN_INDEX_SUFFIX}"))
    reopened = open_log(directory, clock)
    assert index_state(reopened) == {}
    reopened.close()


def write_mixed(log: PartitionLog, rounds: int = 30) -> None:
    """Interleaved transactions of three producers, a third of them aborted, over many segments."""
    producers = [TxnProducer(pid) for pid in (1, 2, 3)]
    for i in range(rounds):
        producer = producers[i % 3]
        append(log, producer.data(2))
        if i % 4 == 1:
            append(log, plain(1))
        if i % 3 == 2:
            finishing = producers[(i // 3) % 3]
            if log.producer_state.table.get(finishing.producer_id).current_txn_first_offset >= 0:
                append(log, finishing.abort() if i % 2 else finishing.commit())


def reference_state(directory: Path, tmp_path: Path, clock) -> tuple:
    """Open transactions and abort indexes of a copy of ``directory`` replayed from
    scratch: no snapshot, no ``.txnindex``."""
    copy = tmp_path / f"reference-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(directory, copy)
    for path in [*copy.glob(f"*{SNAPSHOT_SUFFIX}"), *copy.glob(f"*{TXN_INDEX_SUFFIX}")]:
        path.unlink()
    log = open_log(copy, clock, recover=True)
    try:
        return log.open_transactions(), index_state(log), txn_files(copy)
    finally:
        log.close()


def test_replay_rebuilds_everything_from_the_log(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    write_mixed(log, 60)
    assert len(log.segment_base_offsets) > 3
    live = (log.open_transactions(), index_state(log))
    assert live[0], "the scenario leaves a transaction open"
    assert any(len(v) for v in live[1].values())
    assert reference_state(directory, tmp_path, clock)[:2] == live
    assert txn_files(directory) == live[1]
    # A clean close and reopen: the snapshot carries the open transactions.
    log.close()
    reopened = open_log(directory, clock)
    assert reopened.producer_state.replayed_batches == 0
    assert (reopened.open_transactions(), index_state(reopened)) == live
    reopened.close()


@pytest.mark.parametrize("damage", ["torn-index", "lost-index", "no-snapshots"])
def test_crash_repairs_the_abort_index(tmp_path, clock, damage):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    write_mixed(log, 45)
    log.maybe_flush()  # rolled segments flushed, as the housekeeping tick does
    p = TxnProducer(7)
    append(log, p.data(2))
    abort_offset, _ = append(log, p.abort())  # in the active (unflushed) segment
    active = log.segment_base_offsets[-1]
    live = (log.open_transactions(), index_state(log))
    assert live[1][active][-1].last_offset == abort_offset
    index_path = directory / f"{active:020d}{TXN_INDEX_SUFFIX}"
    # The process dies (no close). What it left on disk is then damaged:
    if damage == "torn-index":  # the entry half written
        size = index_path.stat().st_size
        os.truncate(index_path, size - ENTRY_SIZE // 2)
    elif damage == "lost-index":  # died between the marker's write and its entry's
        data = index_path.read_bytes()[:-ENTRY_SIZE]
        if data:
            index_path.write_bytes(data)
        else:
            index_path.unlink()
    else:
        for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
            path.unlink()
    del log
    reopened = open_log(directory, clock, recover=True)
    assert (reopened.open_transactions(), index_state(reopened)) == live
    assert txn_files(directory) == live[1]
    assert reopened.aborted_transactions(abort_offset, abort_offset + 1) == [(7, abort_offset - 2)]
    reopened.close()


def test_truncation_reopens_and_forgets_transactions(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    p = TxnProducer(1)
    append(log, plain(1))  # 0
    first, _ = append(log, p.data(2))  # 1-2
    abort, _ = append(log, p.abort())  # 3
    assert index_state(log) == {0: [AbortedTxn(1, 1, 3, 4)]}
    log.truncate_to(abort)  # the marker goes: the transaction is open again
    assert index_state(log) == {} and txn_files(directory) == {}
    assert log.open_transactions() == [(1, first)]
    assert log.last_stable_offset == first
    log.truncate_to(first)  # its data goes too
    assert log.open_transactions() == []
    assert log.last_stable_offset == log.log_end_offset == 1
    log.close()


def test_retention_and_delete_records_remove_abort_indexes(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    write_mixed(log, 60)
    p = TxnProducer(8)
    append(log, p.data(1))
    append(log, p.abort())
    with_index = sorted(txn_files(directory))
    assert len(with_index) >= 2
    bases = log.segment_base_offsets
    # DeleteRecords up to the start of the second segment holding an index.
    log.delete_records_before(with_index[1])
    left = set(txn_files(directory))
    assert with_index[0] not in left and with_index[1] in left
    assert all(base >= with_index[1] for base in left)
    assert set(index_state(log)) == left
    assert bases[-1] in log.segment_base_offsets
    log.close()
    reopened = open_log(directory, clock, recover=True)
    assert set(index_state(reopened)) == left
    reopened.close()


def test_open_transaction_keeps_producer_from_expiring(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    open_txn, idle = TxnProducer(1), TxnProducer(2)
    append(log, idle.data(1))
    append(log, idle.commit())
    append(log, open_txn.data(1))
    clock.advance(10 * 86_400_000)
    log.maybe_flush()  # the tick expires idle producers
    assert log.producer_state.table.get(2) is None
    assert log.producer_state.table.get(1) is not None
    assert log.open_transactions() == [(1, 2)]
    log.close()


def test_markers_are_whole_batches_in_reads(tmp_path, clock):
    """A read_committed read hands out markers too: clients skip control batches."""
    log = open_log(tmp_path / "t-0", clock)
    p = TxnProducer(1)
    append(log, p.data(1))
    append(log, p.commit())
    headers = iter_batches(log.read(0, 1 << 20, log.last_stable_offset).to_bytes())
    assert [h.is_control for h in headers] == [False, True]
    log.close()


def test_lso_never_below_the_log_start(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    p = TxnProducer(1)
    first, _ = append(log, p.data(2))
    append(log, plain(2))
    assert log.last_stable_offset == first == 0
    log.delete_records_before(3)  # DeleteRecords inside the open transaction
    assert log.open_transactions() == [(1, 0)]
    assert log.last_stable_offset == 3
    assert log.read(3, 1 << 20, log.last_stable_offset).regions == []
    log.close()


CHILD = Path(__file__).with_name("txn_crash_child.py")


def _run_child_until_killed(directory: Path, acks_wanted: int) -> list[tuple[str, int, int]]:
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory)], stdout=subprocess.PIPE, text=True
    )
    acks = []
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        for line in process.stdout:
            kind, producer_id, offset = line.split()
            acks.append((kind, int(producer_id), int(offset)))
            if len(acks) >= acks_wanted:
                break
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    return acks


def test_kill_9_during_transactions_leaves_state_that_replays(tmp_path, clock):
    """Every reopen after a kill -9 holds the open transactions and abort indexes
    that replaying the whole log computes, and every acknowledged abort is found."""
    directory = tmp_path / "t-0"
    rng = random.Random(11)
    for _ in range(3):
        acks = _run_child_until_killed(directory, rng.randint(30, 150))
        log = open_log(directory, clock, recover=True,
                       config=LogConfig(segment_bytes=2048, index_interval_bytes=256))
        try:
            live = (log.open_transactions(), index_state(log))
            assert reference_state(directory, tmp_path, clock)[:2] == live
            assert txn_files(directory) == live[1]
            aborted = {(e.producer_id, e.last_offset) for v in live[1].values() for e in v}
            for kind, producer_id, offset in acks:
                if kind == "abort" and offset >= log.log_start_offset:
                    assert (producer_id, offset) in aborted
        finally:
            log.close()


@pytest.mark.parametrize("max_bytes", [1, 150, 700, 5000, 1 << 20])
def test_bounded_reads_in_chunks_stop_exactly_at_the_lso(tmp_path, clock, max_bytes):
    log = open_log(tmp_path / "t-0", clock,
                   config=LogConfig(segment_bytes=1 << 20, index_interval_bytes=128))
    p, q = TxnProducer(1), TxnProducer(2)
    bases = []
    for i in range(40):
        bases.append(append(log, plain(1 + i % 3))[0])
        if i == 10:
            bases.append(append(log, q.data(2))[0])
            bases.append(append(log, q.abort())[0])
    lso, _ = append(log, p.data(2))
    for _ in range(20):
        append(log, plain(2))
    assert log.last_stable_offset == lso
    seen, offset = [], 0
    while True:
        info = log.read(offset, max_bytes, log.last_stable_offset)
        headers = iter_batches(info.to_bytes())
        if not headers:
            assert offset == lso and info.next_offset == lso
            break
        assert all(h.base_offset < lso for h in headers)
        assert info.next_offset == headers[-1].next_offset
        seen.extend(h.base_offset for h in headers)
        offset = info.next_offset
    assert seen == bases
    log.close()
