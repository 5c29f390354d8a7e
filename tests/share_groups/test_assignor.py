"""The ``simple`` share-group assignor (pure): every subscribed partition to at least one
subscriber, shared by ceil(members / partitions) members, balanced to within one
partition per member, and sticky."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkette.broker.groups.consumer.assignors import AssignorMember, AssignorTopic
from kafkette.broker.share_groups.assignor import simple

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def _members(n: int, topics=frozenset({A}), current=None):
    current = current or {}
    return {f"m{i}": AssignorMember(topics, current.get(f"m{i}", {})) for i in range(n)}


def _holders(result):
    return Counter((t, p) for parts in result.values() for t, ps in parts.items() for p in ps)


def test_one_partition_goes_to_every_member() -> None:
    result = simple(_members(4), {A: AssignorTopic("a", 1)})
    assert all(parts == {A: frozenset({0})} for parts in result.values())


def test_fewer_members_than_partitions_is_a_consumer_group_split() -> None:
    result = simple(_members(2), {A: AssignorTopic("a", 5)})
    assert set(_holders(result).values()) == {1}
    assert sorted(len(p[A]) for p in result.values()) == [2, 3]


def test_a_joining_member_keeps_the_others_where_they_were() -> None:
    before = simple(_members(2), {A: AssignorTopic("a", 4)})
    members = _members(3, current=before)
    after = simple(members, {A: AssignorTopic("a", 4)})
    kept = sum(len(after[m][A] & before[m][A]) for m in before)
    assert kept == 3  # one partition moves to the newcomer, nothing else
    assert len(after["m2"][A]) == 1


def test_members_with_other_subscriptions_share_their_own_topics() -> None:
    members = {"x": AssignorMember(frozenset({A})), "y": AssignorMember(frozenset({B}))}
    result = simple(members, {A: AssignorTopic("a", 2), B: AssignorTopic("b", 1)})
    assert result == {"x": {A: frozenset({0, 1})}, "y": {B: frozenset({0})}}


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 9), st.integers(1, 7))
def test_every_partition_shared_evenly(members: int, partitions: int) -> None:
    result = simple(_members(members), {A: AssignorTopic("a", partitions)})
    holders = _holders(result)
    sharing = -(-members // partitions)
    assert set(holders) == {(A, p) for p in range(partitions)}
    assert set(holders.values()) == {sharing}
    counts = [sum(len(ps) for ps in parts.values()) for parts in result.values()]
    assert max(counts) - min(counts) <= 1
    assert min(counts) >= 1
