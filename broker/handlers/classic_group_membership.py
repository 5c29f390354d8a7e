"""The classic group membership APIs: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Each handler turns the decoded request into one call on
``GroupCoordinatorState`` (through ``GroupCoordinator.run`` so records are
persisted before the answer), and the result into the response of the
request's version. What depends on the version (MEMBER_ID_REQUIRED from
JoinGroup v4, batched LeaveGroup from v3, ...) is decided here; the rules
themselves live in ``broker/groups``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.groups.coordinator import CoordinatorUnavailable
from kafkette.broker.groups.model import (
    JoinResponse,
    SyncResponse,
)
from kafkette.broker.security.authorizer.checks import (
    READ,
    group_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")


def _topic_view(broker: Broker):
    """The broker's topic view now, for a consumer group's classic members (imported
    here: the consumer-group handlers import this module)."""
    from kafkette.broker.handlers.consumer_groups import _topic_view as view

    return view(broker)


def _host(request: Request) -> str:
    return "/" + request.peer.rpartition(":")[0] if request.peer else ""



async def handle_join_group(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    protocols = [(p["name"], p["metadata"]) for p in body["protocols"]]
    session_timeout = body["session_timeout_ms"]
    rebalance_timeout = body["rebalance_timeout_ms"] if version >= 1 else session_timeout
    if group_denied(broker, request, READ, body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
                "member_id": "", "protocol_name": None if version >= 7 else ""}

    topics = _topic_view(broker)

    def call(state, now, ticket):
        return state.join_group(
            ticket,
            group_id=body["group_id"],
            member_id=body["member_id"],
            group_instance_id=body["group_instance_id"],
            protocol_type=body["protocol_type"],
            protocols=protocols,
            session_timeout_ms=session_timeout,
            rebalance_timeout_ms=rebalance_timeout,
            now_ms=now,
            client_id=request.header.client_id or "",
            client_host=_host(request),
            require_known_member_id=version >= 4,
            supports_skip_assignment=version >= 9,
            topics=topics,
        )

    def render(response: JoinResponse) -> dict:
        log.debug(
            "JoinGroup %s member %s: error %d generation %d leader %s",
            body["group_id"],
            response.member_id,
            response.error,
            response.generation_id,
            response.leader,
        )
        return {
            "throttle_time_ms": 0,
            "error_code": response.error,
            "generation_id": response.generation_id,
            "protocol_type": response.protocol_type,
            "protocol_name": (
                response.protocol_name if version >= 7 else response.protocol_name or ""
            ),
            "leader": response.leader,
            "skip_assignment": response.skip_assignment,
            "member_id": response.member_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata,
                }
                for m in response.members
            ],
        }

    try:
        return await broker.groups.wait_for_reply(call, render, body["group_id"])
    except CoordinatorUnavailable as exc:
        return {"error_code": int(exc.code), "generation_id": -1, "member_id": body["member_id"]}


async def handle_sync_group(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    assignments = [(a["member_id"], a["assignment"]) for a in body["assignments"]]
    if version >= 5 and (body["protocol_type"] is None or body["protocol_name"] is None):
        # Mandatory from v5; Kafka 4.0 checks this first, before the ACL.
        return {"error_code": int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL), "assignment": b""}
    if group_denied(broker, request, READ, body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "assignment": b""}

    topics = _topic_view(broker)

    def call(state, now, ticket):
        return state.sync_group(
            ticket,
            group_id=body["group_id"],
            generation_id=body["generation_id"],
            member_id=body["member_id"],
            group_instance_id=body["group_instance_id"],
            protocol_type=body["protocol_type"] if version >= 5 else None,
            protocol_name=body["protocol_name"] if version >= 5 else None,
            assignments=assignments,
            now_ms=now,
            topics=topics,
        )

    def render(response: SyncResponse) -> dict:
        """Called for every waiting member at once, by the request that completed the
        sync (broker/groups/coordinator.py): the answers are ready together."""
        log.debug(
            "SyncGroup %s member %s generation %d: error %d, %d bytes of assignment",
            body["group_id"],
            body["member_id"],
            body["generation_id"],
            response.error,
            len(response.assignment),
        )
        return {
            "throttle_time_ms": 0,
            "error_code": response.error,
            "protocol_type": response.protocol_type,
            "protocol_name": response.protocol_name,
            "assignment": response.assignment,
        }

    try:
        return await broker.groups.wait_for_reply(call, render, body["group_id"])
    except CoordinatorUnavailable as exc:
        return {"error_code": int(exc.code), "assignment": b""}


async def handle_heartbeat(broker: Broker, request: Request) -> dict:
    body = request.body
    if group_denied(broker, request, READ, body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    topics = _topic_view(broker)
    try:
        outcome = await broker.groups.run(
            lambda state, now: state.heartbeat(
                group_id=body["group_id"],
                generation_id=body["generation_id"],
                member_id=body["member_id"],
                group_instance_id=body["group_instance_id"],
                now_ms=now,
                topics=topics,
            ),
            body["group_id"],
        )
    except CoordinatorUnavailable as exc:
        if exc.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Kafka answers a heartbeat blindly while the group loads: the member keeps
            # its session, and the loaded group counts its session from the load.
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE}
        return {"error_code": int(exc.code)}
    if outcome.result:
        log.debug(
            "Heartbeat %s member %s: error %d", body["group_id"], body["member_id"], outcome.result
        )
    return {"throttle_time_ms": 0, "error_code": outcome.result}


async def handle_leave_group(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    if version >= 3:
        members = [(m["member_id"], m["group_instance_id"]) for m in body["members"]]
    else:
        members = [(body["member_id"], None)]
    if group_denied(broker, request, READ, body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    try:
        outcome = await broker.groups.run(
            lambda state, now: state.leave_group(
                group_id=body["group_id"], members=members, now_ms=now
            ),
            body["group_id"],
        )
    except CoordinatorUnavailable as exc:
        return {"error_code": int(exc.code)}
    result = outcome.result
    error = result.error
    if version < 3 and error == ErrorCode.NONE and result.members:
        error = result.members[0].error
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "error_code": m.error,
            }
            for m in result.members
        ],
    }
