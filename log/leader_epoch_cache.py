"""``leader-epoch-checkpoint``: where each leader epoch starts in a partition's log.

Replication needs to know, for any leader epoch, where it ended (KIP-101):
a follower that was cut off asks the leader for the end offset of its own
latest epoch (OffsetForLeaderEpoch) and truncates to it, so a tail that a
dead leader never replicated cannot survive beside the new leader's records
(KIP-279 makes that work across several leader changes). Each epoch's *start*
offset is enough: an epoch ends where the next one starts, the latest one at
the log end.

Kafka's text checkpoint format, in the partition directory::

    0                      <- version
    2                      <- number of entries
    0 0                    <- epoch start_offset, epochs ascending
    3 1200

Semantics are Kafka's ``LeaderEpochFileCache`` (assign, endOffsetFor,
truncateFromEnd, truncateFromStart, clear). Every change is persisted before
the call returns, with ``atomic_write`` (temp, fsync, rename, fsync dir): an
epoch is persisted *before* the batches that carry it are written, so the
file never lacks an epoch the log holds; entries it may hold beyond the log
(a crash between a truncation of the log and of this file) are dropped when
the log opens. A missing or unreadable file reads as empty; the partition
log then rebuilds it from its batch headers (``rebuild``).

Thread-safety: mutators hold ``_lock`` (the partition log calls them under
its write lock anyway); readers take a snapshot of the entry list, which is
replaced, never mutated, once published.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path

from kafkette.log.checkpoint import atomic_write

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0
_log = logging.getLogger(__name__)

EpochEntry = tuple[int, int]  # (epoch, start offset)


class InvalidEpochCheckpoint(ValueError):
    """The file exists but is not a well-formed leader-epoch checkpoint."""


def parse_epoch_checkpoint(text: str) -> list[EpochEntry]:
    """Entries of a checkpoint file's text; raises InvalidEpochCheckpoint.

    Besides the framing (version, count), entries must be strictly
    increasing in both epoch and start offset, as the cache keeps them: a
    file that says otherwise was not written by a cache and is not trusted.
    """
    lines = text.split("\n")
    try:
        if int(lines[0]) != _VERSION:
            raise InvalidEpochCheckpoint(f"unknown version {lines[0]!r}")
        count = int(lines[1])
        entries: list[EpochEntry] = []
        for line in lines[2 : 2 + count]:
            epoch, start = line.split()
            entries.append((int(epoch), int(start)))
    except (IndexError, ValueError) as exc:
        raise InvalidEpochCheckpoint(str(exc)) from None
    if len(entries) != count or any(line.strip() for line in lines[2 + count :]):
        raise InvalidEpochCheckpoint(f"expected {count} entries, found {len(lines) - 2}")
    previous = (-1, -1)
    for epoch, start in entries:
        if epoch <= previous[0] or start < 0 or start <= previous[1]:
            raise InvalidEpochCheckpoint(f"entry {epoch} {start} out of order")
        previous = (epoch, start)
    return entries


def format_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    entries = list(entries)
    lines = [str(_VERSION), str(len(entries))]
    lines += [f"{epoch} {start}" for epoch, start in entries]
    return ("\n".join(lines) + "\n").encode("ascii")


class LeaderEpochCache:
    """One partition's epoch -> start offset map, mirrored in its checkpoint file."""

    def __init__(self, path: Path, *, load: bool = True) -> None:
        """Load ``path`` if present (``load=False``: not yet, see :meth:`load`)."""
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[EpochEntry] = []
        # The newest epoch, UNDEFINED_EPOCH (-1) if none: a plain attribute,
        # read by every append.
        self.latest_epoch = UNDEFINED_EPOCH
        self.file_exists = False
        self.needs_rebuild = False
        self.load_error: str | None = None
        if load:
            self.load()

    def load(self) -> None:
        """Read the file (a missing one reads as empty).

        An unreadable file reads as empty too; ``needs_rebuild`` then tells
        the owner to rebuild the cache from the log, and ``load_error`` says
        why (the owner logs it, once, with what it did about it).
        """
        try:
            text = self.path.read_text("ascii")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            self.load_error = f"unreadable ({exc})"
            self.needs_rebuild = True
            return
        try:
            self._set(parse_epoch_checkpoint(text))
        except InvalidEpochCheckpoint as exc:
            self.load_error = f"malformed ({exc})"
            self.needs_rebuild = True
            return
        self.file_exists = True

    def _set(self, entries: list[EpochEntry]) -> None:
        self._entries = entries
        self.latest_epoch = entries[-1][0] if entries else UNDEFINED_EPOCH

    # ------------------------------------------------------------------ reads

    def entries(self) -> list[EpochEntry]:
        """(epoch, start offset) pairs, ascending."""
        return list(self._entries)

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch the record at ``offset`` was written in (-1 if before every entry)."""
        entries = self._entries
        i = bisect_right(entries, offset, key=lambda e: e[1])  # entries starting <= offset
        return entries[i - 1][0] if i else UNDEFINED_EPOCH

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch: Kafka's endOffsetFor.

        * ``epoch`` undefined (-1): (-1, -1).
        * ``epoch`` is the latest: (epoch, ``log_end_offset``), the epoch still
          being written.
        * no entry above ``epoch`` (so it is newer than any known, or the cache
          is empty): (-1, -1).
        * an entry above but none at or below (older than every known epoch,
          its records deleted): (``epoch``, start of the first entry above).
        * otherwise: (largest known epoch <= ``epoch``, start of the first
          entry above ``epoch``).
        """
        entries = self._entries
        if epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1][0] == epoch:
            return epoch, log_end_offset
        i = bisect_right(entries, epoch, key=lambda e: e[0])  # first entry above epoch
        if i == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = entries[i][1]
        if i == 0:
            return epoch, higher_start
        return entries[i - 1][0], higher_start

    # -------------------------------------------------------------- mutations

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; persist. Kafka's assign.

        Nothing happens when ``epoch`` is already the latest and starts at or
        before ``start_offset``. Otherwise entries that would break the order
        (epoch >= ``epoch`` or start >= ``start_offset``) are removed from the
        end first, as Kafka does: a follower taking an older epoch's batches
        at an offset where it had begun a newer epoch must forget the newer
        one. Returns whether the cache changed. ValueError for negatives.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {epoch} {start_offset}")
        with self._lock:
            entries = self._entries
            if entries:
                latest_epoch, latest_start = entries[-1]
                if epoch == latest_epoch and start_offset >= latest_start:
                    return False
            kept = list(entries)
            removed: list[EpochEntry] = []
            while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start_offset):
                removed.append(kept.pop())
            if len(removed) > 1 or (removed and removed[0][1] != start_offset):
                _log.warning("%s: epoch %d at %d truncated conflicting entries %s",
                             self.path, epoch, start_offset, removed[::-1])
            kept.append((epoch, start_offset))
            self._publish(kept)
            return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Remove entries starting at or after ``end_offset`` (the log was cut there)."""
        with self._lock:
            entries = self._entries
            if end_offset < 0 or not entries or entries[-1][1] < end_offset:
                return False
            kept = [entry for entry in entries if entry[1] < end_offset]
            self._publish(kept)
            return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: Kafka's truncateFromStart.

        Entries starting at or before it go, except that the last of them is
        kept with its start moved up to ``start_offset`` (the records from
        there on still belong to that epoch). Persisted only if that changes
        anything, so a log whose first entry already starts at its start
        offset writes nothing.
        """
        with self._lock:
            entries = self._entries
            i = bisect_right(entries, start_offset, key=lambda e: e[1])
            if i == 0:
                return False
            kept = [(entries[i - 1][0], start_offset), *entries[i:]]
            if kept == entries:
                return False
            self._publish(kept)
            return True

    def clear(self) -> None:
        """Forget every entry (the log restarts empty); persisted."""
        with self._lock:
            self._publish([])

    def replace(self, entries: list[EpochEntry]) -> None:
        """Install entries rebuilt from the log (ascending, as ``parse`` checks); persist."""
        with self._lock:
            self._publish(list(entries))

    def _publish(self, entries: list[EpochEntry]) -> None:
        """Write the file first, then publish: a failed write changes nothing."""
        atomic_write(self.path, format_epoch_checkpoint(entries))
        self._set(entries)
        self.file_exists = True
        self.needs_rebuild = False


def epoch_starts(batches: Iterable[tuple[int, int]]) -> list[EpochEntry]:
    """The cache a log's (partition_leader_epoch, base_offset) batch sequence implies.

    Applies Kafka's assign rule batch by batch (what appending them would
    have recorded), skipping batches without an epoch (-1).
    """
    entries: list[EpochEntry] = []
    for epoch, base in batches:
        if epoch < 0:
            continue
        if entries and entries[-1][0] == epoch and entries[-1][1] <= base:
            continue
        while entries and (entries[-1][0] >= epoch or entries[-1][1] >= base):
            entries.pop()
        entries.append((epoch, base))
    return entries
