"""The server-side assignors of KIP-848 groups (pure functions): every subscribed partition
assigned exactly once to a subscriber; ``uniform`` balanced to within one and sticky;
``range`` contiguous per topic, co-partitioned."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkette.broker.groups.consumer.assignors import (
    AssignorMember,
    AssignorTopic,
    range_,
    uniform,
)

A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))
TOPICS = {A: AssignorTopic("a", 6), B: AssignorTopic("b", 3), C: AssignorTopic("c", 5)}


def _flat(result):
    return [(m, t, p) for m, topics in result.items() for t, parts in topics.items()
            for p in parts]


def _check_complete(members, result):
    owned = {(t, p) for _m, t, p in _flat(result)}
    assert len(owned) == len(_flat(result))  # nobody shares a partition
    wanted = {(t, p) for t, topic in TOPICS.items() for p in range(topic.partitions)
              if any(t in m.subscribed for m in members.values())}
    assert owned == wanted
    for m, t, _p in _flat(result):
        assert t in members[m].subscribed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.sampled_from([A, B, C]), min_size=1), min_size=1, max_size=6))
def test_uniform_and_range_assign_everything_once(subscriptions) -> None:
    members = {f"m{i}": AssignorMember(frozenset(s)) for i, s in enumerate(subscriptions)}
    for assignor in (uniform, range_):
        _check_complete(members, assignor(members, TOPICS))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(0, 6))
def test_uniform_is_balanced_and_sticky(count, leaving) -> None:
    everything = frozenset(TOPICS)
    members = {f"m{i}": AssignorMember(everything) for i in range(count)}
    first = uniform(members, TOPICS)
    loads = [len(_flat({m: first[m]})) for m in members]
    assert max(loads) - min(loads) <= 1
    # One member leaves: the others keep everything they had.
    gone = f"m{leaving % count}"
    rest = {m: AssignorMember(everything, first[m]) for m in members if m != gone}
    if not rest:
        return
    second = uniform(rest, TOPICS)
    _check_complete(rest, second)
    for m in rest:
        for t, parts in first[m].items():
            assert parts <= second[m].get(t, frozenset())
    loads = [len(_flat({m: second[m]})) for m in rest]
    assert max(loads) - min(loads) <= 1


def test_range_is_contiguous_and_co_partitioned() -> None:
    members = {m: AssignorMember(frozenset({A, B})) for m in ("x", "y")}
    result = range_(members, TOPICS)
    assert result["x"] == {A: frozenset({0, 1, 2}), B: frozenset({0, 1})}
    assert result["y"] == {A: frozenset({3, 4, 5}), B: frozenset({2})}
