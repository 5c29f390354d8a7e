"""ElectLeaders: preferred (or unclean) leader elections on demand (kafka-leader-election.sh).

Only the controller elects (Kafka's rule: another broker answers NOT_CONTROLLER
and the admin client asks the controller). Per partition, as Kafka's controller
decides: UNKNOWN_TOPIC_OR_PARTITION; ELECTION_NOT_NEEDED when the preferred
replica already leads (preferred) or a live leader exists (unclean);
PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica is not alive and in
the ISR; ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is alive (unclean);
otherwise the controller writes the new leader (leader epoch + 1) and the answer
waits, up to ``timeout_ms``, until this broker's view shows it
(REQUEST_TIMED_OUT after). ``topic_partitions`` null means every partition.

On a single node the only replica always leads: ELECTION_NOT_NEEDED.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import ALTER, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.controller import StateChange
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.admin")

PREFERRED, UNCLEAN = 0, 1


def _requested(broker: Broker, body: dict) -> list[tuple[str, int]]:
    wanted = body["topic_partitions"]
    if wanted is None:
        if broker.cluster is not None:
            topics = broker.cluster.metadata.topics
            return [(n, p) for n, t in sorted(topics.items()) for p in sorted(t.replicas)]
        return [(p.topic, p.index) for p in broker.topics.all_partitions()]
    return [(t["topic"], p) for t in wanted for p in t["partitions"]]


def _decide(
    metadata: ClusterMetadata, topic: str, index: int, election_type: int
) -> tuple[ErrorCode, StateChange | None]:
    from kafkette.broker.cluster.controller import StateChange

    info = metadata.topics.get(topic)
    state = metadata.states.get((topic, index))
    if info is None or index not in info.replicas or state is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    replicas, live = info.replicas[index], metadata.brokers
    if election_type == PREFERRED:
        preferred = replicas[0]
        if state.leader == preferred and preferred in live:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        if preferred not in live or preferred not in state.isr:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.NONE, StateChange(
            topic, index, state, preferred, state.leader_epoch + 1, state.isr
        )
    if state.leader in live:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    in_sync = [r for r in replicas if r in live and r in state.isr]
    if in_sync:
        isr = tuple(r for r in state.isr if r in live)
        return ErrorCode.NONE, StateChange(
            topic, index, state, in_sync[0], state.leader_epoch + 1, isr
        )
    alive = [r for r in replicas if r in live]
    if not alive:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    return ErrorCode.NONE, StateChange(
        topic, index, state, alive[0], state.leader_epoch + 1, (alive[0],)
    )


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
    elif broker.cluster is None:
        for topic, index in partitions:
            known = broker.topics.partition(topic, index) is not None
            results[(topic, index)] = (
                ErrorCode.ELECTION_NOT_NEEDED if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
    elif not broker.cluster.controller.active:
        if body["topic_partitions"] is None:
            top_error = ErrorCode.NOT_CONTROLLER
        results = dict.fromkeys(partitions, ErrorCode.NOT_CONTROLLER)
    else:
        results = await _elect(broker, partitions, election_type, body["timeout_ms"] / 1000)
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


async def _elect(
    broker: Broker, partitions: list[tuple[str, int]], election_type: int, timeout_s: float
) -> dict[tuple[str, int], ErrorCode]:
    node = broker.cluster
    assert node is not None
    metadata = node.metadata
    results: dict[tuple[str, int], ErrorCode] = {}
    changes = []
    for topic, index in partitions:
        error, change = _decide(metadata, topic, index, election_type)
        results[(topic, index)] = error
        if change is not None:
            changes.append(change)
    if changes:
        written = await node.controller.apply_changes(changes)
        for change in changes:
            if change not in written:
                results[(change.topic, change.partition)] = ErrorCode.NOT_CONTROLLER
        targets = {(c.topic, c.partition): c.leader for c in written}

        def shown(m: ClusterMetadata) -> bool:
            return all(
                (s := m.states.get(key)) is not None and s.leader == leader
                for key, leader in targets.items()
            )

        if not await node.wait_for(shown, timeout_s):
            for key, leader in targets.items():
                state = node.metadata.states.get(key)
                if state is None or state.leader != leader:
                    results[key] = ErrorCode.REQUEST_TIMED_OUT
        log.info("ElectLeaders: %d leaders elected", len(written))
    return results


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
