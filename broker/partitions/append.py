"""Produce's append: several partitions' record sets, validated and written in one go.

The produce handler plans (one ``ProduceAppend`` per partition, its response
dict filled in here); this module does the rest, in one place so its per-batch
cost can be read and measured. With the partitions' append locks taken in a
fixed order (topic, index):

1. leadership is checked again (cluster mode: a change cannot slip in between
   the plan and the append) and the leadership tenure taken for the acks=all wait;
2. transactional batches are verified with the transaction coordinator
   (KIP-890 part 1: only the current epoch of the request's transactional id, in an
   Ongoing transaction that added the partition, may write; under the lock a marker
   cannot slip in between the check and the append). Before the locks, Produce 12+
   (a transaction.version 2 client, which sends no AddPartitionsToTxn) has the
   partitions added to its transaction (``add_to_transaction``, KIP-890 part 2);
3. each record set is validated (``kafkette.wire.batch_validation``: one batch, base
   offset 0, size, CRC-32C, codec, counts, every record's framing), its producer
   sequence checked (``PartitionLog.check_sequence``), and appended; the log stamps
   the leader epoch (``Partition.append_validated``).

Step 3 runs on the event loop for small uncompressed requests (a worker-thread
round trip costs more than the work) and in one worker-thread hop otherwise, so
the event loop never checksums or walks a large or compressed record set. Then
traffic is counted and long-polling fetches woken (in cluster mode this moves
the HW). Errors are per partition; nothing of a refused record set is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partitions import sequence_gaps
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.log.errors import LogClosed, RecordBatchTooLarge
from kafkette.log.partition_log import AppendWouldBlock
from kafkette.wire.batch_validation import validate_produce_records
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import (
    ATTRIBUTES_AT,
    COMPRESSION_MASK,
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    read_header,
)

if TYPE_CHECKING:
    from kafkette.broker.partitions.partition import Partition
    from kafkette.broker.transactions.coordinator import TransactionCoordinator
    from kafkette.log.producer_state import BatchMetadata

log = logging.getLogger("kafkette.produce")

# Requests with fewer bytes of records than this are validated and appended on the
# event loop (see append_produced): a CRC and a page-cache write of this much take tens
# of microseconds, about what a worker-thread round trip costs without the scheduling.
INLINE_BELOW_BYTES = 64 * 1024


@dataclass(slots=True)
class ProduceAppend:
    """One partition's share of a Produce request, on its way to the log."""

    partition: Partition
    records: memoryview
    response: dict
    max_message_bytes: int
    produce_version: int
    leader_epoch: int  # the leadership it was planned in (checked again under the lock)
    header: BatchHeader | None = None  # the one batch (Kafka's rule), once validated
    duplicate: BatchMetadata | None = None
    last_offset: int = -1  # once appended (or of the batch it duplicates)
    tenure: int | None = None  # cluster: the leadership tenure checked under the append lock


@dataclass(slots=True)
class Verification:
    """Transactional batches of this request are verified with ``transactions``
    (``transaction.partition.verification.enable``) for ``transactional_id``;
    ``produce_version`` picks the errors its client knows."""

    transactions: TransactionCoordinator
    transactional_id: str
    produce_version: int = 12


# Produce versions from which the client knows TRANSACTION_ABORTABLE (11, KIP-890 part 1)
# and adds partitions through its writes (12, transaction.version 2), as Kafka's
# AddPartitionsToTxnManager tells them apart.
TRANSACTION_ABORTABLE_SINCE = 11
IMPLICIT_ADD_SINCE = 12


async def add_to_transaction(
    work: list[ProduceAppend], transactions: TransactionCoordinator, transactional_id: str
) -> list[ProduceAppend]:
    """Produce 12+: add the partitions of this request's transactional batches to the
    producer's transaction (Kafka's leader calls the coordinator's AddPartitionsToTxn,
    verify_only false, even with verification disabled). A partition already holding an
    open transaction of the producer at that epoch is known to the coordinator (Kafka's
    hasOngoingTransaction) and skipped. Returns the work left; refused partitions have
    their response filled, with Kafka's ReplicaManager errors for TV2 clients.
    """
    adding: list[ProduceAppend] = []
    producers: set[tuple[int, int]] = set()
    for item in work:
        header = _peek_header(item.records)
        if header is None or not header.is_transactional:
            continue
        producers.add((header.producer_id, header.producer_epoch))
        if not item.partition.has_ongoing_transaction(header.producer_id, header.producer_epoch):
            adding.append(item)
    if len(producers) > 1:  # Kafka: InvalidPidMappingException for the whole request
        for item in work:
            item.response["error_code"] = int(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        return []
    if not adding:
        return work
    ((producer_id, producer_epoch),) = producers
    error = await transactions.add_partitions_for_write(
        transactional_id,
        producer_id,
        producer_epoch,
        frozenset((item.partition.topic, item.partition.index) for item in adding),
    )
    if error == ErrorCode.NONE:
        return work
    log.log(
        _refusal_level(error),
        "transactional produce by %s: adding %d partitions refused: %s",
        transactional_id,
        len(adding),
        error.name,
    )
    for item in adding:
        _refuse(item, error, IMPLICIT_ADD_SINCE)
    refused = {id(item) for item in adding}
    return [item for item in work if id(item) not in refused]


async def append_produced(work: list[ProduceAppend], verify: Verification | None) -> None:
    """Take the partitions' append locks in a fixed order, then check, validate and append.

    A small request (``INLINE_BELOW_BYTES`` of records in all) is validated
    and appended right here on the event loop: a worker-thread round trip
    (two thread wake-ups, each a chance for the OS to run something else
    first) costs more than the work, and it sat on the path of every record
    a long-polling consumer waits for. Compressed record sets always go to a
    worker thread (their record walk decompresses). An append that would block (another
    thread holds the log's write lock, a roll, an fsync) goes to a worker
    thread as larger requests do, in one thread call for all partitions (a
    second hop just to validate would cost more than validating).
    """
    if len(work) > 1:
        work.sort(key=_lock_order)
    async with _locks([w.partition for w in work]):
        if any(w.partition.replica_manager is not None for w in work):
            work = [w for w in work if w.partition.replica_manager is None or _still_leader(w)]
        if verify is not None:
            work = [w for w in work if _verified(verify, w)]
        if work and _small_and_plain(work):
            blocked = _validate_and_write(work, nonblocking=True)
            if blocked:
                await trio.to_thread.run_sync(_write, blocked)
        elif work:
            await trio.to_thread.run_sync(_validate_and_write, work)
        for item in work:
            if item.response["error_code"] == 0 and item.duplicate is None:
                partition = item.partition
                # Kafka's BytesInPerSec / MessagesInPerSec: what was appended (plain ints,
                # once per partition; the metrics endpoint reads them at scrape time).
                partition.bytes_in += len(item.records)
                partition.records_in += item.header.records_count  # type: ignore[union-attr]
                partition.notify_appended()  # in cluster mode this moves the HW too


async def wait_for_acks(work: list[ProduceAppend], timeout_ms: int) -> None:
    """acks=all: each appended partition's answer waits for its HW, one deadline for all
    (cluster mode; on a single node the HW is the log end: nothing to wait for)."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    for item in work:
        if (
            item.response["error_code"] != 0
            or item.last_offset < 0
            or not item.partition.replicated
        ):
            continue
        remaining = deadline - trio.current_time()
        error = await item.partition.wait_for_acks(item.last_offset, remaining, item.tenure)
        if error != ErrorCode.NONE:
            item.response["error_code"] = int(error)


def _lock_order(item: ProduceAppend) -> tuple[str, int]:
    return item.partition.topic, item.partition.index


def _still_leader(item: ProduceAppend) -> bool:
    """Under the append lock: leadership did not move since the request was planned."""
    partition = item.partition
    if partition.leads_in(item.leader_epoch):
        # The tenure the acks=all wait must see unchanged: taken here, not when the wait
        # starts (another partition's wait may come first, and leadership may move away
        # and back meanwhile, replacing these records at the same offsets).
        item.tenure = partition.leader_tenure()
        return True
    item.response["error_code"] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return False


# The coordinator's verification answers, as Kafka's ReplicaManager turns them into
# Produce errors that clients of every version handle (retriable ones become
# NOT_ENOUGH_REPLICAS, which clients retry without a metadata refresh). TV2 clients
# (Produce 12+) get CONCURRENT_TRANSACTIONS as it is: it is common while the previous
# transaction completes, and they retry it.
_VERIFICATION_ERRORS = {
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.UNKNOWN_PRODUCER_ID: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
}


def _refusal_level(error: ErrorCode) -> int:
    """CONCURRENT_TRANSACTIONS is the normal answer while the previous transaction's
    markers are written (clients retry it): DEBUG, not a line per retry at INFO."""
    return logging.DEBUG if error == ErrorCode.CONCURRENT_TRANSACTIONS else logging.INFO


def produce_error(error: ErrorCode, produce_version: int) -> ErrorCode:
    """A coordinator's verification (or implicit add) answer as a Produce error for a
    client of ``produce_version``."""
    if error == ErrorCode.CONCURRENT_TRANSACTIONS and produce_version >= IMPLICIT_ADD_SINCE:
        return error
    if error == ErrorCode.TRANSACTION_ABORTABLE and produce_version < TRANSACTION_ABORTABLE_SINCE:
        return ErrorCode.INVALID_TXN_STATE
    return _VERIFICATION_ERRORS.get(error, error)


def _refuse(item: ProduceAppend, error: ErrorCode, produce_version: int) -> None:
    answer = produce_error(error, produce_version)
    item.response["error_code"] = int(answer)
    if answer == ErrorCode.INVALID_TXN_STATE:
        item.response["error_message"] = "Partition was not added to the transaction"
    elif answer == ErrorCode.NOT_ENOUGH_REPLICAS:
        item.response["error_message"] = (
            "Unable to verify the partition has been added to the transaction."
            f" Underlying error: {error.name}"
        )


def _verified(verify: Verification, item: ProduceAppend) -> bool:
    """Partition verification of a transactional batch (event loop, append lock held);
    False (response filled) if the coordinator refuses it."""
    header = _peek_header(item.records)
    if header is None or not header.is_transactional:
        return True
    partition = item.partition
    error = verify.transactions.verify_partition(
        verify.transactional_id,
        header.producer_id,
        header.producer_epoch,
        partition.topic,
        partition.index,
    )
    if error == ErrorCode.NONE:
        return True
    log.log(
        _refusal_level(error),
        "transactional produce to %s-%d by %s refused: %s",
        partition.topic,
        partition.index,
        verify.transactional_id,
        error.name,
    )
    _refuse(item, error, verify.produce_version)
    return False


def _peek_header(records: memoryview) -> BatchHeader | None:
    """The first batch's header, read on the event loop without validating (61 bytes)."""
    if len(records) < HEADER_SIZE:
        return None
    try:
        return read_header(records)
    except Exception:  # garbage: validation refuses it with Kafka's error
        return None


def _small_and_plain(work: list[ProduceAppend]) -> bool:
    """Few bytes in all, none compressed (a small compressed batch may inflate to
    anything: its record walk stays off the event loop)."""
    total = 0
    for item in work:
        records = item.records
        if len(records) > ATTRIBUTES_AT + 1 and records[ATTRIBUTES_AT + 1] & COMPRESSION_MASK:
            return False
        total += len(records)
    return total < INLINE_BELOW_BYTES


def _validate_and_write(
    work: list[ProduceAppend], nonblocking: bool = False
) -> list[ProduceAppend]:
    """Worker thread (or the event loop, ``nonblocking``), append locks held: validate,
    check sequences, append. Returns the partitions not appended because the append
    would block (``nonblocking`` only), to be written from a worker thread.

    The sequence check runs here, after validation as in Kafka; it only reads
    producer state, which changes only under the same append locks.
    """
    valid = [w for w in work if _validate(w)]
    ready = [w for w in valid if _check_sequences(w)]
    return _write(ready, nonblocking) if ready else []


def _validate(item: ProduceAppend) -> bool:
    """One partition's record set; False (response filled) if refused."""
    partition = item.partition
    try:
        header = validate_produce_records(
            item.records,
            max_message_bytes=item.max_message_bytes,
            produce_version=item.produce_version,
            compacted=partition.log.config.compacts,
        )
    except InvalidBatchError as exc:
        log.warning(
            "produce to %s-%d refused (%s): %s",
            partition.topic,
            partition.index,
            exc.error.name,
            exc,
        )
        item.response["error_code"] = int(exc.error)
        item.response["error_message"] = exc.client_message
        return False
    except Exception:  # a bug or MemoryError fails this partition, not the request
        log.exception("validating produce to %s-%d failed", partition.topic, partition.index)
        item.response["error_code"] = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        return False
    item.header = header
    if header.size != len(item.records):  # bytes too short to be a batch: ignored
        item.records = item.records[: header.size]
    return True


def _check_sequences(item: ProduceAppend) -> bool:
    """The idempotence check of the partition's one batch; False (response filled) if it is
    refused or a duplicate (answered with the offset it got the first time)."""
    assert item.header is not None
    partition = item.partition
    verdict = partition.log.check_sequence(item.header)
    if (
        partition.refused_batches
        and verdict.duplicate_of is None
        and verdict.error in (ErrorCode.NONE, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        and (excused := sequence_gaps.excuse(partition, item.header))
    ):
        # The gap before this batch is one this leader refused: answer as it was, whether
        # the check saw the gap or could not (a producer it has no state for).
        item.response["error_code"] = int(excused)
        item.response["error_message"] = sequence_gaps.MESSAGE.format(excused.name)
        return False
    if verdict.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and _leadership_in_doubt(partition):
        # Cut off from ZooKeeper past its session, this broker may no longer lead: the gap is
        # likely batches the new leader took. A retriable answer sends the producer there;
        # an out-of-order one is fatal to librdkafka (replica_manager.session_lost).
        item.response["error_code"] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return False
    if verdict.error:
        item.response["error_code"] = int(verdict.error)
        return False
    if verdict.duplicate_of is not None:
        item.duplicate = verdict.duplicate_of
        item.last_offset = verdict.duplicate_of.last_offset
        item.response["base_offset"] = verdict.duplicate_of.base_offset
        item.response["log_start_offset"] = item.partition.log.log_start_offset
        return False
    return True


def _leadership_in_doubt(partition: Partition) -> bool:
    replicas = partition.replica_manager
    return replicas is not None and replicas.possibly_stale


_CLOSED_MESSAGE = "This server no longer hosts this topic-partition (deleted or moved)."


def _write(ready: list[ProduceAppend], nonblocking: bool = False) -> list[ProduceAppend]:
    """Worker thread (or the event loop, ``nonblocking``): append. Returns the
    partitions left unwritten because an append would block.

    The log stamps the leader epoch and, for topics that use it, LogAppendTime,
    and records the producers' sequences as it appends.
    """
    for position, item in enumerate(ready):
        assert item.header is not None
        partition = item.partition
        try:
            info = partition.append_validated(item.records, item.header, nonblocking=nonblocking)
        except AppendWouldBlock:
            return ready[position:]
        except LogClosed:
            # The topic was deleted (or, in a cluster, the partition moved away) after this
            # request looked the partition up: a normal outcome of that change, not a
            # storage failure. Nothing was written; the client retries after a metadata
            # refresh (the request log says so once, throttled).
            error = partition.closed_error
            log.debug("produce to %s-%d: log closed, answered %s",
                      partition.topic, partition.index, error.name)  # fmt: skip
            item.response["error_code"] = int(error)
            item.response["error_message"] = _CLOSED_MESSAGE
            continue
        except RecordBatchTooLarge as exc:  # Kafka: larger than segment.bytes
            log.info("produce to %s-%d refused: %s", partition.topic, partition.index, exc)
            item.response["error_code"] = int(ErrorCode.RECORD_LIST_TOO_LARGE)
            item.response["error_message"] = str(exc)
            continue
        except Exception as exc:  # a storage failure fails this partition only
            subject = f"{partition.topic}-{partition.index}"
            storage_errors.failure("append to", subject, exc)
            header = item.header
            sequence_gaps.note_refused(
                partition, (header.producer_id, header.producer_epoch, header.base_sequence)
                if header.producer_id >= 0 and header.base_sequence >= 0 else None,
                ErrorCode.KAFKA_STORAGE_ERROR,
            )  # fmt: skip
            item.response["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            item.response["error_message"] = describe_error(exc)
            continue
        sequence_gaps.note_appended(partition, item.header)
        item.last_offset = info.last_offset
        item.response["base_offset"] = info.base_offset
        item.response["log_start_offset"] = info.log_start_offset
        item.response["log_append_time_ms"] = info.log_append_time_ms
    return []


class _locks:
    """Acquire several partitions' append locks in the given order, release in reverse.

    A free lock is taken without a trip through the scheduler: ``trio.Lock.acquire``
    yields once per lock even when nobody holds it, and each yield is a turn of the
    run loop (an ``epoll`` call) that a Produce of three partitions paid three times.
    Only a held lock is waited for; cancellation is still checked on entry, and the
    answer's send that follows is the request's schedule point.
    """

    def __init__(self, partitions: list[Partition]) -> None:
        if len(partitions) == 1:
            self._locks = [partitions[0].append_lock]
        else:
            self._locks = list(dict.fromkeys(p.append_lock for p in partitions))
        self._held: list[trio.Lock] = []

    async def __aenter__(self) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            for lock in self._locks:
                try:
                    lock.acquire_nowait()  # free and nobody queued (trio's locks are fair)
                except trio.WouldBlock:
                    await lock.acquire()
                self._held.append(lock)
        except BaseException:
            self._release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._held:
            self._held.pop().release()
