"""Records inside a magic-v2 batch: decode and build whole batches.

For tools, tests and the broker's own internal topics (group offsets,
transaction markers). NEVER used on the produce/fetch hot path, which moves
batches as opaque bytes (see ``kafkette.wire.record_batch``).

Record layout (after the 61-byte batch header, possibly compressed)::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  against the batch's baseTimestamp
    offsetDelta     varint   against the batch's baseOffset
    keyLength       varint   -1 = null
    key             bytes
    valueLength     varint   -1 = null
    value           bytes
    headerCount     varint
    headers         (keyLength varint, key utf-8, valueLength varint (-1 = null), value)

Varints are zigzag-encoded base-128 (protobuf style). All functions are pure.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from .compression import CompressionError, decompress
from .compression import compress as compress_payload
from .record_batch import (
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    InvalidBatchError,
    batch_size_at,
    compute_crc,
    read_header,
    validate_batch,
)

__all__ = [
    "ControlRecordType",
    "Record",
    "build_batch",
    "build_batch_from_values",
    "build_control_batch",
    "decode_batch",
    "decode_batches",
    "decode_varint",
    "delete_horizon_of",
    "encode_varint",
    "parse_control_record",
    "rebuild_batch",
]

Header = tuple[str, bytes | None]
ValueTuple = (
    tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[Header]]
)
BytesLike = bytes | bytearray | memoryview

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(slots=True)
class Record:
    """One record. ``offset``/``timestamp`` are absolute, set by ``decode_batch``.

    ``build_batch`` ignores ``offset``/``timestamp`` and uses the deltas.
    """

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    offset: int | None = None
    timestamp: int | None = None


class ControlRecordType(IntEnum):
    """Type field of a control record's key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4


# --- varints ---------------------------------------------------------------


def encode_varint(value: int, out: bytearray) -> None:
    """Append ``value`` (signed, up to 64 bits) zigzag-encoded to ``out``."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"varint {value} does not fit in 64 bits")
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def decode_varint(buf: BytesLike, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Read a zigzag varint at ``pos``; returns (value, next position).

    ``max_bytes`` is 5 for a varint (int32) and 10 for a varlong (int64).
    Raises InvalidBatchError when truncated or too long.
    """
    result = 0
    shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos + i >= end:
            raise InvalidBatchError("record varint is truncated")
        byte = buf[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if max_bytes == 5 and result >> 32:
                raise InvalidBatchError("record varint does not fit in int32")
            return (result >> 1) ^ -(result & 1), pos + i + 1
        shift += 7
    raise InvalidBatchError(f"record varint longer than {max_bytes} bytes")


def _encode_bytes(value: bytes | None, out: bytearray) -> None:
    if value is None:
        out.append(0x01)  # zigzag(-1)
        return
    encode_varint(len(value), out)
    out += value


def _decode_bytes(buf: BytesLike, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buf, pos, 5)
    if length < 0:
        if length != -1:
            raise InvalidBatchError(f"negative field length {length}")
        return None, pos
    if pos + length > end:
        raise InvalidBatchError("record field overruns its record")
    return bytes(buf[pos : pos + length]), pos + length


# --- decoding --------------------------------------------------------------


def _decode_record(buf: BytesLike, pos: int, end: int) -> tuple[Record, int]:
    length, pos = decode_varint(buf, pos, 5)
    if length < 0 or pos + length > end:
        raise InvalidBatchError(f"record length {length} overruns the batch")
    record_end = pos + length
    if length < 1:
        raise InvalidBatchError("record is empty")
    pos += 1  # attributes: unused
    timestamp_delta, pos = decode_varint(buf, pos, 10)
    offset_delta, pos = decode_varint(buf, pos, 5)
    key, pos = _decode_bytes(buf, pos, record_end)
    value, pos = _decode_bytes(buf, pos, record_end)
    count, pos = decode_varint(buf, pos, 5)
    if count < 0:
        raise InvalidBatchError(f"negative header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        name, pos = _decode_bytes(buf, pos, record_end)
        if name is None:
            raise InvalidBatchError("record header with a null key")
        header_value, pos = _decode_bytes(buf, pos, record_end)
        try:
            headers.append((name.decode("utf-8"), header_value))
        except UnicodeDecodeError as exc:
            raise InvalidBatchError("record header key is not UTF-8") from exc
    if pos != record_end:
        used = pos - (record_end - length)
        raise InvalidBatchError(f"record claims {length} bytes but its fields take {used}")
    return Record(offset_delta, timestamp_delta, key, value, headers), record_end


def decode_batch(
    buf: BytesLike, pos: int = 0, *, check_crc: bool = True
) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``pos`` into its header and records.

    Decompresses per the attributes. Each record gets its absolute offset and
    timestamp (for LogAppendTime batches every record's timestamp is the
    batch's maxTimestamp, as clients read it). Raises InvalidBatchError for
    bad framing, CRC or record bytes (CRC is skipped with ``check_crc=False``).
    """
    if check_crc:
        header = validate_batch(buf, pos)
    else:
        header = read_header(buf, pos)
        if pos + header.size > len(buf):
            raise InvalidBatchError("truncated record batch")
    body: BytesLike = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    if header.compression:
        try:
            body = decompress(header.compression, body)
        except CompressionError as exc:
            raise InvalidBatchError(f"record batch body: {exc}") from exc
    records: list[Record] = []
    cursor = 0
    end = len(body)
    for _ in range(header.records_count):
        record, cursor = _decode_record(body, cursor, end)
        record.offset = header.base_offset + record.offset_delta
        if header.is_log_append_time:
            record.timestamp = header.max_timestamp
        else:
            record.timestamp = header.base_timestamp + record.timestamp_delta
        records.append(record)
    if cursor != end:
        raise InvalidBatchError(
            f"{end - cursor} bytes left after the batch's {header.records_count} records"
        )
    return header, records


def decode_batches(
    buf: BytesLike, *, check_crc: bool = True
) -> list[tuple[BatchHeader, list[Record]]]:
    """Decode back-to-back batches (a record set or a log segment's bytes).

    A partial batch at the end is ignored, as consumers do with a fetch
    response cut at its size limit.
    """
    batches: list[tuple[BatchHeader, list[Record]]] = []
    pos = 0
    while True:
        size = batch_size_at(buf, pos)
        if size is None or pos + size > len(buf):
            break
        batches.append(decode_batch(buf, pos, check_crc=check_crc))
        pos += size
    return batches


# --- building --------------------------------------------------------------


def _encode_record(record: Record, out: bytearray) -> None:
    body = bytearray(b"\x00")  # attributes
    encode_varint(record.timestamp_delta, body)
    if not _INT32_MIN <= record.offset_delta <= _INT32_MAX:
        raise ValueError(f"offset delta {record.offset_delta} does not fit in int32")
    encode_varint(record.offset_delta, body)
    _encode_bytes(record.key, body)
    _encode_bytes(record.value, body)
    encode_varint(len(record.headers), body)
    for name, value in record.headers:
        _encode_bytes(name.encode("utf-8"), body)
        _encode_bytes(value, body)
    encode_varint(len(body), out)
    out += body


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    delete_horizon: bool = False,
) -> bytes:
    """Build one magic-v2 batch with a correct CRC-32C.

    ``base_timestamp`` defaults to now (ms since the epoch); record timestamps
    are ``base_timestamp + timestamp_delta``. ``max_timestamp`` defaults to
    the largest record timestamp (set it to the append time for
    LogAppendTime batches). ``last_offset_delta`` defaults to the largest
    offset delta; an empty batch (what compaction can leave) gets 0 and
    timestamps of -1 unless given. The records are compressed with codec id
    ``compression`` even when that does not make them smaller.
    """
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp type must be 0 or 1, not {timestamp_type}")
    body = bytearray()
    for record in records:
        _encode_record(record, body)
    if base_timestamp is None:
        base_timestamp = int(time.time() * 1000) if records else NO_TIMESTAMP
    if max_timestamp is None:
        if records:
            max_timestamp = base_timestamp + max(r.timestamp_delta for r in records)
        else:
            max_timestamp = base_timestamp
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in records), default=0)
    payload = compress_payload(compression, body) if compression else bytes(body)

    attributes = compression
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    if delete_horizon:  # KIP-534: base_timestamp holds the delete horizon
        attributes |= DELETE_HORIZON_MASK

    batch = bytearray(HEADER_SIZE + len(payload))
    _HEADER.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # crc, filled below
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    batch[HEADER_SIZE:] = payload
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, len(batch)))
    return bytes(batch)


def build_batch_from_values(
    items: Iterable[ValueTuple],
    **kwargs: object,
) -> bytes:
    """Build a batch from ``(key, value)`` or ``(key, value, headers)`` tuples.

    Records get consecutive offset deltas from 0 and the batch's base
    timestamp; other keyword arguments go to ``build_batch``.
    """
    records = [
        Record(i, 0, item[0], item[1], list(item[2]) if len(item) > 2 else [])
        for i, item in enumerate(items)
    ]
    return build_batch(records, **kwargs)  # type: ignore[arg-type]


def rebuild_batch(
    header: BatchHeader, records: Sequence[Record], *, delete_horizon_ms: int | None = None
) -> bytes:
    """The batch ``header`` came from, holding only ``records`` (the log cleaner's rewrite).

    Keeps base offset, last offset delta, partition leader epoch, producer id,
    epoch and base sequence, codec, timestamp type and the transactional and
    control bits: the batch is rewritten, not re-shaped, and the records keep
    their offsets and timestamps (``records`` come from :func:`decode_batch`).
    ``delete_horizon_ms`` (KIP-534) sets attribute bit 6 and stores the
    horizon in the base timestamp, record timestamp deltas being re-based on
    it; an existing horizon is kept. An empty ``records`` gives Kafka's
    header-only batch (count 0, timestamps the original max timestamp).
    """
    horizon_set = bool(header.attributes & DELETE_HORIZON_MASK)
    if delete_horizon_ms is not None and not horizon_set:
        base_timestamp = delete_horizon_ms
        horizon_set = True
    else:
        base_timestamp = header.base_timestamp
    rebased: list[Record] = []
    max_timestamp = header.max_timestamp
    if records:
        if not header.is_log_append_time:
            max_timestamp = max(r.timestamp for r in records)  # type: ignore[type-var]
        for r in records:
            timestamp = r.timestamp if r.timestamp is not None else base_timestamp
            delta = (
                r.timestamp_delta if header.is_log_append_time else timestamp - base_timestamp
            )
            rebased.append(Record(r.offset_delta, delta, r.key, r.value, r.headers))
    elif not horizon_set:
        base_timestamp = header.max_timestamp
    return build_batch(
        rebased,
        base_offset=header.base_offset,
        compression=header.compression if rebased else 0,  # Kafka's empty header: none
        timestamp_type=LOG_APPEND_TIME if header.is_log_append_time else CREATE_TIME,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        transactional=header.is_transactional,
        control=header.is_control,
        partition_leader_epoch=header.partition_leader_epoch,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        last_offset_delta=header.last_offset_delta,
        delete_horizon=horizon_set,
    )


def delete_horizon_of(header: BatchHeader) -> int | None:
    """The batch's KIP-534 delete horizon (ms), or None if the cleaner has not set one."""
    if header.attributes & DELETE_HORIZON_MASK:
        return header.base_timestamp
    return None


# --- control records (transaction markers) ---------------------------------


def build_control_batch(
    marker: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker batch: one COMMIT or ABORT control record.

    Key is (version 0, type) as two int16; value is (version 0,
    coordinatorEpoch int32). The batch is transactional and control.
    """
    if marker not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"a transaction marker is ABORT or COMMIT, not {marker!r}")
    record = Record(
        0,
        0,
        _CONTROL_KEY.pack(0, int(marker)),
        _CONTROL_VALUE.pack(0, coordinator_epoch),
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
        base_timestamp=timestamp,
    )


def parse_control_record(record: Record) -> tuple[ControlRecordType | int, int | None]:
    """(type, coordinatorEpoch) of a control record.

    The epoch is only read for ABORT/COMMIT markers; it is None otherwise.
    Unknown types come back as plain ints. Raises InvalidBatchError when the
    key is not a control key.
    """
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise InvalidBatchError("control record key is shorter than 4 bytes")
    _version, kind = _CONTROL_KEY.unpack_from(record.key)
    try:
        control_type: ControlRecordType | int = ControlRecordType(kind)
    except ValueError:
        return kind, None
    if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        if record.value is None or len(record.value) < _CONTROL_VALUE.size:
            raise InvalidBatchError("transaction marker value is shorter than 6 bytes")
        _value_version, coordinator_epoch = _CONTROL_VALUE.unpack_from(record.value)
        return control_type, coordinator_epoch
    return control_type, None
