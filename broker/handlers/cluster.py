"""Metadata and DescribeCluster: who the broker is and which topics it leads.

Metadata auto-creates requested topics with ``num.partitions`` when
``auto.create.topics.enable`` and the client allow it (never an internal
topic). A request for all topics lists the internal ones too
(``__consumer_offsets``, ``__transaction_state``) with ``is_internal`` true, as
Kafka does: clients leave them out themselves (``exclude.internal.topics``).
Topics are named by id from v12 (``broker/topic_ids.py``, one dict read);
an unknown id answers UNKNOWN_TOPIC_ID.

In cluster mode every answer comes from the broker's ``ClusterMetadata``
snapshot, which every broker builds from the same znodes, so every broker
answers alike: the live brokers, the controller, and per partition the
leader (LEADER_NOT_AVAILABLE with leader -1 when it has none or its broker is
gone), leader epoch, replicas, ISR and offline replicas (those on brokers not
registered), as Kafka's ZooKeeper-era metadata cache did. An auto-created topic
is answered at once with LEADER_NOT_AVAILABLE until its leaders are elected;
clients ask again.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from kafkette.broker.partitions import LEADER_EPOCH
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
from kafkette.broker.topic_ids import topic_name
from kafkette.broker.topics import INTERNAL_TOPICS, TopicError, topic_name_problem
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.metadata")

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
    listener = listener_of(request)
    if broker.cluster is not None:
        brokers = broker.cluster.metadata.brokers
        entries = []
        for b in sorted(brokers.values(), key=lambda b: b.id):
            endpoint = b.endpoint_for(listener)
            if endpoint is not None:  # a broker without that listener is left out, as in Kafka
                host, port = endpoint
                entries.append({key: b.id, "host": host, "port": port, "rack": b.rack})
        return entries
    own = broker.endpoint_for(listener)
    return [{key: broker.node_id, "host": own.host, "port": own.port, "rack": None}]


def _cluster_partitions(broker: Broker, name: str, version: int) -> list[dict]:
    assert broker.cluster is not None
    metadata = broker.cluster.metadata
    topic = metadata.topics[name]
    live = metadata.brokers
    partitions = []
    for index, replicas in sorted(topic.replicas.items()):
        state = metadata.states.get((name, index))
        leader = metadata.leader_of(name, index)
        isr = list(state.isr) if state is not None else []
        replica_nodes = list(replicas)
        error = ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE
        if version == 0 and leader >= 0:
            # v0 lists only live replicas and says when some are missing (Kafka's rule).
            replica_nodes = [r for r in replicas if r in live]
            alive_isr = [r for r in isr if r in live]
            if len(replica_nodes) < len(replicas) or len(alive_isr) < len(isr):
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            isr = alive_isr
        partitions.append(
            {
                "error_code": int(error),
                "partition_index": index,
                "leader_id": leader,
                "leader_epoch": state.leader_epoch if state is not None else -1,
                "replica_nodes": replica_nodes,
                "isr_nodes": isr,
                "offline_replicas": [r for r in replicas if r not in live],
            }
        )
    return partitions


def _known(broker: Broker, name: str) -> bool:
    if broker.cluster is not None:
        return name in broker.cluster.metadata.topics
    return broker.topics.metadata(name) is not None


def topic_entry(
    broker: Broker, name: str, error: int = 0, include_ops: bool = False, version: int = 12
) -> dict:
    if broker.cluster is not None:
        topic = broker.cluster.metadata.topics.get(name)
        return {
            "error_code": error,
            "name": name,
            "topic_id": topic.topic_id if topic is not None else ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": _cluster_partitions(broker, name, version) if topic else [],
            "topic_authorized_operations": TOPIC_OPERATIONS_ALL
            if include_ops
            else OPERATIONS_NOT_REQUESTED,
        }
    meta = broker.topics.metadata(name)
    partitions = []
    if meta is not None:
        hosted = broker.topics.partitions(name)
        if hosted and hosted[-1].index == len(hosted) - 1:  # 0..n-1, as a single node has
            partitions = list(_single_node_partitions(broker.node_id, len(hosted)))
        else:
            partitions = [_single_node_partition(broker.node_id, p.index) for p in hosted]
    return {
        "error_code": error,
        "name": name,
        "topic_id": meta.topic_id if meta is not None else ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": TOPIC_OPERATIONS_ALL
        if include_ops
        else OPERATIONS_NOT_REQUESTED,
    }


def _single_node_partition(node: int, index: int) -> dict:
    return {
        "error_code": 0,
        "partition_index": index,
        "leader_id": node,
        "leader_epoch": LEADER_EPOCH,
        "replica_nodes": [node],
        "isr_nodes": [node],
        "offline_replicas": [],
    }


@functools.lru_cache(maxsize=64)
def _single_node_partitions(node: int, count: int) -> tuple[dict, ...]:
    """A single node's partition entries depend only on the partition count: built once per
    count, not per request (a full Metadata over 10,000 partitions spent most of its time
    building these dicts). Shared between responses: callers must not change them."""
    return tuple(_single_node_partition(node, index) for index in range(count))


async def handle_metadata(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    requested = body["topics"]
    include_ops = bool(body.get("include_topic_authorized_operations"))
    allow_create = body["allow_auto_topic_creation"] if version >= 4 else True
    if requested is None or (version == 0 and not requested):
        all_names = (
            list(broker.cluster.metadata.topics) if broker.cluster else broker.topics.names
        )
        names = all_names  # internal topics too, is_internal=true: clients filter them
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
        "controller_id": _controller_id(broker),
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


def _controller_id(broker: Broker) -> int:
    return broker.cluster.metadata.controller_id if broker.cluster else broker.node_id


async def _requested_topic(
    broker: Broker, request: Request, name: str, allow_create: bool, include_ops: bool,
    version: int,
) -> dict:
    if _known(broker, name):
        return topic_entry(broker, name, include_ops=include_ops, version=version)
    problem = topic_name_problem(name)
    if problem:
        log.info("metadata for invalid topic name %r: %s", name, problem)
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
    if broker.cluster is not None and not _known(broker, name):
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
        "error_code": 0,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKERS,
        "cluster_id": broker.cluster_id,
        "controller_id": _controller_id(broker),
        "brokers": brokers,
        "cluster_authorized_operations": _cluster_operations(broker, request)
        if include_ops
        else OPERATIONS_NOT_REQUESTED,
    }
