"""Produce: check the request, find the partitions, hand their record sets to the append.

The append itself (the partitions' locks, leadership checked again, transaction
verification, validation, the idempotence check, the event loop or one worker
thread hop, traffic counters, waking fetches) is ``broker/partitions/append.py``.
Here: acks and the transactional id are checked, each topic is authorized and
looked up, each partition found through ``TopicRegistry.serving`` (the leader
in a cluster: NOT_LEADER_OR_FOLLOWER otherwise), and acks=all answers wait for
the high watermark (``append.wait_for_acks``: REQUEST_TIMED_OUT when the
request's ``timeout_ms`` runs out, as Kafka's DelayedProduce). ``acks=0`` gets
no response, as in Kafka. Produce 13 names each topic by its id
(``broker/topic_ids.py``, one dict read per topic): an unknown id answers
UNKNOWN_TOPIC_ID on each of its partitions, before the WRITE check, as Kafka
4.1; after it, the local topic must still carry that id (else
UNKNOWN_TOPIC_ID, ``_local_topic_id_error``); older versions pay one version
test per topic for it.

acks=all needs ``min.insync.replicas`` in the ISR (NOT_ENOUGH_REPLICAS; on a
single node there is nothing to check). Transactional batches are verified
(KIP-890 part 1, ``transaction.partition.verification.enable``); from Produce 12
(a transaction.version 2 client, which sends no AddPartitionsToTxn) their partitions
are first added to the transaction (KIP-890 part 2, ``append.add_to_transaction``),
whatever that setting says, as Kafka does. A request with transactional batches but
no transactional id is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka's
KafkaApis does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.internal_topics import INTERNAL_TOPICS
from kafkette.broker.partitions import sequence_gaps
from kafkette.broker.partitions.append import (
    IMPLICIT_ADD_SINCE,
    ProduceAppend,
    Verification,
    add_to_transaction,
    append_produced,
    wait_for_acks,
)
from kafkette.broker.security.authorizer.checks import (
    WRITE,
    topic_denied,
    transactional_id_denied,
)
from kafkette.broker.topic_ids import topic_name
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import flagged_transactional

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.produce")


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


async def handle_produce(broker: Broker, request: Request) -> dict | None:
    body = request.body
    acks = body["acks"]
    responses: list[dict] = []
    work: list[ProduceAppend] = []
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
        # Once per topic, not per partition: a pure read of the topic's config.
        limit = 0 if topic_error else broker.topics.max_message_bytes(name)
        for data in topic["partition_data"]:
            response = _partition_response(data["index"])
            partition_responses.append(response)
            if topic_error:
                response["error_code"] = int(topic_error)
                continue
            _prepare(broker, name, data, response, work, version, acks, limit)
        responses.append(
            {
                "name": name,
                "topic_id": topic["topic_id"],
                "partition_responses": partition_responses,
            }
        )
    if work and transactional_id is not None and version >= IMPLICIT_ADD_SINCE:
        work = await add_to_transaction(work, broker.transactions, transactional_id)
    if work:
        await append_produced(work, _verification(broker, transactional_id, version))
        if acks == -1:
            await wait_for_acks(work, body["timeout_ms"])
    if acks == 0:
        # Kafka closes the connection of an acks=0 producer whose records were refused;
        # where leadership moves, or with an authorizer, a refused write would otherwise
        # lose records silently.
        if broker.topics.leadership_moves or authorizer is not None:
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


def _verification(
    broker: Broker, transactional_id: str | None, version: int
) -> Verification | None:
    """How this request's transactional batches are verified (None: they are not)."""
    if transactional_id is None:
        return None
    if not broker.config.transactions.transaction_partition_verification_enable:
        return None
    return Verification(broker.transactions, transactional_id, version)


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
    work: list[ProduceAppend],
    version: int,
    acks: int,
    limit: int,
) -> None:
    """One partition's record set planned for the append (``limit``: the topic's
    max.message.bytes), or its response filled with why not."""
    if name in INTERNAL_TOPICS:
        log.info("produce to internal topic %s refused", name)
        response["error_code"] = int(ErrorCode.INVALID_TOPIC_EXCEPTION)
        response["error_message"] = f"cannot append to internal topic {name}"
        return
    partition = broker.topics.serving(name, data["index"])
    if isinstance(partition, ErrorCode):
        response["error_code"] = int(partition)
        return
    if acks == -1 and (error := partition.check_min_isr()) != ErrorCode.NONE:
        sequence_gaps.note_refused(partition, sequence_gaps.producer_of(data["records"] or b""),
                                   error)  # fmt: skip
        response["error_code"] = int(error)
        response["error_message"] = (
            f"The size of the current ISR is less than min.insync.replicas="
            f"{partition.min_insync_replicas()}"
        )
        return
    records = data["records"]
    if records is None or len(records) == 0:
        log.warning("produce to %s-%d refused: no record batch", name, data["index"])
        response["error_code"] = int(ErrorCode.INVALID_RECORD)
        return
    work.append(ProduceAppend(partition, records, response, limit, version, partition.leader_epoch))


def _has_transactional_batch(body: dict) -> bool:
    """Any record set flagged transactional? Two bytes read per partition (every
    non-transactional Produce pays this, so no header is parsed)."""
    for topic in body["topic_data"]:
        for data in topic["partition_data"]:
            records = data["records"]
            if records is not None and flagged_transactional(records):
                return True
    return False
