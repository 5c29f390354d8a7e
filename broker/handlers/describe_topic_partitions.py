"""DescribeTopicPartitions (API 75, KIP-966): what ``kafka-topics.sh --describe`` asks first.

Kafka 4.0's admin client describes topics with this API when the broker offers it
and falls back to Metadata otherwise; the fallback prints ``Elr: N/A`` where Kafka
prints the (empty) eligible leader replica lists. The partitions are the same ones
Metadata answers (``cluster.topic_entry``: leader, leader epoch, replicas, ISR,
offline replicas, from the broker's cluster snapshot in cluster mode), with Kafka's
paging: topics in name order, at most ``response_partition_limit`` partitions
(capped at 2000, Kafka's ``max.request.partition.size.limit`` default), starting at
``cursor`` and answering ``next_cursor`` where it stopped (a cursor on a topic
the request does not name: INVALID_REQUEST for every topic the request names, in
its order and with its repeats, as Kafka 4.0).
Every topic carries its authorized operations, as Kafka's (the request has no
flag for them). kafkette elects no
eligible leader replicas (Kafka 4.0's default: ELR off), so both lists are empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.handlers.metadata import TOPIC_OPERATIONS_ALL, topic_entry
from kafkette.broker.internal_topics import INTERNAL_TOPICS
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    TOPIC,
    authorized_operations,
    topic_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

PARTITION_LIMIT = 2000


def _operations(broker: Broker, request: Request, name: str) -> int:
    """Kafka answers every topic's authorized operations, asked or not (no such flag)."""
    if broker.authorizer is None:
        return TOPIC_OPERATIONS_ALL
    return authorized_operations(broker, request, TOPIC, name)


async def handle_describe_topic_partitions(broker: Broker, request: Request) -> dict:
    body = request.body
    known = set(broker.topology.topic_names())
    requested = [t["name"] for t in body["topics"]]
    if requested:
        names = sorted(set(requested))
    else:  # all topics: Kafka leaves out the ones the principal may not describe
        names = sorted(
            n for n in known if not topic_denied(broker, request, DESCRIBE, n, quiet=True)
        )
    limit = max(1, min(body["response_partition_limit"], PARTITION_LIMIT))
    cursor = body.get("cursor")
    if cursor is not None:
        if requested and cursor["topic_name"] not in names:
            # Kafka 4.0: a cursor outside the named topics makes the request invalid;
            # each topic as the request names it (its order, repeats kept).
            return {"throttle_time_ms": 0, "next_cursor": None, "topics": [
                {"error_code": ErrorCode.INVALID_REQUEST, "name": name, "is_internal": False,
                 "partitions": []} for name in requested
            ]}
        names = [n for n in names if n >= cursor["topic_name"]]
    topics: list[dict] = []
    next_cursor = None
    left = limit
    for name in names:
        if requested and topic_denied(broker, request, DESCRIBE, name):
            topics.append(
                {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name,
                 "is_internal": False, "partitions": []}
            )
            continue
        if name not in known:
            topics.append(
                {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                 "is_internal": False, "partitions": [],
                 "topic_authorized_operations": _operations(broker, request, name)}
            )
            continue
        entry = topic_entry(broker, name)
        partitions = entry["partitions"]
        if cursor is not None and name == cursor["topic_name"]:
            start = cursor["partition_index"]
            partitions = [p for p in partitions if p["partition_index"] >= start]
        if left <= 0 and partitions:
            next_cursor = {"topic_name": name, "partition_index": partitions[0]["partition_index"]}
            break
        if len(partitions) > left:
            rest = partitions[left]
            partitions = partitions[:left]
            next_cursor = {"topic_name": name, "partition_index": rest["partition_index"]}
        # Copies: Metadata's partition entries may be shared between responses.
        partitions = [
            {**partition, "eligible_leader_replicas": [], "last_known_elr": []}
            for partition in partitions
        ]
        left -= len(partitions)
        topics.append(
            {
                "error_code": entry["error_code"],
                "name": name,
                "topic_id": entry["topic_id"],
                "is_internal": name in INTERNAL_TOPICS,
                "partitions": partitions,
                "topic_authorized_operations": _operations(broker, request, name),
            }
        )
        if next_cursor is not None:
            break
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}
