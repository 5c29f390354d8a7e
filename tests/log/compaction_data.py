"""Keyed batches for the cleaner tests (a plain module: the crash child imports it)."""

from __future__ import annotations

import threading

from kafkette.log import LogConfig, PartitionLog
from kafkette.log.cleaner import Throttler, clean_log
from kafkette.log.offset_map import OffsetMap
from kafkette.wire.record_batch import validate_batch
from kafkette.wire.records import Record, build_batch, decode_batches

BASE_TS = 1_700_000_000_000

COMPACT = LogConfig(
    segment_bytes=2048, index_interval_bytes=256, cleanup_policy="compact",
    delete_retention_ms=1000,
)


def keyed_batch(
    items: list[tuple[bytes | None, bytes | None]], *, compression: int = 0,
    timestamp: int = BASE_TS, producer_id: int = -1, base_sequence: int = -1,
) -> bytearray:
    records = [Record(i, i, key, value) for i, (key, value) in enumerate(items)]
    return bytearray(
        build_batch(
            records, base_timestamp=timestamp, compression=compression,
            producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=base_sequence,
        )
    )


def append(log: PartitionLog, batch: bytearray) -> int:
    return log.append(batch, [validate_batch(batch)]).base_offset


def value_for(round_: int, key: int) -> bytes:
    return f"value-{key}-{round_}".encode() * 3


def write_rounds(log: PartitionLog, rounds: int, keys: int, per_batch: int = 4) -> dict:
    """Overwrite ``keys`` keys ``rounds`` times; returns offset -> (key, value) written."""
    written: dict[int, tuple[bytes, bytes]] = {}
    for r in range(rounds):
        for start in range(0, keys, per_batch):
            items = [
                (f"key-{k}".encode(), value_for(r, k))
                for k in range(start, min(keys, start + per_batch))
            ]
            base = append(log, keyed_batch(items, compression=r % 2 * 1))
            for i, item in enumerate(items):
                written[base + i] = item
    return written


def all_records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every (offset, key, value) in the log, read through ``read`` like a consumer."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        assert data, f"no data at {offset} below log end {log.log_end_offset}"
        for header, records in decode_batches(data):
            out.extend((r.offset, r.key, r.value) for r in records if r.offset >= offset)
            offset = header.next_offset
    return out


def latest(records) -> dict:
    result = {}
    for offset, key, value in records:
        result[key] = (offset, value)
    return result


def clean(log: PartitionLog, now: int, checkpoint: int = 0, memory: int = 1 << 20):
    return clean_log(log, checkpoint, OffsetMap(memory), now, Throttler(1e308, threading.Event()))
