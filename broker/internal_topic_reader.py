"""Reading an internal topic's partition back from the start, batch by batch.

The group coordinator (``__consumer_offsets``) and the transaction coordinator
(``__transaction_state``) rebuild their state on start by replaying their
topic; both need the same walk: whole batches from the log start to the log
end, decoded, records below the log start (a batch straddling a
DeleteRecords) left out. Synchronous: call it from a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafkette.wire.records import Record, decode_batches

if TYPE_CHECKING:
    from kafkette.log import PartitionLog
    from kafkette.wire.record_batch import BatchHeader

READ_CHUNK_BYTES = 4 * 1024 * 1024


def replay_batches(log: PartitionLog) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Every batch of ``log`` in order, with its records at or above the log start."""
    start = offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = decode_batches(log.read(offset, READ_CHUNK_BYTES).to_bytes())
        if not batches:
            return
        for header, records in batches:
            if header.base_offset < start:
                records = [r for r in records if (r.offset or 0) >= start]
            yield header, records
            offset = header.next_offset
