"""The reassignment rules (KIP-455 as Kafka's ZooKeeper-era controller runs them), pure.

The full replica set during a move, what a cancel reverts to, Kafka's validation
of a target, when a move completes and who leads after it, and the topic znode's
``adding_replicas``/``removing_replicas`` as Kafka writes them.
"""

from __future__ import annotations

import json
import uuid

import pytest

from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.controller import plan_partition
from kafkette.broker.cluster.metadata import PartitionState, TopicInfo
from kafkette.broker.cluster.reassignment import (
    Assignment,
    ReassignmentRefused,
    cancel,
    check_target,
    plan_completion,
    reassign_to,
)
from kafkette.broker.cluster.stray_replicas import stray_partitions
from kafkette.wire.errors import ErrorCode


def _state(leader: int, epoch: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader, epoch, isr, 1, 7)


def test_full_set_is_target_then_origin() -> None:
    moving = reassign_to(Assignment((1, 2)), (2, 3))
    assert moving == Assignment((2, 3, 1), adding=(3,), removing=(1,))
    assert (moving.origin, moving.target, moving.moving) == ((2, 1), (2, 3), True)
    # A new target while moving keeps the original replicas as the origin.
    assert reassign_to(moving, (3, 4)) == Assignment((3, 4, 2, 1), (3, 4), (2, 1))
    # Growing and shrinking the replication factor.
    assert reassign_to(Assignment((1, 2)), (1, 2, 3)) == Assignment((1, 2, 3), (3,), ())
    assert reassign_to(Assignment((1, 2, 3)), (1,)) == Assignment((1, 2, 3), (), (2, 3))
    # The same set: nothing moves.
    assert not reassign_to(Assignment((1, 2)), (1, 2)).moving


def test_cancel_reverts_to_the_origin() -> None:
    moving = reassign_to(Assignment((1, 2)), (2, 3))
    reverting = cancel(moving)
    # Kafka's originReplicas = replicas minus adding, in the order the move left them.
    assert reverting == Assignment((2, 1, 3), (), (3,))
    assert reverting.target == (2, 1)


@pytest.mark.parametrize(
    ("target", "live", "allow", "code", "text"),
    [
        ((), {1, 2, 3}, True, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list"),
        ((2, 2), {1, 2, 3}, True, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Duplicate replica"),
        ((2, -1), {1, 2, 3}, True, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Invalid broker id"),
        ((2, 9), {1, 2, 3}, True, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "not alive"),
        ((2, 3, 1), {1, 2, 3}, False, ErrorCode.INVALID_REPLICATION_FACTOR,
         "replication factor is changed from 2 to 3"),
    ],
)
def test_targets_kafka_refuses(target, live, allow, code, text) -> None:
    with pytest.raises(ReassignmentRefused) as refused:
        check_target(Assignment((1, 2)), target, live, allow)
    assert refused.value.code == code and text in refused.value.message


def test_a_dead_original_replica_may_stay_in_the_target() -> None:
    # Only the replicas being added must be alive (Kafka's check).
    check_target(Assignment((1, 2)), (1, 3), {2, 3}, True)


def _topic(replicas, adding=None, removing=None) -> TopicInfo:
    return TopicInfo("t", uuid.uuid4(), {0: replicas}, {}, 3, adding or {}, removing or {})


def test_completion_waits_for_every_target_replica_in_the_isr() -> None:
    topic = _topic((2, 3, 1), {0: (3,)}, {0: (1,)})
    assert topic.target_replicas(0) == (2, 3) and topic.original_replicas(0) == (2, 1)
    assert plan_completion(topic, 0, _state(1, 4, (1, 2)), {1, 2, 3}) is None
    # In the ISR but not alive: wait too (the controller removes it from the ISR first).
    assert plan_completion(topic, 0, _state(1, 4, (1, 2, 3)), {1, 2}) is None
    done = plan_completion(topic, 0, _state(1, 4, (1, 2, 3)), {1, 2, 3})
    assert done is not None
    # The leader was being removed: the first target replica leads, epoch + 1, and the
    # removed replica leaves the ISR; the assignment becomes the target.
    assert (done.leader, done.leader_epoch, done.isr, done.replicas) == (2, 5, (2, 3), (2, 3))


def test_completion_keeps_a_leader_that_stays() -> None:
    topic = _topic((2, 3, 1), {0: (3,)}, {0: (1,)})
    done = plan_completion(topic, 0, _state(2, 4, (2, 1, 3)), {1, 2, 3})
    assert done is not None and (done.leader, done.leader_epoch, done.isr) == (2, 5, (2, 3))
    assert plan_completion(_topic((1, 2)), 0, _state(1, 4, (1, 2)), {1, 2}) is None


def test_an_isr_member_that_is_no_longer_a_replica_leaves_the_isr() -> None:
    change = plan_partition("t", 0, (2, 3), _state(2, 4, (2, 3, 1)), {1, 2, 3}, unclean=False)
    assert change is not None and (change.leader, change.leader_epoch, change.isr) == (2, 5, (2, 3))


def test_topic_znode_carries_adding_and_removing_replicas() -> None:
    topic_id = uuid.uuid4()
    encoded = znodes.encode_topic(topic_id, {0: (2, 3, 1), 1: (1, 2)}, {0: (3,)}, {0: (1,)})
    doc = json.loads(encoded)
    assert doc["version"] == 3
    assert doc["partitions"] == {"0": [2, 3, 1], "1": [1, 2]}
    assert doc["adding_replicas"] == {"0": [3]} and doc["removing_replicas"] == {"0": [1]}
    decoded = znodes.decode_topic(encoded)
    assert decoded.adding == {0: (3,)} and decoded.removing == {0: (1,)}
    # Kafka 2.4+ writes empty maps when nothing moves; older versions no fields at all.
    plain = znodes.decode_topic(b'{"version":1,"partitions":{"0":[1,2]}}')
    assert plain.adding == {} and plain.removing == {}


def test_stray_partitions_are_those_the_broker_holds_no_replica_of() -> None:
    from kafkette.broker.cluster.metadata import ClusterMetadata

    topic = TopicInfo("t", uuid.uuid4(), {0: (2, 3), 1: (1, 2)}, {})
    metadata = ClusterMetadata("c", 1, {}, {"t": topic}, {})
    assert stray_partitions(metadata, 1) == [("t", 0)]
    assert stray_partitions(metadata, 2) == []
    deleting = ClusterMetadata("c", 1, {}, {"t": topic}, {}, frozenset({"t"}))
    assert stray_partitions(deleting, 1) == []
