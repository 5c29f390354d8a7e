"""Share groups' membership (KIP-932) as a pure state machine: no I/O, no clock, no trio.

A share group is simpler than a KIP-848 consumer group because records, not partitions,
are what members hold: a partition may be fetched by several members at once and every
record is locked by the member that acquired it. So there is no revocation to wait for.
A member that joins (epoch 0), changes its subscription or leaves bumps the *group
epoch*; the ``simple`` assignor then computes the target assignment at that epoch and
every member takes its part on its next heartbeat, moving to the group epoch at once.

Kafka's checks, in Kafka's words: epoch 0 joins (SubscribedTopicNames required); an
unknown member with another epoch is UNKNOWN_MEMBER_ID; a member's epoch above the
coordinator's, or below it and not the previous one (a lost answer), is
FENCED_MEMBER_EPOCH; -1 leaves; a group at ``group.share.max.size`` refuses new members
(GROUP_MAX_SIZE_REACHED). A member not heard from for ``group.share.session.timeout.ms``
is removed. Membership lives in memory, as the consumer groups' does here
(docs/share-groups.md): after a restart members rejoin with epoch 0; the records'
delivery state is what is durable (``broker/share_groups/delivery_state.py``).
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.groups.consumer.assignors import Assignment, AssignorMember, AssignorTopic
from kafkette.broker.share_groups.assignor import NAME as ASSIGNOR_NAME
from kafkette.broker.share_groups.assignor import simple
from kafkette.wire.errors import ErrorCode

LEAVE_EPOCH = -1
EMPTY = "Empty"
STABLE = "Stable"
DEAD = "Dead"

TopicView = Mapping[str, tuple[uuid.UUID, int]]  # name -> (topic id, partition count)


@dataclass(slots=True)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    session_deadline_ms: int = 0


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # The subscribed topics as the last assignment saw them: name -> (id, partitions).
    subscribed_topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_names(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed_names}


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    """A ShareGroupHeartbeat in the request's own terms (None: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: Sequence[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _error(code: int, message: str | None = None) -> ShareHeartbeatResult:
    return ShareHeartbeatResult(int(code), message)


class ShareGroups:
    """Every share group this coordinator serves."""

    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ShareGroup] = {}
        # (deadline, group id, member id): a heap with lazy deletion.
        self._deadlines: list[tuple[int, str, str]] = []
        # Cluster mode: a member of a group this coordinator does not know (it moved here
        # from another broker; membership is not persisted) gets UNKNOWN_MEMBER_ID and
        # rejoins, instead of Kafka's GROUP_ID_NOT_FOUND, which clients take as fatal.
        self.rejoin_unknown_groups = False

    # Requests -----------------------------------------------------------------------

    @staticmethod
    def validate(req: ShareHeartbeat) -> ShareHeartbeatResult | None:
        """Kafka's request checks (GroupCoordinatorService), before any state is read."""
        if not req.member_id:
            return _error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if not req.group_id:
            return _error(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            return _error(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                return _error(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
                )
        elif req.member_epoch < LEAVE_EPOCH:
            return _error(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        return None

    def heartbeat(
        self, req: ShareHeartbeat, topics: TopicView, now_ms: int
    ) -> ShareHeartbeatResult:
        """One validated heartbeat of a group that is a share group or does not exist."""
        if req.member_epoch == LEAVE_EPOCH:
            return self._leave(req)
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_epoch != 0:
                if self.rejoin_unknown_groups:
                    return _error(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {req.member_id} is not a member of group {req.group_id}.",
                    )
                return _error(ErrorCode.GROUP_ID_NOT_FOUND,
                              f"Share group {req.group_id} not found.")
            group = ShareGroup(req.group_id)
        member = group.members.get(req.member_id)
        if member is None and len(group.members) >= self.config.group_share_max_size:
            return _error(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The share group has reached its maximum capacity of "
                f"{self.config.group_share_max_size} members.",
            )
        if member is None:
            if req.member_epoch != 0:
                return _error(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
            member = ShareMember(req.member_id, req.client_id, req.client_host)
        elif req.member_epoch > member.member_epoch or (
            0 < req.member_epoch < member.member_epoch
            and req.member_epoch != member.previous_epoch
        ):
            return _error(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has epoch {req.member_epoch}, the group coordinator "
                f"knows {member.member_epoch}. The member must abandon all its partitions "
                "and rejoin.",
            )
        self.groups[req.group_id] = group
        bump = req.member_id not in group.members
        group.members[req.member_id] = member
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            if names != member.subscribed_names:
                member.subscribed_names = names
                bump = True
        seen = self._subscribed_view(group, topics)
        if seen != group.subscribed_topics:
            group.subscribed_topics = seen
            bump = True
        if bump:
            group.group_epoch += 1
        if group.assignment_epoch < group.group_epoch:
            self._assign(group)
        before = member.assigned
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assigned = group.target.get(member.member_id, {})
        self._set_deadline(group, member, now_ms)
        full = req.member_epoch == 0 or req.subscribed_topic_names is not None
        return ShareHeartbeatResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.group_share_heartbeat_interval_ms,
            assignment=member.assigned if full or member.assigned != before else None,
        )

    def _leave(self, req: ShareHeartbeat) -> ShareHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            return _error(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {req.group_id} not found.")
        if req.member_id not in group.members:
            return _error(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        self.remove_member(group, req.member_id)
        return ShareHeartbeatResult(ErrorCode.NONE, member_id=req.member_id,
                                    member_epoch=LEAVE_EPOCH)

    # Assignment ---------------------------------------------------------------------

    @staticmethod
    def _subscribed_view(group: ShareGroup, topics: TopicView) -> dict[str, tuple[uuid.UUID, int]]:
        return {n: topics[n] for n in sorted(group.subscribed_names()) if n in topics}

    def _assign(self, group: ShareGroup) -> None:
        """The target assignment at the group epoch (members take it on their next beat)."""
        by_id = {tid: AssignorTopic(name, count)
                 for name, (tid, count) in group.subscribed_topics.items()}
        ids_of = {name: tid for name, (tid, _count) in group.subscribed_topics.items()}
        specs = {
            m.member_id: AssignorMember(
                frozenset(ids_of[n] for n in m.subscribed_names if n in ids_of),
                group.target.get(m.member_id, {}),
            )
            for m in group.members.values()
        }
        group.target = simple(specs, by_id) if specs else {}
        group.assignment_epoch = group.group_epoch

    def remove_member(self, group: ShareGroup, member_id: str) -> None:
        """A member left or timed out: the others share out its partitions."""
        del group.members[member_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1
        group.subscribed_topics = {
            n: v for n, v in group.subscribed_topics.items() if n in group.subscribed_names()
        }
        if group.members:
            self._assign(group)
        else:
            group.target = {}
            group.assignment_epoch = group.group_epoch

    # Timers -------------------------------------------------------------------------

    def _set_deadline(self, group: ShareGroup, member: ShareMember, now_ms: int) -> None:
        member.session_deadline_ms = now_ms + self.config.group_share_session_timeout_ms
        heapq.heappush(self._deadlines, (member.session_deadline_ms, group.group_id,
                                         member.member_id))

    def _live(self, entry: tuple[int, str, str]) -> ShareMember | None:
        deadline, group_id, member_id = entry
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None or member.session_deadline_ms != deadline:
            return None
        return member

    def next_deadline_ms(self) -> int | None:
        while self._deadlines and self._live(self._deadlines[0]) is None:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def tick(self, now_ms: int) -> list[tuple[str, str]]:
        """Remove the members whose session expired; returns (group id, member id)."""
        expired = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            entry = heapq.heappop(self._deadlines)
            if self._live(entry) is not None:
                self.remove_member(self.groups[entry[1]], entry[2])
                expired.append((entry[1], entry[2]))
        return expired

    # Administration -----------------------------------------------------------------

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def ensure(self, group_id: str) -> ShareGroup:
        """The group, made empty if it does not exist: a group whose share partitions
        survived a restart, or one AlterShareGroupOffsets creates (as Kafka does)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def unload(self, group_ids: list[str]) -> None:
        """Cluster mode: another broker coordinates these groups now (their members
        rejoin it, as Kafka's do); their deadlines go lazily."""
        for group_id in group_ids:
            self.groups.pop(group_id, None)

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups: None if ``group_id`` is not a share group, else the error code
        (NONE: deleted; NON_EMPTY_GROUP while it has members)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    @property
    def assignor_name(self) -> str:
        return ASSIGNOR_NAME
