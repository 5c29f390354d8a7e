"""Opening a partition directory: Kafka's LogLoader, reduced to what we store.

Steps, in order:

1. Finish every segment swap of the log cleaner that reached ``.log.swap``
   (``log/segment_swap.py``: the swap replaces the segments it covers), then
   delete leftovers of interrupted operations: ``*.deleted``, ``*.cleaned``
   (an unfinished clean: rolled back), other ``*.swap``, ``*.tmp`` files, and
   indexes whose ``.log`` is gone.
2. Open every segment. A missing or corrupt index always triggers a rebuild
   (validate batches, rebuild both indexes, truncate a bad tail).
3. After an unclean stop (``recover=True``) every segment from the one holding
   the checkpointed recovery point onward is recovered the same way; if one
   of them loses a torn or corrupt tail, the segments after it are deleted
   (their offsets would no longer follow). Segments before the recovery point
   were fsynced and are trusted.
4. After a clean stop only the headers after each segment's last index entry
   are read, to learn the next offset and max timestamp.

Nothing before the last good batch is ever removed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from kafkette.log.checkpoint import CHECKPOINT_FILE_NAME, TEMP_SUFFIX, OffsetsCheckpoint
from kafkette.log.config import LogConfig
from kafkette.log.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT_FILE
from kafkette.log.producer_snapshot import SNAPSHOT_SUFFIX
from kafkette.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
)
from kafkette.log.segment_swap import SWAP_SUFFIX, complete_swaps
from kafkette.log.transaction_index import TXN_INDEX_SUFFIX

_log = logging.getLogger(__name__)

LEFTOVER_SUFFIXES = (".deleted", ".swap", ".cleaned", TEMP_SUFFIX)
SWAP_LOG_SUFFIX = LOG_SUFFIX + SWAP_SUFFIX


@dataclass
class LoadedLog:
    """Segments in offset order (never empty) and the offsets to resume with."""

    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    checkpoint_on_disk: OffsetsCheckpoint | None = None
    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_segments: list[int] = field(default_factory=list)
    # Producer state must be replayed from at or below this offset (the abort
    # indexes of the segments from here on are recomputed from the replay):
    # the first unflushed segment after an unclean stop, or a segment whose
    # ``.txnindex`` was torn. None: the newest snapshot will do.
    replay_from: int | None = None
    # Offsets of the producer snapshot files found (ascending).
    snapshots: list[int] = field(default_factory=list)
    # Whether the directory holds a ``leader-epoch-checkpoint`` (read only if so).
    has_epoch_checkpoint: bool = False


def _base_offset_of(path: Path) -> int | None:
    stem = path.name.split(".", 1)[0]
    if len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


@dataclass
class DirectoryListing:
    """What one listing of a partition directory tells the open of its log, so that
    opening 10,000 partitions lists each directory once and tries no absent file."""

    bases: list[int]  # of the .log files, ascending
    txn_indexed: set[int]  # segments that have a .txnindex
    snapshots: list[int]  # offsets of the producer snapshots, ascending
    has_epoch_checkpoint: bool = False


def remove_leftovers(directory: Path) -> DirectoryListing:
    """Finish interrupted swaps, delete interrupted-operation files and orphan
    indexes; return what the directory then holds."""
    paths = list(directory.iterdir())
    if any(path.name.endswith(SWAP_LOG_SUFFIX) for path in paths):
        complete_swaps(directory)
        paths = list(directory.iterdir())
    bases: set[int] = set()
    txn_indexed: set[int] = set()
    snapshots: list[int] = []
    orphans: list[Path] = []
    has_epoch_checkpoint = False
    for path in paths:
        name = path.name
        if name == LEADER_EPOCH_CHECKPOINT_FILE:
            has_epoch_checkpoint = True
            continue
        if any(name.endswith(suffix) for suffix in LEFTOVER_SUFFIXES):
            path.unlink(missing_ok=True)
            continue
        base = _base_offset_of(path)
        if base is None:
            continue
        if name.endswith(LOG_SUFFIX):
            bases.add(base)
        elif name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)):
            orphans.append(path)
            if name.endswith(TXN_INDEX_SUFFIX):
                txn_indexed.add(base)
        elif name.endswith(SNAPSHOT_SUFFIX):
            snapshots.append(base)
    for path in orphans:
        if _base_offset_of(path) not in bases:
            path.unlink(missing_ok=True)
    return DirectoryListing(
        sorted(bases), txn_indexed & bases, sorted(snapshots), has_epoch_checkpoint
    )


def load_log(directory: Path, config: LogConfig, now_ms: int, *, recover: bool) -> LoadedLog:
    """Open (and if needed recover) the segments of one partition directory."""
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = OffsetsCheckpoint.read(directory)
    listing = remove_leftovers(directory)
    bases, txn_indexed = listing.bases, listing.txn_indexed
    segments: list[LogSegment] = []
    result = LoadedLog(
        segments, checkpoint.log_start_offset, checkpoint.recovery_point,
        snapshots=listing.snapshots, has_epoch_checkpoint=listing.has_epoch_checkpoint,
    )
    if (directory / CHECKPOINT_FILE_NAME).exists():
        result.checkpoint_on_disk = checkpoint
    first_unflushed = _first_unflushed_index(bases, checkpoint.recovery_point)
    for position, base in enumerate(bases):
        segment, indexes_ok = LogSegment.open_existing(
            directory, base, config, now_ms, has_txn_index=base in txn_indexed
        )
        segments.append(segment)
        unflushed = recover and position >= first_unflushed
        if (unflushed or not segment.txn_index.intact) and result.replay_from is None:
            result.replay_from = base
        if indexes_ok and not unflushed and segment.load_summary():
            continue
        outcome = segment.recover(config)
        segment.fsync()  # what we now call flushed must be on disk
        result.recovered_segments += 1
        if not outcome.truncated_bytes:
            continue
        result.truncated_bytes += outcome.truncated_bytes
        _log.warning("%s: truncated %d bytes: %s", segment.log.path,
                     outcome.truncated_bytes, outcome.reason)
        if unflushed:
            # Later segments no longer follow on: delete them, newest first.
            for later in reversed(bases[position + 1 :]):
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    LogSegment.path_for(directory, later, suffix).unlink(missing_ok=True)
                result.deleted_segments.append(later)
            break

    _drop_empty_middle_segments(segments, result)

    if segments:
        log_end = segments[-1].next_offset
        start = max(checkpoint.log_start_offset, segments[0].base_offset)
        if log_end < checkpoint.log_start_offset:
            _log.warning("%s: log end %d below checkpointed log start %d; starting empty",
                         directory, log_end, checkpoint.log_start_offset)
            for segment in reversed(segments):
                segment.delete_files()
                segment.close()
                result.deleted_segments.append(segment.base_offset)
            segments.clear()
        else:
            result.log_start_offset = start
    if not segments:  # a partition never written to (its .log is made on first use)
        segments.append(
            LogSegment.create(directory, result.log_start_offset, config, now_ms, lazy=True)
        )
    result.recovery_point = segments[-1].next_offset if (recover or not bases) else max(
        min(checkpoint.recovery_point, segments[-1].next_offset), segments[0].base_offset
    )
    return result


def _first_unflushed_index(bases: list[int], recovery_point: int) -> int:
    """Index of the segment holding the recovery point (everything from it is unflushed)."""
    first = 0
    for i, base in enumerate(bases):
        if base <= recovery_point:
            first = i
    return first


def _drop_empty_middle_segments(segments: list[LogSegment], result: LoadedLog) -> None:
    """An empty non-active segment (crash right after a roll) carries nothing; remove it."""
    kept: list[LogSegment] = []
    for i, segment in enumerate(segments):
        if segment.size == 0 and i < len(segments) - 1:
            segment.delete_files()
            segment.close()
            result.deleted_segments.append(segment.base_offset)
        else:
            kept.append(segment)
    segments[:] = kept
