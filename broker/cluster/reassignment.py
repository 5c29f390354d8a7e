"""Partition reassignments (KIP-455, Kafka's ZooKeeper-era controller): the pure rules.

A reassignment moves a partition from its original replicas (ORS) to target
replicas (TRS) without a moment with fewer copies than before:

1. The controller writes the full set RS = TRS + (ORS - TRS) into
   ``/brokers/topics/<t>`` with ``adding_replicas`` = TRS - ORS and
   ``removing_replicas`` = ORS - TRS. The added brokers see themselves among the
   replicas, follow the leader and catch up by Fetch; the leader takes them into
   the ISR once they reach its high watermark (ordinary replication).
2. Once every target replica is alive and in the ISR, one ZooKeeper transaction
   completes it: the partition state gets a leader from the target (the current
   one if it is a target replica, else the first target replica in the ISR), the
   ISR loses the removed replicas, leader epoch + 1; the assignment becomes TRS
   with no adding/removing entry. Removed brokers stop replicating and empty their
   logs (``stray_replicas.py``).

Cancelling reverts: the target becomes the original set again, the added
replicas become the ones to remove, and step 2 completes it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkette.broker.cluster.metadata import PartitionState, TopicInfo
from kafkette.wire.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class Assignment:
    """One partition's entry in ``/brokers/topics/<t>``."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def moving(self) -> bool:
        return bool(self.adding or self.removing)


def reassign_to(current: Assignment, target: tuple[int, ...]) -> Assignment:
    """Kafka's ``ReplicaAssignment.reassignTo``: the original replicas stay the origin
    even when a reassignment is already running (its target is replaced)."""
    origin = current.origin
    full = tuple(dict.fromkeys((*target, *origin)))
    return Assignment(
        full,
        tuple(r for r in target if r not in origin),
        tuple(r for r in origin if r not in target),
    )


def cancel(current: Assignment) -> Assignment:
    """Back to the original replicas: the ones added are now the ones to remove."""
    origin = current.origin
    full = tuple(dict.fromkeys((*origin, *current.replicas)))
    return Assignment(full, (), tuple(r for r in full if r not in origin))


class ReassignmentRefused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_target(
    current: Assignment,
    target: tuple[int, ...],
    live: set[int],
    allow_replication_factor_change: bool,
) -> None:
    """Kafka's validation of a requested target (ReassignmentRefused otherwise)."""
    if not target:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(target)) != len(target):
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}",
        )
    if any(r < 0 for r in target):
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Invalid broker id in replica list: {list(target)}",
        )
    new = reassign_to(current, target)
    if not set(new.adding) <= live:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive. Replica list:"
            f" {list(target)}, live broker list: {sorted(live)}",
        )
    if not allow_replication_factor_change and len(target) != len(current.origin):
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(current.origin)} to"
            f" {len(target)} but allowReplicationFactorChange is false.",
        )


def assignment_of(topic: TopicInfo, partition: int) -> Assignment:
    return Assignment(
        topic.replicas[partition],
        topic.adding.get(partition, ()),
        topic.removing.get(partition, ()),
    )


@dataclass(frozen=True, slots=True)
class Completion:
    """Step 2 for one partition: its new state and its final replicas."""

    topic: str
    partition: int
    current: PartitionState
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


def plan_completion(
    topic: TopicInfo, partition: int, state: PartitionState | None, live: set[int] | dict
) -> Completion | None:
    """The completion of a moving partition once every target replica is alive and
    in the ISR, or None (not moving, or still catching up)."""
    current = assignment_of(topic, partition)
    if not current.moving or state is None:
        return None
    target = current.target
    if not all(r in state.isr and r in live for r in target):
        return None
    if state.leader in target and state.leader in live:
        leader = state.leader
    else:
        leader = target[0]  # every target replica is alive and in the ISR
    isr = tuple(r for r in state.isr if r in target)
    return Completion(
        topic.name, partition, state, leader, state.leader_epoch + 1, isr, target
    )
