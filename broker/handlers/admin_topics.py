"""CreateTopics, DeleteTopics, CreatePartitions: the topic admin API.

Replication factors and manual assignments are checked first by
``broker.topology`` (a single node takes only itself: Kafka's
INVALID_REPLICATION_FACTOR / INVALID_REPLICA_ASSIGNMENT otherwise), then
``broker.topics`` makes the change: in a cluster the replicas are assigned over
the live brokers as Kafka does (or taken from the request's assignments), written
to ZooKeeper, and the answer waits, up to the request's ``timeout_ms``, until the
partitions have leaders (REQUEST_TIMED_OUT after it; ``timeout_ms`` <= 0 answers
at once, as Kafka).
``validate_only`` checks everything and changes nothing.

Request-wide limits come first, as in Kafka's controller: a CreateTopics asking
for more than 10,000 partitions in all, or a CreatePartitions adding more than
10,000, is refused for every topic in it (POLICY_VIOLATION) and nothing is made.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.handlers.config_entries import topic_config_entries
from kafkette.broker.security.authorizer.checks import (
    ALTER,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    cluster_denied,
    topic_denied,
)
from kafkette.broker.topics import (
    EXCESSIVE_BATCH_MESSAGE,
    EXCESSIVE_PARTITIONS_MESSAGE,
    MAX_PARTITIONS_PER_REQUEST,
    MAX_RECORDS_PER_USER_OP,
    TopicError,
)
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.admin")


def _requested_partitions(broker: Broker, topics: list[dict]) -> int:
    """Kafka's ``validateTotalNumberOfPartitions``: what the request asks for in all."""
    total = 0
    for topic in topics:
        if topic["assignments"]:
            total += len(topic["assignments"])
        elif topic["num_partitions"] == -1:
            total += broker.config.num_partitions
        elif topic["num_partitions"] > 0:
            total += topic["num_partitions"]
    return total


async def handle_create_topics(broker: Broker, request: Request) -> dict:
    body = request.body
    validate_only = body["validate_only"]
    seen: set[str] = set()
    results = []
    too_many = _requested_partitions(broker, body["topics"]) > MAX_PARTITIONS_PER_REQUEST
    if too_many:
        log.info("CreateTopics refused: %s", EXCESSIVE_PARTITIONS_MESSAGE)
    # Kafka: CREATE on the cluster, or else CREATE on each topic.
    check_topics = cluster_denied(broker, request, CREATE, quiet=True)
    for topic in body["topics"]:
        name = topic["name"]
        result = {
            "name": name,
            "topic_id": ZERO_UUID,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        results.append(result)
        try:
            if too_many:
                raise TopicError(ErrorCode.POLICY_VIOLATION, EXCESSIVE_PARTITIONS_MESSAGE)
            if name in seen:
                raise TopicError(
                    ErrorCode.INVALID_REQUEST, f"topic '{name}' appears twice in the request"
                )
            seen.add(name)
            if check_topics and topic_denied(broker, request, CREATE, name):
                raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            assignments = topic["assignments"]
            partitions = topic["num_partitions"]
            if assignments:
                if partitions != -1:
                    raise TopicError(
                        ErrorCode.INVALID_REQUEST, "both num_partitions and assignments set"
                    )
                partitions = len(assignments)
            elif partitions == -1:
                partitions = broker.config.num_partitions
            broker.topology.check_new_topic(
                topic["replication_factor"], [a["broker_ids"] for a in assignments]
            )
            configs = {c["name"]: c["value"] for c in topic["configs"]}
            null_configs = [k for k, v in configs.items() if v is None]
            if null_configs:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    "Null value not supported for topic configs: " + ",".join(null_configs),
                )
            meta = await broker.topics.create(
                name, partitions, configs, validate_only=validate_only,
                replication_factor=topic["replication_factor"],
                assignment={a["partition_index"]: a["broker_ids"] for a in assignments},
                timeout_s=body["timeout_ms"] / 1000,
            )
        except TopicError as exc:
            log.info("CreateTopics %s refused: %s", name, exc.message)
            result["error_code"] = int(exc.code)
            result["error_message"] = exc.message
            continue
        if meta is not None:
            result["topic_id"] = meta.topic_id
            log.info("created topic %s with %d partitions", name, partitions)
        result["num_partitions"] = partitions
        result["replication_factor"] = broker.topology.replication_factor(
            name, topic["replication_factor"], [a["broker_ids"] for a in topic["assignments"]]
        )
        if topic_denied(broker, request, DESCRIBE_CONFIGS, name, quiet=True):
            # Kafka leaves the configs out for a principal that may not describe them.
            result["topic_config_error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            continue
        result["configs"] = [
            {k: e[k] for k in ("name", "value", "read_only", "config_source", "is_sensitive")}
            for e in topic_config_entries(broker, name, overrides=configs)
        ]
    return {"throttle_time_ms": 0, "topics": results}


async def handle_delete_topics(broker: Broker, request: Request) -> dict:
    body = request.body
    wanted = body["topic_names"] or [t["name"] for t in body["topics"] if t["name"]]
    by_id = [t["topic_id"] for t in body["topics"] if not t["name"]]
    results = []
    # Kafka's controller: DELETE on the cluster, or else DELETE on each topic. A
    # refusal tells nothing the principal may not see: a name it may not delete gets
    # ZERO_UUID (as a missing topic does), and an id it may not delete gets its name
    # only when it may DESCRIBE the topic (ControllerApis.deleteTopics).
    check_topics = cluster_denied(broker, request, DELETE, quiet=True)
    for topic_id in by_id:
        meta = broker.topics.by_id(topic_id)
        if meta is None:
            results.append(
                {
                    "name": None,
                    "topic_id": topic_id,
                    "error_code": int(ErrorCode.UNKNOWN_TOPIC_ID),
                    "error_message": "unknown topic id",
                }
            )
        elif check_topics and topic_denied(broker, request, DELETE, meta.name):
            describable = not topic_denied(broker, request, DESCRIBE, meta.name, quiet=True)
            results.append(
                {
                    "name": meta.name if describable else None,
                    "topic_id": topic_id,
                    "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                    "error_message": None,
                }
            )
        else:
            wanted.append(meta.name)
    for name in wanted:
        if check_topics and topic_denied(broker, request, DELETE, name):
            results.append(
                {
                    "name": name,
                    "topic_id": ZERO_UUID,
                    "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                    "error_message": None,
                }
            )
            continue
        meta = broker.topics.metadata(name)
        result = {
            "name": name,
            "topic_id": meta.topic_id if meta else ZERO_UUID,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        try:
            await broker.topics.delete(name, timeout_s=body["timeout_ms"] / 1000)
            log.info("deleted topic %s", name)
        except TopicError as exc:
            result["error_code"] = int(exc.code)
            result["error_message"] = exc.message
        results.append(result)
    return {"throttle_time_ms": 0, "responses": results}


def _added_partitions(broker: Broker, topics: list[dict]) -> int:
    """New partitions the request would make in all (its metadata records in KRaft)."""
    total = 0
    for topic in topics:
        meta = broker.topics.metadata(topic["name"])
        current = 0 if meta is None else meta.partitions
        if current and topic["count"] > current:
            total += topic["count"] - current
    return total


async def handle_create_partitions(broker: Broker, request: Request) -> dict:
    body = request.body
    results = []
    # Kafka's controller collects one request's records in one bounded list.
    too_many = _added_partitions(broker, body["topics"]) > MAX_RECORDS_PER_USER_OP
    if too_many:
        log.info("CreatePartitions refused: %s", EXCESSIVE_BATCH_MESSAGE)
    for topic in body["topics"]:
        result = {"name": topic["name"], "error_code": ErrorCode.NONE, "error_message": None}
        try:
            if topic_denied(broker, request, ALTER, topic["name"]):
                raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            if too_many:
                raise TopicError(ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
            assignments = topic["assignments"]
            broker.topology.check_new_partitions([a["broker_ids"] for a in assignments or []])
            await broker.topics.add_partitions(
                topic["name"], topic["count"], validate_only=body["validate_only"],
                assignments=None if assignments is None
                else [a["broker_ids"] for a in assignments],
                timeout_s=body["timeout_ms"] / 1000,
            )
        except TopicError as exc:
            result["error_code"] = int(exc.code)
            result["error_message"] = exc.message
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
