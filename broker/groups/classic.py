"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Follows Apache Kafka's classic group coordinator (``ClassicGroup``): states Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead; session, rebalance and
initial-delay timers; static membership (KIP-345). The coordinator state
(``state.py``) routes a call here once it knows the id is not a consumer group's;
the contract (tickets, ``Outcome``, records before replies) is described there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence

from kafkette.wire.errors import ErrorCode

from .config import NEW_MEMBER_JOIN_TIMEOUT_MS
from .context import GroupsContext
from .model import (
    Group,
    GroupDescription,
    GroupListing,
    GroupState,
    JoinMember,
    JoinResponse,
    LeaveMemberResult,
    LeaveResult,
    Member,
    MemberDescription,
    Outcome,
    SyncResponse,
)
from .records import group_metadata_record
from .subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics

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


class ClassicGroups:
    """The classic groups' membership, rebalances and timers."""

    def __init__(self, ctx: GroupsContext, new_member_id: Callable[[str], str]) -> None:
        self._ctx = ctx
        self._new_member_id = new_member_id

    @property
    def groups(self) -> dict[str, Group]:
        """Every classic group by id, offsets-only ones included."""
        return self._ctx.groups

    def write_metadata(self, group: Group) -> None:
        """The call writes ``group``'s metadata record (a generation formed or ended)."""
        partition = self._ctx.partition_for(group.group_id)
        self._ctx.records.append(group_metadata_record(partition, group))

    # --- JoinGroup ---------------------------------------------------------------------------

    def join_group(
        self,
        ticket: Hashable,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        now_ms: int,
        client_id: str = "",
        client_host: str = "",
        require_known_member_id: bool = True,
        supports_skip_assignment: bool = False,
    ) -> Outcome[None]:
        """JoinGroup of a classic group, validated by the coordinator state (group id,
        session timeout, no consumer group holds the id); ``protocols`` as bytes."""
        is_unknown = member_id == ""
        group = self._ctx.groups.get(group_id)
        created = False
        if group is None:
            if not is_unknown:
                self._ctx.join_error(ticket, member_id, ErrorCode.UNKNOWN_MEMBER_ID)
                return self._ctx.done(None)
            group = Group(group_id, EMPTY, now_ms)
            self._ctx.groups[group_id] = group
            created = True
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
            self._ctx.join_error(ticket, "", ErrorCode.GROUP_MAX_SIZE_REACHED)
        elif is_unknown:
            self._join_new_member(
                group, ticket, require_known_member_id, supports_skip_assignment, **args
            )
        else:
            self._join_known_member(group, ticket, member_id, **args)
        if group.state is PREPARING:
            self._maybe_complete_join(group, now_ms)
        if created and group.is_unused():
            # A join that failed validation must not leave a phantom group behind.
            del self._ctx.groups[group_id]
        return self._ctx.done(None)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        max_size = self._ctx.config.group_max_size
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
            self._ctx.join_error(ticket, "", ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(protocol_type, protocols):
            self._ctx.join_error(ticket, "", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
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
            self._ctx.join_error(ticket, new_id, ErrorCode.MEMBER_ID_REQUIRED)
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
            self._ctx.join_error(ticket, member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if not group.supports_protocols(protocol_type, protocols):
            self._ctx.join_error(ticket, member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
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
            self._ctx.join_error(ticket, member_id, ErrorCode.FENCED_INSTANCE_ID)
            return
        instance_unknown = (
            group_instance_id is not None and group_instance_id not in group.static_members
        )
        member = group.members.get(member_id)
        if member is None or instance_unknown:
            self._ctx.join_error(ticket, member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            return
        action = _JOIN_KNOWN_MEMBER_BY_STATE[group.state]
        if isinstance(action, int):
            self._ctx.join_error(ticket, member_id, action)
            return
        unchanged = member.matches(protocols)
        if action == "current_generation_if_unchanged_follower":
            # A leader's JoinGroup in Stable always rebalances: it is how the leader
            # asks for a new assignment (e.g. after topic metadata changed).
            unchanged = unchanged and group.leader_id != member_id
        if action != "rebalance" and unchanged:
            self._ctx.reply(ticket, self._join_response(group, member_id))
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
            self._ctx.join_error(member.join_ticket, old_id, ErrorCode.FENCED_INSTANCE_ID)
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._ctx.reply(member.sync_ticket, SyncResponse(ErrorCode.FENCED_INSTANCE_ID))
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
        member.schedule_heartbeat(now_ms)
        member.join_ticket = ticket
        if group.state is STABLE:
            if group.protocol_name == self.select_protocol(group):
                member.join_ticket = None
                self.write_metadata(group)
                is_leader = group.leader_id == new_id
                skip = is_leader and supports_skip_assignment
                self._ctx.reply(
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
                self.prepare_rebalance(group, now_ms)
        elif group.state is COMPLETING:
            # The leader may already be assigning to the old id: start over.
            self.prepare_rebalance(group, now_ms)
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
        member.schedule_heartbeat(now_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, now_ms)

    def _set_join_ticket(self, member: Member, ticket: Hashable | None) -> None:
        """Kafka overwrites a superseded join callback; we answer it so no ticket leaks."""
        if member.join_ticket is not None and ticket is not None:
            self._ctx.join_error(
                member.join_ticket, member.member_id, ErrorCode.REBALANCE_IN_PROGRESS
            )
        member.join_ticket = ticket

    # --- rebalance ---------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.state in (STABLE, COMPLETING, EMPTY):
            self.prepare_rebalance(group, now_ms)

    def prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.state is COMPLETING:
            self._reset_and_propagate_assignment_error(
                group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms
            )
        group.sync_deadline_ms = None
        rebalance_timeout = group.rebalance_timeout_ms()
        if group.state is EMPTY:
            delay = self._ctx.config.group_initial_rebalance_delay_ms
            group.initial_delay_active = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(rebalance_timeout - delay, 0)
            group.join_deadline_ms = now_ms + delay
        else:
            group.initial_delay_active = False
            group.join_deadline_ms = now_ms + rebalance_timeout
        group.transition(PREPARING, now_ms)
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
            delay = min(
                self._ctx.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms
            )
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
            self.write_metadata(group)
            return
        for member in group.members.values():
            if member.join_ticket is not None:
                self._ctx.reply(member.join_ticket, self._join_response(group, member.member_id))
                member.join_ticket = None
            member.schedule_heartbeat(now_ms)
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
            group.protocol_name = self.select_protocol(group)
            group.subscribed_topics = self.compute_subscribed_topics(group)
            group.transition(COMPLETING, now_ms)
        else:
            group.protocol_name = None
            group.subscribed_topics = self.compute_subscribed_topics(group)
            group.transition(EMPTY, now_ms)
        group.pending_sync.clear()

    @staticmethod
    def select_protocol(group: Group) -> str:
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
    def compute_subscribed_topics(group: Group) -> frozenset[str] | None:
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

    # --- membership removal ------------------------------------------------------------------

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
            self._ctx.join_error(member.join_ticket, "", ErrorCode.UNKNOWN_MEMBER_ID)
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._ctx.reply(member.sync_ticket, SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID))
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

    # --- SyncGroup ---------------------------------------------------------------------------

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
    ) -> Outcome[None]:
        """SyncGroup of a classic group (the coordinator state routed it here)."""

        def fail(error: int) -> Outcome[None]:
            self._ctx.reply(ticket, SyncResponse(error))
            return self._ctx.done(None)

        group = self._ctx.groups.get(group_id)
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
            self._ctx.reply(
                ticket, SyncResponse(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                                     member.assignment)
            )
            member.schedule_heartbeat(now_ms)
            return self._ctx.done(None)
        # await_leader
        self._set_sync_ticket(member, ticket)
        if group.leader_id == member_id:
            given = dict(assignments)
            for m in group.members.values():
                m.assignment = bytes(given.get(m.member_id, b""))
            self.write_metadata(group)
            self._propagate_assignment(group, ErrorCode.NONE, now_ms, first=member_id)
            group.transition(STABLE, now_ms)
        return self._ctx.done(None)

    def _set_sync_ticket(self, member: Member, ticket: Hashable) -> None:
        if member.sync_ticket is not None:
            self._ctx.reply(member.sync_ticket, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_ticket = ticket

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
            self._ctx.reply(
                member.sync_ticket,
                SyncResponse(
                    error,
                    group.protocol_type if ok else None,
                    group.protocol_name if ok else None,
                    member.assignment,
                ),
            )
            member.sync_ticket = None
            member.schedule_heartbeat(now_ms)

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
            self.prepare_rebalance(group, now_ms)

    # --- Heartbeat / LeaveGroup --------------------------------------------------------------

    def heartbeat(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> Outcome[int]:
        """Heartbeat of a classic group member; ``result`` is the error code to answer."""
        group = self._ctx.groups.get(group_id)
        if group is None:
            return self._ctx.done(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is DEAD:
            return self._ctx.done(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(group_instance_id, member_id):
            return self._ctx.done(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None:
            return self._ctx.done(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return self._ctx.done(ErrorCode.ILLEGAL_GENERATION)
        error, resets_timer = _HEARTBEAT_BY_STATE[group.state]
        if resets_timer:
            member.schedule_heartbeat(now_ms)
        return self._ctx.done(error)

    def leave_group(
        self,
        *,
        group_id: str,
        members: Sequence[tuple[str, str | None]],
        now_ms: int,
    ) -> Outcome[LeaveResult]:
        """LeaveGroup for ``[(member_id, group_instance_id)]`` of a classic group. An
        empty member id with an instance id removes that static member (admin removal,
        KIP-345)."""
        group = self._ctx.groups.get(group_id)
        if group is None:
            return self._ctx.done(
                LeaveResult(
                    ErrorCode.NONE,
                    tuple(
                        LeaveMemberResult(mid, iid, ErrorCode.UNKNOWN_MEMBER_ID)
                        for mid, iid in members
                    ),
                )
            )
        if group.state is DEAD:
            return self._ctx.done(LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        results = []
        for member_id, instance_id in members:
            results.append(
                LeaveMemberResult(
                    member_id, instance_id, self._leave_one(group, member_id, instance_id, now_ms)
                )
            )
        return self._ctx.done(LeaveResult(ErrorCode.NONE, tuple(results)))

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

    # --- timers ------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """Earliest time a classic group's timer is due, or None when no timer is armed."""
        best: int | None = None
        for group in self._ctx.groups.values():
            for deadline in self._group_deadlines(group):
                if best is None or deadline < best:
                    best = deadline
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
        for group_id in list(self._ctx.groups):
            while True:
                group = self._ctx.groups.get(group_id)
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
        return self._ctx.done(None)

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

    # --- DescribeGroups / ListGroups / loading -----------------------------------------------

    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """DescribeGroups. Unknown groups describe as state "Dead" with no error, as
        Kafka's classic coordinator does (v6+ brokers could map that to
        GROUP_ID_NOT_FOUND). Member metadata/assignment are only shown when Stable."""
        out = []
        for group_id in group_ids:
            group = self._ctx.groups.get(group_id)
            if group is None:
                out.append(GroupDescription(group_id, ErrorCode.NONE, DEAD.value, "", ""))
                continue
            stable = group.state is STABLE
            members = tuple(
                MemberDescription(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata_for(group.protocol_name) if stable else b"",
                    m.assignment if stable else b"",
                )
                for m in group.members.values()
            )
            out.append(
                GroupDescription(
                    group_id,
                    ErrorCode.NONE,
                    group.state.value,
                    group.protocol_type or "",
                    (group.protocol_name or "") if stable else "",
                    members,
                )
            )
        return out

    def list_groups(
        self,
        states_filter: Iterable[str] | None = None,
        types_filter: Iterable[str] | None = None,
    ) -> list[GroupListing]:
        """ListGroups; filters are case-insensitive, empty/None = all. Every group
        here is a "classic" group."""
        states = {s.lower() for s in states_filter or ()}
        types = {t.lower() for t in types_filter or ()}
        if types and "classic" not in types:
            return []
        return [
            GroupListing(g.group_id, g.protocol_type or "", g.state.value)
            for g in self._ctx.groups.values()
            if not states or g.state.value.lower() in states
        ]

    def arm_loaded_group(self, group: Group, now_ms: int) -> None:
        group.subscribed_topics = self.compute_subscribed_topics(group)
        for member in group.members.values():
            member.schedule_heartbeat(now_ms)
        if len(group.members) > self._ctx.config.group_max_size and group.state is STABLE:
            self.prepare_rebalance(group, now_ms)

    # --- introspection for the coordinator state, tests and admin ----------------------------

    def group_state(self, group_id: str) -> GroupState:
        group = self._ctx.groups.get(group_id)
        return DEAD if group is None else group.state

    def generation(self, group_id: str) -> int:
        group = self._ctx.groups.get(group_id)
        return -1 if group is None else group.generation_id

    def member_ids(self, group_id: str) -> list[str]:
        group = self._ctx.groups.get(group_id)
        return [] if group is None else list(group.members)

    def classic_group_members(self, group_id: str) -> int | None:
        """None if no classic group has that id, else its member count (for KIP-848)."""
        group = self._ctx.groups.get(group_id)
        return None if group is None else len(group.members) + len(group.pending_members)
