"""The transaction coordinator on the event loop: decide, persist, install, write markers.

Every request is decided synchronously from memory (``state.py`` rules), so
no two decisions about one transactional id interleave. A decision that
changes state marks the id *pending* (with the state it moves to), appends
the new ``TransactionLogValue`` to the id's ``__transaction_state`` partition
(persist first, as the group coordinator does) and only then installs it in
memory and answers. While an id is pending, other requests for it get
CONCURRENT_TRANSACTIONS, which clients retry: Kafka's pendingState rule. No
lock is held across the write, so different ids proceed in parallel; writes
to one partition are ordered by its append lock.

Ending a transaction: PrepareCommit/PrepareAbort is persisted, the client
is answered, then a background task writes the markers to every partition of
the transaction (``markers.py``) and persists CompleteCommit/CompleteAbort.
Requests for that id meanwhile get CONCURRENT_TRANSACTIONS. With transaction
version 2 (EndTxn v5, and the coordinator's own aborts since kafkette finalizes
it) the Prepare state carries the epoch + 1, which the markers carry and the
answer gives back (or, the epoch exhausted, the next producer id at epoch 0, taken
at completion); TV2 clients send no AddPartitionsToTxn: ``add_partitions_for_write``
is the partition leader's add for their Produce 12+ and TxnOffsetCommit 5.

Start: ``load`` replays ``__transaction_state`` (last record per id wins,
tombstones forget it); ``start`` resumes the markers of every transaction
found prepared (marker writes are idempotent for readers: a second COMMIT of
a closed transaction changes nothing), leaves Ongoing ones to time out or to
be fenced by their producer's next InitProducerId, and runs the two periodic
jobs: abort of timed-out transactions and removal of expired ids.

In a cluster (docs/cluster.md, "Coordinators") a broker coordinates the ids
whose ``__transaction_state`` partition it leads: a listener on the cluster
metadata loads a partition when this broker becomes its leader (completing its
prepared transactions, as the start-up load does) and forgets its ids when it
stops leading it; requests for other ids get NOT_COORDINATOR (while loading,
COORDINATOR_LOAD_IN_PROGRESS). The coordinator epoch every marker carries is
the partition's leader epoch at the load (Kafka's coordinatorEpoch), so markers
of a stale coordinator are fenced (TRANSACTION_COORDINATOR_FENCED). Writes
answer once committed; markers for partitions led elsewhere go to their leader
as WriteTxnMarkers (``remote_markers.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.features import TRANSACTION_VERSION
from kafkette.broker.groups.partitioning import java_string_hash, kafka_abs
from kafkette.broker.internal_topics import (
    COORDINATOR_WRITE_ERRORS,
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    append_committed,
    create_if_missing,
    partitions_in_use,
    replay_batches,
)
from kafkette.broker.partitions import LEADER_EPOCH
from kafkette.broker.throttled_log import ThrottledLog, describe_error, storage_errors
from kafkette.broker.topics import TopicError
from kafkette.broker.transactions.log_records import (
    BadTransactionRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkette.broker.transactions.markers import write_marker
from kafkette.broker.transactions.state import (
    MAX_EPOCH,
    NO_PRODUCER_ID,
    PREPARED,
    TV_0,
    TV_2,
    TopicPartition,
    TransactionMetadata,
    TxnState,
    new_metadata,
)
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import Record, build_batch

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker
    from kafkette.broker.transactions.remote_markers import RemoteAddPartitions, RemoteMarkers

log = logging.getLogger("kafkette.transactions")
_marker_failures = ThrottledLog(log, interval_s=10.0)

MARKER_RETRY_SECONDS = 0.5
# Cluster mode: how long a write of __transaction_state or a marker waits to be
# committed (Kafka's coordinator uses request.timeout.ms, 30000).
COMMIT_TIMEOUT_S = 30.0
# Leader epoch of __transaction_state: the coordinator epoch every marker carries.
COORDINATOR_EPOCH = LEADER_EPOCH
# Marker errors after which that partition is done (Kafka's completion handler drops
# them): the partition is gone, or the log already holds a newer epoch.
_MARKER_FINAL = frozenset(
    {
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


def transaction_state_configs(segment_bytes: int) -> dict[str, str]:
    """``__transaction_state`` as Kafka makes it: compacted, uncompressed."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(segment_bytes),
        "compression.type": "uncompressed",
    }


class _WriteFailed(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class _Ownership:
    """Cluster mode: a ``__transaction_state`` partition this broker leads, from the
    load in ``coordinator_epoch`` (``token`` tells one leadership from the next).
    A plain class, not a dataclass: each dataclass made at import costs a start ~1 ms."""

    __slots__ = ("coordinator_epoch", "loaded", "token")

    def __init__(self, token: int, coordinator_epoch: int, loaded: bool = False) -> None:
        self.token = token
        self.coordinator_epoch = coordinator_epoch
        self.loaded = loaded


@dataclass(frozen=True, slots=True)
class InitResult:
    """InitProducerId's answer: the error, else the producer id and epoch."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class EndResult:
    """EndTxn's answer: the error and, for a TV2 end that succeeded (v5 carries them),
    the producer id and epoch the client goes on with; -1 otherwise, as Kafka."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


# TV2: the partition leader's implicit AddPartitionsToTxn is retried while the coordinator
# answers CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being
# written), every add.partitions.to.txn.retry.backoff.ms (20) for at most
# add.partitions.to.txn.retry.backoff.max.ms (100), as Kafka's ReplicaManager does.
IMPLICIT_ADD_BACKOFF_S = 0.020
IMPLICIT_ADD_RETRY_S = 0.100


class TransactionCoordinator:
    """This node's transaction coordinator (a single node coordinates every id; in a
    cluster, the ids of the ``__transaction_state`` partitions it leads)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config.transactions
        self.num_partitions = self.config.transaction_state_log_num_partitions
        self._txns: dict[str, TransactionMetadata] = {}
        self._pending: dict[str, TxnState] = {}  # id -> state being written
        self._nursery: trio.Nursery | None = None
        # Cluster mode: the __transaction_state partitions this broker leads (None on a
        # single node, which coordinates every id), and the marker sender.
        self._owned: dict[int, _Ownership] | None = None
        self._tokens = 0
        self._remote: RemoteMarkers | None = None
        self._remote_adds: RemoteAddPartitions | None = None

    # Start-up ------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's rule: ``Utils.abs(transactionalId.hashCode) % partitions``."""
        return kafka_abs(java_string_hash(transactional_id)) % self.num_partitions

    async def load(self) -> None:
        """Rebuild every id's state from ``__transaction_state``, if it exists yet
        (in a cluster, partitions load as this broker comes to lead them)."""
        if self.broker.cluster is not None:
            return
        in_use = partitions_in_use(
            self.broker.topics, TRANSACTION_STATE_TOPIC, self.num_partitions,
            "transaction.state.log.num.partitions",
        )
        if in_use is None:
            return
        self.num_partitions = in_use
        partitions = self.broker.topics.partitions(TRANSACTION_STATE_TOPIC)
        records = await trio.to_thread.run_sync(_read_all_records, partitions)
        _replay(records, self._txns)
        log.info(
            "loaded %d transactional ids from %d records of %s",
            len(self._txns),
            len(records),
            TRANSACTION_STATE_TOPIC,
        )

    async def start(self, nursery: trio.Nursery) -> None:
        """Finish the transactions found prepared, start the periodic jobs."""
        self._nursery = nursery
        self._complete_prepared(list(self._txns.values()), "after restart")
        nursery.start_soon(self._abort_timed_out_periodically)
        nursery.start_soon(self._remove_expired_periodically)
        cluster = self.broker.cluster
        if cluster is not None:
            from kafkette.broker.transactions.remote_markers import (
                RemoteAddPartitions,
                RemoteMarkers,
            )

            self._owned = {}
            assert self.broker.peer_security is not None, "set in cluster mode"
            self._remote = RemoteMarkers(cluster.broker_id, self.broker.peer_security)
            self._remote_adds = RemoteAddPartitions(cluster.broker_id, self.broker.peer_security)
            cluster.add_listener(self._on_metadata)
            await self._on_metadata(cluster.metadata)

    def _complete_prepared(self, loaded: list[TransactionMetadata], when: str) -> None:
        assert self._nursery is not None
        for metadata in loaded:
            if metadata.state in PREPARED:
                log.info(
                    "completing %s of %s %s",
                    metadata.state.display_name,
                    metadata.transactional_id,
                    when,
                )
                self._pending[metadata.transactional_id] = metadata.state
                self._nursery.start_soon(self._complete, metadata)

    # Cluster mode: ids move with leadership ------------------------------------

    def coordinator_error(self, transactional_id: str) -> ErrorCode:
        """NONE if this broker coordinates ``transactional_id`` now; NOT_COORDINATOR
        if another broker leads its partition, COORDINATOR_LOAD_IN_PROGRESS while it
        loads. Always NONE on a single node."""
        if self._owned is None:
            return ErrorCode.NONE
        owned = self._owned.get(self.partition_for(transactional_id))
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE if owned.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    def _ownership(self, transactional_id: str) -> _Ownership | None:
        """The id's partition as this broker owns it now (None: not owned, or a single
        node, see ``_still_owned``)."""
        if self._owned is None:
            return None
        return self._owned.get(self.partition_for(transactional_id))

    def _still_owned(self, transactional_id: str, owned: _Ownership | None) -> bool:
        """Still the coordinator of the id in the same leadership as ``owned``?"""
        return self._owned is None or (
            owned is not None and self._ownership(transactional_id) is owned
        )

    def coordinator_epoch(self, transactional_id: str) -> int:
        owned = self._ownership(transactional_id)
        return COORDINATOR_EPOCH if owned is None else owned.coordinator_epoch

    async def _on_metadata(self, metadata: ClusterMetadata) -> None:
        """Load the partitions this broker now leads, forget those it lost (Kafka's
        onElection / onResignation of the transaction coordinator)."""
        cluster = self.broker.cluster
        topics = self.broker.topics
        if self._owned is None or cluster is None:
            return
        topic = metadata.topics.get(TRANSACTION_STATE_TOPIC)
        led: dict[int, int] = {}
        if topic is not None and topics.leadership_moves:
            self.num_partitions = len(topic.replicas)
            for index in topic.replicas:
                state = metadata.states.get((TRANSACTION_STATE_TOPIC, index))
                if state is None or state.leader != cluster.broker_id:
                    continue
                partition = topics.serving(TRANSACTION_STATE_TOPIC, index)
                if isinstance(partition, ErrorCode):
                    continue
                led[index] = partition.leader_epoch
        for index in [i for i in self._owned if i not in led]:
            del self._owned[index]
            gone = [t for t in self._txns if self.partition_for(t) == index]
            for transactional_id in gone:
                del self._txns[transactional_id]
                self._pending.pop(transactional_id, None)
            log.info(
                "unloaded %d transactional ids of %s-%d: no longer its leader",
                len(gone), TRANSACTION_STATE_TOPIC, index,
            )
        for index in sorted(led.keys() - self._owned.keys()):
            self._tokens += 1
            owned = _Ownership(self._tokens, led[index])
            self._owned[index] = owned
            assert self._nursery is not None
            try:
                self._nursery.start_soon(self._load_partition, index, owned)
            except RuntimeError:  # the broker is stopping: it serves no request any more
                return

    async def _load_partition(self, index: int, owned: _Ownership) -> None:
        """Kafka's loadTransactionsForTxnTopicPartition: replay the partition, then
        install its ids and complete the transactions found prepared."""
        partition = self.broker.topics.partition(TRANSACTION_STATE_TOPIC, index)
        try:
            records = (
                [] if partition is None
                else await trio.to_thread.run_sync(_read_all_records, [partition])
            )
        except Exception as exc:  # a failed disk: its ids stay unavailable
            storage_errors.failure("loading", f"{TRANSACTION_STATE_TOPIC}-{index}", exc)
            return
        assert self._owned is not None
        if self._owned.get(index) is not owned:
            return  # lost meanwhile
        loaded: dict[str, TransactionMetadata] = {}
        _replay(records, loaded)
        for transactional_id in [t for t in self._txns if self.partition_for(t) == index]:
            del self._txns[transactional_id]
        self._txns.update(loaded)
        owned.loaded = True
        log.info(
            "loaded %d transactional ids from %d records of %s-%d (coordinator epoch %d)",
            len(loaded), len(records), TRANSACTION_STATE_TOPIC, index, owned.coordinator_epoch,
        )
        self._complete_prepared(list(loaded.values()), "after becoming coordinator")

    async def ensure_topic(self) -> ErrorCode:
        """Create ``__transaction_state`` on first use (FindCoordinator, first write)."""
        try:
            await create_if_missing(
                self.broker.topics,
                TRANSACTION_STATE_TOPIC,
                self.num_partitions,
                transaction_state_configs(self.config.transaction_state_log_segment_bytes),
            )
        except TopicError as exc:
            log.warning("cannot create %s: %s", TRANSACTION_STATE_TOPIC, exc.message)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    # Lookups (admin, produce verification) --------------------------------

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def all(self) -> list[TransactionMetadata]:
        return list(self._txns.values())

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
        partition: int,
    ) -> ErrorCode:
        """May this producer write a transactional batch to this partition now?

        Kafka 4.0's partition verification (KIP-890 part 1) as the coordinator
        answers it: NONE only for the current id and epoch of an Ongoing
        transaction that added the partition; TRANSACTION_ABORTABLE for a partition
        the transaction did not add. The caller translates for its API and version
        (Produce maps CONCURRENT_TRANSACTIONS to NOT_ENOUGH_REPLICAS, PRODUCER_FENCED
        to INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE to INVALID_TXN_STATE for
        versions that predate it, as Kafka's AddPartitionsToTxnManager and
        ReplicaManager).
        Synchronous and in memory: call it from the event loop, under the
        partition's append lock so no marker slips between check and append.

        In a cluster the partition's leader is often not the id's coordinator:
        Kafka asks the coordinator (AddPartitionsToTxn, verify only); this broker
        verifies only the ids it coordinates itself and lets the others through, as
        Kafka does with ``transaction.partition.verification.enable=false``.
        """
        if self._owned is not None:
            error = self.coordinator_error(transactional_id)
            if error == ErrorCode.NOT_COORDINATOR:
                return ErrorCode.NONE
            if error != ErrorCode.NONE:
                return error
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        pending = self._pending.get(transactional_id)
        if (pending is not None and pending != TxnState.ONGOING) or metadata.state in PREPARED:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state == TxnState.ONGOING and (topic, partition) in metadata.partitions:
            return ErrorCode.NONE
        return ErrorCode.TRANSACTION_ABORTABLE

    # Requests -------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = -1,
        expected_epoch: int = -1,
    ) -> InitResult:
        """InitProducerId with a transactional id (Kafka's handleInitProducerId, v1)."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if error := self.coordinator_error(transactional_id):
            return InitResult(error)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        if transactional_id in self._pending:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        metadata = self._txns.get(transactional_id)
        now = now_ms()
        if metadata is None:
            self._pending[transactional_id] = TxnState.EMPTY
            try:
                producer_id = await self._allocate_producer_id()
                if producer_id is None:
                    return InitResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
                fresh = new_metadata(transactional_id, producer_id, timeout_ms, now)
                error = await self._write(fresh)
            finally:
                self._pending.pop(transactional_id, None)
            if error:
                return InitResult(error)
            return InitResult(ErrorCode.NONE, fresh.producer_id, fresh.producer_epoch)
        expected = expected_producer_id >= 0
        # Kafka's isValidProducerId: the current id, or the previous one only for the
        # retry of a rotation (its epoch was exhausted), never a zombie of the old id.
        if expected and not (
            expected_producer_id == metadata.producer_id
            or (
                expected_producer_id == metadata.last_producer_id
                and expected_epoch >= MAX_EPOCH - 1
            )
        ):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        state = metadata.state
        if state in PREPARED:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state == TxnState.ONGOING:
            # Fence the running producer and abort its transaction; the client retries
            # (CONCURRENT_TRANSACTIONS) and gets the next epoch once the abort completes.
            aborting = await self._fencing_abort(metadata, now)
            if aborting is None:
                return InitResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            error = await self._transition(aborting)
            if error:
                return InitResult(error)
            self._spawn_completion(aborting)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.epoch_exhausted and (not expected or expected_epoch == metadata.producer_epoch):
            self._pending[transactional_id] = TxnState.EMPTY
            try:
                producer_id = await self._allocate_producer_id()
            finally:
                self._pending.pop(transactional_id, None)
            if producer_id is None:
                return InitResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            bumped = metadata.prepare_producer_id_rotation(
                producer_id, timeout_ms, now, remember_last=expected
            )
        elif not expected or expected_epoch == metadata.producer_epoch:
            bumped = metadata.prepare_epoch_bump(timeout_ms, now, remember_last=expected)
        elif expected_epoch == metadata.last_producer_epoch:
            # A retry of the bump that produced the current epoch (KIP-360).
            return InitResult(ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)
        else:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        error = await self._transition(bumped)
        if error:
            return InitResult(error)
        return InitResult(ErrorCode.NONE, bumped.producer_id, bumped.producer_epoch)

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """The checks AddPartitionsToTxn, AddOffsetsToTxn and EndTxn share, in Kafka's order."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        if error := self.coordinator_error(transactional_id):
            return error, None
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if transactional_id in self._pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return ErrorCode.NONE, metadata

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        client_tv: int = TV_0,
    ) -> ErrorCode:
        """AddPartitionsToTxn (and AddOffsetsToTxn's offsets partition); ``client_tv`` 2
        for the brokers' form (v4+, verify_only false: a partition leader adding for a
        TV2 client's Produce or TxnOffsetCommit), 0 for a client's request.

        Kafka's order: a pending change is CONCURRENT_TRANSACTIONS before the producer is
        checked, so a TV2 client already on the new producer id of an epoch overflow
        retries while the old transaction's completion (to that id) is being written."""
        if transactional_id and not self.coordinator_error(transactional_id):
            if transactional_id in self._txns and transactional_id in self._pending:
                return ErrorCode.CONCURRENT_TRANSACTIONS
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if metadata is None:
            return error
        if metadata.state in PREPARED:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if metadata.state == TxnState.ONGOING and partitions <= metadata.partitions:
            return ErrorCode.NONE
        if metadata.state not in (
            TxnState.EMPTY,
            TxnState.ONGOING,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        ):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return await self._transition(
            metadata.prepare_add_partitions(partitions, now_ms(), client_tv)
        )

    async def add_partitions_for_write(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        *,
        retry: bool = True,
    ) -> ErrorCode:
        """TV2: a partition leader adds the partitions a transactional write (Produce 12+,
        TxnOffsetCommit 5) goes to, as Kafka's leader does through its
        AddPartitionsToTxnManager (AddPartitionsToTxn v5, verify_only false).

        Here when this broker coordinates the id (always on a single node), else
        through the coordinator's leader (``remote_markers.RemoteAddPartitions``).
        With ``retry`` (Produce, as Kafka's ReplicaManager; not TxnOffsetCommit)
        CONCURRENT_TRANSACTIONS (the previous transaction still completing) is retried
        for up to ``IMPLICIT_ADD_RETRY_S``; the answer is the coordinator's, which the
        caller translates for its API."""
        deadline = trio.current_time() + (IMPLICIT_ADD_RETRY_S if retry else 0.0)
        while True:
            error = await self._add_for_write_once(
                transactional_id, producer_id, producer_epoch, partitions
            )
            if error != ErrorCode.CONCURRENT_TRANSACTIONS:
                return error
            if trio.current_time() + IMPLICIT_ADD_BACKOFF_S > deadline:
                return error
            await trio.sleep(IMPLICIT_ADD_BACKOFF_S)

    async def _add_for_write_once(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        not_here = self.coordinator_error(transactional_id)
        if not_here != ErrorCode.NOT_COORDINATOR:
            if not_here:
                return not_here
            return await self.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, TV_2
            )
        cluster = self.broker.cluster
        assert cluster is not None and self._remote_adds is not None, "NOT_COORDINATOR: cluster"
        metadata = cluster.metadata
        index = self.partition_for(transactional_id)
        leader = metadata.brokers.get(metadata.leader_of(TRANSACTION_STATE_TOPIC, index))
        if leader is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return await self._remote_adds.add(
            leader, transactional_id, producer_id, producer_epoch, partitions,
            timeout_s=COMMIT_TIMEOUT_S + 5,
        )

    def offsets_partition_for(self, group_id: str) -> TopicPartition:
        """The ``__consumer_offsets`` partition of a group (AddOffsetsToTxn)."""
        return OFFSETS_TOPIC, self.broker.groups.state.partition_for(group_id)

    async def end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        client_tv: int = TV_0,
    ) -> EndResult:
        """EndTxn: persist PrepareCommit/PrepareAbort, answer, write markers in the background.

        ``client_tv`` 2 (EndTxn v5) follows Kafka's TV2 rules (``_end_tv2``)."""
        if client_tv >= TV_2:
            return await self._end_tv2(transactional_id, producer_id, producer_epoch, commit)
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if metadata is None:
            return EndResult(error)
        state = metadata.state
        if state == TxnState.ONGOING:
            prepared = metadata.prepare_end(commit, now_ms())
            error = await self._transition(prepared)
            if not error:
                self._spawn_completion(prepared)
            return EndResult(error)
        wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if state == wanted_complete:
            return EndResult(ErrorCode.NONE)  # a retry of an EndTxn that completed
        if state == wanted_prepare:
            return EndResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        return EndResult(ErrorCode.INVALID_TXN_STATE)

    async def _end_tv2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> EndResult:
        """EndTxn v5 (KIP-890 part 2), Kafka's endTransaction for TV2.

        Every end bumps the epoch (the answer carries the new one, or a new producer id
        at epoch 0 when the bump would exhaust the epoch). A retry is recognised by its
        epoch, one below the current (or, after a producer id change, the old id at the
        exhausted epoch). An abort is accepted with nothing added: the client cannot know
        whether its Produce requests added partitions. The table, for an idle id
        (retry = epoch one below, current = the current epoch):

        ==============  ======================  ======================
        state           abort: retry / current  commit: retry / current
        ==============  ======================  ======================
        Empty           PRODUCER_FENCED / bump  PRODUCER_FENCED / INVALID_TXN_STATE
        CompleteAbort   NONE / bump             INVALID_TXN_STATE / INVALID_TXN_STATE
        CompleteCommit  INVALID_TXN_STATE / bump NONE / INVALID_TXN_STATE
        ==============  ======================  ======================
        """
        if not transactional_id:
            return EndResult(ErrorCode.INVALID_REQUEST)
        if error := self.coordinator_error(transactional_id):
            return EndResult(error)
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            return EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if transactional_id in self._pending:
            # First, so a pending completion (maybe to a new producer id the client already
            # has) finishes before anything else is judged.
            return EndResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        state = metadata.state
        retry_on_overflow = (
            metadata.last_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and metadata.producer_epoch == 0
        )
        retry_on_bump = metadata.producer_epoch == producer_epoch + 1
        if metadata.producer_id != producer_id and not retry_on_overflow:
            return EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if state in PREPARED:
            valid = retry_on_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == metadata.producer_epoch
        else:
            valid = producer_epoch == metadata.producer_epoch
        if not valid:
            return EndResult(ErrorCode.PRODUCER_FENCED)
        retry = retry_on_bump or retry_on_overflow
        wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if state == TxnState.ONGOING:
            pass
        elif state in PREPARED:
            if state == wanted_prepare:
                return EndResult(ErrorCode.CONCURRENT_TRANSACTIONS)
            return EndResult(ErrorCode.INVALID_TXN_STATE)
        elif state == wanted_complete and retry:
            # A retry of the end that completed: answered with what the client goes on with.
            return EndResult(ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)
        elif commit or retry:
            return EndResult(ErrorCode.INVALID_TXN_STATE)
        # Ongoing, or an abort (current epoch) of an idle id.
        prepared = await self._prepare_end_tv2(metadata, commit, TV_2, now_ms())
        if prepared is None:
            return EndResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        error = await self._transition(prepared)
        if error:
            return EndResult(error)
        self._spawn_completion(prepared)
        return EndResult(ErrorCode.NONE, *prepared.answer_after_end())

    async def _prepare_end_tv2(
        self, metadata: TransactionMetadata, commit: bool, client_tv: int, now: int
    ) -> TransactionMetadata | None:
        """PrepareCommit/PrepareAbort with the TV2 epoch bump; a new producer id first
        when the epoch is exhausted (None if none could be allocated)."""
        next_producer_id = NO_PRODUCER_ID
        if metadata.epoch_exhausted:
            transactional_id = metadata.transactional_id
            self._pending[transactional_id] = TxnState.PREPARE_ABORT
            try:
                allocated = await self._allocate_producer_id()
            finally:
                self._pending.pop(transactional_id, None)
            if allocated is None:
                return None
            next_producer_id = allocated
        return metadata.prepare_end(
            commit, now, client_tv=client_tv, next_producer_id=next_producer_id
        )

    async def _fencing_abort(
        self, metadata: TransactionMetadata, now: int
    ) -> TransactionMetadata | None:
        """The abort the coordinator starts on its own (a timeout, or InitProducerId
        finding the transaction open), with the finalized transaction version, as Kafka:
        TV2 bumps the epoch once in the abort (KAFKA-19367; Kafka 4.0.0 bumped twice), a
        new producer id if that exhausts it (KAFKA-20090); before TV2 the epoch is fenced
        (+1) and the abort keeps it. None: no producer id could be allocated."""
        if TRANSACTION_VERSION >= TV_2:
            return await self._prepare_end_tv2(metadata, False, TRANSACTION_VERSION, now)
        return metadata.prepare_fence().prepare_end(False, now)

    # Persisting -----------------------------------------------------------

    async def _transition(self, new: TransactionMetadata) -> ErrorCode:
        """Persist ``new`` for its id (marked pending meanwhile), then install it."""
        transactional_id = new.transactional_id
        self._pending[transactional_id] = new.state
        try:
            return await self._write(new)
        finally:
            self._pending.pop(transactional_id, None)

    async def _write(self, new: TransactionMetadata) -> ErrorCode:
        owned = self._ownership(new.transactional_id)
        with trio.CancelScope(shield=True):  # written and installed, or neither
            try:
                await self._append(new.transactional_id, encode_value(new))
            except _WriteFailed as exc:
                return exc.code
            if not self._still_owned(new.transactional_id, owned):
                return ErrorCode.NOT_COORDINATOR  # unloaded meanwhile: the new one decides
            self._txns[new.transactional_id] = new
        return ErrorCode.NONE

    async def _append(self, transactional_id: str, value: bytes | None) -> None:
        if await self.ensure_topic():
            raise _WriteFailed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        index = self.partition_for(transactional_id)
        partition = self.broker.topics.partition(TRANSACTION_STATE_TOPIC, index)
        if partition is None:
            raise _WriteFailed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        record = Record(0, 0, encode_key(transactional_id), value)
        batch = bytearray(build_batch([record], partition_leader_epoch=LEADER_EPOCH))
        try:
            error = await append_committed(partition, batch, COMMIT_TIMEOUT_S)
        except Exception as exc:  # KAFKA_STORAGE_ERROR: Kafka answers NOT_COORDINATOR
            storage_errors.failure("writing to", f"{TRANSACTION_STATE_TOPIC}-{index}", exc)
            raise _WriteFailed(ErrorCode.NOT_COORDINATOR) from exc
        if error != ErrorCode.NONE:  # cluster mode: not committed
            log.info(
                "write to %s-%d not committed: %s", TRANSACTION_STATE_TOPIC, index, error.name
            )
            raise _WriteFailed(COORDINATOR_WRITE_ERRORS.get(error, ErrorCode.UNKNOWN_SERVER_ERROR))

    async def _allocate_producer_id(self) -> int | None:
        try:
            return await trio.to_thread.run_sync(self.broker.producer_ids.allocate)
        except OSError as exc:
            storage_errors.failure("allocating a producer id block in", "the data dir", exc)
            return None

    # Completing transactions ----------------------------------------------

    def _spawn_completion(self, prepared: TransactionMetadata) -> None:
        self._pending[prepared.transactional_id] = prepared.state
        assert self._nursery is not None, "start() runs before any request is served"
        self._nursery.start_soon(self._complete, prepared)

    async def _complete(self, prepared: TransactionMetadata) -> None:
        """Write every marker, then persist the Complete state. Retries until both succeed
        (a full disk); a shutdown meanwhile leaves the Prepare state for the next start."""
        transactional_id = prepared.transactional_id
        owned = self._ownership(transactional_id)

        def still_owned() -> bool:
            return self._still_owned(transactional_id, owned)

        try:
            await self.write_markers(
                prepared.partitions,
                producer_id=prepared.producer_id,
                producer_epoch=prepared.producer_epoch,
                committed=prepared.state == TxnState.PREPARE_COMMIT,
                coordinator_epoch=self.coordinator_epoch(transactional_id),
                still_owned=still_owned,
            )
            completed = prepared.prepare_complete(now_ms())
            while True:
                if not still_owned():  # checked before every attempt: never a stale write
                    log.info(
                        "%s of %s left to the new coordinator",
                        prepared.state.display_name, transactional_id,
                    )
                    return
                if not await self._write(completed):
                    break
                await trio.sleep(MARKER_RETRY_SECONDS)
        finally:
            if still_owned():
                self._pending.pop(transactional_id, None)
        log.debug("%s of %s", completed.state.display_name, transactional_id)

    async def write_markers(
        self,
        partitions: frozenset[TopicPartition],
        *,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int = COORDINATOR_EPOCH,
        still_owned: Callable[[], bool] = lambda: True,
    ) -> None:
        """A marker in each partition, concurrently; each retried until it is final
        (or, in a cluster, until this broker is no longer the transaction's
        coordinator: the new one completes it)."""

        async def one(topic: str, index: int) -> None:
            while still_owned():
                try:
                    error = await self._write_marker(
                        topic,
                        index,
                        producer_id=producer_id,
                        producer_epoch=producer_epoch,
                        coordinator_epoch=coordinator_epoch,
                        committed=committed,
                    )
                except Exception as exc:  # a bug or a failed group write: retry, say so
                    _marker_failures.log(
                        ("marker", topic), logging.WARNING,
                        f"transaction marker to {topic}-{index} failed: {describe_error(exc)}",
                    )
                    error = ErrorCode.UNKNOWN_SERVER_ERROR
                if error in _MARKER_FINAL:
                    if error:
                        log.info(
                            "transaction marker for producer %d dropped for %s-%d: %s",
                            producer_id, topic, index, error.name,
                        )
                    return
                await trio.sleep(MARKER_RETRY_SECONDS)

        async with trio.open_nursery() as nursery:
            for topic, index in sorted(partitions):
                nursery.start_soon(one, topic, index)

    async def _write_marker(
        self,
        topic: str,
        index: int,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
    ) -> ErrorCode:
        """Write one marker here, or (cluster mode) have the partition's leader write it."""
        cluster = self.broker.cluster
        if cluster is not None:
            metadata = cluster.metadata
            if topic not in metadata.topics:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # deleted: nothing to mark
            leader = metadata.brokers.get(metadata.leader_of(topic, index))
            if leader is None:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER  # no leader now: retried
            if leader.id != cluster.broker_id:
                assert self._remote is not None
                return await self._remote.write(
                    leader, topic, index,
                    producer_id=producer_id, producer_epoch=producer_epoch,
                    coordinator_epoch=coordinator_epoch, committed=committed,
                    timeout_s=COMMIT_TIMEOUT_S + 5,
                )
        return await write_marker(
            self.broker,
            topic,
            index,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            committed=committed,
        )

    # Periodic jobs ----------------------------------------------------------

    async def _abort_timed_out_periodically(self) -> None:
        interval = self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000
        while True:
            await trio.sleep(interval)
            await self.abort_timed_out()

    async def abort_timed_out(self) -> int:
        """Abort (fencing the producer's epoch) every Ongoing transaction past its timeout."""
        now = now_ms()
        due = [
            m for m in self._txns.values()
            if m.timed_out(now) and m.transactional_id not in self._pending
        ]
        for metadata in due:
            if self._txns.get(metadata.transactional_id) is not metadata:
                continue  # changed since the scan
            if metadata.transactional_id in self._pending:
                continue
            log.info(
                "aborting transaction of %s (producer %d): timeout of %d ms passed",
                metadata.transactional_id, metadata.producer_id, metadata.timeout_ms,
            )
            aborting = await self._fencing_abort(metadata, now)
            if aborting is None or self._txns.get(metadata.transactional_id) is not metadata:
                continue  # no producer id to move to, or changed meanwhile
            if not await self._transition(aborting):
                self._spawn_completion(aborting)
        return len(due)

    async def _remove_expired_periodically(self) -> None:
        interval = self.config.transaction_remove_expired_transaction_cleanup_interval_ms / 1000
        while True:
            await trio.sleep(interval)
            await self.remove_expired()

    async def remove_expired(self) -> int:
        """Forget ids idle for ``transactional.id.expiration.ms``: a tombstone each."""
        now = now_ms()
        expiration = self.config.transactional_id_expiration_ms
        removed = 0
        for metadata in list(self._txns.values()):
            transactional_id = metadata.transactional_id
            if not metadata.expired(now, expiration) or transactional_id in self._pending:
                continue
            if self._txns.get(transactional_id) is not metadata:
                continue
            self._pending[transactional_id] = TxnState.DEAD
            try:
                with trio.CancelScope(shield=True):
                    await self._append(transactional_id, None)
                    self._txns.pop(transactional_id, None)
                    removed += 1
            except _WriteFailed:
                continue
            finally:
                self._pending.pop(transactional_id, None)
        if removed:
            log.info("removed %d expired transactional ids", removed)
        return removed


def _replay(
    records: list[tuple[bytes, bytes | None]], into: dict[str, TransactionMetadata]
) -> None:
    """Apply ``__transaction_state`` records in log order: the last one per id wins,
    a tombstone (or Dead) forgets it."""
    for key, value in records:
        try:
            transactional_id = decode_key(key)
            metadata = None if value is None else decode_value(transactional_id, value)
            if metadata is None or metadata.state == TxnState.DEAD:
                into.pop(transactional_id, None)
            elif metadata.state == TxnState.PREPARE_EPOCH_FENCE:
                # Never written by Kafka or kafkette (in memory only); if found, the
                # transaction was open: it times out or is fenced like any Ongoing one.
                into[transactional_id] = replace(metadata, state=TxnState.ONGOING)
            else:
                into[transactional_id] = metadata
        except (BadTransactionRecord, UnicodeDecodeError) as exc:
            log.warning("skipped an unreadable %s record: %s", TRANSACTION_STATE_TOPIC, exc)


def _read_all_records(partitions: list[Partition]) -> list[tuple[bytes, bytes | None]]:
    """Worker thread: every (key, value) of ``__transaction_state``, partition by partition."""
    return [
        (record.key, record.value)
        for partition in partitions
        for header, records in replay_batches(partition)
        if not header.is_control
        for record in records
        if record.key is not None
    ]
