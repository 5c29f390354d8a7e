"""Group coordinator glue: feeds the pure state machine, persists, answers, ticks.

``kafkette.broker.groups.GroupCoordinatorState`` holds every group and every
committed offset without I/O. This module is what it needs around it on the
event loop:

- one ``trio.Lock`` so calls and their record appends happen in order (the
  state machine is driven from one task at a time); in a cluster the wait for
  the records' replication happens after it is released;
- ``__consumer_offsets``: records are appended to the group's partition
  before anyone is answered (persist first), and read back on start;
- tickets: JoinGroup and SyncGroup wait for a ``Reply`` that a later call
  (another member's, or a timer tick) produces. The call that produces replies
  renders every answer in one loop, in the state machine's order (the member whose
  request completed the rebalance first), into each waiter's slot; the waiting
  handlers only hand their ready answer to the connection, and the completing
  request's own answer goes out before any other waiting task runs;
- the timer task that calls ``tick`` at ``next_deadline_ms`` and the periodic
  offset expiry;
- transactions: a TxnOffsetCommit's records are appended as a transactional
  batch of the producer, and ``write_txn_marker`` (called by the transaction
  coordinator) appends the COMMIT/ABORT marker in order with every other write
  before telling the state machine (see docs/groups.md).

In a cluster (``broker.cluster``) the coordinator serves only the groups whose
``__consumer_offsets`` partition this broker leads (docs/cluster.md,
"Coordinators"): a listener on the cluster metadata loads a partition's groups
from its log when this broker becomes its leader (COORDINATOR_LOAD_IN_PROGRESS
for them meanwhile) and forgets them when it stops leading it (members waiting
in JoinGroup/SyncGroup are answered NOT_COORDINATOR); requests for groups of
other partitions get NOT_COORDINATOR, so clients find the new coordinator. Every
write is committed (the high watermark passes it) before anyone is answered: the
records are appended under the lock, the wait for their replication happens after
it is released (so one slow follower does not stall every group), and OffsetFetch
answers the last committed offsets meanwhile.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import trio

from kafkette.broker import groups
from kafkette.broker.clock import now_ms
from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.internal_topics import (
    COORDINATOR_WRITE_ERRORS,
    OFFSETS_TOPIC,
    append_uncommitted,
    create_if_missing,
    partitions_in_use,
    replay_batches,
)
from kafkette.broker.partitions import Partition
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.broker.topics import TopicError
from kafkette.broker.transactions.markers import append_marker
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    parse_control_record,
)

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.groups import (
        GroupCoordinatorState,
        JoinResponse,
        OffsetsRecord,
        Outcome,
        SyncResponse,
    )
    from kafkette.broker.groups.model import LoadedRecord
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.groups")


def offsets_topic_configs(config: GroupConfig) -> dict[str, str]:
    """``__consumer_offsets`` is compacted, as in Kafka: the latest commit per group and
    partition stays, older ones (and the tombstones of expired offsets and groups) go."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.offsets_topic_segment_bytes),
        "compression.type": "producer",
    }


# The three records below are plain classes, not dataclasses: every dataclass made at
# import costs a start ~1 ms (issue 30), and these need neither equality nor a repr.


class _Ownership:
    """Cluster mode: an offsets partition this broker leads (``token`` tells one
    leadership from the next; ``loaded`` once its groups are in memory)."""

    __slots__ = ("loaded", "token")

    def __init__(self, token: int, loaded: bool = False) -> None:
        self.token = token
        self.loaded = loaded


class _Waiter:
    """A JoinGroup/SyncGroup waiting for its answer: ``render`` turns the state
    machine's reply into the response body; ``answer`` is the slot it fills."""

    __slots__ = ("answer", "done", "render")

    def __init__(self, render: Callable[[JoinResponse | SyncResponse], dict]) -> None:
        self.render = render
        self.done = trio.Event()
        self.answer: dict | None = None


class _Commit:
    """Cluster mode: a batch appended to offsets partition ``index``; ``wait(timeout_s)``
    answers once the high watermark passed it (``append_uncommitted``)."""

    __slots__ = ("index", "wait")

    def __init__(self, index: int, wait: Callable[[float], Awaitable[ErrorCode]]) -> None:
        self.index = index
        self.wait = wait


class CoordinatorUnavailable(Exception):
    """A group request that cannot be served; its handler answers ``code``.

    Kafka's group coordinator maps a failed write of group metadata or
    offsets (``appendGroupMetadataErrorToResponseError``): a missing
    ``__consumer_offsets`` partition gives COORDINATOR_NOT_AVAILABLE, a
    storage error (KAFKA_STORAGE_ERROR: full disk, I/O error) NOT_COORDINATOR,
    after which clients look the coordinator up again and retry.
    """

    def __init__(self, message: str, code: ErrorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE):
        super().__init__(message)
        self.code = code


class ProducerRejected(Exception):
    """A TxnOffsetCommit refused before anything is written: the offsets partition's
    producer state judged the producer's epoch (INVALID_PRODUCER_EPOCH...)."""

    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


class GroupCoordinator:
    """The broker's group coordinator: of every group on a single node, of the groups
    of the offsets partitions this broker leads in a cluster."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config.groups
        self._state: GroupCoordinatorState | None = None
        self._lock = trio.Lock()
        self._waiters: dict[object, _Waiter] = {}
        self._rearm = trio.Event()
        # Cluster mode: the offsets partitions this broker leads. None on a single node,
        # which coordinates every group.
        self._owned: dict[int, _Ownership] | None = None
        self._tokens = 0
        self._nursery: trio.Nursery | None = None

    # Start-up ----------------------------------------------------------------

    async def load(self) -> None:
        """Rebuild the state from ``__consumer_offsets``, if it exists yet.

        The topic is created on the first write (as Kafka creates it on first
        use), so a fresh broker starts without making 50 partitions. In a cluster
        nothing is loaded here: partitions load as this broker comes to lead them.
        """
        if self.broker.cluster is not None:
            return
        in_use = partitions_in_use(
            self.broker.topics, OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
            "offsets.topic.num.partitions",
        )
        if in_use is None:
            return
        self.config = replace(self.config, offsets_topic_num_partitions=in_use)
        existing = self.broker.topics.metadata(OFFSETS_TOPIC)
        assert existing is not None
        if existing.configs.get("cleanup.policy") != "compact":
            # Made by a kafkette that did not compact it yet (retention.ms=-1): compact it now.
            await self.broker.topics.set_configs(
                OFFSETS_TOPIC, offsets_topic_configs(self.config), validate_only=False
            )
        partitions = self.broker.topics.partitions(OFFSETS_TOPIC)
        records = await trio.to_thread.run_sync(_read_all_records, partitions)
        self.state.load(records, now_ms())
        log.info("loaded %d records from %s", len(records), OFFSETS_TOPIC)
        pending = self.state.offsets.pending_offset_count()
        if pending:
            log.info("%d transactional offsets wait for their transaction's marker", pending)

    @property
    def state(self) -> GroupCoordinatorState:
        """The state machine, built (and its modules imported) on first use."""
        if self._state is None:
            self._state = groups.GroupCoordinatorState(self.config)
            if self.broker.cluster is not None:
                self._state.offsets.track_unconfirmed()
                self._state.coordinators_move = True
        return self._state

    async def _offsets_partition(self, index: int) -> Partition:
        topics = self.broker.topics
        try:
            await create_if_missing(
                topics, OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
                offsets_topic_configs(self.config),
            )
        except TopicError as exc:
            raise CoordinatorUnavailable(exc.message) from exc
        partition = topics.partition(OFFSETS_TOPIC, index)
        if partition is None:
            raise CoordinatorUnavailable(f"{OFFSETS_TOPIC}-{index} does not exist")
        return partition

    async def start(self, nursery: trio.Nursery) -> None:
        nursery.start_soon(self._timer)
        nursery.start_soon(self._expire_offsets_periodically)
        cluster = self.broker.cluster
        if cluster is not None:
            self._owned = {}
            self._nursery = nursery
            cluster.add_listener(self._on_metadata)
            await self._on_metadata(cluster.metadata)

    # Cluster mode: groups move with leadership -----------------------------------

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE if this broker coordinates ``group_id`` now; NOT_COORDINATOR if another
        broker leads its offsets partition, COORDINATOR_LOAD_IN_PROGRESS while its
        groups load. Always NONE on a single node."""
        if self._owned is None:
            return ErrorCode.NONE
        owned = self._owned.get(self.state.partition_for(group_id))
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE if owned.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    @property
    def loading(self) -> bool:
        """Cluster mode: some offsets partition this broker leads is still loading."""
        return self._owned is not None and not all(o.loaded for o in self._owned.values())

    def _check_group(self, group_id: str | None) -> None:
        if group_id is not None:
            error = self.coordinator_error(group_id)
            if error != ErrorCode.NONE:
                raise CoordinatorUnavailable(error.name, error)

    def _led_offsets_partitions(self, metadata: ClusterMetadata) -> set[int]:
        """The offsets partitions whose leader this broker is, in ``metadata`` and for
        the replica manager (which took the role before this listener runs)."""
        topic = metadata.topics.get(OFFSETS_TOPIC)
        topics = self.broker.topics
        cluster = self.broker.cluster
        if topic is None or not topics.leadership_moves or cluster is None:
            return set()
        me = cluster.broker_id
        led = set()
        for index in topic.replicas:
            state = metadata.states.get((OFFSETS_TOPIC, index))
            if state is None or state.leader != me:
                continue
            if isinstance(topics.serving(OFFSETS_TOPIC, index), Partition):
                led.add(index)
        return led

    async def _on_metadata(self, metadata: ClusterMetadata) -> None:
        """Load the offsets partitions this broker now leads, unload those it lost
        (Kafka's onElection / onResignation of the group coordinator)."""
        if self._owned is None:
            return
        topic = metadata.topics.get(OFFSETS_TOPIC)
        if topic is not None and len(topic.replicas) != self.config.offsets_topic_num_partitions:
            # The partition count is the topic's, whatever offsets.topic.num.partitions says.
            self.config = replace(self.config, offsets_topic_num_partitions=len(topic.replicas))
            self.state.config = self.config
        led = self._led_offsets_partitions(metadata)
        for index in [i for i in self._owned if i not in led]:
            del self._owned[index]
            replies = self.state.unload_partition(index, ErrorCode.NOT_COORDINATOR)
            self._deliver(groups.Outcome(None, replies))
            log.info("unloaded the groups of %s: no longer its leader", partition_name(index))
        for index in sorted(led - self._owned.keys()):
            self._tokens += 1
            self._owned[index] = _Ownership(self._tokens)
            assert self._nursery is not None
            try:
                self._nursery.start_soon(self._load_partition, index, self._tokens)
            except RuntimeError:  # the broker is stopping: it serves no request any more
                return
        self._rearm.set()

    async def _load_partition(self, index: int, token: int) -> None:
        """Read the partition's records (no write goes to it while it loads: its groups
        are answered COORDINATOR_LOAD_IN_PROGRESS), then install them under the lock."""
        started = trio.current_time()
        partition = self.broker.topics.partition(OFFSETS_TOPIC, index)
        try:
            records = (
                [] if partition is None
                else await trio.to_thread.run_sync(_read_all_records, [partition])
            )
        except Exception as exc:  # a failed disk: its groups stay unavailable
            storage_errors.failure("loading groups from", partition_name(index), exc)
            return
        async with self._lock:
            assert self._owned is not None
            owned = self._owned.get(index)
            if owned is None or owned.token != token:
                return  # lost (or lost and regained: that load is the one) meanwhile
            replies = self.state.load_partition(
                index, records, now_ms(), ErrorCode.NOT_COORDINATOR
            )
            self._deliver(groups.Outcome(None, replies))
            owned.loaded = True
            self._rearm.set()
        log.info(
            "loaded %d groups from %d records of %s in %.3fs",
            len(self.state.groups_on_partition(index)), len(records), partition_name(index),
            trio.current_time() - started,
        )

    # Driving the state machine -------------------------------------------------

    async def run(self, call: object, group_id: str | None = None) -> Outcome:
        """Run ``call(state, now_ms)`` under the lock; persist, then deliver replies.

        Raises CoordinatorUnavailable if the records could not be written, or (with
        ``group_id``, in a cluster) if this broker does not coordinate that group now.
        """
        async with self._lock:
            self._check_group(group_id)
            outcome, commits = await self._run_locked(call)
        return await self._await_commits(outcome, commits)

    async def run_transactional(
        self, call: object, *, group_id: str, producer_id: int, producer_epoch: int,
        verify: Callable[[int], ErrorCode],
    ) -> Outcome:
        """``run`` for a TxnOffsetCommit of ``producer_id``/``producer_epoch`` in ``group_id``.

        Under this coordinator's lock, before the state machine sees it: the
        transaction coordinator's verification of the offsets partition
        (``verify(partition index)``; under the lock, so a marker written by
        ``write_txn_marker`` is either before the check or after the commit,
        never between them), then the partition's judgement of the producer's epoch
        (``check_producer_epoch``: one older than the partition has seen is
        INVALID_PRODUCER_EPOCH), so a refused
        commit changes nothing. Raises ProducerRejected then, or
        CoordinatorUnavailable as ``run``.
        """
        async with self._lock:
            self._check_group(group_id)
            index = self.state.partition_for(group_id)
            error = verify(index)
            if error != ErrorCode.NONE:
                raise ProducerRejected(error)
            partition = await self._offsets_partition(index)
            error = partition.check_producer_epoch(producer_id, producer_epoch)
            if error != ErrorCode.NONE:
                raise ProducerRejected(error)
            outcome, commits = await self._run_locked(call)
        return await self._await_commits(outcome, commits)

    async def write_txn_marker(
        self,
        partition_index: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
    ) -> ErrorCode:
        """Write a COMMIT (``committed``) or ABORT marker of ``producer_id`` into
        ``__consumer_offsets`` partition ``partition_index``, then commit or drop that
        producer's pending offsets of every group on that partition.

        Called by the transaction coordinator for the offsets partitions of a
        transaction (instead of appending the marker itself): the marker is
        appended under this coordinator's lock, so it is in order with every
        other write to the partition, and the offsets change only once it is
        in the log. Idempotent for the offsets (a second marker finds nothing
        pending); each call appends a marker, as Kafka does when it retries.

        Answers NONE, or the error for WriteTxnMarkers: the partition's
        producer-state verdict (INVALID_PRODUCER_EPOCH for a marker older than
        the producer's epoch), KAFKA_STORAGE_ERROR when the write failed,
        UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist. With no
        ``__consumer_offsets`` at all nothing can be pending: NONE, no write.
        """
        marker_type = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        async with self._lock:
            topics = self.broker.topics
            if topics.metadata(OFFSETS_TOPIC) is None:
                return ErrorCode.NONE
            partition = topics.partition(OFFSETS_TOPIC, partition_index)
            if partition is None:
                if self._owned is not None and topics.has_partition(OFFSETS_TOPIC, partition_index):
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER  # no replica here (cluster mode)
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if self._owned is not None:
                owned = self._owned.get(partition_index)
                if owned is None:
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER
                if not owned.loaded:  # its load would miss a marker written now: retried
                    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            now = now_ms()
            try:
                verdict = await append_marker(
                    partition,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    coordinator_epoch=coordinator_epoch,
                    committed=committed,
                    timestamp=now,
                    timeout_s=self.config.offsets_commit_timeout_ms / 1000,
                )
            except Exception as exc:
                where = partition_name(partition_index)
                storage_errors.failure("writing a transaction marker to", where, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
            if verdict != ErrorCode.NONE:
                return verdict
            outcome = self.state.offsets.complete_transaction(
                partition=partition_index, producer_id=producer_id, committed=committed
            )
            log.debug(
                "%s marker of producer %d in %s: %d offsets committed",
                marker_type.name,
                producer_id,
                partition_name(partition_index),
                outcome.result,
            )
            self._rearm.set()
        return ErrorCode.NONE

    async def _run_locked(self, call: object) -> tuple[Outcome, list[_Commit]]:
        """``run``'s body; the caller holds the lock. Applies the call and appends its
        records (so the log's order is the state machine's). On a single node, or
        with nothing to wait for, the replies are delivered here, as the write is
        done; in a cluster the caller releases the lock, then ``_await_commits``."""
        outcome: Outcome = call(self.state, now_ms())  # type: ignore[operator]
        try:
            commits = await self._persist(outcome.records)
        except Exception as exc:
            self.state.offsets.settle_unconfirmed(outcome.records)
            failure = exc if isinstance(exc, CoordinatorUnavailable) else None
            if failure is None:  # a bug of ours: still answer, revert, and say so
                storage_errors.failure("writing to", OFFSETS_TOPIC, exc)
                failure = CoordinatorUnavailable(str(exc), ErrorCode.NOT_COORDINATOR)
            await self._revert(outcome, failure.code)
            self._rearm.set()
            if failure is exc:
                raise
            raise failure from exc
        if commits:
            return outcome, commits
        self.state.offsets.settle_unconfirmed(outcome.records)
        self._deliver(outcome)
        self._rearm.set()
        return outcome, commits

    async def _await_commits(self, outcome: Outcome, commits: list[_Commit]) -> Outcome:
        """Cluster mode, without the lock: wait until the high watermark passes each
        appended batch (at most ``offsets.commit.timeout.ms`` each), then answer. So a
        follower slow to fetch (or dead but still in the ISR) holds only the requests
        whose records wait for it, not every group of this broker. Meanwhile the state
        already shows the call's changes to later calls (their records come after these
        in the log), but OffsetFetch still answers the committed offsets. A write that
        does not commit is reverted under the lock, as a failed append is."""
        if not commits:
            return outcome
        failure: CoordinatorUnavailable | None = None
        try:
            for commit in commits:
                error = await commit.wait(self.config.offsets_commit_timeout_ms / 1000)
                if error != ErrorCode.NONE:
                    log.info(
                        "write to %s not committed: %s", partition_name(commit.index), error.name
                    )
                    failure = CoordinatorUnavailable(
                        error.name,
                        COORDINATOR_WRITE_ERRORS.get(error, ErrorCode.UNKNOWN_SERVER_ERROR),
                    )
                    break
        finally:
            if failure is None:
                self.state.offsets.settle_unconfirmed(outcome.records)
        if failure is None:
            self._deliver(outcome)
            self._rearm.set()
            return outcome
        async with self._lock:
            self.state.offsets.settle_unconfirmed(outcome.records)
            await self._revert(outcome, failure.code)
            self._rearm.set()
        raise failure

    async def _revert(self, outcome: Outcome, error: int) -> None:
        """After a failed persist: make memory match ``__consumer_offsets`` again.

        The groups the records were about are reloaded from the log (some of
        the records may have been written, if they spanned partitions), and
        every reply the call produced, plus every member still waiting in
        those groups, is answered ``error`` instead: nothing that was not
        persisted is shown to anyone. (A timer tick that touched several
        groups answers all its replies so; those members rejoin.)

        Reading the group's offsets partition back costs a scan of it, paid
        only when a write fails; keeping a copy of every persisted record in
        memory instead would double the coordinator's memory for good.
        """
        group_ids = {groups.record_group_id(r.key) for r in outcome.records} - {None}
        replies = [
            groups.Reply(r.ticket, _error_like(r.response, error)) for r in outcome.replies
        ]
        if self._owned is not None:
            # Groups of a partition this broker no longer leads are not reloaded: the
            # unload dropped them, and their new coordinator has them.
            state = self.state
            gone = {g for g in group_ids if state.partition_for(g) not in self._owned}  # type: ignore[arg-type]
            for index in {state.partition_for(g) for g in gone}:  # type: ignore[arg-type]
                replies += state.unload_partition(index, error)
            group_ids -= gone
        if group_ids:
            state = self.state
            wanted = sorted({state.partition_for(g) for g in group_ids})  # type: ignore[arg-type]
            partitions = [
                p
                for p in (self.broker.topics.partition(OFFSETS_TOPIC, i) for i in wanted)
                if p is not None
            ]
            try:
                on_disk = await trio.to_thread.run_sync(_read_all_records, partitions)
            except Exception as exc:
                # Cannot read back what is on disk: keep memory as it is; the
                # caller still fails, and a restart reloads from the log.
                storage_errors.failure("reloading groups from", OFFSETS_TOPIC, exc)
            else:
                replies += state.reload_groups(group_ids, on_disk, now_ms(), error)  # type: ignore[arg-type]
        self._deliver(groups.Outcome(None, replies))

    async def wait_for_reply(
        self,
        call: object,
        render: Callable[[JoinResponse | SyncResponse], dict],
        group_id: str | None = None,
    ) -> dict:
        """For JoinGroup/SyncGroup: run ``call(state, now_ms, ticket)`` and wait for its
        reply, answered as ``render(reply)`` (``group_id``: as ``run``).

        When this call itself produced the reply (it completed a rebalance, say) the
        answer is returned without another checkpoint: the connection writes it
        before the other members' tasks, woken by the same call, run."""
        ticket = object()
        waiter = _Waiter(render)
        self._waiters[ticket] = waiter
        try:
            await self.run(lambda state, now: call(state, now, ticket), group_id)  # type: ignore[operator]
            if not waiter.done.is_set():
                await waiter.done.wait()
        finally:
            self._waiters.pop(ticket, None)
        if waiter.answer is None:
            raise CoordinatorUnavailable("the broker is shutting down")
        return waiter.answer

    def release_waiters(self) -> None:
        """Shutdown: answer every waiting JoinGroup/SyncGroup (they will retry elsewhere)."""
        for waiter in self._waiters.values():
            waiter.done.set()

    def _deliver(self, outcome: Outcome) -> None:
        """Every reply of one call answered in one pass, in the state machine's order."""
        for reply in outcome.replies:
            waiter = self._waiters.get(reply.ticket)
            if waiter is not None:  # None: that client went away
                waiter.answer = waiter.render(reply.response)
                waiter.done.set()

    async def _persist(self, records: list[OffsetsRecord]) -> list[_Commit]:
        """One batch per partition and producer: a TxnOffsetCommit's records are a
        transactional batch of the producer (base sequence -1: the log opens or
        extends the producer's transaction without sequence bookkeeping).

        Appends only; answers the waits for their replication (none on a single node,
        where the append is the whole write)."""
        commits: list[_Commit] = []
        if not records:
            return commits
        by_batch: dict[tuple[int, int, int], list[Record]] = {}
        for record in records:
            batch_key = (record.partition, record.producer_id, record.producer_epoch)
            batch_records = by_batch.setdefault(batch_key, [])
            batch_records.append(Record(len(batch_records), 0, record.key, record.value))
        for (index, producer_id, producer_epoch), batch_records in sorted(by_batch.items()):
            partition = await self._offsets_partition(index)
            batch = bytearray(
                build_batch(
                    batch_records,
                    partition_leader_epoch=0,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transactional=producer_id >= 0,
                )
            )
            try:
                # In a cluster the wait for the followers (acks=-1, at most
                # offsets.commit.timeout.ms) is _await_commits', without the lock.
                error, commit = await append_uncommitted(partition, batch)
            except Exception as exc:  # KAFKA_STORAGE_ERROR, which Kafka answers NOT_COORDINATOR
                storage_errors.failure("writing to", f"{OFFSETS_TOPIC}-{index}", exc)
                message = describe_error(exc)
                raise CoordinatorUnavailable(message, ErrorCode.NOT_COORDINATOR) from exc
            if error != ErrorCode.NONE:  # cluster mode: not appended
                log.info("write to %s not committed: %s", partition_name(index), error.name)
                raise CoordinatorUnavailable(
                    error.name, COORDINATOR_WRITE_ERRORS.get(error, ErrorCode.UNKNOWN_SERVER_ERROR)
                )
            if commit is not None:
                commits.append(_Commit(index, commit))
        return commits

    # Timers -------------------------------------------------------------------

    async def _timer(self) -> None:
        while True:
            # No state yet means no group and no deadline; run() builds it and rearms us.
            deadline = None if self._state is None else self._state.next_deadline_ms()
            self._rearm = trio.Event()
            delay = math.inf if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            with trio.move_on_after(delay):
                await self._rearm.wait()
                continue
            try:
                await self.run(lambda state, now: state.tick(now))
            except CoordinatorUnavailable:
                await trio.sleep(1)

    async def _expire_offsets_periodically(self) -> None:
        interval = max(1.0, self.config.offsets_retention_check_interval_ms / 1000)
        while True:
            await trio.sleep(interval)
            try:
                outcome = await self.run(lambda state, now: state.expire_offsets(now))
            except CoordinatorUnavailable:
                continue
            if outcome.result:
                log.info("expired %d committed offsets", outcome.result)


def _error_like(response: JoinResponse | SyncResponse, error: int) -> JoinResponse | SyncResponse:
    """``error`` in the shape of ``response`` (a JoinGroup or a SyncGroup answer)."""
    if isinstance(response, groups.JoinResponse):
        return groups.JoinResponse(error, member_id=response.member_id)
    return groups.SyncResponse(error)


def partition_name(index: int) -> str:
    return f"{OFFSETS_TOPIC}-{index}"


def _read_all_records(partitions: list[Partition]) -> list[LoadedRecord]:
    """Worker thread: every record of ``__consumer_offsets``, partition by partition,
    in log order: ``(key, value)``, a ``TransactionalRecord`` (from a TxnOffsetCommit's
    transactional batch) or a ``TxnMarker`` (a COMMIT/ABORT control batch)."""
    from kafkette.broker.groups import TransactionalRecord, TxnMarker

    records: list[LoadedRecord] = []
    for partition in partitions:
        for header, batch_records in replay_batches(partition):
            if header.is_control:
                for record in batch_records:
                    kind, _epoch = parse_control_record(record)
                    if kind in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                        committed = kind == ControlRecordType.COMMIT
                        records.append(TxnMarker(partition.index, header.producer_id, committed))
                continue
            transactional = header.is_transactional and header.producer_id >= 0
            for record in batch_records:
                if record.key is None:
                    continue
                if transactional:
                    records.append(
                        TransactionalRecord(header.producer_id, record.key, record.value)
                    )
                else:
                    records.append((record.key, record.value))
    return records
