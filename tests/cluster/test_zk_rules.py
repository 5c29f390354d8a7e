"""The pure rules of the ZooKeeper side: Kafka's assignment, znode JSON, elections.

No ZooKeeper here: these are the decisions the cluster tests exercise end to
end, checked case by case against what Kafka does.
"""

from __future__ import annotations

import random
import uuid

import pytest

from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.assignment import (
    AssignmentError,
    assign_replicas,
    check_explicit_assignment,
)
from kafkette.broker.cluster.controller import plan_partition
from kafkette.broker.cluster.metadata import PartitionState
from kafkette.broker.cluster.zk_session import split_chroot


def test_assignment_is_kafkas_documented_example() -> None:
    # AdminUtils' scaladoc: 5 brokers, 10 partitions, replication factor 3, start 0.
    assert assign_replicas([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0) == {
        0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
        5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
    }


def test_assignment_spreads_leaders_and_never_repeats_a_broker() -> None:
    rng = random.Random(7)
    for brokers in ([1, 2, 3], [5, 9, 2, 7], list(range(1, 8))):
        for rf in range(1, len(brokers) + 1):
            result = assign_replicas(brokers, 2 * len(brokers), rf, rng=rng)
            assert sorted(result) == list(range(2 * len(brokers)))
            for replicas in result.values():
                assert len(replicas) == rf == len(set(replicas))
                assert set(replicas) <= set(brokers)
            leaders = [r[0] for r in result.values()]
            assert sorted(leaders) == sorted(brokers * 2)


def test_added_partitions_continue_the_pattern() -> None:
    whole = assign_replicas([1, 2, 3], 6, 2, fixed_start_index=1)
    first = assign_replicas([1, 2, 3], 2, 2, fixed_start_index=1)
    added = assign_replicas([1, 2, 3], 4, 2, fixed_start_index=1, start_partition_id=2)
    assert {**first, **added} == whole


@pytest.mark.parametrize(
    ("partitions", "rf", "message"),
    [
        (0, 1, "Number of partitions must be larger than 0."),
        (1, 0, "Replication factor must be larger than 0."),
        (1, 4, "Replication factor: 4 larger than available brokers: 3."),
    ],
)
def test_assignment_refusals_are_kafkas(partitions: int, rf: int, message: str) -> None:
    with pytest.raises(AssignmentError, match=message.replace(".", r"\.")):
        assign_replicas([1, 2, 3], partitions, rf)


def test_explicit_assignment_checks() -> None:
    live = [1, 2, 3]
    assert check_explicit_assignment({0: [1, 2], 1: [2, 3]}, live) is None
    assert "same number of replicas" in check_explicit_assignment({0: [1, 2], 1: [2]}, live)
    assert "Duplicate replica" in check_explicit_assignment({0: [1, 1]}, live)
    assert "consecutive" in check_explicit_assignment({0: [1], 2: [2]}, live)
    assert "includes broker 9" in check_explicit_assignment({0: [1, 9]}, live)


def test_znodes_are_kafkas_json() -> None:
    topic_id = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
    encoded = znodes.encode_topic(topic_id, {1: (2, 3), 0: (1, 2)})
    assert encoded == (
        b'{"version":3,"topic_id":"a6e4EJ2tEdGAtADAT9QwyA",'
        b'"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},"removing_replicas":{}}'
    )
    decoded = znodes.decode_topic(encoded)
    assert decoded.topic_id == topic_id and decoded.replicas == {0: (1, 2), 1: (2, 3)}
    # A version 1 assignment (no topic id), as Kafka before 2.8 wrote it.
    assert znodes.decode_topic(b'{"version":1,"partitions":{"0":[1]}}').topic_id is None

    state = znodes.encode_state(2, 5, (2, 3), 7)
    assert state == b'{"controller_epoch":7,"leader":2,"version":1,"leader_epoch":5,"isr":[2,3]}'
    assert znodes.decode_state(state) == znodes.StateDoc(2, 5, (2, 3), 7)

    broker = znodes.encode_broker("10.0.0.5", 9092, None, 1700000000000)
    assert b'"endpoints":["PLAINTEXT://10.0.0.5:9092"]' in broker
    assert b'"version":5' in broker and b'"jmx_port":-1' in broker
    assert znodes.decode_broker(broker) == ("10.0.0.5", 9092, None)
    assert znodes.decode_broker(znodes.encode_broker("::1", 9, "r1", 0)) == ("::1", 9, "r1")
    assert znodes.decode_controller(znodes.encode_controller(3, 1)) == 3
    assert znodes.decode_topic_config(znodes.encode_topic_config({"a": "1"})) == {"a": "1"}
    assert znodes.decode_cluster_id(znodes.encode_cluster_id("abc")) == "abc"


def test_chroot_is_split_from_the_hosts() -> None:
    assert split_chroot("h1:2181,h2:2181/kafka/prod") == ("h1:2181,h2:2181", "/kafka/prod")
    assert split_chroot("h1:2181") == ("h1:2181", "")
    assert split_chroot("h1:2181/") == ("h1:2181", "")


def _state(leader: int, epoch: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader, epoch, isr, controller_epoch=1, zk_version=4)


def test_new_partition_led_by_the_first_live_replica() -> None:
    change = plan_partition("t", 0, (3, 1, 2), None, {1, 2}, unclean=False)
    assert (change.leader, change.leader_epoch, change.isr) == (1, 0, (1, 2))
    assert plan_partition("t", 0, (3,), None, {1, 2}, unclean=False) is None


def test_dead_leader_replaced_by_first_live_isr_member_in_assignment_order() -> None:
    state = _state(1, 4, (1, 3, 2))
    change = plan_partition("t", 0, (1, 2, 3), state, {2, 3}, unclean=False)
    assert (change.leader, change.leader_epoch, change.isr) == (2, 5, (3, 2))
    assert change.current == state  # conditional on the version read


def test_out_of_sync_replica_never_leads_without_unclean_election() -> None:
    state = _state(1, 4, (1,))
    offline = plan_partition("t", 0, (1, 2), state, {2}, unclean=False)
    assert (offline.leader, offline.leader_epoch, offline.isr) == (-1, 5, (1,))
    # Already offline: nothing more until an ISR member returns.
    assert plan_partition("t", 0, (1, 2), _state(-1, 5, (1,)), {2}, unclean=False) is None
    back = plan_partition("t", 0, (1, 2), _state(-1, 5, (1,)), {1, 2}, unclean=False)
    assert (back.leader, back.leader_epoch, back.isr) == (1, 6, (1,))
    unclean = plan_partition("t", 0, (1, 2), state, {2}, unclean=True)
    assert (unclean.leader, unclean.leader_epoch, unclean.isr) == (2, 5, (2,))


def test_dead_followers_leave_the_isr_with_a_new_epoch() -> None:
    change = plan_partition("t", 0, (1, 2, 3), _state(1, 0, (1, 2, 3)), {1, 2}, unclean=False)
    assert (change.leader, change.leader_epoch, change.isr) == (1, 1, (1, 2))
    healthy = _state(1, 0, (1, 2))  # 3 is out of the ISR but alive: the leader decides
    assert plan_partition("t", 0, (1, 2, 3), healthy, {1, 2, 3}, unclean=False) is None


def test_preferred_leaders_move_back_past_the_imbalance_threshold() -> None:
    from kafkette.broker.cluster.controller import plan_preferred_leaders
    from kafkette.broker.cluster.metadata import BrokerInfo, ClusterMetadata, TopicInfo

    brokers = {i: BrokerInfo(i, "h", 9000 + i, None) for i in (1, 2, 3)}
    replicas = {p: (1, 2, 3) for p in range(10)}
    topic = TopicInfo("t", uuid.uuid4(), replicas, {})

    def metadata(leaders: dict[int, int], isr=(1, 2, 3)) -> ClusterMetadata:
        states = {("t", p): _state(leaders.get(p, 1), 3, isr) for p in range(10)}
        return ClusterMetadata("c", 1, brokers, {"t": topic}, states)

    # 1 of 10 led elsewhere: 10 % is not more than the 10 % allowed.
    assert plan_preferred_leaders(metadata({0: 2}), 10) == []
    changes = plan_preferred_leaders(metadata({0: 2, 1: 3}), 10)
    assert [(c.partition, c.leader, c.leader_epoch, c.isr) for c in changes] == [
        (0, 1, 4, (1, 2, 3)), (1, 1, 4, (1, 2, 3)),
    ]
    # Not in the ISR (not caught up): never.
    assert plan_preferred_leaders(metadata({0: 2, 1: 3}, isr=(2, 3)), 10) == []


def _metadata(brokers: dict[int, int], states: dict) -> object:
    from kafkette.broker.cluster.metadata import BrokerInfo, ClusterMetadata, TopicInfo

    return ClusterMetadata(
        cluster_id="c",
        controller_id=1,
        brokers={b: BrokerInfo(b, "h", 9000 + b, None, epoch) for b, epoch in brokers.items()},
        topics={"t": TopicInfo("t", uuid.uuid4(), {0: (1, 2, 3)}, {})},
        states=states,
    )


def test_a_broker_registered_again_loses_its_leadership_and_isr_place() -> None:
    """Kafka's broker epoch: a leader that restarted between two controller steps
    (its old registration gone and a new one made, unseen) must not lead on at the
    same leader epoch; it leaves the ISR and rejoins as a follower."""
    from kafkette.broker.cluster.controller import bounced_brokers, plan

    state = PartitionState(1, 4, (1, 2, 3), 1, 7)
    before = _metadata({1: 100, 2: 200, 3: 300}, {("t", 0): state})
    after = _metadata({1: 400, 2: 200, 3: 300}, {("t", 0): state})
    assert bounced_brokers({}, after) == frozenset()  # a new controller knows no epochs
    assert bounced_brokers({1: 100, 2: 200, 3: 300}, before) == frozenset()
    bounced = bounced_brokers({1: 100, 2: 200, 3: 300}, after)
    assert bounced == {1}
    [change] = plan(after, False, bounced)
    assert (change.leader, change.leader_epoch, change.isr) == (2, 5, (2, 3))
    assert plan(after, False) == []  # unseen, the bounce changed nothing
