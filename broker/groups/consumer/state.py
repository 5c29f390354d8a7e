"""KIP-848 consumer groups as a pure state machine (no I/O, no clock, no trio).

A consumer-protocol group has a *group epoch* (bumped whenever membership, a
subscription or the subscribed topics' partitions change), a *target assignment*
computed by a server-side assignor at that epoch (its *assignment epoch*), and
members that each reconcile towards their target one heartbeat at a time:

* partitions a member must give up are revoked first: its answer keeps only what
  stays, and its epoch does not move until a heartbeat shows it no longer owns the
  revoked ones (or its rebalance timeout passes and it is fenced);
* partitions another member still owns (not yet revoked there) are held back and
  handed over on a later heartbeat, once released; the member already moves to the
  target epoch.

Membership lives in memory (see docs/consumer-group-protocol.md): committed offsets are
the classic groups' (``__consumer_offsets``), and after a restart members are answered
UNKNOWN_MEMBER_ID and rejoin with epoch 0.

The broker drives it like the classic state machine: every call takes ``now_ms``,
``next_deadline_ms`` / ``tick`` fire the session and rebalance timeouts, and one task
calls it at a time (the group coordinator's lock).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafkette.broker.groups import errors
from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.groups.consumer.assignors import (
    ASSIGNORS,
    Assignment,
    AssignorMember,
    AssignorTopic,
)

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"
DEAD = "Dead"

# Member reconciliation states (Kafka's MemberState).
MEMBER_STABLE = "stable"
UNREVOKED = "unrevoked_partitions"
UNRELEASED = "unreleased_partitions"

# Internal topics are never matched by a subscription regex.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

# Error codes Kafka 4.0 answers for KIP-848 (wire/errors.py has them all).
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128
GROUP_ID_NOT_FOUND = 69
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
NON_EMPTY_GROUP = 68

TopicView = Mapping[str, tuple[uuid.UUID, int]]  # name -> (topic id, partition count)


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_names: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_epoch: int = -1
    state: str = MEMBER_STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline_ms: int | None = None
    revocation_deadline_ms: int | None = None


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)
    subscribed_topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    assignor: str = ""

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch != self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MEMBER_STABLE:
                return RECONCILING
        return STABLE


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, in the request's own terms (None: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    version: int = 1
    client_id: str = ""
    client_host: str = ""


def _error(code: int, message: str, member_id: str | None = None, epoch: int = 0):
    return HeartbeatResult(code, message, member_id, epoch)


def _union(a: Assignment, b: Assignment) -> Assignment:
    out = dict(a)
    for tid, parts in b.items():
        out[tid] = out.get(tid, frozenset()) | parts
    return {t: p for t, p in out.items() if p}


def _minus(a: Assignment, b: Assignment) -> Assignment:
    out = {tid: parts - b.get(tid, frozenset()) for tid, parts in a.items()}
    return {t: p for t, p in out.items() if p}


def _intersect(a: Assignment, b: Assignment) -> Assignment:
    out = {tid: parts & b.get(tid, frozenset()) for tid, parts in a.items()}
    return {t: p for t, p in out.items() if p}


def _partitions(a: Assignment) -> Iterable[tuple[uuid.UUID, int]]:
    for tid, parts in a.items():
        for p in parts:
            yield tid, p


def _kafka_uuid() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerGroups:
    """Every KIP-848 group of one coordinator."""

    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ConsumerGroup] = {}

    @property
    def assignor_names(self) -> list[str]:
        return [a.strip() for a in self.config.group_consumer_assignors.split(",") if a.strip()]

    # --- heartbeat ------------------------------------------------------------------

    def validate(self, req: HeartbeatRequest) -> HeartbeatResult | None:
        """Kafka's request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR ...), or None."""
        if not req.group_id:
            return _error(INVALID_REQUEST, "GroupId can't be empty.")
        if req.version >= 1 and not req.member_id:
            return _error(INVALID_REQUEST, "MemberId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            return _error(INVALID_REQUEST, "InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            return _error(INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch > 0 or req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            if not req.member_id:
                return _error(INVALID_REQUEST, "MemberId can't be empty.")
            if req.member_epoch == LEAVE_STATIC_EPOCH and req.instance_id is None:
                return _error(INVALID_REQUEST, "InstanceId can't be null.")
        elif req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                return _error(
                    INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
                )
            if req.owned is None or req.owned:
                return _error(INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                return _error(
                    INVALID_REQUEST,
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                )
        else:
            return _error(INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                return _error(
                    INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid "
                    f"regular expression: {exc}.",
                )
        if req.server_assignor is not None and req.server_assignor not in self.assignor_names:
            return _error(
                UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self.assignor_names)}.",
            )
        return None

    def heartbeat(
        self, req: HeartbeatRequest, topics: TopicView, now_ms: int
    ) -> HeartbeatResult:
        """One ConsumerGroupHeartbeat. The caller checked that no non-empty classic group
        holds the id and validated the request (``validate``)."""
        group = self.groups.get(req.group_id)
        if group is None and req.member_epoch != 0:
            # Kafka answers GROUP_ID_NOT_FOUND, which clients take as fatal; it cannot
            # happen to a live member there, as Kafka persists its groups. Membership here
            # is not persisted, so after a restart a member is told to rejoin instead.
            return _error(
                errors.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        if req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            assert group is not None
            return self._leave(group, req, now_ms)
        if group is None:
            group = ConsumerGroup(req.group_id)
            self.groups[req.group_id] = group
        joined = False
        if req.member_epoch == 0:
            result = self._join(group, req)
            if isinstance(result, HeartbeatResult):
                if not group.members:
                    del self.groups[group.group_id]
                return result
            member, joined = result
        else:
            member = group.members.get(req.member_id)
            if member is None:
                return _error(
                    errors.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                    req.member_id,
                )
            if req.instance_id is not None and group.static_members.get(req.instance_id) not in (
                None, member.member_id
            ):
                return _error(errors.FENCED_INSTANCE_ID, "Static member was replaced.")
            fenced = self._check_epoch(member, req)
            if fenced is not None:
                return fenced
        before = member.assigned
        # One heartbeat bumps the group epoch at most once, whatever changed (Kafka's).
        changed = self._update_member(group, member, req) or joined
        changed |= self._refresh_topics(group, topics)
        if changed:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        self._reconcile(group, member, req.owned, now_ms)
        member.session_deadline_ms = now_ms + self.config.group_consumer_session_timeout_ms
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None
        )
        send = req.member_epoch == 0 or full or member.assigned != before
        return HeartbeatResult(
            errors.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.config.group_consumer_heartbeat_interval_ms,
            dict(member.assigned) if send else None,
        )

    def _join(
        self, group: ConsumerGroup, req: HeartbeatRequest
    ) -> tuple[ConsumerMember, bool] | HeartbeatResult:
        member_id = req.member_id or _kafka_uuid()  # v0: the coordinator names it
        member = group.members.get(member_id)
        if req.instance_id is not None:
            previous_id = group.static_members.get(req.instance_id)
            if previous_id is not None and previous_id != member_id:
                previous = group.members[previous_id]
                if previous.member_epoch != LEAVE_STATIC_EPOCH:
                    return _error(
                        UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {req.instance_id} cannot "
                        f"join the group because the instance id is owned by {previous_id} "
                        "member.",
                    )
                # KIP-848 static membership: the new member takes the old one's place,
                # epoch and assignment; no rebalance.
                del group.members[previous_id]
                previous.member_id = member_id
                previous.member_epoch = previous.previous_epoch
                previous.client_id, previous.client_host = req.client_id, req.client_host
                group.members[member_id] = previous
                group.static_members[req.instance_id] = member_id
                if previous_id in group.target:
                    group.target[member_id] = group.target.pop(previous_id)
                for tp, owner in list(group.owners.items()):
                    if owner == previous_id:
                        group.owners[tp] = member_id
                return previous, False
        if member is None:
            if len(group.members) >= self.config.group_consumer_max_size:
                return _error(
                    errors.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum capacity of "
                    f"{self.config.group_consumer_max_size} members.",
                    member_id,
                )
            member = ConsumerMember(
                member_id, req.instance_id, req.rack_id, req.client_id, req.client_host,
                req.rebalance_timeout_ms,
            )
            group.members[member_id] = member
            if req.instance_id is not None:
                group.static_members[req.instance_id] = member_id
            return member, True
        else:
            # A known member rejoining with epoch 0 (it was fenced, or lost its state):
            # it starts over with nothing owned.
            self._set_partitions(group, member, {}, {})
            member.member_epoch = 0
            member.state = MEMBER_STABLE
            member.revocation_deadline_ms = None
        return member, False

    @staticmethod
    def _check_epoch(member: ConsumerMember, req: HeartbeatRequest) -> HeartbeatResult | None:
        """Kafka's throwIfMemberEpochIsInvalid: an older epoch is accepted only as the
        retry of a lost answer (the previous epoch, owning exactly what is assigned)."""
        epoch = req.member_epoch
        if epoch == member.member_epoch:
            return None
        if (
            epoch < member.member_epoch
            and epoch == member.previous_epoch
            and req.owned is not None
            and req.owned == member.assigned
        ):
            return None
        which = "greater" if epoch > member.member_epoch else "smaller"
        return _error(
            FENCED_MEMBER_EPOCH,
            f"The consumer group member has a {which}"
            f" member epoch ({epoch}) than the one known by the group coordinator "
            f"({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            member.member_id,
        )

    def _update_member(
        self, group: ConsumerGroup, member: ConsumerMember, req: HeartbeatRequest
    ) -> bool:
        changed = False
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            changed |= names != member.subscribed_names
            member.subscribed_names = names
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None
            changed |= regex != member.subscribed_regex
            member.subscribed_regex = regex
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor = req.server_assignor
            changed = True
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.client_id:
            member.client_id = req.client_id
        return changed

    # --- subscriptions and the target assignment ---------------------------------------

    @staticmethod
    def _subscribed_names(member: ConsumerMember, topics: TopicView) -> set[str]:
        names = {n for n in member.subscribed_names if n in topics}
        if member.subscribed_regex:
            pattern = re.compile(member.subscribed_regex)
            names |= {
                n for n in topics if n not in INTERNAL_TOPICS and pattern.fullmatch(n)
            }
        return names

    def _refresh_topics(self, group: ConsumerGroup, topics: TopicView) -> bool:
        """The subscribed topics as they are now: a new or deleted topic, or more
        partitions, bump the group epoch (a new target assignment)."""
        wanted: dict[str, tuple[uuid.UUID, int]] = {}
        for member in group.members.values():
            for name in self._subscribed_names(member, topics):
                wanted[name] = topics[name]
        if wanted != group.subscribed_topics:
            group.subscribed_topics = wanted
            return True
        return False

    def _compute_target(self, group: ConsumerGroup) -> None:
        names = self.assignor_names
        votes: dict[str, int] = {}
        for m in group.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        chosen = max(votes, key=lambda a: (votes[a], -names.index(a))) if votes else names[0]
        group.assignor = chosen
        topics = {tid: AssignorTopic(name, count) for name, (tid, count) in
                  group.subscribed_topics.items()}
        by_name = {name: tid for name, (tid, _count) in group.subscribed_topics.items()}
        specs = {}
        for m in group.members.values():
            subscribed = frozenset(
                by_name[n] for n in by_name
                if n in m.subscribed_names
                or (m.subscribed_regex and n not in INTERNAL_TOPICS
                    and re.fullmatch(m.subscribed_regex, n))
            )
            specs[m.member_id] = AssignorMember(subscribed, group.target.get(m.member_id, {}))
        group.target = ASSIGNORS[chosen](specs, topics)
        group.assignment_epoch = group.group_epoch

    # --- reconciliation -----------------------------------------------------------------

    def _set_partitions(
        self, group: ConsumerGroup, member: ConsumerMember, assigned: Assignment,
        pending: Assignment,
    ) -> None:
        for tp in list(_partitions(member.assigned)) + list(_partitions(member.pending_revocation)):
            if group.owners.get(tp) == member.member_id:
                del group.owners[tp]
        member.assigned, member.pending_revocation = assigned, pending
        for tp in list(_partitions(assigned)) + list(_partitions(pending)):
            group.owners[tp] = member.member_id

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None, now_ms: int
    ) -> None:
        if member.state == UNREVOKED:
            still_owned = owned is None or any(
                owned.get(tid, frozenset()) & parts
                for tid, parts in member.pending_revocation.items()
            )
            if still_owned:
                return
            self._set_partitions(group, member, member.assigned, {})
            member.state = MEMBER_STABLE
            member.revocation_deadline_ms = None
        if member.member_epoch == group.assignment_epoch and member.state == MEMBER_STABLE:
            return
        target = group.target.get(member.member_id, {})
        keep = _intersect(member.assigned, target)
        revoke = _minus(member.assigned, target)
        if revoke:
            self._set_partitions(group, member, keep, revoke)
            member.state = UNREVOKED
            member.revocation_deadline_ms = now_ms + max(0, member.rebalance_timeout_ms)
            return
        new = _minus(target, keep)
        free: dict[uuid.UUID, frozenset[int]] = {}
        held = False
        for tid, parts in new.items():
            ok = frozenset(
                p for p in parts if group.owners.get((tid, p)) in (None, member.member_id)
            )
            held |= ok != parts
            if ok:
                free[tid] = ok
        self._set_partitions(group, member, _union(keep, free), {})
        member.state = UNRELEASED if held else MEMBER_STABLE
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch

    # --- leaving, timeouts ---------------------------------------------------------------

    def _leave(self, group: ConsumerGroup, req: HeartbeatRequest, now_ms: int):
        member = group.members.get(req.member_id)
        if member is None:
            return _error(
                errors.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        if req.member_epoch == LEAVE_STATIC_EPOCH and member.instance_id is not None:
            # A static member leaving for now: it keeps its place and partitions until
            # its session times out or its instance id rejoins.
            if member.member_epoch != LEAVE_STATIC_EPOCH:
                member.previous_epoch = member.member_epoch
            member.member_epoch = LEAVE_STATIC_EPOCH
            member.session_deadline_ms = now_ms + self.config.group_consumer_session_timeout_ms
            return HeartbeatResult(errors.NONE, None, member.member_id, LEAVE_STATIC_EPOCH)
        self.remove_member(group, member)
        return HeartbeatResult(errors.NONE, None, member.member_id, LEAVE_EPOCH)

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._set_partitions(group, member, {}, {})
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        if member.instance_id is not None and (
            group.static_members.get(member.instance_id) == member.member_id
        ):
            del group.static_members[member.instance_id]
        group.group_epoch += 1

    def next_deadline_ms(self) -> int | None:
        best = None
        for group in self.groups.values():
            for m in group.members.values():
                for d in (m.session_deadline_ms, m.revocation_deadline_ms):
                    if d is not None and (best is None or d < best):
                        best = d
        return best

    def tick(self, now_ms: int) -> list[tuple[str, str]]:
        """Remove members whose session or revocation timed out: ``[(group, member)]``."""
        removed = []
        for group in self.groups.values():
            for m in list(group.members.values()):
                expired = (m.session_deadline_ms is not None and m.session_deadline_ms <= now_ms)
                expired |= (
                    m.revocation_deadline_ms is not None and m.revocation_deadline_ms <= now_ms
                )
                if expired:
                    self.remove_member(group, m)
                    removed.append((group.group_id, m.member_id))
        return removed

    # --- other APIs ------------------------------------------------------------------------

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def classic_join_refused(self, group_id: str) -> bool:
        """A classic JoinGroup for a consumer group: an empty one is dropped (its offsets
        stay, the classic group takes over: the downgrade of KIP-848's migration), a
        non-empty one refuses it."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        policy = self.config.group_consumer_migration_policy
        if not group.members and policy in ("downgrade", "bidirectional"):
            del self.groups[group_id]
            return False
        return True

    def validate_offset_commit(
        self, group_id: str, member_id: str, epoch: int, version: int,
        transactional: bool = False,
    ) -> int | None:
        """None for a group that is not a consumer group (the classic checks apply);
        else the error code every partition gets (NONE: commit as a simple commit).
        A TxnOffsetCommit (``transactional``) is not held to OffsetCommit v9+."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if epoch < 0 and not group.members:
            return errors.NONE
        member = group.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        if version < 9 and not transactional:
            return UNSUPPORTED_VERSION
        if epoch != member.member_epoch:  # Kafka 4.0: greater or smaller alike
            return STALE_MEMBER_EPOCH
        return errors.NONE

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        group = self.groups.get(group_id)
        if group is None or (not member_id and epoch < 0):
            return errors.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            return STALE_MEMBER_EPOCH
        return errors.NONE

    def subscribed(self, group_id: str, names: Iterable[str]) -> set[str]:
        """Which of ``names`` a member of the group subscribes to now (by name or regex)."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        view = dict.fromkeys(names, (uuid.UUID(int=0), 0))
        out: set[str] = set()
        for member in group.members.values():
            out |= self._subscribed_names(member, view)
        return out

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups: None if not a consumer group; NON_EMPTY_GROUP, or NONE once gone."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return NON_EMPTY_GROUP
        del self.groups[group_id]
        return errors.NONE
