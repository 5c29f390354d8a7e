"""OffsetForLeaderEpoch: where an epoch ends in the leader's log (followers and
clients truncate by it).

Answered by ``Partition.end_offset_for_epoch`` (the leader-epoch cache). With one node
and leader epoch 0 for ever, the answer for any epoch a client can hold is the log end
offset.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import (
    CLUSTER_ACTION,
    DESCRIBE,
    cluster_denied,
    topic_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.offsets")


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
                "error_code": ErrorCode.NONE,
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
