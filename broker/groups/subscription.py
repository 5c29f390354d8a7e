"""Topics named in a ``consumer``-protocol subscription (JoinGroup metadata).

Kafka reads them to know which topics a consumer group uses: offsets of
subscribed topics are kept while the group is Stable and OffsetDelete refuses
them (GROUP_SUBSCRIBED_TO_TOPIC). Layout (versions 0..3, not flexible): int16
version, int32 topic count, then int16-length UTF-8 topic names; later fields
are not needed here.
"""

from __future__ import annotations

import struct

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscribed_topics(metadata: bytes) -> frozenset[str]:
    """Topic names in one member's subscription; ValueError if malformed."""
    try:
        (version,) = struct.unpack_from(">h", metadata, 0)
        if version < 0:
            raise ValueError(f"bad ConsumerProtocolSubscription version {version}")
        (count,) = struct.unpack_from(">i", metadata, 2)
        pos, topics = 6, set()
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                raise ValueError("truncated ConsumerProtocolSubscription")
            topics.add(metadata[pos : pos + n].decode("utf-8"))
            pos += n
        return frozenset(topics)
    except struct.error as exc:
        raise ValueError("truncated ConsumerProtocolSubscription") from exc
