"""ListGroups, DescribeGroups, DeleteGroups and OffsetDelete, for groups of every type.

Classic, consumer (KIP-848) and share (KIP-932) groups are listed, described and deleted
through the same calls on ``GroupCoordinatorState``; the answer's shape per version is
decided here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.groups.coordinator import CoordinatorUnavailable
from kafkette.broker.groups.model import GroupListing, OffsetDeleteResult
from kafkette.broker.handlers.offset_commit_fetch import errors_by_topic, topics_allowed
from kafkette.broker.security.authorizer.checks import (
    DELETE,
    DESCRIBE,
    GROUP,
    READ,
    authorized_operations,
    cluster_denied,
    group_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")


# READ, DELETE and DESCRIBE: what Kafka reports for a group when everything is allowed.
GROUP_OPERATIONS_ALL = (1 << 3) | (1 << 6) | (1 << 8)
OPERATIONS_NOT_REQUESTED = -2147483648


async def handle_list_groups(broker: Broker, request: Request) -> dict:
    body = request.body
    listings = broker.groups.state.classic.list_groups(body["states_filter"], body["types_filter"])
    listings = consumer_group_listings(
        broker.groups.state.consumer_groups, listings, body["states_filter"], body["types_filter"]
    )
    listings += share_group_listings(broker.groups.state, body["states_filter"],
                                     body["types_filter"])
    if broker.authorizer is not None and cluster_denied(broker, request, DESCRIBE, quiet=True):
        # Kafka: without DESCRIBE on the cluster, the groups the principal may describe.
        listings = [
            g for g in listings
            if not group_denied(broker, request, DESCRIBE, g.group_id, quiet=True)
        ]
    # Kafka lists what it has, with COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
    loading = broker.groups.loading
    return {
        "throttle_time_ms": 0,
        "error_code": int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) if loading else 0,
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": g.group_type,
            }
            for g in listings
        ],
    }


def consumer_group_listings(consumer, listings: list, states_filter, types_filter) -> list:
    """ListGroups: the KIP-848 groups (type "consumer") replace the offsets-only classic
    entry of the same id; filters as Kafka's (case-insensitive, empty = all)."""
    if not consumer.groups:
        return listings
    states = {s.lower() for s in states_filter or ()}
    types = {t.lower() for t in types_filter or ()}
    out = [g for g in listings if not consumer.is_consumer_group(g.group_id)]
    if types and "consumer" not in types:
        return out
    for group in consumer.groups.values():
        if not states or group.state.lower() in states:
            out.append(GroupListing(group.group_id, "consumer", group.state, "consumer"))
    return out


def share_group_listings(state, states_filter, types_filter) -> list:
    """ListGroups' share groups: type "share", protocol type "share", as Kafka lists them."""
    if state._share_groups is None:
        return []
    states = {s.lower() for s in states_filter or ()}
    types = {t.lower() for t in types_filter or ()}
    if types and "share" not in types:
        return []
    return [
        GroupListing(g.group_id, "share", g.state, "share")
        for g in state.share_groups.groups.values()
        if not states or g.state.lower() in states
    ]


async def handle_describe_groups(broker: Broker, request: Request) -> dict:
    body = request.body
    include_ops = body["include_authorized_operations"]
    groups = []
    names = body["groups"]
    refused = {g for g in names if group_denied(broker, request, DESCRIBE, g)}
    consumer = broker.groups.state.consumer_groups
    version = request.header.api_version
    for d in broker.groups.state.classic.describe_groups([g for g in names if g not in refused]):
        error = broker.groups.coordinator_error(d.group_id)
        if error != ErrorCode.NONE:  # a cluster: another broker's group, or loading
            groups.append(_describe_error(d.group_id, int(error), include_ops))
            continue
        not_classic = consumer.is_consumer_group(d.group_id) or (
            broker.groups.state.is_share_group(d.group_id)
        )
        if not_classic or (version >= 6 and d.state == "Dead"):
            # Kafka 4.0: Dead; from v6 GROUP_ID_NOT_FOUND with a message (KIP-1043).
            entry = _describe_error(d.group_id, 0, include_ops)
            entry["group_state"] = "Dead"
            if version >= 6:
                entry["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
                entry["error_message"] = (
                    f"Group {d.group_id} is not a classic group." if not_classic
                    else f"Group {d.group_id} not found."
                )
            groups.append(entry)
            continue
        groups.append(
            {
                "error_code": d.error,
                "error_message": None,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": d.protocol_type,
                "protocol_data": d.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in d.members
                ],
                "authorized_operations": authorized_operations(broker, request, GROUP, d.group_id)
                if include_ops
                else OPERATIONS_NOT_REQUESTED,
            }
        )
    if refused:  # answered in the request's order, as Kafka does
        by_id = {g["group_id"]: g for g in groups}
        groups = [
            by_id[g] if g in by_id
            else _describe_error(g, ErrorCode.GROUP_AUTHORIZATION_FAILED, False)
            for g in names
        ]
    return {"throttle_time_ms": 0, "groups": groups}


def _describe_error(group_id: str, error: int, include_ops: bool) -> dict:
    return {
        "error_code": error,
        "error_message": None,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": GROUP_OPERATIONS_ALL if include_ops else OPERATIONS_NOT_REQUESTED,
    }


async def handle_delete_groups(broker: Broker, request: Request) -> dict:
    names = request.body["groups_names"]
    coordinator = broker.groups
    forbidden = {g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names
                 if group_denied(broker, request, DELETE, g)}

    def call(state, now):
        # Under the coordinator's lock: in a cluster, only the groups it coordinates now.
        refused = {g: int(e) for g in names if (e := coordinator.coordinator_error(g))}
        refused.update(forbidden)
        # KIP-848 groups: a non-empty one is NON_EMPTY_GROUP; an empty one goes, offsets too.
        dropped = set()
        for g in names:
            if g not in refused:
                verdict = (state.share_groups.delete(g) if state.is_share_group(g)
                           else state.consumer_groups.delete(g))
                if verdict:
                    refused[g] = int(verdict)
                elif verdict is not None:
                    dropped.add(g)
        outcome = state.offsets.delete_groups([g for g in names if g not in refused], now)
        for g in dropped:
            if outcome.result.get(g) == ErrorCode.GROUP_ID_NOT_FOUND:
                outcome.result[g] = 0
        outcome.result.update(refused)
        return outcome

    try:
        outcome = await coordinator.run(call)
        results = outcome.result
    except CoordinatorUnavailable as exc:
        results = dict.fromkeys(names, int(exc.code))
        results.update(forbidden)
    deleted = [g for g in names if results.get(g, 0) == 0]
    if deleted and broker.share_partitions_started is not None:
        await broker.share_partitions_started.forget_groups(deleted)
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": int(results.get(g, 0))} for g in names],
    }


async def handle_offset_delete(broker: Broker, request: Request) -> dict:
    body = request.body
    if group_denied(broker, request, DELETE, body["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    allowed, refused = topics_allowed(broker, request, READ, body["topics"])
    unknown = {
        (t["name"], p["partition_index"])
        for t in allowed
        for p in t["partitions"]
        if not broker.topics.has_partition(t["name"], p["partition_index"])
    }
    wanted = [
        (t["name"], p["partition_index"])
        for t in allowed
        for p in t["partitions"]
        if (t["name"], p["partition_index"]) not in unknown
    ]
    subscribed: set[tuple[str, int]] = set()

    def call(state, now):
        if state.is_share_group(body["group_id"]):  # Kafka: "not a consumer group"
            return state.outcome(OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND, {}))
        # A KIP-848 group keeps the offsets of the topics its members subscribe to.
        names = state.consumer_groups.subscribed(body["group_id"], {t for t, _ in wanted})
        subscribed.update(tp for tp in wanted if tp[0] in names)
        return state.offsets.delete_offsets(
            group_id=body["group_id"], partitions=[tp for tp in wanted if tp not in subscribed],
            now_ms=now,
        )

    try:
        outcome = await broker.groups.run(call, body["group_id"])
    except CoordinatorUnavailable as exc:
        return {"error_code": int(exc.code), "topics": []}
    result = outcome.result
    errors = {tp: int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for tp in unknown}
    errors.update(dict.fromkeys(subscribed, int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)))
    errors.update(result.partitions)
    errors.update(refused)
    return {
        "error_code": result.error,
        "throttle_time_ms": 0,
        "topics": errors_by_topic(body["topics"], errors),
    }
