"""The server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor is a pure function from the group's members (their subscriptions and the
target assignment they had) and the subscribed topics' partition counts to a new target
assignment. Kafka's broker config ``group.consumer.assignors`` lists the names served;
the first is the default. Both are written from the behaviour KIP-848 describes:

* ``uniform``: every partition of a subscribed topic goes to one of its subscribers,
  the number of partitions per member differs by at most one wherever subscriptions
  allow it, and partitions stay with the member that had them when that keeps balance
  (sticky), so a rebalance moves as few partitions as it can.
* ``range``: per topic, the subscribers sorted by member id get contiguous ranges of
  partitions, the first ``partitions % members`` one more (co-partitioning: members
  get the same partition numbers of topics with equal partition counts).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicPartition = tuple[uuid.UUID, int]
Assignment = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class AssignorMember:
    """What an assignor knows of one member."""

    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssignorTopic:
    name: str
    partitions: int


Assignor = Callable[
    [Mapping[str, AssignorMember], Mapping[uuid.UUID, AssignorTopic]], dict[str, Assignment]
]


def _freeze(owned: Mapping[str, Mapping[uuid.UUID, set[int]]]) -> dict[str, Assignment]:
    return {
        member: {tid: frozenset(parts) for tid, parts in topics.items() if parts}
        for member, topics in owned.items()
    }


def uniform(
    members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
) -> dict[str, Assignment]:
    """Balanced and sticky (see the module docstring)."""
    owner: dict[TopicPartition, str] = {}
    load = dict.fromkeys(members, 0)
    order = sorted(members)
    subscribers = {
        tid: [m for m in order if tid in members[m].subscribed] for tid in topics
    }
    every = [
        (tid, p)
        for tid in sorted(topics, key=lambda t: topics[t].name)
        for p in range(topics[tid].partitions)
        if subscribers[tid]
    ]
    # Sticky pass: a member keeps what it had, up to a fair share of what it can take.
    eligible_count = {m: sum(topics[t].partitions for t in members[m].subscribed if t in topics)
                      for m in order}
    fair = -(-len(every) // max(1, len(members)))  # ceil: the most anyone ends with if balanced
    for m in order:
        for tid, parts in sorted(members[m].current.items(), key=lambda kv: str(kv[0])):
            if tid not in topics or tid not in members[m].subscribed:
                continue
            for p in sorted(parts):
                if p < topics[tid].partitions and (tid, p) not in owner and load[m] < fair:
                    owner[(tid, p)] = m
                    load[m] += 1
    # Everything else to the least-loaded subscriber.
    for tp in every:
        if tp not in owner:
            m = min(subscribers[tp[0]], key=lambda x: (load[x], eligible_count[x], x))
            owner[tp] = m
            load[m] += 1
    # Balance: move a partition from a member to a subscriber holding two fewer, until
    # none. Partitions are ordered once per pass (not after every move), and a partition
    # whose owner holds fewer than the least-loaded member plus two is skipped without
    # looking at its subscribers: 2,000 partitions x 100 members stays a few passes.
    moved = True
    while moved:
        moved = False
        floor = min(load.values(), default=0)
        for tp in sorted(owner, key=lambda t: (-load[owner[t]], topics[t[0]].name, t[1])):
            m = owner[tp]
            if load[m] < floor + 2:
                continue
            target = min(subscribers[tp[0]], key=lambda x: (load[x], x))
            if load[target] + 1 < load[m]:
                owner[tp] = target
                load[m] -= 1
                load[target] += 1
                moved = True
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for (tid, p), m in owner.items():
        result[m].setdefault(tid, set()).add(p)
    return _freeze(result)


def range_(
    members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
) -> dict[str, Assignment]:
    """Contiguous ranges per topic (see the module docstring)."""
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for tid, topic in topics.items():
        subscribers = sorted(m for m in members if tid in members[m].subscribed)
        if not subscribers:
            continue
        per, extra = divmod(topic.partitions, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            count = per + (1 if i < extra else 0)
            if count:
                result[m][tid] = set(range(start, start + count))
            start += count
    return _freeze(result)


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}

# Kafka 4.0's group.consumer.assignors takes the builtin names or the class names of
# its builtin assignors (its default was the class names before 4.0).
ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(raw: str) -> list[str]:
    """``group.consumer.assignors`` as the names served, first the default. Raises
    ValueError with Kafka's wording for a name it would not load, or an empty list."""
    names = []
    for item in (a.strip() for a in raw.split(",")):
        if not item:
            continue
        name = ASSIGNOR_CLASSES.get(item, item)
        if name not in ASSIGNORS:
            raise ValueError(
                f"Invalid value {item} for configuration group.consumer.assignors: "
                f"Class {item} cannot be found"
            )
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(
            f"Invalid value {raw!s} for configuration group.consumer.assignors: "
            "at least one assignor is required"
        )
    return names
