"""The subscription id Kafka 4.0 gives a client instance, computed as Java computes it.

CRC32C of Java's ``HashSet.toString()`` of the requested metrics followed by the push
interval, XORed with the instance id's Java hash: the metrics are listed in Java's
HashSet order, so a client sees the ids a Kafka broker gave it in the measured cases
(Java breaks ties within a HashSet bucket by chain order, which matches insertion order
here only while no bucket is treeified or resized mid-chain). The id derives only from
the metrics, the interval and the instance id, so after a restart a client's old id
still matches.
"""

from __future__ import annotations

import uuid

from kafkette.wire.checksum import crc32c


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _java_string_hash(text: str) -> int:
    encoded = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(encoded), 2):
        h = (31 * h + int.from_bytes(encoded[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def java_hash_set_order(items: list[str]) -> list[str]:
    """``items`` (distinct, in insertion order) as a ``java.util.HashSet`` built by adding
    them one by one iterates them: by bucket of the spread String hash in a table that
    starts at 16 and doubles past a 0.75 load, ties in insertion order."""
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(text: str) -> int:
        h = _java_string_hash(text)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [text for _, _, text in sorted((bucket(t), i, t) for i, t in enumerate(items))]


def java_uuid_hash(instance_id: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode()``: the two halves XORed, then folded to 32 bits."""
    h = (instance_id.int >> 64) ^ (instance_id.int & 0xFFFF_FFFF_FFFF_FFFF)
    return _int32((h >> 32) ^ (h & 0xFFFFFFFF))


def subscription_id(metrics: list[str], push_interval_ms: int, instance_id: uuid.UUID) -> int:
    """The id Kafka 4.0 gives this subscription of this instance (see the module doc)."""
    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    return _int32(crc32c(text.encode()) ^ java_uuid_hash(instance_id))
