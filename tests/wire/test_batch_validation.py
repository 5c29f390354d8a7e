"""Produced-batch validation: every way a batch can be wrong gets the code Kafka 4.0 answers.

Batches are built with ``kafkette.wire.records`` and then damaged; unless a
case is about the checksum, the CRC is recomputed so the validator reaches
the later checks. The expected codes were read from a running Apache Kafka
4.0.0 (see docs/produce-validation.md); the one rule
that is kafkette's own (offset deltas 0..n-1) is marked.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafkette.wire import batch_validation
from kafkette.wire.batch_validation import (
    REASON_FIELDS,
    REASON_HEADER_COUNT,
    REASON_HEADER_KEY,
    REASON_LEFTOVER,
    REASON_LENGTH,
    REASON_OFFSET_DELTA,
    REASON_TRUNCATED,
    REASON_VARINT,
    python_walk,
    validate_produce_records,
)
from kafkette.wire.compression import compress
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import CRC_START, HEADER_SIZE, InvalidBatchError
from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_batch_from_values,
    build_control_batch,
    encode_varint,
)

try:
    from kafkette.wire._record_walk import walk as c_walk
except ImportError:  # pragma: no cover - the package was installed without a compiler
    c_walk = None

LIMIT = 1 << 20
VALUES = [(None, b"value-%d" % i) for i in range(3)]
GOOD = build_batch_from_values(VALUES)
RECORDS = GOOD[HEADER_SIZE:]

WALKS = [pytest.param(python_walk, id="python")]
if c_walk is not None:
    WALKS.append(pytest.param(c_walk, id="c"))


# --- building damaged batches ----------------------------------------------------------


def with_crc(batch: bytes | bytearray) -> bytes:
    import crc32c

    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


def set_int(batch: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, offset, value)
    return with_crc(out)


def with_payload(batch: bytes, payload: bytes, codec: int | None = None) -> bytes:
    """``batch``'s header over ``payload``, with batchLength, codec and CRC made consistent."""
    out = bytearray(batch[:HEADER_SIZE]) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)
    if codec is not None:
        (attributes,) = struct.unpack_from(">h", out, 21)
        struct.pack_into(">h", out, 21, (attributes & ~0x07) | codec)
    return with_crc(out)


def record(offset_delta: int, value: bytes = b"v", key: bytes | None = None) -> bytes:
    return build_batch([Record(offset_delta, 0, key, value)])[HEADER_SIZE:]


def raw_record(*fields: int | bytes, attributes: int = 0) -> bytes:
    """A record from varints (ints) and raw bytes, after its attributes byte, length in front."""
    body = bytearray([attributes])
    for field in fields:
        if isinstance(field, int):
            encode_varint(field, body)
        else:
            body += field
    out = bytearray()
    encode_varint(len(body), out)
    return bytes(out + body)


def tail() -> bytes:
    """Records 1 and 2, after a hand-made record 0."""
    return record(1) + record(2)


# --- the table -------------------------------------------------------------------------

INVALID_RECORD = ErrorCode.INVALID_RECORD
CORRUPT = ErrorCode.CORRUPT_MESSAGE

CASES: dict[str, tuple[bytes, ErrorCode]] = {
    # Header fields against each other (Kafka's LogValidator.validateBatch)
    "3 records, lastOffsetDelta 0": (set_int(GOOD, 23, ">i", 0), INVALID_RECORD),
    "3 records, lastOffsetDelta 1000": (set_int(GOOD, 23, ">i", 1000), INVALID_RECORD),
    "recordsCount 1 over 3 records": (
        set_int(set_int(GOOD, 23, ">i", 0), 57, ">i", 1),
        INVALID_RECORD,
    ),
    "recordsCount 5 over 3 records": (
        set_int(set_int(GOOD, 23, ">i", 4), 57, ">i", 5),
        INVALID_RECORD,
    ),
    "recordsCount 0": (set_int(set_int(GOOD, 23, ">i", -1), 57, ">i", 0), INVALID_RECORD),
    "negative recordsCount": (set_int(GOOD, 57, ">i", -3), INVALID_RECORD),
    "empty batch": (build_batch([], last_offset_delta=0), INVALID_RECORD),
    "control batch": (
        build_control_batch(ControlRecordType.ABORT, producer_id=5, producer_epoch=0),
        INVALID_RECORD,
    ),
    "producer id without a sequence": (
        build_batch_from_values(VALUES, producer_id=7, producer_epoch=0, base_sequence=-1),
        INVALID_RECORD,
    ),
    # Framing outside the CRC (ProduceRequest.validateRecords, UnifiedLog)
    "magic 1": (GOOD[:16] + b"\x01" + GOOD[17:], INVALID_RECORD),
    "two batches": (GOOD + GOOD, INVALID_RECORD),
    "baseOffset 5": (struct.pack(">q", 5) + GOOD[8:], INVALID_RECORD),
    "truncated batch": (GOOD[:-1], INVALID_RECORD),
    "fewer than 12 bytes": (GOOD[:11], INVALID_RECORD),
    "batchLength 10": (GOOD[:8] + struct.pack(">i", 10) + GOOD[12:], CORRUPT),
    "batchLength 30": (GOOD[:8] + struct.pack(">i", 30) + GOOD[12:], CORRUPT),
    # The checksum
    "payload byte flipped": (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), CORRUPT),
    "codec 7 and a bad CRC": (GOOD[:22] + bytes([GOOD[22] | 7]) + GOOD[23:], CORRUPT),
    # Codecs
    "codec 7": (set_int(GOOD, 21, ">h", 7), ErrorCode.UNKNOWN_SERVER_ERROR),
    "codec 5": (set_int(GOOD, 21, ">h", 5), ErrorCode.UNKNOWN_SERVER_ERROR),
    # Records of an uncompressed batch (DefaultRecord.readFrom)
    "garbage records": (with_payload(GOOD, bytes(range(200, 240))), INVALID_RECORD),
    "bytes after the last record": (with_payload(GOOD, RECORDS + b"\x00\x00"), INVALID_RECORD),
    "last record cut short": (with_payload(GOOD, RECORDS[:-3]), INVALID_RECORD),
    "record length longer than its fields": (
        with_payload(GOOD, raw_record(0, 0, -1, 1, b"v", 0, b"\x00\x00") + tail()),
        INVALID_RECORD,
    ),
    "value overruns its record": (
        with_payload(GOOD, raw_record(0, 0, -1, 50, b"v", 0) + tail()),
        INVALID_RECORD,
    ),
    "negative header count": (
        with_payload(GOOD, raw_record(0, 0, -1, 1, b"v", -1) + tail()),
        INVALID_RECORD,
    ),
    "header with a null key": (
        with_payload(GOOD, raw_record(0, 0, -1, 1, b"v", 1, -1, -1) + tail()),
        INVALID_RECORD,
    ),
    "varint of 6 bytes": (
        with_payload(GOOD, raw_record(0, 0, -1, b"\xff" * 5 + b"\x01", 0) + tail()),
        INVALID_RECORD,
    ),
    # kafkette's own rule: Kafka stores these uncompressed (see the module docstring)
    "offset deltas 0, 0, 0": (with_payload(GOOD, record(0) * 3), INVALID_RECORD),
    "offset deltas 0, 2, 1": (
        with_payload(GOOD, record(0) + record(2) + record(1)),
        INVALID_RECORD,
    ),
    "offset deltas 5, 6, 7": (
        with_payload(GOOD, record(5) + record(6) + record(7)),
        INVALID_RECORD,
    ),
}

for _codec, _name in ((1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")):
    CASES[f"{_name}: garbage instead of a stream"] = (
        with_payload(GOOD, bytes(range(7, 47)), _codec),
        ErrorCode.UNKNOWN_SERVER_ERROR,
    )
    CASES[f"{_name}: a valid stream of garbage records"] = (
        with_payload(GOOD, compress(_codec, bytes(range(200, 240))), _codec),
        INVALID_RECORD,
    )
    CASES[f"{_name}: two records where the header says three"] = (
        with_payload(GOOD, compress(_codec, record(0) + record(1)), _codec),
        INVALID_RECORD,
    )
    CASES[f"{_name}: bytes after the last record"] = (
        with_payload(GOOD, compress(_codec, RECORDS + b"\x00\x00"), _codec),
        INVALID_RECORD,
    )
    CASES[f"{_name}: offset deltas 0, 0, 0"] = (
        with_payload(GOOD, compress(_codec, record(0) * 3), _codec),
        INVALID_RECORD,
    )
    CASES[f"{_name}: stream cut short"] = (
        with_payload(GOOD, compress(_codec, RECORDS * 50)[:-7], _codec),
        ErrorCode.UNKNOWN_SERVER_ERROR,
    )


@pytest.fixture(params=WALKS)
def either_walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test with the C walk and again with the pure-Python fallback."""
    monkeypatch.setattr(batch_validation, "_walk", request.param)


@pytest.mark.usefixtures("either_walk")
@pytest.mark.parametrize("batch,expected", CASES.values(), ids=CASES.keys())
def test_invalid_batch_gets_kafkas_code(batch: bytes, expected: ErrorCode) -> None:
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(batch, max_message_bytes=LIMIT)
    assert excinfo.value.error == expected, str(excinfo.value)
    assert excinfo.value.corrupt == (expected == CORRUPT)


def test_zstd_needs_produce_v7() -> None:
    batch = build_batch_from_values(VALUES, compression=4)
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(batch, max_message_bytes=LIMIT, produce_version=6)
    assert excinfo.value.error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert validate_produce_records(batch, max_message_bytes=LIMIT, produce_version=7).size == len(
        batch
    )


def test_too_large_is_message_too_large_before_the_crc() -> None:
    damaged = GOOD[:-1] + bytes([GOOD[-1] ^ 1])
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(damaged, max_message_bytes=len(GOOD) - 1)
    assert excinfo.value.error == ErrorCode.MESSAGE_TOO_LARGE
    assert "max.message.bytes" in (excinfo.value.client_message or "")


def test_only_kafkas_own_messages_reach_the_client() -> None:
    # Kafka sends error_message only for a batch below the minimum size; the rest say nothing.
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(set_int(GOOD, 23, ">i", 0), max_message_bytes=LIMIT)
    assert excinfo.value.client_message is None
    assert "lastOffsetDelta" in str(excinfo.value)
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(CASES["batchLength 10"][0], max_message_bytes=LIMIT)
    assert excinfo.value.client_message == (
        "Record size 10 is less than the minimum record overhead (14)"
    )


@pytest.mark.parametrize("extra", [1, 5, 11])
def test_bytes_too_short_for_a_second_batch_are_ignored(extra: int) -> None:
    # Kafka's batch iterator stops when fewer than 12 bytes are left; they are not stored.
    header = validate_produce_records(GOOD + b"\x00" * extra, max_message_bytes=LIMIT)
    assert header.size == len(GOOD)


def test_a_partial_second_batch_is_ignored() -> None:
    assert validate_produce_records(GOOD + GOOD[:40], max_message_bytes=LIMIT).size == len(GOOD)


@pytest.mark.usefixtures("either_walk")
def test_real_clients_batches_are_valid(codec: int) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=42,
        producer_epoch=0,
        base_sequence=5,
        batch_size=1 << 20,
    )
    for i in range(300):  # offset deltas past 63 take two varint bytes
        key = None if i % 5 == 0 else b"key-%d" % i
        headers = [(f"h{j}", b"x" * j if j else None) for j in range(i % 4)]
        builder.append(i, 1_700_000_000_000 + i * 70_000, key, os.urandom(i % 300), headers)
    batch = bytes(builder.build())
    header = validate_produce_records(batch, max_message_bytes=LIMIT)
    assert (header.records_count, header.compression) == (300, codec)


def test_large_values_and_headers_are_valid() -> None:
    records = [
        Record(i, i * 1000, b"k" * 200, os.urandom(20_000 * i), [("trace", b"t" * 300)])
        for i in range(4)
    ]
    batch = build_batch(records)
    assert validate_produce_records(batch, max_message_bytes=LIMIT).records_count == 4


# --- the CRC comes first --------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.data())
@example(data=None)  # replaced below: recordsCount's sign bit, the case that used to fail
def test_any_flipped_bit_in_crc_range_is_corrupt_message(data: st.DataObject | None) -> None:
    if data is None:
        position, bit = 57, 7
    else:
        position = data.draw(st.integers(CRC_START, len(GOOD) - 1), label="position")
        bit = data.draw(st.integers(0, 7), label="bit")
    broken = bytearray(GOOD)
    broken[position] ^= 1 << bit
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(bytes(broken), max_message_bytes=LIMIT)
    assert excinfo.value.error == CORRUPT


# --- the two walks ---------------------------------------------------------------------

WALK_CASES = [
    (RECORDS, 3, None),
    (RECORDS, 2, (REASON_LEFTOVER, 2)),
    (RECORDS, 4, (REASON_TRUNCATED, 3)),
    (RECORDS[:-1], 3, (REASON_LENGTH, 2)),
    (b"\x00" + RECORDS, 3, (REASON_LENGTH, 0)),
    (record(0) + record(0), 2, (REASON_OFFSET_DELTA, 1)),
    (raw_record(0, 0, -1, 1, b"v", -1), 1, (REASON_HEADER_COUNT, 0)),
    (raw_record(0, 0, -1, 1, b"v", 1, -1, -1), 1, (REASON_HEADER_KEY, 0)),
    (raw_record(0, 0, -1, 1, b"v", 0, b"\x00"), 1, (REASON_FIELDS, 0)),
    (raw_record(0, 0, -1, b"\xff" * 5 + b"\x01", 0), 1, (REASON_VARINT, 0)),
    (raw_record(0, 0, -1, 100, b"v", 0), 1, (REASON_TRUNCATED, 0)),
    (raw_record(0, 0, -7, -9, 0), 1, None),  # any negative key/value length is null
    (raw_record(b"\x80" * 9 + b"\x01", 0, -1, 1, b"v", 0), 1, None),  # a 10-byte varlong
    (raw_record(0, 0, -1, 1, b"v", 1, 1, b"\xff", -1, attributes=7), 1, None),
]


@pytest.mark.parametrize("walk", WALKS)
@pytest.mark.parametrize("body,count,expected", WALK_CASES)
def test_walk_reasons(walk: Callable, body: bytes, count: int, expected: object) -> None:
    assert walk(body, count) == expected
    assert walk(memoryview(bytearray(body)), count) == expected


def test_the_c_walk_is_used_when_built() -> None:
    if c_walk is None:
        pytest.skip("installed without a C compiler: the pure-Python walk is in use")
    assert batch_validation._walk is c_walk


@pytest.mark.skipif(c_walk is None, reason="installed without a C compiler")
@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(st.binary(max_size=300), min_size=1, max_size=80),
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 3),
    extra_count=st.integers(-1, 1),
)
def test_c_walk_agrees_with_the_python_walk(
    values: list[bytes], edits: list[tuple[int, int]], cut: int, extra_count: int
) -> None:
    records = [
        Record(i, i * 3, None if i % 3 else b"k", v, [("h", v[:5])] if i % 4 == 1 else [])
        for i, v in enumerate(values)
    ]
    body = bytearray(build_batch(records)[HEADER_SIZE:])
    for position, byte in edits:
        body[position % len(body)] = byte
    body = body[: len(body) - cut]
    count = len(values) + extra_count
    assert c_walk is not None
    assert c_walk(bytes(body), count) == python_walk(bytes(body), count)


def test_control_batch_records_pass_the_walk() -> None:
    batch = build_control_batch(ControlRecordType.COMMIT, producer_id=5, producer_epoch=0)
    assert python_walk(memoryview(batch)[HEADER_SIZE:], 1) is None


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_is_message_too_large(codec: int) -> None:
    # 8 MiB of zeros in one record: a few KiB compressed, over 64 x a 16 KiB max.message.bytes.
    batch = build_batch([Record(0, 0, None, bytes(8 << 20))], compression=codec)
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_produce_records(batch, max_message_bytes=16 << 10)
    assert excinfo.value.error == ErrorCode.MESSAGE_TOO_LARGE
    # Under the default max.message.bytes the same batch is fine (64 MiB of records allowed).
    assert validate_produce_records(batch, max_message_bytes=1 << 20).records_count == 1
