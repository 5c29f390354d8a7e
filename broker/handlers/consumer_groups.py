"""KIP-848's ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Thin: the request becomes one call on the consumer-protocol state machine
(``broker/groups/consumer``), run under the group coordinator's lock like every group
call, and its result the response. Classic and consumer groups share one namespace:
a joining heartbeat for the id of a Stable classic group of ``consumer``-protocol
members converts it (the online upgrade: its members stay, as classic members of the
consumer group), an empty classic group (offsets only) is taken over, its committed
offsets kept; any other classic group answers GROUP_ID_NOT_FOUND, as Kafka 4.0 does.
The last consumer-protocol member leaving turns classic members back into a classic
group (the downgrade).
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kafkette.broker.groups.consumer.state import (
    HeartbeatRequest,
)
from kafkette.broker.handlers.group_admin import OPERATIONS_NOT_REQUESTED
from kafkette.broker.handlers.group_heartbeats import (
    described_assignment,
    heartbeat_refused,
    run_heartbeat,
)
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    GROUP,
    TOPIC,
    authorized_operations,
    group_denied,
    topic_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.groups.consumer.state import ConsumerGroup
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")

MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe v1 MemberType (KIP-1099)
MEMBER_TYPE_CLASSIC = 0


def _host(request: Request) -> str:
    return "/" + request.peer.rpartition(":")[0] if request.peer else ""


TopicView = Mapping[str, tuple[uuid.UUID, int]]
# broker -> (the topic table it was built from, the view): rebuilt only when the table
# changes (the data dir hands out the same table object until then), and the same view
# object lets the state machine skip re-resolving subscriptions and regexes.
_views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _topic_view(broker: Broker) -> TopicView:
    table = broker.topics.data_dir.topics
    cached = _views.get(broker)
    if cached is not None and cached[0] is table:
        return cached[1]
    view = {name: (meta.topic_id, meta.partitions) for name, meta in table.items()}
    _views[broker] = (table, view)
    return view


def _describable(broker: Broker, request: Request):
    """With an authorizer: the filter keeping the topics this member may DESCRIBE (what
    its regex matches is filtered by it, as Kafka does); None without one."""
    authorizer = broker.authorizer
    if authorizer is None:
        return None
    session = request.session

    def describable(names: Iterable[str]) -> set[str]:
        return {n for n in names if authorizer.allowed(session, DESCRIBE, TOPIC, n, False)}

    return describable



async def handle_consumer_group_heartbeat(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    group_id = body["group_id"]
    refused = heartbeat_refused(broker, request, group_id, body["subscribed_topic_names"])
    if refused is not None:
        return refused
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
        topic_filter=_describable(broker, request),
    )
    topics = _topic_view(broker)

    def call(state, now):
        return state.outcome(state.consumer_heartbeat(req, topics, now))

    return await run_heartbeat(broker, call, group_id, req.member_id, log)



def _describe_group(broker: Broker, group: ConsumerGroup, default_assignor: str) -> dict:
    return {
        "error_code": ErrorCode.NONE,
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
                "assignment": described_assignment(broker, m.assigned),
                "target_assignment": described_assignment(
                    broker, group.target.get(m.member_id, {})
                ),
                "member_type": MEMBER_TYPE_CONSUMER if m.classic is None else MEMBER_TYPE_CLASSIC,
            }
            for m in group.members.values()
        ],
        "authorized_operations": OPERATIONS_NOT_REQUESTED,
    }


def _hides_topics(broker: Broker, request: Request, group: ConsumerGroup) -> bool:
    """Kafka: a group whose members' assigned or target partitions name a topic the
    client may not DESCRIBE is not described at all."""
    if broker.authorizer is None:
        return False
    ids = set()
    for m in group.members.values():
        ids.update(m.assigned)
        ids.update(group.target.get(m.member_id, {}))
    names = set()
    for tid in ids:
        meta = broker.topics.by_id(tid)
        if meta is not None:
            names.add(meta.name)
    return any(topic_denied(broker, request, DESCRIBE, n, quiet=True) for n in names)


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
            group = consumer.groups[group_id]
            if _hides_topics(broker, request, group):
                entry["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                entry["error_message"] = (
                    "The group has described topic(s) that the client is not authorized to "
                    "describe."
                )
                described.append(entry)
                continue
            entry = _describe_group(broker, group, consumer.assignor_names[0])
            if include_ops:
                entry["authorized_operations"] = authorized_operations(
                    broker, request, GROUP, group_id
                )
        elif (state.classic.classic_group_members(group_id) is not None
              or state.is_share_group(group_id)):
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} is not a consumer group."
        else:
            entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
            entry["error_message"] = f"Group {group_id} not found."
        described.append(entry)
    return {"throttle_time_ms": 0, "groups": described}
