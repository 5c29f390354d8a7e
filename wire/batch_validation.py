"""Validate a produced record set as Kafka's broker does, before anything is written.

Kafka checks a partition's record set in three places, in this order, and
this module follows it (Kafka 4.0, answers read from a running broker):

1. ``ProduceRequest.validateRecords`` (KafkaApis): at least one whole batch,
   magic 2, exactly one batch per partition (INVALID_RECORD). A partial batch
   or fewer than 12 bytes after the first batch are ignored, not stored.
2. ``UnifiedLog.analyzeAndValidateRecords``: ``baseOffset`` 0 from a client
   (INVALID_RECORD), size against ``max.message.bytes`` (MESSAGE_TOO_LARGE),
   then the CRC-32C (CORRUPT_MESSAGE). Everything checked before the CRC lies
   outside the checksummed range, so a flipped bit inside it always reads as
   CORRUPT_MESSAGE.
3. ``LogValidator``: a known codec (Kafka answers UNKNOWN_SERVER_ERROR for ids
   5-7; UNSUPPORTED_COMPRESSION_TYPE for zstd below Produce v7),
   ``lastOffsetDelta + 1 == recordsCount > 0``, no control batch, a base
   sequence for a producer id (INVALID_RECORD); then every record is read:
   records must frame exactly to the end of the (decompressed) payload and
   each record's fields must add up to its length, as
   ``DefaultRecord.readFrom`` checks (INVALID_RECORD). A compressed payload
   that does not decompress is UNKNOWN_SERVER_ERROR, as Kafka answers it.

Two rules are ours (docs/produce-validation.md). Record offset deltas must be
0..n-1 in order: Kafka stores an uncompressed batch with other deltas
unchanged and fails a compressed one while trying to rewrite it; kafkette
stores batches verbatim, and a wrong delta makes consumers skip or re-read
records, so it answers INVALID_RECORD. And decompressed records are bounded
(``DECOMPRESSED_LIMIT_FACTOR``), since they are held whole in memory.

The record walk reads only varints and skips keys, values and header bytes by
their lengths: no Record objects, no copies of an uncompressed payload. It is
pure and thread-safe; the broker runs it on a worker thread.
"""

from __future__ import annotations

import struct

from . import checksum
from .compression import CompressionError, DecompressedTooLargeError, decompressed_view
from .errors import ErrorCode
from .record_batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    InvalidBatchError,
)

__all__ = [
    "DECOMPRESSED_LIMIT_FACTOR",
    "DECOMPRESSED_LIMIT_MAX",
    "MIN_BATCH_SIZE",
    "ZSTD_MIN_PRODUCE_VERSION",
    "python_walk",
    "validate_produce_records",
    "walk_records",
]

# Kafka refuses a batch whose size field is below a legacy v0 record's overhead
# with this exact CORRUPT_MESSAGE message.
MIN_BATCH_SIZE = 14
ZSTD_MIN_PRODUCE_VERSION = 7
# A compressed batch may hold at most this many times max.message.bytes of records
# (64 MiB by default), and never more than 1 GiB. Kafka streams through the records and
# has no such bound; kafkette materialises them, and zstd can turn a 1 MB batch into tens
# of GB. Real producers stay far below: batch.size bounds records before compression.
DECOMPRESSED_LIMIT_FACTOR = 64
DECOMPRESSED_LIMIT_MAX = 1 << 30
_ZSTD = 4
_KNOWN_CODECS = frozenset(range(5))
_HEADER = struct.Struct(">qiibIhiqqqhii")
_make_header = BatchHeader._make


def _invalid(message: str) -> InvalidBatchError:
    return InvalidBatchError(message, error=ErrorCode.INVALID_RECORD)


def validate_produce_records(
    records: bytes | bytearray | memoryview,
    *,
    max_message_bytes: int,
    produce_version: int = 9,
    compacted: bool = False,
) -> BatchHeader:
    """The header of the one valid batch in a partition's record set.

    ``compacted`` (the topic's cleanup.policy includes compact) also refuses
    records without a key, as Kafka's LogValidator does (INVALID_RECORD).

    Raises InvalidBatchError whose ``error`` is the code Kafka answers. The
    bytes to store are ``records[:header.size]``: anything after the batch
    too short to be a batch is ignored, as Kafka ignores it.
    """
    total = len(records)
    if total < LOG_OVERHEAD:
        raise _invalid("produce record set holds no record batch")
    size = int.from_bytes(records[8:12], "big", signed=True) + LOG_OVERHEAD
    if size < MIN_BATCH_SIZE + LOG_OVERHEAD:
        raise InvalidBatchError(
            f"Record size {size - LOG_OVERHEAD} is less than the minimum record overhead "
            f"({MIN_BATCH_SIZE})",
            error=ErrorCode.CORRUPT_MESSAGE,
            tell_client=True,
        )
    if size > total:
        raise _invalid(f"record batch claims {size} bytes but only {total} were sent")
    magic = records[16]
    if magic != MAGIC_V2:
        raise _invalid(f"record batch magic {magic}; produce v3+ needs magic 2")
    rest = total - size
    if rest >= LOG_OVERHEAD:
        following = int.from_bytes(records[size + 8 : size + 12], "big", signed=True)
        if following < MIN_BATCH_SIZE:
            raise InvalidBatchError(
                f"Record size {following} is less than the minimum record overhead "
                f"({MIN_BATCH_SIZE})",
                error=ErrorCode.CORRUPT_MESSAGE,
                tell_client=True,
            )
        if following + LOG_OVERHEAD <= rest:
            raise _invalid("produce v3+ allows exactly one record batch per partition")
    base_offset = int.from_bytes(records[0:8], "big", signed=True)
    if base_offset != 0:
        raise _invalid(f"a produced batch must have baseOffset 0, not {base_offset}")
    if size > max_message_bytes:
        raise InvalidBatchError(
            f"batch of {size} bytes exceeds max.message.bytes={max_message_bytes}",
            error=ErrorCode.MESSAGE_TOO_LARGE,
            tell_client=True,  # kafkette has always said why; clients show it
        )
    if size < HEADER_SIZE:
        raise InvalidBatchError(
            f"record batch of {size} bytes is shorter than its header",
            error=ErrorCode.CORRUPT_MESSAGE,
        )
    header = _make_header(_HEADER.unpack_from(records, 0))
    view = memoryview(records)
    if checksum.crc32c(view[CRC_START:size]) != header.crc:
        raise InvalidBatchError("record batch CRC-32C mismatch", error=ErrorCode.CORRUPT_MESSAGE)
    codec = header.attributes & COMPRESSION_MASK
    if codec not in _KNOWN_CODECS:
        raise InvalidBatchError(
            f"unknown compression codec id {codec}", error=ErrorCode.UNKNOWN_SERVER_ERROR
        )
    if codec == _ZSTD and produce_version < ZSTD_MIN_PRODUCE_VERSION:
        raise InvalidBatchError(
            f"produce v{produce_version} may not use zstd (v7+)",
            error=ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
    count = header.records_count
    if header.last_offset_delta + 1 <= 0:
        raise _invalid(f"invalid lastOffsetDelta {header.last_offset_delta}")
    if count <= 0:
        raise _invalid(f"invalid record count {count}")
    if header.last_offset_delta + 1 != count:
        raise _invalid(
            f"lastOffsetDelta {header.last_offset_delta} disagrees with record count {count}"
        )
    if header.attributes & CONTROL_MASK:
        raise _invalid("clients may not write control batches")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise _invalid(
            f"producer id {header.producer_id} with invalid base sequence {header.base_sequence}"
        )
    body = view[HEADER_SIZE:size]
    if not codec:
        walk_records(body, count, compacted)
        return header
    limit = min(DECOMPRESSED_LIMIT_FACTOR * max_message_bytes, DECOMPRESSED_LIMIT_MAX)
    try:
        with decompressed_view(codec, body, limit) as records_bytes:
            walk_records(records_bytes, count, compacted)
    except DecompressedTooLargeError as exc:
        raise InvalidBatchError(str(exc), error=ErrorCode.MESSAGE_TOO_LARGE) from None
    except CompressionError as exc:
        raise InvalidBatchError(str(exc), error=ErrorCode.UNKNOWN_SERVER_ERROR) from None
    return header


# Why a record walk failed; the C walk returns the same numbers.
REASON_TRUNCATED = 1
REASON_LENGTH = 2
REASON_OFFSET_DELTA = 3
REASON_HEADER_COUNT = 4
REASON_HEADER_KEY = 5
REASON_FIELDS = 6
REASON_LEFTOVER = 7
REASON_VARINT = 8
REASON_NULL_KEY = 9
_REASONS = {
    REASON_TRUNCATED: "runs past the end of the batch",
    REASON_LENGTH: "has a length that does not fit the batch",
    REASON_OFFSET_DELTA: "has an offset delta other than its index",
    REASON_HEADER_COUNT: "has an invalid header count",
    REASON_HEADER_KEY: "has a header with a negative key length",
    REASON_FIELDS: "has fields that do not add up to its length",
    REASON_LEFTOVER: "is followed by bytes the record count does not cover",
    REASON_VARINT: "has a varint longer than its type allows",
}


def walk_records(
    body: bytes | bytearray | memoryview, count: int, require_keys: bool = False
) -> None:
    """Check that ``body`` is exactly ``count`` well-framed records with deltas 0..count-1.

    Raises InvalidBatchError (INVALID_RECORD) naming the first fault. Uses
    the C walk when it was built (``pip install`` compiles it where a C
    compiler exists), else the pure-Python one; both give the same answers.
    """
    fault = _walk(body, count, require_keys) if require_keys else _walk(body, count)
    if fault is not None:
        reason, index = fault
        if reason == REASON_NULL_KEY:
            raise InvalidBatchError(
                "Compacted topic cannot accept message without key",
                error=ErrorCode.INVALID_RECORD,
                tell_client=True,
            )
        if reason == REASON_LEFTOVER:
            raise _invalid(f"bytes are left after the batch's {count} records")
        raise _invalid(f"record {index} of {count} {_REASONS[reason]}")


def python_walk(
    body: bytes | bytearray | memoryview, count: int, require_keys: bool = False
) -> tuple[int, int] | None:
    """The reference walk: None when valid, else (REASON_*, record index).

    Reads each record's varints as Kafka's ``DefaultRecord.readFrom`` does
    and skips key, value and header bytes by their lengths; a negative key or
    value length is null, as Kafka reads it. Varints of one and two bytes
    (every length below 8 KiB) are decoded inline, without calls.
    """
    pos = 0
    end = len(body)
    index = 0
    try:
        while index < count:
            # length
            b = body[pos]
            if b < 0x80:
                pos += 1
            else:
                c = body[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 2
                else:
                    b, pos = _uvarint(body, pos, 5)
            length = (b >> 1) ^ -(b & 1)
            record_end = pos + length
            if length <= 0 or record_end > end:
                return REASON_LENGTH, index
            # attributes (unused), then timestampDelta (skipped)
            pos += 1
            b = body[pos]
            if b < 0x80:
                pos += 1
            elif body[pos + 1] < 0x80:
                pos += 2
            else:
                _, pos = _uvarint(body, pos, 10)
            # offsetDelta must be the record's index: its zigzag form is 2 * index
            b = body[pos]
            if b < 0x80:
                pos += 1
            else:
                c = body[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 2
                else:
                    b, pos = _uvarint(body, pos, 5)
            if b != index << 1:
                return REASON_OFFSET_DELTA, index
            # key, then value: an odd zigzag is negative (null); an overrun
            # fails at the next read
            b = body[pos]
            if b < 0x80:
                pos += 1
            else:
                c = body[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 2
                else:
                    b, pos = _uvarint(body, pos, 5)
            if not b & 1:
                pos += b >> 1
            elif require_keys:  # an odd zigzag is negative: a null key
                return REASON_NULL_KEY, index  # compacted topics only
            b = body[pos]
            if b < 0x80:
                pos += 1
            else:
                c = body[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 2
                else:
                    b, pos = _uvarint(body, pos, 5)
            if not b & 1:
                pos += b >> 1
            # header count, usually 0
            if body[pos] == 0:
                pos += 1
            else:
                pos = _skip_headers(body, pos, end, record_end)
            if pos != record_end:
                return REASON_FIELDS, index
            index += 1
    except IndexError:
        return REASON_TRUNCATED, index
    except _Fault as fault:
        return fault.reason, index
    if pos != end:
        return REASON_LEFTOVER, count
    return None


class _Fault(Exception):
    def __init__(self, reason: int) -> None:
        self.reason = reason


def _skip_headers(body: bytes | bytearray | memoryview, pos: int, end: int, record_end: int) -> int:
    raw, pos = _uvarint(body, pos, 5)
    headers = (raw >> 1) ^ -(raw & 1)
    if headers < 0 or (headers > 0 and headers > record_end - pos):
        raise _Fault(REASON_HEADER_COUNT)
    for _ in range(headers):
        raw, pos = _uvarint(body, pos, 5)
        size = (raw >> 1) ^ -(raw & 1)
        if size < 0:
            raise _Fault(REASON_HEADER_KEY)
        if size > end - pos:
            raise _Fault(REASON_TRUNCATED)
        pos += size
        raw, pos = _uvarint(body, pos, 5)
        size = (raw >> 1) ^ -(raw & 1)
        if size > 0:
            if size > end - pos:
                raise _Fault(REASON_TRUNCATED)
            pos += size
    return pos


def _uvarint(body: bytes | bytearray | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    """Base-128 varint at ``pos``, still zigzag-encoded: (raw, next pos).

    An int32 varint (``max_bytes`` 5) keeps its low 32 bits, as Java's
    ``ByteUtils.readVarint`` does; a longer one is a fault.
    """
    result = 0
    shift = 0
    for i in range(max_bytes):
        b = body[pos + i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if max_bytes == 5:
                result &= 0xFFFFFFFF
            return result, pos + i + 1
        shift += 7
    raise _Fault(REASON_VARINT)


try:
    from ._record_walk import walk as _walk
except ImportError:  # built without a C compiler: the reference walk, ~1 us a record
    _walk = python_walk
