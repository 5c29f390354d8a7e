"""Record batch (magic v2) headers: the only part of a batch the hot path reads.

A batch is kept as raw bytes from the producer to the disk and back to the
consumer. The broker reads the 61-byte header, checks the CRC-32C (which covers
attributes .. end of batch) and patches ``baseOffset`` and
``partitionLeaderEpoch``, both outside the CRC. Records inside are never
decoded here; see ``kafkette.wire.records`` for tools and tests.

Layout (big-endian)::

    0  baseOffset            int64
    8  batchLength           int32   bytes after this field
    12 partitionLeaderEpoch  int32
    16 magic                 int8    == 2
    17 crc                   uint32  CRC-32C of bytes 21..end
    21 attributes            int16
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordsCount          int32
    61 records ...
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from . import checksum
from .errors import ErrorCode

HEADER_SIZE = 61
# baseOffset + batchLength: what must be read to know how long a batch is.
LOG_OVERHEAD = 12
MAGIC_V2 = 2
CRC_START = 21
# Field positions inside a v2 batch (baseOffset 8, batchLength 4, leaderEpoch 4).
MAGIC_AT = 16
ATTRIBUTES_AT = 21  # int16; CRC_START is where the CRC'd part begins, the same place

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_LENGTH = struct.Struct(">qi")
_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_MAX_TS = struct.Struct(">q")
_ATTRIBUTES = struct.Struct(">h")


class InvalidBatchError(ValueError):
    """Bytes that are not a valid magic-v2 record batch.

    ``error`` is the code Kafka answers for it. Without an explicit ``error``,
    ``corrupt`` picks CORRUPT_MESSAGE (a checksum or framing fault) or
    INVALID_RECORD (a well-formed batch that breaks a rule); ``corrupt`` is
    True exactly when ``error`` is CORRUPT_MESSAGE. ``client_message`` is
    what Produce puts in ``error_message``: None unless Kafka sends its text
    for that case (it mostly sends none; the broker log has the detail).
    """

    def __init__(
        self,
        message: str,
        *,
        corrupt: bool = True,
        error: ErrorCode | None = None,
        tell_client: bool = False,
    ) -> None:
        super().__init__(message)
        if error is None:
            error = ErrorCode.CORRUPT_MESSAGE if corrupt else ErrorCode.INVALID_RECORD
        self.error = error
        self.corrupt = error == ErrorCode.CORRUPT_MESSAGE
        self.client_message = message if tell_client else None


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of one batch, decoded. ``size`` is the whole batch.

    A NamedTuple, not a dataclass: it is built for every batch on the produce
    path, and tuple construction is several times cheaper.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record, wrapping at 2**31 as Kafka does."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


_make_header = BatchHeader._make


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the header at ``pos``; raises InvalidBatchError if it cannot be one."""
    if len(buf) - pos < HEADER_SIZE:
        raise InvalidBatchError("record batch shorter than its 61-byte header")
    header = _make_header(_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise InvalidBatchError(f"unsupported record batch magic {header.magic}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatchError(f"record batch length {header.batch_length} is too small")
    return header


def flagged_transactional(buf: bytes | bytearray | memoryview) -> bool:
    """Does ``buf`` start with a v2 batch whose transactional bit is set?

    Two bytes read, nothing validated: the cheap question a Produce asks of
    every record set before it knows whether a transactional id is needed.
    """
    return (
        len(buf) > ATTRIBUTES_AT + 1
        and buf[MAGIC_AT] == MAGIC_V2
        and bool(buf[ATTRIBUTES_AT + 1] & TRANSACTIONAL_MASK)
    )


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Total size of the batch starting at ``pos``, or None if fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = _LENGTH.unpack_from(buf, pos)
    return length + LOG_OVERHEAD


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC-32C of attributes .. end for the batch of ``size`` bytes at ``pos``."""
    view = memoryview(buf)[pos + CRC_START : pos + size]
    return checksum.crc32c(view)


def validate_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, end: int | None = None
) -> BatchHeader:
    """Check one batch at ``pos``: whole, magic 2, CRC-32C right, then sane counts.

    Never looks at individual records (``kafkette.wire.batch_validation``
    does, for produced batches). ``end`` bounds the batch (defaults to the
    end of ``buf``). Only fields outside the checksummed range are read
    before the CRC, so any damage inside it is reported as corruption, never
    as a rule broken by a well-formed batch.
    """
    limit = len(buf) if end is None else end
    header = read_header(buf, pos)
    if pos + header.size > limit:
        raise InvalidBatchError(
            f"record batch claims {header.size} bytes but only {limit - pos} remain"
        )
    if compute_crc(buf, pos, header.size) != header.crc:
        raise InvalidBatchError("record batch CRC-32C mismatch")
    if header.last_offset_delta < 0:
        raise InvalidBatchError("negative lastOffsetDelta", corrupt=False)
    if header.records_count < 0:
        raise InvalidBatchError("negative record count", corrupt=False)
    return header


def iter_batches(
    buf: bytes | bytearray | memoryview, *, validate: bool = True
) -> list[BatchHeader]:
    """Headers of the back-to-back batches in ``buf``; every byte must belong to one.

    This is what Produce uses on a partition's record set: a request may carry
    several batches, and trailing garbage is refused.
    """
    headers: list[BatchHeader] = []
    pos = 0
    total = len(buf)
    while pos < total:
        header = validate_batch(buf, pos) if validate else read_header(buf, pos)
        if not validate and pos + header.size > total:
            raise InvalidBatchError("truncated record batch")
        headers.append(header)
        pos += header.size
    return headers


def patch_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Write ``baseOffset`` in place; it lies outside the CRC."""
    _OFFSET.pack_into(buf, pos, base_offset)


def patch_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Write ``partitionLeaderEpoch`` in place; it lies outside the CRC."""
    _EPOCH.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, timestamp_ms: int, pos: int = 0) -> None:
    """Mark the batch LogAppendTime, set maxTimestamp and fix the CRC (both are inside it).

    Consumers take every record's timestamp from maxTimestamp only when the
    attributes' timestamp-type bit is set, so both must change together.
    """
    header = read_header(buf, pos)
    _ATTRIBUTES.pack_into(buf, pos + ATTRIBUTES_AT, header.attributes | TIMESTAMP_TYPE_MASK)
    _MAX_TS.pack_into(buf, pos + 35, timestamp_ms)
    struct.pack_into(">I", buf, pos + 17, compute_crc(buf, pos, header.size))
