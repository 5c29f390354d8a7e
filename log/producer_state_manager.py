"""The producer table of one partition log, kept across restarts: Kafka's ProducerStateManager.

Without this a broker that restarts forgets every producer's sequences, and a
client retrying a batch that was written just before the crash gets it
appended a second time. So, as Kafka does:

* a snapshot ``<offset>.snapshot`` of the table is written at every segment
  roll (offset = the new segment's base) and at clean close (offset = the log
  end offset);
* on open, the newest valid snapshot at or below the log end offset is loaded
  and the batches after it are *replayed* from their headers (producer id,
  epoch, base sequence, last offset delta; records are never decoded). A
  clean stop leaves a snapshot at the log end, so a clean start replays
  nothing; after a crash the replay is normally the active segment's headers;
* snapshots above the log end (a recovery or truncation cut the log below
  them) are deleted before anything is appended, so a snapshot on disk always
  describes a prefix of the log as it is;
* truncation rebuilds from an older snapshot plus replay;
* transactions: appends and replays also open and close transactions
  (``producer_state``); a replay from snapshot ``S`` recomputes every abort
  index entry (``<base>.txnindex``) of a marker at or after ``S`` and writes
  the segments' indexes where they differ, so a crash between a marker's
  write and its index entry's, or a torn index, is repaired. After an unclean
  stop the replay starts at or below the first unflushed segment (recovery's
  ``replay_from``), never only at the newest snapshot;
* when retention or DeleteRecords deletes segments, snapshots below the new
  first segment are deleted (the batches between them and the log are gone),
  but the table itself keeps those producers until ``producer.id.expiration.ms``
  (Kafka, KIP-360), so a quiet producer whose records were deleted can go on.

Not thread-safe: the owning PartitionLog calls every mutator under its write
lock; :meth:`check`-style reads of :attr:`table` come from the broker's event
loop while no append of this partition runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from kafkette.log.batch_scan import scan_batches
from kafkette.log.checkpoint import fsync_directory
from kafkette.log.producer_snapshot import (
    InvalidSnapshot,
    delete_snapshot,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from kafkette.log.producer_state import CompletedTxn, ProducerStateTable
from kafkette.log.segment import LogSegment
from kafkette.log.transaction_index import AbortedTxn
from kafkette.wire.record_batch import (
    CONTROL_MASK,
    LOG_OVERHEAD,
    TRANSACTIONAL_MASK,
    BatchHeader,
    InvalidBatchError,
)
from kafkette.wire.records import ControlRecordType, decode_batch, parse_control_record

_log = logging.getLogger(__name__)
_TXN_OR_CONTROL = TRANSACTIONAL_MASK | CONTROL_MASK

# Newest snapshots kept; older ones only shorten a rebuild after a deep
# truncation, which a single node never does in normal operation.
SNAPSHOTS_KEPT = 3


class ProducerStateManager:
    """A partition's :class:`ProducerStateTable` plus its snapshot files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.table = ProducerStateTable()
        self._snapshots: list[int] = []  # offsets of the snapshot files, ascending
        # What the last rebuild did (for tests and log lines).
        self.loaded_snapshot: int | None = None
        self.replayed_batches = 0

    # ------------------------------------------------------------------ loading

    def load(
        self, segments: Sequence[LogSegment], log_end: int, now_ms: int,
        replay_from: int | None = None, snapshots: list[int] | None = None,
    ) -> None:
        """Rebuild the table for a log just opened (and recovered) with ``log_end``.

        ``replay_from``: replay from a snapshot at or below this offset (the
        abort indexes from there on are recomputed), not just the newest one.
        ``snapshots``: the snapshot offsets, if the caller's directory listing
        has them already (else the directory is listed).
        """
        self._snapshots = (
            sorted(snapshots) if snapshots is not None else list_snapshots(self.directory)
        )
        self.delete_snapshots_above(log_end)
        self._rebuild(segments, now_ms, replay_from)

    def truncated(self, segments: Sequence[LogSegment], log_end: int, now_ms: int) -> None:
        """The log was truncated to ``log_end``: rebuild from an older snapshot."""
        self.delete_snapshots_above(log_end)
        self._rebuild(segments, now_ms)

    def reset(self) -> None:
        """The log restarts empty (truncation below its first segment): forget all."""
        for offset in self._snapshots:
            delete_snapshot(self.directory, offset)
        self._snapshots = []
        self.table = ProducerStateTable()

    def delete_snapshots_above(self, log_end: int) -> None:
        """Snapshots that describe offsets the log no longer has; made durable."""
        stale = [offset for offset in self._snapshots if offset > log_end]
        if not stale:
            return
        for offset in stale:
            delete_snapshot(self.directory, offset)
        # Durable before the log can grow past them again.
        fsync_directory(self.directory)
        self._snapshots = [offset for offset in self._snapshots if offset <= log_end]

    def _rebuild(
        self, segments: Sequence[LogSegment], now_ms: int, replay_from: int | None = None
    ) -> None:
        first_base = segments[0].base_offset
        self.delete_snapshots_below(first_base)  # left by a crash during retention
        table: ProducerStateTable | None = None
        start = first_base
        for offset in reversed(list(self._snapshots)):
            if replay_from is not None and offset > replay_from:
                continue
            try:
                table = read_snapshot(self.directory, offset)
            except (InvalidSnapshot, OSError) as exc:
                _log.warning("%s: ignoring producer snapshot at %d: %s",
                             self.directory, offset, exc)
                delete_snapshot(self.directory, offset)
                self._snapshots.remove(offset)
                continue
            start = offset
            break
        self.loaded_snapshot = start if table is not None else None
        if table is None:
            table = ProducerStateTable()
        aborted: list[AbortedTxn] = []
        self.replayed_batches = replay(table, segments, start, now_ms, aborted)
        table.refresh_first_unstable()
        repair_txn_indexes(segments, start, aborted)
        self.table = table

    # ---------------------------------------------------------------- appending

    def record_appended(
        self, headers: Sequence[BatchHeader], base_offset: int, clock: Callable[[], int],
        batches: bytes | bytearray | memoryview = b"",
    ) -> list[AbortedTxn] | None:
        """Remember the producer batches of an append that starts at ``base_offset``.

        ``batches`` are the appended bytes (a marker's record is read from
        them). Returns None when no transaction opened or closed; otherwise
        the abort index entries of the transactions it aborted (possibly
        none). The caller writes those entries, then publishes the new
        first unstable offset (``table.refresh_first_unstable``).
        """
        now_ms = -1
        offset = base_offset
        position = 0
        table = self.table
        changed: list[AbortedTxn] | None = None
        for header in headers:
            if header.producer_id >= 0:
                if now_ms < 0:
                    now_ms = clock()
                attributes = header.attributes
                if attributes & _TXN_OR_CONTROL:
                    if changed is None:
                        changed = []
                    if attributes & CONTROL_MASK:
                        data = bytes(batches[position : position + header.size])
                        _record_marker(table, header, offset, now_ms, changed, data)
                    else:
                        table.record(header, offset, now_ms)
                else:
                    table.record(header, offset, now_ms)
            offset += header.last_offset_delta + 1
            position += header.batch_length + LOG_OVERHEAD
        return changed

    def record_replicated(
        self, headers: Sequence[BatchHeader], clock: Callable[[], int],
        batches: bytes | bytearray | memoryview,
    ) -> list[AbortedTxn] | None:
        """:meth:`record_appended` for a follower's append: each batch at its own
        base offset (the leader's, gaps allowed), nothing validated (the
        leader did; Kafka's REPLICATION origin)."""
        now_ms = -1
        position = 0
        table = self.table
        changed: list[AbortedTxn] | None = None
        for header in headers:
            if header.producer_id >= 0:
                if now_ms < 0:
                    now_ms = clock()
                if header.attributes & _TXN_OR_CONTROL:
                    if changed is None:
                        changed = []
                    if header.attributes & CONTROL_MASK:
                        data = bytes(batches[position : position + header.size])
                        _record_marker(table, header, header.base_offset, now_ms, changed, data)
                        position += header.batch_length + LOG_OVERHEAD
                        continue
                table.record(header, header.base_offset, now_ms)
            position += header.batch_length + LOG_OVERHEAD
        return changed

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        return self.table.remove_expired(now_ms, expiration_ms)

    # ---------------------------------------------------------------- snapshots

    def take_snapshot(self, log_end: int, *, sync: bool) -> None:
        """Write the table as of ``log_end``; prune old snapshots.

        Skipped when a snapshot at ``log_end`` exists already (nothing was
        appended since; expirations alone need no new file) and for a log
        that never held anything. A failed write is logged and left out:
        snapshots only shorten the replay, the log is the truth.
        """
        if self._snapshots and self._snapshots[-1] == log_end:
            return
        if log_end == 0 and not len(self.table):
            return
        try:
            write_snapshot(self.directory, log_end, self.table, sync=sync)
        except OSError as exc:
            _log.warning("%s: producer snapshot at %d not written: %s",
                         self.directory, log_end, exc)
            return
        self._snapshots = [offset for offset in self._snapshots if offset < log_end]
        self._snapshots.append(log_end)
        while len(self._snapshots) > SNAPSHOTS_KEPT:
            delete_snapshot(self.directory, self._snapshots.pop(0))

    def delete_snapshots_below(self, offset: int) -> None:
        """Segments below ``offset`` were deleted: their snapshots cannot be replayed on."""
        while self._snapshots and self._snapshots[0] < offset:
            delete_snapshot(self.directory, self._snapshots.pop(0))


def marker_of(data: bytes) -> tuple[bool, int] | None:
    """(aborted, coordinator epoch) of the control batch ``data``; None if it holds
    no COMMIT/ABORT record (an emptied batch, or another control type)."""
    try:
        _, records = decode_batch(data, check_crc=False)
        if not records:
            return None
        kind, coordinator_epoch = parse_control_record(records[0])
    except InvalidBatchError as exc:
        _log.warning("unreadable control batch ignored: %s", exc)
        return None
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return None
    assert coordinator_epoch is not None
    return kind == ControlRecordType.ABORT, coordinator_epoch


def _record_marker(
    table: ProducerStateTable, header: BatchHeader, offset: int, now_ms: int,
    aborted: list[AbortedTxn], data: bytes,
) -> CompletedTxn | None:
    """Feed one control batch (``data``); append an abort entry to ``aborted``."""
    marker = marker_of(data)
    if marker is None:
        return None
    is_abort, coordinator_epoch = marker
    completed = table.record_marker(
        header.producer_id, header.producer_epoch, coordinator_epoch, offset,
        aborted=is_abort, now_ms=now_ms,
    )
    if completed is not None and completed.aborted:
        aborted.append(
            AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset,
                table.stable_offset_after(completed),
            )
        )
    return completed


def repair_txn_indexes(
    segments: Sequence[LogSegment], start: int, aborted: list[AbortedTxn]
) -> None:
    """Make every segment's abort entries of markers at or after ``start`` be ``aborted``."""
    for segment in segments:
        if segment.next_offset <= start and segment.txn_index.intact:
            continue
        mine = [e for e in aborted if segment.base_offset <= e.last_offset < segment.next_offset]
        if segment.txn_index.replace_from(start, mine):
            _log.info("%s: abort index of segment %d rebuilt from offset %d (%d entries)",
                      segment.directory, segment.base_offset, start, len(mine))


def replay(
    table: ProducerStateTable, segments: Sequence[LogSegment], start: int, now_ms: int,
    aborted: list[AbortedTxn] | None = None,
) -> int:
    """Feed ``table`` every batch header from offset ``start`` to the log end.

    ``start`` is a batch boundary (a snapshot is taken at a log end offset).
    The offset index finds where to begin; headers only are read. Replayed
    producers count as active at ``now_ms``: their real append time is not
    stored, and expiring a producer late is harmless while expiring it early
    is not. Returns the number of batches read.
    """
    count = 0
    for segment in segments:
        if segment.next_offset <= start:
            continue
        position = 0
        if segment.base_offset < start:
            _, position = segment.offset_index.lookup(start)
        try:
            for pos, header in scan_batches(segment.log, position, segment.size, validate=False):
                if header.base_offset < start:
                    continue
                if header.producer_id >= 0 and header.attributes & CONTROL_MASK:
                    _record_marker(
                        table, header, header.base_offset, now_ms,
                        aborted if aborted is not None else [],
                        segment.log.pread(header.size, pos),
                    )
                else:
                    table.record(header, header.base_offset, now_ms)
                count += 1
        except InvalidBatchError as exc:  # recovery validated the log: not expected
            _log.warning("%s: producer state replay stopped in segment %d: %s",
                         segment.directory, segment.base_offset, exc)
            break
    return count
