"""Kafka's rack-unaware replica assignment (``AdminUtils.assignReplicasToBrokers``).

Replicas spread round-robin: partition p's first replica is broker
``(p + start) % n`` of the sorted broker list; the others follow at a shift
that grows by one every n partitions, so the followers of one broker's
leaderships are spread over the others. ``start`` and the shift are random
unless given (CreatePartitions passes the index of partition 0's first
replica, as Kafka does, so added partitions continue the pattern).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


class AssignmentError(ValueError):
    """``kind`` is "partitions" or "replication_factor": which Kafka error to answer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def assign_replicas(
    brokers: Sequence[int],
    partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Partition id -> replicas (preferred leader first), Kafka's messages on refusal."""
    if partitions <= 0:
        raise AssignmentError("partitions", "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise AssignmentError("replication_factor", "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise AssignmentError(
            "replication_factor",
            f"Replication factor: {replication_factor} larger than available brokers:"
            f" {len(brokers)}.",
        )
    ordered = sorted(brokers)
    n = len(ordered)
    pick = rng or random
    start = fixed_start_index if fixed_start_index >= 0 else pick.randrange(n)
    shift = fixed_start_index if fixed_start_index >= 0 else pick.randrange(n)
    partition_id = max(0, start_partition_id)
    result: dict[int, tuple[int, ...]] = {}
    for _ in range(partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[_replica_index(first, shift, j, n)])
        result[partition_id] = tuple(replicas)
        partition_id += 1
    return result


def _replica_index(first: int, second_shift: int, replica: int, n: int) -> int:
    shift = 1 + (second_shift + replica) % (n - 1)
    return (first + shift) % n


def check_explicit_assignment(
    assignment: dict[int, Sequence[int]], live: Sequence[int]
) -> str | None:
    """Kafka's checks of a manual assignment (INVALID_REPLICA_ASSIGNMENT), its messages;
    None if valid."""
    sizes = {len(r) for r in assignment.values()}
    if not assignment:
        return "Replica assignment is empty."
    if 0 in sizes:
        return "Replication factor must be larger than 0."
    if len(sizes) > 1:
        return "All partitions should have the same number of replicas"
    if sorted(assignment) != list(range(len(assignment))):
        return "partitions should be a consecutive 0-based integer sequence"
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            return (
                f"Duplicate replica assignment found: {list(replicas)}"
                f" for partition {partition}"
            )
        for broker in replicas:
            if broker not in live:  # KRaft's check (Kafka's ZooKeeper era had none)
                return (
                    f"The manual partition assignment includes broker {broker},"
                    " but no such broker is registered."
                )
    return None
