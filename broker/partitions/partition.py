"""One partition as the broker sees it: the one door to its data and its role.

The log itself is synchronous and lives in worker threads. Here is what the
event loop needs around it: a ``trio.Lock`` that keeps every change of the
log in order (produce appends and the idempotence check that precedes them,
the broker's own batches, a follower's appends and truncations, DeleteRecords,
role changes), and the long-polling fetches to wake when data arrives. Nothing
outside this package takes that lock or appends to a log: they call the
methods here (produce's multi-partition append is ``append.py``, a follower's
copy of its leader ``follower.py``). Reads take no lock (the log publishes an
append only once its bytes are in place): the read methods here forward to the
log and nothing more, one call per partition on Fetch's hot path. The producer
table belongs to the log (it is snapshotted and rebuilt with it). The rest of the
broker asks here too, never the log: the replica manager and fetcher (HW, epochs),
the console's state view (summaries, reads), the periodic log jobs
(``housekeeping``); only the log cleaner is handed the logs themselves.

The leader/follower role is reachable from here too, single node and cluster
alike: on a single node (``replica_manager`` None) this broker leads every
partition, acks=all has nothing to wait for and the HW is the log end offset;
in a cluster the replica manager answers (``broker/cluster/replica_manager.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, TypeVar

import trio

from kafkette.broker.partitions.follower import FollowerCopy, copy_from_leader
from kafkette.broker.partitions.offset_lookup import first_offset_since, offset_for_timestamp
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header

if TYPE_CHECKING:
    from kafkette.broker.cluster.replica_manager import ReplicaManager
    from kafkette.log import PartitionLog
    from kafkette.log.file_region import ReadInfo
    from kafkette.log.partition_log import AppendInfo
    from kafkette.log.producer_state import ProducerEntry
    from kafkette.wire.record_batch import BatchHeader

LEADER_EPOCH = 0  # one node, never re-elected: every batch carries epoch 0 (single-node mode)

T = TypeVar("T")


class Partition:
    """A topic partition served by this broker. Not thread-safe: event loop only."""

    __slots__ = (
        "_append_lock",
        "_hw_waiters",
        "_waiters",
        "bytes_in",
        "bytes_out",
        "index",
        "leader_epoch",
        "leader_epoch_start_offset",
        "log",
        "on_append",
        "records_in",
        "records_out",
        "refused_batches",
        "replica_manager",
        "topic",
    )

    def __init__(self, topic: str, index: int, log: PartitionLog) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        # The epoch this broker knows for the partition: stamped into appended batches
        # (by the log) and checked against requests' current_leader_epoch. Always 0 on a
        # single node; in cluster mode the replica manager sets it from ZooKeeper's state.
        self.leader_epoch = LEADER_EPOCH
        # Cluster mode: the replica manager that gives this partition its role (set the
        # first time it sees the partition, with the log's explicit HW). None on a
        # single node, where this broker leads every partition it has.
        self.replica_manager: ReplicaManager | None = None
        # Cluster mode, while this broker leads the partition: the replica manager's
        # hook that moves the high watermark after any append (produce, coordinators,
        # markers). None on a single node, where the HW is the log end offset.
        self.on_append: Callable[[Partition], None] | None = None
        # Cluster mode, while this broker leads: its log end offset when its leader epoch
        # began (Kafka's leaderEpochStartOffset). Until the HW reaches it, the HW this
        # broker inherited as a follower may be behind what was committed before.
        self.leader_epoch_start_offset: int | None = None
        self._append_lock = trio.Lock()
        # Producer id -> (epoch, sequence, error) of its last batch refused before the
        # append, until its next append (sequence_gaps.py).
        self.refused_batches: dict[int, tuple[int, int, ErrorCode]] = {}
        # Traffic since this broker opened the partition (Kafka's BrokerTopicMetrics, per
        # partition here): plain ints bumped once per partition per request by the
        # produce append and the fetch handler, read at scrape time by metrics and the
        # console. In: batches appended from Produce (duplicates excluded). Out: what
        # consumers' Fetches returned (followers' fetches excluded), records as offsets.
        self.bytes_in = 0
        self.records_in = 0
        self.bytes_out = 0
        self.records_out = 0
        self._waiters: set[trio.Event] = set()
        self._hw_waiters: set[trio.Event] = set()

    # --- appends (the log changes only under the append lock) -------------------------

    @property
    def append_lock(self) -> trio.Lock:
        """For ``append.py`` (produce takes several partitions' locks in one order)."""
        return self._append_lock

    async def append_batch(
        self, batch: bytearray, check: Callable[[], ErrorCode] | None = None
    ) -> ErrorCode:
        """Append one batch the broker built itself (coordinators' records, markers).

        In order with produce appends (under the append lock), after ``check``
        if given (its error is returned and nothing is written), in a worker
        thread; then long-polling fetches are woken. A storage failure raises.
        """
        async with self._append_lock:
            if check is not None:
                error = check()
                if error != ErrorCode.NONE:
                    return error
            await trio.to_thread.run_sync(self._append_built, batch)
        self.notify_appended()
        return ErrorCode.NONE

    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> ErrorCode:
        """May a COMMIT/ABORT marker with these epochs be appended? (the log's producer
        table answers; an ``append_batch`` check, so asked under the append lock)."""
        return self.log.check_marker(producer_id, producer_epoch, coordinator_epoch)

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Kafka's hasOngoingTransaction: this partition holds an open transaction of the
        producer at this epoch, so the coordinator already has the partition in it (one
        dict read; a TV2 Produce skips its implicit AddPartitionsToTxn then)."""
        entry = self.log.producer_state.table.get(producer_id)
        return (
            entry is not None
            and entry.current_txn_first_offset >= 0
            and entry.epoch == producer_epoch
        )

    def check_producer_epoch(self, producer_id: int, producer_epoch: int) -> ErrorCode:
        """TxnOffsetCommit: INVALID_PRODUCER_EPOCH if this partition saw a newer epoch of
        the producer (the log's producer table answers; under the append lock)."""
        return self.log.check_producer_epoch(producer_id, producer_epoch)

    def _append_built(self, batch: bytearray) -> None:
        self.log.append(batch, [read_header(batch)], leader_epoch=self.leader_epoch)

    def append_validated(
        self, records: memoryview, header: BatchHeader, *, nonblocking: bool
    ) -> AppendInfo:
        """Worker thread (or the event loop, ``nonblocking``), append lock held by the
        caller (``append.py``): one validated produce batch into the log, stamped
        with the epoch it was checked in. Raises what ``PartitionLog.append`` raises."""
        return self.log.append(
            records, [header], leader_epoch=self.leader_epoch, nonblocking=nonblocking
        )

    async def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start to ``offset``, in order with appends;
        the new low watermark."""
        async with self._append_lock:
            return await trio.to_thread.run_sync(self.log.delete_records_before, offset)

    def housekeeping(self, retention_due: bool) -> None:
        """Worker thread, the broker's periodic log jobs: retention (when due), then the
        flush check (``log.flush.interval.ms``). Raises what the log raises."""
        if retention_due:
            self.log.apply_retention()
        self.log.maybe_flush()

    def cleaner_entry(self) -> tuple[str, int, PartitionLog]:
        """What the log cleaner works on (``LogCleanerManager.clean_one``, run by
        ``Broker._run_cleaner``): this partition's log, named. Compaction is the log's own
        job (log/cleaner.py): it reads closed segments and swaps the cleaned ones under the
        log's write lock, so appends here never wait on it."""
        return self.topic, self.index, self.log

    async def while_appends_wait(self, work: Callable[[], T]) -> T:
        """Run ``work`` in a worker thread with no append in progress or starting
        (dropping the partition's files when it is no longer a replica here)."""
        async with self._append_lock:
            return await trio.to_thread.run_sync(work)

    @property
    def closed_error(self) -> ErrorCode:
        """The answer to a request that found this partition's log closed under it: its
        topic was deleted, or (cluster) the partition moved away, after the request looked
        it up. Kafka answers an append whose partition lost its local log
        NOT_LEADER_OR_FOLLOWER and one to a partition it does not host
        UNKNOWN_TOPIC_OR_PARTITION; a single node leads everything it hosts, so there the
        second is the one the client would get a moment later anyway. Both are retriable
        and make clients refresh their metadata."""
        if self.replica_manager is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # --- reads (no lock: see the module docstring) ---------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def high_watermark_behind_epoch_start(self) -> bool:
        """A new leader whose HW has not yet reached its epoch's start offset: offsets
        below the true HW are not known yet (ListOffsets: OFFSET_NOT_AVAILABLE)."""
        start = self.leader_epoch_start_offset
        return start is not None and start > self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def size_bytes(self) -> int:
        return self.log.size_bytes

    @property
    def segment_count(self) -> int:
        return len(self.log.segment_base_offsets)

    @property
    def producer_count(self) -> int:
        """Producers the log's producer table knows (the console's summary)."""
        return len(self.log.producer_state.table)

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch recorded in the log (-1: none yet): where a follower
        starts its OffsetForLeaderEpoch questions."""
        return self.log.leader_epoch_cache.latest_epoch

    @property
    def is_closed(self) -> bool:
        """The log was closed (the partition was dropped or deleted here)."""
        return self.log.is_closed

    def read_for_fetch(
        self, offset: int, max_bytes: int, budget: int, read_committed: bool, follower: bool
    ) -> tuple[int, int, int, ReadInfo | None]:
        """Fetch's read of this partition, in one call (its hot path): (last stable
        offset, the high watermark to answer, log start offset, the read), the offsets
        taken before the data (the LSO never passes what the read sees).

        At the log end (caught up) nothing is read: the read is None and the log start
        is given. Otherwise the log start is -1 (the read has it); the read is at most
        the partition's ``max_bytes`` and what is left of the response's ``budget`` (at
        least 1: the first batch comes whole) and stops at the LSO (``read_committed``)
        or, for a consumer of a replicated partition, at the HW taken before it (a
        ``follower`` reads to the log end). On a single node the HW is the log end, and
        the answer's is the read's own.
        Raises what ``PartitionLog.read`` raises (OffsetOutOfRange, WouldBlock, ...).
        """
        log = self.log
        stable = log.last_stable_offset
        high_watermark = log.high_watermark
        if offset == log.log_end_offset:
            return stable, high_watermark, log.log_start_offset, None
        replicated = self.replica_manager is not None
        if read_committed:
            bound: int | None = stable
        else:
            bound = high_watermark if replicated and not follower else None
        info = log.read(offset, max(1, min(max_bytes, budget)), bound)
        return stable, high_watermark if replicated else info.high_watermark, -1, info

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> ReadInfo:
        """Whole batches from the one holding ``offset`` (``PartitionLog.read``), only
        those starting below ``max_offset`` if given: the coordinators' replay of their
        internal topic, the console's look at records. Worker threads only."""
        return self.log.read(offset, max_bytes, max_offset)

    def aborted_transactions(self, start_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        ``[start_offset, upper_bound)`` (a read_committed Fetch's answer)."""
        return self.log.aborted_transactions(start_offset, upper_bound)

    def offset_for_timestamp(self, timestamp: int, isolation_level: int) -> tuple[int, int]:
        """ListOffsets (``offset_lookup.py``): (timestamp, offset). Worker threads only."""
        return offset_for_timestamp(self.log, self.replicated, timestamp, isolation_level)

    def first_offset_since(self, timestamp: int) -> int:
        """The console's "from timestamp" (``offset_lookup.first_offset_since``): the
        first offset whose record is stamped at or after ``timestamp``, else the log
        end. Worker threads only."""
        return first_offset_since(self.log, timestamp)

    def producers(self) -> list[tuple[int, ProducerEntry]]:
        """DescribeProducers: (producer id, entry) of every producer the log knows, in
        producer id order (``ProducerStateTable.items``)."""
        return self.log.producer_state.table.items()

    # --- the role ---------------------------------------------------------------------

    @property
    def replicated(self) -> bool:
        """Cluster mode: the HW is explicit (followers move it), not the log end."""
        return self.replica_manager is not None

    def leads_in(self, leader_epoch: int) -> bool:
        """Still the leader in ``leader_epoch``? (asked under the append lock)."""
        replicas = self.replica_manager
        return replicas is None or replicas.is_leader(self, leader_epoch)

    def leader_tenure(self) -> int | None:
        """The leadership tenure now (``ReplicaManager.leader_tenure``); 0 on a single
        node, None if this broker does not lead the partition."""
        replicas = self.replica_manager
        return 0 if replicas is None else replicas.leader_tenure(self)

    def check_min_isr(self) -> ErrorCode:
        """acks=all: NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas."""
        replicas = self.replica_manager
        return ErrorCode.NONE if replicas is None else replicas.check_min_isr(self)

    def min_insync_replicas(self) -> int:
        replicas = self.replica_manager
        return 1 if replicas is None else replicas.min_insync_replicas(self.topic)

    async def wait_for_acks(
        self, last_offset: int, timeout_s: float, tenure: int | None
    ) -> ErrorCode:
        """acks=all: hold the answer until the HW passes ``last_offset``
        (``ReplicaManager.wait_for_acks``); at once on a single node."""
        replicas = self.replica_manager
        if replicas is None:
            return ErrorCode.NONE
        return await replicas.wait_for_acks(self, last_offset, timeout_s, tenure)

    def start_replication(self, replica_manager: ReplicaManager, high_watermark: int) -> None:
        """Cluster mode, the first time ``replica_manager`` sees this partition: the HW
        becomes explicit, starting at ``high_watermark`` (the checkpoint, clamped to the
        log), and the role is the manager's from now on."""
        self.log.enable_replication(high_watermark)
        self.replica_manager = replica_manager

    def set_high_watermark(self, offset: int) -> None:
        """Cluster mode: the leader's replica manager moves the HW (clamped to the log,
        ``PartitionLog.set_high_watermark``)."""
        self.log.set_high_watermark(offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset). In a cluster from the leader-epoch
        cache (Kafka's ``LeaderEpochFileCache.endOffsetFor``), what followers truncate
        by; on a single node, in epoch 0 for ever, the log end for any epoch a client
        can hold, (-1, -1) for none."""
        if self.replica_manager is not None:
            return self.log.end_offset_for_epoch(leader_epoch)
        if leader_epoch >= LEADER_EPOCH:
            return LEADER_EPOCH, self.log.log_end_offset
        return -1, -1

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        """A follower's Fetch at ``fetch_offset``: its LEO, the HW and the ISR move.
        Past the log end the read answers OFFSET_OUT_OF_RANGE: as Kafka, only a fetch
        that can succeed updates the follower's state (else it would count as caught up)."""
        replicas = self.replica_manager
        if replicas is not None and fetch_offset <= self.log.log_end_offset:
            replicas.record_follower_fetch(self, replica_id, fetch_offset)

    async def become_leader(self, leader_epoch: int, install: Callable[[], T]) -> T:
        """Lead from ``leader_epoch``: the epoch is recorded at the log end (if newer
        than the log's latest), then ``install`` (the replica manager's leader state)
        runs, all with no append in between; its result is returned."""
        async with self._append_lock:
            self.leader_epoch = leader_epoch
            self.refused_batches.clear()  # sequence_gaps: an earlier tenure's refusals
            if leader_epoch > self.latest_epoch:
                await trio.to_thread.run_sync(self.log.assign_leader_epoch, leader_epoch)
            self.leader_epoch_start_offset = self.log.log_end_offset
            return install()

    async def become_follower(self, leader_epoch: int) -> None:
        """Follow in ``leader_epoch``: no produce append straddles the change."""
        async with self._append_lock:
            self.leader_epoch = leader_epoch
            self.leader_epoch_start_offset = None
            self.refused_batches.clear()

    # --- a follower's log (the replica fetcher) -----------------------------------------

    def own_end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """A follower's own side of the truncation (KIP-279): (epoch, end offset) from
        the log's leader-epoch cache, whatever the role (``end_offset_for_epoch`` is
        the answer to OffsetForLeaderEpoch requests, single node included)."""
        return self.log.end_offset_for_epoch(leader_epoch)

    async def truncate_to(self, offset: int, still_wanted: Callable[[], bool]) -> int | None:
        """Cut the log at ``offset`` (also at or past the LEO: an epoch entry at the log
        end goes, see ``PartitionLog.truncate_to``) unless ``still_wanted()`` says no
        once appends are held off. The log end offset before the cut; None if skipped."""
        async with self._append_lock:
            if not still_wanted():
                return None
            leo = self.log.log_end_offset
            await trio.to_thread.run_sync(self.log.truncate_to, max(offset, 0))
            return leo

    async def restart_at(
        self, offset: int, fetched_at: int, still_wanted: Callable[[], bool]
    ) -> bool:
        """Kafka's ``truncateFullyAndStartAt``: empty the log, starting at ``offset``,
        if it still ends at ``fetched_at`` and ``still_wanted()``; True if done."""
        async with self._append_lock:
            if not still_wanted() or self.log.log_end_offset != fetched_at:
                return False
            await trio.to_thread.run_sync(self.log.truncate_fully_and_start_at, offset)
            return True

    async def follow(
        self,
        fetched_at: int,
        still_wanted: Callable[[], bool],
        records: memoryview | bytes,
        leader_high_watermark: int,
        leader_log_start: int,
    ) -> FollowerCopy | None:
        """Apply a leader's Fetch answer (``follower.copy_from_leader``) if the log
        still ends at ``fetched_at`` and ``still_wanted()``, with appends held off;
        None otherwise (nothing done: the next fetch asks again). The caller wakes
        long-polling fetches if something was appended."""
        async with self._append_lock:
            if not still_wanted() or self.log.log_end_offset != fetched_at:
                return None
            return await copy_from_leader(
                self.log, records, leader_high_watermark, leader_log_start
            )

    # --- waiters ------------------------------------------------------------------------

    def add_waiter(self, event: trio.Event, follower: bool = False) -> None:
        """Have ``event`` set at the next append (Fetch long-poll) and, unless it is a
        ``follower``'s (which reads to the log end), also when the HW moves: a consumer
        of a replicated partition reads below it (on a single node nothing else moves
        the HW, so the append's wake-up is the one that comes)."""
        (self._waiters if follower else self._hw_waiters).add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        self._waiters.discard(event)
        self._hw_waiters.discard(event)

    def notify_appended(self) -> None:
        if self.on_append is not None:
            self.on_append(self)
        waiters, self._waiters = self._waiters, set()
        for event in waiters:
            event.set()
        if self._hw_waiters:
            self.notify_high_watermark()

    def notify_high_watermark(self) -> None:
        """Cluster mode: the HW moved, so consumers long-polling below it may read on."""
        waiters, self._hw_waiters = self._hw_waiters, set()
        for event in waiters:
            event.set()


async def while_appends_wait_all(partitions: Iterable[Partition], work: Callable[[], T]) -> T:
    """``Partition.while_appends_wait`` for several partitions at once (deleting a topic):
    their append locks taken in index order, as Produce takes them (append.py), so an
    append in flight finishes first and one queued behind finds the log closed."""
    async with AsyncExitStack() as held:
        for partition in sorted(partitions, key=lambda p: (p.topic, p.index)):
            await held.enter_async_context(partition.append_lock)
        return await trio.to_thread.run_sync(work)
