"""Topic id <-> name, for the requests that name topics by id (Produce 13, Fetch 13+,
OffsetCommit/OffsetFetch 10, Metadata 12+).

A request may name thousands of topics, so each lookup is one dict read, never a
scan of every topic. On a single node the ids are the data dir's (``topics.json``,
kept across restarts; ``TopicRegistry`` indexes them). In a cluster they are the
ones ZooKeeper's topic znodes carry (``/brokers/topics/<t>``'s ``topic_id``),
the same on every broker: the index of a ``ClusterMetadata`` snapshot is built
once per snapshot (snapshots are immutable and replaced whole) and kept on it
(``ClusterMetadata.topic_names_by_id``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

def topic_name(broker: Broker, topic_id: object) -> str | None:
    """The name of the topic with this id, None if there is none (UNKNOWN_TOPIC_ID).
    The zero id names no topic."""
    if not isinstance(topic_id, uuid.UUID) or topic_id == ZERO_UUID:
        return None
    if broker.cluster is not None:
        return broker.cluster.metadata.topic_names_by_id.get(topic_id)
    meta = broker.topics.by_id(topic_id)
    return None if meta is None else meta.name


def topic_id(broker: Broker, name: str) -> uuid.UUID:
    """The id of the named topic; the zero id when it does not exist (Kafka's answer)."""
    if broker.cluster is not None:
        topic = broker.cluster.metadata.topics.get(name)
        return ZERO_UUID if topic is None else topic.topic_id
    meta = broker.topics.metadata(name)
    return ZERO_UUID if meta is None else meta.topic_id
