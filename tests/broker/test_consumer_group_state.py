"""The KIP-848 state machine alone (no broker): timeouts, fencing, regex subscriptions,
the retry of a lost answer and topic changes, driven with explicit ``now_ms``."""

from __future__ import annotations

import uuid

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.groups.consumer.state import (
    FENCED_MEMBER_EPOCH,
    ConsumerGroups,
    HeartbeatRequest,
)

T = uuid.UUID(int=7)
U = uuid.UUID(int=8)
TOPICS = {"orders": (T, 4), "orders-eu": (U, 2), "__consumer_offsets": (uuid.UUID(int=9), 3)}
CONFIG = GroupConfig(group_consumer_session_timeout_ms=1000)


def _join(groups, member, now, topics=TOPICS, **fields):
    fields.setdefault("subscribed_topic_names", ["orders"])
    return groups.heartbeat(
        HeartbeatRequest("g", member, 0, rebalance_timeout_ms=500, owned={}, **fields),
        topics, now,
    )


def _beat(groups, member, epoch, now, owned=None, topics=TOPICS):
    return groups.heartbeat(HeartbeatRequest("g", member, epoch, owned=owned), topics, now)


def test_session_timeout_removes_a_silent_member() -> None:
    groups = ConsumerGroups(CONFIG)
    assert _join(groups, "a", 0).member_epoch == 1
    assert _join(groups, "b", 0).member_epoch == 2
    assert groups.next_deadline_ms() == 1000
    revoke = _beat(groups, "a", 1, 900)  # asked to give two partitions to b
    assert sum(len(p) for p in revoke.assignment.values()) == 2
    groups.tick(1000)  # b said nothing for 1 s
    assert set(groups.groups["g"].members) == {"a"}
    result = _beat(groups, "a", 1, 1100, owned=revoke.assignment)  # revoked: next epoch
    assert result.member_epoch == 3  # b is gone: a gets everything back
    assert sum(len(p) for p in result.assignment.values()) == 4


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    groups = ConsumerGroups(CONFIG)
    first = _join(groups, "a", 0)
    _join(groups, "b", 10)
    revoke = _beat(groups, "a", 1, 20, owned=first.assignment)
    assert revoke.member_epoch == 1 and sum(len(p) for p in revoke.assignment.values()) == 2
    # a keeps heartbeating but never gives the two partitions up: 500 ms rebalance timeout.
    _beat(groups, "a", 1, 400, owned=first.assignment)
    _beat(groups, "b", 2, 400)
    groups.tick(520)
    assert set(groups.groups["g"].members) == {"b"}
    assert _beat(groups, "a", 1, 530).error == 25  # UNKNOWN_MEMBER_ID: rejoin


def test_lost_answer_retry_and_fencing() -> None:
    groups = ConsumerGroups(CONFIG)
    joined = _join(groups, "a", 0)
    _join(groups, "b", 1)
    revoke = _beat(groups, "a", 1, 2, owned=joined.assignment)
    moved = _beat(groups, "a", 1, 3, owned=revoke.assignment)
    assert moved.member_epoch == 2
    # The answer was lost: the client retries with its previous epoch, owning what it has.
    assert _beat(groups, "a", 1, 4, owned=revoke.assignment).error == 0
    assert _beat(groups, "a", 1, 5, owned=joined.assignment).error == FENCED_MEMBER_EPOCH
    assert _beat(groups, "a", 7, 6).error == FENCED_MEMBER_EPOCH


def test_regex_subscription_follows_topics() -> None:
    groups = ConsumerGroups(CONFIG)
    joined = _join(groups, "a", 0, subscribed_topic_names=None, subscribed_topic_regex="orders.*")
    assert joined.assignment == {T: frozenset(range(4)), U: frozenset(range(2))}  # no __ topics
    grown = {**TOPICS, "orders-us": (uuid.UUID(int=10), 1)}
    result = _beat(groups, "a", 1, 1, owned=joined.assignment, topics=grown)
    assert result.member_epoch == 2 and uuid.UUID(int=10) in result.assignment
    assert groups.validate(HeartbeatRequest("g", "a", 0, rebalance_timeout_ms=1, owned={},
                                            subscribed_topic_regex="(")).error == 128


def test_range_assignor_by_request() -> None:
    groups = ConsumerGroups(CONFIG)
    _join(groups, "a", 0, server_assignor="range")
    _join(groups, "b", 0, server_assignor="range")
    assert groups.groups["g"].assignor == "range"
    first = _beat(groups, "a", 1, 1, owned={T: frozenset(range(4))})
    assert first.assignment == {T: frozenset({0, 1})}


def test_unloading_an_offsets_partition_drops_its_consumer_groups() -> None:
    """Cluster mode: leadership of the group's offsets partition moved away."""
    from kafkette.broker.groups import GroupCoordinatorState

    state = GroupCoordinatorState(CONFIG)
    assert _join(state.consumer_groups, "a", 0).error == 0
    other = next(i for i in range(CONFIG.offsets_topic_num_partitions)
                 if i != state.partition_for("g"))
    state.unload_partition(other, 16)
    assert state.consumer_groups.is_consumer_group("g")
    state.unload_partition(state.partition_for("g"), 16)
    assert not state.consumer_groups.is_consumer_group("g")


def test_offsets_cleanup_keeps_live_groups_and_drops_empty_ones() -> None:
    from kafkette.broker.groups import GroupCoordinatorState

    state = GroupCoordinatorState(CONFIG)
    assert _join(state.consumer_groups, "a", 0).error == 0
    committed = state.commit_offsets(group_id="g", generation_id=-1, member_id="",
                                     group_instance_id=None, offsets={("orders", 0): (5, -1, "")},
                                     now_ms=0)
    assert committed.result == {("orders", 0): 0}
    week = CONFIG.offsets_retention_ms
    assert state.expire_offsets(week * 2).result == 0  # a live member: nothing expires
    state.consumer_groups.heartbeat(HeartbeatRequest("g", "a", -1), TOPICS, week * 2)
    assert state.consumer_groups.is_consumer_group("g")  # empty, offsets still there
    assert state.expire_offsets(week * 4).result == 1
    assert not state.consumer_groups.is_consumer_group("g")
