"""A segment's abort index ``<base>.txnindex``: Kafka's TransactionIndex.

A read_committed consumer must drop the records of aborted transactions. It
learns which from the ``aborted_transactions`` of a Fetch response: one
(producer id, first offset) per aborted transaction overlapping the data
returned. Those come from this index: one entry per ABORT marker that closed
an open transaction, in the segment the marker was written to, in marker
order. Layout (Kafka's AbortedTxn, big-endian, 34 bytes)::

    0  version            int16  = 0
    2  producer id        int64
    10 first offset       int64  the transaction's first offset in this partition
    18 last offset        int64  the ABORT marker's offset
    26 last stable offset int64  the LSO right after the marker was appended

Aborted transactions are rare, so the whole index of a segment lives in
memory (a list of :class:`AbortedTxn`) and each entry is written with its own
small ``write``; the file is created at the first entry only, so a log that
never saw an aborted transaction has no ``.txnindex`` file at all (creating
1,000 partitions stays 1,000 directories and ``.log`` files).

The index is a function of the log: recovery and truncation recompute its
tail from the producer-state replay (``producer_state_manager``), so the file
is never checksummed; a torn tail is dropped at load and reported, and the
loader then replays that segment.

Not thread-safe: the partition log appends and truncates under its write
lock; readers only iterate :attr:`entries` (a list that only grows between
truncations, which happen under the log's state lock).
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import NamedTuple

_log = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY_SIZE = 34
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    """One aborted transaction of one producer in one partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entries(entries: list[AbortedTxn]) -> bytes:
    return b"".join(_ENTRY.pack(VERSION, *entry) for entry in entries)


def decode_entries(data: bytes) -> tuple[list[AbortedTxn], bool]:
    """(entries, intact): every whole version-0 entry before the first bad one.

    ``intact`` is False when bytes were left over (a torn tail) or an entry
    had an unknown version: the caller rebuilds what follows from the log.
    """
    entries: list[AbortedTxn] = []
    whole = len(data) - len(data) % ENTRY_SIZE
    for position in range(0, whole, ENTRY_SIZE):
        version, producer_id, first, last, stable = _ENTRY.unpack_from(data, position)
        if version != VERSION or first > last:
            return entries, False
        entries.append(AbortedTxn(producer_id, first, last, stable))
    return entries, whole == len(data)


class TransactionIndex:
    """The aborted transactions whose markers are in one segment (see module docstring)."""

    __slots__ = ("_dirty", "_discarded", "_unwritten", "entries", "intact", "path")

    def __init__(self, path: Path, entries: list[AbortedTxn] | None = None) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = entries if entries is not None else []
        self.intact = True
        self._dirty = False
        self._discarded = False
        self._unwritten = False  # a write failed: the next fsync rewrites the file

    @classmethod
    def load(cls, path: Path) -> TransactionIndex:
        """The index in ``path`` (empty if there is no file); see :attr:`intact`."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        entries, intact = decode_entries(data)
        index = cls(path, entries)
        if not intact:
            _log.warning("%s: torn or unknown entry after %d entries; rebuilding it",
                         path, len(entries))
            index.intact = False
        return index

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add one entry (markers come in offset order) and write it to the file."""
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: aborted txn at {entry.last_offset} not after "
                f"{self.entries[-1].last_offset}"
            )
        self.entries.append(entry)
        if self._unwritten:
            return  # the next fsync rewrites the whole file
        try:
            self._write_tail(_ENTRY.pack(VERSION, *entry))
        except OSError as exc:
            # The marker is in the log already; readers use the in-memory list.
            _log.error("%s: abort index entry not written (retried at flush): %s",
                       self.path, exc)
            self._unwritten = True

    def _write_tail(self, data: bytes) -> None:
        if self._discarded:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self._dirty = True

    def replace_from(self, offset: int, entries: list[AbortedTxn]) -> bool:
        """Make the entries with last offset >= ``offset`` be ``entries``; True if changed.

        The repair after a replay: entries below ``offset`` are trusted, the
        rest is what replaying the log from ``offset`` computed. The file is
        rewritten only when something differs.
        """
        keep = [e for e in self.entries if e.last_offset < offset]
        wanted = keep + sorted(entries, key=lambda e: e.last_offset)
        if wanted == self.entries and self.intact:
            return False
        self.entries = wanted
        self.intact = True
        self._rewrite()
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or after ``offset`` (a log truncation)."""
        if not self.entries or self.entries[-1].last_offset < offset:
            return
        self.entries = [e for e in self.entries if e.last_offset < offset]
        self._rewrite()

    def _rewrite(self) -> None:
        if self._discarded:
            return
        if not self.entries:
            self.path.unlink(missing_ok=True)
            self._dirty = False
            return
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "wb") as handle:
            handle.write(encode_entries(self.entries))
        os.replace(temp, self.path)
        self._dirty = True

    def fsync(self) -> None:
        """Make the written entries durable (with the segment's other files)."""
        if self._unwritten and not self._discarded:
            self._rewrite()
            self._unwritten = False
        if not self._dirty or self._discarded:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def discard(self) -> None:
        """The file is deleted or replaced: never write it again."""
        self._discarded = True


def collect_aborted(
    entries: list[AbortedTxn], start_offset: int, upper_bound: int, out: list[tuple[int, int]]
) -> bool:
    """Kafka's collectAbortedTxns for one segment; True once the search is complete.

    Adds (producer id, first offset) of every entry with last offset >=
    ``start_offset`` and first offset < ``upper_bound``. An entry whose last
    stable offset reaches ``upper_bound`` ends the search: every transaction
    that could overlap the range was complete by then, so later segments
    hold nothing more for it.
    """
    for entry in entries:
        if entry.last_offset >= start_offset and entry.first_offset < upper_bound:
            out.append((entry.producer_id, entry.first_offset))
        if entry.last_stable_offset >= upper_bound:
            return True
    return False
