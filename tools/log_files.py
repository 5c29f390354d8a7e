"""Read a partition directory's files without a broker: what ``kafkette dump-log`` prints.

Every reader here is read-only and stops at the first byte it cannot trust, saying where
(``FileStop``): a dump of a damaged file shows everything before the damage and the
position of the damage, never a traceback. The decoding itself is the log's and the
wire codec's (batch headers, CRC-32C, records, decompression, snapshot and abort-index
layouts, the leader-epoch checkpoint); this module only walks files with it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kafkette.log.leader_epoch_cache import InvalidEpochCheckpoint, parse_epoch_checkpoint
from kafkette.log.producer_snapshot import (
    InvalidSnapshot,
    ProducerStateTable,
    decode_snapshot,
    snapshot_offset_of,
)
from kafkette.log.transaction_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kafkette.log.transaction_index import AbortedTxn
from kafkette.wire.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_AT,
    BatchHeader,
    InvalidBatchError,
    compute_crc,
    read_header,
)
from kafkette.wire.records import Record, decode_batch

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
TXN_ENTRY = struct.Struct(">hqqqq")


class FileStop(Exception):
    """Where a file stops making sense: ``position`` (bytes from its start) and why."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(f"{path}: stops at position {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


def base_offset_of(path: Path) -> int:
    """42 for ``00000000000000000042.log`` (any suffix); 0 when the name is not an offset."""
    stem = path.name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else 0


@dataclass(slots=True)
class LogBatch:
    """One batch of a ``.log`` file: where it is, its header, and whether its CRC holds."""

    position: int
    header: BatchHeader
    valid: bool
    raw: bytes


def _read_exact(file: BinaryIO, size: int) -> bytes:
    data = file.read(size)
    return data if data is not None else b""


def iter_log_batches(path: Path, max_bytes: int | None = None) -> Iterator[LogBatch]:
    """Each batch of a segment file, in file order, as Kafka's FileRecords walks it.

    A batch whose CRC fails is yielded with ``valid=False`` (Kafka prints it with
    ``isvalid: false``). The walk ends at the end of the file, at ``max_bytes``, or
    with ``FileStop`` at bytes that cannot be a batch (torn tail, bad length or magic).
    """
    file_size = path.stat().st_size
    limit = file_size if max_bytes is None else min(max_bytes, file_size)
    cut = limit < file_size  # --max-bytes ends the walk early, as Kafka's slice does
    with open(path, "rb") as file:
        position = 0
        while position < limit:
            head = _read_exact(file, HEADER_SIZE)
            remaining = limit - position
            if len(head) < LOG_OVERHEAD or remaining < LOG_OVERHEAD:
                if cut:
                    return
                raise FileStop(path, position, f"{remaining} bytes left, too few for a batch")
            _, length = struct.unpack_from(">qi", head)
            size = length + LOG_OVERHEAD
            if length < HEADER_SIZE - LOG_OVERHEAD:
                raise FileStop(path, position, f"batch length {length} is too small")
            if size > remaining:
                if cut:
                    return
                raise FileStop(
                    path, position, f"batch of {size} bytes but only {remaining} remain (torn)"
                )
            if len(head) > MAGIC_AT and head[MAGIC_AT] != 2:
                raise FileStop(path, position, f"record batch magic {head[MAGIC_AT]}, not 2")
            raw = head + _read_exact(file, size - len(head))
            try:
                header = read_header(raw)
            except InvalidBatchError as exc:
                raise FileStop(path, position, str(exc)) from None
            valid = compute_crc(raw, 0, size) == header.crc
            yield LogBatch(position, header, valid, raw)
            position += size


def decode_records(path: Path, batch: LogBatch) -> list[Record]:
    """The records of one batch (decompressed); ``FileStop`` if they do not decode."""
    try:
        _, records = decode_batch(batch.raw, check_crc=False)
    except InvalidBatchError as exc:
        reason = f"records of batch {batch.header.base_offset}: {exc}"
        raise FileStop(path, batch.position, reason) from None
    return records


def _fixed_entries(path: Path, entry: struct.Struct) -> tuple[list[tuple], int]:
    """The whole entries of a fixed-width file, and how many bytes trail them."""
    data = path.read_bytes()
    whole = len(data) - len(data) % entry.size
    return list(entry.iter_unpack(data[:whole])), len(data) - whole


def read_offset_index(path: Path) -> tuple[list[tuple[int, int]], int]:
    """(absolute offset, position) per entry until Kafka's preallocated zero tail, and the
    count of torn trailing bytes."""
    base = base_offset_of(path)
    entries, torn = _fixed_entries(path, OFFSET_ENTRY)
    out = []
    for i, (relative, position) in enumerate(entries):
        if relative == 0 and i > 0:
            break  # unused (zeroed) slots of a preallocated index, as Kafka stops there
        out.append((base + relative, position))
    return out, torn


def read_time_index(path: Path) -> tuple[list[tuple[int, int]], int]:
    """(timestamp, absolute offset) per entry until a zeroed slot, and the torn bytes."""
    base = base_offset_of(path)
    entries, torn = _fixed_entries(path, TIME_ENTRY)
    out = []
    for i, (timestamp, relative) in enumerate(entries):
        if relative == 0 and i > 0:
            break
        out.append((timestamp, base + relative))
    return out, torn


def read_txn_index(path: Path) -> list[tuple[int, AbortedTxn]]:
    """(version, entry) per aborted transaction; ``FileStop`` at a torn entry."""
    entries, torn = _fixed_entries(path, TXN_ENTRY)
    out = [(version, AbortedTxn(*fields)) for version, *fields in entries]
    if torn:
        raise_at = len(entries) * TXN_ENTRY_SIZE
        raise FileStop(path, raise_at, f"{torn} bytes of a torn entry")
    return out


def read_snapshot_file(path: Path) -> ProducerStateTable:
    offset = snapshot_offset_of(path.name)
    expected = offset if offset is not None else base_offset_of(path)
    try:
        return decode_snapshot(path.read_bytes(), expected)
    except InvalidSnapshot as exc:
        raise FileStop(path, 0, f"not a kafkette producer snapshot: {exc}") from None


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    try:
        return parse_epoch_checkpoint(path.read_text(encoding="ascii"))
    except (InvalidEpochCheckpoint, UnicodeDecodeError) as exc:
        raise FileStop(path, 0, f"not a leader-epoch checkpoint: {exc}") from None


def batch_at(path: Path, position: int) -> BatchHeader | None:
    """The header of the batch at ``position`` of a segment, or None if none is there."""
    try:
        with open(path, "rb") as file:
            file.seek(position)
            return read_header(_read_exact(file, HEADER_SIZE))
    except (OSError, InvalidBatchError):
        return None
