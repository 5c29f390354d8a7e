"""The committed offsets of every group: an offsets store the coordinator owns.

OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, retention, and the offsets
committed inside a transaction (TxnOffsetCommit, KIP-98 / KIP-447): those are
written at once (as a transactional batch of the producer) but stay *pending*,
kept per group and producer id, never shown by OffsetFetch, until the
transaction coordinator writes the producer's COMMIT or ABORT marker into the
group's ``__consumer_offsets`` partition. COMMIT makes them the group's committed
offsets, ABORT drops them. This follows Kafka 4.0's group coordinator
(``OffsetMetadataManager``): the same validation, the same "the later record
wins" rule when a transaction's offset meets an ordinary commit of the same
partition, the same effect of tombstones on pending offsets. See docs/groups.md.

A group's offsets live on its classic ``Group`` (shared through ``GroupsContext``):
a group that only commits offsets is a classic group without members, as in Kafka.
Pure like the rest of the state machine: the broker appends the records and the
marker; ``complete_transaction`` is told about a marker once it is in the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kafkette.wire.errors import ErrorCode

from . import offsets_records as rec
from .context import GroupsContext
from .model import (
    CommittedOffset,
    FetchedOffset,
    Group,
    GroupState,
    OffsetDeleteResult,
    OffsetFetchResult,
    OffsetsRecord,
    Outcome,
    TopicPartition,
)
from .records import group_tombstone, offset_record
from .subscription import CONSUMER_PROTOCOL_TYPE

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# A valid OffsetCommit in each state: an int is the error for every partition.
_COMMIT_BY_STATE: dict[GroupState, str | int] = {
    EMPTY: "store",
    PREPARING: "store_and_touch_member",  # the next heartbeat tells it to rejoin
    STABLE: "store_and_touch_member",
    COMPLETING: ErrorCode.REBALANCE_IN_PROGRESS,
    DEAD: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

OffsetCommits = Mapping[TopicPartition, tuple[int, int, str | None]]


class OffsetStore:
    """Committed and pending offsets; see ``GroupCoordinatorState`` for the contract."""

    def __init__(self, ctx: GroupsContext) -> None:
        self._ctx = ctx
        # Grows with every offset record, in log order (``next_position``).
        self._position = 0
        # producer id -> groups that may hold its pending offsets (cleaned lazily).
        self._txn_groups: dict[int, set[str]] = {}
        # Cluster mode: per group, per partition, the last committed offset (None: none)
        # and how many writes of it wait for replication. None on a single node.
        self._unconfirmed: (
            dict[str, dict[TopicPartition, tuple[CommittedOffset | None, int]]] | None
        ) = None

    def _offset_record(
        self, group_id: str, tp: TopicPartition, entry: CommittedOffset | None
    ) -> OffsetsRecord:
        return offset_record(self._ctx.partition_for(group_id), group_id, tp, entry)

    # --- OffsetCommit ------------------------------------------------------------------------

    def commit_offsets(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: OffsetCommits,
        now_ms: int,
        expire_timestamp_ms: int | None = None,
        api_version: int = 0,
    ) -> Outcome[dict[TopicPartition, int]]:
        """OffsetCommit. ``offsets``: ``{(topic, partition): (offset, leader_epoch,
        metadata)}`` (epoch -1 = none, metadata None = ""). Generation -1 with an
        empty member id is a "simple" commit, allowed only while the group has no
        members. ``expire_timestamp_ms`` carries an explicit retention from
        OffsetCommit v2-v4. Result: error code per partition; topic existence is
        the broker's check (UNKNOWN_TOPIC_OR_PARTITION)."""

        def every(error: int) -> Outcome[dict[TopicPartition, int]]:
            return self._ctx.done(dict.fromkeys(offsets, error))

        group, created = self._group_for_commit(group_id, generation_id, now_ms)
        if group is None:
            # Kafka 4.0: a generation for a group it does not know is GROUP_ID_NOT_FOUND
            # from v9 (KIP-848's version), ILLEGAL_GENERATION before.
            missing = (
                ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
            )
            return every(missing)
        error = self._validate_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return every(error)
        action = _COMMIT_BY_STATE[group.state]
        if isinstance(action, int):
            return every(action)
        if action == "store_and_touch_member":
            group.members[member_id].schedule_heartbeat(now_ms)

        def store(tp: TopicPartition, entry: CommittedOffset) -> None:
            self._hold_unconfirmed(group_id, tp, group.offsets.get(tp))
            group.offsets[tp] = entry
            group.offset_positions[tp] = self.next_position()
            self._ctx.records.append(self._offset_record(group_id, tp, entry))

        result = self._commit_each(offsets, now_ms, expire_timestamp_ms, store)
        if created and not group.offsets:
            del self._ctx.groups[group_id]  # every partition refused: no phantom group
        return self._ctx.done(result)

    def _group_for_commit(
        self, group_id: str, generation_id: int, now_ms: int
    ) -> tuple[Group | None, bool]:
        """The group an OffsetCommit or TxnOffsetCommit writes to, and whether it
        was created for it.

        Both commits create a missing group (a "simple" group) when they carry
        no generation (-1), as Kafka does; with a generation the commit comes
        from an old generation of a vanished group or a bogus one: None, which
        the caller refuses (OffsetCommit: GROUP_ID_NOT_FOUND from v9, KIP-848's
        version, ILLEGAL_GENERATION before, as Kafka 4.0; TxnOffsetCommit:
        ILLEGAL_GENERATION). A created group is removed again by the caller if
        nothing was stored in it.
        """
        group = self._ctx.groups.get(group_id)
        if group is not None:
            return group, False
        if generation_id >= 0:
            return None, False
        group = Group(group_id, EMPTY, now_ms)
        self._ctx.groups[group_id] = group
        return group, True

    def _commit_each(
        self,
        offsets: OffsetCommits,
        now_ms: int,
        expire_timestamp_ms: int | None,
        store: Callable[[TopicPartition, CommittedOffset], None],
    ) -> dict[TopicPartition, int]:
        """Error code per partition of a validated (Txn)OffsetCommit; ``store``
        keeps each accepted offset.

        Both commits refuse metadata longer than ``offset.metadata.max.bytes``
        per partition (OFFSET_METADATA_TOO_LARGE) and accept the others; only
        where the offset goes differs (committed at once, or pending until the
        transaction's marker).
        """
        result: dict[TopicPartition, int] = {}
        max_metadata = self._ctx.config.offset_metadata_max_bytes
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            metadata = metadata or ""
            if len(metadata) > max_metadata:
                result[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            store(tp, CommittedOffset(offset, leader_epoch, metadata, now_ms, expire_timestamp_ms))
            result[tp] = ErrorCode.NONE
        return result

    @staticmethod
    def _validate_commit(
        group: Group, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int | None:
        """Kafka's validateOffsetCommit."""
        if group.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is EMPTY:
            # No generation (an admin client, or a consumer assigning its own
            # partitions) on a group without members: Kafka 4.0 accepts it whatever
            # member id it names.
            return None
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            if group.is_static_member_fenced(group_instance_id, member_id):
                return ErrorCode.FENCED_INSTANCE_ID
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return None
        if group.state is not EMPTY:
            # When the group has members, only members can commit.
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # --- OffsetFetch -------------------------------------------------------------------------

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        """OffsetFetch for one group (call once per group for v8+ batches).
        ``partitions`` None = every committed partition. Uncommitted partitions get
        offset -1. Answers regardless of group state, as Kafka does.

        Offsets of open transactions are never shown: without ``require_stable``
        the last committed offset is answered; with it (v7+, KIP-447) a
        partition with pending transactional offsets answers
        UNSTABLE_OFFSET_COMMIT and offset -1, and the client retries."""
        group = self._ctx.groups.get(group_id)
        offsets: Mapping[TopicPartition, CommittedOffset] = {} if group is None else group.offsets
        unconfirmed = None if self._unconfirmed is None else self._unconfirmed.get(group_id)
        if unconfirmed:
            # Cluster mode: what is committed, not what waits for replication.
            visible = dict(offsets)
            for tp, (last_committed, _writes) in unconfirmed.items():
                if last_committed is None:
                    visible.pop(tp, None)
                else:
                    visible[tp] = last_committed
            offsets = visible
        wanted = list(offsets) if partitions is None else list(partitions)
        result: dict[TopicPartition, FetchedOffset] = {}
        for tp in wanted:
            entry = offsets.get(tp)
            if require_stable and group is not None and group.has_pending(tp):
                result[tp] = FetchedOffset(-1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            elif entry is None:
                result[tp] = FetchedOffset(-1, -1, "")
            else:
                result[tp] = FetchedOffset(entry.offset, entry.leader_epoch, entry.metadata)
        return OffsetFetchResult(ErrorCode.NONE, result)

    # --- cluster mode: offset writes waiting for replication ---------------------------------

    def track_unconfirmed(self) -> None:
        """Cluster mode: from now on OffsetFetch answers, for an offset whose write
        waits for replication, the last committed value (Kafka keeps such commits in
        ``pendingOffsetCommits``, invisible until the append completes); the broker
        calls ``settle_unconfirmed`` with the call's records once the wait is over."""
        if self._unconfirmed is None:
            self._unconfirmed = {}

    def _hold_unconfirmed(
        self, group_id: str, tp: TopicPartition, last: CommittedOffset | None
    ) -> None:
        """An ordinary offset record for ``tp`` is being written over ``last``."""
        if self._unconfirmed is None:
            return
        held = self._unconfirmed.setdefault(group_id, {})
        entry = held.get(tp)
        # Several writes in flight: the value before the first one stays shown.
        held[tp] = (last, 1) if entry is None else (entry[0], entry[1] + 1)

    def settle_unconfirmed(self, records: Iterable[OffsetsRecord]) -> None:
        """The writes of ``records`` are over (committed, or failed and reverted):
        once no write of an offset is in flight, OffsetFetch shows the offset as the
        state holds it. (While another write of the same offset is in flight, the value
        from before the first one is still shown: committed, if not the newest.)"""
        if not self._unconfirmed:
            return
        for record in records:
            if record.producer_id >= 0:
                continue  # transactional: pending until its marker, never held here
            try:
                key = rec.decode_key(record.key)
            except rec.UnsupportedRecord:
                continue
            if not isinstance(key, rec.OffsetCommitKey):
                continue
            held = self._unconfirmed.get(key.group_id)
            tp = (key.topic, key.partition)
            entry = None if held is None else held.get(tp)
            if entry is None:
                continue
            assert held is not None
            if entry[1] > 1:
                held[tp] = (entry[0], entry[1] - 1)
            else:
                del held[tp]
                if not held:
                    del self._unconfirmed[key.group_id]

    # --- OffsetDelete / DeleteGroups / retention ---------------------------------------------

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[TopicPartition], now_ms: int
    ) -> Outcome[OffsetDeleteResult]:
        """OffsetDelete: allowed on an Empty group, and on a consumer group for topics
        it is not subscribed to (else GROUP_SUBSCRIBED_TO_TOPIC)."""
        if not group_id:
            return self._ctx.done(OffsetDeleteResult(ErrorCode.INVALID_GROUP_ID, {}))
        group = self._ctx.groups.get(group_id)
        if group is None or group.state is DEAD:
            return self._ctx.done(OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND, {}))
        partition_errors: dict[TopicPartition, int] = {}
        if group.state is EMPTY:
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = group.subscribed_topics
            eligible = []
            for tp in partitions:
                if subscribed is None or tp[0] in subscribed:
                    partition_errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return self._ctx.done(OffsetDeleteResult(ErrorCode.NON_EMPTY_GROUP, {}))
        if eligible:
            self._remove_offsets(group, eligible)
            partition_errors.update(dict.fromkeys(eligible, ErrorCode.NONE))
            self._maybe_bury(group, now_ms)
        return self._ctx.done(OffsetDeleteResult(ErrorCode.NONE, partition_errors))

    def delete_groups(self, group_ids: Sequence[str], now_ms: int) -> Outcome[dict[str, int]]:
        """DeleteGroups: only Empty groups go; their offsets and metadata get tombstones.

        Pending transactional offsets do not hold a group back (Kafka 4.0): their
        partitions get tombstones too, and a later COMMIT marker finds nothing."""
        result: dict[str, int] = {}
        for group_id in group_ids:
            group = self._ctx.groups.get(group_id)
            if group is None or group.state is DEAD:
                result[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not EMPTY:
                result[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                pending = {tp for by_tp in group.pending_offsets.values() for tp in by_tp}
                self._remove_offsets(group, [*group.offsets, *(pending - set(group.offsets))])
                self._bury(group, now_ms)
                result[group_id] = ErrorCode.NONE
        return self._ctx.done(result)

    def expire_offsets(
        self, now_ms: int, retention_ms: int | None, keeps_offsets: Callable[[str], bool]
    ) -> int:
        """The periodic cleanup (every ``offsets.retention.check.interval.ms``):
        drop offsets past ``offsets.retention.minutes`` under Kafka's rules (KIP-211)
        and delete Empty groups left with no offsets; a group for which
        ``keeps_offsets(group_id)`` (a consumer group with members) keeps its offsets.
        Returns how many offsets were removed; the caller ends the call."""
        config = self._ctx.config
        retention = config.offsets_retention_ms if retention_ms is None else retention_ms
        removed = 0
        for group in list(self._ctx.groups.values()):
            expired = (
                [] if keeps_offsets(group.group_id)
                else self._expired_offsets(group, now_ms, retention)
            )
            self._remove_offsets(group, expired)
            removed += len(expired)
            self._maybe_bury(group, now_ms)
        return removed

    @staticmethod
    def _expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[TopicPartition]:
        """Kafka's removeExpiredOffsets: an Empty group counts retention from when it
        became Empty; a Stable consumer group only loses offsets of topics it no
        longer subscribes to; a group never managed by us (simple commits) counts
        from each commit; other groups keep everything."""
        keep_topics: frozenset[str] = frozenset()
        if group.protocol_type is not None and group.state is EMPTY:

            def base(entry: CommittedOffset) -> int:
                if group.state_timestamp_ms is None:
                    return entry.commit_timestamp_ms
                return group.state_timestamp_ms

        elif (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.subscribed_topics is not None
            and group.state is STABLE
        ):
            keep_topics = group.subscribed_topics

            def base(entry: CommittedOffset) -> int:
                return entry.commit_timestamp_ms

        elif group.protocol_type is None:

            def base(entry: CommittedOffset) -> int:
                return entry.commit_timestamp_ms

        else:
            return []
        expired = []
        for tp, entry in group.offsets.items():
            if tp[0] in keep_topics or group.has_pending(tp):
                continue  # Kafka keeps an offset an open transaction is about to replace
            if entry.expire_timestamp_ms is not None:
                gone = now_ms >= entry.expire_timestamp_ms
            else:
                gone = now_ms - base(entry) >= retention_ms
            if gone:
                expired.append(tp)
        return expired

    def _remove_offsets(self, group: Group, partitions: Iterable[TopicPartition]) -> None:
        """One tombstone per partition that has a committed or a pending offset;
        like its replay, it removes both."""
        for tp in partitions:
            old = group.offsets.pop(tp, None)
            committed = old is not None
            group.offset_positions.pop(tp, None)
            pending = group.has_pending(tp)
            if pending:
                self.drop_pending(group, [tp])
            if committed or pending:
                self._hold_unconfirmed(group.group_id, tp, old)
                self._ctx.records.append(self._offset_record(group.group_id, tp, None))

    def _maybe_bury(self, group: Group, now_ms: int) -> None:
        # Kafka does not remove a group while transactions have offsets in it.
        if group.state is EMPTY and not group.offsets and not group.pending_offsets:
            self._bury(group, now_ms)

    def _bury(self, group: Group, now_ms: int) -> None:
        """Empty -> Dead and forget the group; a generation > 0 had metadata written,
        so it gets a tombstone (groups used only for offsets never had one)."""
        group.transition(DEAD, now_ms)
        del self._ctx.groups[group.group_id]
        if group.generation_id > 0:
            partition = self._ctx.partition_for(group.group_id)
            self._ctx.records.append(group_tombstone(partition, group.group_id))

    # --- TxnOffsetCommit and markers ---------------------------------------------------------

    def commit_txn_offsets(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: OffsetCommits,
        now_ms: int,
    ) -> Outcome[dict[TopicPartition, int]]:
        """TxnOffsetCommit. ``offsets`` as for ``commit_offsets``; before v3 pass
        generation -1, member "" and instance None. Result: error per partition.

        The records come out with the producer's id and epoch: the broker must
        write them as one transactional batch of that producer. A group that
        does not exist is created (a "simple" group) when generation is -1, as
        Kafka does; with a generation it is ILLEGAL_GENERATION.
        """

        def every(error: int) -> Outcome[dict[TopicPartition, int]]:
            return self._ctx.done(dict.fromkeys(offsets, error))

        group, created = self._group_for_commit(group_id, generation_id, now_ms)
        if group is None:
            return every(ErrorCode.ILLEGAL_GENERATION)
        error = _validate_txn_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return every(error)

        def store(tp: TopicPartition, entry: CommittedOffset) -> None:
            record = self._offset_record(group_id, tp, entry)
            self._ctx.records.append(
                OffsetsRecord(
                    record.partition, record.key, record.value, producer_id, producer_epoch
                )
            )
            self.add_pending(group, producer_id, tp, entry)

        result = self._commit_each(offsets, now_ms, None, store)
        if created and not group.pending_offsets:
            del self._ctx.groups[group_id]  # every partition refused: no phantom group
        return self._ctx.done(result)

    def complete_transaction(
        self, *, partition: int, producer_id: int, committed: bool
    ) -> Outcome[int]:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` is now in
        ``__consumer_offsets`` partition ``partition``: materialise or drop that
        producer's pending offsets of every group on that partition.

        Result: how many offsets became committed. No records (the marker is
        the broker's write, done before this call)."""
        return self._ctx.done(self.apply_marker(partition, producer_id, committed))

    def has_pending_offsets(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Whether ``group_id`` has pending transactional offsets (for ``tp``, or any)."""
        group = self._ctx.groups.get(group_id)
        if group is None:
            return False
        return bool(group.pending_offsets) if tp is None else group.has_pending(tp)

    def pending_offset_count(self) -> int:
        """Pending transactional offsets over every group (logged after a load)."""
        return sum(
            len(by_tp) for g in self._ctx.groups.values() for by_tp in g.pending_offsets.values()
        )

    def pending_producers(self, group_id: str) -> list[int]:
        """Producer ids with pending offsets in ``group_id`` (tests, admin)."""
        group = self._ctx.groups.get(group_id)
        return [] if group is None else sorted(group.pending_offsets)

    # --- replay and positions in the log -----------------------------------------------------

    def next_position(self) -> int:
        """A number that grows with every offset record, in log order.

        Records of one group all go to one ``__consumer_offsets`` partition, in
        the order the state machine produced them (the broker appends them
        under one lock) and in the order a reload replays them; so comparing
        two positions of one group tells which record is later in the log,
        which is all Kafka's record-offset comparison needs."""
        self._position += 1
        return self._position

    def add_pending(
        self, group: Group, producer_id: int, tp: TopicPartition, entry: CommittedOffset
    ) -> None:
        group.pending_offsets.setdefault(producer_id, {})[tp] = (entry, self.next_position())
        self._txn_groups.setdefault(producer_id, set()).add(group.group_id)

    def drop_pending(self, group: Group, partitions: Iterable[TopicPartition]) -> None:
        """What a tombstone does to pending offsets (Kafka: every open transaction of
        the group loses that partition)."""
        for tp in partitions:
            for producer_id in list(group.pending_offsets):
                pending = group.pending_offsets[producer_id]
                pending.pop(tp, None)
                if not pending:
                    del group.pending_offsets[producer_id]

    def apply_marker(
        self,
        partition: int,
        producer_id: int,
        committed: bool,
        only: set[str] | None = None,
    ) -> int:
        """Materialise (COMMIT) or drop (ABORT) ``producer_id``'s pending offsets of
        the groups on ``partition`` (limited to ``only`` when reloading some groups).

        At COMMIT a pending offset replaces the committed one only if its record
        is the later one: an ordinary OffsetCommit written after the
        TxnOffsetCommit but before the marker wins, as in Kafka."""
        group_ids = self._txn_groups.get(producer_id)
        if not group_ids:
            return 0
        materialised = 0
        for group_id in list(group_ids):
            if only is not None and group_id not in only:
                continue
            group = self._ctx.groups.get(group_id)
            if group is None:
                group_ids.discard(group_id)
                continue
            if self._ctx.partition_for(group_id) != partition:
                continue
            group_ids.discard(group_id)
            pending = group.pending_offsets.pop(producer_id, None)
            if committed and pending:
                for tp, (entry, position) in pending.items():
                    if tp in group.offsets and group.offset_positions.get(tp, -1) > position:
                        continue
                    group.offsets[tp] = entry
                    group.offset_positions[tp] = position
                    materialised += 1
            if group.is_unused():
                del self._ctx.groups[group_id]  # only aborted offsets ever named it
        if not group_ids:
            del self._txn_groups[producer_id]
        return materialised


    def replay_offset(
        self, group_id: str, tp: TopicPartition, value: bytes | None, producer_id: int
    ) -> None:
        """Apply one offset record read back from the log (last write wins);
        ``producer_id`` >= 0: from a transactional batch, so the offset is pending."""
        group = self._ctx.groups.get(group_id)
        if value is None:
            if group is not None:
                group.offsets.pop(tp, None)
                group.offset_positions.pop(tp, None)
                self.drop_pending(group, [tp])
                if _replayed_group_is_gone(group):
                    del self._ctx.groups[group.group_id]
            return
        committed = rec.decode_offset_commit_value(value)
        if group is None:
            group = Group(group_id, EMPTY, None)
            self._ctx.groups[group_id] = group
        if producer_id >= 0:
            self.add_pending(group, producer_id, tp, committed)
        else:
            group.offsets[tp] = committed
            group.offset_positions[tp] = self.next_position()


def _replayed_group_is_gone(group: Group) -> bool:
    return (
        group.state is EMPTY
        and not group.offsets
        and not group.pending_offsets
        and not group.members
        and group.generation_id == 0
    )


def _validate_txn_commit(
    group: Group, generation_id: int, member_id: str, group_instance_id: str | None
) -> int | None:
    """Kafka's ClassicGroup.validateOffsetCommit for a transactional commit.

    Unlike OffsetCommit, a commit without member id and generation (TxnOffsetCommit
    before v3, or a producer that does not send its consumer's group metadata) is
    accepted in every state, and CompletingRebalance is not refused: the group's
    state is not enforced for transactional commits."""
    if group.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.state is EMPTY:
        return None
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    return None
