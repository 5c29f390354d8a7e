"""Plain data the group state machine keeps and answers with.

Internal records (``Group``, ``Member``) are mutable and owned by
``GroupCoordinatorState``; ``CommittedOffset`` is the frozen record value itself.
Callers get the frozen answer types.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

# A committed offset is held in memory as the value its record stores: same fields, never
# mutated (a new commit replaces it), so no second class and no copying between the two.
from .offsets_records import OffsetCommitValue as CommittedOffset

TopicPartition = tuple[str, int]
T = TypeVar("T")
# A transactional offset and its record's position in the log (see Group.offset_positions).
PendingOffset = tuple[CommittedOffset, int]


class GroupState(enum.Enum):
    """Kafka's classic group states; ``value`` is the name Kafka reports."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's validPreviousStates: a transition to the key is legal only from these.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


# --- answers -------------------------------------------------------------------


@dataclass(frozen=True)
class JoinMember:
    """One entry of the leader's JoinGroup ``members`` list."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResponse:
    """Fields of a JoinGroup response; errors carry generation -1 and leader ""."""

    error: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResponse:
    """Fields of a SyncGroup response."""

    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class Reply:
    """The answer to a waiting JoinGroup/SyncGroup, identified by the broker's ticket."""

    ticket: Hashable
    response: JoinResponse | SyncResponse


@dataclass(frozen=True)
class OffsetsRecord:
    """One record for ``__consumer_offsets`` partition ``partition``; ``value`` None
    is a tombstone.

    A TxnOffsetCommit's records carry the producer's id and epoch: the broker
    writes them as a transactional batch of that producer (see docs/groups.md),
    so the partition's last stable offset and the transaction markers cover
    them as they cover any transactional data. -1 = an ordinary record."""

    partition: int
    key: bytes
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class TransactionalRecord:
    """A record read back from a transactional batch of ``__consumer_offsets``
    (a TxnOffsetCommit): replayed as pending until its producer's marker."""

    producer_id: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class TxnMarker:
    """A COMMIT (``committed``) or ABORT marker read back from ``__consumer_offsets``
    partition ``partition``: it ends ``producer_id``'s pending offsets of the groups
    on that partition only."""

    partition: int
    producer_id: int
    committed: bool


# What ``GroupCoordinatorState.load`` replays, in log order: a plain ``(key, value)``
# record, a transactional one, or a marker.
LoadedRecord = tuple[bytes, bytes | None] | TransactionalRecord | TxnMarker


@dataclass
class Outcome(Generic[T]):
    """What a state-changing call produced.

    Contract for the broker: append ``records`` (in order) to ``__consumer_offsets``
    first, then send ``replies`` and the answer built from ``result``.
    """

    result: T
    replies: list[Reply] = field(default_factory=list)
    records: list[OffsetsRecord] = field(default_factory=list)


@dataclass(frozen=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: int


@dataclass(frozen=True)
class LeaveResult:
    """LeaveGroup answer. For v0-v2 (one member) use the single member's error as
    the top-level error when ``error`` is NONE, as Kafka does."""

    error: int
    members: tuple[LeaveMemberResult, ...] = ()


@dataclass(frozen=True)
class FetchedOffset:
    offset: int  # -1 when nothing is committed
    leader_epoch: int  # -1 when unknown
    metadata: str
    error: int = 0


@dataclass(frozen=True)
class OffsetFetchResult:
    error: int
    partitions: dict[TopicPartition, FetchedOffset]


@dataclass(frozen=True)
class OffsetDeleteResult:
    error: int
    partitions: dict[TopicPartition, int]


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


# --- internal state ----------------------------------------------------------


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_ticket: Hashable | None = None
    sync_ticket: Hashable | None = None
    is_new: bool = False
    heartbeat_deadline_ms: int | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_ticket is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_ticket is not None

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)

    def schedule_heartbeat(self, now_ms: int, timeout_ms: int | None = None) -> None:
        """Its session runs ``timeout_ms`` (default: its session timeout) from ``now_ms``."""
        self.heartbeat_deadline_ms = now_ms + (
            self.session_timeout_ms if timeout_ms is None else timeout_ms
        )


@dataclass
class Group:
    group_id: str
    state: GroupState
    state_timestamp_ms: int | None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion (join) order
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline
    pending_sync: set[str] = field(default_factory=set)
    subscribed_topics: frozenset[str] | None = None
    # PreparingRebalance timer: the DelayedJoin / InitialDelayedJoin deadline.
    join_deadline_ms: int | None = None
    initial_delay_active: bool = False
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    # Pending-sync timer (rebalance timeout after a generation is formed).
    sync_deadline_ms: int | None = None
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Where each committed offset's record stands in the log, as a number that only
    # grows in log order (see ``OffsetStore.next_position``): a transaction's
    # offset replaces a committed one at COMMIT only if its record is the later one,
    # as Kafka compares record offsets (a log compacted in between stays correct).
    offset_positions: dict[TopicPartition, int] = field(default_factory=dict)
    # TxnOffsetCommit offsets waiting for their producer's marker:
    # producer id -> partition -> (offset, position). Never shown by OffsetFetch.
    pending_offsets: dict[int, dict[TopicPartition, PendingOffset]] = field(
        default_factory=dict
    )

    def transition(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise AssertionError(f"group {self.group_id}: illegal {self.state} -> {state}")
        self.state = state
        self.state_timestamp_ms = now_ms

    def is_unused(self) -> bool:
        """True for a group that holds nothing: no members, offsets or pending
        offsets, never rebalanced. Such a group, created only by a request that
        then failed or by offsets that were all aborted, must not stay behind.
        """
        return (
            self.state is GroupState.EMPTY
            and not self.members
            and not self.pending_members
            and not self.offsets
            and not self.pending_offsets
            and self.generation_id == 0
        )

    def answer_waiting(self, error: int) -> list[Reply]:
        """``error`` for every member still waiting in JoinGroup or SyncGroup (the group
        is being forgotten or reloaded)."""
        replies: list[Reply] = []
        for member in self.members.values():
            if member.join_ticket is not None:
                replies.append(
                    Reply(member.join_ticket, JoinResponse(error, member_id=member.member_id))
                )
            if member.sync_ticket is not None:
                replies.append(Reply(member.sync_ticket, SyncResponse(error)))
        return replies

    def has_pending(self, tp: TopicPartition) -> bool:
        """Some open transaction committed an offset for ``tp``."""
        return any(tp in pending for pending in self.pending_offsets.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = {name for name, _ in members[0].protocols}
        for m in members[1:]:
            common &= {name for name, _ in m.protocols}
        return common

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Kafka's supportsProtocols: an Empty group takes any non-empty offer; otherwise
        the type must match and one offered protocol must be supported by every member."""
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and len(protocols) > 0
        if self.protocol_type != protocol_type:
            return False
        names = {name for name, _ in protocols}
        return bool(names & self.candidate_protocols()) if self.members else bool(names)
