"""``rebuild_batch``: the cleaner's rewrite keeps a batch's identity, offsets and timestamps."""

from __future__ import annotations

import pytest

from kafkette.wire.record_batch import DELETE_HORIZON_MASK, validate_batch
from kafkette.wire.records import (
    Record,
    build_batch,
    decode_batch,
    delete_horizon_of,
    rebuild_batch,
)

BASE = 1_700_000_000_000


def original(codec: int, timestamp_type: int = 0) -> bytes:
    records = [
        Record(i, i * 10, b"k%d" % i, None if i == 3 else b"v%d" % i, [("h", b"x")] if i else [])
        for i in range(6)
    ]
    return build_batch(
        records, base_offset=1000, compression=codec, timestamp_type=timestamp_type,
        producer_id=42, producer_epoch=3, base_sequence=17, partition_leader_epoch=0,
        base_timestamp=BASE,
    )


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_surviving_records_keep_offsets_timestamps_headers_and_batch_identity(codec) -> None:
    header, records = decode_batch(original(codec))
    kept = [records[1], records[3], records[4]]
    rebuilt = rebuild_batch(header, kept)
    new_header, new_records = decode_batch(rebuilt)  # CRC checked
    validate_batch(rebuilt)
    assert new_header.base_offset == 1000 and new_header.last_offset == header.last_offset
    assert (new_header.producer_id, new_header.producer_epoch, new_header.base_sequence) == (
        42, 3, 17,
    )
    assert new_header.compression == codec
    assert new_header.partition_leader_epoch == header.partition_leader_epoch
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in new_records] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in kept
    ]
    assert new_header.max_timestamp == max(r.timestamp for r in kept)
    assert delete_horizon_of(new_header) is None


def test_delete_horizon_is_set_once_and_timestamps_survive_it() -> None:
    header, records = decode_batch(original(1))
    horizon = BASE + 86_400_000
    rebuilt = rebuild_batch(header, records, delete_horizon_ms=horizon)
    new_header, new_records = decode_batch(rebuilt)
    assert new_header.attributes & DELETE_HORIZON_MASK
    assert delete_horizon_of(new_header) == horizon
    assert [r.timestamp for r in new_records] == [r.timestamp for r in records]
    again = rebuild_batch(new_header, new_records[:2], delete_horizon_ms=horizon + 5)
    assert delete_horizon_of(decode_batch(again)[0]) == horizon  # kept, not moved


def test_empty_batch_is_a_header_without_compression() -> None:
    header, _ = decode_batch(original(4))
    empty = rebuild_batch(header, [])
    new_header, new_records = decode_batch(empty)
    assert new_records == [] and new_header.records_count == 0
    assert new_header.compression == 0 and len(empty) == 61
    assert new_header.last_offset == header.last_offset
    assert new_header.max_timestamp == header.max_timestamp
