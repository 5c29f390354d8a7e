"""Who the brokers are, who leads what, who the controller is: one question, two answers.

A single node is a one-broker cluster: the only broker, the controller, and the
leader of every partition with itself as the only replica and ISR
(``broker/single_node.py``). A ZooKeeper cluster answers from its published
snapshot and its elected controller (``broker/cluster/topology.py``, loaded only
in cluster mode). The broker picks one when it starts (``Broker.topology``) and the
metadata and admin handlers ask it without knowing which, so each API's rules are
written once, as Kafka's handlers are over its metadata cache and controller.

Results keep Kafka's shapes where the handlers pass them on unchanged (Metadata's
partition entries, Kafka's error codes and messages); the handlers do the rest of
the encoding.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkette.wire.errors import ErrorCode

PartitionKey = tuple[str, int]
# An admin result per partition: the error and its message (None when it succeeded).
PartitionResult = tuple[ErrorCode, "str | None"]

# ElectLeaders' election types.
PREFERRED, UNCLEAN = 0, 1


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A live broker where clients of one listener reach it."""

    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class Coordinator:
    """FindCoordinator's answer for one key: the broker that coordinates it where clients
    of the asking listener reach it, or the error (node -1, no host, port -1)."""

    node_id: int
    host: str
    port: int
    error: ErrorCode = ErrorCode.NONE


NO_COORDINATOR = Coordinator(-1, "", -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)


@dataclass(frozen=True, slots=True)
class Reassignment:
    """An ongoing partition move (KIP-455): all its replicas, those being added and removed."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MetadataQuorum:
    """The metadata authority as DescribeQuorum describes it: one voter (the controller),
    the other live brokers observing; ``leader_listeners`` (name, host, port) is None when
    the leader's registration is not known."""

    leader: int  # -1 while there is no controller
    epoch: int
    observers: tuple[int, ...]
    leader_listeners: tuple[tuple[str, str, int], ...] | None


class Topology(Protocol):
    """What the metadata and admin handlers ask about the cluster this broker is part of."""

    @property
    def controller_id(self) -> int:
        """The controller's broker id, -1 while there is none."""
        ...

    @property
    def is_controller(self) -> bool:
        """Does this broker answer the controller's requests (elections, reassignments)?"""
        ...

    @property
    def serves_share_groups(self) -> bool:
        """Are KIP-932 share groups served (their APIs advertised, ``share.version``
        finalized)? Yes, on a single node and in a cluster (where a share partition's
        state lives with the leader of its ``__share_group_state`` partition, reached
        through the inter-broker share state APIs; docs/share-groups.md)."""
        ...

    def brokers(self, listener: str) -> list[BrokerEndpoint]:
        """The live brokers, by id, at their endpoints for ``listener``; a broker without
        that listener is left out, as in Kafka."""
        ...

    def topic_names(self) -> list[str]:
        """Every topic, internal ones included."""
        ...

    def has_topic(self, name: str) -> bool: ...

    def has_partition(self, topic: str, partition: int) -> bool:
        """Does the cluster have this partition, wherever its replicas are?"""
        ...

    def topic_id(self, name: str) -> uuid.UUID | None: ...

    def partition_entries(self, name: str, version: int) -> Sequence[dict]:
        """Metadata's partition entries for ``name`` at request ``version`` (Kafka's
        MetadataResponsePartition fields), [] for an unknown topic. May be shared between
        responses: callers must not change them."""
        ...

    def all_partitions(self) -> list[PartitionKey]:
        """Every partition of every topic (ElectLeaders' "every partition")."""
        ...

    def check_new_topic(self, replication_factor: int, assignments: list[list[int]]) -> None:
        """Raise ``TopicError`` for a replication factor or manual assignment this
        cluster refuses before it is asked to create the topic."""
        ...

    def check_new_partitions(self, assignments: list[list[int]]) -> None:
        """Raise ``TopicError`` for new partitions' manual assignments refused up front."""
        ...

    def replication_factor(self, name: str, requested: int, assignments: list[list[int]]) -> int:
        """What a topic was (or would be) created with, for CreateTopics' answer."""
        ...

    async def elect_leaders(
        self, partitions: list[PartitionKey], election_type: int, timeout_s: float
    ) -> dict[PartitionKey, ErrorCode]:
        """Run the elections as the controller (``is_controller``); each partition's result."""
        ...

    async def alter_reassignments(
        self,
        wanted: dict[PartitionKey, tuple[int, ...] | None],
        allow_replication_factor_change: bool,
        timeout_s: float,
    ) -> dict[PartitionKey, PartitionResult]:
        """Start (a target) or cancel (None) moves as the controller; each partition's
        result, NOT_CONTROLLER for every one if this broker stopped being it."""
        ...

    def ongoing_reassignments(self, asked: list[PartitionKey] | None) -> list[Reassignment]:
        """The moves in progress among ``asked`` (None: every partition), in that order."""
        ...

    def quorum(self) -> MetadataQuorum: ...

    async def coordinators(self, topic: str, keys: list[str], listener: str) -> list[Coordinator]:
        """The coordinator of each key (a group id for ``OFFSETS_TOPIC``, a transactional
        id for ``TRANSACTION_STATE_TOPIC``), in the order of ``keys``: this broker,
        another broker, or an error (the client asks again). The internal topic is
        created on the first lookup, as Kafka does; an empty transactional id is
        INVALID_REQUEST."""
        ...

    @property
    def highest_coordinator_epoch(self) -> int | None:
        """The highest epoch a transaction coordinator here can write markers with, None
        when unbounded (a cluster's coordinators move, and each move raises it)."""
        ...
