"""``reload_groups``: after a failed write, a group is what ``__consumer_offsets`` holds.

The broker's GroupCoordinator calls it when appending a call's records fails
(a full disk); the end-to-end behaviour is in test_e2e_full_disk.py. Here the
state machine alone: what is reloaded, what is answered.
"""

from __future__ import annotations

from kafkette.broker.groups import GroupConfig, GroupCoordinatorState, GroupState, JoinResponse
from kafkette.wire.errors import ErrorCode as E

NOW = 1_000_000


def fresh() -> GroupCoordinatorState:
    return GroupCoordinatorState(
        GroupConfig(group_initial_rebalance_delay_ms=0), new_member_id=lambda c: f"{c}-1"
    )


def commit(state, group: str, offset: int, log: list | None):
    outcome = state.offsets.commit_offsets(
        group_id=group, generation_id=-1, member_id="", group_instance_id=None,
        offsets={("t", 0): (offset, -1, "")}, now_ms=NOW,
    )
    if log is not None:  # None: the write "failed"
        log.extend((r.key, r.value) for r in outcome.records)
    return outcome


def offset_of(state, group: str) -> int:
    return state.offsets.fetch_offsets(group, [("t", 0)], False).partitions[("t", 0)].offset


def test_a_commit_that_was_not_written_is_not_visible_after_reload() -> None:
    state = fresh()
    log: list = []
    commit(state, "g", 5, log)
    commit(state, "other", 7, log)
    commit(state, "g", 9, None)
    assert offset_of(state, "g") == 9  # memory ran ahead of the log
    replies = state.reload_groups(["g"], log, NOW, E.NOT_COORDINATOR)
    assert replies == []
    assert offset_of(state, "g") == 5
    assert offset_of(state, "other") == 7


def test_a_group_that_never_reached_the_log_is_forgotten() -> None:
    state = fresh()
    commit(state, "new", 3, None)
    state.reload_groups(["new"], [], NOW, E.NOT_COORDINATOR)
    assert offset_of(state, "new") == -1
    assert [g.group_id for g in state.classic.list_groups()] == []


def test_members_waiting_in_join_are_answered_and_the_group_is_what_the_log_says() -> None:
    state = fresh()
    log: list = []

    def run(outcome):
        log.extend((r.key, r.value) for r in outcome.records)
        return outcome

    first = run(state.join_group(
        1, group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        now_ms=NOW, client_id="c", client_host="/h", require_known_member_id=False,
        supports_skip_assignment=False,
    ))
    run(state.tick(NOW))
    member = first.replies[0].response.member_id if first.replies else "c-1"
    run(state.sync_group(
        2, group_id="g", generation_id=1, member_id=member, group_instance_id=None,
        protocol_type=None, protocol_name=None, assignments={member: b"A"}, now_ms=NOW,
    ))
    assert state.classic.group_state("g") is GroupState.STABLE
    # A second member joins: it waits in JoinGroup (ticket 3) for the first to rejoin.
    pending = state.join_group(
        3, group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        now_ms=NOW, client_id="d", client_host="/h", require_known_member_id=False,
        supports_skip_assignment=False,
    )
    assert pending.replies == []
    assert state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    replies = state.reload_groups(["g"], log, NOW, E.NOT_COORDINATOR)
    assert [(r.ticket, r.response) for r in replies] == [
        (3, JoinResponse(E.NOT_COORDINATOR, member_id="d-1"))
    ]
    assert state.classic.group_state("g") is GroupState.STABLE
    assert state.classic.generation("g") == 1
    assert state.classic.member_ids("g") == [member]
