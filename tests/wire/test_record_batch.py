"""The hot-path batch header module against batches kafka-python's producer code builds."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkette.wire.record_batch import (
    CRC_START,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    InvalidBatchError,
    batch_size_at,
    iter_batches,
    patch_base_offset,
    patch_leader_epoch,
    read_header,
    set_log_append_time,
    validate_batch,
)

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

BASE_TS = 1_700_000_000_000


def kafka_python_batch(
    codec: int = 0,
    count: int = 20,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A batch exactly as kafka-python's producer builds it (repetitive values compress).

    ``codec`` must be usable by kafka-python here (the ``codec`` fixture checks).
    """
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for i in range(count):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = b"value %d " % i * 20
        headers = [("h", b"x" * i)] if i % 3 == 0 else []
        assert builder.append(i, BASE_TS + i * 7, key, value, headers) is not None
    return bytes(builder.build())


@pytest.fixture(scope="module")
def plain_batch() -> bytes:
    return kafka_python_batch(0, count=10)


def test_kafka_python_batches_validate(codec: int) -> None:
    batch = kafka_python_batch(codec)
    header = validate_batch(batch)
    assert header.compression == codec, "kafka-python fell back to no compression"
    assert header.size == len(batch)
    assert header.records_count == 20
    assert header.last_offset_delta == 19
    assert header.base_timestamp == BASE_TS
    assert header.max_timestamp == BASE_TS + 19 * 7
    assert not header.is_control and not header.is_transactional
    assert not header.has_producer_id and header.last_sequence == -1
    assert batch_size_at(batch) == len(batch)


def test_idempotent_transactional_batch_fields() -> None:
    batch = kafka_python_batch(
        0, count=4, producer_id=42, producer_epoch=3, base_sequence=10, transactional=True
    )
    header = validate_batch(batch)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 10)
    assert header.is_transactional and header.has_producer_id
    assert header.last_sequence == 13


def test_last_sequence_wraps_at_int32(plain_batch: bytes) -> None:
    header = read_header(plain_batch)
    wrapped = header._replace(base_sequence=(1 << 31) - 3)
    assert wrapped.last_sequence == (header.last_offset_delta - 3) % (1 << 31)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_flipped_bit_in_crc_range_is_detected(plain_batch: bytes, data: st.DataObject) -> None:
    position = data.draw(st.integers(CRC_START, len(plain_batch) - 1), label="position")
    bit = data.draw(st.integers(0, 7), label="bit")
    broken = bytearray(plain_batch)
    broken[position] ^= 1 << bit
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_batch(broken)
    assert excinfo.value.corrupt


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_flipped_bit_outside_crc_is_no_crc_error(plain_batch: bytes, data: st.DataObject) -> None:
    # baseOffset (0..7) and partitionLeaderEpoch (12..15) are outside the CRC.
    position = data.draw(st.sampled_from([*range(0, 8), *range(12, 16)]), label="position")
    bit = data.draw(st.integers(0, 7), label="bit")
    changed = bytearray(plain_batch)
    changed[position] ^= 1 << bit
    header = validate_batch(changed)
    original = read_header(plain_batch)
    assert (header.base_offset, header.partition_leader_epoch) != (
        original.base_offset,
        original.partition_leader_epoch,
    )


def test_flipped_crc_field_is_detected(plain_batch: bytes) -> None:
    broken = bytearray(plain_batch)
    broken[17] ^= 0x01
    with pytest.raises(InvalidBatchError, match="CRC"):
        validate_batch(broken)


def test_patch_base_offset_and_epoch_keep_crc_valid(plain_batch: bytes) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    buf = bytearray(plain_batch)
    patch_base_offset(buf, 1_234_567_890_123)
    patch_leader_epoch(buf, 17)
    header = validate_batch(buf)
    assert header.base_offset == 1_234_567_890_123
    assert header.partition_leader_epoch == 17
    assert header.last_offset == 1_234_567_890_123 + 9
    assert header.next_offset == 1_234_567_890_123 + 10
    reader = DefaultRecordBatch(bytes(buf))
    assert reader.validate_crc()
    assert [r.offset for r in reader] == list(range(1_234_567_890_123, 1_234_567_890_133))


def test_patch_at_position_inside_a_record_set(plain_batch: bytes) -> None:
    buf = bytearray(plain_batch * 3)
    size = len(plain_batch)
    patch_base_offset(buf, 10, pos=size)
    patch_leader_epoch(buf, 5, pos=2 * size)
    headers = iter_batches(buf)
    assert [h.base_offset for h in headers] == [0, 10, 0]
    assert [h.partition_leader_epoch for h in headers] == [0, 0, 5]


def test_set_log_append_time_marks_batch_and_keeps_crc(plain_batch: bytes) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    buf = bytearray(plain_batch)
    append_time = BASE_TS + 999_999
    set_log_append_time(buf, append_time)
    header = validate_batch(buf)
    assert header.max_timestamp == append_time
    assert header.is_log_append_time
    assert header.attributes & TIMESTAMP_TYPE_MASK
    reader = DefaultRecordBatch(bytes(buf))
    assert reader.validate_crc()
    assert reader.timestamp_type == 1
    assert {r.timestamp for r in reader} == {append_time}


@pytest.mark.parametrize("cut", [0, 1, 11, 12, 60, 61, 62, -1])
def test_truncated_batch_is_refused(plain_batch: bytes, cut: int) -> None:
    truncated = plain_batch[:cut]
    with pytest.raises(InvalidBatchError):
        validate_batch(truncated)


def test_end_bound_is_respected(plain_batch: bytes) -> None:
    with pytest.raises(InvalidBatchError, match="remain"):
        validate_batch(plain_batch + b"\x00" * 10, end=len(plain_batch) - 1)
    assert validate_batch(plain_batch + b"\x00" * 10, end=len(plain_batch)).size == len(
        plain_batch
    )


@pytest.mark.parametrize("magic", [0, 1, 3, 255])
def test_bad_magic_is_refused(plain_batch: bytes, magic: int) -> None:
    broken = bytearray(plain_batch)
    broken[16] = magic
    with pytest.raises(InvalidBatchError, match="magic"):
        read_header(broken)
    with pytest.raises(InvalidBatchError, match="magic"):
        validate_batch(broken)


def test_batch_length_below_header_is_refused(plain_batch: bytes) -> None:
    broken = bytearray(plain_batch)
    struct.pack_into(">i", broken, 8, HEADER_SIZE - 13)
    with pytest.raises(InvalidBatchError, match="too small"):
        read_header(broken)


def test_negative_counts_are_invalid_record_not_corrupt(plain_batch: bytes) -> None:
    import crc32c

    broken = bytearray(plain_batch)
    struct.pack_into(">i", broken, 57, -1)  # recordsCount
    struct.pack_into(">I", broken, 17, crc32c.crc32c(bytes(broken[CRC_START:])))
    with pytest.raises(InvalidBatchError) as excinfo:
        validate_batch(broken)
    assert not excinfo.value.corrupt


def test_iter_batches_walks_a_record_set() -> None:
    batches = [kafka_python_batch(0, count=n) for n in (1, 5, 2)]
    record_set = b"".join(batches)
    headers = iter_batches(record_set)
    assert [h.records_count for h in headers] == [1, 5, 2]
    assert [h.size for h in headers] == [len(b) for b in batches]
    assert iter_batches(b"") == []


@pytest.mark.parametrize("validate", [True, False])
def test_iter_batches_refuses_trailing_bytes(plain_batch: bytes, validate: bool) -> None:
    with pytest.raises(InvalidBatchError):
        iter_batches(plain_batch + plain_batch[:30], validate=validate)
    with pytest.raises(InvalidBatchError):
        iter_batches(plain_batch + plain_batch[:-1], validate=validate)


def test_batch_size_at_needs_twelve_bytes(plain_batch: bytes) -> None:
    assert batch_size_at(plain_batch[:11]) is None
    assert batch_size_at(plain_batch[:12]) == len(plain_batch)


def test_every_flipped_bit_in_crc_range_is_corrupt(plain_batch: bytes) -> None:
    """Exhaustive, so no example depends on hypothesis replaying it: the CRC is checked before
    any field inside its range (a negative recordsCount used to read as INVALID_RECORD)."""
    for position in range(CRC_START, len(plain_batch)):
        for bit in range(8):
            broken = bytearray(plain_batch)
            broken[position] ^= 1 << bit
            with pytest.raises(InvalidBatchError) as excinfo:
                validate_batch(broken)
            assert excinfo.value.corrupt, (position, bit, str(excinfo.value))


def test_flagged_transactional_reads_the_attribute_bit() -> None:
    from kafkette.wire.record_batch import flagged_transactional
    from kafkette.wire.records import Record, build_batch

    record = Record(0, 0, b"k", b"v")
    plain = build_batch([record], producer_id=7, producer_epoch=0, base_sequence=0)
    txn = build_batch(
        [record], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True
    )
    assert not flagged_transactional(plain)
    assert flagged_transactional(txn)
    assert flagged_transactional(memoryview(txn))
    assert not flagged_transactional(txn[:22])  # too short to hold the attributes
    not_v2 = bytearray(txn)
    not_v2[16] = 1
    assert not flagged_transactional(not_v2)
