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


# What an incremental answer would change in its session once it is sent: each sent
# partition with the high watermark and log start it carried, and those that carried records.
SessionUpdates = tuple[list[tuple[CachedPartition, int, int]], list[CachedPartition]]


def incremental_answer(
    cached: list[CachedPartition], responses: list[dict]
) -> tuple[list[dict], SessionUpdates]:
    """The answer's topics for an incremental fetch: ``responses[i]`` answers
    ``cached[i]``; partitions with nothing new are left out, consecutive partitions of
    one topic share an entry (as Kafka's FetchResponse.of builds them).

    The session is not changed here: a throttled answer (client quotas) is sent empty
    and must leave the cached data as it was (Kafka's getThrottledResponse), so what
    the answer would change is returned for ``apply_updates`` once it is sent."""
    topics: list[dict] = []
    sent: list[tuple[CachedPartition, int, int]] = []
    moved: list[CachedPartition] = []
    last: object = None
    entry_partitions: list[dict] = []
    for item, response in zip(cached, responses, strict=True):
        records = response["records"]
        high_watermark = response["high_watermark"]
        log_start = response["log_start_offset"]
        if response["error_code"]:
            high_watermark = -1
        elif (
            not records
            and high_watermark == item.high_watermark
            and log_start == item.log_start_offset
        ):
            continue
        sent.append((item, high_watermark, log_start))
        if records:
            moved.append(item)
        if item.topic != last:
            last = item.topic
            entry_partitions = []
            name = item.name or ""
            entry = {"topic": name, "topic_id": item.topic_id, "partitions": entry_partitions}
            topics.append(entry)
        entry_partitions.append(response)
    return topics, (sent, moved)


def apply_updates(session: FetchSession, updates: SessionUpdates) -> None:
    """The answer went out: cache what it told the client, and move the partitions that
    carried records to the end of the session's order (round robin)."""
    sent, moved = updates
    for item, high_watermark, log_start in sent:
        item.high_watermark = high_watermark
        item.log_start_offset = log_start
    partitions = session.partitions
    for item in moved:
        key = (item.topic, item.fetch["partition"])
        if partitions.pop(key, None) is item:  # still there (not forgotten meanwhile)
            partitions[key] = item
