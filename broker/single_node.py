"""A single node as a one-broker cluster (``broker/topology.py``).

This broker is the only broker, the controller and the leader of every partition,
with itself as the only replica and ISR at leader epoch ``LEADER_EPOCH``, and the
metadata quorum's one voter. Its answers are what Kafka's single broker gives:
replicas may only be this broker (INVALID_REPLICATION_FACTOR /
INVALID_REPLICA_ASSIGNMENT otherwise), an election is never needed, a move to this
broker is accepted with nothing to move, and nothing is ever being reassigned.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkette.broker.internal_topics import TRANSACTION_STATE_TOPIC
from kafkette.broker.partitions import LEADER_EPOCH
from kafkette.broker.topics import TopicError
from kafkette.broker.topology import (
    BrokerEndpoint,
    Coordinator,
    MetadataQuorum,
    PartitionKey,
    PartitionResult,
    Reassignment,
)
from kafkette.broker.transactions.coordinator import COORDINATOR_EPOCH
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

# The metadata quorum's epoch: one voter, never re-elected.
QUORUM_EPOCH = 1


class SingleNodeTopology:
    """The topology of a broker without ``zookeeper.connect``: everything is local."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    @property
    def controller_id(self) -> int:
        return self._broker.node_id

    @property
    def is_controller(self) -> bool:
        return True

    @property
    def serves_share_groups(self) -> bool:
        return True

    @property
    def highest_coordinator_epoch(self) -> int | None:
        # No coordinator has a higher epoch than this node's own: a marker with one would
        # be remembered by the partition and fence every later marker of the real one.
        return COORDINATOR_EPOCH

    # The metadata cache ----------------------------------------------------------

    def brokers(self, listener: str) -> list[BrokerEndpoint]:
        own = self._broker.endpoint_for(listener)
        return [BrokerEndpoint(self._broker.node_id, own.host, own.port, None)]

    def topic_names(self) -> list[str]:
        return self._broker.topics.names

    def has_topic(self, name: str) -> bool:
        return self._broker.topics.metadata(name) is not None

    def has_partition(self, topic: str, partition: int) -> bool:
        return self._broker.topics.partition(topic, partition) is not None

    def topic_id(self, name: str) -> uuid.UUID | None:
        meta = self._broker.topics.metadata(name)
        return None if meta is None else meta.topic_id

    def partition_entries(self, name: str, version: int) -> Sequence[dict]:
        topics = self._broker.topics
        if topics.metadata(name) is None:
            return []
        node = self._broker.node_id
        hosted = topics.partitions(name)
        if hosted and hosted[-1].index == len(hosted) - 1:  # 0..n-1, as a single node has
            return list(shared_partition_entries(node, len(hosted)))
        return [_partition_entry(node, p.index) for p in hosted]

    def all_partitions(self) -> list[PartitionKey]:
        return [(p.topic, p.index) for p in self._broker.topics.all_partitions()]

    def quorum(self) -> MetadataQuorum:
        listeners = tuple(
            (name, endpoint.host, endpoint.port)
            for name, endpoint in self._broker.endpoints.items()
        )
        return MetadataQuorum(self._broker.node_id, QUORUM_EPOCH, (), listeners)

    async def coordinators(self, topic: str, keys: list[str], listener: str) -> list[Coordinator]:
        """This broker coordinates every key; ``__transaction_state`` is created on the
        first lookup (its error answers every key), ``__consumer_offsets`` exists already."""
        own = self._broker.endpoint_for(listener)
        here = Coordinator(self._broker.node_id, own.host, own.port)
        if topic != TRANSACTION_STATE_TOPIC:
            return [here for _ in keys]
        topic_error = await self._broker.transactions.ensure_topic() if keys else ErrorCode.NONE
        found = []
        for key in keys:
            error = ErrorCode.INVALID_REQUEST if not key else topic_error
            found.append(Coordinator(-1, "", -1, error) if error else here)
        return found

    # The controller --------------------------------------------------------------

    def check_new_topic(self, replication_factor: int, assignments: list[list[int]]) -> None:
        node = self._broker.node_id
        if replication_factor not in (-1, 1) and not assignments:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {replication_factor} is larger than the 1 available broker",
            )
        for brokers in assignments:
            if brokers != [node]:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"assignment {brokers} names brokers other than {node}",
                )

    def check_new_partitions(self, assignments: list[list[int]]) -> None:
        for brokers in assignments:
            if brokers != [self._broker.node_id]:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, "unknown broker in assignment"
                )

    def replication_factor(self, name: str, requested: int, assignments: list[list[int]]) -> int:
        return 1

    async def elect_leaders(
        self, partitions: list[PartitionKey], election_type: int, timeout_s: float
    ) -> dict[PartitionKey, ErrorCode]:
        """The only replica always leads: ELECTION_NOT_NEEDED, whatever the type."""
        return {
            key: ErrorCode.ELECTION_NOT_NEEDED
            if self.has_partition(*key)
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for key in partitions
        }

    async def alter_reassignments(
        self,
        wanted: dict[PartitionKey, tuple[int, ...] | None],
        allow_replication_factor_change: bool,
        timeout_s: float,
    ) -> dict[PartitionKey, PartitionResult]:
        """The one broker holds every replica: a target of exactly it is accepted
        (nothing moves), any other is INVALID_REPLICA_ASSIGNMENT, a cancel finds
        nothing in progress."""
        node = self._broker.node_id
        results: dict[PartitionKey, PartitionResult] = {}
        for (topic, index), target in wanted.items():
            if not self._broker.topics.has_partition(topic, index):
                results[(topic, index)] = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif target is None:
                results[(topic, index)] = (
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                    f"No reassignment in progress for partition {topic}-{index}.",
                )
            elif list(target) != [node]:
                results[(topic, index)] = (
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Replica assignment has brokers that are not alive. Replica list:"
                    f" {list(target)}, live broker list: [{node}]",
                )
            else:
                results[(topic, index)] = (ErrorCode.NONE, None)
        return results

    def ongoing_reassignments(self, asked: list[PartitionKey] | None) -> list[Reassignment]:
        return []


def _partition_entry(node: int, index: int) -> dict:
    return {
        "error_code": ErrorCode.NONE,
        "partition_index": index,
        "leader_id": node,
        "leader_epoch": LEADER_EPOCH,
        "replica_nodes": [node],
        "isr_nodes": [node],
        "offline_replicas": [],
    }


@functools.lru_cache(maxsize=64)
def shared_partition_entries(node: int, count: int) -> tuple[dict, ...]:
    """A single node's partition entries depend only on the partition count: built once per
    count, not per request (a full Metadata over 10,000 partitions spent most of its time
    building these dicts). Shared between responses: callers must not change them."""
    return tuple(_partition_entry(node, index) for index in range(count))
