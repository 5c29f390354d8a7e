"""The answer shapes KIP-848's and KIP-932's heartbeats and describes share.

ConsumerGroupHeartbeat and ShareGroupHeartbeat answer with the same fields (member id,
epoch, heartbeat interval, an assignment of topic ids to partitions, or an error), and
their describes show assignments the same way; both handlers build them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkette.broker.groups.coordinator import CoordinatorUnavailable
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    READ,
    group_denied,
    topic_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    import logging
    import uuid
    from collections.abc import Callable, Iterable

    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

Assignment = Mapping["uuid.UUID", Any]  # topic id -> partitions


def heartbeat_error(code: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
            "assignment": None}


def heartbeat_refused(
    broker: Broker, request: Request, group_id: str, names: Iterable[str] | None
) -> dict | None:
    """Kafka's checks before a heartbeat: READ on the group, and DESCRIBE on every
    subscribed topic (one denied name fails the whole heartbeat)."""
    if group_denied(broker, request, READ, group_id):
        return heartbeat_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    if names and broker.authorizer is not None and any(
        topic_denied(broker, request, DESCRIBE, n) for n in set(names)
    ):
        return heartbeat_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    return None


async def run_heartbeat(
    broker: Broker, call: Callable, group_id: str, member_id: str, log: logging.Logger
) -> dict:
    """Run the state machine's heartbeat ``call`` under the group coordinator and turn
    its result into the answer (an error's reason logged at DEBUG)."""
    try:
        outcome = await broker.groups.run(call, group_id)
    except CoordinatorUnavailable as exc:
        return heartbeat_error(exc.code, None)
    result = outcome.result
    if result.error != ErrorCode.NONE:
        log.debug("%s heartbeat of %s member %s: %s", type(result).__name__, group_id,
                  member_id, result.message)
        return heartbeat_error(result.error, result.message)
    return heartbeat_answer(result)


def heartbeat_answer(result: Any) -> dict:
    """A successful heartbeat's answer from a state machine's result (member id, epoch,
    interval, and the assignment or None when it did not change)."""
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": tid, "partitions": sorted(parts)}
            for tid, parts in sorted(result.assignment.items(), key=lambda kv: str(kv[0]))
        ]}
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": assignment,
    }


def described_assignment(broker: Broker, assignment: Assignment) -> dict:
    """An assignment as the describes show it: topic id, name and partitions."""
    parts = []
    for tid, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        meta = broker.topics.by_id(tid)
        parts.append({"topic_id": tid, "topic_name": meta.name if meta else "",
                      "partitions": sorted(partitions)})
    return {"topic_partitions": parts}
