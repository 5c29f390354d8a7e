"""Every group of one coordinator, and their committed offsets, without I/O.

Composed, as Kafka's group coordinator is (``GroupMetadataManager`` dispatching by
group type, offsets in their own ``OffsetMetadataManager``), of parts that share
one ``GroupsContext``: ``classic`` (``ClassicGroups``: the classic protocol),
``consumer_groups`` (``ConsumerGroups``: KIP-848, built on first use),
``share_groups`` (``ShareGroups``: KIP-932 membership, built on first use),
``migration`` (upgrade and downgrade between the two) and ``offsets``
(``OffsetStore``). This class routes the group calls by the group's type and does
what spans the parts: timers, expiry, loading a partition's groups from the log.

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
  broker, then reported with ``offsets.complete_transaction``.
* Not thread-safe: drive one instance from one task.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Sequence

from kafkette.wire.errors import ErrorCode

from . import offsets_records as rec
from .classic import EMPTY, STABLE, ClassicGroups
from .config import GroupConfig
from .context import GroupsContext
from .migration import Migration
from .model import (
    Group,
    JoinResponse,
    LeaveMemberResult,
    LeaveResult,
    LoadedRecord,
    Member,
    Outcome,
    Reply,
    SyncResponse,
    TransactionalRecord,
    TxnMarker,
)
from .offsets_store import OffsetStore
from .subscription import CONSUMER_PROTOCOL_TYPE

Protocols = Sequence[tuple[str, bytes]]


def random_member_id(client_id: str) -> str:
    """Kafka's member id shape: ``<client.id>-<uuid>``."""
    return f"{client_id}-{uuid.uuid4()}"


class GroupCoordinatorState:
    """All groups of one coordinator, their members, timers and committed offsets."""

    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        new_member_id: Callable[[str], str] = random_member_id,
    ) -> None:
        self._ctx = GroupsContext(config or GroupConfig())
        self._new_member_id = new_member_id
        self.classic = ClassicGroups(self._ctx, new_member_id)
        self.offsets = OffsetStore(self._ctx)
        self.migration = Migration(self._ctx, self.classic)
        self._consumer_groups = None  # KIP-848 groups (broker/groups/consumer), on first use
        self._share_groups = None  # KIP-932 share groups (broker/share_groups), on first use
        # Cluster mode: groups move between coordinators, and share group membership is not
        # persisted, so a member unknown to its (new) coordinator is told to rejoin.
        self.coordinators_move = False

    @property
    def config(self) -> GroupConfig:
        return self._ctx.config

    @config.setter
    def config(self, config: GroupConfig) -> None:
        """The broker learns the offsets topic's partition count (cluster mode)."""
        self._ctx.config = config

    @property
    def consumer_groups(self):  # -> consumer.state.ConsumerGroups
        """The KIP-848 consumer-protocol groups beside the classic ones (built on first use)."""
        if self._consumer_groups is None:
            from .consumer.state import ConsumerGroups

            self._consumer_groups = ConsumerGroups(self.config)
        self._consumer_groups.config = self.config
        return self._consumer_groups

    @property
    def share_groups(self):  # -> share_groups.membership.ShareGroups
        """The KIP-932 share groups' membership (built on first use)."""
        if self._share_groups is None:
            from kafkette.broker.share_groups.membership import ShareGroups

            self._share_groups = ShareGroups(self.config)
            self._share_groups.rejoin_unknown_groups = self.coordinators_move
        self._share_groups.config = self.config
        return self._share_groups

    @property
    def share_groups_started(self):  # -> share_groups.membership.ShareGroups | None
        """The share groups if a share-group call made them, else None (never builds them:
        what the console's read-only view asks)."""
        return self._share_groups

    def is_share_group(self, group_id: str) -> bool:
        return self._share_groups is not None and self._share_groups.is_share_group(group_id)

    # --- offsets, checked per group type (Kafka's Group.validateOffsetCommit/Fetch/Delete) --

    def validate_offset_commit(
        self, group_id: str, member_id: str, epoch: int, version: int,
        transactional: bool = False, instance_id: str | None = None,
    ) -> int | None:
        """None for a classic group (or none: the classic checks apply); else the error
        every partition gets (NONE: commit as a simple commit). A share group keeps no
        consumer offsets: GROUP_ID_NOT_FOUND, as Kafka's ShareGroup answers."""
        if self.is_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer_groups.validate_offset_commit(
            group_id, member_id, epoch, version, transactional, instance_id
        )

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        if self.is_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer_groups.validate_offset_fetch(group_id, member_id, epoch)

    def partition_for(self, group_id: str) -> int:
        """``__consumer_offsets`` partition holding ``group_id``'s records."""
        return self._ctx.partition_for(group_id)

    def outcome(self, result):
        """Wrap ``result`` with the records and replies this call produced."""
        return self._ctx.done(result)

    # --- routing: classic calls, and the classic members of consumer groups ------------------

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
            self._ctx.join_error(ticket, member_id, ErrorCode.INVALID_GROUP_ID)
            return self._ctx.done(None)
        if self.is_share_group(group_id):
            self._ctx.join_error(ticket, "", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return self._ctx.done(None)
        consumer = self._consumer_groups
        refused = consumer is not None and consumer.classic_join_refused(group_id)
        if refused and protocol_type != CONSUMER_PROTOCOL_TYPE:
            # a non-empty KIP-848 group holds the id
            self._ctx.join_error(ticket, member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return self._ctx.done(None)
        cfg = self._ctx.config
        if not (
            cfg.group_min_session_timeout_ms
            <= session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            self._ctx.join_error(ticket, member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
            return self._ctx.done(None)
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
            self._ctx.reply(ticket, JoinResponse(
                error, generation, protocol_type if ok else None, name, "", mid,
            ))
            return self._ctx.done(None)
        if member_id == "" or group_id in self._ctx.groups:  # else UNKNOWN_MEMBER_ID
            if consumer is not None:  # validated: an empty one gives way now
                consumer.drop_empty_for_classic(group_id)
        return self.classic.join_group(
            ticket,
            group_id=group_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocols=protocols,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            now_ms=now_ms,
            client_id=client_id,
            client_host=client_host,
            require_known_member_id=require_known_member_id,
            supports_skip_assignment=supports_skip_assignment,
        )

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
            self._ctx.reply(ticket, SyncResponse(error))
            return self._ctx.done(None)

        if not group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            if topics is not None:
                consumer.last_view = topics
            error, name, assignment = consumer.classic_sync(group_id, member_id, generation_id)
            ok = error == ErrorCode.NONE
            self._ctx.reply(ticket, SyncResponse(
                error, CONSUMER_PROTOCOL_TYPE if ok else None, name if ok else None, assignment,
            ))
            return self._ctx.done(None)
        return self.classic.sync_group(
            ticket,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
            now_ms=now_ms,
        )

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
            return self._ctx.done(ErrorCode.INVALID_GROUP_ID)
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            if topics is not None:
                consumer.last_view = topics
            return self._ctx.done(
                consumer.classic_heartbeat(group_id, member_id, generation_id, now_ms)
            )
        return self.classic.heartbeat(
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            now_ms=now_ms,
        )

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
            return self._ctx.done(LeaveResult(ErrorCode.INVALID_GROUP_ID))
        consumer = self._consumer_groups
        if consumer is not None and consumer.is_consumer_group(group_id):
            results = tuple(
                LeaveMemberResult(mid, iid, consumer.classic_leave(group_id, mid, iid))
                for mid, iid in members
            )
            if any(r.error == ErrorCode.NONE for r in results):
                # only classic members left?
                self.migration.maybe_downgrade(consumer, group_id, now_ms)
            return self._ctx.done(LeaveResult(ErrorCode.NONE, results))
        return self.classic.leave_group(group_id=group_id, members=members, now_ms=now_ms)

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
        if self.is_share_group(group_id):
            return HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        if not consumer.is_consumer_group(group_id):
            classic = self.classic.classic_group_members(group_id)
            policy = self._ctx.config.group_consumer_migration_policy
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
                result = self.migration.upgrade_to_consumer(
                    consumer, group_id, topics, now_ms,
                    lambda: consumer.heartbeat(req, topics, now_ms),
                )
                return not_found if result is None else result
        result = consumer.heartbeat(req, topics, now_ms)
        if req.member_epoch == -1 and result.error == ErrorCode.NONE:
            # the last consumer-protocol member left?
            self.migration.maybe_downgrade(consumer, group_id, now_ms)
        return result

    def share_heartbeat(self, req, topics, now_ms: int):
        """One ShareGroupHeartbeat (a share_groups.membership.ShareHeartbeat); a group id
        that names a classic or consumer group is GROUP_ID_NOT_FOUND, as in Kafka."""
        from kafkette.broker.share_groups.membership import ShareHeartbeatResult

        share = self.share_groups
        invalid = share.validate(req)
        if invalid is not None:
            return invalid
        group_id = req.group_id
        if not share.is_share_group(group_id) and (
            self.classic.classic_group_members(group_id) is not None
            or (self._consumer_groups is not None
                and self._consumer_groups.is_consumer_group(group_id))
        ):
            return ShareHeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
            )
        return share.heartbeat(req, topics, now_ms)

    # --- what spans the parts ----------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """Earliest time ``tick`` has work to do, or None when no timer is armed."""
        best = self.classic.next_deadline_ms()
        if self._consumer_groups is not None:
            consumer = self._consumer_groups.next_deadline_ms()
            if consumer is not None and (best is None or consumer < best):
                best = consumer
        if self._share_groups is not None:
            share = self._share_groups.next_deadline_ms()
            if share is not None and (best is None or share < best):
                best = share
        return best

    def tick(self, now_ms: int) -> Outcome[None]:
        """Fire every timer due at ``now_ms``: the consumer groups' (a group left with
        classic members only may go back to the classic protocol), then the classic
        groups', per group in deadline order."""
        consumer = self._consumer_groups
        if consumer is not None:
            for group_id in {g for g, _m in consumer.tick(now_ms)}:
                self.migration.maybe_downgrade(consumer, group_id, now_ms)
        if self._share_groups is not None:
            self._share_groups.tick(now_ms)
        return self.classic.tick(now_ms)

    def expire_offsets(self, now_ms: int, retention_ms: int | None = None) -> Outcome[int]:
        """The periodic cleanup: the offsets store's (a KIP-848 group with members keeps
        its offsets, though its offsets-only classic entry is Empty), then an empty
        consumer group with no offsets left goes, as Kafka's cleanup deletes it."""
        consumer = self._consumer_groups

        def keeps_offsets(group_id: str) -> bool:
            live = None if consumer is None else consumer.groups.get(group_id)
            return live is not None and bool(live.members)

        removed = self.offsets.expire_offsets(now_ms, retention_ms, keeps_offsets)
        if consumer is not None:
            for group_id, group in list(consumer.groups.items()):
                if not group.members and group_id not in self._ctx.groups:
                    del consumer.groups[group_id]
        return self._ctx.done(removed)

    # --- loading from __consumer_offsets -----------------------------------------------------

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
        for group in self._ctx.groups.values():
            self.classic.arm_loaded_group(group, now_ms)
        self._ctx.discard()

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
            group = self._ctx.groups.pop(group_id, None)
            if group is not None:
                replies += group.answer_waiting(error)
        for item in records:
            self._replay_loaded(item, wanted)
        for group_id in wanted:
            group = self._ctx.groups.get(group_id)
            if group is not None:
                self.classic.arm_loaded_group(group, now_ms)
        self._ctx.discard()
        return replies

    def groups_on_partition(self, partition: int) -> set[str]:
        """The groups in memory whose records live in ``__consumer_offsets`` ``partition``."""
        return {g for g in self._ctx.groups if self._ctx.partition_for(g) == partition}

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
                group_id = rec.record_group_id(key)
                if group_id is not None and self._ctx.partition_for(group_id) == partition:
                    wanted.add(group_id)
        return self.reload_groups(wanted, items, now_ms, error)

    def unload_partition(self, partition: int, error: int) -> list[Reply]:
        """Cluster mode: this coordinator no longer leads ``__consumer_offsets``
        ``partition``; forget its groups (Kafka's ``removeGroupsForPartition``), KIP-848
        ones and share groups too (their members find the new coordinator and rejoin it). Members
        waiting in JoinGroup or SyncGroup get ``error`` (the returned replies)."""
        if self._consumer_groups is not None:
            for group_id in [g for g in self._consumer_groups.groups
                             if self._ctx.partition_for(g) == partition]:
                del self._consumer_groups.groups[group_id]
        if self._share_groups is not None:
            self._share_groups.unload([g for g in self._share_groups.groups
                                       if self._ctx.partition_for(g) == partition])
        replies: list[Reply] = []
        for group_id in self.groups_on_partition(partition):
            replies += self._ctx.groups.pop(group_id).answer_waiting(error)
        return replies

    def _replay_loaded(self, item: LoadedRecord, only: set[str] | None) -> None:
        """Replay one item of ``load``/``reload_groups`` (``only``: just those groups)."""
        if isinstance(item, TxnMarker):
            self.offsets.apply_marker(item.partition, item.producer_id, item.committed, only)
            return
        if isinstance(item, TransactionalRecord):
            key, value, producer_id = item.key, item.value, item.producer_id
        else:
            (key, value), producer_id = item, -1
        if only is None or rec.record_group_id(key) in only:
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
            self.offsets.replay_offset(decoded.group_id, tp, value, producer_id)
            return
        group_id = decoded.group_id
        old = self._ctx.groups.get(group_id)
        # A group's offsets (committed and pending) outlive its metadata records.
        kept = {} if old is None else {
            "offsets": old.offsets,
            "offset_positions": old.offset_positions,
            "pending_offsets": old.pending_offsets,
        }
        if value is None:
            if old is not None and (old.offsets or old.pending_offsets):
                self._ctx.groups[group_id] = Group(group_id, EMPTY, None, **kept)
            else:
                self._ctx.groups.pop(group_id, None)
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
        self._ctx.groups[group_id] = group
