"""The cluster as every broker sees it: one immutable snapshot of ZooKeeper's state.

``MetadataWatcher`` publishes a new ``ClusterMetadata`` whenever a watched
znode changes; handlers read the current one without waiting, and every
broker builds the same snapshot from the same znodes, so every broker answers
Metadata alike.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A registered broker. ``epoch`` is the zxid that created its registration znode
    (Kafka's broker epoch): a broker that restarted has a new one, even when the
    controller never saw its old registration vanish."""

    id: int
    host: str
    port: int
    rack: str | None
    epoch: int = -1
    # Listener name -> (host, port), from the registration's "endpoints". Empty for a
    # registration that names none: then host/port serve every listener.
    endpoints: tuple[tuple[str, str, int], ...] = ()
    # Its schema registry's URL (the registration's "kafkette_schema_registry"), where
    # other brokers' registries forward writes when it leads ``_schemas``-0; None: none.
    schema_registry_url: str | None = None

    def endpoint_for(self, listener_name: str) -> tuple[str, int] | None:
        """Where a client that came in on ``listener_name`` reaches this broker; None
        when this broker has no such listener (Kafka leaves it out of Metadata)."""
        if not self.endpoints:
            return self.host, self.port
        for name, host, port in self.endpoints:
            if name == listener_name:
                return host, port
        return None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state`` and its znode version (for
    conditional writes: the controller's elections, the leader's ISR changes)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    replicas: dict[int, tuple[int, ...]]  # partition -> replicas, preferred leader first
    configs: dict[str, str]
    zk_version: int = 0  # of /brokers/topics/<t>, for CreatePartitions' conditional write
    # Ongoing reassignments (KIP-455), only partitions being moved: the target replicas
    # not in the original set, and the original replicas not in the target. While a
    # partition moves, ``replicas`` is the full set (target first, then the rest).
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def target_replicas(self, partition: int) -> tuple[int, ...]:
        """Where the partition is going (its replicas when it is not moving)."""
        removing = self.removing.get(partition, ())
        return tuple(r for r in self.replicas.get(partition, ()) if r not in removing)

    def original_replicas(self, partition: int) -> tuple[int, ...]:
        """Where the partition was before its ongoing reassignment (Kafka's origin)."""
        adding = self.adding.get(partition, ())
        return tuple(r for r in self.replicas.get(partition, ()) if r not in adding)

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


NO_LEADER = -1


@dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str
    controller_id: int  # -1 while there is none
    brokers: dict[int, BrokerInfo]  # the live ones (registered in /brokers/ids)
    topics: dict[str, TopicInfo]
    states: dict[tuple[str, int], PartitionState]
    # Topics whose deletion was asked (/admin/delete_topics) and not yet done.
    pending_deletions: frozenset[str] = field(default_factory=frozenset)
    # Topics whose znode lost its topic id (rewritten by an old tool): listed in
    # ``topics`` under the id they had; the controller writes it back.
    ids_to_restore: frozenset[str] = field(default_factory=frozenset)

    @cached_property
    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        """Topic id -> name (requests by id: broker/topic_ids.py), built once per snapshot
        the first time one is asked for (a snapshot never changes; a new one is a new index)."""
        return {topic.topic_id: name for name, topic in self.topics.items()}

    def state(self, topic: str, partition: int) -> PartitionState | None:
        return self.states.get((topic, partition))

    def leader_of(self, topic: str, partition: int) -> int:
        """The live leader's id, or -1 (no state yet, no leader, or its broker is gone)."""
        state = self.states.get((topic, partition))
        if state is None or state.leader not in self.brokers:
            return NO_LEADER
        return state.leader


EMPTY = ClusterMetadata("", NO_LEADER, {}, {}, {})
