"""The broker's fetch sessions, bounded as Kafka bounds them.

``max.incremental.fetch.session.cache.slots`` (default 1000) sessions at most; 0
turns sessions off (every full fetch is answered with session id 0, so clients keep
sending full fetches). When the cache is full, a new session may take the place of an
existing one only as Kafka's ``FetchSessionCache.tryEvict`` allows:

1. a session unused for longer than ``MIN_EVICTION_MS`` (stale) goes first;
2. otherwise the least valuable *evictable* session goes if the newcomer is worth
   more: value orders by (privileged, partition count, id), so a follower's
   session beats a consumer's and a bigger session a smaller one.

A session becomes evictable by other consumers only once it is older than
``MIN_EVICTION_MS`` (a new session cannot be pushed out before its client has used
it); a consumer's session is evictable by a follower's at once. As in Kafka these
flags are worked out when the session is used (``touch``), not continuously.

Kafka 4.0 splits the cache into 8 shards of slots/8 each; kafkette keeps one cache of
all the slots (one event loop, no lock to spread): see docs/fetch-sessions.md.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

# Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (a constant there, not a config).
MIN_EVICTION_MS = 120_000
_INT32_MAX = 2**31 - 1

TopicKey = str | uuid.UUID  # the topic name (Fetch 7-12) or its id (13+)
PartitionKey = tuple[TopicKey, int]


@dataclass(slots=True, eq=False)
class CachedPartition:
    """One partition of a session: the client's last fetch of it and what the last answer
    that carried it told the client (an incremental answer leaves it out while both hold)."""

    topic: TopicKey
    topic_id: uuid.UUID
    name: str | None  # resolved at each request when the session goes by topic id
    fetch: dict  # the request's FetchPartition: offset, max bytes, leader epoch ...
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True, eq=False)
class FetchSession:
    id: int
    privileged: bool  # a follower's (Kafka: may evict consumers' sessions)
    uses_topic_ids: bool  # created by Fetch 13+: only 13+ may continue it, and the reverse
    partitions: dict[PartitionKey, CachedPartition]  # in answer order (round robin)
    creation_ms: int
    last_used_ms: int
    epoch: int
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def evict_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(self, topics: list[dict], forgotten: list[dict], zero_id: uuid.UUID) -> None:
        """Apply an incremental request: new or changed partitions, then the forgotten ones."""
        partitions = self.partitions
        by_id = self.uses_topic_ids
        for topic in topics:
            key: TopicKey = topic["topic_id"] if by_id else topic["topic"]
            topic_id = topic["topic_id"] if by_id else zero_id
            for fetch in topic["partitions"]:
                cached = partitions.get((key, fetch["partition"]))
                if cached is None:
                    partitions[(key, fetch["partition"])] = CachedPartition(
                        key, topic_id, None if by_id else key, fetch
                    )
                else:
                    cached.fetch = fetch  # the cached HW stays: it decides the next answer
        for topic in forgotten:
            key = topic["topic_id"] if by_id else topic["topic"]
            for index in topic["partitions"]:
                partitions.pop((key, index), None)


@dataclass
class FetchSessionCache:
    """Sessions by id, at most ``max_slots`` of them (Kafka's eviction rules above)."""

    max_slots: int
    eviction_ms: int = MIN_EVICTION_MS
    sessions: dict[int, FetchSession] = field(default_factory=dict)
    num_partitions: int = 0  # over all sessions (Kafka's NumIncrementalFetchPartitionsCached)
    evictions: int = 0
    incremental_fetches: int = 0  # answered in a session (Kafka counts them as well)
    _random: random.Random = field(default_factory=random.Random)

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None and session.cached_size > 0:
            self.num_partitions -= session.cached_size
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark ``session`` used now and work out again whether others may evict it."""
        session.last_used_ms = now_ms
        if session.cached_size > 0:
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.num_partitions += session.cached_size
        old_enough = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old_enough
        session.evictable_by_all = old_enough

    def maybe_create(
        self,
        now_ms: int,
        privileged: bool,
        size: int,
        uses_topic_ids: bool,
        partitions: Callable[[], dict[PartitionKey, CachedPartition]],
    ) -> int:
        """A new session's id, or 0 when there is no room (``partitions`` is then never
        built: a sessionless answer costs nothing more)."""
        if len(self.sessions) >= self.max_slots and not self._try_evict(privileged, size, now_ms):
            return 0
        session_id = self._new_id()
        session = FetchSession(
            session_id, privileged, uses_topic_ids, partitions(), now_ms, now_ms, epoch=1
        )
        self.sessions[session_id] = session
        self.touch(session, now_ms)
        return session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            self.remove(stalest.id)
            self.evictions += 1
            return True
        candidates = [
            s for s in self.sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.evict_key)
        # The newcomer's key has id 0 (Kafka's EvictableKey(privileged, size, 0)): a tie
        # on (privileged, size) keeps the existing session.
        if (privileged, size, 0) < weakest.evict_key():
            return False
        self.remove(weakest.id)
        self.evictions += 1
        return True

    def _new_id(self) -> int:
        while True:
            session_id = self._random.randint(1, _INT32_MAX)
            if session_id not in self.sessions:
                return session_id


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 1, 2, ... wrapping past int32 max back to 1."""
    if epoch < 0:
        return -1
    return 1 if epoch == _INT32_MAX else epoch + 1
