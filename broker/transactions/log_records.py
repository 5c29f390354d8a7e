"""``__transaction_state`` records in Kafka's TransactionLogKey/TransactionLogValue layout.

Key: int16 version 0, then the transactional id as an int16-length string.
Value: int16 version, then ProducerId int64, ProducerEpoch int16,
TransactionTimeoutMs int32, TransactionStatus int8, TransactionPartitions
(nullable array of {Topic string, PartitionIds int32s}; null when Empty),
TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64.

Version 1 is what Kafka writes once ``transaction.version`` 1 or more is
finalized, and so what kafkette writes (it finalizes 2): flexible (compact
strings and arrays, a tag buffer after each partition entry and at the end),
with the tagged fields PreviousProducerId (tag 0, int64), NextProducerId (tag 1,
int64) and ClientTransactionVersion (tag 2, int16), each written only when it
differs from its default (-1, -1, 0), as Kafka's generated code does. Version 0
(fixed-width, int16 strings, int32 counts; kafkette before transaction.version
2) is read too, so a data dir written by either layout loads. A transactional
id that expired is a tombstone (null value), which compaction eventually removes.

Keeping Kafka's layout lets Kafka's own tools decode the topic and keeps the
meaning of every stored byte documented by Kafka's message definitions.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kafkette.broker.transactions.state import (
    NO_PRODUCER_ID,
    TV_0,
    TransactionMetadata,
    TxnState,
)

KEY_VERSION = 0
VALUE_VERSION = 1
# TransactionLogValue v1's tagged fields.
TAG_PREVIOUS_PRODUCER_ID = 0
TAG_NEXT_PRODUCER_ID = 1
TAG_CLIENT_TRANSACTION_VERSION = 2

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_VALUE_HEAD = struct.Struct(">qhib")  # producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")  # last update, start


class BadTransactionRecord(ValueError):
    """A ``__transaction_state`` record this coordinator cannot read."""


def _string(text: str) -> bytes:
    data = text.encode()
    return _I16.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    if len(data) < 4:
        raise BadTransactionRecord("key shorter than 4 bytes")
    (version,) = _I16.unpack_from(data, 0)
    if version != KEY_VERSION:
        raise BadTransactionRecord(f"unknown key version {version}")
    (length,) = _I16.unpack_from(data, 2)
    if length < 0 or 4 + length > len(data):
        raise BadTransactionRecord("key string overruns the key")
    return data[4 : 4 + length].decode()


def _grouped(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        topics.setdefault(topic, []).append(index)
    return topics


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _uvarint(len(data) + 1) + data


def encode_value(metadata: TransactionMetadata, version: int = VALUE_VERSION) -> bytes:
    """The value of ``metadata`` in ``version`` (1 unless asked; Empty writes a null
    partition list, as Kafka)."""
    if version == 0:
        return _encode_v0(metadata)
    out = bytearray(_I16.pack(version))
    out += _VALUE_HEAD.pack(
        metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms, int(metadata.state)
    )
    if metadata.state == TxnState.EMPTY:
        out += _uvarint(0)  # null
    else:
        topics = _grouped(metadata.partitions)
        out += _uvarint(len(topics) + 1)
        for topic, indexes in topics.items():
            out += _compact_string(topic)
            out += _uvarint(len(indexes) + 1)
            for index in indexes:
                out += _I32.pack(index)
            out += _uvarint(0)  # the entry's tag buffer
    out += _TIMES.pack(metadata.last_update_ms, metadata.start_ms)
    tags: list[tuple[int, bytes]] = []
    if metadata.last_producer_id != NO_PRODUCER_ID:
        tags.append((TAG_PREVIOUS_PRODUCER_ID, _I64.pack(metadata.last_producer_id)))
    if metadata.next_producer_id != NO_PRODUCER_ID:
        tags.append((TAG_NEXT_PRODUCER_ID, _I64.pack(metadata.next_producer_id)))
    if metadata.client_tv != TV_0:
        tags.append((TAG_CLIENT_TRANSACTION_VERSION, _I16.pack(metadata.client_tv)))
    out += _uvarint(len(tags))
    for tag, data in tags:
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)


def _encode_v0(metadata: TransactionMetadata) -> bytes:
    """Version 0 (fixed-width; no tagged fields, so the TV2 fields are not kept)."""
    out = bytearray(_I16.pack(0))
    out += _VALUE_HEAD.pack(
        metadata.producer_id, metadata.producer_epoch, metadata.timeout_ms, int(metadata.state)
    )
    if metadata.state == TxnState.EMPTY:
        out += _I32.pack(-1)
    else:
        topics = _grouped(metadata.partitions)
        out += _I32.pack(len(topics))
        for topic, indexes in topics.items():
            out += _string(topic)
            out += _I32.pack(len(indexes))
            for index in indexes:
                out += _I32.pack(index)
    out += _TIMES.pack(metadata.last_update_ms, metadata.start_ms)
    return bytes(out)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def take(self, fmt: struct.Struct) -> tuple:
        if self.pos + fmt.size > len(self.data):
            raise BadTransactionRecord("value ends early")
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def varint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise BadTransactionRecord("bad varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise BadTransactionRecord("value ends early")
        chunk = self.data[self.pos : self.pos + length]
        self.pos += length
        return chunk

    def string(self, flexible: bool) -> str:
        length = self.varint() - 1 if flexible else self.take(_I16)[0]
        return self.raw(length).decode()

    def count(self, flexible: bool) -> int:
        return self.varint() - 1 if flexible else self.take(_I32)[0]

    def skip_tags(self) -> None:
        for _ in range(self.varint()):
            self.varint()
            self.raw(self.varint())

    def tags(self) -> dict[int, bytes]:
        found = {}
        for _ in range(self.varint()):
            tag = self.varint()
            found[tag] = self.raw(self.varint())
        return found


def _tagged(tags: dict[int, bytes], tag: int, fmt: struct.Struct, default: int) -> int:
    data = tags.get(tag)
    if data is None:
        return default
    if len(data) != fmt.size:
        raise BadTransactionRecord(f"tagged field {tag} has {len(data)} bytes")
    return fmt.unpack(data)[0]


def decode_value(transactional_id: str, data: bytes) -> TransactionMetadata:
    """Version 0 or 1 value (tags Kafka may add later are skipped)."""
    reader = _Reader(data, 0)
    (version,) = reader.take(_I16)
    if version not in (0, 1):
        raise BadTransactionRecord(f"unknown value version {version}")
    flexible = version >= 1
    producer_id, epoch, timeout_ms, status = reader.take(_VALUE_HEAD)
    try:
        state = TxnState(status)
    except ValueError:
        raise BadTransactionRecord(f"unknown transaction status {status}") from None
    partitions: set[tuple[str, int]] = set()
    topics = reader.count(flexible)
    for _ in range(max(topics, 0)):
        topic = reader.string(flexible)
        for _ in range(reader.count(flexible)):
            partitions.add((topic, reader.take(_I32)[0]))
        if flexible:
            reader.skip_tags()
    last_update_ms, start_ms = reader.take(_TIMES)
    tags = reader.tags() if flexible and reader.pos < len(data) else {}
    return TransactionMetadata(
        transactional_id,
        producer_id,
        epoch,
        timeout_ms,
        state,
        frozenset(partitions),
        start_ms=start_ms,
        last_update_ms=last_update_ms,
        last_producer_id=_tagged(tags, TAG_PREVIOUS_PRODUCER_ID, _I64, NO_PRODUCER_ID),
        client_tv=_tagged(tags, TAG_CLIENT_TRANSACTION_VERSION, _I16, TV_0),
        next_producer_id=_tagged(tags, TAG_NEXT_PRODUCER_ID, _I64, NO_PRODUCER_ID),
    )
