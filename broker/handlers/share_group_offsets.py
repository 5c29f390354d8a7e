"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92).

What ``kafka-share-groups.sh --describe/--reset-offsets/--delete-offsets`` and the Admin
client's ``listShareGroupOffsets``/``alterShareGroupOffsets``/``deleteShareGroupOffsets``
send. A share group's "offset" is its share-partition start offset (SPSO); its lag is
Kafka's: log end offset - start offset - records already delivered past it. Altering or
deleting needs a group without members (NON_EMPTY_GROUP otherwise); altering creates the
group, as Kafka does. Authorization as Kafka: DESCRIBE on the group and on each topic to
describe, READ on both to alter, DELETE on the group and READ on the topics to delete.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import (
    DELETE,
    DESCRIBE,
    READ,
    group_denied,
    topic_denied,
)
from kafkette.broker.share_groups.persister import PersistError
from kafkette.broker.topic_ids import topic_name
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.share")

UNINITIALIZED = -1


def _another_kind_of_group(broker: Broker, group_id: str) -> bool:
    """A classic or consumer group has this id: no share group may take it."""
    state = broker.groups.state
    return state.classic.classic_group_members(group_id) is not None or (
        state.consumer_groups.is_consumer_group(group_id)
    )


async def _group_state(broker: Broker, group_id: str) -> tuple[int, str | None]:
    """NONE, or why ``group_id`` is not a share group here. A group known only by its
    share-partition state (a cluster's coordinator after a restart, before any member
    rejoined) is a share group again, empty, as Kafka's records keep it."""
    coordinator_error = broker.groups.coordinator_error(group_id)
    if coordinator_error != ErrorCode.NONE:
        return coordinator_error, None
    if broker.groups.state.is_share_group(group_id):
        return ErrorCode.NONE, None
    if _another_kind_of_group(broker, group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    if await broker.share_partitions.has_stored_state(group_id):

        def ensure(state, now):
            state.share_groups.ensure(group_id)
            return state.outcome(None)

        await broker.groups.run(ensure, group_id)
        return ErrorCode.NONE, None
    return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."


async def handle_describe_share_group_offsets(broker: Broker, request: Request) -> dict:
    version = request.header.api_version
    manager = broker.share_partitions
    groups = []
    for wanted in request.body["groups"]:
        group_id = wanted["group_id"]
        entry = {"group_id": group_id, "topics": [], "error_code": 0, "error_message": None}
        groups.append(entry)
        if group_denied(broker, request, DESCRIBE, group_id):
            entry["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            continue
        error, message = await _group_state(broker, group_id)
        if error != ErrorCode.NONE:
            entry["error_code"], entry["error_message"] = int(error), message
            continue
        topology = broker.topology
        if wanted["topics"] is None:  # every topic the group has state for
            wanted_keys = None
        else:
            wanted_keys = [
                (tid, p)
                for t in wanted["topics"]
                if (tid := topology.topic_id(t["topic_name"])) is not None
                for p in t["partitions"]
            ]
        try:
            states = await manager.start_offsets(group_id, wanted_keys)
        except PersistError as exc:
            entry["error_code"], entry["error_message"] = int(exc.code), str(exc)
            continue
        if wanted["topics"] is None:
            names: dict[str, list[int]] = {}
            for tid, index in sorted(states, key=lambda k: k[1]):
                name = topic_name(broker, tid)
                if name is not None:
                    names.setdefault(name, []).append(index)
        else:
            names = {t["topic_name"]: t["partitions"] for t in wanted["topics"]}
        for name, partitions in sorted(names.items()):
            if topic_denied(broker, request, DESCRIBE, name, quiet=True):
                continue  # Kafka leaves out the topics the client may not describe
            tid = topology.topic_id(name)
            rows = []
            for index in partitions:
                if tid is None or not topology.has_partition(name, index):
                    rows.append({"partition_index": index, "start_offset": UNINITIALIZED,
                                 "leader_epoch": -1, "lag": -1,
                                 "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                                 "error_message": "This server does not host this "
                                                  "topic-partition."})
                    continue
                start, complete = states.get((tid, index), (UNINITIALIZED, -1))
                rows.append({"partition_index": index, "start_offset": start,
                             "leader_epoch": 0 if start != UNINITIALIZED else -1,
                             "lag": _lag(broker, version, name, index, start, complete),
                             "error_code": 0, "error_message": None})
            entry["topics"].append({"topic_name": name, "topic_id": tid, "partitions": rows})
    return {"throttle_time_ms": 0, "groups": groups}


def _lag(broker: Broker, version: int, topic: str, index: int, start: int,
         complete: int) -> int:
    """Kafka's lag: high watermark - start offset - records delivered past it; -1 before
    v1, without a state, or where this broker holds no replica to read it from."""
    partition = broker.topics.partition(topic, index)
    if version < 1 or start == UNINITIALIZED or complete < 0 or partition is None:
        return -1
    return max(0, partition.high_watermark - start - complete)


def _top(code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "responses": []}


async def handle_alter_share_group_offsets(broker: Broker, request: Request) -> dict:
    body = request.body
    group_id = body["group_id"]
    if not group_id:
        return _top(ErrorCode.INVALID_GROUP_ID)
    if group_denied(broker, request, READ, group_id):
        return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = broker.groups.coordinator_error(group_id)
    if error != ErrorCode.NONE:
        return _top(error)
    if _another_kind_of_group(broker, group_id):  # else a share group, made if unknown
        return _top(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    def ensure_empty(state, now):
        group = state.share_groups.ensure(group_id)
        return state.outcome(len(group.members))

    members = (await broker.groups.run(ensure_empty, group_id)).result
    if members:
        return _top(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    manager = broker.share_partitions
    responses = []
    for topic in body["topics"]:
        name = topic["topic_name"]
        meta = broker.topics.metadata(name)
        rows = []
        responses.append({"topic_name": name, "topic_id": meta.topic_id if meta else None,
                          "partitions": rows})
        for part in topic["partitions"]:
            index = part["partition_index"]
            row = {"partition_index": index, "error_code": 0, "error_message": None}
            rows.append(row)
            if topic_denied(broker, request, READ, name):
                row["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif meta is None or not 0 <= index < meta.partitions:
                row["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                row["error_message"] = "This server does not host this topic-partition."
            else:
                try:
                    await manager.alter_start_offset(group_id, meta.topic_id, index,
                                                     part["start_offset"])
                except PersistError as exc:
                    row["error_code"], row["error_message"] = int(exc.code), str(exc)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "responses": responses}


async def handle_delete_share_group_offsets(broker: Broker, request: Request) -> dict:
    body = request.body
    group_id = body["group_id"]
    if not group_id:
        return _top(ErrorCode.INVALID_GROUP_ID)
    if group_denied(broker, request, DELETE, group_id):
        return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message = await _group_state(broker, group_id)
    if error != ErrorCode.NONE:
        return _top(error, message)
    if broker.groups.state.share_groups.groups[group_id].members:
        return _top(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    manager = broker.share_partitions
    responses = []
    gone = set()
    for topic in body["topics"]:
        name = topic["topic_name"]
        meta = broker.topics.metadata(name)
        row = {"topic_name": name, "topic_id": meta.topic_id if meta else None,
               "error_code": 0, "error_message": None}
        responses.append(row)
        if topic_denied(broker, request, READ, name):
            row["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif meta is None:
            row["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            row["error_message"] = "This server does not host this topic-partition."
        else:
            gone.add(meta.topic_id)
    try:
        await manager.forget_partitions(group_id, gone)
    except PersistError as exc:
        return _top(exc.code, str(exc))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "responses": responses}
