"""The pure parts of the transaction coordinator: state moves and the record layout."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest

from kafkette.broker.transactions.log_records import (
    BadTransactionRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkette.broker.transactions.state import (
    IllegalTransition,
    TransactionMetadata,
    TxnState,
    new_metadata,
)


def _ongoing() -> TransactionMetadata:
    fresh = new_metadata("app-1", 4000, 60000, now_ms=1000)
    return fresh.prepare_add_partitions(frozenset({("t", 0), ("t", 2), ("u", 1)}), 2000)


def test_a_transaction_goes_through_kafkas_states():
    ongoing = _ongoing()
    assert (ongoing.state, ongoing.start_ms) == (TxnState.ONGOING, 2000)
    more = ongoing.prepare_add_partitions(frozenset({("v", 0)}), 3000)
    assert more.start_ms == 2000 and ("v", 0) in more.partitions and ("t", 2) in more.partitions
    prepared = more.prepare_end(True, 4000)
    assert prepared.state == TxnState.PREPARE_COMMIT
    done = prepared.prepare_complete(5000)
    assert (done.state, done.partitions) == (TxnState.COMPLETE_COMMIT, frozenset())
    # The next transaction starts afresh from CompleteCommit.
    again = done.prepare_add_partitions(frozenset({("t", 0)}), 6000)
    assert (again.start_ms, again.partitions) == (6000, frozenset({("t", 0)}))


@pytest.mark.parametrize(
    "move",
    [
        lambda m: m.prepare_end(True, 0),  # Empty -> PrepareCommit
        lambda m: m.prepare_complete(0),  # Empty -> CompleteAbort
        lambda m: m.prepare_fence(),  # Empty -> PrepareEpochFence
    ],
)
def test_illegal_moves_raise(move):
    with pytest.raises(IllegalTransition):
        move(new_metadata("app-1", 1, 1000, 0))


def test_fencing_bumps_the_epoch_and_aborts():
    aborting = _ongoing().prepare_fence().prepare_end(False, 3000)
    assert (aborting.state, aborting.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    exhausted = TransactionMetadata("x", 7, 32766, 1000, TxnState.ONGOING, frozenset({("t", 0)}))
    assert exhausted.epoch_exhausted
    assert exhausted.prepare_fence().producer_epoch == 32767
    last = replace(exhausted, producer_epoch=32767)
    assert last.prepare_fence().producer_epoch == 32767  # cannot go higher


def test_timeout_and_expiry():
    ongoing = _ongoing()  # started at 2000 with a 60 s timeout
    assert not ongoing.timed_out(61999) and ongoing.timed_out(62000)
    idle = new_metadata("app-1", 4000, 60000, now_ms=1000)
    assert not idle.expired(1999, 1000) and idle.expired(2000, 1000)
    assert not ongoing.expired(10**12, 1000)  # an open transaction never expires


def test_key_layout_is_kafkas():
    assert encode_key("ab") == struct.pack(">hh", 0, 2) + b"ab"
    assert decode_key(encode_key("tx-é")) == "tx-é"
    with pytest.raises(BadTransactionRecord):
        decode_key(struct.pack(">hh", 1, 0))


def test_value_layout_is_kafkas_version_0():
    ongoing = _ongoing()
    data = encode_value(ongoing)
    expected = struct.pack(">hqhib", 0, 4000, 0, 60000, int(TxnState.ONGOING))
    expected += struct.pack(">i", 2)  # two topics, sorted
    expected += struct.pack(">h", 1) + b"t" + struct.pack(">iii", 2, 0, 2)
    expected += struct.pack(">h", 1) + b"u" + struct.pack(">ii", 1, 1)
    expected += struct.pack(">qq", 2000, 2000)
    assert data == expected
    back = decode_value("app-1", data)
    assert (back.producer_id, back.state, back.partitions, back.start_ms) == (
        4000, TxnState.ONGOING, ongoing.partitions, 2000,
    )


def test_empty_writes_a_null_partition_list():
    data = encode_value(new_metadata("app-1", 9, 1000, now_ms=5))
    assert data[2 + 15 : 2 + 19] == struct.pack(">i", -1)
    assert decode_value("app-1", data).partitions == frozenset()


def test_version_1_flexible_values_are_read():
    """Kafka writes version 1 for transaction.version 2 clients: compact strings and arrays,
    tagged fields (skipped: they serve transaction.version 2)."""
    body = struct.pack(">hqhib", 1, 77, 3, 1000, int(TxnState.PREPARE_ABORT))
    body += bytes([2])  # one topic (compact count + 1)
    body += bytes([2]) + b"t"  # compact string "t"
    body += bytes([2]) + struct.pack(">i", 5)  # one partition: 5
    body += bytes([0])  # the topic's tagged fields
    body += struct.pack(">qq", 10, 9)
    body += bytes([1, 2, 2]) + struct.pack(">h", 2)  # tag 2, ClientTransactionVersion: skipped
    value = decode_value("x", body)
    assert (value.producer_id, value.producer_epoch, value.state) == (77, 3, TxnState.PREPARE_ABORT)
    assert value.partitions == frozenset({("t", 5)})
    assert (value.last_update_ms, value.start_ms) == (10, 9)

