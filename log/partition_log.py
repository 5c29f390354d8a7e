"""One partition's log: ordered segments, offsets, appends, reads, retention, flush.

Threading contract (the broker calls this from worker threads):

* Mutators (``append``, ``truncate_to``, ``delete_records_before``,
  ``apply_retention``, ``close``) take ``_write_lock``; the broker serialises
  appends per partition anyway, the lock makes retention and truncation safe
  against them.
* Published state (segment list, sizes, offsets, in-memory indexes) changes
  under ``_state_lock``, held for short in-memory updates; the one exception
  is an append's publication (index entries, then size, then log end offset:
  each store atomic, in that order), which only grows state. The big
  ``pwrite`` of an append, header scans of reads and ``fsync`` run outside it.
* Reads take only ``_state_lock`` (briefly), so they run concurrently with an
  append and never see bytes that are not yet fully written. They take it
  through ``_read_lock``: a read on the event loop (``reads_without_waiting``)
  raises WouldBlock instead of waiting while a truncation holds it.
* The producer table (idempotence, ``producer_state_manager``) is updated by
  ``append`` after its write and rebuilt by ``truncate_to``, both under
  ``_write_lock``. ``check_sequence`` reads it without a lock: the broker
  calls it under its own per-partition append lock, so no append of this
  partition runs meanwhile, and expiration only removes whole entries.
* Replication: the leader-epoch cache (``leader_epoch_cache``) is changed
  under ``_write_lock`` by appends and truncations, and persisted before the
  batches carrying a new epoch are written. The high watermark is None on a
  single node (it *is* the log end offset then); after
  :meth:`enable_replication` it is an explicit offset that only
  :meth:`set_high_watermark`, truncation and log-start moves change; reads of
  it are single attribute loads.
* Transactions: an append that closes an aborted transaction writes its abort
  index entry (``<base>.txnindex`` of the segment holding the marker) before
  the table publishes the new first unstable offset, and both before the log
  end offset moves; ``last_stable_offset`` reads the log end first. So a
  reader never sees the LSO pass aborted data whose entry it cannot find.

The clock is injected (a callable returning epoch milliseconds).
"""

from __future__ import annotations

import logging
import struct
import threading
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kafkette.log.batch_scan import scan_batches
from kafkette.log.checkpoint import OffsetsCheckpoint
from kafkette.log.config import INT_MAX, LogConfig
from kafkette.log.errors import LogClosed, OffsetMismatch, OffsetOutOfRange, RecordBatchTooLarge
from kafkette.log.file_region import FileGone, ReadInfo, ReadLock
from kafkette.log.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    LeaderEpochCache,
    epoch_starts,
)
from kafkette.log.producer_state import SequenceVerdict
from kafkette.log.producer_state_manager import ProducerStateManager
from kafkette.log.recovery import load_log
from kafkette.log.retention import (
    SegmentPredicate,
    deletable_prefix,
    log_start_breached,
    retention_size_breached,
    retention_time_breached,
)
from kafkette.log.segment import AppendedBatch, LogSegment
from kafkette.log.segment_swap import commit_swap
from kafkette.log.transaction_index import AbortedTxn, collect_aborted
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import (
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatchError,
    iter_batches,
    set_log_append_time,
)

Clock = Callable[[], int]
_BASE_OFFSET = struct.Struct(">q")  # patch_base_offset, without a call per batch
# partitionLeaderEpoch (int32) follows baseOffset (int64) and batchLength (int32).
# Read from the bytes, not the header: the broker stamps it after parsing.
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12

_log = logging.getLogger(__name__)


class AppendInfo(NamedTuple):
    """Result of an append: the offsets assigned and the log start offset after it.

    ``log_append_time_ms`` is -1 unless the topic uses LogAppendTime. (A
    NamedTuple, not a dataclass: it is built once per produce request.)
    """

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int


class AppendWouldBlock(Exception):
    """A ``nonblocking`` append would wait for a lock, roll, or fsync; nothing was written."""


class PartitionLog:
    """A partition's segmented log on disk. See the module docstring for threading."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
    ) -> None:
        self.directory = directory
        self._config = config
        self._clock = clock
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._log_end_offset = segments[-1].next_offset
        self._recovery_point = recovery_point
        self._last_flush_ms = clock()
        self._truncations = 0
        self._closed = False
        self._state_lock = threading.Lock()
        # Reads take the state lock through this: a read on the event loop
        # (reads_without_waiting) gives up rather than wait behind a truncation.
        self._read_lock = ReadLock(self._state_lock)
        self._write_lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()
        self._written_checkpoint: OffsetsCheckpoint | None = None
        self._producer_state = ProducerStateManager(directory)
        # None: single node, HW is the log end offset. See enable_replication.
        self._high_watermark: int | None = None
        self.leader_epoch_cache = LeaderEpochCache(
            directory / LEADER_EPOCH_CHECKPOINT_FILE, load=False
        )

    @classmethod
    def open(
        cls, directory: Path, config: LogConfig, clock: Clock, *, recover: bool
    ) -> PartitionLog:
        """Open or create the log in ``directory``; ``recover`` after an unclean stop."""
        loaded = load_log(directory, config, clock(), recover=recover)
        log = cls(
            directory, config, clock, loaded.segments, loaded.log_start_offset,
            loaded.recovery_point,
        )
        # A missing checkpoint reads as (0, 0): a brand-new log writes none until
        # its offsets move, which keeps creating 1,000 partitions cheap.
        log._written_checkpoint = loaded.checkpoint_on_disk or OffsetsCheckpoint(0, 0)
        log.write_checkpoint()  # only if recovery changed it
        log._producer_state.load(
            log._segments, log._log_end_offset, clock(), loaded.replay_from, loaded.snapshots
        )
        log._load_epoch_cache(loaded.has_epoch_checkpoint)
        return log

    @classmethod
    def create_new(cls, directory: Path, config: LogConfig, clock: Clock) -> PartitionLog:
        """A new empty log in ``directory``, which must not exist (FileExistsError).

        What ``open`` of an empty directory ends with, without looking for
        files that cannot be there (checkpoint, listing, snapshots, leftover
        segment files): a new topic's partitions cost one ``mkdir`` each (the
        segment's files are made on first use). The caller makes the new directory entries
        durable (one fsync of the data dir for all of them); a crash before
        that leaves a directory recovery opens as an empty log, or none.
        """
        directory.mkdir()
        segment = LogSegment.create(directory, 0, config, clock(), fresh=True, lazy=True)
        log = cls(directory, config, clock, [segment], 0, 0)
        log._written_checkpoint = OffsetsCheckpoint(0, 0)  # as open(): none written yet
        return log

    def _load_epoch_cache(self, file_listed: bool) -> None:
        """Read ``leader-epoch-checkpoint``; drop entries the log no longer covers.

        As Kafka after recovery: entries starting at or past the log end go
        (their batches were cut by recovery or a truncation the file had not
        caught up with), the first entry is moved up to the log start. A
        torn or missing file of a non-empty log is rebuilt from the batch
        headers (a one-time scan, logged).
        """
        cache = self.leader_epoch_cache
        if file_listed:
            cache.load()
        if cache.needs_rebuild or (
            not cache.file_exists and any(s.size for s in self._segments)
        ):
            entries = epoch_starts(self._batch_epochs())
            cache.replace(entries)
            if cache.load_error is not None:
                _log.warning("%s %s: rebuilt from the log: %s",
                             cache.path, cache.load_error, entries)
            else:
                _log.info("%s missing: rebuilt from the log: %s", cache.path, entries)
        cache.truncate_from_end(self._log_end_offset)
        cache.truncate_from_start(self._log_start_offset)

    def _batch_epochs(self) -> list[tuple[int, int]]:
        """(partition leader epoch, base offset) of every batch, from the headers."""
        found: list[tuple[int, int]] = []
        for segment in self._segments:
            try:
                for _, header in scan_batches(segment.log, 0, segment.size, validate=False):
                    found.append((header.partition_leader_epoch, header.base_offset))
            except InvalidBatchError as exc:  # recovery validated the log: not expected
                _log.warning("%s: epoch scan stopped in segment %d: %s",
                             self.directory, segment.base_offset, exc)
                break
        return found

    # ---------------------------------------------------------------- offsets

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        """Offsets below it are committed (replicated to the whole ISR).

        Single node (replication never enabled): every appended record is
        committed, so HW == LEO. With replication the owner sets it.
        """
        high_watermark = self._high_watermark
        return self._log_end_offset if high_watermark is None else high_watermark

    @property
    def replication_enabled(self) -> bool:
        return self._high_watermark is not None

    def enable_replication(self, high_watermark: int) -> int:
        """Cluster mode: from now on the HW is explicit, starting at ``high_watermark``
        (e.g. from ``replication-offset-checkpoint``), clamped to [log start, LEO].

        Returns the HW set. Calling it again just sets the HW.
        """
        return self.set_high_watermark(high_watermark)

    def set_high_watermark(self, offset: int) -> int:
        """Set the HW (clamped to [log start, LEO], as Kafka's updateHighWatermark).

        It may go down (a follower takes min(leader HW, own LEO)); a leader
        never lowers it (that rule is the caller's). Returns the HW set.
        """
        with self._state_lock:
            offset = min(max(offset, self._log_start_offset), self._log_end_offset)
            self._high_watermark = offset
            return offset

    def assign_leader_epoch(self, epoch: int) -> int:
        """This replica leads from ``epoch`` on: record it as starting at the log end
        (Kafka's leader does this on becoming leader). Returns that offset."""
        with self._write_lock:
            if self._closed:
                raise LogClosed(str(self.directory))
            start = self._log_end_offset
            self.leader_epoch_cache.assign(epoch, start)
            return start

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, from the epoch cache."""
        return self.leader_epoch_cache.end_offset_for(epoch, self._log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """First offset of the earliest open transaction, else the high watermark
        (never below the log start offset).

        read_committed consumers read below it (Kafka's LSO). The log end is
        read before the table (see the module docstring on ordering); an
        explicit HW never passes the log end, so reading it first is as safe.
        """
        high_watermark = self._high_watermark
        if high_watermark is None:
            high_watermark = self._log_end_offset
        first_unstable = self._producer_state.table.first_unstable
        if first_unstable is None or first_unstable > high_watermark:
            return high_watermark
        # An open transaction whose start was deleted (retention, DeleteRecords):
        # as Kafka, the LSO is then the log start offset.
        return max(first_unstable, self._log_start_offset)

    def open_transactions(self) -> list[tuple[int, int]]:
        """(producer id, first offset) of every open transaction, earliest first."""
        return self._producer_state.table.open_transactions()

    def aborted_transactions(self, start_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        ``[start_offset, upper_bound)``: Kafka's collectAbortedTransactions.

        Entries with last offset >= ``start_offset`` and first offset <
        ``upper_bound``, read from the abort indexes of the segment holding
        ``start_offset`` onward, stopping at the first entry whose last stable
        offset reaches ``upper_bound``.
        """
        with self._read_lock:
            i = max(bisect_right(self._bases, start_offset) - 1, 0)
            indexes = [s.txn_index.entries for s in self._segments[i:]]
        found: list[tuple[int, int]] = []
        for entries in indexes:
            if entries and collect_aborted(entries, start_offset, upper_bound, found):
                break
        return found

    def abort_index_entries(self) -> list[AbortedTxn]:
        """Every abort index entry of every segment (the cleaner's view of aborts)."""
        with self._state_lock:
            indexes = [s.txn_index.entries for s in self._segments]
        return [entry for entries in indexes for entry in list(entries)]

    def check_producer_epoch(self, producer_id: int, producer_epoch: int) -> ErrorCode:
        """INVALID_PRODUCER_EPOCH if this partition saw a newer epoch of the producer
        (what a TxnOffsetCommit is judged on); call it under the append lock."""
        return self._producer_state.table.check_epoch(producer_id, producer_epoch)

    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> ErrorCode:
        """May a COMMIT/ABORT marker with these epochs be appended? (Kafka's checks)

        INVALID_PRODUCER_EPOCH for an epoch older than the producer's,
        TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than the
        one of the producer's last marker, else NONE. Call it under the
        partition's append lock, like :meth:`check_sequence`.
        """
        return self._producer_state.table.check_marker(
            producer_id, producer_epoch, coordinator_epoch
        )

    @property
    def recovery_point(self) -> int:
        """Offsets below this are fsynced."""
        return self._recovery_point

    @property
    def config(self) -> LogConfig:
        return self._config

    @property
    def size_bytes(self) -> int:
        with self._state_lock:
            return sum(s.size for s in self._segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        with self._state_lock:
            return list(self._bases)

    @property
    def producer_state(self) -> ProducerStateManager:
        """The producer table and its snapshots (tests, admin; see check_sequence)."""
        return self._producer_state

    def check_sequence(self, header: BatchHeader) -> SequenceVerdict:
        """Idempotence and transaction-state check of a batch about to be appended.

        Data batches: duplicates, sequence gaps, an older epoch
        (INVALID_PRODUCER_EPOCH), a non-transactional batch while the producer
        has an open transaction (INVALID_TXN_STATE). Markers: an older epoch.
        See the module docstring for threading.
        """
        return self._producer_state.table.check(header)

    def update_config(self, config: LogConfig) -> None:
        """New settings apply from the next append/roll/retention pass."""
        with self._state_lock:
            self._config = config

    # ----------------------------------------------------------------- append

    def append(
        self,
        batches: bytearray,
        headers: list[BatchHeader],
        *,
        leader_epoch: int | None = None,
        nonblocking: bool = False,
    ) -> AppendInfo:
        """Append already-validated batches (back to back in ``batches``).

        ``nonblocking`` is for a caller on an event loop (the broker appends
        small produce requests in place, without a worker-thread round trip):
        the append raises :class:`AppendWouldBlock`, having changed nothing,
        rather than wait for the write lock (retention or a truncation holds
        it), roll a segment, persist the leader-epoch cache or fsync
        (``flush.messages``). What remains is one ``pwrite`` into the page
        cache and in-memory bookkeeping.

        Patches each batch's base offset in place (the caller's buffer is
        modified; with LogAppendTime also maxTimestamp and the CRC), writes
        them with one ``pwrite``, and returns the offsets assigned. The
        headers' own base offsets are ignored.

        The log stamps the partition leader epoch (the one place it is done):
        the broker passes ``leader_epoch``, the epoch it leads in, and every
        batch is stamped with it, whatever the client put there; without it
        each batch's own stamp is taken (tools and tests that build their
        batches). An epoch newer than the cache's latest is recorded in the
        leader-epoch cache, persisted before the write: one int compare per
        batch on the common path. An older one (or none, -1) becomes the
        latest, as Kafka's log stamps every leader append with the leader's
        epoch: a stale stamp copied by followers would make their epoch caches
        (and OffsetForLeaderEpoch answers) differ from the leader's. Follower
        appends keep the leader's stamps (``append_as_follower``).
        """
        if not headers:
            raise ValueError("append needs at least one batch")
        if not self._write_lock.acquire(blocking=not nonblocking):
            raise AppendWouldBlock(str(self.directory))
        try:
            config = self._config
            total = self._check_appendable(len(batches))
            append_time = (
                self._clock() if config.message_timestamp_type == "LogAppendTime" else -1
            )
            base_offset = next_offset = self._log_end_offset
            appended: list[AppendedBatch] = []
            position = 0
            max_timestamp = -1
            latest_epoch = self.leader_epoch_cache.latest_epoch
            new_epochs: list[tuple[int, int]] | None = None
            for header in headers:
                _BASE_OFFSET.pack_into(batches, position, next_offset)
                if leader_epoch is None:
                    epoch = _LEADER_EPOCH.unpack_from(batches, position + _LEADER_EPOCH_AT)[0]
                else:
                    epoch = leader_epoch
                    _LEADER_EPOCH.pack_into(batches, position + _LEADER_EPOCH_AT, epoch)
                if epoch != latest_epoch:
                    if epoch > latest_epoch:
                        if new_epochs is None:
                            new_epochs = []
                        new_epochs.append((epoch, next_offset))
                        latest_epoch = epoch
                    else:  # outside the CRC: no checksum to redo
                        _LEADER_EPOCH.pack_into(batches, position + _LEADER_EPOCH_AT, latest_epoch)
                timestamp = header.max_timestamp
                if append_time >= 0:
                    set_log_append_time(batches, append_time, position)
                    timestamp = append_time
                size = header.batch_length + LOG_OVERHEAD
                next_offset += header.last_offset_delta + 1
                appended.append((size, next_offset - 1, timestamp))
                if timestamp > max_timestamp:
                    max_timestamp = timestamp
                position += size
            if position != total:
                raise ValueError(f"headers cover {position} of {total} bytes")
            segment = self._segments[-1]
            roll = bool(segment.size) and segment.should_roll(
                config, total, max_timestamp, next_offset - 1, self._clock
            )
            flush = next_offset - self._recovery_point >= config.flush_interval_messages
            if nonblocking and (roll or flush or new_epochs is not None):
                raise AppendWouldBlock(str(self.directory))
            if new_epochs is not None:
                for epoch, start in new_epochs:
                    self.leader_epoch_cache.assign(epoch, start)
            if roll:
                segment = self._roll(self._clock())
            segment.write(batches)
            # Published without the state lock: only this thread mutates, index
            # arrays only grow here, and size is stored before the log end
            # offset, so a reader that sees the new end also sees the bytes.
            segment.record_append(appended, config.index_interval_bytes)
            txn_changes = self._producer_state.record_appended(
                headers, base_offset, self._clock, batches
            )
            if txn_changes is not None:  # transactional batches only: rare or cheap
                for entry in txn_changes:
                    segment.txn_index.append(entry)
                self._producer_state.table.refresh_first_unstable()
            self._log_end_offset = next_offset
            if flush:
                self.flush()
            return AppendInfo(base_offset, next_offset - 1, append_time, self._log_start_offset)
        finally:
            self._write_lock.release()

    def append_as_follower(
        self, batches: bytearray | bytes, headers: list[BatchHeader] | None = None
    ) -> AppendInfo:
        """Append a leader's batches exactly as they are (Kafka's appendAsFollower).

        Offsets, leader epochs and timestamps are the leader's; the bytes are
        written unchanged. ``headers`` must have been read from ``batches``
        (``iter_batches(batches)`` checks CRCs; None: done here). The first
        offset may be above the log end (a compacted leader log has gaps) but
        not below it, and offsets must increase: otherwise OffsetMismatch,
        nothing written. The producer table, abort index and leader-epoch
        cache are updated as for an append; the HW is not moved (the caller
        sets it from the leader's).
        """
        if headers is None:
            headers = iter_batches(batches)
        if not headers:
            raise ValueError("append needs at least one batch")
        with self._write_lock:
            config = self._config
            total = self._check_appendable(len(batches))
            first_offset = headers[0].base_offset
            next_offset = self._log_end_offset
            latest_epoch = self.leader_epoch_cache.latest_epoch
            new_epochs: list[tuple[int, int]] = []
            appended: list[AppendedBatch] = []
            position = 0
            max_timestamp = -1
            for header in headers:
                if header.base_offset < next_offset:
                    raise OffsetMismatch(header.base_offset, next_offset)
                epoch = header.partition_leader_epoch
                if epoch != latest_epoch and epoch >= 0:
                    new_epochs.append((epoch, header.base_offset))
                    latest_epoch = epoch
                next_offset = header.base_offset + header.last_offset_delta + 1
                size = header.batch_length + LOG_OVERHEAD
                appended.append((size, next_offset - 1, header.max_timestamp))
                if header.max_timestamp > max_timestamp:
                    max_timestamp = header.max_timestamp
                position += size
            if position != total:
                raise ValueError(f"headers cover {position} of {total} bytes")
            for epoch, start in new_epochs:
                self.leader_epoch_cache.assign(epoch, start)
            segment = self._segments[-1]
            if (
                segment.size
                and segment.should_roll(config, total, max_timestamp, next_offset - 1, self._clock)
            ) or next_offset - 1 - segment.base_offset > INT_MAX:
                # As Kafka, the new segment starts at the first offset appended.
                segment = self._roll(self._clock(), first_offset)
            segment.write(batches)
            segment.record_append(appended, config.index_interval_bytes)
            txn_changes = self._producer_state.record_replicated(headers, self._clock, batches)
            if txn_changes is not None:
                for entry in txn_changes:
                    segment.txn_index.append(entry)
                self._producer_state.table.refresh_first_unstable()
            self._log_end_offset = next_offset
            if next_offset - self._recovery_point >= config.flush_interval_messages:
                self.flush()
            return AppendInfo(first_offset, next_offset - 1, -1, self._log_start_offset)

    def _check_appendable(self, total: int) -> int:
        """Caller holds the write lock: the log is open and ``total`` bytes fit a segment."""
        if self._closed:
            raise LogClosed(str(self.directory))
        if total > self._config.segment_bytes:
            raise RecordBatchTooLarge(
                f"{total} bytes exceed segment.bytes={self._config.segment_bytes}"
            )
        return total

    def roll(self) -> None:
        """Start a new segment at the log end offset (no-op if the active one is empty)."""
        with self._write_lock:
            if self._segments[-1].size:
                self._roll(self._clock())

    def _roll(self, now: int, base_offset: int | None = None) -> LogSegment:
        """Caller holds the write lock. ``base_offset`` (>= LEO): a follower's gap."""
        base = self._log_end_offset if base_offset is None else base_offset
        new = LogSegment.create(self.directory, base, self._config, now)
        with self._state_lock:
            self._segments[-1].seal()
            self._segments.append(new)
            self._bases.append(new.base_offset)
        # As Kafka: a producer snapshot at every roll bounds the replay after a crash.
        self._producer_state.take_snapshot(self._log_end_offset, sync=False)
        return new

    # ------------------------------------------------------------------- read

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> ReadInfo:
        """Whole batches from the one holding ``offset``, within ``max_bytes``.

        The first batch is returned whole even if larger than ``max_bytes``;
        later batches only while they fit. Data comes from one segment, as in
        Kafka. ``offset == log end`` gives no regions; outside
        ``[log start, log end]`` raises OffsetOutOfRange.

        ``max_offset`` (read_committed passes the LSO) keeps only batches whose
        base offset is below it (``offset >= max_offset``: no regions), and
        sets ``next_offset`` of the result: the upper bound for
        :meth:`aborted_transactions`.
        """
        # A clean may swap segments between the snapshot and the scan: a
        # candidate whose file went away means "look again", never "skip it"
        # (its surviving records are in the segment that replaced it).
        for _attempt in range(8):
            found_info = self._read_once(offset, max_bytes, max_offset)
            if found_info is not None:
                return found_info
        raise LogClosed(str(self.directory))

    def _read_once(self, offset: int, max_bytes: int, max_offset: int | None) -> ReadInfo | None:
        with self._read_lock:
            if self._closed:
                raise LogClosed(str(self.directory))
            start, end = self._log_start_offset, self._log_end_offset
            if offset < start or offset > end:
                raise OffsetOutOfRange(offset, start, end)
            if offset == end or (max_offset is not None and offset >= max_offset):
                return ReadInfo([], start, end, end, offset)
            i = max(bisect_right(self._bases, offset) - 1, 0)
            candidates = [(s, s.size) for s in self._segments[i:]]
            _, hint = candidates[0][0].offset_index.lookup(offset)
        for k, (segment, max_position) in enumerate(candidates):
            if max_offset is not None and segment.base_offset >= max_offset:
                break
            found = segment.find_batch(offset, hint if k == 0 else 0, max_position)
            if found is None:
                if segment.log.is_closed:
                    return None  # replaced by a clean (or deleted) meanwhile: retry
                continue
            position, size, base = found
            limit = max_position
            capped = None
            if max_offset is not None:
                if base >= max_offset:
                    break
                if max_offset < end and size < max_bytes:
                    # Where the first batch at or past the bound starts, looked for
                    # only inside this read's window, from the index entry below it.
                    with self._read_lock:
                        _, indexed = segment.offset_index.lookup(max_offset)
                    window_end = min(max_position, position + max_bytes)
                    capped = segment.first_batch_from(
                        max_offset, max(position + size, indexed), window_end
                    )
                    if capped is not None:
                        limit = capped[0]
            stop = position + size
            if size < max_bytes and stop < limit:
                bound = position + max_bytes
                with self._read_lock:
                    boundary = segment.offset_index.floor_position(bound)
                if boundary > limit:
                    boundary = stop
                stop = segment.extent_within(stop, bound, boundary, limit)
            if (
                stop == max_position
                and k + 1 < len(candidates)
                and segment.only_empty_batches(position, stop)
            ):
                continue  # a cleaned segment's tail of empty batches: read on
            try:
                region = segment.log.region(position, stop - position)
            except FileGone:
                return None  # replaced by a clean meanwhile: retry
            next_offset = -1
            if max_offset is not None:
                if capped is not None and stop == capped[0]:
                    following: tuple[int, int] | None = capped
                else:
                    following = segment.first_batch_from(0, stop, max_position)
                if following is not None:
                    next_offset = following[1]
                elif k + 1 < len(candidates):
                    next_offset = candidates[k + 1][0].base_offset
                else:
                    next_offset = end
            return ReadInfo([region], start, end, end, next_offset)
        return ReadInfo([], start, end, end, offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch whose max timestamp >= ``timestamp_ms``.

        The offset is that batch's base offset (or the log start offset if
        higher) and the timestamp its maxTimestamp: the log never decodes
        records. The broker's ListOffsets decodes that one batch to answer the
        exact record, as Kafka does. None if no batch qualifies.
        """
        with self._state_lock:
            start = self._log_start_offset
            plan: list[tuple[LogSegment, int, int]] = []
            for segment in self._segments:
                if segment.max_timestamp < timestamp_ms or segment.next_offset <= start:
                    continue
                _, indexed_offset = segment.time_index.lookup(timestamp_ms)
                _, position = segment.offset_index.lookup(max(indexed_offset, start))
                plan.append((segment, position, segment.size))
        for segment, position, max_position in plan:
            found = segment.find_by_timestamp(timestamp_ms, position, max_position, start)
            if found is not None:
                base, _last, batch_max_ts = found
                return max(base, start), batch_max_ts
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the batch with the largest max timestamp (first if tied).

        The offset is that batch's last offset, as in Kafka's shallow lookup.
        """
        with self._state_lock:
            best: LogSegment | None = None
            for segment in self._segments:
                if segment.next_offset <= self._log_start_offset:
                    continue
                if segment.max_timestamp >= 0 and (
                    best is None or segment.max_timestamp > best.max_timestamp
                ):
                    best = segment
            if best is None:
                return None
            offset = max(best.offset_of_max_timestamp, self._log_start_offset)
            return offset, best.max_timestamp

    # ------------------------------------------------------------ compaction

    def closed_segments(self) -> tuple[list[LogSegment], int]:
        """(every segment but the active one, log start offset): what a clean may read."""
        with self._state_lock:
            return list(self._segments[:-1]), self._log_start_offset

    @property
    def truncation_count(self) -> int:
        """Bumped by every truncation: a clean that began before one is not swapped in."""
        return self._truncations

    @property
    def is_closed(self) -> bool:
        return self._closed

    def active_base_offset(self) -> int:
        with self._state_lock:
            return self._segments[-1].base_offset

    def producer_batch_offsets(self) -> dict[int, set[int]]:
        """Per producer id, the last offsets of the batches its table entry remembers.

        The cleaner keeps those batches at least as headers, so the producer
        table rebuilt after a restart still deduplicates their retries.
        """
        with self._write_lock:
            return {
                pid: {b.last_offset for b in entry.batches}
                for pid, entry in self._producer_state.table.items()
            }

    def replace_segments(
        self, old: list[LogSegment], batches: list[tuple[int, int, int, int]],
        truncation_count: int | None = None,
    ) -> bool:
        """Swap the cleaned copy of ``old`` (``<base>.log.cleaned``, fsynced) into place.

        ``batches`` are (position, size, last offset, max timestamp) of the
        cleaned file. False (nothing changed) if ``old`` is no longer a run of
        closed segments of this log (retention, truncation or deletion got
        there first). Takes the write lock for renames and list updates only.
        """
        with self._write_lock:
            if self._closed:
                return False
            if truncation_count is not None and truncation_count != self._truncations:
                return False  # a truncation may have cut a segment the clean read
            with self._state_lock:
                try:
                    first = next(i for i, s in enumerate(self._segments) if s is old[0])
                except StopIteration:
                    return False
                run = self._segments[first : first + len(old)]
                if first + len(old) >= len(self._segments) or any(
                    a is not b for a, b in zip(run, old, strict=True)
                ):
                    return False
            base = old[0].base_offset
            # Old indexes must never write again: their paths are about to be reused.
            # Nor may a reader still holding an old segment reopen its .log path
            # once the swap has put the cleaned file there: it keeps the old inode.
            for segment in old:
                segment.offset_index.discard()
                segment.time_index.discard()
                segment.txn_index.discard()
                segment.log.retire()
            commit_swap(self.directory, base, [s.base_offset for s in old])
            new = LogSegment.from_cleaned(
                self.directory, base, self._config, self._clock(), batches
            )
            with self._state_lock:
                self._segments[first : first + len(old)] = [new]
                self._bases[first : first + len(old)] = [base]
            for segment in old:
                segment.log.forget()  # readers holding its descriptor keep reading
            return True

    # -------------------------------------------------------------- deletion

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1 = high watermark).

        Segments wholly below it are deleted; the new start is persisted before
        returning. Returns the log start offset (unchanged if already higher).
        Above the high watermark: OffsetOutOfRange (Kafka's
        maybeIncrementLogStartOffset; a follower passes its leader's start).
        """
        with self._write_lock:
            if self._closed:
                raise LogClosed(str(self.directory))
            high_watermark = self.high_watermark
            if offset == -1:
                offset = high_watermark
            if offset < 0 or offset > high_watermark:
                raise OffsetOutOfRange(offset, self._log_start_offset, high_watermark)
            if offset > self._log_start_offset:
                with self._state_lock:
                    self._log_start_offset = offset
            self._delete_prefix(log_start_breached(self._log_start_offset))
            self.write_checkpoint()
            self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
            return self._log_start_offset

    def apply_retention(self) -> int:
        """Delete the oldest segments that retention.ms / retention.bytes / log start
        allow; returns how many were deleted. Call periodically
        (Kafka: ``log.retention.check.interval.ms``)."""
        with self._write_lock:
            if self._closed:
                return 0
            now = self._clock()
            deleted = 0
            time_rule = retention_time_breached(self._config, now)
            if time_rule is not None:
                deleted += self._delete_prefix(time_rule)
            size_rule = retention_size_breached(self._config, self._segments)
            if size_rule is not None:
                deleted += self._delete_prefix(size_rule)
            deleted += self._delete_prefix(log_start_breached(self._log_start_offset))
            if deleted:
                self.write_checkpoint()
            return deleted

    def _delete_prefix(self, predicate: SegmentPredicate) -> int:
        """Delete the oldest segments ``predicate`` allows. Caller holds the write lock."""
        count = deletable_prefix(self._segments, predicate, self._high_watermark)
        if count == 0:
            return 0
        if count == len(self._segments):
            self._roll(self._clock())  # as Kafka: never leave the log without a segment
        with self._state_lock:
            doomed = self._segments[:count]
            del self._segments[:count]
            del self._bases[:count]
            first = self._segments[0].base_offset
            self._log_start_offset = max(self._log_start_offset, first)
            self._recovery_point = max(self._recovery_point, first)
        for segment in doomed:
            segment.delete_files()
        self._producer_state.delete_snapshots_below(first)
        self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
        return count

    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset is >= ``offset``.

        Cuts at a batch boundary (a batch holding ``offset`` goes entirely), so
        the new log end offset may be below ``offset``. Below the first
        segment the log is emptied and restarts at ``offset``. Leader-epoch
        entries starting at or past the new log end go (also when nothing is
        cut, as Kafka's truncateTo); the HW, if explicit,
        is clamped to the new log end.
        """
        with self._write_lock:
            if self._closed:
                raise LogClosed(str(self.directory))
            if offset >= self._log_end_offset:
                # Nothing to cut, but an epoch entry at the log end (this broker led that
                # epoch without appending) goes, as in Kafka: a follower asking its leader
                # again (KIP-279) must then ask for an older epoch.
                self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
                return
            if offset < self._segments[0].base_offset:
                self._restart_at(offset)
                return
            # Snapshots first: a crash mid-way must not leave one above the log end.
            self._producer_state.delete_snapshots_above(offset)
            with self._state_lock:
                self._truncations += 1
                keep = bisect_right(self._bases, offset)
                keep = max(keep, 1)
                doomed = self._segments[keep:]
                del self._segments[keep:]
                del self._bases[keep:]
                active = self._segments[-1]
                active.truncate_to(offset)
                self._log_end_offset = active.next_offset
                self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
                self._recovery_point = min(self._recovery_point, self._log_end_offset)
                if self._high_watermark is not None:
                    self._high_watermark = min(self._high_watermark, self._log_end_offset)
            for segment in reversed(doomed):
                segment.delete_files()
            self._producer_state.truncated(self._segments, self._log_end_offset, self._clock())
            self.write_checkpoint()
            self.leader_epoch_cache.truncate_from_end(self._log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log; it restarts empty at ``offset`` (Kafka's
        truncateFullyAndStartAt: a follower that fell below its leader's log
        start). Log start, log end and HW become ``offset``; epochs are cleared."""
        if offset < 0:
            raise ValueError(f"cannot restart the log at {offset}")
        with self._write_lock:
            if self._closed:
                raise LogClosed(str(self.directory))
            self._restart_at(offset)

    def _restart_at(self, offset: int) -> None:
        """Caller holds the write lock."""
        self._producer_state.reset()
        new = LogSegment.create(self.directory, offset, self._config, self._clock())
        with self._state_lock:
            self._truncations += 1
            doomed = self._segments
            self._segments = [new]
            self._bases = [offset]
            self._log_start_offset = self._log_end_offset = offset
            self._recovery_point = offset
            if self._high_watermark is not None:
                self._high_watermark = offset
        for segment in reversed(doomed):
            segment.delete_files()
        self.write_checkpoint()
        self.leader_epoch_cache.clear()

    # ------------------------------------------------------------ durability

    def flush(self) -> None:
        """fsync every segment (log and indexes) holding offsets above the recovery point."""
        self._flush_to(None)

    def maybe_flush(self) -> None:
        """Housekeeping tick: flush.ms, flush rolled segments, persist the checkpoint,
        expire idle producers.

        Kafka flushes a segment when it is rolled (asynchronously); we do it on
        this tick, which the broker calls periodically from a worker thread.
        Producer expiry runs here too (Kafka checks every 10 minutes; this tick
        is at most a minute apart and the check is a pass over a small dict).
        """
        if self._closed:
            return
        now = self._clock()
        self._expire_producers(now)
        if now - self._last_flush_ms >= self._config.flush_interval_ms:
            self.flush()
        elif self._recovery_point < self._segments[-1].base_offset:
            self._flush_to(self._segments[-1].base_offset)
        self.write_checkpoint()

    def _expire_producers(self, now: int) -> None:
        """``producer.id.expiration.ms``: forget producers idle that long (write lock)."""
        if not len(self._producer_state.table):
            return
        with self._write_lock:
            if not self._closed:
                self._producer_state.remove_expired(now, self._config.producer_id_expiration_ms)

    def _flush_to(self, upto: int | None) -> None:
        with self._state_lock:
            target = self._log_end_offset if upto is None else upto
            generation = self._truncations
            start = self._recovery_point
            dirty = [s for s in self._segments if s.next_offset > start and s.base_offset < target]
        if target > start:
            for segment in dirty:
                try:
                    segment.fsync()
                except ValueError:
                    continue  # deleted meanwhile: nothing to keep
        with self._state_lock:
            if generation == self._truncations and target > self._recovery_point:
                self._recovery_point = target
            self._last_flush_ms = self._clock()

    def write_checkpoint(self) -> None:
        """Persist log start offset and recovery point if they changed (atomic replace).

        Not once closed: the housekeeping tick may still be in ``maybe_flush`` when the
        topic is deleted, and the directory's path may by then belong to a topic
        re-created under the same name (``close`` sets the flag under this lock).
        """
        with self._checkpoint_lock:
            if self._closed:
                return
            with self._state_lock:
                current = OffsetsCheckpoint(self._log_start_offset, self._recovery_point)
            if current != self._written_checkpoint:
                current.write(self.directory)
                self._written_checkpoint = current

    def close(self, *, flush: bool = True) -> None:
        """Seal the active segment, flush, checkpoint, close files. Idempotent.

        ``flush=False`` is for a log about to be deleted. Regions handed out
        before close must not be used after it.
        """
        with self._write_lock:
            if self._closed:
                return
            if flush:
                with self._state_lock:
                    self._segments[-1].seal()
                self._segments[-1].fsync()
                self.flush()
                self.write_checkpoint()
                # A snapshot at the log end: the next start replays nothing.
                self._producer_state.take_snapshot(self._log_end_offset, sync=True)
            with self._checkpoint_lock, self._state_lock:
                self._closed = True
                segments = list(self._segments)
            for segment in segments:
                segment.close()
