"""``__share_group_state`` records in Kafka's layout: keys, snapshots and updates round
trip, the bytes are those Kafka writes, and updates apply on top of snapshots."""

from __future__ import annotations

import uuid

from kafkette.broker.share_groups import state_records as rec
from kafkette.broker.share_groups.persister import _apply_update, state_partition_for

T = uuid.UUID("00000000-0000-0000-0000-00000000000a")
KEY = ("g", T, 3)


def test_key_bytes_are_kafkas_type_prefixed_layout() -> None:
    data = rec.encode_key(rec.SNAPSHOT, KEY)
    assert data == b"\x00\x00" + b"\x00\x01g" + T.bytes + b"\x00\x00\x00\x03"
    assert rec.decode_key(data) == (rec.SNAPSHOT, KEY)


def test_snapshot_round_trip_and_bytes() -> None:
    state = rec.ShareState(rec.SNAPSHOT, 1, 2, 0, 100, ((100, 104, rec.ACKNOWLEDGED, 1),),
                           5, 6)
    data = rec.encode_snapshot(state)
    assert data[:2] == b"\x00\x00"  # value version 0
    # epochs, start offset, timestamps, then a compact array of one 19-byte batch
    assert data[2:38] == (b"\x00\x00\x00\x01" b"\x00\x00\x00\x02" b"\x00\x00\x00\x00"
                          + (100).to_bytes(8, "big") + (5).to_bytes(8, "big")
                          + (6).to_bytes(8, "big"))
    assert data[38] == 2  # one element, plus one
    assert data[-2:] == b"\x00\x00"  # the batch's and the value's empty tagged fields
    assert rec.decode_value(rec.SNAPSHOT, data) == state
    counted = rec.ShareState(rec.SNAPSHOT, 1, 2, 0, 100, (), 5, 6, 7)
    assert rec.decode_value(rec.SNAPSHOT, rec.encode_snapshot(counted)) == counted


def test_update_overrides_the_offsets_it_covers() -> None:
    base = rec.ShareState(rec.SNAPSHOT, 1, 1, 0, 10, ((10, 19, rec.AVAILABLE, 1),))
    update = rec.ShareState(rec.UPDATE, 1, -1, 0, 12, ((14, 15, rec.ARCHIVED, 3),))
    merged = _apply_update(base, update)
    assert merged.start_offset == 12
    assert merged.batches == ((12, 13, rec.AVAILABLE, 1), (14, 15, rec.ARCHIVED, 3),
                              (16, 19, rec.AVAILABLE, 1))


def test_state_partition_follows_kafkas_coordinator_key_hash() -> None:
    # "g:AAAAAAAAAAAAAAAAAAAACg:3" hashed as Java's String.hashCode, abs, mod 50
    h = 0
    for ch in "g:AAAAAAAAAAAAAAAAAAAACg:3":
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - 2**32 if h >= 2**31 else h
    assert state_partition_for(KEY, 50) == abs(h) % 50
