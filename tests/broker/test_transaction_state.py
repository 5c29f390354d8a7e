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
    MAX_EPOCH,
    TV_2,
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
    data = encode_value(ongoing, version=0)
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
    data = encode_value(new_metadata("app-1", 9, 1000, now_ms=5), version=0)
    assert data[2 + 15 : 2 + 19] == struct.pack(">i", -1)
    assert decode_value("app-1", data).partitions == frozenset()
    flexible = encode_value(new_metadata("app-1", 9, 1000, now_ms=5))
    assert flexible[2 + 15] == 0  # compact null
    assert decode_value("app-1", flexible).partitions == frozenset()


def test_value_layout_is_kafkas_version_1_with_its_tags():
    """What Kafka 4.x writes with transaction.version 1+ finalized (kafkette's default):
    flexible, with PreviousProducerId (0), NextProducerId (1) and ClientTransactionVersion
    (2) as tagged fields, each left out at its default."""
    prepared = replace(
        _ongoing().prepare_add_partitions(frozenset(), 2500, TV_2),
        producer_epoch=MAX_EPOCH - 1,
    ).prepare_end(True, 3000, client_tv=TV_2, next_producer_id=4001)
    data = encode_value(prepared)
    expected = struct.pack(">hqhib", 1, 4000, MAX_EPOCH, 60000, int(TxnState.PREPARE_COMMIT))
    expected += bytes([3])  # two topics (compact: count + 1)
    expected += bytes([2]) + b"t" + bytes([3]) + struct.pack(">ii", 0, 2) + bytes([0])
    expected += bytes([2]) + b"u" + bytes([2]) + struct.pack(">i", 1) + bytes([0])
    expected += struct.pack(">qq", 3000, 2000)
    expected += bytes([2])  # two tags: next producer id, client transaction version
    expected += bytes([1, 8]) + struct.pack(">q", 4001)
    expected += bytes([2, 2]) + struct.pack(">h", 2)
    assert data == expected
    back = decode_value("app-1", data)
    assert back == replace(prepared, last_producer_epoch=-1)  # not persisted, as Kafka
    completed = back.prepare_complete(4000)
    again = decode_value("app-1", encode_value(completed))
    assert (again.producer_id, again.producer_epoch, again.last_producer_id) == (4001, 0, 4000)
    assert again.next_producer_id == -1 and again.client_tv == TV_2


def test_version_1_flexible_values_are_read():
    """Version 1 as Kafka writes it: compact strings and arrays, tagged fields (those this
    layout does not know are skipped)."""
    body = struct.pack(">hqhib", 1, 77, 3, 1000, int(TxnState.PREPARE_ABORT))
    body += bytes([2])  # one topic (compact count + 1)
    body += bytes([2]) + b"t"  # compact string "t"
    body += bytes([2]) + struct.pack(">i", 5)  # one partition: 5
    body += bytes([0])  # the topic's tagged fields
    body += struct.pack(">qq", 10, 9)
    body += bytes([2, 2, 2]) + struct.pack(">h", 2)  # tag 2, ClientTransactionVersion
    body += bytes([9, 1, 0])  # a tag this version does not know: skipped
    value = decode_value("x", body)
    assert (value.producer_id, value.producer_epoch, value.state) == (77, 3, TxnState.PREPARE_ABORT)
    assert value.client_tv == TV_2
    assert value.partitions == frozenset({("t", 5)})
    assert (value.last_update_ms, value.start_ms) == (10, 9)



def test_tv2_end_bumps_the_epoch_and_remembers_the_one_before():
    ongoing = _ongoing().prepare_add_partitions(frozenset(), 2500, TV_2)
    prepared = ongoing.prepare_end(False, 3000, client_tv=TV_2)
    assert (prepared.producer_epoch, prepared.last_producer_epoch) == (1, 0)
    assert prepared.answer_after_end() == (4000, 1)
    done = prepared.prepare_complete(3500)
    assert (done.state, done.producer_id, done.producer_epoch) == (TxnState.COMPLETE_ABORT, 4000, 1)
    assert done.start_ms == 2000  # the transaction's, kept


def test_tv2_end_of_an_exhausted_epoch_moves_to_the_next_producer_id():
    ongoing = replace(_ongoing(), producer_epoch=MAX_EPOCH - 1, client_tv=TV_2)
    prepared = ongoing.prepare_end(True, 3000, client_tv=TV_2, next_producer_id=9)
    assert prepared.producer_epoch == MAX_EPOCH  # the markers' epoch, never given out
    assert prepared.answer_after_end() == (9, 0)
    done = prepared.prepare_complete(4000)
    assert (done.producer_id, done.producer_epoch, done.last_producer_id) == (9, 0, 4000)
    assert done.last_producer_epoch == MAX_EPOCH - 1


def test_tv2_aborts_an_idle_id():
    for idle in (new_metadata("a", 1, 1000, now_ms=5), _ongoing().prepare_end(True, 7)):
        if idle.state == TxnState.PREPARE_COMMIT:
            idle = idle.prepare_complete(8)
        aborting = idle.prepare_end(False, 50, client_tv=TV_2)
        assert (aborting.state, aborting.start_ms) == (TxnState.PREPARE_ABORT, 50)
        assert aborting.producer_epoch == idle.producer_epoch + 1
        assert aborting.partitions == frozenset()
