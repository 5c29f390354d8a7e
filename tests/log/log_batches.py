"""Builds valid magic-v2 record batches for the log tests (uncompressed records).

Standalone on purpose: the subprocess crash test imports it from a child
process by path. Base offsets are written as 0; the log patches them.
"""

from __future__ import annotations

import struct

import crc32c

_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _record(offset_delta: int, timestamp_delta: int, value: bytes) -> bytes:
    body = (
        b"\x00"
        + _varint(timestamp_delta)
        + _varint(offset_delta)
        + _varint(-1)  # null key
        + _varint(len(value))
        + value
        + _varint(0)  # no headers
    )
    return _varint(len(body)) + body


def build_batch(
    values: list[bytes], *, base_timestamp: int = 1_700_000_000_000, timestamp_step: int = 1
) -> bytearray:
    """A v2 batch holding one record per value, timestamps base + i*step."""
    assert values, "a batch holds at least one record"
    records = b"".join(
        _record(i, i * timestamp_step, value) for i, value in enumerate(values)
    )
    max_timestamp = base_timestamp + (len(values) - 1) * timestamp_step
    after_crc = _HEADER_AFTER_CRC.pack(
        0, len(values) - 1, base_timestamp, max_timestamp, -1, -1, -1, len(values)
    ) + records
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # leaderEpoch + magic + crc + rest
    return bytearray(struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + after_crc)


def build_sized_batch(
    record_count: int, value_size: int, *, base_timestamp: int = 1_700_000_000_000, seed: int = 0
) -> bytearray:
    """A batch of ``record_count`` records with ``value_size``-byte values."""
    values = [bytes([(seed + i) % 251]) * value_size for i in range(record_count)]
    return build_batch(values, base_timestamp=base_timestamp)
