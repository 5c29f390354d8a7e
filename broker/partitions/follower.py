"""A follower's copy of its leader's log: one Fetch answer applied to the local log.

The replica fetcher (``broker/cluster/replica_fetcher.py``) asks the leader;
``Partition.follow`` runs ``copy_from_leader`` with the partition's appends
held off. The leader's batches are appended as they are, same offsets and
leader epochs (``PartitionLog.append_as_follower`` checks every CRC and keeps
the leader's stamps), then the local high watermark becomes min(leader HW, own
LEO) and the leader's log start moves ours up to it.
Failures are answered, not raised, for the fetcher to report and back off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.wire.record_batch import HEADER_SIZE, BatchHeader, InvalidBatchError, read_header

if TYPE_CHECKING:
    from kafkette.log.partition_log import PartitionLog


def split_batches(
    records: memoryview | bytes, log_end_offset: int
) -> tuple[int, int, list[BatchHeader]]:
    """(start, end, headers) of the whole batches in ``records`` that reach past the LEO.

    Batches wholly below ``log_end_offset`` (already held) are skipped; a batch cut
    short at the end of the response (Kafka's leaders may send one) is left for the
    next fetch. Raises InvalidBatchError for bytes that are not batches.
    """
    pos, start, total = 0, 0, len(records)
    headers: list[BatchHeader] = []
    while total - pos >= HEADER_SIZE:
        header = read_header(records, pos)
        if pos + header.size > total:
            break
        if header.last_offset < log_end_offset:
            start = pos + header.size
        else:
            headers.append(header)
        pos += header.size
    return start, pos if headers else start, headers


@dataclass(slots=True)
class FollowerCopy:
    """What applying one fetch answer did, for the fetcher to report."""

    appended: bool = False
    failure: Exception | None = None  # nothing copied, HW unchanged: back off
    start: int = -1
    start_failure: Exception | None = None  # the log start did not move (retried next time)


async def copy_from_leader(
    log_: PartitionLog,
    records: memoryview | bytes,
    leader_high_watermark: int,
    leader_log_start: int,
) -> FollowerCopy:
    """Append the answer's new batches, then take the leader's HW and log start as far
    as ours go. The partition's appends are held off (``Partition.follow``); log work
    runs in worker threads, and an answer with nothing new costs no thread hop."""
    copied = FollowerCopy()
    leo = log_.log_end_offset
    if records:
        try:
            start, end, headers = split_batches(records, leo)
        except InvalidBatchError as exc:
            copied.failure = exc
            return copied
        if headers:
            # Headers None: the log reads them again and checks every CRC, as
            # Kafka's follower validates what it is sent.
            data = bytes(records[start:end])
            first = headers[0].base_offset
            if first < leo and leo == log_.log_start_offset:
                # An empty log restarted at the leader's log start, which falls
                # inside this batch (DeleteRecords cut it): restart at the batch's
                # base and take it whole; the leader's log start then moves ours
                # (below). Kafka's follower does the same (KAFKA-6975).
                await trio.to_thread.run_sync(log_.truncate_fully_and_start_at, first)
            try:
                await trio.to_thread.run_sync(log_.append_as_follower, data, None)
            except Exception as exc:  # OffsetMismatch: asked again; else retried later
                copied.failure = exc
                return copied
            copied.appended = True
    high_watermark = log_.set_high_watermark(min(leader_high_watermark, log_.log_end_offset))
    # The leader's log start (DeleteRecords, retention) moves ours, up to our HW
    # (Kafka's maybeIncrementLogStartOffset), so a follower that leads later
    # does not serve records the leader had already dropped.
    copied.start = min(leader_log_start, high_watermark)
    if copied.start > log_.log_start_offset:
        try:
            await trio.to_thread.run_sync(log_.delete_records_before, copied.start)
        except Exception as exc:
            copied.start_failure = exc
    return copied
