"""Crash-safe replacement of segments by their cleaned copy (Kafka's swap protocol).

The cleaner writes the cleaned copy of a group of adjacent segments to
``<base>.log.cleaned`` (``base`` = the group's first base offset) and fsyncs
it, and the abort index of the aborted transactions it kept (if any) to
``<base>.txnindex.cleaned``, fsynced too. Then :func:`commit_swap`:

1. renames the abort index to ``<base>.txnindex.swap``, then the log to
   ``<base>.log.swap`` (fsync the directory): from here the new copy is
   committed, recovery finishes the swap;
2. removes the old segments' indexes (abort indexes too) and renames each old
   ``.log`` to ``.log.deleted``;
3. renames ``<base>.txnindex.swap`` to ``<base>.txnindex``;
4. renames ``.log.swap`` to ``<base>.log`` (fsync the directory);
5. unlinks the ``.deleted`` files.

The offset and time indexes are rebuilt by whoever opens the new segment;
the abort index cannot be (it needs the producer state before the segment),
so it travels with the swap. Recovery tells an old ``<base>.txnindex`` from
the new one by whether the old ``<base>.log`` is still there (step 2 removes
the old abort index before it renames the old log).

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
from kafkette.log.transaction_index import TXN_INDEX_SUFFIX
from kafkette.wire.record_batch import InvalidBatchError

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"


def cleaned_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, LOG_SUFFIX) + CLEANED_SUFFIX)


def _swap_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, LOG_SUFFIX) + SWAP_SUFFIX)


def cleaned_txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, TXN_INDEX_SUFFIX) + CLEANED_SUFFIX)


def _txn_swap_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_file_name(base_offset, TXN_INDEX_SUFFIX) + SWAP_SUFFIX)


def _txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / segment_file_name(base_offset, TXN_INDEX_SUFFIX)


def _unlink_indexes(directory: Path, base_offset: int) -> None:
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        (directory / segment_file_name(base_offset, suffix)).unlink(missing_ok=True)


def commit_swap(directory: Path, base_offset: int, old_bases: list[int]) -> None:
    """Steps 1-5 above; the cleaned files must be fsynced already."""
    swap = _swap_path(directory, base_offset)
    txn_swap = _txn_swap_path(directory, base_offset)
    try:
        os.replace(cleaned_txn_index_path(directory, base_offset), txn_swap)
        has_txn_index = True
    except FileNotFoundError:
        has_txn_index = False
    os.replace(cleaned_path(directory, base_offset), swap)
    fsync_directory(directory)
    deleted: list[Path] = []
    for base in old_bases:
        _unlink_indexes(directory, base)
        _txn_index_path(directory, base).unlink(missing_ok=True)
        log = directory / segment_file_name(base, LOG_SUFFIX)
        doomed = log.with_name(log.name + DELETED_SUFFIX)
        try:
            os.replace(log, doomed)
        except FileNotFoundError:
            continue
        deleted.append(doomed)
    if has_txn_index:
        os.replace(txn_swap, _txn_index_path(directory, base_offset))
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
        # Still there: step 2 had not reached the old first segment, so a
        # <base>.txnindex is the old one. Gone: any <base>.txnindex is the new one.
        old_first_present = (directory / segment_file_name(base, LOG_SUFFIX)).exists()
        for log in directory.glob(f"*{LOG_SUFFIX}"):
            other = log.name.split(".", 1)[0]
            if len(other) == 20 and other.isdigit() and base <= int(other) < next_offset:
                _unlink_indexes(directory, int(other))
                if int(other) != base or old_first_present:
                    _txn_index_path(directory, int(other)).unlink(missing_ok=True)
                log.unlink()
        txn_swap = _txn_swap_path(directory, base)
        if txn_swap.exists():
            os.replace(txn_swap, _txn_index_path(directory, base))
        _unlink_indexes(directory, base)
        os.replace(swap, directory / segment_file_name(base, LOG_SUFFIX))
        done.append(base)
    if done:
        fsync_directory(directory)
    return done
