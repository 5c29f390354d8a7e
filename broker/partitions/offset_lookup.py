"""ListOffsets' question to one partition: the offset for a timestamp or a special one.

Kafka's ``Partition.fetchOffsetForTimestamp``: the latest (the high watermark, or
the LSO for read_committed), the earliest, the record with the largest timestamp,
or the first record at or after a timestamp. A timestamp answer at or past what
the isolation level may fetch (the LSO for read_committed, the HW in a cluster)
is "none", (-1, -1). The console asks a plainer question (``first_offset_since``):
where to start reading for a timestamp, never "none". Blocking (the timestamp
index and one batch are read): worker threads only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.record_lookup import exact_record
from kafkette.log.errors import OffsetOutOfRange

if TYPE_CHECKING:
    from kafkette.log import PartitionLog

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5

READ_COMMITTED = 1


def offset_for_timestamp(
    log: PartitionLog, replicated: bool, timestamp: int, isolation_level: int
) -> tuple[int, int]:
    """(timestamp, offset) for one ListOffsets query; ``replicated``: the HW bounds
    what is answered (a cluster's explicit HW)."""
    if timestamp == LATEST:
        if isolation_level == READ_COMMITTED:
            return -1, log.last_stable_offset
        return -1, log.high_watermark
    if timestamp == LATEST_TIERED:
        return -1, log.high_watermark
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if isolation_level == READ_COMMITTED:
        fetchable: int | None = log.last_stable_offset
    else:
        fetchable = log.high_watermark if replicated else None
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
        if found is None:
            return -1, -1
        answer = exact_record(log, found[0], found[1], at_least=False)
    else:
        found = log.offset_for_timestamp(timestamp)
        if found is None:
            return -1, -1
        answer = exact_record(log, found[0], timestamp, at_least=True)
    if fetchable is not None and answer[1] >= fetchable:
        return -1, -1
    return answer


def first_offset_since(log: PartitionLog, timestamp: int) -> int:
    """The first offset whose record has a timestamp at or after ``timestamp`` (the log
    end offset when none has): the log finds the batch, the batch is decoded for the
    exact record. Not bounded by the HW or the LSO (the console's reads bound
    themselves); the log start if retention moved it past the record meanwhile."""
    found = log.offset_for_timestamp(timestamp)
    if found is None:
        return log.log_end_offset
    try:
        return exact_record(log, found[0], timestamp, at_least=True)[1]
    except OffsetOutOfRange:
        return log.log_start_offset
