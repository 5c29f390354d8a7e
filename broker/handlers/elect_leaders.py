"""ElectLeaders: preferred (or unclean) leader elections on demand (kafka-leader-election.sh).

Only the controller elects (Kafka's rule: another broker answers NOT_CONTROLLER
and the admin client asks the controller); ``broker.topology`` decides and
writes each partition's election (``broker/cluster/elections.py`` in a cluster;
on a single node the only replica always leads: ELECTION_NOT_NEEDED).
``topic_partitions`` null means every partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import ALTER, cluster_denied
from kafkette.broker.topology import PREFERRED, UNCLEAN
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


def _requested(broker: Broker, body: dict) -> list[tuple[str, int]]:
    wanted = body["topic_partitions"]
    if wanted is None:
        return broker.topology.all_partitions()
    return [(t["topic"], p) for t in wanted for p in t["partitions"]]


async def handle_elect_leaders(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    election_type = body.get("election_type", PREFERRED) if version >= 1 else PREFERRED
    results: dict[tuple[str, int], ErrorCode] = {}
    top_error = ErrorCode.NONE
    if cluster_denied(broker, request, ALTER):
        # Checked before the partitions are listed: a refused principal gets back only
        # the partitions it named, none for "every partition" (Kafka's
        # ElectLeadersRequest.getErrorResponse), never the cluster's topic names.
        top_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        named = body["topic_partitions"] or []
        results = dict.fromkeys(
            ((t["topic"], p) for t in named for p in t["partitions"]),
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        )
        return _response(top_error, results)
    partitions = _requested(broker, body)
    if election_type not in (PREFERRED, UNCLEAN):
        top_error = ErrorCode.INVALID_REQUEST
    elif not broker.topology.is_controller:
        if body["topic_partitions"] is None:
            top_error = ErrorCode.NOT_CONTROLLER
        results = dict.fromkeys(partitions, ErrorCode.NOT_CONTROLLER)
    else:
        results = await broker.topology.elect_leaders(
            partitions, election_type, body["timeout_ms"] / 1000
        )
    return _response(top_error, results)


def _response(top_error: ErrorCode, results: dict[tuple[str, int], ErrorCode]) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), error in results.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_id": index,
                "error_code": int(error),
                "error_message": None if error == ErrorCode.NONE else _message(error),
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": int(top_error),
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }


def _message(error: ErrorCode) -> str:
    return {
        ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred replica is not alive and in"
        " the ISR.",
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "No replica of the partition is alive.",
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The partition does not exist.",
        ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
        ErrorCode.REQUEST_TIMED_OUT: "The election was written but not seen within the timeout.",
    }.get(error, error.name)
