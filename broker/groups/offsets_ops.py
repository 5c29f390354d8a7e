"""Committed offsets, group admin (describe/list/delete) and durability.

Mixed into ``GroupCoordinatorState``; shares its groups, config and the
``records``/``replies`` collected for the current call. Pure like the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kafkette.wire.errors import ErrorCode

from . import offsets_records as rec
from .config import GroupConfig
from .model import (
    CommittedOffset,
    FetchedOffset,
    Group,
    GroupDescription,
    GroupListing,
    GroupState,
    JoinResponse,
    LoadedRecord,
    Member,
    MemberDescription,
    OffsetDeleteResult,
    OffsetFetchResult,
    OffsetsRecord,
    Outcome,
    Reply,
    SyncResponse,
    TopicPartition,
    TransactionalRecord,
    TxnMarker,
)
from .partitioning import partition_for_group
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


class OffsetsOps:
    """Offset and admin operations; see ``GroupCoordinatorState`` for the contract."""

    # Shared with GroupCoordinatorState, which also provides _done, _transition,
    # _schedule_heartbeat, _compute_subscribed_topics and _prepare_rebalance.
    config: GroupConfig
    _groups: dict[str, Group]
    _records: list[OffsetsRecord]
    # Cluster mode: per group, per partition, the last committed offset (None: none)
    # and how many writes of it wait for replication. None on a single node.
    _unconfirmed: dict[str, dict[TopicPartition, tuple[CommittedOffset | None, int]]] | None
    # Provided by TxnOffsetsOps (broker/groups/txn_offsets.py).
    _next_position: Callable[[], int]
    _add_pending: Callable[[Group, int, TopicPartition, CommittedOffset], None]
    _drop_pending: Callable[[Group, Iterable[TopicPartition]], None]
    _apply_marker: Callable[..., int]

    def partition_for(self, group_id: str) -> int:
        """``__consumer_offsets`` partition holding ``group_id``'s records."""
        return partition_for_group(group_id, self.config.offsets_topic_num_partitions)

    # --- records ---------------------------------------------------------------------

    def _offset_record(
        self, group_id: str, tp: TopicPartition, entry: CommittedOffset | None
    ) -> OffsetsRecord:
        key = rec.encode_offset_commit_key(group_id, tp[0], tp[1])
        value = None
        if entry is not None:
            value = rec.encode_offset_commit_value(entry)
        return OffsetsRecord(self.partition_for(group_id), key, value)

    def _group_metadata_record(self, group: Group) -> OffsetsRecord:
        members = tuple(
            rec.MemberRecord(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(group.protocol_name),
                m.assignment,
            )
            for m in group.members.values()
        )
        value = rec.GroupMetadataValue(
            group.protocol_type or "",
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            -1 if group.state_timestamp_ms is None else group.state_timestamp_ms,
            members,
        )
        return OffsetsRecord(
            self.partition_for(group.group_id),
            rec.encode_group_metadata_key(group.group_id),
            rec.encode_group_metadata_value(value),
        )

    # --- OffsetCommit ----------------------------------------------------------------

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
            return self._done(dict.fromkeys(offsets, error))

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
            self._schedule_heartbeat(group.members[member_id], now_ms)

        def store(tp: TopicPartition, entry: CommittedOffset) -> None:
            self._hold_unconfirmed(group_id, tp, group.offsets.get(tp))
            group.offsets[tp] = entry
            group.offset_positions[tp] = self._next_position()
            self._records.append(self._offset_record(group_id, tp, entry))

        result = self._commit_each(offsets, now_ms, expire_timestamp_ms, store)
        if created and not group.offsets:
            del self._groups[group_id]  # every partition refused: no phantom group
        return self._done(result)

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
        group = self._groups.get(group_id)
        if group is not None:
            return group, False
        if generation_id >= 0:
            return None, False
        group = Group(group_id, EMPTY, now_ms)
        self._groups[group_id] = group
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
        max_metadata = self.config.offset_metadata_max_bytes
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            metadata = metadata or ""
            if len(metadata) > max_metadata:
                result[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            store(tp, CommittedOffset(offset, leader_epoch, metadata, now_ms, expire_timestamp_ms))
            result[tp] = ErrorCode.NONE
        return result

    @staticmethod
    def _is_unused(group: Group) -> bool:
        """True for a group that holds nothing: no members, offsets or pending
        offsets, never rebalanced. Such a group, created only by a request that
        then failed or by offsets that were all aborted, must not stay behind.
        """
        return (
            group.state is EMPTY
            and not group.members
            and not group.pending_members
            and not group.offsets
            and not group.pending_offsets
            and group.generation_id == 0
        )

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

    # --- OffsetFetch -----------------------------------------------------------------

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
        group = self._groups.get(group_id)
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

    # --- cluster mode: offset writes waiting for replication -------------------------

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

    # --- OffsetDelete / DeleteGroups / retention -------------------------------------

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[TopicPartition], now_ms: int
    ) -> Outcome[OffsetDeleteResult]:
        """OffsetDelete: allowed on an Empty group, and on a consumer group for topics
        it is not subscribed to (else GROUP_SUBSCRIBED_TO_TOPIC)."""
        if not group_id:
            return self._done(OffsetDeleteResult(ErrorCode.INVALID_GROUP_ID, {}))
        group = self._groups.get(group_id)
        if group is None or group.state is DEAD:
            return self._done(OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND, {}))
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
            return self._done(OffsetDeleteResult(ErrorCode.NON_EMPTY_GROUP, {}))
        if eligible:
            self._remove_offsets(group, eligible)
            partition_errors.update(dict.fromkeys(eligible, ErrorCode.NONE))
            self._maybe_bury(group, now_ms)
        return self._done(OffsetDeleteResult(ErrorCode.NONE, partition_errors))

    def delete_groups(self, group_ids: Sequence[str], now_ms: int) -> Outcome[dict[str, int]]:
        """DeleteGroups: only Empty groups go; their offsets and metadata get tombstones.

        Pending transactional offsets do not hold a group back (Kafka 4.0): their
        partitions get tombstones too, and a later COMMIT marker finds nothing."""
        result: dict[str, int] = {}
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None or group.state is DEAD:
                result[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.state is not EMPTY:
                result[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                pending = {tp for by_tp in group.pending_offsets.values() for tp in by_tp}
                self._remove_offsets(group, [*group.offsets, *(pending - set(group.offsets))])
                self._bury(group, now_ms)
                result[group_id] = ErrorCode.NONE
        return self._done(result)

    def expire_offsets(self, now_ms: int, retention_ms: int | None = None) -> Outcome[int]:
        """The periodic cleanup (every ``offsets.retention.check.interval.ms``):
        drop offsets past ``offsets.retention.minutes`` under Kafka's rules (KIP-211)
        and delete Empty groups left with no offsets. Result: offsets removed."""
        retention = self.config.offsets_retention_ms if retention_ms is None else retention_ms
        removed = 0
        for group in list(self._groups.values()):
            expired = self._expired_offsets(group, now_ms, retention)
            self._remove_offsets(group, expired)
            removed += len(expired)
            self._maybe_bury(group, now_ms)
        return self._done(removed)

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
                self._drop_pending(group, [tp])
            if committed or pending:
                self._hold_unconfirmed(group.group_id, tp, old)
                self._records.append(self._offset_record(group.group_id, tp, None))

    def _maybe_bury(self, group: Group, now_ms: int) -> None:
        # Kafka does not remove a group while transactions have offsets in it.
        if group.state is EMPTY and not group.offsets and not group.pending_offsets:
            self._bury(group, now_ms)

    def _bury(self, group: Group, now_ms: int) -> None:
        """Empty -> Dead and forget the group; a generation > 0 had metadata written,
        so it gets a tombstone (groups used only for offsets never had one)."""
        self._transition(group, DEAD, now_ms)
        del self._groups[group.group_id]
        if group.generation_id > 0:
            self._records.append(
                OffsetsRecord(
                    self.partition_for(group.group_id),
                    rec.encode_group_metadata_key(group.group_id),
                    None,
                )
            )

    # --- DescribeGroups / ListGroups -------------------------------------------------

    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """DescribeGroups. Unknown groups describe as state "Dead" with no error, as
        Kafka's classic coordinator does (v6+ brokers could map that to
        GROUP_ID_NOT_FOUND). Member metadata/assignment are only shown when Stable."""
        out = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
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
            for g in self._groups.values()
            if not states or g.state.value.lower() in states
        ]

    # --- reload ----------------------------------------------------------------------

    def load(self, records: Iterable[LoadedRecord], now_ms: int) -> None:
        """Rebuild from ``__consumer_offsets`` records (all partitions this coordinator
        owns, each in log order) on a fresh instance.

        As in Kafka, a group whose last metadata had members comes back Stable with
        those members and assignments; each must heartbeat within its session timeout
        (counted from ``now_ms``) or is removed, which triggers a rebalance.
        Transactional records come back pending; a marker commits or drops them;
        those with no marker yet stay pending (the transaction coordinator ends
        their transactions after its own load)."""
        for item in records:
            self._replay_loaded(item, None)
        for group in self._groups.values():
            self._arm_loaded_group(group, now_ms)
        self._replies, self._records = [], []

    def _arm_loaded_group(self, group: Group, now_ms: int) -> None:
        group.subscribed_topics = self._compute_subscribed_topics(group)
        for member in group.members.values():
            self._schedule_heartbeat(member, now_ms)
        if len(group.members) > self.config.group_max_size and group.state is STABLE:
            self._prepare_rebalance(group, now_ms)

    def reload_groups(
        self,
        group_ids: Iterable[str],
        records: Iterable[LoadedRecord],
        now_ms: int,
        error: int,
    ) -> list[Reply]:
        """Forget ``group_ids`` and rebuild them from ``records`` (theirs, in log order).

        For a failed write to ``__consumer_offsets``: the state machine changed
        the groups before the broker could persist that, so memory is ahead of
        disk. Reloading those groups from what the log holds makes them what a
        restart would find (Kafka reverts its in-memory snapshot the same way),
        so e.g. an OffsetCommit that was not written is not visible to
        OffsetFetch. Members still waiting in JoinGroup or SyncGroup get
        ``error`` (the returned replies) and rejoin.
        """
        wanted = set(group_ids)
        replies: list[Reply] = []
        for group_id in wanted:
            group = self._groups.pop(group_id, None)
            if group is None:
                continue
            for member in group.members.values():
                if member.join_ticket is not None:
                    replies.append(
                        Reply(member.join_ticket, JoinResponse(error, member_id=member.member_id))
                    )
                if member.sync_ticket is not None:
                    replies.append(Reply(member.sync_ticket, SyncResponse(error)))
        for item in records:
            self._replay_loaded(item, wanted)
        for group_id in wanted:
            group = self._groups.get(group_id)
            if group is not None:
                self._arm_loaded_group(group, now_ms)
        self._replies, self._records = [], []
        return replies

    def groups_on_partition(self, partition: int) -> set[str]:
        """The groups in memory whose records live in ``__consumer_offsets`` ``partition``."""
        return {g for g in self._groups if self.partition_for(g) == partition}

    def load_partition(
        self, partition: int, records: Iterable[LoadedRecord], now_ms: int, error: int
    ) -> list[Reply]:
        """Cluster mode: this coordinator now leads ``__consumer_offsets`` ``partition``;
        rebuild its groups from ``records`` (the partition's, in log order), as Kafka's
        ``loadGroupsForPartition``. Groups of other partitions are untouched; any group
        of this one still in memory is replaced (its waiting members get ``error``)."""
        items = list(records)
        wanted = self.groups_on_partition(partition)
        for item in items:
            if isinstance(item, TxnMarker):
                continue
            key = item.key if isinstance(item, TransactionalRecord) else item[0]
            if key is not None:
                group_id = record_group_id(key)
                if group_id is not None and self.partition_for(group_id) == partition:
                    wanted.add(group_id)
        return self.reload_groups(wanted, items, now_ms, error)

    def unload_partition(self, partition: int, error: int) -> list[Reply]:
        """Cluster mode: this coordinator no longer leads ``__consumer_offsets``
        ``partition``; forget its groups (Kafka's ``removeGroupsForPartition``). Members
        waiting in JoinGroup or SyncGroup get ``error`` (the returned replies)."""
        replies: list[Reply] = []
        for group_id in self.groups_on_partition(partition):
            group = self._groups.pop(group_id)
            for member in group.members.values():
                if member.join_ticket is not None:
                    replies.append(
                        Reply(member.join_ticket, JoinResponse(error, member_id=member.member_id))
                    )
                if member.sync_ticket is not None:
                    replies.append(Reply(member.sync_ticket, SyncResponse(error)))
        return replies

    def _replay_loaded(self, item: LoadedRecord, only: set[str] | None) -> None:
        """Replay one item of ``load``/``reload_groups`` (``only``: just those groups)."""
        if isinstance(item, TxnMarker):
            self._apply_marker(item.partition, item.producer_id, item.committed, only)
            return
        if isinstance(item, TransactionalRecord):
            key, value, producer_id = item.key, item.value, item.producer_id
        else:
            (key, value), producer_id = item, -1
        if only is None or record_group_id(key) in only:
            self.replay(key, value, producer_id)

    def replay(self, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """Apply one record (last write wins). Unknown record versions are skipped,
        as Kafka skips record types it does not know. Timers are armed by ``load``.
        ``producer_id`` >= 0: the record came from a transactional batch of that
        producer (a TxnOffsetCommit), so its offset is pending."""
        try:
            decoded = rec.decode_key(key)
        except rec.UnsupportedRecord:
            return
        if isinstance(decoded, rec.OffsetCommitKey):
            tp = (decoded.topic, decoded.partition)
            group = self._groups.get(decoded.group_id)
            if value is None:
                if group is not None:
                    group.offsets.pop(tp, None)
                    group.offset_positions.pop(tp, None)
                    self._drop_pending(group, [tp])
                    if self._replayed_group_is_gone(group):
                        del self._groups[group.group_id]
                return
            committed = rec.decode_offset_commit_value(value)
            if group is None:
                group = Group(decoded.group_id, EMPTY, None)
                self._groups[decoded.group_id] = group
            if producer_id >= 0:
                self._add_pending(group, producer_id, tp, committed)
            else:
                group.offsets[tp] = committed
                group.offset_positions[tp] = self._next_position()
            return
        group_id = decoded.group_id
        old = self._groups.get(group_id)
        # A group's offsets (committed and pending) outlive its metadata records.
        kept = {} if old is None else {
            "offsets": old.offsets,
            "offset_positions": old.offset_positions,
            "pending_offsets": old.pending_offsets,
        }
        if value is None:
            if old is not None and (old.offsets or old.pending_offsets):
                self._groups[group_id] = Group(group_id, EMPTY, None, **kept)
            else:
                self._groups.pop(group_id, None)
            return
        meta = rec.decode_group_metadata_value(value)
        group = Group(
            group_id,
            STABLE if meta.members else EMPTY,
            None if meta.current_state_timestamp_ms == -1 else meta.current_state_timestamp_ms,
            generation_id=meta.generation,
            protocol_type=meta.protocol_type or None,
            protocol_name=meta.protocol,
            leader_id=meta.leader,
            **kept,
        )
        for m in meta.members:
            member = Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms if m.rebalance_timeout_ms >= 0 else m.session_timeout_ms,
                m.session_timeout_ms,
                meta.protocol_type,
                [(meta.protocol or "", m.subscription)],
                assignment=m.assignment,
            )
            group.members[m.member_id] = member
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        self._groups[group_id] = group

    @staticmethod
    def _replayed_group_is_gone(group: Group) -> bool:
        return (
            group.state is EMPTY
            and not group.offsets
            and not group.pending_offsets
            and not group.members
            and group.generation_id == 0
        )


def record_group_id(key: bytes) -> str | None:
    """The group a ``__consumer_offsets`` record key belongs to (None if unknown)."""
    try:
        return rec.decode_key(key).group_id
    except rec.UnsupportedRecord:
        return None
