"""Writing transaction markers (COMMIT/ABORT control batches) to partitions.

Used by the coordinator to finish a transaction and by WriteTxnMarkers
(``kafka-transactions.sh abort``). A data partition (the one this broker serves:
``TopicRegistry.serving``) gets the marker through ``Partition.append_batch``,
under its append lock, after the log's own check (``check_marker``: a marker
from an epoch older than the producer's is refused INVALID_PRODUCER_EPOCH, one
from an older coordinator epoch TRANSACTION_COORDINATOR_FENCED), so it lands in
order with produce appends: a transactional batch verified under the same lock
is either before the marker or refused. A ``__consumer_offsets`` partition is
the group coordinator's: its ``write_txn_marker`` appends the marker in order
with its other writes and applies or drops the transaction's pending offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.clock import now_ms
from kafkette.broker.internal_topics import OFFSETS_TOPIC, append_committed
from kafkette.broker.partitions import LEADER_EPOCH, Partition
from kafkette.broker.throttled_log import storage_errors
from kafkette.log.errors import LogClosed
from kafkette.wire.errors import ErrorCode
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
    partition = broker.topics.serving(topic, index)  # in a cluster: led here
    if isinstance(partition, ErrorCode):
        return partition
    try:
        return await append_marker(
            partition,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            committed=committed,
            timestamp=now_ms(),
        )
    except LogClosed:  # deleted (or moved away) since looked up: as if already gone
        return partition.closed_error
    except Exception as exc:  # a full disk: the caller retries
        storage_errors.failure("writing a transaction marker to", f"{topic}-{index}", exc)
        del exc
        return ErrorCode.KAFKA_STORAGE_ERROR


async def append_marker(
    partition: Partition,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    committed: bool,
    timestamp: int,
    timeout_s: float = 30.0,
) -> ErrorCode:
    """The one way a marker enters a partition log, for data and offsets partitions.

    Under the partition's append lock: the log's ``check_marker``, then the
    append (a storage failure raises), then long-polling fetches are woken
    (a read_committed consumer waits for exactly this: the LSO moving on).
    In a cluster (``partition.replicated``): only on the leader, and answered once committed
    (``append_committed``: Kafka writes markers with acks=-1).
    """
    batch = bytearray(
        build_control_batch(
            ControlRecordType.COMMIT if committed else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=timestamp,
            partition_leader_epoch=LEADER_EPOCH,
        )
    )
    return await append_committed(
        partition,
        batch,
        timeout_s,
        check=lambda: partition.check_marker(producer_id, producer_epoch, coordinator_epoch),
    )
