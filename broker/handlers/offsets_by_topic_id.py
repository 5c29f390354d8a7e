"""OffsetCommit 10 and OffsetFetch 10: the group's topics named by topic id.

Groups keep their offsets by topic name (as Kafka's ``__consumer_offsets`` does),
so these versions only translate at the edge: each topic id is resolved to its
name (``broker/topic_ids.py``, one dict read), the request is handled exactly as
v9 (``handlers/groups.py``: authorization, group and member checks, the commit or
fetch), and the answer names its topics by id again. An id no topic has is
answered per partition with UNKNOWN_TOPIC_ID before any authorization check of
the topic, as Kafka 4.1 does (its KafkaApis resolves the ids first and answers
the topics whose name stayed empty with that error); the group's own checks
(GROUP_AUTHORIZATION_FAILED, coordinator errors) still come first. An OffsetFetch
for all the group's topics leaves out offsets of topics that no longer exist
(they have no id to be named by), as Kafka does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.handlers import groups
from kafkette.broker.security.authorizer.checks import READ, group_denied
from kafkette.broker.topic_ids import topic_id, topic_name
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

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
        return await groups.handle_offset_commit(broker, request)
    topics = request.body["topics"]
    unknown = set(_resolve(broker, topics))
    if unknown and not group_denied(broker, request, READ, request.body["group_id"], quiet=True):
        request.body["topics"] = [t for i, t in enumerate(topics) if i not in unknown]
    else:  # nothing unknown, or every partition answers GROUP_AUTHORIZATION_FAILED anyway
        unknown = set()
    response = await groups.handle_offset_commit(broker, request)
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
        return await groups.handle_offset_fetch(broker, request)
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
    response = await groups.handle_offset_fetch(broker, request)
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
