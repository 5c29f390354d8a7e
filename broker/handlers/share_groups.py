"""KIP-932's ShareGroupHeartbeat (76) and ShareGroupDescribe (77).

Thin: a heartbeat becomes one call on the share groups' membership
(``broker/share_groups/membership.py``), run under the group coordinator's lock like
every group call; describe reads it. Share groups live in the group coordinator's one
namespace with classic and consumer groups (docs/share-groups.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.handlers.consumer_groups import _host, _topic_view
from kafkette.broker.handlers.group_admin import OPERATIONS_NOT_REQUESTED
from kafkette.broker.handlers.group_heartbeats import (
    described_assignment,
    heartbeat_refused,
    run_heartbeat,
)
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    GROUP,
    authorized_operations,
    group_denied,
    topic_denied,
)
from kafkette.broker.share_groups.membership import ShareHeartbeat
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.share_groups.membership import ShareGroup
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")


async def handle_share_group_heartbeat(broker: Broker, request: Request) -> dict:
    body = request.body
    group_id = body["group_id"]
    names = body["subscribed_topic_names"]
    refused = heartbeat_refused(broker, request, group_id, names)
    if refused is not None:
        return refused
    req = ShareHeartbeat(
        group_id=group_id,
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        rack_id=body["rack_id"],
        subscribed_topic_names=names,
        client_id=request.header.client_id or "",
        client_host=_host(request),
    )
    topics = _topic_view(broker)

    def call(state, now):
        return state.outcome(state.share_heartbeat(req, topics, now))

    return await run_heartbeat(broker, call, group_id, req.member_id, log)



def describe_share_group(broker: Broker, group: ShareGroup, assignor: str) -> dict:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": assignor,
        "members": [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                "assignment": described_assignment(broker, m.assigned),
            }
            for m in group.members.values()
        ],
        "authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


def _failed(group_id: str, code: int, message: str | None) -> dict:
    return {"error_code": int(code), "error_message": message, "group_id": group_id,
            "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
            "assignor_name": "", "members": [],
            "authorized_operations": OPERATIONS_NOT_REQUESTED}


async def handle_share_group_describe(broker: Broker, request: Request) -> dict:
    body = request.body
    described = []
    state = broker.groups.state
    for group_id in body["group_ids"]:
        if group_denied(broker, request, DESCRIBE, group_id):
            described.append(_failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        coordinator_error = broker.groups.coordinator_error(group_id)
        if coordinator_error != ErrorCode.NONE:
            described.append(_failed(group_id, coordinator_error, None))
            continue
        group = state.share_groups.groups.get(group_id) if state.is_share_group(group_id) \
            else None
        if group is None:
            if state.classic.classic_group_members(group_id) is not None or (
                state.consumer_groups.is_consumer_group(group_id)
            ):
                message = f"Group {group_id} is not a share group."
            else:
                message = f"Group {group_id} not found."
            described.append(_failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message))
            continue
        answer = describe_share_group(broker, group, state.share_groups.assignor_name)
        if broker.authorizer is not None and any(
            topic_denied(broker, request, DESCRIBE, t["topic_name"], quiet=True)
            for m in answer["members"] for t in m["assignment"]["topic_partitions"]
        ):
            described.append(_failed(
                group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                "The group has described topic(s) that the client is not authorized to "
                "describe.",
            ))
            continue
        if body["include_authorized_operations"]:
            answer["authorized_operations"] = authorized_operations(
                broker, request, GROUP, group_id
            )
        described.append(answer)
    return {"throttle_time_ms": 0, "groups": described}

