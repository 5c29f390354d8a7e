"""Kafka's primitive types: readers ``(buf, pos) -> (value, pos)`` and writers ``(out, value)``.

Readers take a ``memoryview`` of a whole frame and raise ``MalformedFrameError``
on anything short or impossible, never ``struct.error`` or ``IndexError``.
Writers append to a ``bytearray``. Names follow Kafka's type names; the
``compact_`` variants are the flexible-version encodings (unsigned varint
length + 1, with 0 meaning null).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

from kafkette.wire.exceptions import EncodeError, MalformedFrameError

Reader = Callable[[memoryview, int], tuple[object, int]]
Writer = Callable[[bytearray, object], None]

ZERO_UUID = uuid.UUID(int=0)

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")


def _fixed(codec: struct.Struct) -> tuple[Reader, Writer]:
    size = codec.size
    unpack_from = codec.unpack_from
    pack = codec.pack

    def read(buf: memoryview, pos: int) -> tuple[object, int]:
        if pos + size > len(buf):
            raise MalformedFrameError("frame ends inside a fixed-size field")
        return unpack_from(buf, pos)[0], pos + size

    def write(out: bytearray, value: object) -> None:
        try:
            out += pack(value)
        except struct.error as exc:
            raise EncodeError(f"value {value!r} does not fit: {exc}") from None

    return read, write


read_int8, write_int8 = _fixed(_INT8)
read_int16, write_int16 = _fixed(_INT16)
read_uint16, write_uint16 = _fixed(_UINT16)
read_int32, write_int32 = _fixed(_INT32)
read_uint32, write_uint32 = _fixed(_UINT32)
read_int64, write_int64 = _fixed(_INT64)
read_float64, write_float64 = _fixed(_FLOAT64)


def read_bool(buf: memoryview, pos: int) -> tuple[object, int]:
    if pos >= len(buf):
        raise MalformedFrameError("frame ends inside a bool")
    return buf[pos] != 0, pos + 1


def write_bool(out: bytearray, value: object) -> None:
    out.append(1 if value else 0)


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint, at most 5 bytes for Kafka's 32-bit lengths and counts."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise MalformedFrameError("frame ends inside a varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise MalformedFrameError("varint longer than 10 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        value &= 0xFFFFFFFFFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed varint (varint and varlong share this)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, (value << 1) ^ (value >> 63))


def read_uuid(buf: memoryview, pos: int) -> tuple[object, int]:
    if pos + 16 > len(buf):
        raise MalformedFrameError("frame ends inside a uuid")
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def write_uuid(out: bytearray, value: object) -> None:
    out += (value or ZERO_UUID).bytes  # type: ignore[union-attr]


def _take(buf: memoryview, pos: int, length: int) -> memoryview:
    if length < 0 or pos + length > len(buf):
        raise MalformedFrameError(f"length {length} runs past the end of the frame")
    return buf[pos : pos + length]


def _decode_text(raw: memoryview) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedFrameError(f"string is not valid UTF-8: {exc}") from None


def read_string(buf: memoryview, pos: int) -> tuple[object, int]:
    length, pos = read_int16(buf, pos)
    if length == -1:
        return None, pos
    return _decode_text(_take(buf, pos, length)), pos + length  # type: ignore[arg-type]


def read_compact_string(buf: memoryview, pos: int) -> tuple[object, int]:
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    length -= 1
    return _decode_text(_take(buf, pos, length)), pos + length


def write_string(out: bytearray, value: object) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode("utf-8")  # type: ignore[union-attr]
    out += _INT16.pack(len(raw))
    out += raw


def write_compact_string(out: bytearray, value: object) -> None:
    if value is None:
        out.append(0)
        return
    raw = value.encode("utf-8")  # type: ignore[union-attr]
    write_uvarint(out, len(raw) + 1)
    out += raw


def read_bytes(buf: memoryview, pos: int) -> tuple[object, int]:
    length, pos = read_int32(buf, pos)
    if length == -1:
        return None, pos
    return bytes(_take(buf, pos, length)), pos + length  # type: ignore[arg-type]


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[object, int]:
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    length -= 1
    return bytes(_take(buf, pos, length)), pos + length


def write_bytes(out: bytearray, value: object) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _INT32.pack(len(value))  # type: ignore[arg-type]
    out += value  # type: ignore[operator]


def write_compact_bytes(out: bytearray, value: object) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)  # type: ignore[arg-type]
    out += value  # type: ignore[operator]


def read_records(buf: memoryview, pos: int) -> tuple[object, int]:
    """Records stay a zero-copy view into the frame: Produce patches them in place."""
    length, pos = read_int32(buf, pos)
    if length == -1:
        return None, pos
    return _take(buf, pos, length), pos + length  # type: ignore[arg-type]


def read_compact_records(buf: memoryview, pos: int) -> tuple[object, int]:
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    length -= 1
    return _take(buf, pos, length), pos + length


FIXED_READERS: dict[str, Reader] = {
    "int8": read_int8,
    "int16": read_int16,
    "uint16": read_uint16,
    "int32": read_int32,
    "uint32": read_uint32,
    "int64": read_int64,
    "float64": read_float64,
    "bool": read_bool,
    "uuid": read_uuid,
}
FIXED_WRITERS: dict[str, Writer] = {
    "int8": write_int8,
    "int16": write_int16,
    "uint16": write_uint16,
    "int32": write_int32,
    "uint32": write_uint32,
    "int64": write_int64,
    "float64": write_float64,
    "bool": write_bool,
    "uuid": write_uuid,
}
