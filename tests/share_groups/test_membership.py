"""Share groups' membership (pure): joins, epochs, Kafka's checks and errors, leaving,
session timeouts, and the assignment every member gets."""

from __future__ import annotations

import uuid

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.share_groups.membership import ShareGroups, ShareHeartbeat
from kafkette.wire.errors import ErrorCode

T = uuid.UUID(int=7)
TOPICS = {"jobs": (T, 1)}


def beat(groups, member, epoch, names=None, now=0, group="g"):
    return groups.heartbeat(ShareHeartbeat(group, member, epoch, None, names), TOPICS, now)


def test_members_join_and_all_get_the_one_partition() -> None:
    groups = ShareGroups(GroupConfig())
    first = beat(groups, "a", 0, ["jobs"])
    assert first.error == 0 and first.member_epoch == 1 and first.assignment == {T: frozenset({0})}
    second = beat(groups, "b", 0, ["jobs"])
    assert second.member_epoch == 2 and second.assignment == {T: frozenset({0})}
    # a's next beat moves it to the group epoch; nothing to hand back first
    again = beat(groups, "a", 1)
    assert again.member_epoch == 2 and again.assignment is None
    assert groups.groups["g"].state == "Stable"


def test_kafkas_request_checks() -> None:
    groups = ShareGroups(GroupConfig())
    for req, message in [
        (ShareHeartbeat("g", "", 0, None, ["jobs"]), "MemberId can't be empty."),
        (ShareHeartbeat("", "m", 0, None, ["jobs"]), "GroupId can't be empty."),
        (ShareHeartbeat("g", "m", 0, "", ["jobs"]), "RackId can't be empty."),
        (ShareHeartbeat("g", "m", 0, None, None),
         "SubscribedTopicNames must be set in first request."),
        (ShareHeartbeat("g", "m", -2, None, None), "MemberEpoch is invalid."),
    ]:
        result = groups.validate(req)
        assert result is not None
        assert (result.error, result.message) == (ErrorCode.INVALID_REQUEST, message)


def test_unknown_member_and_fenced_epochs() -> None:
    groups = ShareGroups(GroupConfig())
    assert beat(groups, "a", 3).error == ErrorCode.GROUP_ID_NOT_FOUND
    beat(groups, "a", 0, ["jobs"])
    assert beat(groups, "x", 1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(groups, "a", 5).error == ErrorCode.FENCED_MEMBER_EPOCH
    beat(groups, "b", 0, ["jobs"])
    assert beat(groups, "a", 1).member_epoch == 2  # the answer with epoch 2 was lost
    beat(groups, "c", 0, ["jobs"])
    beat(groups, "a", 2)  # a is at 3 now, its previous epoch 2
    assert beat(groups, "a", 1).error == ErrorCode.FENCED_MEMBER_EPOCH


def test_leave_and_session_timeout_share_out_the_partitions() -> None:
    groups = ShareGroups(GroupConfig(group_share_session_timeout_ms=1000))
    beat(groups, "a", 0, ["jobs"], now=0)
    beat(groups, "b", 0, ["jobs"], now=0)
    left = groups.heartbeat(ShareHeartbeat("g", "b", -1), TOPICS, 10)
    assert (left.error, left.member_epoch) == (0, -1)
    assert list(groups.groups["g"].members) == ["a"]
    assert groups.next_deadline_ms() == 1000
    assert groups.tick(999) == []
    assert groups.tick(1000) == [("g", "a")]
    assert groups.groups["g"].state == "Empty"
    assert groups.delete("g") == ErrorCode.NONE and "g" not in groups.groups


def test_max_size_and_delete_of_a_live_group() -> None:
    groups = ShareGroups(GroupConfig(group_share_max_size=1))
    beat(groups, "a", 0, ["jobs"])
    full = beat(groups, "b", 0, ["jobs"])
    assert full.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert groups.delete("g") == ErrorCode.NON_EMPTY_GROUP
    assert groups.delete("nope") is None


def test_a_new_topic_partition_bumps_the_epoch() -> None:
    groups = ShareGroups(GroupConfig())
    beat(groups, "a", 0, ["jobs"])
    grown = groups.heartbeat(ShareHeartbeat("g", "a", 1), {"jobs": (T, 2)}, 5)
    assert grown.member_epoch == 2 and grown.assignment == {T: frozenset({0, 1})}


def test_unloading_an_offsets_partition_drops_its_share_groups() -> None:
    """Cluster mode: leadership of the group's offsets partition moved away; its members
    rejoin the new coordinator, which tells a member it does not know to rejoin
    (UNKNOWN_MEMBER_ID, not the fatal GROUP_ID_NOT_FOUND)."""
    from kafkette.broker.groups import GroupCoordinatorState

    config = GroupConfig()
    state = GroupCoordinatorState(config)
    state.coordinators_move = True
    assert beat(state.share_groups, "a", 0, ["jobs"]).error == 0
    other = next(i for i in range(config.offsets_topic_num_partitions)
                 if i != state.partition_for("g"))
    state.unload_partition(other, 16)
    assert state.is_share_group("g")
    state.unload_partition(state.partition_for("g"), 16)
    assert not state.is_share_group("g")
    assert beat(state.share_groups, "a", 1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(state.share_groups, "a", 0, ["jobs"]).error == 0
