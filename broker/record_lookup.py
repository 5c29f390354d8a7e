"""Finding one record inside a batch by timestamp: what ListOffsets answers and where the
console's "from timestamp" starts.

The log indexes batches only (their max timestamps); the exact record is found by
decoding the one batch that holds the candidate offset. Blocking: worker threads only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.wire.records import decode_batches

if TYPE_CHECKING:
    from kafkette.log.partition_log import PartitionLog


def exact_record(
    log: PartitionLog, offset: int, timestamp: int, *, at_least: bool
) -> tuple[int, int]:
    """(timestamp, offset) of a record in the batch holding ``offset``.

    ``at_least``: the first record at or after ``offset`` whose timestamp reaches
    ``timestamp``; otherwise the first record of the batch carrying exactly ``timestamp``
    (the batch's max). Records before the log start offset are never answered.
    """
    start = log.log_start_offset
    first = offset if at_least else start
    data = log.read(offset, 1).to_bytes()
    for _, records in decode_batches(data)[:1]:
        for record in records:
            if record.offset is None or record.timestamp is None or record.offset < first:
                continue
            if record.timestamp == timestamp or (at_least and record.timestamp > timestamp):
                return record.timestamp, record.offset
    return timestamp, offset  # records disagree with their batch header: answer the header
