"""Produce: validate each record set as Kafka does, patch offsets, append.

Each partition's record set is checked by ``kafkette.wire.batch_validation``
(one batch, base offset 0, size against ``max.message.bytes``, CRC-32C,
codec, counts, and every record's framing, decompressing if needed) on the
worker thread that then appends: one thread hop per request, with the
partitions' append locks held, so the event loop never checksums or walks
records. Errors are per partition; nothing of a refused record set is
written. ``acks=0`` gets no response, as in Kafka. Produce 13 names each topic
by its id (``broker/topic_ids.py``, one dict read per topic): an unknown id
answers UNKNOWN_TOPIC_ID on each of its partitions, before the WRITE check, as
Kafka 4.1; after it, the local topic must still carry that id (else
UNKNOWN_TOPIC_ID, ``_local_topic_id_error``); older versions pay one version
test per topic for it.

In cluster mode (``broker.cluster`` set) each partition must be led here in
the epoch the append is stamped with (checked again under the append lock, so
a leadership change cannot slip in between); acks=all needs
``min.insync.replicas`` in the ISR (NOT_ENOUGH_REPLICAS) and its answer is
held until the high watermark passes the appended batch or the request's
``timeout_ms`` runs out (REQUEST_TIMED_OUT), as Kafka's DelayedProduce. On a
single node none of this runs: ``broker.cluster is None``.

Transactional batches are verified first, as Kafka 4.0 does (partition
verification, KIP-890 part 1): with the partitions' append locks held, each
one's header is asked of the transaction coordinator
(``TransactionCoordinator.verify_partition``): only the current epoch of the
request's transactional id, in an Ongoing transaction that added the
partition, may write. Under the lock, a marker cannot slip in between the
check and the append. A request with transactional batches but no
transactional id is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's
KafkaApis does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partition import Partition
from kafkette.broker.security.authorizer.checks import (
    WRITE,
    topic_denied,
    transactional_id_denied,
)
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.broker.topic_ids import topic_name
from kafkette.broker.topics import INTERNAL_TOPICS
from kafkette.log.errors import RecordBatchTooLarge
from kafkette.log.partition_log import AppendWouldBlock
from kafkette.log.producer_state import BatchMetadata
from kafkette.wire.batch_validation import validate_produce_records
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import (
    ATTRIBUTES_AT,
    COMPRESSION_MASK,
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    flagged_transactional,
    patch_leader_epoch,
    read_header,
)

if TYPE_CHECKING:
    from kafkette.broker.cluster.replica_manager import ReplicaManager
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.produce")

# Requests with fewer bytes of records than this are validated and appended on the
# event loop (see _append_all): a CRC and a page-cache write of this much take tens of
# microseconds, about what a worker-thread round trip costs without the scheduling.
INLINE_BELOW_BYTES = 64 * 1024


@dataclass(slots=True)
class _Append:
    """One partition's share of a Produce request, on its way to the log."""

    partition: Partition
    records: memoryview
    response: dict
    max_message_bytes: int
    produce_version: int
    leader_epoch: int  # stamped into the batch; the leadership it was checked in
    header: BatchHeader | None = None  # the one batch (Kafka's rule), once validated
    duplicate: BatchMetadata | None = None
    last_offset: int = -1  # once appended (or of the batch it duplicates)
    tenure: int | None = None  # cluster: the leadership tenure checked under the append lock


def _partition_response(index: int, error: int = 0, message: str | None = None) -> dict:
    return {
        "index": index,
        "error_code": int(error),
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


def _validate(item: _Append) -> bool:
    """Worker thread: validate one partition's record set; False (response filled) if refused."""
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


async def handle_produce(broker: Broker, request: Request) -> dict | None:
    body = request.body
    acks = body["acks"]
    responses: list[dict] = []
    work: list[_Append] = []
    replicas = broker.cluster.replicas if broker.cluster is not None else None
    authorizer = broker.authorizer
    transactional_id = body["transactional_id"]
    if acks not in (0, 1, -1):
        error = ErrorCode.INVALID_REQUIRED_ACKS
    elif (transactional_id is None or authorizer is not None) and _has_transactional_batch(
        body
    ) and (
        transactional_id is None
        or transactional_id_denied(broker, request, WRITE, transactional_id)
    ):
        # Transactional batches need a transactional id, and WRITE on it (Kafka).
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = ErrorCode.NONE
    version = request.header.api_version
    for topic in body["topic_data"]:
        name = topic["name"]
        partition_responses = []
        topic_error = error
        if version >= 13:  # the topic is named by its id (once per topic, not per partition)
            name = topic_name(broker, topic["topic_id"]) or ""
            if not name and not error:
                topic_error = ErrorCode.UNKNOWN_TOPIC_ID
        # Kafka checks WRITE on the topic before it looks the topic up.
        if not topic_error and authorizer is not None and topic_denied(
            broker, request, WRITE, name
        ):
            topic_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if version >= 13 and not topic_error:
            topic_error = _local_topic_id_error(broker, name, topic["topic_id"])
        for data in topic["partition_data"]:
            response = _partition_response(data["index"])
            partition_responses.append(response)
            if topic_error:
                response["error_code"] = int(topic_error)
                continue
            _prepare(broker, name, data, response, work, version, replicas, acks)
        responses.append(
            {
                "name": name,
                "topic_id": topic["topic_id"],
                "partition_responses": partition_responses,
            }
        )
    if work:
        await _append_all(broker, work, transactional_id, replicas)
        if replicas is not None and acks == -1:
            await _wait_for_acks(replicas, work, body["timeout_ms"])
    if acks == 0:
        # Kafka closes the connection of an acks=0 producer whose records were refused;
        # with an authorizer, a refused WRITE would otherwise lose records silently.
        if replicas is not None or authorizer is not None:
            _close_on_acks_0_error(responses, request.peer)
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _local_topic_id_error(broker: Broker, name: str, requested_id: object) -> ErrorCode:
    """Produce 13: the partitions written are the local registry's, so the local topic
    must carry the id the client sent. In a cluster the id was resolved from the
    cluster snapshot, which may run ahead of (or behind) the local logs while a
    deleted-and-recreated topic is being followed (``ClusterNode._publish``): an old
    id must not write into the new topic's logs, nor a new id into the old ones that
    are about to go. Kafka's ReplicaManager checks the partition's topic id the same
    way and answers UNKNOWN_TOPIC_ID (retriable: the client refreshes its metadata)."""
    meta = broker.topics.metadata(name)
    if meta is None or meta.topic_id != requested_id:
        return ErrorCode.UNKNOWN_TOPIC_ID
    return ErrorCode.NONE


def _close_on_acks_0_error(responses: list[dict], peer: str) -> None:
    """Cluster mode or an authorizer, acks=0: an error cannot be answered, so the
    connection is closed and the client refreshes its metadata (Kafka's KafkaApis does
    this; a producer writing to a broker that lost leadership, or may not write, would
    otherwise lose every record silently)."""
    for topic in responses:
        for part in topic["partition_responses"]:
            if part["error_code"]:
                error = ErrorCode(part["error_code"]).name
                log.info(
                    "closing connection from %s: acks=0 produce to %s-%d failed with %s",
                    peer, topic["name"], part["index"], error,
                )
                # The connection loop closes quietly on ConnectionError.
                raise ConnectionError(f"acks=0 produce failed with {error}")


def _prepare(
    broker: Broker,
    name: str,
    data: dict,
    response: dict,
    work: list[_Append],
    version: int,
    replicas: ReplicaManager | None = None,
    acks: int = 1,
) -> None:
    if name in INTERNAL_TOPICS:
        log.info("produce to internal topic %s refused", name)
        response["error_code"] = int(ErrorCode.INVALID_TOPIC_EXCEPTION)
        response["error_message"] = f"cannot append to internal topic {name}"
        return
    if replicas is None:
        partition = broker.topics.partition(name, data["index"])
        if partition is None:
            response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
    else:
        led = replicas.leader_partition(name, data["index"])
        if isinstance(led, ErrorCode):
            response["error_code"] = int(led)
            return
        partition = led
        if acks == -1 and (error := replicas.check_min_isr(partition)) != ErrorCode.NONE:
            response["error_code"] = int(error)
            response["error_message"] = (
                f"The size of the current ISR is less than min.insync.replicas="
                f"{replicas.min_insync_replicas(name)}"
            )
            return
    records = data["records"]
    if records is None or len(records) == 0:
        log.warning("produce to %s-%d refused: no record batch", name, data["index"])
        response["error_code"] = int(ErrorCode.INVALID_RECORD)
        return
    limit = broker.topics.max_message_bytes(name)
    work.append(_Append(partition, records, response, limit, version, partition.leader_epoch))


def _peek_header(records: memoryview) -> BatchHeader | None:
    """The first batch's header, read on the event loop without validating (61 bytes)."""
    if len(records) < HEADER_SIZE:
        return None
    try:
        return read_header(records)
    except Exception:  # garbage: validation refuses it with Kafka's error
        return None


def _has_transactional_batch(body: dict) -> bool:
    """Any record set flagged transactional? Two bytes read per partition (every
    non-transactional Produce pays this, so no header is parsed)."""
    return any(
        data["records"] is not None and flagged_transactional(data["records"])
        for topic in body["topic_data"]
        for data in topic["partition_data"]
    )


# The coordinator's verification answers, as Kafka's ReplicaManager turns them into
# Produce errors that clients of every version handle (retriable ones become
# NOT_ENOUGH_REPLICAS, which clients retry without a metadata refresh).
_VERIFICATION_ERRORS = {
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.UNKNOWN_PRODUCER_ID: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
}


def _verified(broker: Broker, item: _Append, transactional_id: str | None) -> bool:
    """Partition verification of a transactional batch (event loop, append lock held);
    False (response filled) if the coordinator refuses it."""
    if transactional_id is None:
        return True
    if not broker.config.transactions.transaction_partition_verification_enable:
        return True
    header = _peek_header(item.records)
    if header is None or not header.is_transactional:
        return True
    error = broker.transactions.verify_partition(
        transactional_id,
        header.producer_id,
        header.producer_epoch,
        item.partition.topic,
        item.partition.index,
    )
    if error == ErrorCode.NONE:
        return True
    answer = _VERIFICATION_ERRORS.get(error, error)
    log.info(
        "transactional produce to %s-%d by %s refused: %s",
        item.partition.topic,
        item.partition.index,
        transactional_id,
        error.name,
    )
    item.response["error_code"] = int(answer)
    item.response["error_message"] = (
        "Partition was not added to the transaction"
        if error == ErrorCode.INVALID_TXN_STATE
        else "Unable to verify the partition has been added to the transaction."
        f" Underlying error: {error.name}"
    )
    return False


async def _append_all(
    broker: Broker,
    work: list[_Append],
    transactional_id: str | None = None,
    replicas: ReplicaManager | None = None,
) -> None:
    """Take the partitions' append locks in a fixed order, then validate and append.

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
    work.sort(key=lambda w: (w.partition.topic, w.partition.index))
    async with _locks([w.partition for w in work]):
        if replicas is not None:
            work = [w for w in work if _still_leader(replicas, w)]
        work = [w for w in work if _verified(broker, w, transactional_id)]
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


def _small_and_plain(work: list[_Append]) -> bool:
    """Few bytes in all, none compressed (a small compressed batch may inflate to
    anything: its record walk stays off the event loop)."""
    total = 0
    for item in work:
        records = item.records
        if len(records) > ATTRIBUTES_AT + 1 and records[ATTRIBUTES_AT + 1] & COMPRESSION_MASK:
            return False
        total += len(records)
    return total < INLINE_BELOW_BYTES


def _still_leader(replicas: ReplicaManager, item: _Append) -> bool:
    """Under the append lock: leadership did not move since the request was planned."""
    if replicas.is_leader(item.partition, item.leader_epoch):
        # The tenure the acks=all wait must see unchanged: taken here, not when the wait
        # starts (another partition's wait may come first, and leadership may move away
        # and back meanwhile, replacing these records at the same offsets).
        item.tenure = replicas.leader_tenure(item.partition)
        return True
    item.response["error_code"] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return False


async def _wait_for_acks(replicas: ReplicaManager, work: list[_Append], timeout_ms: int) -> None:
    """acks=all: each appended partition's answer waits for its HW, one deadline for all."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    for item in work:
        if item.response["error_code"] != 0 or item.last_offset < 0:
            continue
        remaining = deadline - trio.current_time()
        error = await replicas.wait_for_acks(
            item.partition, item.last_offset, remaining, item.tenure
        )
        if error != ErrorCode.NONE:
            item.response["error_code"] = int(error)


def _validate_and_write(work: list[_Append], nonblocking: bool = False) -> list[_Append]:
    """Worker thread (or the event loop, ``nonblocking``), append locks held: validate,
    check sequences, append. Returns the partitions not appended because the append
    would block (``nonblocking`` only), to be written from a worker thread.

    The sequence check runs here, after validation as in Kafka; it only reads
    producer state, which changes only under the same append locks.
    """
    valid = [w for w in work if _validate(w)]
    ready = [w for w in valid if _check_sequences(w)]
    return _write(ready, nonblocking) if ready else []


def _check_sequences(item: _Append) -> bool:
    """The idempotence check of the partition's one batch; False (response filled) if it is
    refused or a duplicate (answered with the offset it got the first time)."""
    assert item.header is not None
    verdict = item.partition.log.check_sequence(item.header)
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


def _write(ready: list[_Append], nonblocking: bool = False) -> list[_Append]:
    """Worker thread (or the event loop, ``nonblocking``): stamp leader epochs, append.
    Returns the partitions left unwritten because an append would block.

    The log stamps LogAppendTime itself, for topics that use it, and records
    the producers' sequences as it appends.
    """
    for position, item in enumerate(ready):
        assert item.header is not None
        patch_leader_epoch(item.records, item.leader_epoch)
        try:
            info = item.partition.log.append(
                item.records, [item.header], nonblocking=nonblocking
            )
        except AppendWouldBlock:
            return ready[position:]
        except RecordBatchTooLarge as exc:  # Kafka: larger than segment.bytes
            log.info(
                "produce to %s-%d refused: %s", item.partition.topic, item.partition.index, exc
            )
            item.response["error_code"] = int(ErrorCode.RECORD_LIST_TOO_LARGE)
            item.response["error_message"] = str(exc)
            continue
        except Exception as exc:  # a storage failure fails this partition only
            subject = f"{item.partition.topic}-{item.partition.index}"
            storage_errors.failure("append to", subject, exc)
            item.response["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            item.response["error_message"] = describe_error(exc)
            continue
        item.last_offset = info.last_offset
        item.response["base_offset"] = info.base_offset
        item.response["log_start_offset"] = info.log_start_offset
        item.response["log_append_time_ms"] = info.log_append_time_ms
    return []


class _locks:
    """Acquire several trio locks in the given order, release in reverse."""

    def __init__(self, partitions: list[Partition]) -> None:
        self._locks = list(dict.fromkeys(p.append_lock for p in partitions))
        self._held: list[trio.Lock] = []

    async def __aenter__(self) -> None:
        try:
            for lock in self._locks:
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
