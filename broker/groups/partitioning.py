"""Which ``__consumer_offsets`` partition holds a group: Kafka's exact rule.

Kafka computes ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
where ``hashCode`` is Java's ``String.hashCode`` (over UTF-16 code units, int32
overflow) and ``Utils.abs(n)`` is ``0`` for ``Integer.MIN_VALUE`` and
``Math.abs(n)`` otherwise. Matching it keeps a group in the partition a Kafka
tool (or a migrated data dir) expects.
"""

from __future__ import annotations

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` of ``text`` as a signed int32."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == _INT32_MIN else abs(n)


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition Kafka assigns to ``group_id``."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
