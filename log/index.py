"""Sparse segment indexes: offset -> file position, timestamp -> offset.

Both are fixed-width big-endian entries kept in memory (``array``),
binary-searched, and written to their file in batches (at most
``PENDING_ENTRIES_LIMIT`` behind, and always before an fsync or close), so an
append costs no index syscall. They are never checksummed: they are always
rebuildable from the ``.log`` file, so any doubt (torn entry, entries out of
order, pointing past the log) raises :class:`CorruptIndex` and the loader
rebuilds; after a crash, segments past the recovery point are rebuilt anyway.
Offsets are stored relative to the segment's base offset (int32).

Layouts::

    .index       8 bytes:  int32 relativeOffset, int32 position
    .timeindex  12 bytes:  int64 timestamp,      int32 relativeOffset

Files are opened lazily through the descriptor cache (see file_region.py):
lookups never touch the file, loading reads it with a short-lived descriptor,
and only writing pending entries, truncation and fsync open it. A new index
creates its file at its first write or fsync, so an idle partition costs no
index descriptor at all.

Not thread-safe by themselves: the partition log mutates and searches them
under its state lock.
"""

from __future__ import annotations

import operator
import os
import struct
import sys
import threading
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import ClassVar

from kafkette.log.errors import CorruptIndex
from kafkette.log.file_region import SegmentFile

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
_TIME_ENTRY = struct.Struct(">qi")
_NATIVE_LITTLE = sys.byteorder == "little"
# Entries kept only in memory before they are written out in one go.
PENDING_ENTRIES_LIMIT = 1024


def _strictly_increasing(values: array) -> bool:
    return all(map(operator.lt, values, values[1:]))


def _non_decreasing(values: array) -> bool:
    return all(map(operator.le, values, values[1:]))


class _SparseIndex:
    """What both indexes share: two parallel in-memory columns and their file.

    One column is always ``_relative`` (offsets relative to ``base_offset``);
    subclasses add the other, say which comes first in a file entry
    (:meth:`_columns`) and how pending entries are encoded (:meth:`_encode`).
    Entries are written to the file in order, ``_written`` of them so far.
    """

    ENTRY_SIZE: ClassVar[int]

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // self.ENTRY_SIZE
        self._relative = array("i")
        self._written = 0  # entries already in the file
        self._file = SegmentFile(path, create=True)
        # Serialises file writes: a flush on a housekeeping thread may write
        # pending entries while the appending thread adds more.
        self._file_lock = threading.Lock()

    def _columns(self) -> tuple[array, array]:
        """Both columns, in the order their fields stand in a file entry."""
        raise NotImplementedError

    def _encode(self, start: int, stop: int) -> bytes:
        """File bytes of entries ``start`` to ``stop`` (big-endian, no padding)."""
        raise NotImplementedError

    def _read_file(self) -> bytes:
        """The whole file, checked to hold whole entries only (after ``__init__``).

        Read with its own short-lived descriptor: opening a data dir loads
        every index, and must not fill the descriptor cache doing so. What is
        loaded is what the file holds, so it starts clean (nothing to fsync).
        """
        try:
            with open(self.path, "rb", buffering=0) as file:
                raw = file.read()
        except FileNotFoundError:
            raise CorruptIndex(f"{self.path}: missing") from None
        self._file.dirty = False
        if len(raw) % self.ENTRY_SIZE:
            raise CorruptIndex(
                f"{self.path}: size {len(raw)} is not a multiple of {self.ENTRY_SIZE}"
            )
        return raw

    def __len__(self) -> int:
        return len(self._relative)

    @property
    def is_full(self) -> bool:
        return len(self._relative) >= self.max_entries

    def _write_if_many_pending(self) -> None:
        """Opportunistic write during an append; a failure here must not fail it.

        The append's batches are already in the ``.log`` file when entries are
        added, so an error (a full disk) would leave them written but not
        published. The entries stay pending and are written by the next
        attempt or at close (which reports errors); an index is rebuildable
        from the log anyway.
        """
        if len(self._relative) - self._written >= PENDING_ENTRIES_LIMIT:
            try:
                self.write_pending()
            except OSError:
                pass

    def write_pending(self) -> None:
        """Write entries not yet in the file (before fsync, seal or close)."""
        with self._file_lock:
            count = min(map(len, self._columns()))
            if count <= self._written:
                return
            self._file.pwrite_all(
                self._encode(self._written, count), self._written * self.ENTRY_SIZE
            )
            self._written = count

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= ``offset``."""
        keep = bisect_right(self._relative, offset - 1 - self.base_offset)
        self.truncate_entries(keep)

    def truncate_entries(self, count: int) -> None:
        if count >= len(self._relative):
            return
        with self._file_lock:
            for column in self._columns():
                del column[count:]
            if count < self._written:
                self._file.truncate(count * self.ENTRY_SIZE)
                self._written = count

    def reset(self) -> None:
        """Empty the index, file included (before a rebuild).

        A file not created yet stays uncreated: recovering thousands of empty
        partitions must not open (and then fsync) two files each.
        """
        with self._file_lock:
            for column in self._columns():
                del column[:]
            if self._file.is_open or os.path.exists(self.path):
                self._file.truncate(0)
            self._written = 0

    def fsync(self) -> None:
        """fsync what is written; entries a full disk keeps pending stay pending.

        Called from a log flush, which may run right after an append was
        published: failing it for an index (always rebuildable, and a shorter
        one is only sparser) would tell a producer its visible batch failed.
        """
        try:
            self.write_pending()
        except OSError:
            pass
        self._file.fsync()

    def close(self) -> None:
        """Write pending entries and drop the descriptor. Idempotent."""
        if not self._file.is_closed:
            self.write_pending()
        self._file.close()

    def discard(self) -> None:
        """The file was deleted: drop it without writing (a write would recreate it)."""
        self._file.close()


class OffsetIndex(_SparseIndex):
    """Sparse map from a batch's last offset to the file position of that batch.

    Keys are the *last* offset of the indexed batch, as in Kafka, so
    ``lookup(o)`` returns a position at or before the batch holding ``o``.
    """

    ENTRY_SIZE = OFFSET_ENTRY_SIZE

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self._positions = array("i")

    @classmethod
    def load(
        cls, path: Path, base_offset: int, max_index_bytes: int, log_size: int
    ) -> OffsetIndex:
        """Open an existing index; raises CorruptIndex (file left open) if implausible."""
        index = cls(path, base_offset, max_index_bytes)
        values = array("i")
        values.frombytes(index._read_file())
        if _NATIVE_LITTLE:
            values.byteswap()
        relative, positions = values[0::2], values[1::2]
        if relative and (
            relative[0] < 0
            or positions[0] < 0
            or positions[-1] >= log_size
            or not _strictly_increasing(relative)
            or not _strictly_increasing(positions)
        ):
            raise CorruptIndex(f"{path}: entries out of order or past the log end")
        index._relative, index._positions = relative, positions
        index._written = len(relative)
        return index

    def _columns(self) -> tuple[array, array]:
        return self._relative, self._positions

    def _encode(self, start: int, stop: int) -> bytes:
        chunk = array("i")
        for relative, position in zip(
            self._relative[start:stop], self._positions[start:stop], strict=True
        ):
            chunk.append(relative)
            chunk.append(position)
        if _NATIVE_LITTLE:
            chunk.byteswap()
        return chunk.tobytes()

    def last_entry(self) -> tuple[int, int]:
        """(offset, position) of the last entry, or (base_offset, 0) if empty."""
        if not self._relative:
            return self.base_offset, 0
        return self.base_offset + self._relative[-1], self._positions[-1]

    def append(self, offset: int, position: int) -> None:
        """Append one entry (offset increasing); the hot-path form of append_many."""
        # Position first: a concurrent lookup bisects _relative, then reads
        # _positions at the index it found.
        self._positions.append(position)
        self._relative.append(offset - self.base_offset)
        self._write_if_many_pending()

    def append_many(self, entries: list[tuple[int, int]]) -> None:
        """Append (absolute offset, position) pairs, already in increasing order.

        In memory at once; written to the file by :meth:`write_pending` (the
        file is only needed after a clean close or for flushed segments).
        """
        for offset, position in entries:
            self.append(offset, position)
        self._write_if_many_pending()

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``; (base_offset, 0) if none."""
        i = bisect_right(self._relative, offset - self.base_offset)
        if i == 0:
            return self.base_offset, 0
        return self.base_offset + self._relative[i - 1], self._positions[i - 1]

    def floor_position(self, position: int) -> int:
        """Largest indexed position <= ``position`` (0 if none): a batch boundary."""
        i = bisect_right(self._positions, position)
        return self._positions[i - 1] if i else 0


class TimeIndex(_SparseIndex):
    """Sparse map from the segment's max timestamp so far to the offset where it was reached.

    Entries have strictly increasing timestamps; ``lookup(t)`` returns the
    last entry with timestamp <= ``t``: every batch before its offset has a
    max timestamp <= t, so the scan for the first batch >= t starts there.
    """

    ENTRY_SIZE = TIME_ENTRY_SIZE

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self._timestamps = array("q")

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_bytes: int) -> TimeIndex:
        """Open an existing time index; raises CorruptIndex (file left open) if implausible."""
        index = cls(path, base_offset, max_index_bytes)
        timestamps = array("q")
        relative = array("i")
        for ts, rel in _TIME_ENTRY.iter_unpack(index._read_file()):
            timestamps.append(ts)
            relative.append(rel)
        if relative and (
            relative[0] < 0
            or not _strictly_increasing(timestamps)
            or not _non_decreasing(relative)
        ):
            raise CorruptIndex(f"{path}: entries out of order")
        index._timestamps, index._relative = timestamps, relative
        index._written = len(relative)
        return index

    def _columns(self) -> tuple[array, array]:
        return self._timestamps, self._relative

    def _encode(self, start: int, stop: int) -> bytes:
        return b"".join(
            _TIME_ENTRY.pack(timestamp, relative)
            for timestamp, relative in zip(
                self._timestamps[start:stop], self._relative[start:stop], strict=True
            )
        )

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None if empty."""
        if not self._relative:
            return None
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append one entry if its timestamp beats the last and there is room."""
        timestamps = self._timestamps
        if (timestamps and timestamp <= timestamps[-1]) or len(timestamps) >= self.max_entries:
            return
        # Offset first: a concurrent lookup bisects _timestamps, then reads
        # _relative at the index it found.
        self._relative.append(offset - self.base_offset)
        timestamps.append(timestamp)
        self._write_if_many_pending()

    def maybe_append_many(self, entries: list[tuple[int, int]]) -> None:
        """Append (timestamp, offset) pairs whose timestamp beats the last entry.

        Written to the file lazily, like :meth:`OffsetIndex.append_many`.
        """
        for timestamp, offset in entries:
            self.maybe_append(timestamp, offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry <= ``timestamp``; (-1, base) if none."""
        i = bisect_right(self._timestamps, timestamp)
        if i == 0:
            return -1, self.base_offset
        return self._timestamps[i - 1], self.base_offset + self._relative[i - 1]
