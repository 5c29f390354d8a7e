"""A ZooKeeper cluster's topology (``broker/topology.py``): its snapshot and its controller.

Every answer about brokers, topics and leaders comes from the broker's current
``ClusterMetadata``, which every broker builds from the same znodes, so every broker
answers alike, as Kafka's ZooKeeper-era metadata cache did: the live brokers, the
controller, and per partition the leader (LEADER_NOT_AVAILABLE with leader -1 when
it has none or its broker is gone), leader epoch, replicas, ISR and offline
replicas (those on brokers not registered). Elections and reassignments are the
elected controller's (``controller.py``); the metadata quorum is that controller,
one voter, with the other live brokers observing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkette.broker.cluster.elections import elect
from kafkette.broker.internal_topics import (
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafkette.broker.topology import (
    NO_COORDINATOR,
    BrokerEndpoint,
    Coordinator,
    MetadataQuorum,
    PartitionKey,
    PartitionResult,
    Reassignment,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.cluster.node import ClusterNode

log = logging.getLogger("kafkette.groups")


class ClusterTopology:
    """The topology of a broker with ``zookeeper.connect``; reads ``node.metadata`` at
    each call (the snapshot published last)."""

    def __init__(self, node: ClusterNode) -> None:
        self._node = node

    @property
    def controller_id(self) -> int:
        return self._node.metadata.controller_id

    @property
    def is_controller(self) -> bool:
        return self._node.controller.active

    @property
    def serves_share_groups(self) -> bool:
        return True  # share state at the share coordinators (share_groups/coordinator.py)

    @property
    def highest_coordinator_epoch(self) -> int | None:
        return None

    # The metadata cache ----------------------------------------------------------

    def brokers(self, listener: str) -> list[BrokerEndpoint]:
        entries = []
        for b in sorted(self._node.metadata.brokers.values(), key=lambda b: b.id):
            endpoint = b.endpoint_for(listener)
            if endpoint is not None:
                host, port = endpoint
                entries.append(BrokerEndpoint(b.id, host, port, b.rack))
        return entries

    def topic_names(self) -> list[str]:
        return list(self._node.metadata.topics)

    def has_topic(self, name: str) -> bool:
        return name in self._node.metadata.topics

    def has_partition(self, topic: str, partition: int) -> bool:
        info = self._node.metadata.topics.get(topic)
        return info is not None and partition in info.replicas

    def topic_id(self, name: str) -> uuid.UUID | None:
        topic = self._node.metadata.topics.get(name)
        return None if topic is None else topic.topic_id

    def partition_entries(self, name: str, version: int) -> Sequence[dict]:
        metadata = self._node.metadata
        topic = metadata.topics.get(name)
        if topic is None:
            return []
        live = metadata.brokers
        partitions = []
        for index, replicas in sorted(topic.replicas.items()):
            state = metadata.states.get((name, index))
            leader = metadata.leader_of(name, index)
            isr = list(state.isr) if state is not None else []
            replica_nodes = list(replicas)
            error = ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE
            if version == 0 and leader >= 0:
                # v0 lists only live replicas and says when some are missing (Kafka's rule).
                replica_nodes = [r for r in replicas if r in live]
                alive_isr = [r for r in isr if r in live]
                if len(replica_nodes) < len(replicas) or len(alive_isr) < len(isr):
                    error = ErrorCode.REPLICA_NOT_AVAILABLE
                isr = alive_isr
            partitions.append(
                {
                    "error_code": int(error),
                    "partition_index": index,
                    "leader_id": leader,
                    "leader_epoch": state.leader_epoch if state is not None else -1,
                    "replica_nodes": replica_nodes,
                    "isr_nodes": isr,
                    "offline_replicas": [r for r in replicas if r not in live],
                }
            )
        return partitions

    def all_partitions(self) -> list[PartitionKey]:
        topics = self._node.metadata.topics
        return [(n, p) for n, t in sorted(topics.items()) for p in sorted(t.replicas)]

    def quorum(self) -> MetadataQuorum:
        metadata = self._node.metadata
        leader = metadata.controller_id
        epoch = max((s.controller_epoch for s in metadata.states.values()), default=1)
        observers = tuple(sorted(b for b in metadata.brokers if b != leader))
        info = metadata.brokers.get(leader)
        listeners = None
        if info is not None:
            endpoints = info.endpoints or (("PLAINTEXT", info.host, info.port),)
            listeners = tuple((n, h, p) for n, h, p in endpoints)
        return MetadataQuorum(leader, epoch, observers, listeners)

    async def coordinators(self, topic: str, keys: list[str], listener: str) -> list[Coordinator]:
        """The coordinator of a key is the leader of its partition of the internal topic
        (``abs(hash(key)) % partitions``, Kafka's rule). The topic is created on the
        first lookup; until it has leaders the answer is COORDINATOR_NOT_AVAILABLE and
        clients ask again. The coordinators load and unload their state as that
        leadership moves (docs/cluster.md, "Coordinators")."""
        from kafkette.broker.groups.partitioning import java_string_hash, kafka_abs

        topic_error = ErrorCode.NONE
        if keys and topic not in self._node.metadata.topics:
            topic_error = await self._create_internal_topic(topic)
        metadata = self._node.metadata
        found = []
        for key in keys:
            error = topic_error
            if not error and topic == TRANSACTION_STATE_TOPIC and not key:
                error = ErrorCode.INVALID_REQUEST
            info = metadata.topics.get(topic)
            if not error and info is None:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            if error:
                found.append(Coordinator(-1, "", -1, error))
                continue
            assert info is not None
            index = kafka_abs(java_string_hash(key)) % len(info.replicas)
            leader = metadata.brokers.get(metadata.leader_of(topic, index))
            endpoint = leader.endpoint_for(listener) if leader is not None else None
            if leader is None or endpoint is None:
                found.append(NO_COORDINATOR)
            else:
                found.append(Coordinator(leader.id, endpoint[0], endpoint[1]))
        return found

    async def _create_internal_topic(self, topic: str) -> ErrorCode:
        """Create ``topic`` with its coordinator's partitions and configs; a short wait
        for the leaders spares the client a retry or two. COORDINATOR_NOT_AVAILABLE if
        that fails other than by a concurrent creation or the wait running out."""
        from kafkette.broker.groups.coordinator import offsets_topic_configs
        from kafkette.broker.topics import TopicError
        from kafkette.broker.transactions.coordinator import transaction_state_configs

        broker = self._node.broker
        if topic == OFFSETS_TOPIC:
            partitions = broker.config.groups.offsets_topic_num_partitions
            configs = offsets_topic_configs(broker.config.groups)
        elif topic == SHARE_STATE_TOPIC:
            from kafkette.broker.share_groups.persister import topic_configs

            partitions = broker.share_coordinator.num_partitions
            configs = topic_configs(broker)
        else:
            partitions = broker.transactions.num_partitions
            configs = transaction_state_configs(
                broker.config.transactions.transaction_state_log_segment_bytes
            )
        try:
            await broker.topics.create(topic, partitions, configs, timeout_s=5.0)
        except TopicError as exc:
            if exc.code not in (ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.REQUEST_TIMED_OUT):
                log.warning("cannot create %s: %s", topic, exc.message)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    # The controller --------------------------------------------------------------

    def check_new_topic(self, replication_factor: int, assignments: list[list[int]]) -> None:
        """Nothing up front: the controller assigns over the live brokers (zk_admin.py)."""

    def check_new_partitions(self, assignments: list[list[int]]) -> None:
        """Nothing up front: the controller checks the brokers named (zk_admin.py)."""

    def replication_factor(self, name: str, requested: int, assignments: list[list[int]]) -> int:
        created = self._node.metadata.topics.get(name)
        if created is not None and created.replicas:
            return len(created.replicas[0])
        if assignments:
            return len(assignments[0])
        if requested != -1:
            return requested
        return self._node.config.default_replication_factor

    async def elect_leaders(
        self, partitions: list[PartitionKey], election_type: int, timeout_s: float
    ) -> dict[PartitionKey, ErrorCode]:
        return await elect(self._node, partitions, election_type, timeout_s)

    async def alter_reassignments(
        self,
        wanted: dict[PartitionKey, tuple[int, ...] | None],
        allow_replication_factor_change: bool,
        timeout_s: float,
    ) -> dict[PartitionKey, PartitionResult]:
        """The controller records each move (``reassignment.py`` completes it once the
        new replicas are in sync); the answer waits until this broker's view shows it."""
        results = await self._node.controller.alter_reassignments(
            wanted, allow_replication_factor_change
        )
        if not any(code == ErrorCode.NOT_CONTROLLER for code, _ in results.values()):
            await self._wait_until_shown(wanted, results, timeout_s)
        return results

    async def _wait_until_shown(
        self,
        wanted: dict[PartitionKey, tuple[int, ...] | None],
        results: dict[PartitionKey, PartitionResult],
        timeout_s: float,
    ) -> None:
        """Until this broker's view has every accepted request's new assignment: a target
        shows as the partition moving to it (or already there), a cancel as the partition
        no longer heading for the cancelled target."""
        accepted = {k: wanted[k] for k, (code, _) in results.items() if code == ErrorCode.NONE}
        if not accepted:
            return

        def shown(metadata: ClusterMetadata) -> bool:
            for (topic, index), target in accepted.items():
                info = metadata.topics.get(topic)
                if info is None or index not in info.replicas:
                    return False
                if target is None:
                    if info.adding.get(index):
                        return False
                elif info.target_replicas(index) != target:
                    return False
            return True

        await self._node.wait_for(shown, timeout_s)

    def ongoing_reassignments(self, asked: list[PartitionKey] | None) -> list[Reassignment]:
        metadata = self._node.metadata
        if asked is None:
            asked = self.all_partitions()
        moves = []
        for name, p in asked:
            info = metadata.topics.get(name)
            if info is None or p not in info.replicas or not info.reassigning(p):
                continue  # Kafka lists only ongoing reassignments, unknown ones silently
            moves.append(
                Reassignment(
                    name, p, tuple(info.replicas[p]),
                    tuple(info.adding.get(p, ())), tuple(info.removing.get(p, ())),
                )
            )
        return moves
