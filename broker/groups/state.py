"""The classic consumer-group coordinator as a pure state machine.

Follows Apache Kafka's classic GroupCoordinator: states Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead; JoinGroup/SyncGroup/Heartbeat/LeaveGroup;
session, rebalance and initial-delay timers; static membership.

Contract (see docs/groups.md):

* No I/O, no clock, no trio. Time always comes in as ``now_ms``; the broker calls
  ``tick(now_ms)`` whenever ``next_deadline_ms()`` has passed, and re-reads
  ``next_deadline_ms()`` after every call.
* JoinGroup and SyncGroup take an opaque ``ticket`` (any hashable but None) and are
  answered only through ``Reply(ticket, response)`` entries of some ``Outcome`` -
  possibly the one returned by the same call, possibly a later one (another
  member's request or ``tick``). Every ticket is answered exactly once.
* Other state-changing calls return ``Outcome(result, replies, records)``; pure
  queries return their answer directly.
* ``records`` must be appended to ``__consumer_offsets`` before ``replies``/``result``
  are sent to clients; records with a producer id (TxnOffsetCommit) as a
  transactional batch of that producer. A transaction marker is appended by the
  broker, then reported with ``complete_transaction`` (broker/groups/txn_offsets.py).
* Not thread-safe: drive one instance from one task.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Sequence

from kafkette.wire.errors import ErrorCode

from .config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from .model import (
    VALID_PREVIOUS_STATES,
    Group,
    GroupState,
    JoinMember,
    JoinResponse,
    LeaveMemberResult,
    LeaveResult,
    Member,
    Outcome,
    Reply,
    SyncResponse,
)
from .offsets_ops import OffsetsOps
from .subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from .txn_offsets import TxnOffsetsOps

Protocols = Sequence[tuple[str, bytes]]

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# What a known member's JoinGroup does in each state (Kafka doCurrentMemberJoinGroup).
# An int is the error answered at once.
_JOIN_KNOWN_MEMBER_BY_STATE: dict[GroupState, str | int] = {
    PREPARING: "rebalance",
    COMPLETING: "current_generation_if_unchanged",
    STABLE: "current_generation_if_unchanged_follower",
    EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
    DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

# What a valid SyncGroup does in each state (Kafka doSyncGroup).
_SYNC_BY_STATE: dict[GroupState, str | int] = {
    EMPTY: ErrorCode.UNKNOWN_MEMBER_ID,
    PREPARING: ErrorCode.REBALANCE_IN_PROGRESS,
    COMPLETING: "await_leader",
    STABLE: "current_assignment",
    DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

# A valid Heartbeat: (error, whether it resets the member's session timer).
_HEARTBEAT_BY_STATE: dict[GroupState, tuple[int, bool]] = {
    EMPTY: (ErrorCode.UNKNOWN_MEMBER_ID, False),
    PREPARING: (ErrorCode.REBALANCE_IN_PROGRESS, True),
    COMPLETING: (ErrorCode.NONE, True),
    STABLE: (ErrorCode.NONE, True),
    DEAD: (ErrorCode.COORDINATOR_NOT_AVAILABLE, False),
}


def random_member_id(client_id: str) -> str:
    """Kafka's member id shape: ``<client.id>-<uuid>``."""
    return f"{client_id}-{uuid.uuid4()}"


class GroupCoordinatorState(OffsetsOps, TxnOffsetsOps):
    """All groups of one coordinator, their members, timers and committed offsets."""

    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        new_member_id: Callable[[str], str] = random_member_id,
    ) -> None:
        self.config = config or GroupConfig()
        self._new_member_id = new_member_id
        self._groups: dict[str, Group] = {}
        self._replies: list[Reply] = []
        self._records = []
        self._position = 0
        self._txn_groups: dict[int, set[str]] = {}
        self._unconfirmed = None
        self._consumer_groups = None  # KIP-848 groups (broker/groups/consumer), on first use

    @property
    def consumer_groups(self):  # -> consumer.state.ConsumerGroups
        """The KIP-848 consumer-protocol groups beside the classic ones (built on first use)."""
        if self._consumer_groups is None:
            from .consumer.state import ConsumerGroups

            self._consumer_groups = ConsumerGroups(self.config)
        self._consumer_groups.config = self.config
        return self._consumer_groups

    def unload_partition(self, partition: int, error: int) -> list[Reply]:
        """Cluster mode: this broker no longer leads ``partition``; its KIP-848 groups go
        too (their members find the new coordinator and rejoin it)."""
        if self._consumer_groups is not None:
            for group_id in [g for g in self._consumer_groups.groups
                             if self.partition_for(g) == partition]:
                del self._consumer_groups.groups[group_id]
        return super().unload_partition(partition, error)

    def _expired_offsets(self, group: Group, now_ms: int, retention_ms: int):
        """A KIP-848 group with members keeps its offsets (its offsets-only classic
        entry is Empty, which the classic rules would expire)."""
        consumer = self._consumer_groups
        if consumer is not None:
            live = consumer.groups.get(group.group_id)
            if live is not None and live.members:
                return []
        return OffsetsOps._expired_offsets(group, now_ms, retention_ms)

    def expire_offsets(self, now_ms: int, retention_ms: int | None = None) -> Outcome[int]:
        """The classic cleanup, then: an empty consumer group with no offsets left goes,
        as Kafka's cleanup deletes it."""
        outcome = super().expire_offsets(now_ms, retention_ms)
        if self._consumer_groups is not None:
            for group_id, group in list(self._consumer_groups.groups.items()):
                if not group.members and group_id not in self._groups:
                    del self._consumer_groups.groups[group_id]
        return outcome

    def consumer_heartbeat(self, req, topics, now_ms: int):
        """One ConsumerGroupHeartbeat (a consumer.state.HeartbeatRequest), classic groups
        of the same id included: an empty one gives way, a non-empty one is upgraded
        online by a joining member (policy ``upgrade`` / ``bidirectional``)."""
        from .consumer.state import HeartbeatResult

        consumer = self.consumer_groups
        invalid = consumer.validate(req)
        if invalid is not None:
            return invalid
        group_id = req.group_id
        if not consumer.is_consumer_group(group_id):
            classic = self.classic_group_members(group_id)
            policy = self.config.group_consumer_migration_policy
            upgrade = policy in ("upgrade", "bidirectional")
            not_found = HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
            if classic and req.member_epoch != 0:
                # A member of a consumer group that did not survive a restart, whose id
                # classic members now hold: it rejoins (epoch 0), which may upgrade the
                # group; GROUP_ID_NOT_FOUND would be fatal to it.
                return HeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {group_id}.",
                )
            if classic is not None and not upgrade:
                return not_found
            if classic:
                result = self.upgrade_to_consumer(
                    group_id, topics, now_ms, lambda: consumer.heartbeat(req, topics, now_ms)
                )
                return not_found if result is None else result
        result = consumer.heartbeat(req, topics, now_ms)
        if req.member_epoch == -1 and result.error == ErrorCode.NONE:
            self.maybe_downgrade(group_id, now_ms)  # the last consumer-protocol member left?
        return result

    def upgrade_to_consumer(self, group_id: str, topics, now_ms: int, join):
        """KIP-848's online upgrade of a non-empty classic group, whatever its state
        (Kafka's validateOnlineUpgrade: protocol type ``consumer``, at most
        ``group.consumer.max.size`` members; the caller checked the policy). Its members
        move into a consumer group as classic members with their last assignment
        (possibly empty); ``join()`` (the triggering heartbeat) then runs on it. None when
        the group cannot be upgraded; else ``join()``'s result. If that result is an
        error, the conversion is undone (Kafka writes both or neither); else pending
        JoinGroup/SyncGroup calls are answered REBALANCE_IN_PROGRESS and the classic
        group keeps its offsets and an empty membership, persisted (a restart does not
        bring the members back)."""
        group = self._groups.get(group_id)
        if (
            group is None or not group.members or group.state is DEAD
            or group.protocol_type != CONSUMER_PROTOCOL_TYPE
            or len(group.members) > self.config.group_consumer_max_size
        ):
            return None
        members = []
        for m in group.members.values():
            chosen = [(n, meta) for n, meta in m.protocols if n == group.protocol_name]
            members.append({
                "member_id": m.member_id, "instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "session_timeout_ms": m.session_timeout_ms,
                "protocols": chosen or list(m.protocols), "assignment": m.assignment,
            })
        consumer = self.consumer_groups
        try:
            consumer.upgrade_classic(group_id, group.generation_id, members, topics, now_ms)
        except ValueError:  # a member's metadata is not the consumer protocol's
            consumer.groups.pop(group_id, None)
            return None
        try:
            result = join()
        except BaseException:
            consumer.groups.pop(group_id, None)  # undone: the classic group is untouched
            raise
        if result.error != ErrorCode.NONE:
            consumer.groups.pop(group_id, None)  # undone: the classic group is untouched
            return result
        for m in group.members.values():
            if m.join_ticket is not None:
                self._join_error(m.join_ticket, m.member_id, ErrorCode.REBALANCE_IN_PROGRESS)
            if m.sync_ticket is not None:
                self._reply(m.sync_ticket, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        group.members.clear()
        group.static_members.clear()
        group.pending_members.clear()
        group.pending_sync.clear()
        group.join_deadline_ms = None
        group.sync_deadline_ms = None
        group.initial_delay_active = False
        group.leader_id = None
        group.generation_id += 1
        group.state = EMPTY
        group.state_timestamp_ms = now_ms
        self._records.append(self._group_metadata_record(group))
        return result

    def maybe_downgrade(self, group_id: str, now_ms: int) -> bool:
        """KIP-848's downgrade: once the last consumer-protocol member of a consumer group
        with classic members is gone (policy ``downgrade`` / ``bidirectional``), the
        classic members become a classic group again, which rebalances (they rejoin)."""
        consumer = self._consumer_groups
        cg = None if consumer is None else consumer.groups.get(group_id)
        if (
            cg is None or not cg.members
            or any(m.classic is None for m in cg.members.values())
            or self.config.group_consumer_migration_policy not in ("downgrade", "bidirectional")
            or len(cg.members) > self.config.group_max_size  # Kafka's validateOnlineDowngrade
        ):
            return False
        common = set.intersection(
            *({name for name, _ in m.classic.protocols} for m in cg.members.values() if m.classic)
        )
        if not common:  # no protocol every member speaks: the group stays a consumer group
            return False
        from .consumer.embedded_protocol import encode_assignment

        group = self._groups.get(group_id)
        if group is None:
            group = Group(group_id, EMPTY, now_ms)
            self._groups[group_id] = group
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        # Kafka's: the consumer group's epoch (never below a generation the classic
        # group already used); a member that knows another generation rejoins.
        group.generation_id = max(cg.group_epoch, group.generation_id)
        for m in cg.members.values():
            assert m.classic is not None
            member = Member(
                m.member_id, m.instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                list(m.classic.protocols),
                assignment=encode_assignment(consumer._ids_to_names(m.assigned)),
            )
            group.members[m.member_id] = member
            if m.instance_id is not None:
                group.static_members[m.instance_id] = m.member_id
            self._schedule_heartbeat(member, now_ms)
        group.leader_id = next(iter(group.members))
        group.protocol_name = self._select_protocol(group)
        group.subscribed_topics = self._compute_subscribed_topics(group)
        group.state = STABLE
        group.state_timestamp_ms = now_ms
        del consumer.groups[group_id]
        self._records.append(self._group_metadata_record(group))
        self._prepare_rebalance(group, now_ms)
        return True

    def outcome(self, result):
        """Wrap ``result`` with the records and replies this call produced."""
        return self._done(result)

    def classic_group_members(self, group_id: str) -> int | None:
        """None if no classic group has that id, else its member count (for KIP-848)."""
        group = self._groups.get(group_id)
        return None if group is None else len(group.members) + len(group.pending_members)

    # --- plumbing ----------------------------------------------------------------

    def _done(self, result):
        out = Outcome(result, self._replies, self._records)
        self._replies, self._records = [], []
        return out

    def _reply(self, ticket: Hashable, response: JoinResponse | SyncResponse) -> None:
        self._replies.append(Reply(ticket, response))

    def _join_error(self, ticket: Hashable, member_id: str, error: int) -> None:
        self._reply(ticket, JoinResponse(error=error, member_id=member_id))

    def _transition(self, group: Group, state: GroupState, now_ms: int) -> None:
        if group.state not in VALID_PREVIOUS_STATES[state]:
            raise AssertionError(f"group {group.group_id}: illegal {group.state} -> {state}")
        group.state = state
        group.state_timestamp_ms = now_ms

    def _set_join_ticket(self, member: Member, ticket: Hashable | None) -> None:
        """Kafka overwrites a superseded join callback; we answer it so no ticket leaks."""
        if member.join_ticket is not None and ticket is not None:
            self._join_error(member.join_ticket, member.member_id, ErrorCode.REBALANCE_IN_PROGRESS)
        member.join_ticket = ticket

    def _set_sync_ticket(self, member: Member, ticket: Hashable) -> None:
        if member.sync_ticket is not None:
            self._reply(member.sync_ticket, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_ticket = ticket

    def _schedule_heartbeat(self, member: Member, now_ms: int, timeout_ms: int | None = None):
        member.heartbeat_deadline_ms = now_ms + (
            member.session_timeout_ms if timeout_ms is None else timeout_ms
        )

    # --- JoinGroup -----------------------------------------------------------------

    def join_group(
        self,
        ticket: Hashable,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: Protocols,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        now_ms: int,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = False,
        topics=None,
    ) -> Outcome[None]:
        """JoinGroup. ``require_known_member_id`` is True from v4 (MEMBER_ID_REQUIRED
        first); ``supports_skip_assignment`` is True from v9; for v0 pass the session
        timeout as ``rebalance_timeout_ms``. Answered via ``Reply(ticket, JoinResponse)``."""
        protocols = [(name, bytes(meta)) for name, meta in protocols]
        if not group_id:
            self._join_error(ticket, member_id, ErrorCode.INVALID_GROUP_ID)
            return self._done(None)
        consumer = self._consumer_groups
        refused = consumer is not None and consumer.classic_join_refused(group_id)
        if refused and protocol_type != CONSUMER_PROTOCOL_TYPE:
            # a non-empty KIP-848 group holds the id
            self._join_error(ticket, member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return self._done(None)
        cfg = self.config
        if not (
            cfg.group_min_session_timeout_ms
            <= session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            self._join_error(ticket, member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
            return self._done(None)
        if refused and consumer is not None:
            # A classic member inside a consumer group (KIP-848's online upgrade).
            if topics is not None:
                consumer.last_view = topics
            error, mid, generation, name = consumer.classic_join(
                group_id, member_id, group_instance_id, protocols, session_timeout_ms,
                rebalance_timeout_ms, client_id, client_host, self._new_member_id(client_id),
                now_ms, require_known_member_id,
            )
            ok = error == ErrorCode.NONE
            self._reply(ticket, JoinResponse(
                error, generation, protocol_type if ok else None, name, "", mid,
            ))
            return self._done(None)
        is_unknown = member_id == ""
        group = self._groups.get(group_id)
        created = False
        if group is None:
            if not is_unknown:
                self._join_error(ticket, member_id, ErrorCode.UNKNOWN_MEMBER_ID)
                return self._done(None)
            group = Group(group_id, EMPTY, now_ms)
            self._groups[group_id] = group
            created = True
        if self._consumer_groups is not None:  # validated: an empty one gives way now
            self._consumer_groups.drop_empty_for_classic(group_id)
        args = dict(
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocols=protocols,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=client_id,
            client_host=client_host,
            now_ms=now_ms,
        )
        if not self._accept_joining_member(group, member_id):
            self._drop_member(group, member_id)
            self._join_error(ticket, "", ErrorCode.GROUP_MAX_SIZE_REACHED)
        elif is_unknown:
            self._join_new_member(
                group, ticket, require_known_member_id, supports_skip_assignment, **args
            )
        else:
            self._join_known_member(group, ticket, member_id, **args)
        if group.state is PREPARING:
            self._maybe_complete_join(group, now_ms)
        if created and self._is_unused(group):
            # A join that failed validation must not leave a phantom group behind.
            del self._groups[group_id]
        return self._done(None)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state is PREPARING:
            return (member is not None and member.awaiting_join) or (
                group.num_awaiting_join() < max_size
            )
        return member is not None or len(group.members) < max_size

    def _join_new_member(
        self,
        group: Group,
        ticket: Hashable,
        require_known_member_id: bool,
        supports_skip_assignment: bool,
        *,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> None:
        if group.state is DEAD:
            self._join_error(ticket, "", ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(protocol_type, protocols):
            self._join_error(ticket, "", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return
        new_id = self._new_member_id(client_id)
        if group_instance_id is not None and group_instance_id in group.static_members:
            self._replace_static_member(
                group,
                ticket,
                group.static_members[group_instance_id],
                new_id,
                group_instance_id,
                protocols,
                rebalance_timeout_ms,
                session_timeout_ms,
                supports_skip_assignment,
                now_ms,
            )
        elif group_instance_id is None and require_known_member_id:
            # KIP-394: hand out the id first; the client rejoins with it. The pending
            # member holds up the rebalance until it joins or its session expires.
            group.pending_members[new_id] = now_ms + session_timeout_ms
            self._join_error(ticket, new_id, ErrorCode.MEMBER_ID_REQUIRED)
        else:
            member = Member(
                new_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            self._add_member_and_rebalance(group, member, ticket, now_ms)

    def _join_known_member(
        self,
        group: Group,
        ticket: Hashable,
        member_id: str,
        *,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> None:
        if group.state is DEAD:
            self._join_error(ticket, member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(protocol_type, protocols):
            self._join_error(ticket, member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return
        if member_id in group.pending_members:
            # A pending member is never static (static members skip MEMBER_ID_REQUIRED).
            member = Member(
                member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            self._add_member_and_rebalance(group, member, ticket, now_ms)
            return
        if group.is_static_member_fenced(group_instance_id, member_id):
            self._join_error(ticket, member_id, ErrorCode.FENCED_INSTANCE_ID)
            return
        instance_unknown = (
            group_instance_id is not None and group_instance_id not in group.static_members
        )
        member = group.members.get(member_id)
        if member is None or instance_unknown:
            self._join_error(ticket, member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            return
        action = _JOIN_KNOWN_MEMBER_BY_STATE[group.state]
        if isinstance(action, int):
            self._join_error(ticket, member_id, action)
            return
        unchanged = member.matches(protocols)
        if action == "current_generation_if_unchanged_follower":
            # A leader's JoinGroup in Stable always rebalances: it is how the leader
            # asks for a new assignment (e.g. after topic metadata changed).
            unchanged = unchanged and group.leader_id != member_id
        if action != "rebalance" and unchanged:
            self._reply(ticket, self._join_response(group, member_id))
            return
        self._set_join_ticket(member, ticket)
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self._maybe_prepare_rebalance(group, now_ms)

    def _join_response(self, group: Group, member_id: str) -> JoinResponse:
        """The current generation as seen by ``member_id`` (members only for the leader)."""
        is_leader = group.leader_id == member_id
        return JoinResponse(
            error=ErrorCode.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member_id,
            members=self._current_member_metadata(group) if is_leader else (),
        )

    @staticmethod
    def _current_member_metadata(group: Group) -> tuple[JoinMember, ...]:
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
            for m in group.members.values()
        )

    def _replace_static_member(
        self,
        group: Group,
        ticket: Hashable,
        old_id: str,
        new_id: str,
        group_instance_id: str,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        supports_skip_assignment: bool,
        now_ms: int,
    ) -> None:
        """A restarted static member takes over its old id's place (KIP-345).

        In Stable with an unchanged protocol choice this is answered at once with the
        current generation and no rebalance; the old id is fenced from now on."""
        current_leader = group.leader_id or ""
        member = group.members[old_id]
        if member.join_ticket is not None:
            self._join_error(member.join_ticket, old_id, ErrorCode.FENCED_INSTANCE_ID)
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._reply(member.sync_ticket, SyncResponse(ErrorCode.FENCED_INSTANCE_ID))
            member.sync_ticket = None
        member.member_id = new_id
        group.members = {(new_id if k == old_id else k): v for k, v in group.members.items()}
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        if group.leader_id == old_id:
            group.leader_id = new_id
        group.static_members[group_instance_id] = new_id
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self._schedule_heartbeat(member, now_ms)
        member.join_ticket = ticket
        if group.state is STABLE:
            if group.protocol_name == self._select_protocol(group):
                member.join_ticket = None
                self._records.append(self._group_metadata_record(group))
                is_leader = group.leader_id == new_id
                skip = is_leader and supports_skip_assignment
                self._reply(
                    ticket,
                    JoinResponse(
                        error=ErrorCode.NONE,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        # Without skip_assignment an old leader id is returned so the
                        # rejoined leader does not compute an assignment nobody gets.
                        leader=new_id if skip else current_leader,
                        member_id=new_id,
                        members=self._current_member_metadata(group) if skip else (),
                        skip_assignment=skip,
                    ),
                )
            else:
                self._prepare_rebalance(group, now_ms)
        elif group.state is COMPLETING:
            # The leader may already be assigning to the old id: start over.
            self._prepare_rebalance(group, now_ms)
        # PreparingRebalance: answered when the rebalance completes.

    def _add_member_and_rebalance(
        self, group: Group, member: Member, ticket: Hashable, now_ms: int
    ) -> None:
        member.is_new = True
        member.join_ticket = ticket
        if group.state is PREPARING and group.generation_id == 0:
            group.new_member_added = True
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if not group.members:
            group.protocol_type = member.protocol_type
        if group.leader_id is None:
            group.leader_id = member.member_id
        group.members[member.member_id] = member
        group.pending_members.pop(member.member_id, None)
        # A new member cannot heartbeat before its first generation; Kafka bounds
        # its wait instead so abandoned JoinGroups do not pile up.
        self._schedule_heartbeat(member, now_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, now_ms)

    # --- rebalance ---------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.state in (STABLE, COMPLETING, EMPTY):
            self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.state is COMPLETING:
            self._reset_and_propagate_assignment_error(
                group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms
            )
        group.sync_deadline_ms = None
        rebalance_timeout = group.rebalance_timeout_ms()
        if group.state is EMPTY:
            delay = self.config.group_initial_rebalance_delay_ms
            group.initial_delay_active = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(rebalance_timeout - delay, 0)
            group.join_deadline_ms = now_ms + delay
        else:
            group.initial_delay_active = False
            group.join_deadline_ms = now_ms + rebalance_timeout
        self._transition(group, PREPARING, now_ms)
        self._maybe_complete_join(group, now_ms)

    def _maybe_complete_join(self, group: Group, now_ms: int) -> None:
        """Kafka's DelayedJoin.tryComplete; the initial delay never ends early."""
        if (
            group.state is PREPARING
            and not group.initial_delay_active
            and group.all_members_joined()
        ):
            self._complete_join(group, now_ms)

    def _on_join_deadline(self, group: Group, now_ms: int) -> None:
        if group.initial_delay_active and group.new_member_added and group.initial_remaining_ms:
            # InitialDelayedJoin: members keep arriving, wait another delay while
            # the rebalance timeout allows.
            group.new_member_added = False
            delay = min(self.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            group.join_deadline_ms = now_ms + delay
            return
        self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, form the
        next generation and answer every waiting JoinGroup."""
        group.join_deadline_ms = None
        group.initial_delay_active = False
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                self._remove_member(group, member.member_id)
        if not self._maybe_elect_new_joined_leader(group) and group.members:
            # Only static members that have not rejoined are left: wait again.
            group.join_deadline_ms = now_ms + max(group.rebalance_timeout_ms(), 1)
            return
        self._init_next_generation(group, now_ms)
        if group.state is EMPTY:
            self._records.append(self._group_metadata_record(group))
            return
        for member in group.members.values():
            if member.join_ticket is not None:
                self._reply(member.join_ticket, self._join_response(group, member.member_id))
                member.join_ticket = None
            self._schedule_heartbeat(member, now_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()

    @staticmethod
    def _maybe_elect_new_joined_leader(group: Group) -> bool:
        if group.leader_id is None:
            return False
        if group.members[group.leader_id].awaiting_join:
            return True
        for member in group.members.values():
            if member.awaiting_join:
                group.leader_id = member.member_id
                return True
        return False

    def _init_next_generation(self, group: Group, now_ms: int) -> None:
        group.generation_id += 1
        if group.members:
            group.protocol_name = self._select_protocol(group)
            group.subscribed_topics = self._compute_subscribed_topics(group)
            self._transition(group, COMPLETING, now_ms)
        else:
            group.protocol_name = None
            group.subscribed_topics = self._compute_subscribed_topics(group)
            self._transition(group, EMPTY, now_ms)
        group.pending_sync.clear()

    @staticmethod
    def _select_protocol(group: Group) -> str:
        """Kafka's vote: among protocols every member supports, each member votes for
        its most preferred; most votes wins. Kafka breaks ties arbitrarily (hash
        order); we pick the candidate voted first in member join order."""
        candidates = group.candidate_protocols()
        votes: dict[str, int] = {}
        for member in group.members.values():
            choice = next(name for name, _ in member.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    @staticmethod
    def _compute_subscribed_topics(group: Group) -> frozenset[str] | None:
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not group.members:
            return frozenset()
        if group.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in group.members.values():
                topics |= subscribed_topics(member.metadata_for(group.protocol_name))
        except ValueError:
            return None
        return frozenset(topics)

    # --- membership removal ------------------------------------------------------

    def _remove_member(self, group: Group, member_id: str) -> None:
        """Kafka's GroupMetadata.remove: no callbacks, no rebalance."""
        member = group.members.pop(member_id, None)
        if member is not None:
            iid = member.group_instance_id
            if iid is not None and group.static_members.get(iid) == member_id:
                del group.static_members[iid]
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)
        group.pending_members.pop(member_id, None)
        group.pending_sync.discard(member_id)

    def _drop_member(self, group: Group, member_id: str) -> None:
        """Remove without rebalance, answering anything it still waits on."""
        member = group.members.get(member_id)
        if member is not None:
            self._answer_removed(member)
        self._remove_member(group, member_id)

    def _answer_removed(self, member: Member) -> None:
        if member.join_ticket is not None:
            self._join_error(member.join_ticket, "", ErrorCode.UNKNOWN_MEMBER_ID)
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._reply(member.sync_ticket, SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_ticket = None

    def _remove_member_and_update_group(self, group: Group, member: Member, now_ms: int) -> None:
        self._answer_removed(member)
        self._remove_member(group, member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, now_ms)
        elif group.state is PREPARING:
            self._maybe_complete_join(group, now_ms)

    def _remove_pending_member_and_update_group(
        self, group: Group, member_id: str, now_ms: int
    ) -> None:
        group.pending_members.pop(member_id, None)
        if group.state is PREPARING:
            self._maybe_complete_join(group, now_ms)

    # --- SyncGroup -----------------------------------------------------------------

    def sync_group(
        self,
        ticket: Hashable,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes] | Iterable[tuple[str, bytes]],
        now_ms: int,
        topics=None,
    ) -> Outcome[None]:
        """SyncGroup; ``protocol_type``/``protocol_name`` are None before v5.
        Answered via ``Reply(ticket, SyncResponse)``, possibly later."""

        def fail(error: int) -> Outcome[None]:
            self._reply(ticket, SyncResponse(error))
            return self._done(None)

        if not group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            if topics is not None:
                consumer.last_view = topics
            error, name, assignment = consumer.classic_sync(group_id, member_id, generation_id)
            ok = error == ErrorCode.NONE
            self._reply(ticket, SyncResponse(
                error, CONSUMER_PROTOCOL_TYPE if ok else None, name if ok else None, assignment,
            ))
            return self._done(None)
        group = self._groups.get(group_id)
        if group is None:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(group_instance_id, member_id):
            return fail(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return fail(ErrorCode.ILLEGAL_GENERATION)
        if protocol_type is not None and protocol_type != group.protocol_type:
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if protocol_name is not None and protocol_name != group.protocol_name:
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        action = _SYNC_BY_STATE[group.state]
        if isinstance(action, int):
            return fail(action)
        self._sync_done(group, member_id)
        if action == "current_assignment":
            self._reply(
                ticket, SyncResponse(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                                     member.assignment)
            )
            self._schedule_heartbeat(member, now_ms)
            return self._done(None)
        # await_leader
        self._set_sync_ticket(member, ticket)
        if group.leader_id == member_id:
            given = dict(assignments)
            for m in group.members.values():
                m.assignment = bytes(given.get(m.member_id, b""))
            self._records.append(self._group_metadata_record(group))
            self._propagate_assignment(group, ErrorCode.NONE, now_ms, first=member_id)
            self._transition(group, STABLE, now_ms)
        return self._done(None)

    @staticmethod
    def _sync_done(group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline_ms = None

    def _propagate_assignment(
        self, group: Group, error: int, now_ms: int, first: str | None = None
    ) -> None:
        """Answer every waiting SyncGroup of ``group``; member ``first`` (the leader
        whose SyncGroup completed the sync) first, the others in member order. The
        broker writes the replies in this order, in one pass: a follower that acts on
        its assignment at once should not run ahead of the leader (docs/groups.md)."""
        ok = error == ErrorCode.NONE
        members = list(group.members.values())
        if first is not None:
            members.sort(key=lambda m: m.member_id != first)  # stable: the rest keep order
        for member in members:
            if member.sync_ticket is None:
                continue
            self._reply(
                member.sync_ticket,
                SyncResponse(
                    error,
                    group.protocol_type if ok else None,
                    group.protocol_name if ok else None,
                    member.assignment,
                ),
            )
            member.sync_ticket = None
            self._schedule_heartbeat(member, now_ms)

    def _reset_and_propagate_assignment_error(self, group: Group, error: int, now_ms: int):
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now_ms)

    def _on_sync_deadline(self, group: Group, now_ms: int) -> None:
        """Members that got their JoinGroup answer but never sent SyncGroup in time
        are removed, and the group rebalances without them."""
        group.sync_deadline_ms = None
        if group.state in (COMPLETING, STABLE) and group.pending_sync:
            for member_id in list(group.pending_sync):
                self._drop_member(group, member_id)
            self._prepare_rebalance(group, now_ms)

    # --- Heartbeat / LeaveGroup ----------------------------------------------------

    def heartbeat(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
        topics=None,
    ) -> Outcome[int]:
        """Heartbeat; ``result`` is the error code to answer. ``topics``: the broker's
        topic view now (a consumer group's classic members resolve against it)."""
        if not group_id:
            return self._done(ErrorCode.INVALID_GROUP_ID)
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            if topics is not None:
                consumer.last_view = topics
            return self._done(
                consumer.classic_heartbeat(group_id, member_id, generation_id, now_ms)
            )
        group = self._groups.get(group_id)
        if group is None:
            return self._done(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is DEAD:
            return self._done(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(group_instance_id, member_id):
            return self._done(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None:
            return self._done(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return self._done(ErrorCode.ILLEGAL_GENERATION)
        error, resets_timer = _HEARTBEAT_BY_STATE[group.state]
        if resets_timer:
            self._schedule_heartbeat(member, now_ms)
        return self._done(error)

    def leave_group(
        self,
        *,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        now_ms: int,
    ) -> Outcome[LeaveResult]:
        """LeaveGroup for ``[(member_id, group_instance_id)]``. An empty member id with
        an instance id removes that static member (admin removal, KIP-345)."""
        if not group_id:
            return self._done(LeaveResult(ErrorCode.INVALID_GROUP_ID))
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            results = tuple(
                LeaveMemberResult(mid, iid, consumer.classic_leave(group_id, mid, iid))
                for mid, iid in members
            )
            if any(r.error == ErrorCode.NONE for r in results):
                self.maybe_downgrade(group_id, now_ms)  # only classic members left?
            return self._done(LeaveResult(ErrorCode.NONE, results))
        group = self._groups.get(group_id)
        if group is None:
            return self._done(
                LeaveResult(
                    ErrorCode.NONE,
                    tuple(
                        LeaveMemberResult(mid, iid, ErrorCode.UNKNOWN_MEMBER_ID)
                        for mid, iid in members
                    ),
                )
            )
        if group.state is DEAD:
            return self._done(LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        results = []
        for member_id, instance_id in members:
            results.append(
                LeaveMemberResult(
                    member_id, instance_id, self._leave_one(group, member_id, instance_id, now_ms)
                )
            )
        return self._done(LeaveResult(ErrorCode.NONE, tuple(results)))

    def _leave_one(
        self, group: Group, member_id: str, instance_id: str | None, now_ms: int
    ) -> int:
        if member_id == "":
            current = group.static_members.get(instance_id) if instance_id else None
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member_and_update_group(group, group.members[current], now_ms)
            return ErrorCode.NONE
        if member_id in group.pending_members:
            self._remove_pending_member_and_update_group(group, member_id, now_ms)
            return ErrorCode.NONE
        if group.is_static_member_fenced(instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove_member_and_update_group(group, member, now_ms)
        return ErrorCode.NONE

    # --- timers ----------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """Earliest time ``tick`` has work to do, or None when no timer is armed."""
        best: int | None = None
        for group in self._groups.values():
            for deadline in self._group_deadlines(group):
                if best is None or deadline < best:
                    best = deadline
        if self._consumer_groups is not None:
            consumer = self._consumer_groups.next_deadline_ms()
            if consumer is not None and (best is None or consumer < best):
                best = consumer
        return best

    @staticmethod
    def _group_deadlines(group: Group) -> Iterable[int]:
        if group.join_deadline_ms is not None and group.state is PREPARING:
            yield group.join_deadline_ms
        if group.sync_deadline_ms is not None:
            yield group.sync_deadline_ms
        yield from group.pending_members.values()
        for member in group.members.values():
            if member.heartbeat_deadline_ms is not None:
                yield member.heartbeat_deadline_ms

    def tick(self, now_ms: int) -> Outcome[None]:
        """Fire every timer due at ``now_ms``, per group in deadline order."""
        if self._consumer_groups is not None:
            for group_id in {g for g, _m in self._consumer_groups.tick(now_ms)}:
                self.maybe_downgrade(group_id, now_ms)
        for group_id in list(self._groups):
            while True:
                group = self._groups.get(group_id)
                if group is None:
                    break
                event = self._earliest_due(group, now_ms)
                if event is None:
                    break
                _deadline, kind, member_id = event
                if kind == "heartbeat":
                    self._on_heartbeat_deadline(group, member_id, now_ms)
                elif kind == "pending":
                    self._remove_pending_member_and_update_group(group, member_id, now_ms)
                elif kind == "join":
                    self._on_join_deadline(group, now_ms)
                else:
                    self._on_sync_deadline(group, now_ms)
        return self._done(None)

    @staticmethod
    def _earliest_due(group: Group, now_ms: int) -> tuple[int, str, str] | None:
        due: list[tuple[int, str, str]] = []
        for member_id, deadline in group.pending_members.items():
            due.append((deadline, "pending", member_id))
        for member in group.members.values():
            if member.heartbeat_deadline_ms is not None:
                due.append((member.heartbeat_deadline_ms, "heartbeat", member.member_id))
        if group.join_deadline_ms is not None and group.state is PREPARING:
            due.append((group.join_deadline_ms, "join", ""))
        if group.sync_deadline_ms is not None:
            due.append((group.sync_deadline_ms, "sync", ""))
        due = [event for event in due if event[0] <= now_ms]
        return min(due) if due else None

    def _on_heartbeat_deadline(self, group: Group, member_id: str, now_ms: int) -> None:
        """Kafka's onExpireHeartbeat: a member waiting on a rebalance is excused (its
        timer is re-armed when the rebalance answers it); others are removed."""
        member = group.members[member_id]
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            member.heartbeat_deadline_ms = None
            return
        member.heartbeat_deadline_ms = None
        self._remove_member_and_update_group(group, member, now_ms)

    # --- introspection for tests and admin ----------------------------------------

    def group_state(self, group_id: str) -> GroupState:
        group = self._groups.get(group_id)
        return DEAD if group is None else group.state

    def generation(self, group_id: str) -> int:
        group = self._groups.get(group_id)
        return -1 if group is None else group.generation_id

    def member_ids(self, group_id: str) -> list[str]:
        group = self._groups.get(group_id)
        return [] if group is None else list(group.members)
