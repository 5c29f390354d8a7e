"""ElectLeaders as the controller decides and writes it (``kafka-leader-election.sh``).

Per partition, as Kafka's controller decides: UNKNOWN_TOPIC_OR_PARTITION;
ELECTION_NOT_NEEDED when the preferred replica already leads (preferred) or a live
leader exists (unclean); PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica
is not alive and in the ISR; ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is alive
(unclean); otherwise the controller writes the new leader (leader epoch + 1) and
the answer waits, up to the request's timeout, until this broker's view shows it
(REQUEST_TIMED_OUT after).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.cluster.controller import StateChange
from kafkette.broker.topology import PREFERRED, PartitionKey
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.cluster.node import ClusterNode

log = logging.getLogger("kafkette.admin")


def decide(
    metadata: ClusterMetadata, topic: str, index: int, election_type: int
) -> tuple[ErrorCode, StateChange | None]:
    """One partition's outcome, and the state to write when a leader is elected."""
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


async def elect(
    node: ClusterNode, partitions: list[PartitionKey], election_type: int, timeout_s: float
) -> dict[PartitionKey, ErrorCode]:
    """Decide every partition on this broker's view, write the elections as the
    controller (NOT_CONTROLLER for those it could not), and wait until they show."""
    metadata = node.metadata
    results: dict[PartitionKey, ErrorCode] = {}
    changes = []
    for topic, index in partitions:
        error, change = decide(metadata, topic, index, election_type)
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
