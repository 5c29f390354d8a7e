"""Crash-safe replacement of segments by their cleaned copy (Kafka's swap protocol).

The cleaner writes the cleaned copy of a group of adjacent segments to
``<base>.log.cleaned`` (``base`` = the group's first base offset) and fsyncs
it. Then :func:`commit_swap`:

1. renames it to ``<base>.log.swap`` (fsync the directory): from here the
   new copy is committed, recovery finishes the swap;
2. removes the old segments' indexes and renames each old ``.log`` to
   ``.log.deleted``;
3. renames ``.swap`` to ``<base>.log`` (fsync the directory);
4. unlinks the ``.deleted`` files.

A cleaned copy always ends at its group's log end (the cleaner keeps the
group's last batch at least as a header-only batch), so the old segments a
swap replaces are exactly those with a base offset in
``[swap base, swap next offset)``. :func:`complete_swaps` (run by recovery
before anything else) deletes those and renames the swap into place; a
``.cleaned`` file is an unfinished clean and is deleted (rollback).
"""

from __future__ import annotations

import os
from pathlib import Path

from kafkette.log.batch_scan import scan_batches
from kafkette.log.checkpoint import fsync_directory
from kafkette.log.file_region import SegmentFile
from kafkette.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from kafkette.wire.record_batch import InvalidBatchError

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"


def cleaned_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, LOG_SUFFIX) + CLEANED_SUFFIX)


def _swap_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, LOG_SUFFIX) + SWAP_SUFFIX)


def _unlink_indexes(directory: Path, base_offset: int) -> None:
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        (directory / segment_file_name(base_offset, suffix)).unlink(missing_ok=True)


def commit_swap(directory: Path, base_offset: int, old_bases: list[int]) -> None:
    """Steps 1-4 above; the cleaned file must be fsynced already."""
    swap = _swap_path(directory, base_offset)
    os.replace(cleaned_path(directory, base_offset), swap)
    fsync_directory(directory)
    deleted: list[Path] = []
    for base in old_bases:
        _unlink_indexes(directory, base)
        log = directory / segment_file_name(base, LOG_SUFFIX)
        doomed = log.with_name(log.name + DELETED_SUFFIX)
        try:
            os.replace(log, doomed)
        except FileNotFoundError:
            continue
        deleted.append(doomed)
    os.replace(swap, directory / segment_file_name(base_offset, LOG_SUFFIX))
    fsync_directory(directory)
    for path in deleted:
        path.unlink(missing_ok=True)


def _next_offset_of(path: Path) -> int | None:
    """Next offset after the last whole batch of ``path`` (None if it has none)."""
    file = SegmentFile(path, create=False)
    try:
        next_offset = None
        try:
            for _, header in scan_batches(file, 0, file.size(), validate=False):
                next_offset = header.next_offset
        except InvalidBatchError:
            pass  # fsynced before the rename to .swap: not expected; keep what is whole
        return next_offset
    finally:
        file.close()


def complete_swaps(directory: Path) -> list[int]:
    """Recovery: put every ``.log.swap`` in place of the segments it covers.

    Returns the base offsets of the swapped-in segments (their indexes are
    rebuilt by the normal load). Must run before leftovers are removed.
    """
    done: list[int] = []
    for swap in sorted(directory.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
        stem = swap.name.split(".", 1)[0]
        if len(stem) != 20 or not stem.isdigit():
            continue
        base = int(stem)
        next_offset = _next_offset_of(swap)
        if next_offset is None:
            swap.unlink()
            continue
        for log in directory.glob(f"*{LOG_SUFFIX}"):
            other = log.name.split(".", 1)[0]
            if len(other) == 20 and other.isdigit() and base <= int(other) < next_offset:
                _unlink_indexes(directory, int(other))
                log.unlink()
        _unlink_indexes(directory, base)
        os.replace(swap, directory / segment_file_name(base, LOG_SUFFIX))
        done.append(base)
    if done:
        fsync_directory(directory)
    return done
