"""The partitions a session's answers carry.

A full fetch that starts a session caches every partition with the high watermark
and log start offset its answer gave. An incremental answer then carries a partition
only when the client learns something from it (Kafka's
``CachedPartition.maybeUpdateResponseData``): records, a high watermark or log start
offset other than the cached one, or an error (whose cached high watermark becomes -1
so that the partition is sent again once the error is gone). Partitions that carried
records move to the end of the session's order, so that under ``max_bytes`` every
partition gets its turn (Kafka's round robin).

One pass over the session's partitions, a few comparisons each: the per-partition work
that a session saves on the wire is not spent again here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from kafkette.broker.fetch_sessions.cache import (
    CachedPartition,
    FetchSession,
    PartitionKey,
    TopicKey,
)


def new_session_partitions(
    answered: Iterable[tuple[TopicKey, uuid.UUID, str | None, dict, dict]],
) -> dict[PartitionKey, CachedPartition]:
    """A new session's partitions from a full fetch: (topic key, topic id, name, the
    request's FetchPartition, its answer) in request order."""
    partitions: dict[PartitionKey, CachedPartition] = {}
    for key, topic_id, name, fetch, response in answered:
        partitions[(key, fetch["partition"])] = CachedPartition(
            key,
            topic_id,
            name,
            fetch,
            -1 if response["error_code"] else response["high_watermark"],
            response["log_start_offset"],
        )
    return partitions


def incremental_answer(
    session: FetchSession, cached: list[CachedPartition], responses: list[dict]
) -> list[dict]:
    """The answer's topics for an incremental fetch: ``responses[i]`` answers
    ``cached[i]``; partitions with nothing new are left out, consecutive partitions of
    one topic share an entry (as Kafka's FetchResponse.of builds them)."""
    topics: list[dict] = []
    moved: list[CachedPartition] = []
    last: object = None
    entry_partitions: list[dict] = []
    for item, response in zip(cached, responses, strict=True):
        records = response["records"]
        high_watermark = response["high_watermark"]
        log_start = response["log_start_offset"]
        if response["error_code"]:
            item.high_watermark = -1
        elif (
            not records
            and high_watermark == item.high_watermark
            and log_start == item.log_start_offset
        ):
            continue
        else:
            item.high_watermark = high_watermark
        item.log_start_offset = log_start
        if records:
            moved.append(item)
        if item.topic != last:
            last = item.topic
            entry_partitions = []
            name = item.name or ""
            entry = {"topic": name, "topic_id": item.topic_id, "partitions": entry_partitions}
            topics.append(entry)
        entry_partitions.append(response)
    partitions = session.partitions
    for item in moved:
        key = (item.topic, item.fetch["partition"])
        if partitions.pop(key, None) is item:  # still there (not forgotten meanwhile)
            partitions[key] = item
    return topics
