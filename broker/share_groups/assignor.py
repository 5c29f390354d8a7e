"""The ``simple`` share-group assignor: who may fetch from which partition.

A share group hands records out one by one under acquisition locks, so a partition
can be fetched by several members at once. Kafka 4.3's ``simple`` assignor (the only
one, ``group.share.assignors``) uses that in both directions, and so does this one:

* fewer members than partitions: every partition goes to exactly one member and the
  members' partition counts differ by at most one, as in a consumer group;
* more members than partitions: every partition is shared by ``ceil(members /
  partitions)`` members, so every member gets at least one partition (with one
  partition, every member gets it);
* sticky: a member keeps what it had wherever that keeps the balance, so a join or a
  leave moves as little as it can.

Partitions are grouped by the set of members subscribed to their topic: with one
subscription for all (the usual case) that is one pool over every partition; members
with different subscriptions share out each pool separately.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kafkette.broker.groups.consumer.assignors import Assignment, AssignorMember, AssignorTopic

NAME = "simple"
TopicPartition = tuple[uuid.UUID, int]


def _pools(
    members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
) -> dict[frozenset[str], list[TopicPartition]]:
    """Subscriber set -> the partitions of the topics with exactly those subscribers."""
    pools: dict[frozenset[str], list[TopicPartition]] = {}
    for tid in sorted(topics, key=str):
        subscribers = frozenset(m for m, spec in members.items() if tid in spec.subscribed)
        if subscribers:
            pools.setdefault(subscribers, []).extend(
                (tid, p) for p in range(topics[tid].partitions)
            )
    return pools


def _share_out(
    subscribers: frozenset[str],
    partitions: list[TopicPartition],
    current: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """One pool: each partition to ``sharing`` members, each member a balanced count."""
    sharing = -(-len(subscribers) // len(partitions))  # ceil
    slots = sharing * len(partitions)
    pool = set(partitions)
    kept: dict[str, list[TopicPartition]] = {
        m: sorted(current.get(m, set()) & pool, key=lambda tp: (str(tp[0]), tp[1]))
        for m in sorted(subscribers)
    }
    # The members keeping the most get the extra slots first (stickiness), then by id.
    order = sorted(subscribers, key=lambda m: (-len(kept[m]), m))
    base, extra = divmod(slots, len(subscribers))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
    holders: dict[TopicPartition, set[str]] = {tp: set() for tp in partitions}
    result: dict[str, set[TopicPartition]] = {m: set() for m in subscribers}
    for m in order:
        for tp in kept[m]:
            if len(result[m]) < quota[m] and len(holders[tp]) < sharing:
                result[m].add(tp)
                holders[tp].add(m)
    for tp in partitions:
        while len(holders[tp]) < sharing:
            candidates = [m for m in order if tp not in result[m] and len(result[m]) < quota[m]]
            if not candidates:
                break  # nobody left who can take it: tolerate a slight imbalance
            chosen = max(candidates, key=lambda m: quota[m] - len(result[m]))
            result[chosen].add(tp)
            holders[tp].add(chosen)
    return result


def simple(
    members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
) -> dict[str, Assignment]:
    """The target assignment of every member (see the module docstring)."""
    current = {
        m: {(tid, p) for tid, parts in spec.current.items() for p in parts}
        for m, spec in members.items()
    }
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for subscribers, partitions in _pools(members, topics).items():
        for m, tps in _share_out(subscribers, partitions, current).items():
            for tid, p in tps:
                owned[m].setdefault(tid, set()).add(p)
    return {
        m: {tid: frozenset(parts) for tid, parts in by_topic.items() if parts}
        for m, by_topic in owned.items()
    }
