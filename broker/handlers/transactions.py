"""Transaction APIs: decode, call the transaction coordinator, encode.

AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers
(27), DescribeProducers (61), DescribeTransactions (65), ListTransactions
(66). The rules live in ``broker/transactions``; what depends on the
request's version is decided here: AddPartitionsToTxn's v4+ batched form (from
brokers; verify_only false is a TV2 leader's implicit add), EndTxn v5 (the client
speaks transaction.version 2: the epoch is bumped and answered), as Kafka's
TransactionVersion.transactionVersionFor* tell them apart.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.clock import now_ms
from kafkette.broker.internal_topics import INTERNAL_TOPICS, OFFSETS_TOPIC
from kafkette.broker.security.authorizer.checks import (
    CLUSTER_ACTION,
    DESCRIBE,
    READ,
    TRANSACTIONAL_ID,
    WRITE,
    cluster_denied,
    denied,
    group_denied,
    topic_denied,
)
from kafkette.broker.transactions.markers import write_marker
from kafkette.broker.transactions.state import STATE_BY_NAME, TV_0, TV_2, TxnState
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.transactions")


def for_version(error: ErrorCode | int, version: int, fenced_since: int) -> int:
    """PRODUCER_FENCED as a request of ``version`` understands it.

    KIP-588 added PRODUCER_FENCED (InitProducerId v4, AddPartitionsToTxn,
    AddOffsetsToTxn and EndTxn v2); older versions get INVALID_PRODUCER_EPOCH,
    which their clients treat as fencing, as Kafka's KafkaApis answers them.
    """
    if error == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(error)


# AddPartitionsToTxn ---------------------------------------------------------


def _partition_results(topics: list[dict], errors: dict[tuple[str, int], int]) -> list[dict]:
    return [
        {
            "name": topic["name"],
            "results_by_partition": [
                {"partition_index": index, "partition_error_code": errors[(topic["name"], index)]}
                for index in topic["partitions"]
            ],
        }
        for topic in topics
    ]


async def _add_one(
    broker: Broker,
    request: Request,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[dict],
    verify_only: bool = False,
    client_tv: int = TV_0,
) -> list[dict]:
    """One transaction's AddPartitionsToTxn: per-partition results, Kafka's rules.

    Partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
    OPERATION_NOT_ATTEMPTED (KafkaApis refuses the whole request before the
    coordinator sees it); otherwise every partition gets the coordinator's answer.
    """
    wanted = [(t["name"], index) for t in topics for index in t["partitions"]]
    if broker.authorizer is not None:
        # Kafka: WRITE on the transactional id, then WRITE on each topic.
        if denied(broker, request, WRITE, TRANSACTIONAL_ID, transactional_id):
            code = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return _partition_results(topics, dict.fromkeys(wanted, code))
        refused = {t["name"] for t in topics if topic_denied(broker, request, WRITE, t["name"])}
    else:
        refused = set()
    unknown = {tp for tp in wanted if tp[0] not in refused and not broker.topics.has_partition(*tp)}
    if unknown or refused:
        errors = {
            tp: int(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if tp[0] in refused
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
            )
            for tp in wanted
        }
        return _partition_results(topics, errors)
    coordinator = broker.transactions
    if verify_only and (not_here := coordinator.coordinator_error(transactional_id)):
        errors = dict.fromkeys(wanted, int(not_here))  # a cluster: another broker's id
    elif verify_only:
        errors = {
            tp: int(
                coordinator.verify_partition(transactional_id, producer_id, producer_epoch, *tp)
            )
            for tp in wanted
        }
    else:
        error = await coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, frozenset(wanted), client_tv
        )
        errors = dict.fromkeys(wanted, int(error))
    return _partition_results(topics, errors)


async def handle_add_partitions_to_txn(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    if version <= 3:
        results = await _add_one(
            broker,
            request,
            body["v3_and_below_transactional_id"],
            body["v3_and_below_producer_id"],
            body["v3_and_below_producer_epoch"],
            body["v3_and_below_topics"],
        )
        for topic in results:
            for result in topic["results_by_partition"]:
                code = result["partition_error_code"]
                result["partition_error_code"] = for_version(code, version, 2)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    if cluster_denied(broker, request, CLUSTER_ACTION):  # v4+: brokers verifying
        return {"throttle_time_ms": 0,
                "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "results_by_transaction": []}
    by_transaction = []
    for txn in body["transactions"]:
        results = await _add_one(
            broker,
            request,
            txn["transactional_id"],
            txn["producer_id"],
            txn["producer_epoch"],
            txn["topics"],
            verify_only=txn["verify_only"],
            client_tv=TV_2,  # v4+ comes from a broker adding for a TV2 client
        )
        by_transaction.append(
            {"transactional_id": txn["transactional_id"], "topic_results": results}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "results_by_transaction": by_transaction,
    }


# AddOffsetsToTxn, EndTxn ------------------------------------------------------


async def handle_add_offsets_to_txn(broker: Broker, request: Request) -> dict:
    body = request.body
    coordinator = broker.transactions
    if denied(broker, request, WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif group_denied(broker, request, READ, body["group_id"]):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not body["group_id"]:
        error = ErrorCode.INVALID_REQUEST
    else:
        error = await coordinator.add_partitions(
            body["transactional_id"],
            body["producer_id"],
            body["producer_epoch"],
            frozenset({coordinator.offsets_partition_for(body["group_id"])}),
        )
    return {"throttle_time_ms": 0, "error_code": for_version(error, request.header.api_version, 2)}


async def handle_end_txn(broker: Broker, request: Request) -> dict:
    """EndTxn; v5 is a transaction.version 2 client's: its epoch is bumped and the
    answer carries the producer id and epoch to go on with (-1 on errors, as Kafka)."""
    body = request.body
    version = request.header.api_version
    if denied(broker, request, WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
        code = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1,
                "producer_epoch": -1}
    result = await broker.transactions.end_transaction(
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        body["committed"],
        TV_2 if version >= 5 else TV_0,
    )
    return {
        "throttle_time_ms": 0,
        "error_code": for_version(result.error, version, 2),
        "producer_id": result.producer_id,
        "producer_epoch": result.producer_epoch,
    }


# WriteTxnMarkers ----------------------------------------------------------------


async def handle_write_txn_markers(broker: Broker, request: Request) -> dict:
    """Markers sent to the partitions' leader: by ``kafka-transactions.sh abort`` (a
    hanging transaction), in a cluster also by other coordinators."""
    results = []
    # Kafka: only brokers (CLUSTER_ACTION) write markers; else every partition is refused.
    refused = cluster_denied(broker, request, CLUSTER_ACTION)
    for marker in request.body["markers"]:
        topics = []
        for topic in marker["topics"]:
            partitions = []
            for index in topic["partition_indexes"]:
                if refused:
                    error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif topic["name"] in INTERNAL_TOPICS and topic["name"] != OFFSETS_TOPIC:
                    error = ErrorCode.INVALID_TOPIC_EXCEPTION
                elif (bound := broker.topology.highest_coordinator_epoch) is not None and (
                    marker["coordinator_epoch"] > bound
                ):
                    # No coordinator here has a higher epoch (a single node's own):
                    # such a marker would be remembered by the partition and fence
                    # every later marker of the real coordinator (a stuck LSO for ever).
                    log.warning(
                        "WriteTxnMarkers for %s-%d refused: coordinator epoch %d above %d",
                        topic["name"], index, marker["coordinator_epoch"], bound,
                    )
                    error = ErrorCode.INVALID_REQUEST
                else:
                    error = await write_marker(
                        broker,
                        topic["name"],
                        index,
                        producer_id=marker["producer_id"],
                        producer_epoch=marker["producer_epoch"],
                        coordinator_epoch=marker["coordinator_epoch"],
                        committed=marker["transaction_result"],
                    )
                partitions.append({"partition_index": index, "error_code": int(error)})
            topics.append({"name": topic["name"], "partitions": partitions})
        results.append({"producer_id": marker["producer_id"], "topics": topics})
    return {"markers": results}


# Admin: ListTransactions, DescribeTransactions, DescribeProducers ------------------


async def handle_list_transactions(broker: Broker, request: Request) -> dict:
    body = request.body
    state_names = body["state_filters"]
    unknown = [name for name in state_names if name not in STATE_BY_NAME]
    states = {STATE_BY_NAME[name] for name in state_names if name in STATE_BY_NAME}
    producer_ids = set(body["producer_id_filters"])
    duration = body["duration_filter"] if request.header.api_version >= 1 else -1
    now = now_ms()
    listed = []
    for metadata in broker.transactions.all():
        if metadata.state == TxnState.DEAD:
            continue
        if denied(broker, request, DESCRIBE, TRANSACTIONAL_ID, metadata.transactional_id,
                  quiet=True):
            continue  # Kafka lists only the ids the principal may describe
        if producer_ids and metadata.producer_id not in producer_ids:
            continue
        if state_names and metadata.state not in states:
            continue
        if duration >= 0 and now - metadata.start_ms < duration:
            continue
        listed.append(
            {
                "transactional_id": metadata.transactional_id,
                "producer_id": metadata.producer_id,
                "transaction_state": metadata.state.display_name,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "unknown_state_filters": unknown,
        "transaction_states": listed,
    }


async def handle_describe_transactions(broker: Broker, request: Request) -> dict:
    states = []
    for transactional_id in request.body["transactional_ids"]:
        metadata = broker.transactions.get(transactional_id)
        # In a cluster, an id of a partition this broker does not lead (or still loads):
        # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, as Kafka.
        not_here = broker.transactions.coordinator_error(transactional_id)
        if denied(broker, request, DESCRIBE, TRANSACTIONAL_ID, transactional_id):
            not_here = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if not_here or metadata is None or metadata.state == TxnState.DEAD:
            states.append(
                {
                    "error_code": int(not_here or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND),
                    "transactional_id": transactional_id,
                    "transaction_state": "",
                    "transaction_timeout_ms": 0,
                    "transaction_start_time_ms": -1,
                    "producer_id": -1,
                    "producer_epoch": -1,
                    "topics": [],
                }
            )
            continue
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(metadata.partitions):
            if not topic_denied(broker, request, DESCRIBE, topic, quiet=True):  # hidden, as Kafka
                topics.setdefault(topic, []).append(index)
        states.append(
            {
                "error_code": ErrorCode.NONE,
                "transactional_id": transactional_id,
                "transaction_state": metadata.state.display_name,
                "transaction_timeout_ms": metadata.timeout_ms,
                "transaction_start_time_ms": metadata.start_ms,
                "producer_id": metadata.producer_id,
                "producer_epoch": metadata.producer_epoch,
                "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            }
        )
    return {"throttle_time_ms": 0, "transaction_states": states}


async def handle_describe_producers(broker: Broker, request: Request) -> dict:
    """The producers a partition remembers (its producer table), as Kafka's
    ``kafka-transactions.sh describe-producers`` shows them."""
    topics = []
    for topic in request.body["topics"]:
        partitions = []
        refused = topic_denied(broker, request, READ, topic["name"])
        for index in topic["partition_indexes"]:
            partition = None if refused else broker.topics.partition(topic["name"], index)
            if partition is None:
                partitions.append(
                    {
                        "partition_index": index,
                        "error_code": int(
                            ErrorCode.TOPIC_AUTHORIZATION_FAILED
                            if refused
                            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ),
                        "error_message": None,
                        "active_producers": [],
                    }
                )
                continue
            producers = [
                {
                    "producer_id": producer_id,
                    "producer_epoch": entry.epoch,
                    "last_sequence": entry.batches[-1].last_sequence if entry.batches else -1,
                    "last_timestamp": entry.last_append_ms,
                    "coordinator_epoch": entry.coordinator_epoch,
                    "current_txn_start_offset": entry.current_txn_first_offset,
                }
                for producer_id, entry in partition.producers()
            ]
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": ErrorCode.NONE,
                    "error_message": None,
                    "active_producers": producers,
                }
            )
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
