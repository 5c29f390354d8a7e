"""Cost of naming a topic by its id (Produce 13, OffsetCommit/OffsetFetch 10, Metadata v12).

A request can name thousands of topics by id, so each lookup must be a dict read, not a
scan of every topic. Times ``broker/topic_ids.topic_name`` over 10,000 topics on a single
node (``TopicRegistry``'s index) and in a cluster (the per-snapshot index of a
``ClusterMetadata``), against the linear scan the registry did before, and the one-off
cost of indexing a new cluster snapshot. Prints nanoseconds per lookup.
Run: ``python -m bench.topic_id_lookup``.
"""

from __future__ import annotations

import timeit
import uuid
from types import SimpleNamespace

from kafkette.broker import topic_ids
from kafkette.broker.cluster.metadata import ClusterMetadata, TopicInfo
from kafkette.broker.topics import TopicRegistry
from kafkette.log import TopicMetadata

TOPICS = 10_000
ROUNDS = 20_000


def _single_node() -> tuple[SimpleNamespace, list[uuid.UUID], dict[str, TopicMetadata]]:
    metas = {
        f"topic-{n}": TopicMetadata(f"topic-{n}", uuid.uuid4(), 1, {}, frozenset())
        for n in range(TOPICS)
    }
    # Partitions hosted nowhere: the registry indexes ids without opening any log.
    registry = TopicRegistry(SimpleNamespace(topics=metas), None)  # type: ignore[arg-type]
    broker = SimpleNamespace(cluster=None, topics=registry)
    return broker, [m.topic_id for m in metas.values()], metas


def _cluster() -> tuple[SimpleNamespace, list[uuid.UUID]]:
    infos = {
        f"topic-{n}": TopicInfo(f"topic-{n}", uuid.uuid4(), {0: (1,)}, {}) for n in range(TOPICS)
    }
    metadata = ClusterMetadata("c", 1, {}, infos, {})
    return SimpleNamespace(cluster=SimpleNamespace(metadata=metadata)), [
        t.topic_id for t in infos.values()
    ]


def _ns(statement, rounds: int = ROUNDS) -> float:
    return min(timeit.repeat(statement, number=rounds, repeat=3)) / rounds * 1e9


def main() -> None:
    broker, ids, metas = _single_node()
    last = ids[-1]
    print(f"{TOPICS:,} topics, the last one's id looked up (worst case for a scan)")
    print(f"single node, index:        {_ns(lambda: topic_ids.topic_name(broker, last)):10.0f} ns")
    print(f"single node, linear scan:  "
          f"{_ns(lambda: next(m for m in metas.values() if m.topic_id == last), 200):10.0f} ns")
    unknown = uuid.uuid4()
    missing = _ns(lambda: topic_ids.topic_name(broker, unknown))
    print(f"single node, unknown id:   {missing:10.0f} ns")
    cluster, cluster_ids = _cluster()
    last = cluster_ids[-1]
    topic_ids.topic_name(cluster, last)  # index this snapshot
    print(f"cluster, index:            {_ns(lambda: topic_ids.topic_name(cluster, last)):10.0f} ns")
    fresh = [_cluster()[0] for _ in range(3)]
    built = min(timeit.repeat(lambda: topic_ids.topic_name(fresh.pop(), last), number=1,
                              repeat=3)) * 1e3
    print(f"cluster, indexing a new snapshot: {built:.2f} ms (once per snapshot)")


if __name__ == "__main__":
    main()
