"""The classic consumer group APIs, translated to and from the group state machine.

Each handler turns the decoded request into one call on
``GroupCoordinatorState`` (through ``GroupCoordinator.run`` so records are
persisted before the answer), and the result into the response of the
request's version. What depends on the version (MEMBER_ID_REQUIRED from
JoinGroup v4, batched LeaveGroup from v3, several groups per OffsetFetch from
v8, ...) is decided here; the rules themselves live in ``broker/groups``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.groups.coordinator import CoordinatorUnavailable
from kafkette.broker.groups.model import (
    FetchedOffset,
    GroupListing,
    JoinResponse,
    OffsetFetchResult,
    Outcome,
    SyncResponse,
)
from kafkette.broker.security.authorizer.checks import (
    DELETE,
    DESCRIBE,
    GROUP,
    READ,
    TRANSACTIONAL_ID,
    authorized_operations,
    cluster_denied,
    denied,
    group_denied,
    topic_denied,
)
from kafkette.broker.security.session import listener_of
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
# READ, DELETE and DESCRIBE: what Kafka reports for a group when everything is allowed.
GROUP_OPERATIONS_ALL = (1 << 3) | (1 << 6) | (1 << 8)
OPERATIONS_NOT_REQUESTED = -2147483648
# OffsetCommit v2-4 retention_time_ms is any int64: an expiry past this never comes anyway,
# and it must still fit the int64 of the stored offset record.
MAX_TIMESTAMP_MS = (1 << 63) - 1


def _topic_view(broker: Broker):
    """The broker's topic view now, for a consumer group's classic members (imported
    here: the consumer-group handlers import this module)."""
    from kafkette.broker.handlers.consumer_groups import _topic_view as view

    return view(broker)


def _host(request: Request) -> str:
    return "/" + request.peer.rpartition(":")[0] if request.peer else ""


async def handle_find_coordinator(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
    if broker.authorizer is not None:
        # Kafka: DESCRIBE on the group or transactional id, checked before anything.
        if body["key_type"] == KEY_TYPE_GROUP:
            refused = {k: ErrorCode.GROUP_AUTHORIZATION_FAILED for k in keys
                       if group_denied(broker, request, DESCRIBE, k)}
        elif body["key_type"] == KEY_TYPE_TRANSACTION:
            refused = {k: int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for k in keys
                       if denied(broker, request, DESCRIBE, TRANSACTIONAL_ID, k)}
        else:
            refused = {}
        if refused:
            return await _find_some_coordinators(broker, request, keys, refused)
    return await _find_coordinators(broker, request, keys)


async def _find_some_coordinators(
    broker: Broker, request: Request, keys: list[str], refused: dict[str, int]
) -> dict:
    """The refused keys answered with their error, the others looked up as usual."""
    allowed = [k for k in keys if k not in refused]
    found = (await _find_coordinators(broker, request, allowed))["coordinators"] if allowed else []
    by_key = {entry["key"]: entry for entry in found}
    coordinators = [
        by_key.get(k)
        or {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": refused[k],
            "error_message": ErrorCode(refused[k]).name}
        for k in keys
    ]
    first = coordinators[0]
    return {
        "throttle_time_ms": 0,
        "error_code": first["error_code"],
        "error_message": first["error_message"],
        "node_id": first["node_id"],
        "host": first["host"],
        "port": first["port"],
        "coordinators": coordinators,
    }


async def _find_coordinators(broker: Broker, request: Request, keys: list[str]) -> dict:
    body = request.body
    if broker.cluster is not None:
        return await _find_coordinator_in_cluster(broker, body, keys, listener_of(request))
    own = broker.endpoint_for(listener_of(request))
    coordinators = []
    transaction_error = ErrorCode.NONE
    if body["key_type"] == KEY_TYPE_TRANSACTION and keys:
        # Kafka creates __transaction_state on the first lookup of a transaction coordinator.
        transaction_error = await broker.transactions.ensure_topic()
    for key in keys:
        entry = {
            "key": key,
            "node_id": broker.node_id,
            "host": own.host,
            "port": own.port,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        if body["key_type"] == KEY_TYPE_TRANSACTION:
            if not key:
                transaction_key_error = ErrorCode.INVALID_REQUEST
            else:
                transaction_key_error = transaction_error
            if transaction_key_error:
                entry.update(
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=int(transaction_key_error),
                    error_message=transaction_key_error.name,
                )
        elif body["key_type"] != KEY_TYPE_GROUP:
            entry.update(
                node_id=-1,
                host="",
                port=-1,
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                error_message=f"unsupported coordinator key type {body['key_type']}",
            )
        coordinators.append(entry)
    first = coordinators[0] if coordinators else {}
    return {
        "throttle_time_ms": 0,
        "error_code": first.get("error_code", 0),
        "error_message": first.get("error_message"),
        "node_id": first.get("node_id", broker.node_id),
        "host": first.get("host", own.host),
        "port": first.get("port", own.port),
        "coordinators": coordinators,
    }


async def _find_coordinator_in_cluster(
    broker: Broker, body: dict, keys: list[str], listener: str
) -> dict:
    """Cluster mode: the coordinator of a key is the leader of its partition of the
    internal topic (``abs(hash(key)) % partitions``, Kafka's rule). The topic is
    created on the first lookup, as Kafka does; until it has leaders the answer is
    COORDINATOR_NOT_AVAILABLE and clients ask again. The coordinators load and
    unload their state as that leadership moves (docs/cluster.md, "Coordinators")."""
    from kafkette.broker.groups.coordinator import offsets_topic_configs
    from kafkette.broker.groups.partitioning import java_string_hash, kafka_abs
    from kafkette.broker.internal_topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
    from kafkette.broker.topics import TopicError
    from kafkette.broker.transactions.coordinator import transaction_state_configs

    assert broker.cluster is not None
    key_type = body["key_type"]
    topic_error = ErrorCode.NONE
    if key_type == KEY_TYPE_GROUP:
        topic = OFFSETS_TOPIC
        partitions = broker.config.groups.offsets_topic_num_partitions
        configs = offsets_topic_configs(broker.config.groups)
    elif key_type == KEY_TYPE_TRANSACTION:
        topic = TRANSACTION_STATE_TOPIC
        partitions = broker.transactions.num_partitions
        configs = transaction_state_configs(
            broker.config.transactions.transaction_state_log_segment_bytes
        )
    else:
        topic, topic_error = "", ErrorCode.COORDINATOR_NOT_AVAILABLE
    if topic and keys and topic not in broker.cluster.metadata.topics:
        try:
            # A short wait for the leaders spares the client a retry or two.
            await broker.topics.create(topic, partitions, configs, timeout_s=5.0)
        except TopicError as exc:
            if exc.code not in (ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.REQUEST_TIMED_OUT):
                log.warning("cannot create %s: %s", topic, exc.message)
                topic_error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    metadata = broker.cluster.metadata
    coordinators = []
    for key in keys:
        entry = {"key": key, "node_id": -1, "host": "", "port": -1}
        error = topic_error
        if not error and key_type == KEY_TYPE_TRANSACTION and not key:
            error = ErrorCode.INVALID_REQUEST
        info = metadata.topics.get(topic)
        if not error and info is None:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not error:
            assert info is not None
            index = kafka_abs(java_string_hash(key)) % len(info.replicas)
            leader = metadata.brokers.get(metadata.leader_of(topic, index))
            endpoint = leader.endpoint_for(listener) if leader is not None else None
            if leader is None or endpoint is None:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                entry.update(node_id=leader.id, host=endpoint[0], port=endpoint[1])
        entry.update(
            error_code=int(error), error_message=error.name if error else None
        )
        if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
            entry["error_message"] = f"unsupported coordinator key type {key_type}"
        coordinators.append(entry)
    first = coordinators[0] if coordinators else {}
    return {
        "throttle_time_ms": 0,
        "error_code": first.get("error_code", 0),
        "error_message": first.get("error_message"),
        "node_id": first.get("node_id", -1),
        "host": first.get("host", ""),
        "port": first.get("port", -1),
        "coordinators": coordinators,
    }


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
    if version < 3 and error == 0 and result.members:
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


async def handle_offset_commit(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    if group_denied(broker, request, READ, body["group_id"]):
        errors = {(t["name"], p["partition_index"]): ErrorCode.GROUP_AUTHORIZATION_FAILED
                  for t in body["topics"] for p in t["partitions"]}
        return {"throttle_time_ms": 0, "topics": errors_by_topic(body["topics"], errors)}
    allowed, refused = topics_allowed(broker, request, READ, body["topics"])
    offsets, errors = offset_commits(broker, allowed, with_leader_epoch=True)
    errors.update(refused)
    retention = body["retention_time_ms"] if 2 <= version <= 4 else -1
    generation = body["generation_id_or_member_epoch"] if version >= 1 else -1
    if offsets:

        def call(state, now):
            # A KIP-848 group checks member and epoch itself, then commits as a simple commit.
            verdict = state.consumer_groups.validate_offset_commit(
                body["group_id"], body["member_id"], generation, version
            )
            if verdict:
                return Outcome(dict.fromkeys(offsets, int(verdict)))
            consumer = verdict is not None
            return state.offsets.commit_offsets(
                group_id=body["group_id"],
                generation_id=-1 if consumer else generation,
                member_id="" if consumer else body["member_id"],
                group_instance_id=None if consumer else body["group_instance_id"],
                offsets=offsets,
                now_ms=now,
                expire_timestamp_ms=min(now + retention, MAX_TIMESTAMP_MS)
                if retention > 0
                else None,
                api_version=version,
            )

        try:
            outcome = await broker.groups.run(call, body["group_id"])
            errors.update(outcome.result)
        except CoordinatorUnavailable as exc:
            errors.update(dict.fromkeys(offsets, int(exc.code)))
    return {"throttle_time_ms": 0, "topics": errors_by_topic(body["topics"], errors)}


def topics_allowed(
    broker: Broker, request: Request, op, topics: list[dict]
) -> tuple[list[dict], dict[tuple[str, int], int]]:
    """(the request's topics the principal may ``op``, TOPIC_AUTHORIZATION_FAILED
    for each partition of the others), Kafka's per-topic check in offset commits."""
    if broker.authorizer is None:
        return topics, {}
    allowed = []
    refused: dict[tuple[str, int], int] = {}
    for topic in topics:
        if topic_denied(broker, request, op, topic["name"]):
            for p in topic["partitions"]:
                tp = (topic["name"], p["partition_index"])
                refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            allowed.append(topic)
    return allowed, refused


def offset_commits(
    broker: Broker, topics: list[dict], *, with_leader_epoch: bool
) -> tuple[dict[tuple[str, int], tuple[int, int, str | None]], dict[tuple[str, int], int]]:
    """``(offsets, errors)`` of an OffsetCommit or TxnOffsetCommit request's topics.

    Both requests answer UNKNOWN_TOPIC_OR_PARTITION for a partition the broker
    does not have and commit the others: ``offsets`` maps those to
    ``(offset, leader_epoch, metadata)`` for the group state, ``errors`` holds
    the unknown ones. Without ``with_leader_epoch`` (a version that has no such
    field) the epoch is -1.
    """
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    for topic in topics:
        for p in topic["partitions"]:
            tp = (topic["name"], p["partition_index"])
            if not broker.topics.has_partition(*tp):
                errors[tp] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                epoch = p["committed_leader_epoch"] if with_leader_epoch else -1
                offsets[tp] = (p["committed_offset"], epoch, p["committed_metadata"])
    return offsets, errors


def errors_by_topic(topics: list[dict], errors: dict[tuple[str, int], int]) -> list[dict]:
    """The request's topics and partitions, each with its error code (0 if none).

    The answer shape of OffsetCommit and TxnOffsetCommit alike.
    """
    return [
        {
            "name": topic["name"],
            "partitions": [
                {
                    "partition_index": p["partition_index"],
                    "error_code": int(errors.get((topic["name"], p["partition_index"]), 0)),
                }
                for p in topic["partitions"]
            ],
        }
        for topic in topics
    ]


def _fetch_group(broker: Broker, group_id: str, topics: list[dict] | None, stable: bool):
    error = broker.groups.coordinator_error(group_id)
    if error != ErrorCode.NONE:  # a cluster: another broker's group, or still loading
        return _GroupError(int(error))
    partitions = None
    if topics is not None:
        partitions = [(t["name"], i) for t in topics for i in t["partition_indexes"]]
    return broker.groups.state.offsets.fetch_offsets(group_id, partitions, stable)


class _GroupError:
    """An OffsetFetch answer for a group this broker does not coordinate now."""

    def __init__(self, error: int) -> None:
        self.error = error
        self.partitions: dict = {}


def _by_topic(result) -> list[dict]:
    topics: dict[str, list[dict]] = {}
    for (topic, index), fetched in sorted(result.partitions.items()):
        topics.setdefault(topic, []).append(
            {
                "partition_index": index,
                "committed_offset": fetched.offset,
                "committed_leader_epoch": fetched.leader_epoch,
                "metadata": fetched.metadata,
                "error_code": fetched.error,
            }
        )
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


async def handle_offset_fetch(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    stable = body["require_stable"]
    if version >= 8:
        groups = []
        for group in body["groups"]:
            result = _fetch_authorized(broker, request, group["group_id"], group["topics"], stable)
            if version >= 9 and result.error == 0:  # KIP-848 groups check member and epoch
                refused = broker.groups.state.consumer_groups.validate_offset_fetch(
                    group["group_id"], group["member_id"], group["member_epoch"]
                )
                if refused:
                    result = _GroupError(int(refused))
            groups.append(
                {
                    "group_id": group["group_id"],
                    "topics": _by_topic(result),
                    "error_code": result.error,
                }
            )
        return {"throttle_time_ms": 0, "groups": groups}
    result = _fetch_authorized(broker, request, body["group_id"], body["topics"], stable)
    return {"throttle_time_ms": 0, "topics": _by_topic(result), "error_code": result.error}


def _fetch_authorized(
    broker: Broker, request: Request, group_id: str, topics: list[dict] | None, stable: bool
):
    """Kafka's OffsetFetch checks: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED),
    DESCRIBE on each topic: a named topic the principal may not describe answers
    TOPIC_AUTHORIZATION_FAILED, and "all topics" leaves such topics out."""
    if broker.authorizer is None:
        return _fetch_group(broker, group_id, topics, stable)
    if group_denied(broker, request, DESCRIBE, group_id):
        return _GroupError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if topics is None:
        result = _fetch_group(broker, group_id, None, stable)
        if isinstance(result, _GroupError):
            return result
        return OffsetFetchResult(result.error, {
            tp: fetched for tp, fetched in result.partitions.items()
            if not topic_denied(broker, request, DESCRIBE, tp[0], quiet=True)
        })
    allowed = [t for t in topics if not topic_denied(broker, request, DESCRIBE, t["name"])]
    result = _fetch_group(broker, group_id, allowed, stable)
    if len(allowed) < len(topics) and not isinstance(result, _GroupError):
        for topic in topics:
            if topic not in allowed:
                for index in topic["partition_indexes"]:
                    result.partitions[(topic["name"], index)] = FetchedOffset(
                        -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    )
    return result


async def handle_list_groups(broker: Broker, request: Request) -> dict:
    body = request.body
    listings = broker.groups.state.classic.list_groups(body["states_filter"], body["types_filter"])
    listings = consumer_group_listings(
        broker.groups.state.consumer_groups, listings, body["states_filter"], body["types_filter"]
    )
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
        not_classic = consumer.is_consumer_group(d.group_id)
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
                verdict = state.consumer_groups.delete(g)
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
