"""AlterPartitionReassignments (45) and ListPartitionReassignments (46).

``kafka-reassign-partitions.sh`` and AdminClient ``alterPartitionReassignments``
/ ``listPartitionReassignments``. Only the controller answers, as in Kafka: any
other broker answers NOT_CONTROLLER (41) as the top-level error, and the admin
client refreshes Metadata (whose ``controller_id`` names the controller) and
asks it. ``broker.topology`` makes and lists the moves: in a cluster the
controller records the move in ``/brokers/topics/<t>``
(``adding_replicas``/``removing_replicas``) and completes it once the new
replicas are in sync (``broker/cluster/reassignment.py``). The answer says the
reassignment started (or was cancelled), not that it finished; it waits, up to
``timeout_ms``, until this broker's view shows the new assignment, so a
ListPartitionReassignments right after it lists the move. A single node holds
every replica itself: a target of exactly that broker is accepted (nothing
moves), and nothing is ever listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import ALTER, DESCRIBE, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.topology import PartitionKey, PartitionResult
    from kafkette.wire.connection import Request


def _requests(body: dict) -> dict[PartitionKey, tuple[int, ...] | None]:
    wanted: dict[PartitionKey, tuple[int, ...] | None] = {}
    for topic in body["topics"]:
        for part in topic["partitions"]:
            replicas = part["replicas"]
            wanted[(topic["name"], part["partition_index"])] = (
                None if replicas is None else tuple(replicas)
            )
    return wanted


async def handle_alter_partition_reassignments(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    allow_rf_change = body.get("allow_replication_factor_change", True) if version >= 1 else True
    wanted = _requests(body)
    top_error = ErrorCode.NONE
    results: dict[PartitionKey, PartitionResult] = {}
    if cluster_denied(broker, request, ALTER):
        top_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif not broker.topology.is_controller:
        top_error = ErrorCode.NOT_CONTROLLER
    else:
        results = await broker.topology.alter_reassignments(
            wanted, allow_rf_change, body["timeout_ms"] / 1000
        )
        if any(code == ErrorCode.NOT_CONTROLLER for code, _ in results.values()):
            top_error, results = ErrorCode.NOT_CONTROLLER, {}
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "error_code": int(code), "error_message": message}
        )
    response = {
        "throttle_time_ms": 0,
        "error_code": int(top_error),
        "error_message": _top_message(top_error),
        "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
    if version >= 1:
        response["allow_replication_factor_change"] = allow_rf_change
    return response


async def handle_list_partition_reassignments(broker: Broker, request: Request) -> dict:
    body = request.body
    top_error = ErrorCode.NONE
    listed: dict[str, list[dict]] = {}
    if cluster_denied(broker, request, DESCRIBE):
        top_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif not broker.topology.is_controller:
        top_error = ErrorCode.NOT_CONTROLLER
    else:
        asked = None
        if body["topics"] is not None:
            asked = [(t["name"], p) for t in body["topics"] for p in t["partition_indexes"]]
        # Kafka lists only ongoing reassignments, unknown partitions silently left out.
        for move in broker.topology.ongoing_reassignments(asked):
            listed.setdefault(move.topic, []).append(
                {
                    "partition_index": move.partition,
                    "replicas": list(move.replicas),
                    "adding_replicas": list(move.adding),
                    "removing_replicas": list(move.removing),
                }
            )
    return {
        "throttle_time_ms": 0,
        "error_code": int(top_error),
        "error_message": _top_message(top_error),
        "topics": [{"name": name, "partitions": parts} for name, parts in listed.items()],
    }


def _top_message(top_error: ErrorCode) -> str | None:
    """Kafka's top-level message: only NOT_CONTROLLER carries one."""
    if top_error == ErrorCode.NOT_CONTROLLER:
        return "This is not the correct controller for this cluster."
    return None
