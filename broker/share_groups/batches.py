"""The batch headers a share fetch needs from a log read.

A share partition hands out offsets, so of the stored batches it reads it needs only
each batch's offset range and, for read_committed, whose transaction it belongs to and
which control batches are ABORT markers. That is one header read per batch (and, for a
control batch, its one record's key), never a record walk: the batches go to the client
as stored, and the client skips what it was not given.
"""

from __future__ import annotations

import struct

from kafkette.broker.share_groups.delivery_state import FetchedBatch
from kafkette.wire.primitives import read_varint

# v2 batch header: baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
# magic int8, crc int32, attributes int16, lastOffsetDelta int32, ...,
# producerId int64 at byte 43; the records start at byte 61.
_HEAD = struct.Struct(">qi")
_ATTRIBUTES = struct.Struct(">h")
_LAST_DELTA = struct.Struct(">i")
_PRODUCER = struct.Struct(">q")
_ATTRIBUTES_AT, _LAST_DELTA_AT, _PRODUCER_AT, _HEADER_BYTES = 21, 23, 43, 61
TRANSACTIONAL = 0x10
CONTROL = 0x20
ABORT = 0  # a control record's type (key: int16 version, int16 type)


def _is_abort_marker(view: memoryview, pos: int, end: int) -> bool:
    """The control record's key type: after its length, attributes, timestamp and
    offset deltas and key length (varints), the key's int16 version and int16 type."""
    try:
        at = pos + _HEADER_BYTES
        _length, at = read_varint(view, at)
        at += 1  # attributes
        _ts, at = read_varint(view, at)
        _delta, at = read_varint(view, at)
        key_length, at = read_varint(view, at)
        if key_length < 4 or at + 4 > end:
            return False
        return int.from_bytes(view[at + 2:at + 4], "big") == ABORT
    except Exception:  # a damaged record: not a marker we can read
        return False


def fetched_batches(data: bytes) -> list[tuple[FetchedBatch, int, int]]:
    """(header, start byte, end byte) of the whole batches in ``data``."""
    out = []
    view = memoryview(data)
    pos, size = 0, len(data)
    while pos + _HEADER_BYTES <= size:
        base, length = _HEAD.unpack_from(view, pos)
        end = pos + 12 + length
        if end > size:
            break
        (attributes,) = _ATTRIBUTES.unpack_from(view, pos + _ATTRIBUTES_AT)
        (delta,) = _LAST_DELTA.unpack_from(view, pos + _LAST_DELTA_AT)
        (producer,) = _PRODUCER.unpack_from(view, pos + _PRODUCER_AT)
        control = bool(attributes & CONTROL)
        out.append((
            FetchedBatch(
                base, base + delta, producer, bool(attributes & TRANSACTIONAL), control,
                control and _is_abort_marker(view, pos, end),
            ),
            pos,
            end,
        ))
        pos = end
    return out

