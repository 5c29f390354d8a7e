"""The log cleaner (Kafka's LogCleaner) for one partition log at a time.

A clean of a log whose ``cleanup.policy`` includes ``compact``:

1. **Range.** Only closed segments are cleaned, never the active one. The
   *dirty* range starts at the cleaner checkpoint (or the log start) and ends
   at the first uncleanable offset: the active segment's base, or the first
   segment with records newer than ``min.compaction.lag.ms``.
2. **Offset map.** Every keyed record of the dirty range goes into a
   key -> latest offset map (:class:`~kafkette.log.offset_map.OffsetMap`,
   bounded by ``log.cleaner.dedupe.buffer.size`` / ``log.cleaner.threads``). A
   full map ends the range early: the clean covers what fit, the rest waits
   for the next pass.
3. **Rewrite.** Every segment from the log start up to the range end is
   rewritten, in groups of adjacent segments that fit one segment (sizes,
   index sizes, int32 relative offsets: Kafka's groupSegmentsBySize), keeping
   a record only if no later offset of its key is in the map. Batches are
   rewritten, not re-shaped (``kafkette.wire.records.rebuild_batch``); a batch
   keeping all its records is copied byte for byte. Records without a key are
   dropped (Kafka does the same). Offsets never change: the log gets gaps.
4. **Tombstones** (null value) get a delete horizon (now +
   ``delete.retention.ms``, KIP-534: batch attribute bit 6, stored in the
   base timestamp) the first time a clean passes them, and are dropped by
   the first clean after it.
5. **Empty batches.** A batch losing every record is dropped, except the
   header of a producer's batch the producer table still remembers (so
   idempotence survives, as Kafka keeps a producer's last batch) and the
   group's last batch (so a cleaned segment ends where its group ended; it
   makes the crash recovery of a swap exact).
6. Control batches (transaction markers) are kept as they are for now.
7. Each group is swapped in crash-safely (``log/segment_swap.py``), then the
   checkpoint moves to the range end (``cleaner-offset-checkpoint``).

Runs in a worker thread: it reads only closed segments without any lock,
and the swap takes the log's write lock only for renames and list updates.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafkette.log.config import INT_MAX
from kafkette.log.file_region import FileGone
from kafkette.log.offset_map import OffsetMap
from kafkette.log.partition_log import PartitionLog
from kafkette.log.segment import LogSegment
from kafkette.log.segment_swap import cleaned_path
from kafkette.wire.record_batch import (
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    batch_size_at,
    read_header,
)
from kafkette.wire.records import decode_batch, delete_horizon_of, rebuild_batch

DOUBLE_MAX = 1.7976931348623157e308
READ_CHUNK_BYTES = 1024 * 1024


class CleanAborted(Exception):
    """The broker is stopping (or the log changed under the clean): nothing was swapped."""


@dataclass(frozen=True)
class CleanerConfig:
    """Broker-wide cleaner settings (Kafka's ``log.cleaner.*`` names and defaults)."""

    enable: bool = True  # log.cleaner.enable
    threads: int = 1  # log.cleaner.threads
    backoff_ms: int = 15000  # log.cleaner.backoff.ms
    io_max_bytes_per_second: float = DOUBLE_MAX  # log.cleaner.io.max.bytes.per.second
    dedupe_buffer_size: int = 134217728  # log.cleaner.dedupe.buffer.size

    @property
    def map_memory_bytes(self) -> int:
        return self.dedupe_buffer_size // max(1, self.threads)


class Throttler:
    """Holds the cleaner's I/O to ``rate`` bytes/s (Kafka's Throttler), abortable."""

    def __init__(
        self, rate: float, abort: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._abort = abort
        self._clock = clock
        self._start = clock()
        self._bytes = 0

    def account(self, nbytes: int) -> None:
        """Count ``nbytes`` of I/O; sleep if ahead of the rate; raise if aborted."""
        if self._abort.is_set():
            raise CleanAborted("cleaner stopping")
        if self._rate >= DOUBLE_MAX:
            return
        self._bytes += nbytes
        elapsed = self._clock() - self._start
        wanted = self._bytes / self._rate
        if wanted > elapsed and self._abort.wait(wanted - elapsed):
            raise CleanAborted("cleaner stopping")
        if elapsed > 1.0:  # a sliding window, so an idle spell gives no burst later
            self._start, self._bytes = self._clock(), 0


@dataclass(frozen=True)
class Cleanability:
    """How dirty a log is: Kafka's LogToClean."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    max_lag_exceeded: bool

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


@dataclass
class CleanStats:
    """What one clean did (for logs, tests and the bench)."""

    end_offset: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    groups: int = 0
    # Smallest delete horizon of a tombstone kept: the log is due again then.
    next_delete_horizon_ms: int | None = None


def measure(log: PartitionLog, checkpoint: int, now: int) -> Cleanability | None:
    """The dirty range of ``log`` (None when it has none)."""
    segments, log_start = log.closed_segments()
    if not segments:
        return None
    config = log.config
    if checkpoint > log.log_end_offset:
        checkpoint = 0  # a stale entry (the topic was re-created): start over, as Kafka
    first_dirty = max(checkpoint, log_start, segments[0].base_offset)
    uncleanable = log.active_base_offset()
    for segment in segments:
        if segment.next_offset <= first_dirty:
            continue
        if config.min_compaction_lag_ms > 0 and (
            now - segment.largest_timestamp < config.min_compaction_lag_ms
        ):
            uncleanable = segment.base_offset
            break
    first_dirty = min(first_dirty, uncleanable)  # nothing dirty: dirty_bytes is 0
    clean = dirty = 0
    first_dirty_ts: int | None = None
    for segment in segments:
        if segment.base_offset >= uncleanable:
            break
        if segment.next_offset <= first_dirty:
            clean += segment.size
        else:
            dirty += segment.size
            if first_dirty_ts is None:
                first_dirty_ts = segment.first_batch_timestamp
    lag_exceeded = (
        first_dirty_ts is not None
        and first_dirty_ts >= 0
        and now - first_dirty_ts > config.max_compaction_lag_ms
    )
    return Cleanability(first_dirty, uncleanable, clean, dirty, lag_exceeded)


def _batches(
    segment: LogSegment, throttler: Throttler, stats: CleanStats
) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch of a closed segment, read in large chunks (raises FileGone if deleted)."""
    position, end = 0, segment.size
    while position < end:
        chunk = segment.log.pread(min(READ_CHUNK_BYTES, end - position), position)
        throttler.account(len(chunk))
        stats.bytes_read += len(chunk)
        offset = 0
        while True:
            size = batch_size_at(chunk, offset)
            if size is None or offset + size > len(chunk):
                break
            yield read_header(chunk, offset), chunk[offset : offset + size]
            offset += size
            # Decoding holds the GIL: hand it over after each batch, so an append
            # or fetch thread waits for one batch's work, not the 5 ms switch interval.
            time.sleep(0)
        if offset == 0:
            size = batch_size_at(chunk, 0)
            if size is None or size < HEADER_SIZE or position + size > end:
                raise InvalidBatchError(f"{segment.log.path}: bad batch at {position}")
            data = segment.log.pread(size, position)
            throttler.account(len(data))
            stats.bytes_read += len(data)
            yield read_header(data, 0), data
            offset = size
        position += offset


def _build_map(
    segments: list[LogSegment], span: Cleanability, offset_map: OffsetMap,
    throttler: Throttler, stats: CleanStats,
) -> int:
    """Fill the map from the dirty range; returns the offset the clean covers up to."""
    offset_map.clear()
    for segment in segments:
        if segment.next_offset <= span.first_dirty:
            continue
        if segment.base_offset >= span.first_uncleanable:
            break
        for header, data in _batches(segment, throttler, stats):
            if header.last_offset < span.first_dirty or header.is_control:
                continue
            _, records = decode_batch(data, check_crc=False)
            if len(offset_map) and len(offset_map) + len(records) > offset_map.capacity:
                return header.base_offset  # full: the rest is for the next clean
            for record in records:
                if record.key is not None and record.offset >= span.first_dirty:  # type: ignore[operator]
                    offset_map.put(record.key, record.offset)  # type: ignore[arg-type]
    return span.first_uncleanable


def group_by_size(
    segments: list[LogSegment], max_bytes: int, max_index_bytes: int
) -> list[list[LogSegment]]:
    """Adjacent segments that together fit one segment (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size = group[0].size
        index = len(group[0].offset_index) * 8
        time_index = len(group[0].time_index) * 12
        while rest:
            following = rest[0]
            if (
                size + following.size > max_bytes
                or index + len(following.offset_index) * 8 > max_index_bytes
                or time_index + len(following.time_index) * 12 > max_index_bytes
                or following.next_offset - 1 - group[0].base_offset > INT_MAX
            ):
                break
            group.append(rest.pop(0))
            size += following.size
            index += len(following.offset_index) * 8
            time_index += len(following.time_index) * 12
        groups.append(group)
    return groups


def _clean_group(
    log: PartitionLog, group: list[LogSegment], offset_map: OffsetMap, now: int,
    producer_batches: dict[int, set[int]], throttler: Throttler, stats: CleanStats,
    truncations: int,
) -> None:
    """Write the group's cleaned copy, fsync it, and swap it in."""
    base = group[0].base_offset
    last_segment = group[-1]
    path = cleaned_path(log.directory, base)
    retention = log.config.delete_retention_ms
    written: list[tuple[int, int, int, int]] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    swapped = False
    try:
        position = 0
        for segment in group:
            for header, data in _batches(segment, throttler, stats):
                out = _clean_batch(
                    header, data, offset_map, now, retention, producer_batches, stats,
                    is_last=segment is last_segment and header.next_offset == segment.next_offset,
                )
                if out is None:
                    continue
                _write_all(fd, out)
                throttler.account(len(out))
                stats.bytes_written += len(out)
                max_ts = read_header(out, 0).max_timestamp
                written.append((position, len(out), header.last_offset, max_ts))
                position += len(out)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        if not log.replace_segments(group, written, truncations):
            raise CleanAborted(f"{log.directory}: segments changed during the clean")
        swapped = True
        stats.groups += 1
    finally:
        if fd >= 0:
            os.close(fd)
        if not swapped:
            path.unlink(missing_ok=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _clean_batch(
    header: BatchHeader, data: bytes, offset_map: OffsetMap, now: int, retention_ms: int,
    producer_batches: dict[int, set[int]], stats: CleanStats, *, is_last: bool,
) -> bytes | None:
    """The batch as it stays in the log, or None to drop it."""
    if header.is_control:
        return data  # transaction markers: kept until transactions are implemented
    _, records = decode_batch(data, check_crc=False)
    stats.records_read += len(records)
    horizon = delete_horizon_of(header)
    kept = []
    tombstones = False
    for record in records:
        if record.key is None:
            continue  # a compacted log has no use for it (Kafka drops it too)
        if offset_map.get(record.key) > record.offset:  # type: ignore[operator]
            continue  # a later record of the key exists
        if record.value is None:
            if horizon is not None and now >= horizon:
                continue  # tombstone past its delete horizon
            tombstones = True
        kept.append(record)
    stats.records_kept += len(kept)
    new_horizon = now + retention_ms if tombstones and horizon is None else None
    if tombstones:
        due = horizon if horizon is not None else new_horizon
        if stats.next_delete_horizon_ms is None or due < stats.next_delete_horizon_ms:  # type: ignore[operator]
            stats.next_delete_horizon_ms = due
    if len(kept) == len(records) and new_horizon is None:
        return data
    if kept:
        return rebuild_batch(header, kept, delete_horizon_ms=new_horizon)
    remembered = header.producer_id >= 0 and header.last_offset in producer_batches.get(
        header.producer_id, ()
    )
    if remembered or is_last:
        return rebuild_batch(header, [])
    return None


def clean_log(
    log: PartitionLog, checkpoint: int, offset_map: OffsetMap, now: int, throttler: Throttler,
    *, expire_tombstones: bool = False,
) -> CleanStats | None:
    """One clean of ``log`` from ``checkpoint``; None if there was nothing to clean.

    With ``expire_tombstones`` a log with no dirty range is still rewritten
    (with an empty map): the pass that drops tombstones whose delete horizon
    has passed, when nothing new was written after them.

    Raises CleanAborted (nothing half-done stays: the group being written is
    discarded) and FileGone (segments deleted under the clean, e.g. by
    retention or topic deletion; likewise nothing half-done).
    """
    truncations = log.truncation_count
    span = measure(log, checkpoint, now)
    if span is None or (span.first_dirty >= span.first_uncleanable and not expire_tombstones):
        return None
    segments, _ = log.closed_segments()
    stats = CleanStats()
    end = _build_map(segments, span, offset_map, throttler, stats)
    stats.end_offset = end
    to_clean = [s for s in segments if s.base_offset < end]
    producer_batches = log.producer_batch_offsets()
    config = log.config
    for group in group_by_size(to_clean, config.segment_bytes, config.max_index_bytes):
        _clean_group(
            log, group, offset_map, now, producer_batches, throttler, stats, truncations
        )
    offset_map.clear()
    return stats


__all__ = [
    "CleanAborted",
    "CleanStats",
    "Cleanability",
    "CleanerConfig",
    "FileGone",
    "Throttler",
    "clean_log",
    "group_by_size",
    "measure",
]
