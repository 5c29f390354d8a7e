"""One log segment: a ``.log`` file of whole batches, its two sparse indexes, its abort index.

Files are named by the segment's base offset, zero-padded to 20 digits, so
``ls`` sorts them numerically. The segment keeps in memory what appends and
retention need (size, next offset, max timestamp and where it was reached).

Threading contract: the owning :class:`PartitionLog` serialises mutators and
calls :meth:`write` outside its state lock and :meth:`record_append`,
truncation and index lookups inside it. Header scans for reads run outside
the lock on positions below a size snapshot taken under it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkette.log.batch_scan import scan_batches
from kafkette.log.config import INT_MAX, LogConfig
from kafkette.log.errors import CorruptIndex
from kafkette.log.file_region import FileGone, SegmentFile
from kafkette.log.index import OffsetIndex, TimeIndex
from kafkette.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex
from kafkette.wire.record_batch import HEADER_SIZE, InvalidBatchError

# Longest span of header-only batches a read looks through (64 empty batches).
EMPTY_SPAN_SCAN_BYTES = 64 * HEADER_SIZE

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for base offset 42."""
    return f"{base_offset:020d}{suffix}"


# One batch of an append after offset assignment (a plain tuple: the hot path):
# (size, last offset, max timestamp)
AppendedBatch = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """What recovering a segment found: bytes truncated off a torn or corrupt tail."""

    truncated_bytes: int
    reason: str = ""


class LogSegment:
    """A segment's files and in-memory summary. See module docstring for threading."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        log: SegmentFile,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        created_ms: int,
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        # Aborted transactions whose ABORT marker is in this segment (lazy file).
        self.txn_index = txn_index if txn_index is not None else TransactionIndex(
            self.path_for(directory, base_offset, TXN_INDEX_SUFFIX)
        )
        self.created_ms = created_ms
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self.bytes_since_last_index_entry = 0
        self._index_room = 0
        self.recount_index_room()

    # ----------------------------------------------------------------- opening

    @staticmethod
    def path_for(directory: Path, base_offset: int, suffix: str) -> Path:
        return directory / segment_file_name(base_offset, suffix)

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int,
        *, fresh: bool = False, lazy: bool = False,
    ) -> LogSegment:
        """A new empty segment; stale files with the same base offset are replaced
        (``fresh``: the caller just made ``directory``, there is nothing to replace).

        ``lazy``: the only segment of an empty log; its ``.log`` is made on first
        use, like the index files (nothing is preallocated or zero-filled), so a
        new partition costs one ``mkdir`` and opening thousands of never-written
        partitions opens no descriptor. Recovery opens a directory without
        segment files as an empty log at the checkpointed log start, which is
        what this segment is.
        """
        if not fresh:
            for suffix in SEGMENT_SUFFIXES:
                cls.path_for(directory, base_offset, suffix).unlink(missing_ok=True)
        # A rolled segment's file is created now (the file is how recovery finds the
        # segment); the descriptor stays in the cache for the appends that follow.
        log = SegmentFile(
            cls.path_for(directory, base_offset, LOG_SUFFIX), create=True, open_now=not lazy
        )
        return cls(
            directory,
            base_offset,
            log,
            OffsetIndex(
                cls.path_for(directory, base_offset, INDEX_SUFFIX),
                base_offset,
                config.max_index_bytes,
            ),
            TimeIndex(
                cls.path_for(directory, base_offset, TIME_INDEX_SUFFIX),
                base_offset,
                config.max_index_bytes,
            ),
            now_ms,
        )

    @classmethod
    def from_cleaned(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        batches: list[tuple[int, int, int, int]],
    ) -> LogSegment:
        """The segment a clean just swapped into place, indexed from what the cleaner wrote.

        ``batches`` are (position, size, last offset, max timestamp) of every
        batch in the new ``.log``, so nothing is re-read. The indexes follow the
        same rule as appends and recovery and are written and fsynced here
        (small; a crash before that only means a rebuild at the next open).
        """
        log = SegmentFile(cls.path_for(directory, base_offset, LOG_SUFFIX), create=False)
        segment = cls(
            directory,
            base_offset,
            log,
            OffsetIndex(
                cls.path_for(directory, base_offset, INDEX_SUFFIX), base_offset,
                config.max_index_bytes,
            ),
            TimeIndex(
                cls.path_for(directory, base_offset, TIME_INDEX_SUFFIX), base_offset,
                config.max_index_bytes,
            ),
            now_ms,
            # Put in place by the swap (log/segment_swap.py), if the clean kept any.
            TransactionIndex.load(cls.path_for(directory, base_offset, TXN_INDEX_SUFFIX)),
        )
        interval = config.index_interval_bytes
        for position, size, last_offset, max_timestamp in batches:
            segment._index(position, size, last_offset, max_timestamp, interval)
            if segment.first_batch_timestamp is None:
                segment.first_batch_timestamp = max_timestamp
        if batches:
            position, size, last_offset, _ = batches[-1]
            segment.size = position + size
            segment.next_offset = last_offset + 1
        segment.seal()
        segment.offset_index.fsync()
        segment.time_index.fsync()
        return segment

    @classmethod
    def open_existing(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int,
        *, has_txn_index: bool = True,
    ) -> tuple[LogSegment, bool]:
        """Open a segment's files; returns (segment, indexes_ok).

        ``has_txn_index=False`` (the caller's directory listing shows no
        ``.txnindex``) skips trying to read one.

        When ``indexes_ok`` is False the indexes are empty and the caller must
        :meth:`recover` the segment (which rebuilds them).
        """
        # Not opened here: a size is a stat, and most segments of a big data dir
        # are never read before they are evicted again.
        log = SegmentFile(
            cls.path_for(directory, base_offset, LOG_SUFFIX), create=False, dirty=False
        )
        log_size = log.size()
        index_path = cls.path_for(directory, base_offset, INDEX_SUFFIX)
        time_path = cls.path_for(directory, base_offset, TIME_INDEX_SUFFIX)
        has_index, has_time_index = index_path.exists(), time_path.exists()
        # Index files are created at their first write: a segment too small to
        # have an offset index entry may have neither file, and an empty index
        # is right for it (load_summary then reads its few headers).
        small = log_size <= config.index_interval_bytes
        ok = (has_index or small) and (has_time_index or small)
        offset_index = time_index = None
        if ok:
            try:
                offset_index = (
                    OffsetIndex.load(index_path, base_offset, config.max_index_bytes, log_size)
                    if has_index
                    else OffsetIndex(index_path, base_offset, config.max_index_bytes)
                )
                time_index = (
                    TimeIndex.load(time_path, base_offset, config.max_index_bytes)
                    if has_time_index
                    else TimeIndex(time_path, base_offset, config.max_index_bytes)
                )
            except CorruptIndex:
                ok = False
                if offset_index is not None:
                    offset_index.close()
                offset_index = None
        if offset_index is None:
            offset_index = OffsetIndex(index_path, base_offset, config.max_index_bytes)
            offset_index.reset()
        if time_index is None:
            time_index = TimeIndex(time_path, base_offset, config.max_index_bytes)
            time_index.reset()
        txn_path = cls.path_for(directory, base_offset, TXN_INDEX_SUFFIX)
        txn_index = TransactionIndex.load(txn_path) if has_txn_index else TransactionIndex(txn_path)
        segment = cls(directory, base_offset, log, offset_index, time_index, now_ms, txn_index)
        segment.size = log_size
        return segment, ok

    def load_summary(self) -> bool:
        """After a clean shutdown: derive next offset and max timestamp cheaply.

        Scans only the headers after the last offset-index entry. Returns False
        (nothing changed) if that tail does not parse or disagrees with the
        indexes, in which case the caller recovers the segment instead.
        """
        last_indexed_offset, position = self.offset_index.last_entry()
        time_entry = self.time_index.last_entry()
        max_ts, offset_of_max = time_entry if time_entry else (-1, self.base_offset)
        next_offset = self.base_offset
        first_ts: int | None = None
        try:
            for pos, header in scan_batches(self.log, position, self.size, validate=False):
                if pos == position and position and header.last_offset != last_indexed_offset:
                    return False
                if pos == 0:
                    first_ts = header.max_timestamp
                if header.max_timestamp > max_ts:
                    max_ts, offset_of_max = header.max_timestamp, header.last_offset
                next_offset = header.next_offset
        except InvalidBatchError:
            return False
        if self.size and next_offset <= max(last_indexed_offset, offset_of_max):
            return False
        if self.size and first_ts is None:
            first_ts = self._first_batch_timestamp()
        self.next_offset = next_offset
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, offset_of_max
        self.first_batch_timestamp = first_ts
        self.bytes_since_last_index_entry = self.size - position
        return True

    def _first_batch_timestamp(self) -> int | None:
        for _, header in scan_batches(self.log, 0, self.size, validate=False):
            return header.max_timestamp
        return None

    def recover(self, config: LogConfig) -> RecoveryResult:
        """Validate every batch, rebuild both indexes, truncate a bad tail.

        Nothing before the first bad batch is touched. Also used when an index
        is missing or corrupt. The rebuilt time index is sealed (see
        :meth:`seal`), so a rebuild of a closed segment is byte-identical.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.recount_index_room()
        valid = 0
        expected = self.base_offset
        reason = ""
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp = None
        self.bytes_since_last_index_entry = 0
        file_size = self.log.size()
        if file_size:
            # What a crashed process wrote may still be only in the page cache:
            # the fsync that follows a recovery must not be skipped as "clean".
            self.log.dirty = True
        interval = config.index_interval_bytes
        try:
            for pos, header in scan_batches(self.log, 0, file_size, validate=True):
                if header.base_offset < expected or header.last_offset - self.base_offset > INT_MAX:
                    raise InvalidBatchError(f"batch at {pos} has out-of-order offset")
                self._index(pos, header.size, header.last_offset, header.max_timestamp, interval)
                if self.first_batch_timestamp is None:
                    self.first_batch_timestamp = header.max_timestamp
                expected = header.next_offset
                valid = pos + header.size
        except InvalidBatchError as exc:
            reason = str(exc)
        self.seal()
        truncated = file_size - valid
        if truncated:
            self.log.truncate(valid)
        self.size = valid
        self.next_offset = expected
        # Markers cut off with the tail take their abort entries along; the
        # producer-state replay then recomputes the segment's tail entries.
        self.txn_index.truncate_to(expected)
        return RecoveryResult(truncated, reason)

    # ----------------------------------------------------------------- appends

    def should_roll(
        self, config: LogConfig, append_bytes: int, max_timestamp: int, last_offset: int,
        clock: Callable[[], int],
    ) -> bool:
        """Kafka's roll rules: size, age, full index, or relative offset overflow.

        Age is the incoming batches' max timestamp minus the segment's first
        batch timestamp (``clock() - created`` if it has none), as in Kafka.
        """
        if self.size == 0:
            return False
        if self.size > config.segment_bytes - append_bytes:
            return True
        first = self.first_batch_timestamp
        if first is not None and first >= 0:
            waited = max_timestamp - first
        else:
            waited = clock() - self.created_ms
        if waited > config.roll_ms:  # segment.ms (or max.compaction.lag.ms)
            return True
        if self._index_room <= 0:
            return True
        return last_offset - self.base_offset > INT_MAX

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Write the batches at the current end: one positional write, no lock held.

        On failure the file is cut back to the old size and the error re-raised.
        """
        try:
            self.log.pwrite_all(data, self.size)
        except OSError:
            self.log.truncate(self.size)
            raise

    def record_append(self, batches: list[AppendedBatch], interval: int) -> None:
        """Publish batches just written by :meth:`write`: indexes, size, offsets."""
        position = self.size
        for size, last_offset, max_timestamp in batches:
            self._index(position, size, last_offset, max_timestamp, interval)
            position += size
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = batches[0][2]
        self.size = position
        self.next_offset = batches[-1][1] + 1

    def _index(
        self, position: int, size: int, last_offset: int, max_timestamp: int, interval: int
    ) -> None:
        """The one indexing rule shared by append and recovery, so rebuilds are identical.

        As Kafka: an entry for a batch once more than ``interval`` bytes were
        written since the last entry; the time index gets the max timestamp so
        far. When either index is full, entries stop (the segment rolls next).
        """
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_last_index_entry > interval and self._index_room > 0:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._index_room -= 1
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry += size

    def recount_index_room(self) -> None:
        """Entries both indexes can still take; counted down by :meth:`_index`.

        Counting down once per offset entry (whether or not the time index
        took one) is conservative and keeps append free of length checks.
        """
        self._index_room = min(
            self.offset_index.max_entries - len(self.offset_index),
            self.time_index.max_entries - len(self.time_index),
        )

    def seal(self) -> None:
        """On roll or close: make the time index's last entry the segment's max.

        Kafka does the same (``onBecomeInactiveSegment``), so the segment's max
        timestamp is known after a restart from the time index alone.
        """
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.recount_index_room()

    # ------------------------------------------------------------------- reads

    def find_batch(
        self, offset: int, start_position: int, max_position: int
    ) -> tuple[int, int, int] | None:
        """(position, size, base offset) of the first batch whose last offset >= ``offset``.

        Scans headers from ``start_position`` (an index hint) up to
        ``max_position``; None if the segment holds nothing at or after ``offset``.
        """
        try:
            for pos, header in scan_batches(
                self.log, start_position, max_position, validate=False
            ):
                if header.last_offset >= offset:
                    return pos, header.size, header.base_offset
        except (InvalidBatchError, FileGone):  # deleted under a reader: nothing here
            return None
        return None

    def only_empty_batches(self, start: int, end: int) -> bool:
        """True if ``[start, end)`` holds nothing but record-less batches.

        A cleaned segment can end in such batches (the cleaner keeps a
        group's last batch, and producers' remembered batches, as headers).
        A Fetch answered with nothing else makes librdkafka report
        MSG_SIZE_TOO_LARGE, so the read moves on past them, as Kafka's read
        moves past a segment with nothing to return. Only short spans are
        looked at (an empty batch is exactly a header, 61 bytes).
        """
        length = end - start
        if length <= 0 or length % HEADER_SIZE or length > EMPTY_SPAN_SCAN_BYTES:
            return False
        try:
            return all(
                header.size == HEADER_SIZE
                for _, header in scan_batches(self.log, start, end, validate=False)
            )
        except (InvalidBatchError, FileGone):
            return False

    def first_batch_from(
        self, offset: int, start_position: int, max_position: int
    ) -> tuple[int, int] | None:
        """(position, base offset) of the first batch at or after ``start_position``
        whose base offset >= ``offset``; None if none below ``max_position``."""
        try:
            for pos, header in scan_batches(
                self.log, start_position, max_position, validate=False
            ):
                if header.base_offset >= offset:
                    return pos, header.base_offset
        except (InvalidBatchError, FileGone):
            return None
        return None

    def extent_within(self, start: int, bound: int, hint: int, max_position: int) -> int:
        """End of the last whole batch that ends at or before ``bound`` (scan from ``hint``)."""
        end = max(start, hint)
        limit = min(bound, max_position)
        try:
            for pos, header in scan_batches(self.log, end, max_position, validate=False):
                if pos + header.size > limit:
                    break
                end = pos + header.size
        except (InvalidBatchError, FileGone):
            pass
        return end

    def find_by_timestamp(
        self, timestamp: int, start_position: int, max_position: int, min_offset: int
    ) -> tuple[int, int, int] | None:
        """(base offset, last offset, max timestamp) of the first batch with max ts >= T.

        Batches wholly below ``min_offset`` (the log start offset) are skipped.
        """
        try:
            for _, header in scan_batches(
                self.log, start_position, max_position, validate=False
            ):
                if header.max_timestamp >= timestamp and header.last_offset >= min_offset:
                    return header.base_offset, header.last_offset, header.max_timestamp
        except (InvalidBatchError, FileGone):  # deleted under a reader: nothing here
            return None
        return None

    @property
    def largest_timestamp(self) -> int:
        """Max batch timestamp, or the file's mtime if none (Kafka's retention rule)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        try:
            return int(os.stat(self.log.path).st_mtime * 1000)
        except FileNotFoundError:
            return 0

    # -------------------------------------------------------------- truncation

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; returns bytes removed.

        Cuts at a batch boundary: a batch holding ``offset`` goes entirely.
        """
        _, hint = self.offset_index.lookup(offset)
        found = self.find_batch(offset, hint, self.size)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.recount_index_room()
        self.log.truncate(position)
        self.size = position
        self._resummarise()
        return removed

    def _resummarise(self) -> None:
        """Recompute next offset and max timestamp after a truncation."""
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp = None
        self.next_offset = self.base_offset
        self.bytes_since_last_index_entry = self.size
        if not self.load_summary():
            raise InvalidBatchError(f"segment {self.log.path} unreadable after truncation")

    # ------------------------------------------------------------- durability

    def fsync(self) -> None:
        self.log.fsync()
        self.offset_index.fsync()
        self.time_index.fsync()
        self.txn_index.fsync()

    def close(self) -> None:
        self.log.close()
        self.offset_index.close()
        self.time_index.close()

    def delete_files(self) -> None:
        """Unlink the files, ``.log`` first so a crash leaves at worst orphan indexes.

        A descriptor already open stays open for readers still holding the
        segment or a region of it; the files never reopen. Indexes are dropped
        without writing (only the partition log reads them, under its lock).
        """
        for suffix in SEGMENT_SUFFIXES:
            self.path_for(self.directory, self.base_offset, suffix).unlink(missing_ok=True)
        self.log.forget()
        self.offset_index.discard()
        self.time_index.discard()
        self.txn_index.discard()
