"""Keys and values of the ``__consumer_offsets`` records, in Kafka's own formats.

Using Kafka's layouts means ``kcat -C -t __consumer_offsets`` (or Kafka's
``GroupMetadataMessageFormatter``) shows the same bytes it would on Kafka.
Every key and value starts with an int16 schema version; all integers are
big-endian; ``string`` is int16 length + UTF-8 (length -1 = null when nullable);
``bytes`` is int32 length + data.

Keys
  version 0/1 OffsetCommitKey: group string, topic string, partition int32 (we write 1)
  version 2   GroupMetadataKey: group string
Values
  OffsetCommitValue v0: offset int64, metadata string, commit_timestamp int64
                    v1: v0 + expire_timestamp int64 (written only when an expiry is set)
                    v2: same fields as v0
                    v3: offset int64, leader_epoch int32, metadata string, commit_timestamp int64
  GroupMetadataValue v0..v3 (we write 3): protocol_type string, generation int32,
      protocol nullable string, leader nullable string, current_state_timestamp int64 (v2+),
      members int32 count of [member_id string, group_instance_id nullable string (v3+),
      client_id string, client_host string, rebalance_timeout int32 (v1+),
      session_timeout int32, subscription bytes, assignment bytes]
A tombstone (value ``None``) deletes the key. Flexible versions (v4) and the
KIP-848 record types are not written; decoding them raises ``UnsupportedRecord``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class UnsupportedRecord(ValueError):
    """A key/value version this module does not read (newer Kafka record types)."""


@dataclass(frozen=True)
class OffsetCommitKey:
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int  # -1 = unknown
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only set by old (v1..v4) OffsetCommit requests


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int  # -1 = unknown (v0/v1 records)
    members: tuple[MemberRecord, ...]


# --- writing -----------------------------------------------------------------


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError("string longer than 32767 bytes")
    return _I16.pack(len(raw)) + raw


def _nullable_string(value: str | None) -> bytes:
    return _I16.pack(-1) if value is None else _string(value)


def _bytes(value: bytes) -> bytes:
    return _I32.pack(len(value)) + value


def encode_offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    return (
        _I16.pack(OFFSET_COMMIT_KEY_VERSION)
        + _string(group_id)
        + _string(topic)
        + _I32.pack(partition)
    )


def encode_group_metadata_key(group_id: str) -> bytes:
    return _I16.pack(GROUP_METADATA_KEY_VERSION) + _string(group_id)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    """Version 3, or version 1 when an explicit expire timestamp must be kept (as Kafka)."""
    if value.expire_timestamp_ms is not None:
        return (
            _I16.pack(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY)
            + _I64.pack(value.offset)
            + _string(value.metadata)
            + _I64.pack(value.commit_timestamp_ms)
            + _I64.pack(value.expire_timestamp_ms)
        )
    return (
        _I16.pack(OFFSET_COMMIT_VALUE_VERSION)
        + _I64.pack(value.offset)
        + _I32.pack(value.leader_epoch)
        + _string(value.metadata)
        + _I64.pack(value.commit_timestamp_ms)
    )


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    parts = [
        _I16.pack(GROUP_METADATA_VALUE_VERSION),
        _string(value.protocol_type),
        _I32.pack(value.generation),
        _nullable_string(value.protocol),
        _nullable_string(value.leader),
        _I64.pack(value.current_state_timestamp_ms),
        _I32.pack(len(value.members)),
    ]
    for m in value.members:
        parts += [
            _string(m.member_id),
            _nullable_string(m.group_instance_id),
            _string(m.client_id),
            _string(m.client_host),
            _I32.pack(m.rebalance_timeout_ms),
            _I32.pack(m.session_timeout_ms),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(parts)


# --- reading -----------------------------------------------------------------


class _Reader:
    """Cursor over one record's bytes; raises ValueError on truncation."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self._pos + n > len(self._data):
            raise ValueError("truncated __consumer_offsets record")
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def nullable_string(self) -> str | None:
        n = self.i16()
        return None if n == -1 else str(self._take(n), "utf-8")

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise ValueError("null in a non-nullable string field")
        return s

    def bytes_(self) -> bytes:
        n = self.i32()
        return b"" if n == -1 else bytes(self._take(n))


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey:
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        return OffsetCommitKey(r.string(), r.string(), r.i32())
    if version == 2:
        return GroupMetadataKey(r.string())
    raise UnsupportedRecord(f"__consumer_offsets key version {version}")


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data)
    version = r.i16()
    if version in (0, 2):
        offset, metadata, ts = r.i64(), r.string(), r.i64()
        return OffsetCommitValue(offset, -1, metadata, ts)
    if version == 1:
        offset, metadata, ts, expire = r.i64(), r.string(), r.i64(), r.i64()
        return OffsetCommitValue(offset, -1, metadata, ts, None if expire == -1 else expire)
    if version == 3:
        return OffsetCommitValue(r.i64(), r.i32(), r.string(), r.i64())
    raise UnsupportedRecord(f"OffsetCommitValue version {version}")


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 3:
        raise UnsupportedRecord(f"GroupMetadataValue version {version}")
    protocol_type = r.string()
    generation = r.i32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    state_ts = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.i32()):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.bytes_(),
                r.bytes_(),
            )
        )
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))


def record_group_id(key: bytes) -> str | None:
    """The group a ``__consumer_offsets`` record key belongs to (None if unknown)."""
    try:
        return decode_key(key).group_id
    except UnsupportedRecord:
        return None
