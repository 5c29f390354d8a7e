"""AlterPartitionReassignments (45) and ListPartitionReassignments (46).

``kafka-reassign-partitions.sh`` and AdminClient ``alterPartitionReassignments``
/ ``listPartitionReassignments``. Only the controller answers, as in Kafka: any
other broker answers NOT_CONTROLLER (41) as the top-level error, and the admin
client refreshes Metadata (whose ``controller_id`` names the controller) and
asks it. The controller records the move in ``/brokers/topics/<t>``
(``adding_replicas``/``removing_replicas``) and completes it once the new
replicas are in sync (``broker/cluster/reassignment.py``). The answer says the
reassignment started (or was cancelled), not that it finished; it waits, up to
``timeout_ms``, until this broker's view shows the new assignment, so a
ListPartitionReassignments right after it lists the move.

On a single node the one broker holds every replica: a target of exactly that
broker is accepted (nothing moves), another broker is INVALID_REPLICA_ASSIGNMENT,
a cancel is NO_REASSIGNMENT_IN_PROGRESS, and nothing is ever listed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import ALTER, DESCRIBE, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.admin")

Key = tuple[str, int]
Result = tuple[ErrorCode, "str | None"]


def _requests(body: dict) -> dict[Key, tuple[int, ...] | None]:
    wanted: dict[Key, tuple[int, ...] | None] = {}
    for topic in body["topics"]:
        for part in topic["partitions"]:
            replicas = part["replicas"]
            wanted[(topic["name"], part["partition_index"])] = (
                None if replicas is None else tuple(replicas)
            )
    return wanted


def _single_node(broker: Broker, wanted: dict[Key, tuple[int, ...] | None]) -> dict[Key, Result]:
    results: dict[Key, Result] = {}
    for (topic, index), target in wanted.items():
        if not broker.topics.has_partition(topic, index):
            results[(topic, index)] = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
            )
        elif target is None:
            results[(topic, index)] = (
                ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                f"No reassignment in progress for partition {topic}-{index}.",
            )
        elif list(target) != [broker.node_id]:
            results[(topic, index)] = (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment has brokers that are not alive. Replica list:"
                f" {list(target)}, live broker list: [{broker.node_id}]",
            )
        else:
            results[(topic, index)] = (ErrorCode.NONE, None)
    return results


async def handle_alter_partition_reassignments(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    allow_rf_change = body.get("allow_replication_factor_change", True) if version >= 1 else True
    wanted = _requests(body)
    node = broker.cluster
    top_error, results = ErrorCode.NONE, {}
    if cluster_denied(broker, request, ALTER):
        top_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif node is None:
        results = _single_node(broker, wanted)
    elif not node.controller.active:
        top_error = ErrorCode.NOT_CONTROLLER
    else:
        results = await node.controller.alter_reassignments(wanted, allow_rf_change)
        if any(code == ErrorCode.NOT_CONTROLLER for code, _ in results.values()):
            top_error, results = ErrorCode.NOT_CONTROLLER, {}
        else:
            await _wait_until_shown(broker, wanted, results, body["timeout_ms"] / 1000)
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "error_code": int(code), "error_message": message}
        )
    response = {
        "throttle_time_ms": 0,
        "error_code": int(top_error),
        "error_message": (
            "This is not the correct controller for this cluster."
            if top_error == ErrorCode.NOT_CONTROLLER
            else None
        ),
        "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
    if version >= 1:
        response["allow_replication_factor_change"] = allow_rf_change
    return response


async def _wait_until_shown(
    broker: Broker,
    wanted: dict[Key, tuple[int, ...] | None],
    results: dict[Key, Result],
    timeout_s: float,
) -> None:
    """Until this broker's view has every accepted request's new assignment: a target
    shows as the partition moving to it (or already there), a cancel as the partition
    no longer heading for the cancelled target."""
    node = broker.cluster
    assert node is not None
    accepted = {k: wanted[k] for k, (code, _) in results.items() if code == ErrorCode.NONE}
    if not accepted:
        return

    def shown(metadata: ClusterMetadata) -> bool:
        for (topic, index), target in accepted.items():
            info = metadata.topics.get(topic)
            if info is None or index not in info.replicas:
                return False
            if target is None:
                if info.adding.get(index):
                    return False
            elif info.target_replicas(index) != target:
                return False
        return True

    await node.wait_for(shown, timeout_s)


async def handle_list_partition_reassignments(broker: Broker, request: Request) -> dict:
    body = request.body
    node = broker.cluster
    top_error = ErrorCode.NONE
    listed: dict[str, list[dict]] = {}
    if cluster_denied(broker, request, DESCRIBE):
        top_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif node is not None and not node.controller.active:
        top_error = ErrorCode.NOT_CONTROLLER
    elif node is not None:
        metadata = node.metadata
        if body["topics"] is None:
            asked = [
                (name, p) for name, t in sorted(metadata.topics.items()) for p in sorted(t.replicas)
            ]
        else:
            asked = [(t["name"], p) for t in body["topics"] for p in t["partition_indexes"]]
        for name, p in asked:
            info = metadata.topics.get(name)
            if info is None or p not in info.replicas or not info.reassigning(p):
                continue  # Kafka lists only ongoing reassignments, unknown ones silently
            listed.setdefault(name, []).append(
                {
                    "partition_index": p,
                    "replicas": list(info.replicas[p]),
                    "adding_replicas": list(info.adding.get(p, ())),
                    "removing_replicas": list(info.removing.get(p, ())),
                }
            )
    return {
        "throttle_time_ms": 0,
        "error_code": int(top_error),
        "error_message": (
            "This is not the correct controller for this cluster."
            if top_error == ErrorCode.NOT_CONTROLLER
            else None
        ),
        "topics": [{"name": name, "partitions": parts} for name, parts in listed.items()],
    }
