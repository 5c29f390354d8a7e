"""Producer-state snapshot files: ``<offset>.snapshot`` in the partition directory.

A snapshot is the producer table as it was when the log end offset was
``offset`` (20-digit zero-padded name, like a segment's). Layout, big-endian
(see docs/storage-format.md)::

    0  version                 int16   = 1
    2  crc                     uint32  CRC-32C of every byte after this field
    6  offset                  int64   the log end offset (same as the name)
    14 producer count          int32
    per producer:
       producer id             int64
       epoch                   int16
       last append time        int64   ms, drives producer.id.expiration.ms
       coordinator epoch       int32   -1 (transactions)
       current txn first offset int64  -1 (transactions)
       batch count             int8    0..5, oldest first
       per batch: first sequence int32, last sequence int32,
                  base offset int64, last offset delta int32

Unlike Kafka's snapshot (last batch only) every remembered batch is kept, so
a producer retrying any of its last five batches right after a restart gets
its first answer back instead of OUT_OF_ORDER_SEQUENCE_NUMBER.

Written as ``<name>.tmp`` then renamed; the checksum makes a torn or foreign
file readable as "invalid", never as wrong state. Anything that does not
parse exactly is refused by :func:`read_snapshot`.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from kafkette.log.checkpoint import TEMP_SUFFIX, atomic_write
from kafkette.log.producer_state import (
    BATCHES_REMEMBERED,
    BatchMetadata,
    ProducerEntry,
    ProducerStateTable,
)
from kafkette.wire import checksum

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1

_PREFIX = struct.Struct(">hI")  # version, crc
_BODY_HEAD = struct.Struct(">qi")  # offset, producer count
_ENTRY = struct.Struct(">qhqiqb")
_BATCH = struct.Struct(">iiqi")


class InvalidSnapshot(ValueError):
    """A snapshot file that is torn, corrupt, or of an unknown version."""


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offset_of(name: str) -> int | None:
    """42 for ``00000000000000000042.snapshot``; None for any other name."""
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    stem = name[: -len(SNAPSHOT_SUFFIX)]
    if len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


def list_snapshots(directory: Path) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending."""
    offsets = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        offset = snapshot_offset_of(name)
        if offset is not None:
            offsets.append(offset)
    offsets.sort()
    return offsets


def encode_snapshot(offset: int, table: ProducerStateTable) -> bytes:
    parts = [_BODY_HEAD.pack(offset, len(table))]
    for producer_id, entry in table.items():
        parts.append(
            _ENTRY.pack(
                producer_id,
                entry.epoch,
                entry.last_append_ms,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
                len(entry.batches),
            )
        )
        for batch in entry.batches:
            parts.append(
                _BATCH.pack(
                    batch.first_sequence,
                    batch.last_sequence,
                    batch.base_offset,
                    batch.last_offset - batch.base_offset,
                )
            )
    body = b"".join(parts)
    return _PREFIX.pack(SNAPSHOT_VERSION, checksum.crc32c(body)) + body


def decode_snapshot(data: bytes, expected_offset: int) -> ProducerStateTable:
    """The table in ``data``; raises InvalidSnapshot unless every byte checks out."""
    if len(data) < _PREFIX.size + _BODY_HEAD.size:
        raise InvalidSnapshot(f"{len(data)} bytes is too short")
    version, crc = _PREFIX.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise InvalidSnapshot(f"unknown version {version}")
    body = memoryview(data)[_PREFIX.size :]
    if checksum.crc32c(body) != crc:
        raise InvalidSnapshot("checksum mismatch")
    offset, count = _BODY_HEAD.unpack_from(body, 0)
    if offset != expected_offset:
        raise InvalidSnapshot(f"holds offset {offset}, named {expected_offset}")
    table = ProducerStateTable()
    pos = _BODY_HEAD.size
    try:
        for _ in range(count):
            producer_id, epoch, last_ms, coordinator_epoch, txn_first, batches = (
                _ENTRY.unpack_from(body, pos)
            )
            pos += _ENTRY.size
            if not 0 <= batches <= BATCHES_REMEMBERED or producer_id < 0:
                raise InvalidSnapshot(f"bad entry for producer {producer_id}")
            entry = ProducerEntry(epoch, last_ms, coordinator_epoch, txn_first)
            for _ in range(batches):
                first_seq, last_seq, base, delta = _BATCH.unpack_from(body, pos)
                pos += _BATCH.size
                entry.batches.append(BatchMetadata(first_seq, last_seq, base, base + delta))
            table.put(producer_id, entry)
    except struct.error as exc:
        raise InvalidSnapshot("truncated") from exc
    if pos != len(body):
        raise InvalidSnapshot(f"{len(body) - pos} trailing bytes")
    return table


def read_snapshot(directory: Path, offset: int) -> ProducerStateTable:
    """Load one snapshot; raises InvalidSnapshot (or OSError if unreadable)."""
    data = (directory / snapshot_file_name(offset)).read_bytes()
    return decode_snapshot(data, offset)


def write_snapshot(
    directory: Path, offset: int, table: ProducerStateTable, *, sync: bool
) -> None:
    """Write ``<offset>.snapshot`` via a temp file and a rename.

    ``sync`` also fsyncs file and directory (clean shutdown). Without it a
    crash of the process still leaves the whole file (page cache); after a
    power loss the file may be missing or fail its checksum, and loading then
    falls back to an older snapshot plus a longer replay, never to wrong state.
    """
    data = encode_snapshot(offset, table)
    path = directory / snapshot_file_name(offset)
    if sync:
        atomic_write(path, data)
        return
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with open(temp, "wb") as handle:
        handle.write(data)
    os.replace(temp, path)


def delete_snapshot(directory: Path, offset: int) -> None:
    (directory / snapshot_file_name(offset)).unlink(missing_ok=True)
