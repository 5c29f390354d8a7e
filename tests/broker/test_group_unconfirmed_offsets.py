"""A cluster coordinator's offset writes that wait for replication are invisible to
OffsetFetch until they are settled (Kafka's ``pendingOffsetCommits``): the state
machine alone; the broker settles them once the high watermark passes the records
(broker/groups/coordinator.py ``_await_commits``)."""

from __future__ import annotations

from kafkette.broker.groups import GroupConfig, GroupCoordinatorState

NOW = 1_000_000
TP = ("t", 0)


def fresh(cluster: bool) -> GroupCoordinatorState:
    state = GroupCoordinatorState(GroupConfig(group_initial_rebalance_delay_ms=0))
    if cluster:
        state.offsets.track_unconfirmed()
    return state


def commit(state: GroupCoordinatorState, offset: int, tp=TP):
    return state.offsets.commit_offsets(
        group_id="g", generation_id=-1, member_id="", group_instance_id=None,
        offsets={tp: (offset, -1, "")}, now_ms=NOW,
    )


def fetched(state: GroupCoordinatorState, partitions=None) -> dict:
    result = state.offsets.fetch_offsets("g", partitions, False)
    return {tp: f.offset for tp, f in result.partitions.items()}


def test_a_commit_waiting_for_replication_is_not_fetched_until_settled() -> None:
    state = fresh(cluster=True)
    first = commit(state, 5)
    assert fetched(state, [TP]) == {TP: -1}
    assert fetched(state) == {}  # nor listed among the group's committed partitions
    state.offsets.settle_unconfirmed(first.records)
    assert fetched(state, [TP]) == {TP: 5}

    second = commit(state, 9)
    third = commit(state, 12)
    assert fetched(state) == {TP: 5}  # the last committed one while both are in flight
    state.offsets.settle_unconfirmed(second.records)
    assert fetched(state) == {TP: 5}
    state.offsets.settle_unconfirmed(third.records)
    assert fetched(state) == {TP: 12}


def test_a_deletion_waiting_for_replication_still_shows_the_committed_offset() -> None:
    state = fresh(cluster=True)
    state.offsets.settle_unconfirmed(commit(state, 5).records)
    deleted = state.offsets.delete_offsets(group_id="g", partitions=[TP], now_ms=NOW)
    assert fetched(state, [TP]) == {TP: 5}
    state.offsets.settle_unconfirmed(deleted.records)
    assert fetched(state, [TP]) == {TP: -1}


def test_a_single_node_shows_a_commit_at_once() -> None:
    state = fresh(cluster=False)
    commit(state, 5)
    assert fetched(state, [TP]) == {TP: 5}
