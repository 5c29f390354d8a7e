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
import heapq
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.groups.consumer.assignors import (
    ASSIGNORS,
    Assignment,
    AssignorMember,
    AssignorTopic,
    assignor_names,
)
from kafkette.broker.groups.consumer.regex import InvalidRegex, compile_regex, full_matches
from kafkette.broker.internal_topics import INTERNAL_TOPICS
from kafkette.wire.errors import ErrorCode

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

TopicView = Mapping[str, tuple[uuid.UUID, int]]  # name -> (topic id, partition count)
# Which of these topic names the member may DESCRIBE (an authorizer is on), else None.
TopicFilter = Callable[[Iterable[str]], set[str]]


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
    # A classic member told REBALANCE_IN_PROGRESS must rejoin within its rebalance
    # timeout (Kafka's consumer group join timeout), else it is removed.
    join_deadline_ms: int | None = None
    # The member's DESCRIBE permission on topics, applied to what its regex matches.
    topic_filter: TopicFilter | None = None
    # What the subscription resolved to against the topic view ``resolved_view``.
    resolved: frozenset[str] = frozenset()
    resolved_view: object = None
    # A classic member (JoinGroup/SyncGroup/Heartbeat) inside the consumer group: its
    # session timeout and JoinGroup protocols; None for a consumer-protocol member.
    classic: ClassicMeta | None = None


@dataclass(slots=True)
class ClassicMeta:
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


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
    view: object = None  # the topic view subscribed_topics was resolved against

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
    topic_filter: TopicFilter | None = None


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
        # Session and revocation deadlines, (deadline, group, member, kind): a heap with
        # lazy removal (an entry is stale once the member's deadline moved), so finding
        # the next one does not scan every member after every call.
        self._deadlines: list[tuple[int, str, str, str]] = []
        self._compact_at = 1024
        # Regex -> the topics it matches in ``_regex_view`` (resolved once per topic
        # set, not per heartbeat).
        self._regex_view: object = None
        self._regex_matches: dict[str, frozenset[str]] = {}
        self.last_view: TopicView = {}  # the newest topic view a heartbeat brought

    @property
    def assignor_names(self) -> list[str]:
        return assignor_names(self.config.group_consumer_assignors)

    # --- heartbeat ------------------------------------------------------------------

    def validate(self, req: HeartbeatRequest) -> HeartbeatResult | None:
        """Kafka's request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR ...), or None."""
        if not req.group_id:
            return _error(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if req.version >= 1 and not req.member_id:
            return _error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            return _error(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            return _error(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch > 0 or req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            if not req.member_id:
                return _error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
            if req.member_epoch == LEAVE_STATIC_EPOCH and req.instance_id is None:
                return _error(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        elif req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                return _error(
                    ErrorCode.INVALID_REQUEST,
                    "RebalanceTimeoutMs must be provided in first request.",
                )
            if req.owned is None or req.owned:
                return _error(
                    ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
                )
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                return _error(
                    ErrorCode.INVALID_REQUEST,
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                    "(re-)joining.",
                )
        else:
            return _error(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.subscribed_topic_regex:
            try:
                compile_regex(req.subscribed_topic_regex)
            except InvalidRegex as exc:
                return _error(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid "
                    f"regular expression: {exc}.",
                )
        if req.server_assignor is not None and req.server_assignor not in self.assignor_names:
            return _error(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self.assignor_names)}.",
            )
        return None

    def heartbeat(
        self, req: HeartbeatRequest, topics: TopicView, now_ms: int
    ) -> HeartbeatResult:
        """One ConsumerGroupHeartbeat. The caller checked that no non-empty classic group
        holds the id and validated the request (``validate``)."""
        self.last_view = topics
        group = self.groups.get(req.group_id)
        if group is None and req.member_epoch != 0:
            # Kafka answers GROUP_ID_NOT_FOUND, which clients take as fatal; it cannot
            # happen to a live member there, as Kafka persists its groups. Membership here
            # is not persisted, so after a restart a member is told to rejoin instead.
            return _error(
                ErrorCode.UNKNOWN_MEMBER_ID,
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
            found = self._existing_member(group, req)
            if isinstance(found, HeartbeatResult):
                return found
            member = found
            fenced = self._check_epoch(member, req)
            if fenced is not None:
                return fenced
        before = member.assigned
        if req.topic_filter is not None:
            member.topic_filter = req.topic_filter
        # One heartbeat bumps the group epoch at most once, whatever changed (Kafka's).
        changed = self._update_member(group, member, req) or joined
        changed |= self._refresh_topics(group, topics, member, changed)
        if changed:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        self._reconcile(group, member, req.owned, now_ms)
        self._set_deadline(
            group, member, "session_deadline_ms",
            now_ms + self.config.group_consumer_session_timeout_ms,
        )
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None
        )
        send = req.member_epoch == 0 or full or member.assigned != before
        return HeartbeatResult(
            ErrorCode.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.config.group_consumer_heartbeat_interval_ms,
            dict(member.assigned) if send else None,
        )

    @staticmethod
    def _existing_member(
        group: ConsumerGroup, req: HeartbeatRequest
    ) -> ConsumerMember | HeartbeatResult:
        """The member a heartbeat (epoch != 0) or a leave names: a static member through
        its instance id first (Kafka's throwIfStaticMemberIsUnknown /
        throwIfInstanceIdIsFenced), else by member id."""
        if req.instance_id is not None:
            static_id = group.static_members.get(req.instance_id)
            if static_id is None or static_id not in group.members:
                return _error(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.",
                    req.member_id,
                )
            if static_id != req.member_id:
                return _error(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was "
                    f"fenced by member {static_id}.",
                    req.member_id,
                )
            return group.members[static_id]
        member = group.members.get(req.member_id)
        if member is None:
            return _error(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
                req.member_id,
            )
        return member

    def _set_deadline(
        self, group: ConsumerGroup, member: ConsumerMember, kind: str, deadline: int | None
    ) -> None:
        setattr(member, kind, deadline)
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, group.group_id, member.member_id, kind))
            if len(self._deadlines) > self._compact_at:
                self._compact_deadlines()

    def _compact_deadlines(self) -> None:
        live = []
        for group in self.groups.values():
            for m in group.members.values():
                for kind in ("session_deadline_ms", "revocation_deadline_ms",
                             "join_deadline_ms"):
                    d = getattr(m, kind)
                    if d is not None:
                        live.append((d, group.group_id, m.member_id, kind))
        heapq.heapify(live)
        self._deadlines = live
        # Amortized: the next compaction only once the heap grew well past the live entries.
        self._compact_at = max(1024, 4 * len(live))

    def _live_deadline(self, entry: tuple[int, str, str, str]) -> ConsumerMember | None:
        deadline, group_id, member_id, kind = entry
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None or getattr(member, kind) != deadline:
            return None
        return member

    def _join(
        self, group: ConsumerGroup, req: HeartbeatRequest
    ) -> tuple[ConsumerMember, bool] | HeartbeatResult:
        member_id = req.member_id or _kafka_uuid()  # v0: the coordinator names it
        member = group.members.get(member_id)
        if req.instance_id is not None:
            previous_id = group.static_members.get(req.instance_id)
            if member is not None and member.instance_id != req.instance_id:
                # The member id names another member: never overwrite it.
                return _error(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {req.group_id}.",
                    member_id,
                )
            if previous_id is not None and previous_id != member_id:
                previous = group.members[previous_id]
                if previous.member_epoch != LEAVE_STATIC_EPOCH and previous.classic is None:
                    # Only a consumer-protocol member holds its instance id against
                    # another; a classic member is replaced (Kafka's).
                    return _error(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {req.instance_id} cannot "
                        f"join the group because the instance id is owned by {previous_id} "
                        "member.",
                    )
                # KIP-848 static membership: the new member takes the old one's place,
                # epoch and assignment; no rebalance.
                if previous.member_epoch == LEAVE_STATIC_EPOCH:
                    previous.member_epoch = previous.previous_epoch
                previous.classic = None
                previous.join_deadline_ms = None  # a classic member's timer, not its own
                self._replace_static(group, previous, member_id, req.client_id,
                                     req.client_host)
                return previous, False
        if member is None:
            if len(group.members) >= self.config.group_consumer_max_size:
                return _error(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
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

    def _replace_static(
        self, group: ConsumerGroup, previous: ConsumerMember, member_id: str, client_id: str,
        client_host: str,
    ) -> None:
        """A restarted static member (same instance id, new member id) takes the place,
        epoch and assignment of the one it replaces."""
        previous_id = previous.member_id
        del group.members[previous_id]
        previous.member_id = member_id
        previous.client_id, previous.client_host = client_id, client_host
        group.members[member_id] = previous
        assert previous.instance_id is not None
        group.static_members[previous.instance_id] = member_id
        if previous_id in group.target:
            group.target[member_id] = group.target.pop(previous_id)
        for tp, owner in list(group.owners.items()):
            if owner == previous_id:
                group.owners[tp] = member_id
        for kind in ("session_deadline_ms", "revocation_deadline_ms", "join_deadline_ms"):
            self._set_deadline(group, previous, kind, getattr(previous, kind))

    @staticmethod
    def _check_epoch(member: ConsumerMember, req: HeartbeatRequest) -> HeartbeatResult | None:
        """Kafka's throwIfMemberEpochIsInvalid: an older epoch is accepted only as the
        retry of a lost answer: the previous epoch, owning a subset of what is assigned
        (Kafka's isSubset: the member may not have taken the new partitions yet)."""
        epoch = req.member_epoch
        if epoch == member.member_epoch:
            return None
        if (
            epoch < member.member_epoch
            and epoch == member.previous_epoch
            and req.owned is not None
            and all(
                parts <= member.assigned.get(tid, frozenset()) for tid, parts in req.owned.items()
            )
        ):
            return None
        which = "greater" if epoch > member.member_epoch else "smaller"
        return _error(
            ErrorCode.FENCED_MEMBER_EPOCH,
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

    def _regex_names(self, regex: str, topics: TopicView) -> frozenset[str]:
        """What ``regex`` matches among ``topics``: resolved once per topic view (the
        caller hands a new view object only when the topic set changed)."""
        if self._regex_view is not topics:
            self._regex_view, self._regex_matches = topics, {}
        names = self._regex_matches.get(regex)
        if names is None:
            if len(self._regex_matches) >= 1024:
                self._regex_matches.clear()
            names = full_matches(regex, topics, INTERNAL_TOPICS)
            self._regex_matches[regex] = names
        return names

    def _resolve(self, member: ConsumerMember, topics: TopicView) -> frozenset[str]:
        names = {n for n in member.subscribed_names if n in topics}
        if member.subscribed_regex:
            matched = self._regex_names(member.subscribed_regex, topics)
            if member.topic_filter is not None and matched:
                matched = frozenset(member.topic_filter(matched))
            names |= matched
        member.resolved, member.resolved_view = frozenset(names), topics
        return member.resolved

    def _refresh_topics(
        self, group: ConsumerGroup, topics: TopicView, member: ConsumerMember | None = None,
        changed: bool = False,
    ) -> bool:
        """The subscribed topics as they are now: a new or deleted topic, or more
        partitions, bump the group epoch (a new target assignment). Nothing to do when
        neither the topic view nor ``member``'s subscription changed (``changed``)."""
        if group.view is topics and not changed:
            return False
        if group.view is topics and member is not None:
            self._resolve(member, topics)
        else:
            for m in group.members.values():
                self._resolve(m, topics)
        group.view = topics
        wanted: dict[str, tuple[uuid.UUID, int]] = {}
        for m in group.members.values():
            for name in m.resolved:
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
            subscribed = frozenset(by_name[n] for n in m.resolved if n in by_name)
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
        # Kafka's ownsRevokedPartitions: a member that no longer owns what it must give
        # up (an eager classic member rejoining owns nothing) moves on at once.
        if revoke and (owned is None or any(
            owned.get(tid, frozenset()) & parts for tid, parts in revoke.items()
        )):
            self._set_partitions(group, member, keep, revoke)
            member.state = UNREVOKED
            self._set_deadline(
                group, member, "revocation_deadline_ms",
                now_ms + max(0, member.rebalance_timeout_ms),
            )
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
        found = self._existing_member(group, req)
        if isinstance(found, HeartbeatResult):
            return _error(found.error, found.message or "")
        member = found
        if req.member_epoch == LEAVE_STATIC_EPOCH and member.instance_id is not None:
            # A static member leaving for now: it keeps its place and partitions until
            # its session times out or its instance id rejoins.
            if member.member_epoch != LEAVE_STATIC_EPOCH:
                member.previous_epoch = member.member_epoch
            member.member_epoch = LEAVE_STATIC_EPOCH
            self._set_deadline(
                group, member, "session_deadline_ms",
                now_ms + self.config.group_consumer_session_timeout_ms,
            )
            return HeartbeatResult(ErrorCode.NONE, None, member.member_id, LEAVE_STATIC_EPOCH)
        self.remove_member(group, member)
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, LEAVE_EPOCH)

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        self._set_partitions(group, member, {}, {})
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        group.view = None  # its topics may no longer be subscribed: resolve again
        if member.instance_id is not None and (
            group.static_members.get(member.instance_id) == member.member_id
        ):
            del group.static_members[member.instance_id]
        group.group_epoch += 1

    def next_deadline_ms(self) -> int | None:
        heap = self._deadlines
        while heap and self._live_deadline(heap[0]) is None:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def tick(self, now_ms: int) -> list[tuple[str, str]]:
        """Remove members whose session or revocation timed out: ``[(group, member)]``."""
        removed = []
        heap = self._deadlines
        while heap and heap[0][0] <= now_ms:
            entry = heapq.heappop(heap)
            member = self._live_deadline(entry)
            if member is not None:
                group = self.groups[entry[1]]
                self.remove_member(group, member)
                removed.append((group.group_id, member.member_id))
        return removed

    # --- other APIs ------------------------------------------------------------------------

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def classic_join_refused(self, group_id: str) -> bool:
        """A classic JoinGroup for a consumer group: a non-empty one refuses it; an
        empty one gives way (``drop_empty_for_classic``, once the join is validated: its
        offsets stay, the classic group takes over: the downgrade of KIP-848's migration)."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        policy = self.config.group_consumer_migration_policy
        return bool(group.members) or policy not in ("downgrade", "bidirectional")

    def drop_empty_for_classic(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and not group.members:
            del self.groups[group_id]

    def validate_offset_commit(
        self, group_id: str, member_id: str, epoch: int, version: int,
        transactional: bool = False, instance_id: str | None = None,
    ) -> int | None:
        """None for a group that is not a consumer group (the classic checks apply);
        else the error code every partition gets (NONE: commit as a simple commit).
        A TxnOffsetCommit (``transactional``) is not held to OffsetCommit v9+."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if epoch < 0 and not group.members:
            return ErrorCode.NONE
        if transactional and epoch == -1 and member_id == "" and instance_id is None:
            # TxnOffsetCommit does not require member, epoch and instance id: checked
            # only when one is given (Kafka's ConsumerGroup.validateOffsetCommit).
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:  # a classic member: its generation is its epoch
            return ErrorCode.NONE if epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
        if version < 9 and not transactional:
            return ErrorCode.UNSUPPORTED_VERSION
        if epoch != member.member_epoch:  # Kafka 4.0: greater or smaller alike
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        group = self.groups.get(group_id)
        if group is None or (not member_id and epoch < 0):
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            # A classic member's epoch is its generation (Kafka's ILLEGAL_GENERATION).
            if member.classic is not None:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def subscribed(self, group_id: str, names: Iterable[str]) -> set[str]:
        """Which of ``names`` a member of the group subscribes to now (by name or regex)."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        wanted = set(names)
        out: set[str] = set()
        for member in group.members.values():
            out |= wanted.intersection(member.subscribed_names)
            if member.subscribed_regex:
                out |= full_matches(member.subscribed_regex, wanted, INTERNAL_TOPICS)
        return out

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups: None if not a consumer group; NON_EMPTY_GROUP, or NONE once gone."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE

    # --- classic members inside a consumer group (KIP-848's online upgrade) ---------------

    def _names_to_ids(self, partitions: Mapping[str, frozenset[int]]) -> Assignment:
        view = self.last_view
        return {view[n][0]: p for n, p in partitions.items() if n in view and p}

    def _ids_to_names(self, assignment: Assignment) -> dict[str, frozenset[int]]:
        names = {tid: n for n, (tid, _count) in self.last_view.items()}
        return {names[t]: p for t, p in assignment.items() if t in names}

    def upgrade_classic(
        self, group_id: str, generation: int, members: Sequence[dict], topics: TopicView,
        now_ms: int,
    ) -> None:
        """Turn a Stable classic group's members into classic members of a new consumer
        group (Kafka's online upgrade): epoch = generation, subscription and owned
        partitions from their embedded-protocol metadata and assignment; the target is
        what they own, so nothing moves until the joining member bumps the epoch."""
        from kafkette.broker.groups.consumer.embedded_protocol import (
            decode_assignment,
            decode_subscription,
        )

        self.last_view = topics
        group = ConsumerGroup(group_id, group_epoch=generation, assignment_epoch=generation)
        self.groups[group_id] = group
        for m in members:
            names, _owned = decode_subscription(m["protocols"][0][1])
            member = ConsumerMember(
                m["member_id"], m["instance_id"], None, m["client_id"], m["client_host"],
                m["rebalance_timeout_ms"], subscribed_names=tuple(sorted(set(names))),
                member_epoch=generation, previous_epoch=generation,
                classic=ClassicMeta(m["session_timeout_ms"], tuple(m["protocols"])),
            )
            group.members[member.member_id] = member
            if member.instance_id is not None:
                group.static_members[member.instance_id] = member.member_id
            assigned = self._names_to_ids(decode_assignment(m["assignment"]))
            self._set_partitions(group, member, assigned, {})
            group.target[member.member_id] = assigned
            self._set_deadline(group, member, "session_deadline_ms",
                               now_ms + m["session_timeout_ms"])
        self._refresh_topics(group, topics)

    @staticmethod
    def _shares_a_classic_protocol(
        group: ConsumerGroup, member_id: str, protocols: Sequence[tuple[str, bytes]]
    ) -> bool:
        """Whether ``protocols`` has a name every other classic member of the group has."""
        common = {name for name, _ in protocols}
        for other in group.members.values():
            if other.member_id != member_id and other.classic is not None:
                common &= {name for name, _ in other.classic.protocols}
        return bool(common)

    @staticmethod
    def _remove_new_member(group: ConsumerGroup, member: ConsumerMember) -> None:
        """Undo the creation of a member a refused join had just added."""
        del group.members[member.member_id]
        if member.instance_id is not None and (
            group.static_members.get(member.instance_id) == member.member_id
        ):
            del group.static_members[member.instance_id]

    def classic_join(
        self, group_id: str, member_id: str, instance_id: str | None,
        protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int,
        rebalance_timeout_ms: int, client_id: str, client_host: str, new_member_id: str,
        now_ms: int, require_known_member_id: bool = True,
    ) -> tuple[int, str, int, str | None]:
        """A classic JoinGroup into a consumer group: (error, member id, generation =
        member epoch, protocol name). The member reconciles at once: an eager member
        (subscription v0) gave everything up before joining; a cooperative one (v1+)
        still owns what its subscription lists."""
        from kafkette.broker.groups.consumer.embedded_protocol import decode_subscription

        group = self.groups[group_id]
        if not protocols:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id, -1, None
        try:
            names, owned_names = decode_subscription(protocols[0][1])
        except ValueError:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id, -1, None
        static_id = None if instance_id is None else group.static_members.get(instance_id)
        if static_id is not None and member_id and member_id != static_id:
            return ErrorCode.FENCED_INSTANCE_ID, member_id, -1, None  # throwIfInstanceIdIsFenced
        if not member_id:
            member_id = new_member_id
            if require_known_member_id and instance_id is None:
                # Nothing is kept: Kafka creates the member when it joins with any
                # member id it does not know (createIfNotExists), so no set of given
                # ids grows without bound.
                return ErrorCode.MEMBER_ID_REQUIRED, member_id, -1, None
            if static_id is not None:
                previous = group.members[static_id]
                if previous.classic is None and previous.member_epoch != LEAVE_STATIC_EPOCH:
                    return ErrorCode.UNRELEASED_INSTANCE_ID, member_id, -1, None
                # A restarted static member: it takes the old one's place and partitions.
                if previous.member_epoch == LEAVE_STATIC_EPOCH:
                    previous.member_epoch = previous.previous_epoch
                previous.classic = ClassicMeta(session_timeout_ms, tuple(protocols))
                self._replace_static(group, previous, member_id, client_id, client_host)
        member = group.members.get(member_id)
        changed = False
        if member is None:
            if len(group.members) >= self.config.group_consumer_max_size:
                return ErrorCode.GROUP_MAX_SIZE_REACHED, member_id, -1, None
            member = ConsumerMember(member_id, instance_id, None, client_id, client_host,
                                    rebalance_timeout_ms)
            group.members[member_id] = member
            if instance_id is not None:
                group.static_members[instance_id] = member_id
            changed = True
        elif member.classic is None:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id, -1, None
        if not self._shares_a_classic_protocol(group, member_id, protocols):
            # Kafka's supportsClassicProtocols: a later downgrade must find one protocol
            # every classic member speaks.
            if changed:
                self._remove_new_member(group, member)
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id, -1, None
        member.classic = ClassicMeta(session_timeout_ms, tuple(protocols))
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.join_deadline_ms = None  # it rejoined
        wanted = tuple(sorted(set(names)))
        changed |= wanted != member.subscribed_names
        member.subscribed_names = wanted
        changed |= self._refresh_topics(group, self.last_view, member, changed)
        if changed:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        # Kafka's maybeReconcile: an eager member (subscription v0) gave everything up
        # before joining (owns nothing); a cooperative one (v1+) owns what it lists. A
        # member still owning partitions it must revoke stays UNREVOKED; a stable member
        # keeps its assignment (the answer to SyncGroup).
        owned = {} if owned_names is None else self._names_to_ids(owned_names)
        self._reconcile(group, member, owned, now_ms)
        self._set_deadline(group, member, "session_deadline_ms", now_ms + session_timeout_ms)
        return ErrorCode.NONE, member_id, member.member_epoch, protocols[0][0]

    def _classic_member(self, group_id: str, member_id: str, generation: int):
        group = self.groups[group_id]
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            return group, None, ErrorCode.UNKNOWN_MEMBER_ID
        if generation != member.member_epoch:
            return group, member, ErrorCode.ILLEGAL_GENERATION
        return group, member, ErrorCode.NONE

    def classic_sync(
        self, group_id: str, member_id: str, generation: int
    ) -> tuple[int, str | None, bytes]:
        """SyncGroup: (error, protocol name, the member's partitions as a
        ConsumerProtocolAssignment)."""
        from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

        _group, member, error = self._classic_member(group_id, member_id, generation)
        if error or member is None or member.classic is None:
            return error, None, b""
        name = member.classic.protocols[0][0] if member.classic.protocols else None
        return ErrorCode.NONE, name, encode_assignment(self._ids_to_names(member.assigned))

    def classic_heartbeat(self, group_id: str, member_id: str, generation: int,
                          now_ms: int) -> int:
        """Heartbeat: REBALANCE_IN_PROGRESS once the member's target moved on (it rejoins
        to learn it and to give partitions up), else NONE."""
        group, member, error = self._classic_member(group_id, member_id, generation)
        if error or member is None or member.classic is None:
            return error
        self._set_deadline(group, member, "session_deadline_ms",
                           now_ms + member.classic.session_timeout_ms)
        if group.group_epoch > group.assignment_epoch:
            self._refresh_topics(group, self.last_view)
            self._compute_target(group)
        # Kafka's: rejoin to catch up with the epoch, to revoke, or to take partitions
        # that are free now; not while they are still held by another member.
        if (
            member.member_epoch != group.assignment_epoch or member.state == UNREVOKED
            or (member.state == UNRELEASED and not self._waiting_on_unreleased(group, member))
        ):
            if member.join_deadline_ms is None:
                self._set_deadline(group, member, "join_deadline_ms",
                                   now_ms + max(0, member.rebalance_timeout_ms))
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: a partition of the member's target that
        another member still owns."""
        for tid, parts in group.target.get(member.member_id, {}).items():
            mine = member.assigned.get(tid, frozenset())
            for p in parts - mine:
                if group.owners.get((tid, p)) not in (None, member.member_id):
                    return True
        return False

    def classic_leave(self, group_id: str, member_id: str, instance_id: str | None = None) -> int:
        """LeaveGroup for one member; v3+ may name a static member by its instance id
        alone (Kafka: FENCED_INSTANCE_ID when the member id names someone else)."""
        group = self.groups[group_id]
        if instance_id is not None:
            static_id = group.static_members.get(instance_id)
            if static_id is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and member_id != static_id:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = static_id
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.remove_member(group, member)
        return ErrorCode.NONE
