"""Builds valid magic-v2 record batches for the log tests (uncompressed records).

A plain module, not a fixture: the subprocess crash test's child imports it
by path. Base offsets are written as 0; the log patches them. Thin wrappers
over :func:`kafkette.wire.records.build_batch` that fix what the log tests
rely on: null keys, no headers, a deterministic timestamp, a ``bytearray``.
"""

from __future__ import annotations

from kafkette.wire.records import Record
from kafkette.wire.records import build_batch as build_wire_batch


def build_batch(
    values: list[bytes], *, base_timestamp: int = 1_700_000_000_000, timestamp_step: int = 1
) -> bytearray:
    """A v2 batch holding one record per value, timestamps base + i*step."""
    assert values, "a batch holds at least one record"
    records = [Record(i, i * timestamp_step, None, value) for i, value in enumerate(values)]
    max_timestamp = base_timestamp + (len(values) - 1) * timestamp_step
    return bytearray(
        build_wire_batch(records, base_timestamp=base_timestamp, max_timestamp=max_timestamp)
    )


def build_sized_batch(
    record_count: int, value_size: int, *, base_timestamp: int = 1_700_000_000_000, seed: int = 0
) -> bytearray:
    """A batch of ``record_count`` records with ``value_size``-byte values."""
    values = [bytes([(seed + i) % 251]) * value_size for i in range(record_count)]
    return build_batch(values, base_timestamp=base_timestamp)


def build_idempotent_batch(
    producer_id: int, epoch: int, base_sequence: int, record_count: int, *, value_size: int = 30,
    base_timestamp: int = 1_700_000_000_000,
) -> bytearray:
    """A batch from an idempotent producer: its id, epoch and first sequence in the header."""
    records = [
        Record(i, i, None, bytes([(base_sequence + i) % 251]) * value_size)
        for i in range(record_count)
    ]
    return bytearray(
        build_wire_batch(
            records, base_timestamp=base_timestamp, producer_id=producer_id,
            producer_epoch=epoch, base_sequence=base_sequence,
        )
    )
