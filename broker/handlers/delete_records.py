"""DeleteRecords: move a partition's log start offset forward.

Only the leader answers (``TopicRegistry.serving``); the log start moves through
``Partition.delete_records_before``, which orders it with appends. A topic deleted
(or a partition moved away, or truncated) while the request waited for the append
lock is answered with the partition's error, not an internal one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import (
    DELETE,
    topic_denied,
)
from kafkette.log.errors import LogClosed, OffsetOutOfRange
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.offsets")


async def handle_delete_records(broker: Broker, request: Request) -> dict:
    topics = []
    for topic in request.body["topics"]:
        results = []
        refused = topic_denied(broker, request, DELETE, topic["name"])
        for query in topic["partitions"]:
            result = {
                "partition_index": query["partition_index"],
                "low_watermark": -1,
                "error_code": ErrorCode.NONE,
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
            high_watermark = partition.high_watermark
            if offset == -1:
                offset = high_watermark
            if offset < 0 or offset > high_watermark:
                result["error_code"] = int(ErrorCode.OFFSET_OUT_OF_RANGE)
                continue
            try:
                result["low_watermark"] = await partition.delete_records_before(offset)
            except LogClosed:
                result["error_code"] = int(partition.closed_error)
                continue
            except OffsetOutOfRange:  # truncated below ``offset`` meanwhile (cluster)
                result["error_code"] = int(ErrorCode.OFFSET_OUT_OF_RANGE)
                continue
            log.info(
                "deleted records of %s-%d before %d",
                topic["name"],
                query["partition_index"],
                offset,
            )
        topics.append({"name": topic["name"], "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
