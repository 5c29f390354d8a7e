"""The classic ``consumer`` embedded protocol's bytes, as a consumer group reads them
when it runs classic members (KIP-848's online upgrade): ConsumerProtocolSubscription
(JoinGroup metadata: topics, and from v1 the partitions the member owns) and
ConsumerProtocolAssignment (SyncGroup: the partitions given). Layouts (not flexible):

* Subscription: int16 version; topics [string]; user_data bytes; v1+: owned_partitions
  [topic string, partitions [int32]]; v2+: generation_id int32; v3+: rack_id string.
* Assignment: int16 version; assigned_partitions [topic string, partitions [int32]];
  user_data bytes.
"""

from __future__ import annotations

import struct

Partitions = dict[str, frozenset[int]]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise ValueError("truncated string")
        out = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return out

    def skip_bytes(self) -> None:
        n = self.take(">i")
        if n > 0:
            self.pos += n

    def partitions(self) -> Partitions:
        out: dict[str, frozenset[int]] = {}
        for _ in range(max(self.take(">i"), 0)):
            topic = self.string() or ""
            count = max(self.take(">i"), 0)
            parts = struct.unpack_from(f">{count}i", self.data, self.pos)
            self.pos += 4 * count
            out[topic] = out.get(topic, frozenset()) | frozenset(parts)
        return out


def decode_subscription(metadata: bytes) -> tuple[list[str], Partitions | None]:
    """(topics, owned partitions or None before v1: an eager member owns nothing when it
    joins). ValueError if malformed."""
    try:
        r = _Reader(metadata)
        version = r.take(">h")
        if version < 0:
            raise ValueError(f"bad ConsumerProtocolSubscription version {version}")
        topics = [r.string() or "" for _ in range(max(r.take(">i"), 0))]
        r.skip_bytes()
        owned = r.partitions() if version >= 1 else None
        return topics, owned
    except struct.error as exc:
        raise ValueError("truncated ConsumerProtocolSubscription") from exc


def decode_assignment(data: bytes) -> Partitions:
    if not data:
        return {}
    try:
        r = _Reader(data)
        r.take(">h")
        return r.partitions()
    except struct.error as exc:
        raise ValueError("truncated ConsumerProtocolAssignment") from exc


def encode_assignment(partitions: Partitions) -> bytes:
    """ConsumerProtocolAssignment v0 (every client reads it), no user data."""
    out = [struct.pack(">hi", 0, len(partitions))]
    for topic in sorted(partitions):
        name = topic.encode("utf-8")
        parts = sorted(partitions[topic])
        out.append(struct.pack(f">h{len(name)}si{len(parts)}i", len(name), name, len(parts),
                               *parts))
    out.append(struct.pack(">i", -1))
    return b"".join(out)
