"""What replication needs from the log: follower appends, leader epochs, high watermark.

Real files on disk throughout. A "leader" PartitionLog is written through
``append`` with the epoch stamped in the bytes (as the produce handler does);
a "follower" copies it through ``append_as_follower`` with whatever
``read`` returns, as the replica fetcher does.
"""

from __future__ import annotations

import itertools
import logging

import pytest

from kafkette.log import DataDir, LogConfig, OffsetOutOfRange, PartitionLog
from kafkette.log.checkpoint import CHECKPOINT_FILE_NAME
from kafkette.log.config import INT_MAX
from kafkette.log.errors import OffsetMismatch
from kafkette.log.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT_FILE, epoch_starts
from kafkette.log.replication_checkpoint import REPLICATION_CHECKPOINT_FILE
from kafkette.log.segment import LOG_SUFFIX, LogSegment
from kafkette.wire.record_batch import (
    iter_batches,
    patch_base_offset,
    patch_leader_epoch,
    read_header,
)
from tests.log.compaction_data import COMPACT, all_records, clean, write_rounds
from tests.log.log_batches import build_batch, build_idempotent_batch, build_sized_batch
from tests.log.txn_batches import TxnProducer, plain

SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=256)


def open_log(path, clock, config=SMALL, *, recover=False) -> PartitionLog:
    return PartitionLog.open(path, config, clock, recover=recover)


def lead(log: PartitionLog, batch: bytearray, epoch: int) -> tuple[int, int]:
    """Append as the produce handler does: header parsed first, epoch stamped after."""
    header = read_header(batch)
    patch_leader_epoch(batch, epoch)
    info = log.append(batch, [header])
    return info.base_offset, info.last_offset


def log_bytes(log: PartitionLog) -> bytes:
    """Every batch from the log start to the log end, as reads return them."""
    out = bytearray()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        assert data, f"nothing at {offset} below the log end {log.log_end_offset}"
        out += data
        offset = iter_batches(data, validate=False)[-1].next_offset
    return bytes(out)


def replicate(leader: PartitionLog, follower: PartitionLog, fetch_bytes: int = 1500) -> int:
    """Copy the leader's batches the follower lacks, fetch by fetch; returns fetches made."""
    fetches = 0
    while follower.log_end_offset < leader.log_end_offset:
        data = bytearray(leader.read(follower.log_end_offset, fetch_bytes).to_bytes())
        assert data
        follower.append_as_follower(data)
        fetches += 1
    return fetches


def batch_epochs(log: PartitionLog) -> list[tuple[int, int]]:
    return [(h.partition_leader_epoch, h.base_offset) for h in iter_batches(log_bytes(log))]


def assert_same_log(leader: PartitionLog, follower: PartitionLog) -> None:
    assert follower.log_end_offset == leader.log_end_offset
    assert log_bytes(follower) == log_bytes(leader)
    assert follower.leader_epoch_cache.entries() == leader.leader_epoch_cache.entries()
    assert follower.abort_index_entries() == leader.abort_index_entries()
    assert follower.open_transactions() == leader.open_transactions()
    assert follower.producer_batch_offsets() == leader.producer_batch_offsets()
    assert follower.last_stable_offset == leader.last_stable_offset


def write_mixed(leader: PartitionLog) -> None:
    """Plain, idempotent and transactional batches (one aborted, one left open)
    across three leader epochs and several segments."""
    txn = TxnProducer(producer_id=900)
    for i in range(6):
        lead(leader, build_sized_batch(1 + i % 3, 300, seed=i), 0)
    for seq in range(0, 12, 3):
        lead(leader, build_idempotent_batch(77, 0, seq, 3), 3)
    lead(leader, txn.data(2), 3)
    lead(leader, plain(1), 3)
    lead(leader, txn.abort(), 3)
    lead(leader, txn.data(3), 7)
    lead(leader, txn.commit(), 7)
    for i in range(5):
        lead(leader, build_sized_batch(2, 400, seed=50 + i), 7)
    lead(leader, txn.data(1), 7)  # still open: LSO < LEO


# ----------------------------------------------------------- follower appends


def test_follower_copy_is_byte_identical(tmp_path, clock):
    leader = open_log(tmp_path / "leader" / "t-0", clock)
    follower = open_log(tmp_path / "follower" / "t-0", clock)
    write_mixed(leader)
    assert leader.leader_epoch_cache.entries()[0] == (0, 0)
    assert [e for e, _ in leader.leader_epoch_cache.entries()] == [0, 3, 7]
    assert replicate(leader, follower) > 3
    assert_same_log(leader, follower)
    assert len(follower.segment_base_offsets) > 1
    assert follower.last_stable_offset < follower.log_end_offset
    assert len(follower.abort_index_entries()) == 1
    # The follower's producer table deduplicates a retry the leader acknowledged.
    retry = read_header(build_idempotent_batch(77, 0, 9, 3))
    assert not follower.check_sequence(retry).append

    # After a restart (clean, then unclean) nothing differs.
    follower.close()
    follower = open_log(tmp_path / "follower" / "t-0", clock)
    assert_same_log(leader, follower)
    follower.close()
    (tmp_path / "follower" / "t-0" / CHECKPOINT_FILE_NAME).unlink()
    follower = open_log(tmp_path / "follower" / "t-0", clock, recover=True)
    assert_same_log(leader, follower)


def test_follower_keeps_the_leaders_log_append_time(tmp_path, clock):
    config = LogConfig(segment_bytes=4096, message_timestamp_type="LogAppendTime")
    leader = open_log(tmp_path / "leader" / "t-0", clock, config)
    follower = open_log(tmp_path / "follower" / "t-0", clock, config)
    for _i in range(4):
        lead(leader, build_batch([b"x" * 20, b"y"]), 1)
        clock.advance(1000)
    replicate(leader, follower)
    assert log_bytes(follower) == log_bytes(leader)
    stamps = {h.max_timestamp for h in iter_batches(log_bytes(follower))}
    assert len(stamps) == 4 and max(stamps) < clock()  # the leader's times, not the follower's


def test_follower_copies_a_compacted_log_with_offset_gaps(tmp_path, clock):
    leader = open_log(tmp_path / "leader" / "t-0", clock, COMPACT)
    write_rounds(leader, rounds=1, keys=12)
    write_rounds(leader, rounds=6, keys=4)  # keys 0-3 only: their older batches go whole
    written = write_rounds(leader, rounds=2, keys=12)
    write_rounds(leader, rounds=3, keys=4)
    leader.roll()
    assert clean(leader, clock()) is not None
    present = {offset for offset, _, _ in all_records(leader)}
    gaps = [o for o in range(leader.log_end_offset) if o not in present]
    assert len(gaps) > len(written)  # the cleaner removed most offsets
    headers = iter_batches(log_bytes(leader))
    assert headers[0].base_offset > 0  # a gap before the first batch
    assert any(b.base_offset > a.next_offset for a, b in itertools.pairwise(headers))

    follower = open_log(tmp_path / "follower" / "t-0", clock, COMPACT)
    replicate(leader, follower, fetch_bytes=700)
    assert log_bytes(follower) == log_bytes(leader)
    assert all_records(follower) == all_records(leader)
    # A consumer positioned inside a gap gets the next batch, as from the leader.
    for offset in gaps:
        assert (
            follower.read(offset, 1).to_bytes() == leader.read(offset, 1).to_bytes()
        )
    follower.close()
    (tmp_path / "follower" / "t-0" / CHECKPOINT_FILE_NAME).unlink()
    follower = open_log(tmp_path / "follower" / "t-0", clock, COMPACT, recover=True)
    assert log_bytes(follower) == log_bytes(leader)


def test_follower_append_below_the_log_end_is_refused(tmp_path, clock):
    leader = open_log(tmp_path / "leader" / "t-0", clock)
    follower = open_log(tmp_path / "follower" / "t-0", clock)
    for _i in range(3):
        lead(leader, build_batch([b"a", b"b"]), 0)
    replicate(leader, follower)
    size = follower.size_bytes
    again = bytearray(leader.read(2, 1 << 20).to_bytes())  # offsets 2.. already present
    with pytest.raises(OffsetMismatch) as raised:
        follower.append_as_follower(again)
    assert raised.value.offset == 2 and raised.value.expected_at_least == 6
    assert isinstance(raised.value, ValueError)
    # Offsets going backwards inside one append.
    first, second = build_batch([b"x"]), build_batch([b"y"])
    patch_base_offset(first, 10)
    patch_base_offset(second, 8)
    with pytest.raises(OffsetMismatch):
        follower.append_as_follower(first + second)
    assert follower.log_end_offset == 6 and follower.size_bytes == size
    # A gap forward is fine.
    patch_base_offset(second, 40)
    follower.append_as_follower(second)
    assert follower.log_end_offset == 41


def test_a_follower_rolls_at_the_first_offset_after_a_gap(tmp_path, clock):
    config = LogConfig(segment_bytes=300, index_interval_bytes=64)
    follower = open_log(tmp_path / "t-0", clock, config)
    expected: dict[int, bytes] = {}  # base offset -> batch bytes
    offset = 0
    for i in range(12):
        batch = build_batch([b"r%d" % i] * 2)
        offset += 5  # five offsets compacted away before each batch
        patch_base_offset(batch, offset)
        patch_leader_epoch(batch, i // 4)
        follower.append_as_follower(batch)
        expected[offset] = bytes(batch)
        offset += 2
    bases = follower.segment_base_offsets
    assert len(bases) > 3
    assert set(bases[1:]) <= set(expected)  # each new segment begins at a batch, not the gap

    def check(log: PartitionLog) -> None:
        assert log.log_end_offset == offset
        for wanted in range(offset):
            owner = min(b for b in expected if b + 1 >= wanted)
            assert log.read(wanted, 1).to_bytes() == expected[owner], wanted
        assert log.leader_epoch_cache.entries() == [(0, 5), (1, 33), (2, 61)]

    check(follower)
    follower.close()
    (tmp_path / "t-0" / CHECKPOINT_FILE_NAME).unlink()
    check(open_log(tmp_path / "t-0", clock, config, recover=True))


def test_a_gap_beyond_int_max_starts_a_new_segment_at_the_first_offset(tmp_path, clock):
    follower = open_log(tmp_path / "t-0", clock)
    batch = build_batch([b"far"])
    far = INT_MAX + 1000
    patch_base_offset(batch, far)
    follower.append_as_follower(batch)
    assert follower.segment_base_offsets == [0, far]
    assert follower.log_end_offset == far + 1
    assert follower.read(far, 100).to_bytes() == bytes(batch)
    assert follower.read(5, 100).to_bytes() == bytes(batch)  # inside the gap
    follower.close()
    follower = open_log(tmp_path / "t-0", clock)
    assert follower.log_end_offset == far + 1
    assert follower.read(far, 100).to_bytes() == bytes(batch)


def test_divergent_tail_is_truncated_by_epoch_then_replaced(tmp_path, clock):
    """KIP-101: a replica that led epoch 2 briefly (offsets 10-14 never replicated)
    becomes follower of the epoch 3 leader, which took over at offset 10."""
    old = open_log(tmp_path / "old" / "t-0", clock)
    new = open_log(tmp_path / "new" / "t-0", clock)
    for _i in range(5):
        lead(old, build_batch([b"a", b"b"]), 1)
    replicate(old, new)
    old.assign_leader_epoch(2)
    for _i in range(5):
        lead(old, build_batch([b"lost"]), 2)
    assert old.log_end_offset == 15
    assert new.assign_leader_epoch(3) == 10
    for _i in range(3):
        lead(new, build_batch([b"new", b"er"]), 3)

    epoch, end = new.end_offset_for_epoch(old.leader_epoch_cache.latest_epoch)
    assert (epoch, end) == (1, 10)
    old.truncate_to(end)
    assert old.log_end_offset == 10
    assert old.leader_epoch_cache.entries() == [(1, 0)]
    replicate(new, old)
    assert_same_log(new, old)
    assert old.leader_epoch_cache.entries() == [(1, 0), (3, 10)]
    assert new.end_offset_for_epoch(3) == (3, 16)
    assert new.end_offset_for_epoch(2) == (1, 10)


def test_truncate_to_inside_a_batch_drops_the_whole_batch_and_its_epoch(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    lead(log, build_batch([b"a"] * 5), 0)  # 0-4
    lead(log, build_batch([b"b"] * 5), 4)  # 5-9
    log.truncate_to(7)
    assert log.log_end_offset == 5
    assert log.leader_epoch_cache.entries() == [(0, 0)]


def test_truncate_fully_and_start_at(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    for _ in range(3):
        lead(log, build_idempotent_batch(5, 0, _ * 2, 2), 2)
    log.enable_replication(3)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert log.leader_epoch_cache.entries() == []
    assert log.producer_batch_offsets() == {}
    batch = build_batch([b"z"])
    patch_base_offset(batch, 500)
    patch_leader_epoch(batch, 6)
    log.append_as_follower(batch)
    log.close()
    log = open_log(tmp_path / "t-0", clock)
    assert (log.log_start_offset, log.log_end_offset) == (500, 501)
    assert log.leader_epoch_cache.entries() == [(6, 500)]


# ------------------------------------------------------------- epoch cache on disk


def test_epoch_cache_after_reopen(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    lead(log, build_batch([b"a"]), 0)
    lead(log, build_batch([b"b"]), 0)
    lead(log, build_batch([b"c"]), 4)
    assert log.leader_epoch_cache.entries() == [(0, 0), (4, 2)]
    log.assign_leader_epoch(9)  # became leader, nothing written yet
    assert log.leader_epoch_cache.entries() == [(0, 0), (4, 2), (9, 3)]
    text = (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT_FILE).read_text()
    assert text == "0\n3\n0 0\n4 2\n9 3\n"
    log.close()
    log = open_log(tmp_path / "t-0", clock)
    # As Kafka after a restart: an epoch with no record yet is forgotten
    # (the new leader records it again when it takes over).
    assert log.leader_epoch_cache.entries() == [(0, 0), (4, 2)]
    assert log.end_offset_for_epoch(4) == (4, 3)


def test_an_unclean_stop_drops_epochs_past_the_recovered_end(tmp_path, clock):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    for _i in range(4):
        lead(log, build_batch([b"x" * 30] * 2), 1)
    torn_at = log.size_bytes
    lead(log, build_batch([b"y" * 30] * 2), 5)
    lead(log, build_batch([b"z" * 30] * 2), 6)
    assert [e for e, _ in log.leader_epoch_cache.entries()] == [1, 5, 6]
    # kill -9 after the epoch file was written but before the batches reached
    # the disk whole: the segment ends in a torn batch.
    segment = LogSegment.path_for(directory, 0, LOG_SUFFIX)
    with open(segment, "r+b") as handle:
        handle.truncate(torn_at + 20)
    reopened = open_log(directory, clock, recover=True)
    assert reopened.log_end_offset == 8
    assert reopened.leader_epoch_cache.entries() == [(1, 0)]
    lines = (directory / LEADER_EPOCH_CHECKPOINT_FILE).read_text().split("\n")
    assert lines[:3] == ["0", "1", "1 0"]


@pytest.mark.parametrize("damage", ["torn", "garbage", "missing"])
def test_a_damaged_epoch_file_is_rebuilt_from_the_log(tmp_path, clock, caplog, damage):
    directory = tmp_path / "t-0"
    log = open_log(directory, clock)
    for epoch in (0, 0, 2, 2, 3):
        lead(log, build_sized_batch(3, 500), epoch)
    expected = log.leader_epoch_cache.entries()
    assert expected == [(0, 0), (2, 6), (3, 12)]
    log.close()
    path = directory / LEADER_EPOCH_CHECKPOINT_FILE
    if damage == "torn":
        path.write_text(path.read_text()[:9])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff" * 10)
    else:
        path.unlink()
    with caplog.at_level(logging.INFO):
        log = open_log(directory, clock, recover=True)
    assert log.leader_epoch_cache.entries() == expected
    assert path.read_text() == "0\n3\n0 0\n2 6\n3 12\n"
    lines = [r for r in caplog.records if LEADER_EPOCH_CHECKPOINT_FILE in r.getMessage()]
    assert len(lines) == 1 and "rebuilt from the log" in lines[0].getMessage()
    assert lines[0].levelno == (logging.INFO if damage == "missing" else logging.WARNING)


def test_an_empty_new_log_writes_no_epoch_file(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    log.close()
    open_log(tmp_path / "t-0", clock).close()
    assert not (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT_FILE).exists()


def test_retention_and_delete_records_truncate_the_epoch_cache_from_the_start(tmp_path, clock):
    config = LogConfig(segment_bytes=2048, retention_bytes=2800)
    log = open_log(tmp_path / "t-0", clock, config)
    for i in range(12):
        lead(log, build_sized_batch(2, 300, seed=i), i // 4)  # epochs 0, 1, 2
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 8), (2, 16)]
    assert log.apply_retention() > 0
    start = log.log_start_offset
    assert start == 12  # three batches a segment: two segments went
    assert log.leader_epoch_cache.entries() == [(1, start), (2, 16)]
    log.delete_records_before(20)
    assert log.leader_epoch_cache.entries() == [(2, 20)]
    log.close()
    log = open_log(tmp_path / "t-0", clock, config)
    assert log.leader_epoch_cache.entries() == [(2, 20)]
    assert log.leader_epoch_cache.entries() == epoch_starts(
        (e, max(b, log.log_start_offset)) for e, b in batch_epochs(log)
    )


# ------------------------------------------------------------- high watermark


def test_single_node_high_watermark_is_the_log_end(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    lead(log, build_batch([b"a", b"b"]), 0)
    assert not log.replication_enabled
    assert log.high_watermark == log.log_end_offset == log.last_stable_offset == 2


def test_explicit_high_watermark(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    for _ in range(5):
        lead(log, build_batch([b"a", b"b"]), 0)  # 0-9
    assert log.enable_replication(4) == 4
    assert log.replication_enabled
    lead(log, build_batch([b"c"]), 0)
    assert (log.high_watermark, log.log_end_offset) == (4, 11)
    assert log.last_stable_offset == 4  # bounded by the HW
    assert log.set_high_watermark(50) == 11  # clamped to the log end
    assert log.set_high_watermark(-3) == 0  # and to the log start
    log.set_high_watermark(8)
    # An open transaction below the HW bounds the LSO, as before.
    txn = TxnProducer(producer_id=3)
    txn_at, _ = lead(log, txn.data(1), 0)
    log.set_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == txn_at
    # Truncation clamps the HW.
    log.set_high_watermark(9)
    log.truncate_to(6)
    assert log.high_watermark == 6 == log.log_end_offset
    # DeleteRecords stops at the HW.
    for _ in range(3):
        lead(log, build_batch([b"d"]), 0)
    log.set_high_watermark(7)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(8)
    assert log.delete_records_before(-1) == 7
    # enable_replication again clamps to [log start, LEO].
    assert log.enable_replication(2) == 7


def test_retention_never_moves_the_log_start_past_the_high_watermark(tmp_path, clock):
    config = LogConfig(segment_bytes=1024, retention_bytes=1)
    log = open_log(tmp_path / "t-0", clock, config)
    for i in range(10):
        lead(log, build_sized_batch(1, 300, seed=i), 0)
    bases = log.segment_base_offsets
    assert len(bases) >= 4
    log.enable_replication(bases[2])
    log.apply_retention()
    assert log.log_start_offset == bases[2] == log.segment_base_offsets[0]
    log.set_high_watermark(log.log_end_offset)
    log.apply_retention()  # now as on a single node: all but the newest segment go
    assert log.log_start_offset == bases[-1] == log.segment_base_offsets[0]


# ------------------------------------------------------------- data dir


def test_create_topic_with_a_given_id(tmp_path, clock):
    import uuid

    topic_id = uuid.UUID("0f6c2b4e-7a1d-4c58-9a51-8d7b3f3e2a10")
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    assert data_dir.create_topic("t", 2, {}, topic_id=topic_id).topic_id == topic_id
    data_dir.close()
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    assert data_dir.topics["t"].topic_id == topic_id
    data_dir.close()


def test_high_watermark_checkpoint_round_trip(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    assert data_dir.high_watermarks() == {}
    data_dir.create_topic("t", 3, {})
    data_dir.create_topic("u.v", 1, {})
    for (topic, index, hw) in (("t", 0, 5), ("t", 1, 3), ("u.v", 0, 1)):
        log = data_dir.partition(topic, index)
        for _ in range(3):
            lead(log, build_batch([b"a", b"b"]), 0)
        log.enable_replication(hw)
    data_dir.checkpoint_high_watermarks()
    path = tmp_path / REPLICATION_CHECKPOINT_FILE
    assert path.read_text() == "0\n3\nt 0 5\nt 1 3\nu.v 0 1\n"
    data_dir.partition("t", 0).set_high_watermark(6)
    data_dir.close()  # writes the replicated partitions' HWs
    assert path.read_text() == "0\n3\nt 0 6\nt 1 3\nu.v 0 1\n"

    data_dir = DataDir.open(tmp_path, SMALL, clock)
    hws = data_dir.high_watermarks()
    assert hws == {("t", 0): 6, ("t", 1): 3, ("u.v", 0): 1}
    # A restarted replica resumes with its checkpointed HW.
    log = data_dir.partition("t", 1)
    log.enable_replication(hws[("t", 1)])
    assert log.high_watermark == 3 and log.log_end_offset == 6
    # Given HWs merge with the others; deleted topics drop out.
    data_dir.delete_topic("u.v")
    data_dir.checkpoint_high_watermarks({("t", 2): 0, ("gone", 0): 9})
    assert path.read_text() == "0\n3\nt 0 6\nt 1 3\nt 2 0\n"
    data_dir.close()
    assert not list(tmp_path.glob("*.tmp"))


def test_single_node_close_writes_no_high_watermark_checkpoint(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    data_dir.create_topic("t", 1, {})
    lead(data_dir.partition("t", 0), build_batch([b"a"]), 0)
    data_dir.close()
    assert not (tmp_path / REPLICATION_CHECKPOINT_FILE).exists()


@pytest.mark.parametrize("content", ["0\n2\nt 0 5\n", "0\nx\n", "\x00\x00"])
def test_a_torn_high_watermark_checkpoint_reads_as_empty(tmp_path, clock, caplog, content):
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    data_dir.create_topic("t", 1, {})
    data_dir.close()
    (tmp_path / REPLICATION_CHECKPOINT_FILE).write_text(content)
    with caplog.at_level(logging.WARNING):
        data_dir = DataDir.open(tmp_path, SMALL, clock)
    assert data_dir.high_watermarks() == {}
    assert len([r for r in caplog.records if REPLICATION_CHECKPOINT_FILE in r.getMessage()]) == 1
    data_dir.partition("t", 0).enable_replication(0)
    data_dir.close()
    assert (tmp_path / REPLICATION_CHECKPOINT_FILE).read_text() == "0\n1\nt 0 0\n"


def test_leftover_temp_files_do_not_break_opening(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    data_dir.create_topic("t", 1, {})
    log = data_dir.partition("t", 0)
    lead(log, build_batch([b"a"]), 2)
    log.enable_replication(1)
    data_dir.close()
    # kill -9 inside atomic_write leaves the temp files behind.
    (tmp_path / (REPLICATION_CHECKPOINT_FILE + ".tmp")).write_text("0\n5\n")
    (tmp_path / "t-0" / (LEADER_EPOCH_CHECKPOINT_FILE + ".tmp")).write_text("0\n")
    data_dir = DataDir.open(tmp_path, SMALL, clock)
    assert data_dir.high_watermarks() == {("t", 0): 1}
    assert data_dir.partition("t", 0).leader_epoch_cache.entries() == [(2, 0)]
    assert not (tmp_path / "t-0" / (LEADER_EPOCH_CHECKPOINT_FILE + ".tmp")).exists()
    data_dir.close()


# ------------------------------------------------------------- kill -9


def test_kill_9_during_replication_work_leaves_files_that_load(tmp_path, clock):
    """SIGKILL a child doing follower appends, truncations, epoch changes and HW
    checkpoints at random moments; every restart loads, with an epoch cache
    that matches the batches on disk and a readable HW checkpoint."""
    import os
    import random
    import signal
    import subprocess
    import sys
    from pathlib import Path

    child = Path(__file__).with_name("replication_crash_child.py")
    rng = random.Random(15)
    seen_epochs: set[int] = set()
    for round_number in range(4):
        process = subprocess.Popen(
            [sys.executable, str(child), str(tmp_path), str(round_number)],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            ready = process.stdout.readline().split()
            assert ready and ready[0] == "ready", ready
            for done, _line in enumerate(process.stdout):
                if done >= rng.randint(40, 160):
                    break
            os.kill(process.pid, signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.stdout.close()
            process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL

        data_dir = DataDir.open(tmp_path, SMALL, clock)
        try:
            assert not data_dir.had_clean_shutdown
            log = data_dir.partition("r", 0)
            hws = data_dir.high_watermarks()
            assert set(hws) == {("r", 0)}
            assert log.log_end_offset > 0
            entries = log.leader_epoch_cache.entries()
            seen_epochs.update(epoch for epoch, _ in entries)
            assert all(start < log.log_end_offset for _, start in entries)
            assert entries == epoch_starts(
                (e, max(b, log.log_start_offset)) for e, b in batch_epochs(log)
            )
        finally:
            data_dir.close()
    assert len(seen_epochs) > 1  # the checks above were not about empty caches


def test_a_leader_writes_in_its_latest_epoch_whatever_the_stamp(tmp_path, clock):
    leader = open_log(tmp_path / "leader" / "t-0", clock)
    lead(leader, build_batch([b"a"]), 0)
    assert leader.assign_leader_epoch(4) == 1
    lead(leader, build_batch([b"b"]), 4)
    lead(leader, build_batch([b"stale"]), 2)  # e.g. a marker built with epoch 0
    lead(leader, build_batch([b"c"]), -1)
    lead(leader, build_batch([b"d"]), 4)
    assert leader.leader_epoch_cache.entries() == [(0, 0), (4, 1)]
    assert batch_epochs(leader) == [(0, 0), (4, 1), (4, 2), (4, 3), (4, 4)]
    assert iter_batches(log_bytes(leader))  # CRCs still right
    follower = open_log(tmp_path / "follower" / "t-0", clock)
    replicate(leader, follower)
    assert_same_log(leader, follower)
    assert follower.end_offset_for_epoch(0) == (0, 1)


def test_a_log_that_never_saw_an_epoch_leaves_batches_unstamped(tmp_path, clock):
    log = open_log(tmp_path / "t-0", clock)
    batch = build_batch([b"a"])
    log.append(batch, [read_header(batch)])
    assert batch_epochs(log) == [(-1, 0)]
    assert log.leader_epoch_cache.entries() == []
