"""Offsets committed inside a transaction (TxnOffsetCommit, KIP-98 / KIP-447).

Mixed into ``GroupCoordinatorState``. A TxnOffsetCommit's offsets are written
at once (as a transactional batch of the producer) but stay *pending*: kept per
group and producer id, never shown by OffsetFetch, until the transaction
coordinator writes the producer's COMMIT or ABORT marker into the group's
``__consumer_offsets`` partition. COMMIT makes them the group's committed
offsets, ABORT drops them. This follows Kafka 4.0's group coordinator
(``OffsetMetadataManager``): the same validation, the same "the later record
wins" rule when a transaction's offset meets an ordinary commit of the same
partition, the same effect of tombstones on pending offsets. See docs/groups.md.

Pure like the rest of the state machine: the broker appends the records and
the marker; ``complete_transaction`` is told about a marker once it is in the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafkette.wire.errors import ErrorCode

from .config import GroupConfig
from .model import (
    CommittedOffset,
    Group,
    GroupState,
    OffsetsRecord,
    Outcome,
    TopicPartition,
)
from .offsets_ops import OffsetCommits

EMPTY = GroupState.EMPTY
DEAD = GroupState.DEAD


class TxnOffsetsOps:
    """Transactional offsets; see ``GroupCoordinatorState`` for the contract."""

    # Shared with GroupCoordinatorState / OffsetsOps.
    config: GroupConfig
    _groups: dict[str, Group]
    _records: list[OffsetsRecord]
    _position: int
    # Provided by OffsetsOps (broker/groups/offsets_ops.py): shared with OffsetCommit.
    _group_for_commit: Callable[[str, int, int], tuple[Group | None, bool]]
    _commit_each: Callable[..., dict[TopicPartition, int]]
    _is_unused: Callable[[Group], bool]
    # producer id -> groups that may hold its pending offsets (cleaned lazily).
    _txn_groups: dict[int, set[str]]

    # --- TxnOffsetCommit -------------------------------------------------------------

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
            return self._done(dict.fromkeys(offsets, error))  # type: ignore[attr-defined]

        group, created = self._group_for_commit(group_id, generation_id, now_ms)
        if group is None:
            return every(ErrorCode.ILLEGAL_GENERATION)
        error = _validate_txn_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return every(error)

        def store(tp: TopicPartition, entry: CommittedOffset) -> None:
            record = self._offset_record(group_id, tp, entry)  # type: ignore[attr-defined]
            self._records.append(
                OffsetsRecord(
                    record.partition, record.key, record.value, producer_id, producer_epoch
                )
            )
            self._add_pending(group, producer_id, tp, entry)

        result = self._commit_each(offsets, now_ms, None, store)
        if created and not group.pending_offsets:
            del self._groups[group_id]  # every partition refused: no phantom group
        return self._done(result)  # type: ignore[attr-defined]

    # --- markers -----------------------------------------------------------------------

    def complete_transaction(
        self, *, partition: int, producer_id: int, committed: bool
    ) -> Outcome[int]:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id`` is now in
        ``__consumer_offsets`` partition ``partition``: materialise or drop that
        producer's pending offsets of every group on that partition.

        Result: how many offsets became committed. No records (the marker is
        the broker's write, done before this call)."""
        return self._done(self._apply_marker(partition, producer_id, committed))  # type: ignore[attr-defined]

    def has_pending_offsets(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Whether ``group_id`` has pending transactional offsets (for ``tp``, or any)."""
        group = self._groups.get(group_id)
        if group is None:
            return False
        return bool(group.pending_offsets) if tp is None else group.has_pending(tp)

    def pending_offset_count(self) -> int:
        """Pending transactional offsets over every group (logged after a load)."""
        return sum(
            len(by_tp) for g in self._groups.values() for by_tp in g.pending_offsets.values()
        )

    def pending_producers(self, group_id: str) -> list[int]:
        """Producer ids with pending offsets in ``group_id`` (tests, admin)."""
        group = self._groups.get(group_id)
        return [] if group is None else sorted(group.pending_offsets)

    # --- shared with OffsetsOps (replay, deletes) ------------------------------------

    def _next_position(self) -> int:
        """A number that grows with every offset record, in log order.

        Records of one group all go to one ``__consumer_offsets`` partition, in
        the order the state machine produced them (the broker appends them
        under one lock) and in the order a reload replays them; so comparing
        two positions of one group tells which record is later in the log,
        which is all Kafka's record-offset comparison needs."""
        self._position += 1
        return self._position

    def _add_pending(
        self, group: Group, producer_id: int, tp: TopicPartition, entry: CommittedOffset
    ) -> None:
        group.pending_offsets.setdefault(producer_id, {})[tp] = (entry, self._next_position())
        self._txn_groups.setdefault(producer_id, set()).add(group.group_id)

    def _drop_pending(self, group: Group, partitions: Iterable[TopicPartition]) -> None:
        """What a tombstone does to pending offsets (Kafka: every open transaction of
        the group loses that partition)."""
        for tp in partitions:
            for producer_id in list(group.pending_offsets):
                pending = group.pending_offsets[producer_id]
                pending.pop(tp, None)
                if not pending:
                    del group.pending_offsets[producer_id]

    def _apply_marker(
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
            group = self._groups.get(group_id)
            if group is None:
                group_ids.discard(group_id)
                continue
            if self.partition_for(group_id) != partition:  # type: ignore[attr-defined]
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
            if self._is_unused(group):
                del self._groups[group_id]  # only aborted offsets ever named it
        if not group_ids:
            del self._txn_groups[producer_id]
        return materialised


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
