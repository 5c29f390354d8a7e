"""Produce: validate batch headers and CRCs, patch offsets, append. Never decode records.

Each partition's record set is checked batch by batch (magic 2, lengths,
CRC-32C, size against ``max.message.bytes``), run through the idempotent
producer check, given its leader epoch, and appended in one worker-thread
call per request. Errors are per partition; nothing of a refused record set
is written. ``acks=0`` gets no response, as in Kafka.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partition import LEADER_EPOCH, Partition
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.broker.topics import INTERNAL_TOPICS
from kafkette.log.errors import RecordBatchTooLarge
from kafkette.log.producer_state import BatchMetadata
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import (
    BatchHeader,
    InvalidBatchError,
    iter_batches,
    patch_leader_epoch,
)

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.produce")


@dataclass(slots=True)
class _Append:
    """One partition's share of a Produce request, on its way to the log."""

    partition: Partition
    records: memoryview
    headers: list[BatchHeader]
    response: dict
    duplicate: BatchMetadata | None = None


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


def _check_records(broker: Broker, topic: str, records: memoryview | None) -> list[BatchHeader]:
    """Headers of a valid record set, or InvalidBatchError / a size refusal."""
    if records is None or len(records) == 0:
        raise InvalidBatchError("empty record set", corrupt=False)
    headers = iter_batches(records)
    limit = broker.topics.max_message_bytes(topic)
    for header in headers:
        if header.size > limit:
            raise _TooLarge(f"batch of {header.size} bytes exceeds max.message.bytes={limit}")
        if header.is_transactional or header.is_control:
            raise InvalidBatchError("transactional batches are not supported", corrupt=False)
    return headers


class _TooLarge(Exception):
    pass


async def handle_produce(broker: Broker, request: Request) -> dict | None:
    body = request.body
    acks = body["acks"]
    responses: list[dict] = []
    work: list[_Append] = []
    if acks not in (0, 1, -1):
        error = ErrorCode.INVALID_REQUIRED_ACKS
    elif body["transactional_id"] is not None:
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = ErrorCode.NONE
    for topic in body["topic_data"]:
        name = topic["name"]
        partition_responses = []
        for data in topic["partition_data"]:
            response = _partition_response(data["index"])
            partition_responses.append(response)
            if error:
                response["error_code"] = int(error)
                continue
            _prepare(broker, name, data, response, work)
        responses.append({"name": name, "partition_responses": partition_responses})
    if work:
        await _append_all(broker, work)
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _prepare(broker: Broker, name: str, data: dict, response: dict, work: list[_Append]) -> None:
    if name in INTERNAL_TOPICS:
        log.info("produce to internal topic %s refused", name)
        response["error_code"] = int(ErrorCode.INVALID_TOPIC_EXCEPTION)
        response["error_message"] = f"cannot append to internal topic {name}"
        return
    partition = broker.topics.partition(name, data["index"])
    if partition is None:
        response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return
    try:
        headers = _check_records(broker, name, data["records"])
    except _TooLarge as exc:
        log.info("produce to %s-%d refused: %s", name, data["index"], exc)
        response["error_code"] = int(ErrorCode.MESSAGE_TOO_LARGE)
        response["error_message"] = str(exc)
        return
    except InvalidBatchError as exc:
        log.warning("produce to %s-%d refused: %s", name, data["index"], exc)
        code = ErrorCode.CORRUPT_MESSAGE if exc.corrupt else ErrorCode.INVALID_RECORD
        response["error_code"] = int(code)
        response["error_message"] = str(exc)
        return
    work.append(_Append(partition, data["records"], headers, response))


async def _append_all(broker: Broker, work: list[_Append]) -> None:
    """Take the partitions' append locks in a fixed order, then append in one thread call."""
    work.sort(key=lambda w: (w.partition.topic, w.partition.index))
    async with _locks([w.partition for w in work]):
        ready = [w for w in work if _check_sequences(w)]
        if ready:
            await trio.to_thread.run_sync(_write, ready)
        for item in work:
            if item.response["error_code"] == 0 and item.duplicate is None:
                item.partition.notify_appended()


def _check_sequences(item: _Append) -> bool:
    partition_log = item.partition.log
    for header in item.headers:
        verdict = partition_log.check_sequence(header)
        if verdict.error:
            item.response["error_code"] = int(verdict.error)
            return False
        if verdict.duplicate_of is not None:
            if len(item.headers) != 1:
                item.response["error_code"] = int(ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
                return False
            item.duplicate = verdict.duplicate_of
            item.response["base_offset"] = verdict.duplicate_of.base_offset
            item.response["log_start_offset"] = item.partition.log.log_start_offset
            return False
    return True


def _write(ready: list[_Append]) -> None:
    """Worker thread: stamp leader epochs, append.

    The log stamps LogAppendTime itself, for topics that use it, and records
    the producers' sequences as it appends.
    """
    for item in ready:
        pos = 0
        for header in item.headers:
            patch_leader_epoch(item.records, LEADER_EPOCH, pos)
            pos += header.size
        try:
            info = item.partition.log.append(item.records, item.headers)
        except RecordBatchTooLarge as exc:  # Kafka: larger than segment.bytes
            log.info("produce to %s-%d refused: %s", item.partition.topic,
                     item.partition.index, exc)
            item.response["error_code"] = int(ErrorCode.RECORD_LIST_TOO_LARGE)
            item.response["error_message"] = str(exc)
            continue
        except Exception as exc:  # a storage failure fails this partition only
            subject = f"{item.partition.topic}-{item.partition.index}"
            storage_errors.failure("append to", subject, exc)
            item.response["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            item.response["error_message"] = describe_error(exc)
            continue
        item.response["base_offset"] = info.base_offset
        item.response["log_start_offset"] = info.log_start_offset
        item.response["log_append_time_ms"] = info.log_append_time_ms


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
