"""The log cleaner (Kafka's LogCleaner) for one partition log at a time.

A clean of a log whose ``cleanup.policy`` includes ``compact``:

1. **Range.** Only closed segments are cleaned, never the active one. The
   *dirty* range starts at the cleaner checkpoint (or the log start) and ends
   at the first uncleanable offset: the active segment's base, the first
   segment with records newer than ``min.compaction.lag.ms``, or the segment
   holding the last stable offset (never clean at or above the LSO; whole
   segments are rewritten, so the one holding it is left alone).
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
6. **Transactions** (Kafka's CleanedTransactionMetadata). A transactional
   data batch inside an aborted transaction (same producer, offset between
   the transaction's first offset and its ABORT marker, from the abort
   indexes) is dropped whole, never put in the offset map, and kept only as
   an empty header under the rule of step 5. Markers: an ABORT marker is
   kept, with its abort-index entry, while any batch of its transaction was
   still seen in this pass; a COMMIT marker while any batch of its
   transaction was. Otherwise the marker is no longer needed and is treated
   like a tombstone: the first clean gives it a delete horizon (now +
   ``delete.retention.ms``) and the first clean after that removes it. The
   state spans the whole pass (all groups), so a marker in a later group
   than its data is judged on what the pass saw.
7. Each group is swapped in crash-safely (``log/segment_swap.py``), then the
   checkpoint moves to the range end (``cleaner-offset-checkpoint``).

Split in two so the heavy part never holds the broker's GIL:
:func:`clean_log_with` runs in a broker worker thread and does what needs
the live log (range, groups, producer table and abort index snapshots, each
group's swap under the log's write lock, for renames and list updates only);
a :class:`CleanSession` does steps 2-6 from plain data (segment paths and
sizes), reading closed segments by path without any lock and writing
fsynced ``.cleaned`` files, never swapping. The broker runs the session in
its cleaner process (``log/cleaner_process.py``); :func:`clean_log` runs it
in the calling thread (tests, benches). Both passes read each record's key,
offset and value nullness through log/cleaner_keys.py (a C walk), and decode
whole records only for the batches a clean shortens.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# CleanerConfig and CleanAborted live where the broker can import them without this
# module (log/config.py, log/errors.py); they are re-exported here.
from kafkette.log.config import DOUBLE_MAX, INT_MAX, CleanerConfig
from kafkette.log.errors import CleanAborted
from kafkette.log.file_region import FileGone, OpenFile
from kafkette.log.offset_map import OffsetMap
from kafkette.log.partition_log import PartitionLog
from kafkette.log.producer_state_manager import marker_of
from kafkette.log.segment import LogSegment
from kafkette.log.segment_swap import cleaned_path, cleaned_txn_index_path
from kafkette.log.transaction_index import AbortedTxn, encode_entries
from kafkette.wire.record_batch import (
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    batch_size_at,
    read_header,
)
from kafkette.wire.records import decode_batch, delete_horizon_of, rebuild_batch

READ_CHUNK_BYTES = 1024 * 1024


class Session(Protocol):
    """What :func:`clean_log_with` needs of a clean session (local or in the cleaner process)."""

    stats: CleanStats

    def build_map(self) -> int: ...

    def write_group(
        self, first: int, count: int, producer_batches: dict[int, set[int]]
    ) -> list[tuple[int, int, int, int]]: ...

    def close(self) -> None: ...


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
    stable = log.last_stable_offset
    for segment in segments:
        if segment.next_offset > stable:
            uncleanable = min(uncleanable, segment.base_offset)
            break
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


@dataclass(frozen=True)
class SegmentSource:
    """A closed segment as plain data: what a clean reads, in this or another process.

    ``size`` is the segment's size when the clean was picked: closed segments
    only shrink by truncation, which the swap detects (truncation count).
    """

    path: str
    base_offset: int
    next_offset: int
    size: int


def source_of(segment: LogSegment) -> SegmentSource:
    return SegmentSource(segment.log.path, segment.base_offset, segment.next_offset, segment.size)


def _open_for_reading(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileGone(f"{path} was deleted") from None


def _batches(
    segment: SegmentSource, throttler: Throttler, stats: CleanStats
) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch of a closed segment, read in large chunks (FileGone if it was deleted)."""
    # Closed when the generator ends or is dropped (OpenFile owns the descriptor).
    handle = OpenFile(_open_for_reading(segment.path), segment.path)
    position, end = 0, segment.size
    while position < end:
        chunk = handle.pread(min(READ_CHUNK_BYTES, end - position), position)
        throttler.account(len(chunk))
        stats.bytes_read += len(chunk)
        offset = 0
        while True:
            size = batch_size_at(chunk, offset)
            if size is None or offset + size > len(chunk):
                break
            yield read_header(chunk, offset), chunk[offset : offset + size]
            offset += size
        if offset == 0:
            size = batch_size_at(chunk, 0)
            if size is None or size < HEADER_SIZE or position + size > end:
                raise InvalidBatchError(f"{segment.path}: bad batch at {position}")
            data = handle.pread(size, position)
            throttler.account(len(data))
            stats.bytes_read += len(data)
            yield read_header(data, 0), data
            offset = size
        position += offset


class TxnCleanState:
    """What one clean pass knows and has seen of transactions (see step 6)."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        # producer id -> its aborted transactions, by first offset (a producer's
        # transactions never overlap), and their first offsets for bisect
        self._ranges: dict[int, list[AbortedTxn]] = {}
        for entry in sorted(aborted, key=lambda e: e.first_offset):
            self._ranges.setdefault(entry.producer_id, []).append(entry)
        self._firsts = {pid: [e.first_offset for e in v] for pid, v in self._ranges.items()}
        self._observed: set[tuple[int, int]] = set()  # (producer, marker offset)
        self._committed_seen: set[int] = set()  # producers with data seen before a COMMIT

    def aborted_entry(self, header: BatchHeader) -> AbortedTxn | None:
        """The aborted transaction a transactional data batch belongs to, if any."""
        firsts = self._firsts.get(header.producer_id)
        if not firsts:
            return None
        i = bisect_right(firsts, header.base_offset) - 1
        if i < 0:
            return None
        entry = self._ranges[header.producer_id][i]
        return entry if header.base_offset <= entry.last_offset else None

    def on_data(self, header: BatchHeader) -> bool:
        """A transactional data batch read by the clean: True if it is aborted data."""
        entry = self.aborted_entry(header)
        if entry is not None:
            self._observed.add((entry.producer_id, entry.last_offset))
            return True
        self._committed_seen.add(header.producer_id)
        return False

    def on_marker(self, header: BatchHeader, data: bytes) -> tuple[bool, AbortedTxn | None]:
        """(still needed, abort-index entry to keep) for a control batch."""
        marker = marker_of(data)
        if marker is None:
            return False, None  # emptied or not a transaction marker
        aborted, _ = marker
        producer_id = header.producer_id
        if not aborted:
            seen = producer_id in self._committed_seen
            self._committed_seen.discard(producer_id)
            return seen, None
        self._committed_seen.discard(producer_id)
        key = (producer_id, header.base_offset)
        if key not in self._observed:
            return False, None
        self._observed.discard(key)
        for entry in self._ranges.get(producer_id, ()):
            if entry.last_offset == header.base_offset:
                return True, entry
        return True, None


def _build_map(
    segments: list[SegmentSource], first_dirty: int, first_uncleanable: int,
    offset_map: OffsetMap, throttler: Throttler, stats: CleanStats, txns: TxnCleanState,
) -> int:
    """Fill the map from the dirty range; returns the offset the clean covers up to."""
    offset_map.clear()
    for segment in segments:
        if segment.next_offset <= first_dirty:
            continue
        if segment.base_offset >= first_uncleanable:
            break
        for header, data in _batches(segment, throttler, stats):
            if header.last_offset < first_dirty or header.is_control:
                continue
            if header.is_transactional and txns.aborted_entry(header) is not None:
                continue  # aborted records never shadow committed ones
            if len(offset_map) and len(offset_map) + header.records_count > offset_map.capacity:
                return header.base_offset  # full: the rest is for the next clean
            offset_map.put_batch(header, data, first_dirty)
    return first_uncleanable


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


def _write_cleaned(
    directory: Path, group: list[SegmentSource], offset_map: OffsetMap, now: int,
    retention_ms: int, producer_batches: dict[int, set[int]], throttler: Throttler,
    stats: CleanStats, txns: TxnCleanState,
) -> list[tuple[int, int, int, int]]:
    """Write the group's cleaned copy (and abort index) and fsync them.

    Returns (position, size, last offset, max timestamp) of every batch
    written, what ``PartitionLog.replace_segments`` needs. On any failure
    the files are removed.
    """
    base = group[0].base_offset
    last_segment = group[-1]
    path = cleaned_path(directory, base)
    txn_path = cleaned_txn_index_path(directory, base)
    kept_aborts: list[AbortedTxn] = []
    written: list[tuple[int, int, int, int]] = []
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        raise FileGone(f"{directory} was deleted") from None
    done = False
    try:
        position = 0
        for segment in group:
            for header, data in _batches(segment, throttler, stats):
                out = _clean_batch(
                    header, data, offset_map, now, retention_ms, producer_batches, stats,
                    txns, kept_aborts,
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
        if kept_aborts:
            _write_txn_index(txn_path, kept_aborts)
        done = True
        return written
    finally:
        if fd >= 0:
            os.close(fd)
        if not done:
            path.unlink(missing_ok=True)
            txn_path.unlink(missing_ok=True)


def _write_txn_index(path, entries: list[AbortedTxn]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, encode_entries(entries))
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _clean_marker(
    header: BatchHeader, data: bytes, now: int, retention_ms: int, stats: CleanStats,
    txns: TxnCleanState, kept_aborts: list[AbortedTxn], *, is_last: bool,
) -> bytes | None:
    """A control batch: kept while needed, then after its delete horizon dropped."""
    needed, entry = txns.on_marker(header, data)
    if needed:
        if entry is not None:
            kept_aborts.append(entry)
        return data
    horizon = delete_horizon_of(header)
    if horizon is not None and now >= horizon:
        return rebuild_batch(header, []) if is_last else None
    if horizon is None:
        horizon = now + retention_ms
        _, records = decode_batch(data, check_crc=False)
        data = rebuild_batch(header, records, delete_horizon_ms=horizon)
    if stats.next_delete_horizon_ms is None or horizon < stats.next_delete_horizon_ms:
        stats.next_delete_horizon_ms = horizon
    return data


def _clean_batch(
    header: BatchHeader, data: bytes, offset_map: OffsetMap, now: int, retention_ms: int,
    producer_batches: dict[int, set[int]], stats: CleanStats, txns: TxnCleanState,
    kept_aborts: list[AbortedTxn], *, is_last: bool,
) -> bytes | None:
    """The batch as it stays in the log, or None to drop it."""
    if header.producer_id >= 0 and header.is_control:
        return _clean_marker(
            header, data, now, retention_ms, stats, txns, kept_aborts, is_last=is_last
        )
    if header.is_control:
        return data  # not a transaction marker (no producer): left alone
    if header.is_transactional and txns.on_data(header):
        stats.records_read += header.records_count
        remembered = header.last_offset in producer_batches.get(header.producer_id, ())
        if remembered or is_last:
            return data if header.records_count == 0 else rebuild_batch(header, [])
        return None
    count = header.records_count
    stats.records_read += count
    horizon = delete_horizon_of(header)
    # Records without a key are not among the survivors: a compacted log has no
    # use for them (Kafka drops them too); nor are those a later offset shadows.
    kept_indexes = []
    tombstones = False
    for index, value_is_null in offset_map.survivors(header, data):
        if value_is_null:
            if horizon is not None and now >= horizon:
                continue  # tombstone past its delete horizon
            tombstones = True
        kept_indexes.append(index)
    stats.records_kept += len(kept_indexes)
    new_horizon = now + retention_ms if tombstones and horizon is None else None
    if tombstones:
        due = horizon if horizon is not None else new_horizon
        if stats.next_delete_horizon_ms is None or due < stats.next_delete_horizon_ms:  # type: ignore[operator]
            stats.next_delete_horizon_ms = due
    if len(kept_indexes) == count and new_horizon is None:
        return data
    if kept_indexes:
        _, records = decode_batch(data, check_crc=False)  # only batches that keep some
        kept = [records[index] for index in kept_indexes]
        return rebuild_batch(header, kept, delete_horizon_ms=new_horizon)
    remembered = header.producer_id >= 0 and header.last_offset in producer_batches.get(
        header.producer_id, ()
    )
    if remembered or is_last:
        return rebuild_batch(header, [])
    return None


@dataclass(frozen=True)
class CleanJob:
    """Everything the reading and writing part of one clean needs, as plain data.

    Picklable: the broker hands it to its cleaner process
    (``log/cleaner_process.py``), which never touches the live log.
    """

    directory: str
    segments: list[SegmentSource]  # the closed segments, from the log start
    first_dirty: int
    first_uncleanable: int
    aborted: list[AbortedTxn]
    now: int
    delete_retention_ms: int


class CleanSession:
    """The CPU-heavy part of one clean: build the offset map, write each group's copy.

    It reads segment files by path and writes ``.cleaned`` files; it never
    swaps, so it can run anywhere (this process, or the cleaner process).
    Groups must be written in log order (the transaction state spans the pass).
    """

    def __init__(self, job: CleanJob, offset_map: OffsetMap, throttler: Throttler) -> None:
        self.job = job
        self.stats = CleanStats()
        self._offset_map = offset_map
        self._throttler = throttler
        self._txns = TxnCleanState(job.aborted)

    def build_map(self) -> int:
        """Fill the offset map; returns the end of the range this clean covers."""
        job = self.job
        return _build_map(
            job.segments, job.first_dirty, job.first_uncleanable, self._offset_map,
            self._throttler, self.stats, self._txns,
        )

    def write_group(
        self, first: int, count: int, producer_batches: dict[int, set[int]]
    ) -> list[tuple[int, int, int, int]]:
        """Write the cleaned copy of ``job.segments[first : first + count]``."""
        job = self.job
        return _write_cleaned(
            Path(job.directory), job.segments[first : first + count], self._offset_map,
            job.now, job.delete_retention_ms, producer_batches, self._throttler, self.stats,
            self._txns,
        )

    def close(self) -> None:
        self._offset_map.clear()


def clean_log(
    log: PartitionLog, checkpoint: int, offset_map: OffsetMap, now: int, throttler: Throttler,
    *, expire_tombstones: bool = False,
) -> CleanStats | None:
    """One clean of ``log`` from ``checkpoint``, all of it in this thread (see clean_log_with)."""
    return clean_log_with(
        log, checkpoint, now, lambda job: CleanSession(job, offset_map, throttler),
        expire_tombstones=expire_tombstones,
    )


def clean_log_with(
    log: PartitionLog, checkpoint: int, now: int, open_session: Callable[[CleanJob], Session],
    *, expire_tombstones: bool = False, pace: Callable[[float], None] | None = None,
) -> CleanStats | None:
    """One clean of ``log`` from ``checkpoint``; None if there was nothing to clean.

    This part needs the live log: it picks the range, groups the segments,
    snapshots the producer table and the abort index, and swaps each group in
    as soon as ``open_session``'s session has written it, so a long clean
    makes progress group by group.

    With ``expire_tombstones`` a log with no dirty range is still rewritten
    (with an empty map): the pass that drops tombstones whose delete horizon
    has passed, when nothing new was written after them.

    ``pace`` is called after each group's swap with the seconds that group
    took (write and swap); the broker waits there (see
    ``LogCleanerManager``), so a fast clean does not swap group after group
    back to back while the broker serves. It may raise CleanAborted.

    Raises CleanAborted (nothing half-done stays: the group being written is
    discarded) and FileGone (segments deleted under the clean, e.g. by
    retention or topic deletion; likewise nothing half-done).
    """
    truncations = log.truncation_count
    span = measure(log, checkpoint, now)
    if span is None or (span.first_dirty >= span.first_uncleanable and not expire_tombstones):
        return None
    segments, _ = log.closed_segments()
    config = log.config
    job = CleanJob(
        str(log.directory), [source_of(s) for s in segments], span.first_dirty,
        span.first_uncleanable, log.abort_index_entries(), now, config.delete_retention_ms,
    )
    session = open_session(job)
    try:
        end = session.build_map()
        to_clean = [s for s in segments if s.base_offset < end]
        producer_batches = log.producer_batch_offsets()
        groups = 0
        first = 0
        for group in group_by_size(to_clean, config.segment_bytes, config.max_index_bytes):
            base = group[0].base_offset
            started = time.monotonic()
            swapped = False
            try:
                written = session.write_group(first, len(group), producer_batches)
                if not log.replace_segments(group, written, truncations):
                    raise CleanAborted(f"{log.directory}: segments changed during the clean")
                swapped = True
            finally:
                if not swapped:
                    cleaned_path(log.directory, base).unlink(missing_ok=True)
                    cleaned_txn_index_path(log.directory, base).unlink(missing_ok=True)
            groups += 1
            first += len(group)
            if pace is not None:
                pace(time.monotonic() - started)
        stats = session.stats
        stats.end_offset = end
        stats.groups = groups
        return stats
    finally:
        session.close()


__all__ = [
    "CleanAborted",
    "CleanJob",
    "CleanSession",
    "CleanStats",
    "Cleanability",
    "CleanerConfig",
    "FileGone",
    "SegmentSource",
    "Throttler",
    "clean_log",
    "clean_log_with",
    "group_by_size",
    "measure",
]
