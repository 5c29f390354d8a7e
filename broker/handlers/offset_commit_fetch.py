"""OffsetCommit and OffsetFetch; from version 10 the group's topics are named by topic id.

Groups keep their offsets by topic name (as Kafka's ``__consumer_offsets`` does),
so these versions only translate at the edge: each topic id is resolved to its
name (``broker/topic_ids.py``, one dict read), the request is handled exactly as
v9 (``_commit_by_name``/``_fetch_by_name`` below: authorization, group and member
checks, the commit or fetch), and the answer names its topics by id again. An id no topic has is
answered per partition with UNKNOWN_TOPIC_ID before any authorization check of
the topic, as Kafka 4.1 does (its KafkaApis resolves the ids first and answers
the topics whose name stayed empty with that error); the group's own checks
(GROUP_AUTHORIZATION_FAILED, coordinator errors) still come first. An OffsetFetch
for all the group's topics leaves out offsets of topics that no longer exist
(they have no id to be named by), as Kafka does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.groups.coordinator import CoordinatorUnavailable
from kafkette.broker.groups.model import (
    FetchedOffset,
    OffsetFetchResult,
    Outcome,
)
from kafkette.broker.security.authorizer.checks import (
    DESCRIBE,
    READ,
    group_denied,
    topic_denied,
)
from kafkette.broker.topic_ids import topic_id, topic_name
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")

FIRST_VERSION_BY_ID = 10
_UNKNOWN_TOPIC_ID = int(ErrorCode.UNKNOWN_TOPIC_ID)


def _resolve(broker: Broker, topics: list[dict]) -> list[int]:
    """Give each topic its name (in place); the positions of the unknown ids."""
    unknown = []
    for position, topic in enumerate(topics):
        name = topic_name(broker, topic["topic_id"])
        topic["name"] = name or ""
        if name is None:
            unknown.append(position)
    return unknown


async def handle_offset_commit(broker: Broker, request: Request) -> dict:
    if request.header.api_version < FIRST_VERSION_BY_ID:
        return await _commit_by_name(broker, request)
    topics = request.body["topics"]
    unknown = set(_resolve(broker, topics))
    if unknown and not group_denied(broker, request, READ, request.body["group_id"], quiet=True):
        request.body["topics"] = [t for i, t in enumerate(topics) if i not in unknown]
    else:  # nothing unknown, or every partition answers GROUP_AUTHORIZATION_FAILED anyway
        unknown = set()
    response = await _commit_by_name(broker, request)
    request.body["topics"] = topics
    by_name = iter(response["topics"])  # in the request's order, one entry per topic
    answered = []
    for position, topic in enumerate(topics):
        if position in unknown:
            answered.append(
                {
                    "topic_id": topic["topic_id"],
                    "partitions": [
                        {"partition_index": p["partition_index"], "error_code": _UNKNOWN_TOPIC_ID}
                        for p in topic["partitions"]
                    ],
                }
            )
        else:
            entry = next(by_name)
            entry["topic_id"] = topic["topic_id"]
            answered.append(entry)
    response["topics"] = answered
    return response


async def handle_offset_fetch(broker: Broker, request: Request) -> dict:
    if request.header.api_version < FIRST_VERSION_BY_ID:
        return await _fetch_by_name(broker, request)
    unknown_by_group: list[list[dict]] = []
    asked = []
    for group in request.body["groups"]:
        topics = group["topics"]
        asked.append(topics)
        if topics is None:  # all the group's topics
            unknown_by_group.append([])
            continue
        unknown = _resolve(broker, topics)
        unknown_by_group.append([topics[i] for i in unknown])
        if unknown:
            group["topics"] = [t for i, t in enumerate(topics) if i not in unknown]
    response = await _fetch_by_name(broker, request)
    for group, topics in zip(request.body["groups"], asked, strict=True):
        group["topics"] = topics
    for group, unknown, topics in zip(response["groups"], unknown_by_group, asked, strict=True):
        if topics is None:  # all topics: offsets of a topic that is gone are left out (Kafka)
            for entry in group["topics"]:
                entry["topic_id"] = topic_id(broker, entry["name"])
            group["topics"] = [e for e in group["topics"] if e["topic_id"] != ZERO_UUID]
        else:
            # Named topics answer with the ids the client sent, resolved before the
            # awaited group call: a topic deleted or re-created meanwhile must not
            # change the id the client reads its answer by.
            sent = {t["name"]: t["topic_id"] for t in topics if t["name"]}
            for entry in group["topics"]:
                name = entry["name"]
                entry["topic_id"] = sent[name] if name in sent else topic_id(broker, name)
        if group["error_code"]:
            continue  # the group's error says it all (Kafka answers no topics then)
        for topic in unknown:
            group["topics"].append(
                {
                    "topic_id": topic["topic_id"],
                    "partitions": [
                        {
                            "partition_index": index,
                            "committed_offset": -1,
                            "committed_leader_epoch": -1,
                            "metadata": "",
                            "error_code": _UNKNOWN_TOPIC_ID,
                        }
                        for index in topic["partition_indexes"]
                    ],
                }
            )
    return response


# OffsetCommit v2-4 retention_time_ms is any int64: an expiry past this never comes anyway,
# and it must still fit the int64 of the stored offset record.
MAX_TIMESTAMP_MS = (1 << 63) - 1


async def _commit_by_name(broker: Broker, request: Request) -> dict:
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
            # A KIP-848 group checks member and epoch itself, then commits as a simple
            # commit; a share group has no consumer offsets.
            verdict = state.validate_offset_commit(
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


async def _fetch_by_name(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    stable = body["require_stable"]
    if version >= 8:
        groups = []
        for group in body["groups"]:
            result = _fetch_authorized(broker, request, group["group_id"], group["topics"], stable)
            # KIP-848 groups check member and epoch; share groups have no consumer offsets.
            if result.error == ErrorCode.NONE:  # member and epoch are v9+ (null, -1 before)
                refused = broker.groups.state.validate_offset_fetch(
                    group["group_id"], group.get("member_id"), group.get("member_epoch", -1)
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
