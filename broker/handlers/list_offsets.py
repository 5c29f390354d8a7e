"""ListOffsets: the offset for "latest", "earliest", a timestamp or the max timestamp.

"Latest" is the log end offset (last offset + 1), or the last stable offset
for ``isolation_level=1`` (read_committed, as Kafka); "earliest" the log start
offset. A timestamp query finds the first batch whose max timestamp reaches it
through the time index, then decodes that one batch to answer the exact first
record, as Kafka does (ListOffsets is not on the produce/fetch hot path); the
max-timestamp query likewise answers the record that carries it
(``partitions/offset_lookup.py``).

Each partition is the one ``TopicRegistry.serving`` finds: in a cluster only
the leader answers, in the client's ``current_leader_epoch`` (Kafka's fencing
errors otherwise); "latest" is the high watermark (the log's HW is explicit
there) and no timestamp query answers an offset at or past it. A leader whose HW has
not yet reached the start offset of its epoch answers OFFSET_NOT_AVAILABLE for those
(Kafka's rule for clients' queries, v2+).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partitions import LEADER_EPOCH, Partition
from kafkette.broker.partitions.offset_lookup import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
)
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    topic_denied,
)
from kafkette.broker.throttled_log import storage_errors
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.offsets")


def _not_known_yet(partition: Partition, timestamp: int, answered: int) -> bool:
    """Kafka's OFFSET_NOT_AVAILABLE: a new leader's HW is still below its epoch's start
    offset, so "latest" (and a timestamp found nowhere below that HW) may be short of
    what the previous leader had committed; the client retries."""
    if not partition.high_watermark_behind_epoch_start:
        return False
    return timestamp in (LATEST, LATEST_TIERED) or (
        timestamp not in (EARLIEST, EARLIEST_LOCAL) and answered == -1)


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
                "error_code": ErrorCode.NONE,
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

    client_query = request.header.api_version >= 2  # Kafka: an isolation level is given

    def run() -> None:
        for partition, timestamp, result in queries:
            try:
                result["timestamp"], result["offset"] = partition.offset_for_timestamp(
                    timestamp, isolation_level
                )
                if client_query and _not_known_yet(partition, timestamp, result["offset"]):
                    result["timestamp"] = result["offset"] = -1
                    result["error_code"] = int(ErrorCode.OFFSET_NOT_AVAILABLE)
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
