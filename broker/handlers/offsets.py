"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords: questions about a log's offsets.

"Latest" is the log end offset (last offset + 1), or the last stable offset
for ``isolation_level=1`` (read_committed, as Kafka); "earliest" the log start
offset. A timestamp query finds the first batch whose max timestamp reaches it
through the time index, then decodes that one batch to answer the exact first
record, as Kafka does (ListOffsets is not on the produce/fetch hot path); the
max-timestamp query likewise answers the record that carries it.
With one node and leader epoch 0 for ever, OffsetForLeaderEpoch's answer for
any epoch a client can hold is the log end offset.

Each partition is the one ``TopicRegistry.serving`` finds: in a cluster only
the leader answers, in the client's ``current_leader_epoch`` (Kafka's fencing
errors otherwise); "latest" is the high watermark (the log's HW is explicit
there) and no timestamp query answers an offset at or past it;
OffsetForLeaderEpoch is answered by ``Partition.end_offset_for_epoch`` (the
leader-epoch cache there, which is what followers truncate by). DeleteRecords
moves the log start through ``Partition.delete_records_before``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partitions import LEADER_EPOCH, Partition
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
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.offsets")

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5


READ_COMMITTED = 1


def _lookup(partition: Partition, timestamp: int, isolation_level: int = 0) -> tuple[int, int]:
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
        fetchable = log_.high_watermark if partition.replicated else None
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


async def handle_list_offsets(broker: Broker, request: Request) -> dict:
    isolation_level = request.body.get("isolation_level", 0)
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
            partition = broker.topics.serving(
                topic["name"], query["partition_index"], query.get("current_leader_epoch", -1)
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
                    partition, timestamp, isolation_level
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
    return {"throttle_time_ms": 0, "topics": _epoch_answers(broker, request.body["topics"])}


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
    answer = {"throttle_time_ms": 0, "topics": _epoch_answers(broker, allowed)}
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


def _epoch_answers(broker: Broker, wanted: list[dict]) -> list[dict]:
    """The end offset of each requested epoch (``Partition.end_offset_for_epoch``), from
    the partition this broker serves in the client's current epoch."""
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
            partition = broker.topics.serving(
                topic["topic"], query["partition"], query["current_leader_epoch"]
            )
            if isinstance(partition, ErrorCode):
                result["error_code"] = int(partition)
            else:
                result["leader_epoch"], result["end_offset"] = partition.end_offset_for_epoch(
                    query["leader_epoch"]
                )
            results.append(result)
        topics.append({"topic": topic["topic"], "partitions": results})
    return topics


async def handle_delete_records(broker: Broker, request: Request) -> dict:
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
            partition = broker.topics.serving(topic["name"], query["partition_index"])
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
            result["low_watermark"] = await partition.delete_records_before(offset)
            log.info(
                "deleted records of %s-%d before %d",
                topic["name"],
                query["partition_index"],
                offset,
            )
        topics.append({"name": topic["name"], "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
