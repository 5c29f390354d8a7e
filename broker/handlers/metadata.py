"""Metadata and DescribeCluster: who the broker is and which topics it leads.

Metadata auto-creates requested topics with ``num.partitions`` when
``auto.create.topics.enable`` and the client allow it (never an internal
topic). A request for all topics lists the internal ones too
(``__consumer_offsets``, ``__transaction_state``) with ``is_internal`` true, as
Kafka does: clients leave them out themselves (``exclude.internal.topics``).
Topics are named by id from v12 (``broker/topic_ids.py``, one dict read);
an unknown id answers UNKNOWN_TOPIC_ID.

The brokers, the controller and each partition's leader, epoch, replicas, ISR
and offline replicas come from ``broker.topology`` (``broker/topology.py``): this
node alone, or a cluster's snapshot, which every broker builds from the same
znodes, so every broker answers alike. An auto-created topic the topology does
not know yet (a cluster elects its leaders first) is answered at once with
LEADER_NOT_AVAILABLE; clients ask again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.internal_topics import INTERNAL_TOPICS
from kafkette.broker.security.authorizer.checks import (
    CLUSTER,
    CREATE,
    DESCRIBE,
    TOPIC,
    authorized_operations,
    cluster_denied,
    topic_denied,
)
from kafkette.broker.security.session import listener_of
from kafkette.broker.throttled_log import ThrottledLog
from kafkette.broker.topic_ids import topic_name
from kafkette.broker.topics import TopicError, topic_name_problem
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.metadata")
# A client asking for an invalid name asks again several times a second until it gives up
# (librdkafka's metadata refresh): one line a minute, with a count of the others, is enough
# to say why it gets INVALID_TOPIC_EXCEPTION. One kind for every name: a client inventing
# names cannot grow the throttle's table.
invalid_names = ThrottledLog(log)

# Kafka's "authorized operations" bitmasks (bit n = AclOperation code n) when every
# operation is allowed, since there are no ACLs. Topic: READ 3, WRITE 4, CREATE 5,
# DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11. Cluster: CREATE 5,
# ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS_ALL = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS_ALL = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
OPERATIONS_NOT_REQUESTED = -2147483648


def broker_entries(broker: Broker, request: Request, *, key: str = "node_id") -> list[dict]:
    """Every broker at its endpoint for the listener ``request`` came in on (Kafka)."""
    return [
        {key: b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in broker.topology.brokers(listener_of(request))
    ]


def topic_entry(
    broker: Broker, name: str, error: int = 0, include_ops: bool = False, version: int = 12
) -> dict:
    topology = broker.topology
    topic_id = topology.topic_id(name)
    return {
        "error_code": error,
        "name": name,
        "topic_id": ZERO_UUID if topic_id is None else topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": topology.partition_entries(name, version),
        "topic_authorized_operations": TOPIC_OPERATIONS_ALL
        if include_ops
        else OPERATIONS_NOT_REQUESTED,
    }


async def handle_metadata(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    requested = body["topics"]
    include_ops = bool(body.get("include_topic_authorized_operations"))
    allow_create = body["allow_auto_topic_creation"] if version >= 4 else True
    if requested is None or (version == 0 and not requested):
        # Internal topics too, is_internal=true: clients filter them.
        names = broker.topology.topic_names()
        if broker.authorizer is not None:  # Kafka leaves out what may not be described
            names = [n for n in names if not topic_denied(broker, request, DESCRIBE, n, quiet=True)]
        topics = [topic_entry(broker, n, include_ops=include_ops, version=version)
                  for n in names]
    else:
        topics = []
        for wanted in requested:
            name = wanted.get("name")
            if name is None:
                name = topic_name(broker, wanted.get("topic_id"))
                if wanted.get("topic_id") in (None, ZERO_UUID):
                    # Neither name nor id: Kafka 4.0 answers UNKNOWN_SERVER_ERROR, name "".
                    topics.append(
                        {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "name": "",
                         "topic_id": ZERO_UUID, "partitions": []}
                    )
                    continue
                if name is None:
                    topics.append(
                        {
                            "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                            "name": None,
                            "topic_id": wanted.get("topic_id"),
                            "partitions": [],
                        }
                    )
                    continue
                if topic_denied(broker, request, DESCRIBE, name):
                    topics.append(_unauthorized(None, wanted.get("topic_id")))
                    continue
            elif topic_denied(broker, request, DESCRIBE, name):
                topics.append(_unauthorized(name))
                continue
            topics.append(
                await _requested_topic(
                    broker, request, name, allow_create, include_ops, version
                )
            )
    if include_ops and broker.authorizer is not None:
        for entry in topics:
            if entry["error_code"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED and entry["name"]:
                entry["topic_authorized_operations"] = authorized_operations(
                    broker, request, TOPIC, entry["name"]
                )
    response = {
        "throttle_time_ms": 0,
        "brokers": broker_entries(broker, request),
        "cluster_id": broker.cluster_id,
        "controller_id": broker.topology.controller_id,
        "topics": topics,
    }
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = _cluster_operations(broker, request)
    return response


def _cluster_operations(broker: Broker, request: Request) -> int:
    """Kafka: the cluster's authorized operations for a principal that may DESCRIBE
    the cluster, else 0."""
    if broker.authorizer is None:
        return CLUSTER_OPERATIONS_ALL
    if cluster_denied(broker, request, DESCRIBE):
        return 0
    return authorized_operations(broker, request, CLUSTER)


def _unauthorized(name: str | None, topic_id=ZERO_UUID) -> dict:
    return {
        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "name": name,
        "topic_id": topic_id if name is None else ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
    }


async def _requested_topic(
    broker: Broker, request: Request, name: str, allow_create: bool, include_ops: bool,
    version: int,
) -> dict:
    if broker.topology.has_topic(name):
        return topic_entry(broker, name, include_ops=include_ops, version=version)
    problem = topic_name_problem(name)
    if problem:
        # The problem names the topic where it matters (never one over 249 characters).
        invalid_names.log(
            "invalid topic name", logging.INFO, f"metadata for an invalid topic name: {problem}"
        )
        return topic_entry(broker, name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if not (allow_create and broker.config.auto_create_topics) or name in INTERNAL_TOPICS:
        return topic_entry(broker, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if broker.authorizer is not None and cluster_denied(broker, request, CREATE, quiet=True) and (
        topic_denied(broker, request, CREATE, name)
    ):  # Kafka: auto-creation needs CREATE on the cluster or the topic
        return _unauthorized(name)
    try:
        # In a cluster: written to ZooKeeper, answered before the leaders are elected.
        await broker.topics.create(name, broker.config.num_partitions, {}, timeout_s=0)
        log.info("auto-created topic %s with %d partitions", name, broker.config.num_partitions)
    except TopicError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return topic_entry(broker, name, exc.code)
    if not broker.topology.has_topic(name):  # a cluster's leaders are not elected yet
        return topic_entry(broker, name, ErrorCode.LEADER_NOT_AVAILABLE)
    return topic_entry(broker, name, include_ops=include_ops, version=version)


# DescribeCluster endpoint types (v1+): kafkette has no separate controller listeners.
ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS = 1, 2


async def handle_describe_cluster(broker: Broker, request: Request) -> dict:
    """Kafka 4.0's broker answer: the brokers (v2: each with ``is_fenced``; kafkette
    registers no fenced broker, so ``include_fenced_brokers`` adds none), and for a
    controller endpoint type MISMATCHED_ENDPOINT_TYPE, as a broker listener answers
    it (``kafka-cluster.sh``/Admin clients with ``--bootstrap-controller`` need a
    KRaft controller listener, which kafkette does not have)."""
    include_ops = request.body.get("include_cluster_authorized_operations")
    endpoint_type = request.body.get("endpoint_type", ENDPOINT_BROKERS)
    if endpoint_type != ENDPOINT_BROKERS:
        if endpoint_type == ENDPOINT_CONTROLLERS:
            code, message = ErrorCode.MISMATCHED_ENDPOINT_TYPE, (
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER"
            )
        else:
            code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, (
                f"Unsupported endpoint type {endpoint_type}"
            )
        return {
            "throttle_time_ms": 0,
            "error_code": int(code),
            "error_message": message,
            "endpoint_type": ENDPOINT_BROKERS,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
        }
    brokers = broker_entries(broker, request, key="broker_id")
    for entry in brokers:
        entry["is_fenced"] = False
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKERS,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.topology.controller_id,
        "brokers": brokers,
        "cluster_authorized_operations": _cluster_operations(broker, request)
        if include_ops
        else OPERATIONS_NOT_REQUESTED,
    }
