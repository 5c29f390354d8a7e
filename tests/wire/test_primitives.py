"""Kafka's primitive types: every writer's output reads back equal, and every truncation
of it raises ``MalformedFrameError`` (never ``struct.error``, ``IndexError`` or
``UnicodeDecodeError``)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkette.wire import primitives as p
from kafkette.wire.exceptions import EncodeError, MalformedFrameError
from tests.wire.message_values import INT_RANGES as INT_TYPES

# (reader, writer, strategy of values it carries)
CODECS = {
    **{
        name: (p.FIXED_READERS[name], p.FIXED_WRITERS[name], st.integers(low, high))
        for name, (low, high) in INT_TYPES.items()
    },
    "float64": (p.read_float64, p.write_float64, st.floats(allow_nan=False)),
    "bool": (p.read_bool, p.write_bool, st.booleans()),
    "uuid": (p.read_uuid, p.write_uuid, st.uuids()),
    "uvarint": (p.read_uvarint, p.write_uvarint, st.integers(0, 2**32 - 1)),
    "varint": (p.read_varint, p.write_varint, st.integers(-(2**31), 2**31 - 1)),
    "varlong": (p.read_varint, p.write_varint, st.integers(-(2**63), 2**63 - 1)),
    "string": (p.read_string, p.write_string, st.none() | st.text(max_size=40)),
    "compact_string": (p.read_compact_string, p.write_compact_string, st.none() | st.text()),
    "bytes": (p.read_bytes, p.write_bytes, st.none() | st.binary(max_size=300)),
    "compact_bytes": (p.read_compact_bytes, p.write_compact_bytes, st.none() | st.binary()),
}


@pytest.mark.parametrize("name", sorted(CODECS))
@given(data=st.data())
def test_read_back_equal(name: str, data: st.DataObject) -> None:
    read, write, values = CODECS[name]
    value = data.draw(values)
    prefix = data.draw(st.binary(max_size=3))
    out = bytearray(prefix)
    write(out, value)
    got, end = read(memoryview(bytes(out)), len(prefix))
    assert got == value
    assert end == len(out)


@pytest.mark.parametrize("name", sorted(CODECS))
@given(data=st.data())
def test_truncated_input_is_malformed(name: str, data: st.DataObject) -> None:
    read, write, values = CODECS[name]
    out = bytearray()
    write(out, data.draw(values))
    cut = data.draw(st.integers(0, len(out) - 1))
    with pytest.raises(MalformedFrameError):
        read(memoryview(bytes(out[:cut])), 0)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varint_is_zigzag(value: int) -> None:
    out = bytearray()
    p.write_varint(out, value)
    zigzag = (value << 1) ^ (value >> 63)
    expected = bytearray()
    p.write_uvarint(expected, zigzag)
    assert out == expected
    assert p.read_uvarint(memoryview(bytes(out)), 0)[0] == zigzag


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    """Values from the zigzag table of Protocol Buffers' encoding documentation."""
    out = bytearray()
    p.write_varint(out, value)
    assert bytes(out) == encoded
    assert p.read_varint(memoryview(encoded), 0) == (value, len(encoded))


def test_uvarint_longer_than_ten_bytes_is_malformed() -> None:
    with pytest.raises(MalformedFrameError):
        p.read_uvarint(memoryview(b"\x80" * 11 + b"\x01"), 0)


@pytest.mark.parametrize(
    ("read", "encoded"),
    [
        (p.read_string, b"\xff\xff"),
        (p.read_compact_string, b"\x00"),
        (p.read_bytes, b"\xff\xff\xff\xff"),
        (p.read_compact_bytes, b"\x00"),
        (p.read_records, b"\xff\xff\xff\xff"),
        (p.read_compact_records, b"\x00"),
    ],
)
def test_null_markers(read: p.Reader, encoded: bytes) -> None:
    assert read(memoryview(encoded), 0) == (None, len(encoded))


@pytest.mark.parametrize(
    ("read", "encoded"),
    [
        (p.read_string, b"\xff\xfe"),  # -2: only -1 means null
        (p.read_bytes, b"\xff\xff\xff\xfe"),
        (p.read_records, b"\x80\x00\x00\x00"),
    ],
)
def test_negative_lengths_are_malformed(read: p.Reader, encoded: bytes) -> None:
    with pytest.raises(MalformedFrameError):
        read(memoryview(encoded + b"\0" * 8), 0)


@pytest.mark.parametrize(
    "read",
    [p.read_string, p.read_compact_string, p.read_bytes, p.read_compact_bytes, p.read_records],
)
def test_huge_claimed_length_is_malformed_without_allocating(read: p.Reader) -> None:
    claims = {
        p.read_string: struct.pack(">h", 32767),
        p.read_compact_string: b"\xff\xff\xff\xff\x0f",
        p.read_bytes: struct.pack(">i", 2**31 - 1),
        p.read_compact_bytes: b"\xff\xff\xff\xff\x0f",
        p.read_records: struct.pack(">i", 2**31 - 1),
    }
    with pytest.raises(MalformedFrameError):
        read(memoryview(claims[read] + b"abc"), 0)


@given(st.binary(min_size=1, max_size=20).filter(lambda raw: not _is_utf8(raw)))
def test_invalid_utf8_is_malformed(raw: bytes) -> None:
    with pytest.raises(MalformedFrameError):
        p.read_string(memoryview(struct.pack(">h", len(raw)) + raw), 0)
    compact = bytearray()
    p.write_uvarint(compact, len(raw) + 1)
    with pytest.raises(MalformedFrameError):
        p.read_compact_string(memoryview(bytes(compact) + raw), 0)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_records_are_a_view_and_bytes_a_copy() -> None:
    frame = bytearray(struct.pack(">i", 3) + b"abc")
    records, _ = p.read_records(memoryview(frame), 0)
    data, _ = p.read_bytes(memoryview(frame), 0)
    frame[4] = ord("X")
    assert bytes(records) == b"Xbc"  # type: ignore[arg-type]
    assert data == b"abc"


def test_uuid_none_writes_the_zero_uuid() -> None:
    out = bytearray()
    p.write_uuid(out, None)
    assert bytes(out) == bytes(16)
    assert p.read_uuid(memoryview(bytes(out)), 0) == (uuid.UUID(int=0), 16)


@pytest.mark.parametrize(
    ("write", "value"),
    [
        (p.write_int8, 128),
        (p.write_int16, -(2**15) - 1),
        (p.write_int32, 2**31),
        (p.write_uint16, -1),
    ],
)
def test_out_of_range_is_an_encode_error(write: p.Writer, value: int) -> None:
    with pytest.raises(EncodeError):
        write(bytearray(), value)
