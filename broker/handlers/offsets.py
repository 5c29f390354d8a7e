"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords: questions about a log's offsets.

"Latest" is the log end offset (last offset + 1), or the last stable offset
for ``isolation_level=1`` (read_committed, as Kafka); "earliest" the log start
offset. A timestamp query finds the first batch whose max timestamp reaches it
through the time index, then decodes that one batch to answer the exact first
record, as Kafka does (ListOffsets is not on the produce/fetch hot path); the
max-timestamp query likewise answers the record that carries it.
With one node and leader epoch 0 for ever, OffsetForLeaderEpoch's answer for
any epoch a client can hold is the log end offset.

In cluster mode (``broker.cluster`` set) only the leader answers, in the
client's ``current_leader_epoch`` (Kafka's fencing errors otherwise);
"latest" is the high watermark (the log's HW is explicit there) and no
timestamp query answers an offset at or past it; OffsetForLeaderEpoch is
answered from the partition's leader-epoch cache (Kafka's
``LeaderEpochFileCache.endOffsetFor``), which is what followers truncate by.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partition import LEADER_EPOCH, Partition
from kafkette.broker.record_lookup import exact_record
from kafkette.broker.security.authorizer.checks import (
    CLUSTER_ACTION,
    DELETE,
    DESCRIBE,
    cluster_denied,
    topic_denied,
)
from kafkette.broker.throttled_log import storage_errors
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.replica_manager import ReplicaManager
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.offsets")

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5


READ_COMMITTED = 1


def _lookup(
    partition: Partition, timestamp: int, isolation_level: int = 0, cluster: bool = False
) -> tuple[int, int]:
    """Worker thread: (timestamp, offset) for one ListOffsets query."""
    log_ = partition.log
    if timestamp == LATEST:
        if isolation_level == READ_COMMITTED:
            return -1, log_.last_stable_offset
        return -1, log_.high_watermark
    if timestamp == LATEST_TIERED:
        return -1, log_.high_watermark
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log_.log_start_offset
    # As Kafka: a timestamp answer at or past what the isolation level may
    # fetch (the LSO for read_committed) is "none".
    if isolation_level == READ_COMMITTED:
        fetchable: int | None = log_.last_stable_offset
    else:
        fetchable = log_.high_watermark if cluster else None
    if timestamp == MAX_TIMESTAMP:
        found = log_.max_timestamp_offset()
        if found is None:
            return -1, -1
        answer = exact_record(partition.log, found[0], found[1], at_least=False)
    else:
        found = log_.offset_for_timestamp(timestamp)
        if found is None:
            return -1, -1
        answer = exact_record(partition.log, found[0], timestamp, at_least=True)
    if fetchable is not None and answer[1] >= fetchable:
        return -1, -1
    return answer


def _partition_or_error(
    broker: Broker, replicas: ReplicaManager | None, topic: str, index: int, epoch: int
) -> Partition | ErrorCode:
    """The partition to answer for: on a cluster, only if led here in the client's epoch."""
    if replicas is not None:
        return replicas.leader_partition(topic, index, epoch)
    partition = broker.topics.partition(topic, index)
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if partition is None else partition


async def handle_list_offsets(broker: Broker, request: Request) -> dict:
    isolation_level = request.body.get("isolation_level", 0)
    replicas = broker.cluster.replicas if broker.cluster is not None else None
    queries: list[tuple[Partition, int, dict]] = []
    topics = []
    for topic in request.body["topics"]:
        results = []
        refused = topic_denied(broker, request, DESCRIBE, topic["name"])
        for query in topic["partitions"]:
            result = {
                "partition_index": query["partition_index"],
                "error_code": 0,
                "old_style_offsets": [],
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": LEADER_EPOCH,
            }
            if refused:
                result["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                result["leader_epoch"] = -1
                results.append(result)
                continue
            partition = _partition_or_error(
                broker,
                replicas,
                topic["name"],
                query["partition_index"],
                query.get("current_leader_epoch", -1),
            )
            if isinstance(partition, ErrorCode):
                result["error_code"] = int(partition)
                result["leader_epoch"] = -1
            else:
                result["leader_epoch"] = partition.leader_epoch
                queries.append((partition, query["timestamp"], result))
            results.append(result)
        topics.append({"name": topic["name"], "partitions": results})

    def run() -> None:
        for partition, timestamp, result in queries:
            try:
                result["timestamp"], result["offset"] = _lookup(
                    partition, timestamp, isolation_level, replicas is not None
                )
            except OSError as exc:
                subject = f"{partition.topic}-{partition.index}"
                storage_errors.failure("ListOffsets on", subject, exc)
                result["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            except Exception:
                log.exception("ListOffsets on %s-%d failed", partition.topic, partition.index)
                result["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    if queries:
        await trio.to_thread.run_sync(run)
    return {"throttle_time_ms": 0, "topics": topics}


async def handle_offset_for_leader_epoch(broker: Broker, request: Request) -> dict:
    if broker.authorizer is not None:
        refusal = _refused_epoch_queries(broker, request)
        if refusal is not None:
            return refusal
    if broker.cluster is not None:
        return _offsets_for_leader_epochs(broker.cluster.replicas, request.body)
    return {"throttle_time_ms": 0, "topics": _local_epoch_answers(broker, request.body["topics"])}


def _local_epoch_answers(broker: Broker, wanted: list[dict]) -> list[dict]:
    topics = []
    for topic in wanted:
        results = []
        for query in topic["partitions"]:
            result = {
                "error_code": 0,
                "partition": query["partition"],
                "leader_epoch": -1,
                "end_offset": -1,
            }
            partition = broker.topics.partition(topic["topic"], query["partition"])
            if partition is None:
                result["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif query["current_leader_epoch"] > LEADER_EPOCH:
                result["error_code"] = int(ErrorCode.UNKNOWN_LEADER_EPOCH)
            elif query["leader_epoch"] >= LEADER_EPOCH:
                result["leader_epoch"] = LEADER_EPOCH
                result["end_offset"] = partition.log.log_end_offset
            results.append(result)
        topics.append({"topic": topic["topic"], "partitions": results})
    return topics


def _refused_epoch_queries(broker: Broker, request: Request) -> dict | None:
    """Kafka's checks (KafkaApis.handleOffsetForLeaderEpochRequest, since KIP-320):
    CLUSTER_ACTION on the cluster (a replica) allows every topic; else each topic
    needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED), whatever the replica_id says. None
    when nothing is refused; else the answer, with the allowed topics' part computed
    as usual."""
    body = request.body
    if not cluster_denied(broker, request, CLUSTER_ACTION, quiet=True):
        return None
    denied = {t["topic"] for t in body["topics"]
              if topic_denied(broker, request, DESCRIBE, t["topic"])}
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not denied:
        return None
    allowed = [t for t in body["topics"] if t["topic"] not in denied]
    if broker.cluster is not None:
        answer = _offsets_for_leader_epochs(broker.cluster.replicas, {"topics": allowed})
    else:
        answer = {"throttle_time_ms": 0, "topics": _local_epoch_answers(broker, allowed)}
    for topic in body["topics"]:
        if topic["topic"] in denied:
            answer["topics"].append({
                "topic": topic["topic"],
                "partitions": [
                    {"error_code": int(code), "partition": q["partition"],
                     "leader_epoch": -1, "end_offset": -1}
                    for q in topic["partitions"]
                ],
            })
    return answer


def _offsets_for_leader_epochs(replicas: ReplicaManager, body: dict) -> dict:
    """Cluster mode: the end offset of the requested epoch, from the leader's epoch cache.

    Kafka answers (requested epoch or the largest below it, the start of the
    next epoch, or the LEO for the latest); (-1, -1) when the epoch predates
    everything the cache holds.
    """
    topics = []
    for topic in body["topics"]:
        results = []
        for query in topic["partitions"]:
            result = {
                "error_code": 0,
                "partition": query["partition"],
                "leader_epoch": -1,
                "end_offset": -1,
            }
            led = replicas.leader_partition(
                topic["topic"], query["partition"], query["current_leader_epoch"]
            )
            if isinstance(led, ErrorCode):
                result["error_code"] = int(led)
            else:
                result["leader_epoch"], result["end_offset"] = led.log.end_offset_for_epoch(
                    query["leader_epoch"]
                )
            results.append(result)
        topics.append({"topic": topic["topic"], "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


async def handle_delete_records(broker: Broker, request: Request) -> dict:
    replicas = broker.cluster.replicas if broker.cluster is not None else None
    topics = []
    for topic in request.body["topics"]:
        results = []
        refused = topic_denied(broker, request, DELETE, topic["name"])
        for query in topic["partitions"]:
            result = {
                "partition_index": query["partition_index"],
                "low_watermark": -1,
                "error_code": 0,
            }
            results.append(result)
            if refused:
                result["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            partition = _partition_or_error(
                broker, replicas, topic["name"], query["partition_index"], -1
            )
            if isinstance(partition, ErrorCode):
                result["error_code"] = int(partition)
                continue
            offset = query["offset"]
            high_watermark = partition.log.high_watermark
            if offset == -1:
                offset = high_watermark
            if offset < 0 or offset > high_watermark:
                result["error_code"] = int(ErrorCode.OFFSET_OUT_OF_RANGE)
                continue
            async with partition.append_lock:
                result["low_watermark"] = await trio.to_thread.run_sync(
                    partition.log.delete_records_before, offset
                )
            log.info(
                "deleted records of %s-%d before %d",
                topic["name"],
                query["partition_index"],
                offset,
            )
        topics.append({"name": topic["name"], "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
