"""``__share_group_state`` records: Kafka's share coordinator layout, so the topic reads
the same to kafkette and to Kafka's tools.

Key: int16 record type (0 ShareSnapshotKey, 1 ShareUpdateKey), then the key's only
version (0, not written): GroupId (string), TopicId (uuid), Partition (int32). Value:
int16 version 0, then the flexible fields: ShareSnapshotValue (SnapshotEpoch,
StateEpoch, LeaderEpoch, StartOffset, CreateTimestamp, WriteTimestamp, StateBatches, tagged
DeliveryCompleteCount) or ShareUpdateValue (SnapshotEpoch, LeaderEpoch, StartOffset,
StateBatches, tagged DeliveryCompleteCount). A state batch is FirstOffset, LastOffset,
DeliveryState (0 available, 2 acknowledged, 4 archived) and DeliveryCount.

kafkette writes snapshots (each one the share partition's whole persistent state:
compaction keeps the last per key) and reads both kinds, applying updates on top of
the snapshot they follow. A null value is a deleted share partition.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kafkette.wire.primitives import read_uvarint, write_uvarint

SNAPSHOT, UPDATE = 0, 1
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4

StateBatch = tuple[int, int, int, int]  # first, last, delivery state, delivery count
ShareKey = tuple[str, uuid.UUID, int]


class UnsupportedRecord(ValueError):
    """A record type or version this broker does not know (skipped, as Kafka skips)."""


@dataclass(frozen=True, slots=True)
class ShareState:
    kind: int  # SNAPSHOT or UPDATE
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    create_ms: int = 0
    write_ms: int = 0
    delivery_complete_count: int = -1


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_BATCH = struct.Struct(">qqbh")


def encode_key(kind: int, key: ShareKey) -> bytes:
    group, topic_id, partition = key
    name = group.encode()
    return _I16.pack(kind) + _I16.pack(len(name)) + name + topic_id.bytes + _I32.pack(partition)


def decode_key(data: bytes) -> tuple[int, ShareKey]:
    (kind,) = _I16.unpack_from(data, 0)
    if kind not in (SNAPSHOT, UPDATE):
        raise UnsupportedRecord(f"record type {kind}")
    (length,) = _I16.unpack_from(data, 2)
    group = bytes(data[4:4 + length]).decode()
    pos = 4 + length
    topic_id = uuid.UUID(bytes=bytes(data[pos:pos + 16]))
    (partition,) = _I32.unpack_from(data, pos + 16)
    return kind, (group, topic_id, partition)


def encode_snapshot(state: ShareState) -> bytes:
    out = bytearray(_I16.pack(0))
    out += _I32.pack(state.snapshot_epoch) + _I32.pack(state.state_epoch)
    out += _I32.pack(state.leader_epoch) + _I64.pack(state.start_offset)
    out += _I64.pack(state.create_ms) + _I64.pack(state.write_ms)
    _write_batches(out, state.batches)
    _write_tags(out, state.delivery_complete_count)
    return bytes(out)


def _write_batches(out: bytearray, batches: tuple[StateBatch, ...]) -> None:
    write_uvarint(out, len(batches) + 1)
    for first, last, delivery_state, count in batches:
        out += _BATCH.pack(first, last, delivery_state, count)
        out.append(0)  # the batch's tagged fields: none


def _write_tags(out: bytearray, delivery_complete_count: int) -> None:
    if delivery_complete_count == -1:
        out.append(0)
        return
    out.append(1)  # one tagged field: tag 0, four bytes
    out += b"\x00\x04" + _I32.pack(delivery_complete_count)


def decode_value(kind: int, data: bytes) -> ShareState:
    view = memoryview(data)
    (version,) = _I16.unpack_from(view, 0)
    if version != 0:
        raise UnsupportedRecord(f"value version {version}")
    pos = 2
    (snapshot_epoch,) = _I32.unpack_from(view, pos)
    pos += 4
    state_epoch = -1
    if kind == SNAPSHOT:
        (state_epoch,) = _I32.unpack_from(view, pos)
        pos += 4
    (leader_epoch,) = _I32.unpack_from(view, pos)
    (start_offset,) = _I64.unpack_from(view, pos + 4)
    pos += 12
    create_ms = write_ms = 0
    if kind == SNAPSHOT:
        create_ms, write_ms = _I64.unpack_from(view, pos)[0], _I64.unpack_from(view, pos + 8)[0]
        pos += 16
    count, pos = read_uvarint(view, pos)
    batches = []
    for _ in range(max(0, count - 1)):
        batches.append(_BATCH.unpack_from(view, pos))
        pos = _skip_tags(view, pos + _BATCH.size)
    complete = -1
    tags, pos = read_uvarint(view, pos)
    for _ in range(tags):
        tag, pos = read_uvarint(view, pos)
        size, pos = read_uvarint(view, pos)
        if tag == 0 and size == 4:
            (complete,) = _I32.unpack_from(view, pos)
        pos += size
    return ShareState(kind, snapshot_epoch, state_epoch, leader_epoch, start_offset,
                      tuple(batches), create_ms, write_ms, complete)


def _skip_tags(view: memoryview, pos: int) -> int:
    tags, pos = read_uvarint(view, pos)
    for _ in range(tags):
        _tag, pos = read_uvarint(view, pos)
        size, pos = read_uvarint(view, pos)
        pos += size
    return pos
