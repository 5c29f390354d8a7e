"""Writing transaction markers (COMMIT/ABORT control batches) to partitions.

Used by the coordinator to finish a transaction and by WriteTxnMarkers
(``kafka-transactions.sh abort``). A data partition gets the marker under its
``append_lock``, after the log's own check (``check_sequence``: a marker from
an epoch older than the producer's is refused), so it lands in order with
produce appends: a transactional batch verified under the same lock is either
before the marker or refused. A ``__consumer_offsets`` partition is the group
coordinator's: its ``write_txn_marker`` appends the marker in order with its
other writes and applies or drops the transaction's pending offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.groups import OFFSETS_TOPIC
from kafkette.broker.partition import LEADER_EPOCH
from kafkette.broker.throttled_log import storage_errors
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header
from kafkette.wire.records import ControlRecordType, build_control_batch

if TYPE_CHECKING:
    from kafkette.broker.server import Broker


async def write_marker(
    broker: Broker,
    topic: str,
    index: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    committed: bool,
) -> ErrorCode:
    """Append one marker to ``topic``-``index``; the error code Kafka would answer.

    UNKNOWN_TOPIC_OR_PARTITION if the partition is gone (deleted topic), the
    log's verdict (INVALID_PRODUCER_EPOCH, ...) if it refuses the marker,
    KAFKA_STORAGE_ERROR if the write failed.
    """
    if topic == OFFSETS_TOPIC:
        return await broker.groups.write_txn_marker(
            index, producer_id, producer_epoch, coordinator_epoch, committed
        )
    partition = broker.topics.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    batch = bytearray(
        build_control_batch(
            ControlRecordType.COMMIT if committed else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms(),
            partition_leader_epoch=LEADER_EPOCH,
        )
    )
    header = read_header(batch)
    async with partition.append_lock:
        verdict = partition.log.check_sequence(header)
        if verdict.error:
            return ErrorCode(verdict.error)
        try:
            await trio.to_thread.run_sync(partition.log.append, batch, [header])
        except Exception as exc:  # a full disk: the caller retries
            storage_errors.failure("writing a transaction marker to", f"{topic}-{index}", exc)
            del exc
            return ErrorCode.KAFKA_STORAGE_ERROR
    partition.notify_appended()
    return ErrorCode.NONE


