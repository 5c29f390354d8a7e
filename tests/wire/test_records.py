"""Record decoding/building, checked against kafka-python's batch builder and reader."""

from __future__ import annotations

import struct
from collections.abc import Callable

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkette.wire.compression import CompressionType
from kafkette.wire.record_batch import CRC_START, HEADER_SIZE, InvalidBatchError, validate_batch
from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_batch_from_values,
    build_control_batch,
    decode_batch,
    decode_batches,
    decode_varint,
    encode_varint,
    parse_control_record,
)

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

BASE_TS = 1_700_000_000_000


def sample_items() -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]:
    """(key, value, headers, timestamp): nulls, empties, unicode header keys, out-of-order times."""
    items = []
    for i in range(25):
        key = None if i % 4 == 0 else (b"" if i == 5 else b"key-%d" % i)
        value = None if i == 7 else b"payload %d " % i * 30
        headers: list[tuple[str, bytes | None]] = []
        if i % 3 == 0:
            headers = [("trace-id", b"%032x" % i), ("caf\u00e9", None), ("empty", b"")]
        timestamp = BASE_TS + (i * 13 if i != 9 else -5_000)
        items.append((key, value, headers, timestamp))
    return items


def kafka_python_build(codec: int, items, **producer) -> bytes:
    """kafka-python's producer batch; ``codec`` must be usable (the fixture checks)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=producer.get("transactional", False),
        producer_id=producer.get("producer_id", -1),
        producer_epoch=producer.get("producer_epoch", -1),
        base_sequence=producer.get("base_sequence", -1),
        batch_size=1 << 22,
    )
    for offset, (key, value, headers, timestamp) in enumerate(items):
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def kafka_python_read(batch: bytes) -> list:
    from kafka.record.default_records import DefaultRecordBatch

    reader = DefaultRecordBatch(batch)
    assert reader.validate_crc()
    return list(reader)


def test_kafka_python_batches_decode(codec: int) -> None:
    items = sample_items()
    batch = kafka_python_build(codec, items)
    header, records = decode_batch(batch)
    assert header.compression == codec, "kafka-python fell back to no compression"
    assert header.records_count == len(items)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == items
    assert [r.offset for r in records] == list(range(len(items)))
    assert [r.offset_delta for r in records] == list(range(len(items)))
    assert records[9].timestamp_delta == -5_000


def test_kafka_python_batch_at_offset_in_a_segment() -> None:
    first = bytearray(kafka_python_build(0, sample_items()[:3]))
    second = bytearray(kafka_python_build(0, sample_items()[3:8]))
    struct.pack_into(">q", second, 0, 3)  # baseOffset, outside the CRC
    segment = bytes(first + second) + bytes(second[:40])  # partial batch at the end
    decoded = decode_batches(segment)
    assert [h.base_offset for h, _ in decoded] == [0, 3]
    assert [r.offset for _, records in decoded for r in records] == list(range(8))
    _, records = decode_batch(segment, len(first))
    assert records[0].key == sample_items()[3][0]


def test_our_batches_read_by_kafka_python(codec: int) -> None:
    items = sample_items()
    records = [
        Record(i, timestamp - BASE_TS, key, value, headers)
        for i, (key, value, headers, timestamp) in enumerate(items)
    ]
    batch = build_batch(
        records,
        base_offset=500,
        compression=codec,
        base_timestamp=BASE_TS,
        producer_id=77,
        producer_epoch=2,
        base_sequence=1000,
        partition_leader_epoch=4,
    )
    header = validate_batch(batch)
    assert header.compression == codec
    assert header.max_timestamp == max(t for *_, t in items)
    assert header.last_offset_delta == len(items) - 1
    read = kafka_python_read(batch)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in read] == items
    assert [r.offset for r in read] == list(range(500, 500 + len(items)))

    from kafka.record.default_records import DefaultRecordBatch

    reader = DefaultRecordBatch(batch)
    assert (reader.producer_id, reader.producer_epoch, reader.base_sequence) == (77, 2, 1000)
    assert reader.leader_epoch == 4
    assert reader.compression_type == codec
    assert not reader.is_transactional and not reader.is_control_batch


def test_build_batch_from_values() -> None:
    batch = build_batch_from_values(
        [(b"k1", b"v1"), (None, b"v2", [("h", b"1")]), (b"k3", None)],
        base_timestamp=BASE_TS,
        compression=1,
    )
    read = kafka_python_read(batch)
    assert [(r.offset, r.key, r.value, r.headers) for r in read] == [
        (0, b"k1", b"v1", []),
        (1, None, b"v2", [("h", b"1")]),
        (2, b"k3", None, []),
    ]
    assert {r.timestamp for r in read} == {BASE_TS}


def test_default_base_timestamp_is_now() -> None:
    import time

    before = int(time.time() * 1000)
    header, records = decode_batch(build_batch_from_values([(b"k", b"v")]))
    after = int(time.time() * 1000)
    assert before <= header.base_timestamp <= after
    assert records[0].timestamp == header.base_timestamp


def test_log_append_time_batch_reports_max_timestamp() -> None:
    records = [Record(i, i, b"k", b"v") for i in range(3)]
    batch = build_batch(
        records, timestamp_type=1, base_timestamp=BASE_TS, max_timestamp=BASE_TS + 1
    )
    header, decoded = decode_batch(batch)
    assert header.is_log_append_time
    assert [r.timestamp for r in decoded] == [BASE_TS + 1] * 3
    assert [r.timestamp for r in kafka_python_read(batch)] == [BASE_TS + 1] * 3


def test_empty_batch_like_compaction_leaves() -> None:
    batch = build_batch([], base_offset=10, last_offset_delta=4, producer_id=3, producer_epoch=0)
    header, records = decode_batch(batch)
    assert records == []
    assert header.records_count == 0
    assert header.next_offset == 15
    assert header.base_timestamp == -1 and header.max_timestamp == -1


@pytest.mark.parametrize("marker", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_transaction_marker_batches(marker: ControlRecordType) -> None:
    batch = build_control_batch(
        marker,
        producer_id=9000,
        producer_epoch=5,
        coordinator_epoch=12,
        base_offset=40,
        timestamp=BASE_TS,
    )
    header, records = decode_batch(batch)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (9000, 5)
    assert len(records) == 1 and records[0].offset == 40
    assert parse_control_record(records[0]) == (marker, 12)

    (read,) = kafka_python_read(batch)
    assert type(read).__name__ == "ControlRecord"
    assert read.commit == (marker is ControlRecordType.COMMIT)
    assert read.abort == (marker is ControlRecordType.ABORT)
    assert read.version == 0
    assert struct.unpack(">hi", read.value) == (0, 12)


def test_control_record_of_other_types() -> None:
    leader_change = Record(0, 0, struct.pack(">hh", 0, 2), b"\x00\x00")
    assert parse_control_record(leader_change) == (ControlRecordType.LEADER_CHANGE, None)
    assert parse_control_record(Record(0, 0, struct.pack(">hh", 0, 77), None)) == (77, None)
    with pytest.raises(InvalidBatchError):
        parse_control_record(Record(0, 0, b"\x00", None))
    with pytest.raises(InvalidBatchError):
        parse_control_record(Record(0, 0, struct.pack(">hh", 0, 1), b"\x00"))
    with pytest.raises(ValueError):
        build_control_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0)


# --- hypothesis round trip ---------------------------------------------------

nullable_bytes = st.none() | st.binary(max_size=300)
headers_strategy = st.lists(
    st.tuples(st.text(max_size=20), nullable_bytes), max_size=4
)


@st.composite
def record_lists(draw: st.DrawFn) -> list[Record]:
    count = draw(st.integers(1, 30))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=count, max_size=count))
    offset_deltas = [sum(gaps[:i]) for i in range(count)]  # increasing, may skip (compaction)
    return [
        Record(
            offset_delta,
            draw(st.integers(-(1 << 40), 1 << 40)),
            draw(nullable_bytes),
            draw(nullable_bytes),
            draw(headers_strategy),
        )
        for offset_delta in offset_deltas
    ]


@settings(max_examples=80, deadline=None)
@given(
    records=record_lists(),
    codec=st.sampled_from([c.value for c in CompressionType]),
    base_offset=st.integers(0, (1 << 62)),
    base_timestamp=st.integers(0, 1 << 50),
    transactional=st.booleans(),
)
def test_build_decode_round_trip(
    require_codec: Callable[[int], None],
    records: list[Record],
    codec: int,
    base_offset: int,
    base_timestamp: int,
    transactional: bool,
) -> None:
    batch = build_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        base_timestamp=base_timestamp,
        producer_id=1 if transactional else -1,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
        transactional=transactional,
    )
    header, decoded = decode_batch(batch)
    assert header.compression == codec
    assert header.is_transactional == transactional
    assert header.base_offset == base_offset
    assert header.max_timestamp == base_timestamp + max(r.timestamp_delta for r in records)
    assert header.last_offset_delta == records[-1].offset_delta
    expected = [
        Record(
            r.offset_delta,
            r.timestamp_delta,
            r.key,
            r.value,
            r.headers,
            base_offset + r.offset_delta,
            base_timestamp + r.timestamp_delta,
        )
        for r in records
    ]
    assert decoded == expected
    require_codec(codec)
    def fields(rs: list) -> list[tuple]:
        return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in rs]

    assert fields(kafka_python_read(batch)) == fields(expected)


@settings(max_examples=300, deadline=None)
@given(value=st.integers(-(1 << 63), (1 << 63) - 1))
def test_varint_matches_kafka_python(value: int) -> None:
    from kafka.record.util import decode_varint as kp_decode
    from kafka.record.util import encode_varint as kp_encode

    ours = bytearray()
    encode_varint(value, ours)
    theirs = bytearray()
    kp_encode(value, theirs.append)
    assert ours == theirs
    assert decode_varint(ours, 0) == (value, len(ours))
    assert kp_decode(ours, 0) == (value, len(ours))


def test_varint_limits() -> None:
    with pytest.raises(ValueError):
        encode_varint(1 << 63, bytearray())
    with pytest.raises(InvalidBatchError, match="truncated"):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(InvalidBatchError, match="longer"):
        decode_varint(b"\x80" * 6, 0, max_bytes=5)
    with pytest.raises(InvalidBatchError, match="int32"):
        decode_varint(b"\xff\xff\xff\xff\x7f", 0, max_bytes=5)


def test_unknown_codec_is_refused_when_building() -> None:
    from kafkette.wire.compression import UnsupportedCompressionTypeError

    with pytest.raises(UnsupportedCompressionTypeError):
        build_batch([Record(0, 0, None, b"v")], compression=5)


# --- malformed record bytes (CRC recomputed so only the records are wrong) -------


def reseal(buf: bytearray) -> bytes:
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[CRC_START:])))
    return bytes(buf)


def plain_batch(count: int = 3) -> bytearray:
    return bytearray(build_batch_from_values([(b"k", b"value")] * count, base_timestamp=BASE_TS))


def test_fewer_records_than_counted() -> None:
    buf = plain_batch()
    struct.pack_into(">i", buf, 57, 4)
    with pytest.raises(InvalidBatchError):
        decode_batch(reseal(buf))


def test_bytes_left_after_counted_records() -> None:
    buf = plain_batch()
    struct.pack_into(">i", buf, 57, 2)
    with pytest.raises(InvalidBatchError, match="left"):
        decode_batch(reseal(buf))


def test_record_cut_short() -> None:
    with pytest.raises(InvalidBatchError):
        decode_batch(reseal(plain_batch()[:-2]))


def test_record_length_mismatch() -> None:
    buf = plain_batch(1)
    buf[HEADER_SIZE] += 2  # the first record's length varint (zigzag, one byte here)
    with pytest.raises(InvalidBatchError):
        decode_batch(reseal(buf + b"\x00"))


def test_compressed_body_that_does_not_decompress() -> None:
    buf = bytearray(build_batch_from_values([(b"k", b"v" * 500)], compression=3))
    buf[HEADER_SIZE + 10 :] = b"\x00" * (len(buf) - HEADER_SIZE - 10)
    with pytest.raises(InvalidBatchError, match="lz4"):
        decode_batch(reseal(buf))


def test_crc_checked_unless_told_not_to() -> None:
    buf = plain_batch()
    buf[-2] ^= 0xFF  # last value byte (the header count follows): CRC breaks, records parse
    with pytest.raises(InvalidBatchError, match="CRC"):
        decode_batch(bytes(buf))
    _, records = decode_batch(bytes(buf), check_crc=False)
    assert records[-1].value == b"valu" + bytes([ord("e") ^ 0xFF])
