"""KIP-932's ShareFetch (78) and ShareAcknowledge (79).

Thin: checks (Kafka's order: group id, READ on the group, member id, READ on each
topic), the share session step, then the share partition manager
(``broker/share_groups/manager.py``) applies the acknowledgements piggybacked on the
request and acquires records. A fetch that acquires nothing waits, up to
``MaxWaitMs``, for new records or for records another member releases. The records
go out as stored batches beside the ranges this member acquired (``AcquiredRecords``);
the client delivers only those and acknowledges control records and gaps as GAP.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

import trio

from kafkette.broker.handlers.fetch import leader_endpoints, note_current_leader
from kafkette.broker.security.authorizer.checks import READ, group_denied, topic_denied
from kafkette.broker.share_groups.delivery_state import (
    AckBatch,
    AckType,
    validate_acknowledgement_batches,
)
from kafkette.broker.share_groups.sessions import FINAL_EPOCH, ShareSessionError
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.share")

def _top_error(code: int, message: str | None, lock_ms: int = 0) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": []}


def _leader(broker: Broker, partition: Partition | None) -> dict:
    if partition is None:
        return {"leader_id": -1, "leader_epoch": -1}
    return {"leader_id": broker.node_id, "leader_epoch": partition.leader_epoch}


def _serving(broker: Broker, tid: uuid.UUID, index: int) -> tuple[str | None, object]:
    meta = broker.topics.by_id(tid)
    if meta is None:
        return None, ErrorCode.UNKNOWN_TOPIC_ID
    return meta.name, broker.topics.serving(meta.name, index)


async def _apply_acks(
    broker: Broker, request: Request, group_id: str, member_id: str, topics: list[dict],
    version: int, renew: bool,
) -> dict[tuple[uuid.UUID, int], tuple[int, str | None]]:
    """Acknowledgements of every partition named with batches: (error, message)."""
    manager = broker.share_partitions
    results: dict[tuple[uuid.UUID, int], tuple[int, str | None]] = {}
    for topic in topics:
        tid = topic["topic_id"]
        for part in topic["partitions"]:
            batches = part["acknowledgement_batches"]
            if not batches:
                continue
            index = part["partition_index"]
            name, serving = _serving(broker, tid, index)
            if name is not None and topic_denied(broker, request, READ, name):
                results[(tid, index)] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                continue
            if isinstance(serving, ErrorCode):
                results[(tid, index)] = (serving, None)
                continue
            acks = [(b["first_offset"], b["last_offset"], b["acknowledge_types"])
                    for b in batches]
            invalid = validate_acknowledgement_batches(
                [AckBatch(*a) for a in acks],
                max_ack_type=AckType.RENEW if version >= 2 else AckType.REJECT,
                renew_ack=renew,
            )
            if invalid != ErrorCode.NONE:
                results[(tid, index)] = (int(invalid), None)
                continue
            error, message = await manager.acknowledge(group_id, member_id, tid, index, acks,
                                                       serving)
            results[(tid, index)] = (int(error), message)
    return results


def _check_request(broker: Broker, request: Request) -> dict | None:
    body = request.body
    group_id = body["group_id"]
    if not group_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "Invalid group id in the request.")
    if group_denied(broker, request, READ, group_id):
        return _top_error(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    member_id = body["member_id"]
    if not member_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")
    return None


async def handle_share_fetch(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    refused = _check_request(broker, request)
    if refused is not None:
        return refused
    group_id, member_id = body["group_id"], body["member_id"]
    manager = broker.share_partitions
    lock_ms = manager.lock_duration_ms(group_id)
    epoch = body["share_session_epoch"]
    renew = version >= 2 and body.get("is_renew_ack", False)
    has_acks = any(p["acknowledgement_batches"] for t in body["topics"] for p in t["partitions"])
    wanted = [(t["topic_id"], p["partition_index"]) for t in body["topics"]
              for p in t["partitions"]]
    forgotten = [(t["topic_id"], p) for t in body["forgotten_topics_data"]
                 for p in t["partitions"]]
    key = (group_id, member_id)
    try:
        partitions, _session = manager.sessions.open_fetch(
            key, epoch, wanted, forgotten, has_acks, request.session
        )
    except ShareSessionError as exc:
        return _top_error(exc.code, str(exc), lock_ms)
    if request.session is not None:
        manager.watch_connection(request.session)
    acks = await _apply_acks(broker, request, group_id, member_id, body["topics"], version,
                             renew)
    answers: dict[tuple[uuid.UUID, int], dict] = {}
    if epoch == FINAL_EPOCH:
        await manager.close_session(key)
    elif not renew:
        answers = await _fetch(broker, request, body, group_id, member_id, partitions,
                               full=epoch == 0)
    for (tid, index), (error, message) in acks.items():
        answer = answers.get((tid, index))
        if answer is None:
            answer = answers[(tid, index)] = _partition_answer(index, None, broker)
        answer["acknowledge_error_code"] = error
        answer["acknowledge_error_message"] = message
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": _by_topic(answers),
        "node_endpoints": _leader_hints(broker, request, answers),
    }


def _leader_hints(broker: Broker, request: Request,
                  answers: dict[tuple[uuid.UUID, int], dict]) -> list[dict]:
    """Partitions answered NOT_LEADER_OR_FOLLOWER carry the leader this broker knows (in
    a cluster), and the answer where to reach it, as Kafka's ShareFetch does, so the
    client moves to the new leader."""
    leaders: set[int] = set()
    for (tid, index), answer in answers.items():
        if ErrorCode.NOT_LEADER_OR_FOLLOWER not in (
                answer["error_code"], answer["acknowledge_error_code"]):
            continue
        meta = broker.topics.by_id(tid)
        if meta is not None:
            note_current_leader(broker, meta.name, index, answer, leaders)
    return leader_endpoints(broker, request, leaders) if leaders else []


def _partition_answer(index: int, partition: Partition | None, broker: Broker,
                      error: int = 0) -> dict:
    return {
        "partition_index": index,
        "error_code": int(error),
        "error_message": None,
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": _leader(broker, partition),
        # Empty, never null: librdkafka 2.16 drops a whole answer with a null record set
        # ("invalid MessageSetSize -1"); Kafka sends empty records too.
        "records": b"",
        "acquired_records": [],
    }


def _by_topic(answers: dict[tuple[uuid.UUID, int], dict]) -> list[dict]:
    topics: dict[uuid.UUID, list[dict]] = {}
    for (tid, _index), answer in answers.items():
        topics.setdefault(tid, []).append(answer)
    return [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()]


async def _fetch(
    broker: Broker, request: Request, body: dict, group_id: str, member_id: str,
    partitions: Iterable[tuple[uuid.UUID, int]], full: bool,
) -> dict[tuple[uuid.UUID, int], dict]:
    manager = broker.share_partitions
    answers: dict[tuple[uuid.UUID, int], dict] = {}
    readable: list[tuple[uuid.UUID, Partition]] = []
    for tid, index in partitions:
        name, serving = _serving(broker, tid, index)
        if name is not None and topic_denied(broker, request, READ, name):
            answers[(tid, index)] = _partition_answer(
                index, None, broker, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif isinstance(serving, ErrorCode):
            answers[(tid, index)] = _partition_answer(index, None, broker, serving)
        else:
            readable.append((tid, serving))
            if full:
                answers[(tid, index)] = _partition_answer(index, serving, broker)
    max_records = body.get("max_records") or 500
    max_bytes = body["max_bytes"]
    deadline = trio.current_time() + max(0, body["max_wait_ms"]) / 1000
    while True:
        got = 0
        budget_records, budget_bytes = max_records, max_bytes
        for tid, partition in readable:
            if budget_records <= 0 or budget_bytes <= 0:
                break
            result = await manager.acquire(group_id, member_id, tid, partition,
                                           budget_bytes, budget_records,
                                           body.get("batch_size") or None)
            if not result.acquired:
                continue
            answer = _partition_answer(partition.index, partition, broker)
            answer["records"] = result.records
            answer["acquired_records"] = [
                {"first_offset": f, "last_offset": last, "delivery_count": c}
                for f, last, c in result.acquired
            ]
            answers[(tid, partition.index)] = answer
            count = sum(last - f + 1 for f, last, _c in result.acquired)
            got += count
            budget_records -= count
            budget_bytes -= len(result.records or b"")
        if got or not readable or trio.current_time() >= deadline:
            return answers
        await manager.wait_for_records([p for _t, p in readable], deadline)


async def handle_share_acknowledge(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    refused = _check_request(broker, request)
    if refused is not None:
        refused.pop("acquisition_lock_timeout_ms")
        refused["acquisition_lock_timeout_ms"] = 0
        return refused
    group_id, member_id = body["group_id"], body["member_id"]
    manager = broker.share_partitions
    lock_ms = manager.lock_duration_ms(group_id)
    epoch = body["share_session_epoch"]
    key = (group_id, member_id)
    try:
        manager.sessions.acknowledge_step(key, epoch)
    except ShareSessionError as exc:
        return _top_error(exc.code, str(exc), lock_ms)
    renew = version >= 2 and body.get("is_renew_ack", False)
    acks = await _apply_acks(broker, request, group_id, member_id, body["topics"], version,
                             renew)
    if epoch == FINAL_EPOCH:
        await manager.close_session(key)
    topics: dict[uuid.UUID, list[dict]] = {}
    for (tid, index), (error, message) in acks.items():
        _name, serving = _serving(broker, tid, index)
        partition = None if isinstance(serving, ErrorCode) else serving
        topics.setdefault(tid, []).append({
            "partition_index": index, "error_code": error, "error_message": message,
            "current_leader": _leader(broker, partition),
        })
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()],
        "node_endpoints": [],
    }
