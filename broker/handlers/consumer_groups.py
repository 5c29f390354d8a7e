"""KIP-848's ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Thin: the request becomes one call on the consumer-protocol state machine
(``broker/groups/consumer``), run under the group coordinator's lock like every group
call, and its result the response. Classic and consumer groups share one namespace:
a heartbeat for the id of a classic group with members is answered
GROUP_ID_NOT_FOUND, as Kafka 4.0 does; an empty classic group (offsets only) is
taken over (the online upgrade), its committed offsets kept.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from kafkette.broker import groups
from kafkette.broker.group_coordinator import CoordinatorUnavailable
from kafkette.broker.groups.consumer.state import (
    GROUP_ID_NOT_FOUND,
    HeartbeatRequest,
    HeartbeatResult,
)
from kafkette.broker.handlers.groups import OPERATIONS_NOT_REQUESTED
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    GROUP,
    READ,
    authorized_operations,
    group_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.groups.consumer.state import ConsumerGroup
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")

MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe v1 MemberType (KIP-1099)


def _host(request: Request) -> str:
    return "/" + request.peer.rpartition(":")[0] if request.peer else ""


def _topic_view(broker: Broker) -> dict[str, tuple[uuid.UUID, int]]:
    view = {}
    for name in broker.topics.names:
        meta = broker.topics.metadata(name)
        if meta is not None:
            view[name] = (meta.topic_id, meta.partitions)
    return view


def _heartbeat_error(code: int, message: str | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
            "assignment": None}


async def handle_consumer_group_heartbeat(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    group_id = body["group_id"]
    if group_denied(broker, request, READ, group_id):
        return _heartbeat_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    owned = body["topic_partitions"]
    req = HeartbeatRequest(
        group_id=group_id,
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        instance_id=body["instance_id"],
        rack_id=body["rack_id"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"],
        subscribed_topic_names=body["subscribed_topic_names"],
        subscribed_topic_regex=body.get("subscribed_topic_regex"),
        server_assignor=body["server_assignor"],
        owned=None if owned is None else {
            tp["topic_id"]: frozenset(tp["partitions"]) for tp in owned if tp["partitions"]
        },
        version=version,
        client_id=request.header.client_id or "",
        client_host=_host(request),
    )
    topics = _topic_view(broker)

    def call(state, now):
        consumer = state.consumer_groups
        invalid = consumer.validate(req)
        if invalid is not None:
            return groups.Outcome(invalid)
        if not consumer.is_consumer_group(group_id):
            classic = state.classic_group_members(group_id)
            policy = state.config.group_consumer_migration_policy
            if classic is not None and (classic > 0 or policy not in ("upgrade", "bidirectional")):
                return groups.Outcome(HeartbeatResult(
                    GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
                ))
        return groups.Outcome(consumer.heartbeat(req, topics, now))

    try:
        outcome = await broker.groups.run(call, group_id)
    except CoordinatorUnavailable as exc:
        return _heartbeat_error(exc.code, None)
    result: HeartbeatResult = outcome.result
    if result.error != ErrorCode.NONE:
        log.debug("ConsumerGroupHeartbeat %s member %s: %s", group_id, req.member_id,
                  result.message)
        return _heartbeat_error(result.error, result.message)
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": tid, "partitions": sorted(parts)}
            for tid, parts in sorted(result.assignment.items(), key=lambda kv: str(kv[0]))
        ]}
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": assignment,
    }


def _described_assignment(broker: Broker, assignment) -> dict:
    parts = []
    for tid, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        meta = broker.topics.by_id(tid)
        parts.append({"topic_id": tid, "topic_name": meta.name if meta else "",
                      "partitions": sorted(partitions)})
    return {"topic_partitions": parts}


def _describe_group(broker: Broker, group: ConsumerGroup, default_assignor: str) -> dict:
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.assignor or default_assignor,
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                "subscribed_topic_regex": m.subscribed_regex,
                "assignment": _described_assignment(broker, m.assigned),
                "target_assignment": _described_assignment(
                    broker, group.target.get(m.member_id, {})
                ),
                "member_type": MEMBER_TYPE_CONSUMER,
            }
            for m in group.members.values()
        ],
        "authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


async def handle_consumer_group_describe(broker: Broker, request: Request) -> dict:
    body = request.body
    include_ops = body["include_authorized_operations"]
    described = []
    state = broker.groups.state
    consumer = state.consumer_groups
    for group_id in body["group_ids"]:
        entry = {"group_id": group_id, "members": [], "group_state": "", "assignor_name": "",
                 "error_message": None}
        if group_denied(broker, request, DESCRIBE, group_id):
            entry["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        elif (error := broker.groups.coordinator_error(group_id)) != ErrorCode.NONE:
            entry["error_code"] = int(error)
        elif consumer.is_consumer_group(group_id):
            entry = _describe_group(broker, consumer.groups[group_id], consumer.assignor_names[0])
            if include_ops:
                entry["authorized_operations"] = authorized_operations(
                    broker, request, GROUP, group_id
                )
        elif state.classic_group_members(group_id) is not None:
            entry["error_code"] = GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} is not a consumer group."
        else:
            entry["error_code"] = GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} not found."
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
