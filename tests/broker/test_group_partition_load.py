"""``load_partition`` / ``unload_partition``: a cluster coordinator's groups follow
the ``__consumer_offsets`` partitions it leads (Kafka's loadGroupsForPartition and
removeGroupsForPartition). The state machine alone; the cluster behaviour is in
tests/cluster/test_coordinators_groups.py.
"""

from __future__ import annotations

from kafkette.broker.groups import GroupConfig, GroupCoordinatorState, JoinResponse
from kafkette.wire.errors import ErrorCode as E

NOW = 1_000_000
PARTITIONS = 4


def fresh() -> GroupCoordinatorState:
    return GroupCoordinatorState(
        GroupConfig(group_initial_rebalance_delay_ms=0, offsets_topic_num_partitions=PARTITIONS),
        new_member_id=lambda c: f"{c}-1",
    )


def groups_on_two_partitions(state: GroupCoordinatorState) -> tuple[str, str]:
    """Two group ids whose records live in different offsets partitions."""
    first = "g0"
    second = next(
        f"g{i}" for i in range(1, 100)
        if state.partition_for(f"g{i}") != state.partition_for(first)
    )
    return first, second


def commit(state, group: str, offset: int, logs: dict[int, list]) -> None:
    outcome = state.offsets.commit_offsets(
        group_id=group, generation_id=-1, member_id="", group_instance_id=None,
        offsets={("t", 0): (offset, -1, "")}, now_ms=NOW,
    )
    logs.setdefault(state.partition_for(group), []).extend(
        (r.key, r.value) for r in outcome.records
    )


def offset_of(state, group: str) -> int:
    return state.offsets.fetch_offsets(group, [("t", 0)], False).partitions[("t", 0)].offset


def test_unload_forgets_only_that_partitions_groups_and_load_brings_them_back() -> None:
    state = fresh()
    logs: dict[int, list] = {}
    a, b = groups_on_two_partitions(state)
    commit(state, a, 5, logs)
    commit(state, b, 7, logs)
    commit(state, a, 9, logs)
    pa = state.partition_for(a)

    assert state.unload_partition(pa, E.NOT_COORDINATOR) == []
    assert offset_of(state, a) == -1
    assert offset_of(state, b) == 7
    assert state.groups_on_partition(pa) == set()

    replies = state.load_partition(pa, logs[pa], NOW, E.NOT_COORDINATOR)
    assert replies == []
    assert offset_of(state, a) == 9
    assert offset_of(state, b) == 7
    assert state.groups_on_partition(pa) == {a}


def test_load_ignores_other_partitions_records_and_replaces_what_memory_held() -> None:
    state = fresh()
    logs: dict[int, list] = {}
    a, b = groups_on_two_partitions(state)
    commit(state, a, 5, logs)
    commit(state, b, 7, logs)
    pa = state.partition_for(a)
    commit(state, a, 11, {})  # in memory only: the log of pa never got it
    everything = logs[pa] + logs[state.partition_for(b)]
    state.load_partition(pa, everything, NOW, E.NOT_COORDINATOR)
    assert offset_of(state, a) == 5  # the partition's log wins over memory
    assert offset_of(state, b) == 7


def test_members_waiting_in_join_get_not_coordinator_on_unload() -> None:
    state = fresh()
    outcome = state.join_group(
        1, group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        now_ms=NOW, client_id="c", client_host="/h", require_known_member_id=False,
        supports_skip_assignment=False,
    )
    assert outcome.replies == []  # waiting for the join to complete
    replies = state.unload_partition(state.partition_for("g"), E.NOT_COORDINATOR)
    assert [(r.ticket, type(r.response), r.response.error) for r in replies] == [
        (1, JoinResponse, E.NOT_COORDINATOR)
    ]
    assert state.classic.list_groups() == []
