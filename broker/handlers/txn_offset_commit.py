"""TxnOffsetCommit (API 28): a transactional producer commits its consumer's offsets.

What ``sendOffsetsToTransaction`` sends after AddOffsetsToTxn: the offsets are
written to the group's ``__consumer_offsets`` partition as part of the
producer's transaction and become the group's committed offsets only when the
transaction commits (``GroupCoordinator.write_txn_marker``). Answers as Kafka
4.0's KafkaApis and group coordinator do:

- an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION for it, the others go on;
- an empty group id: INVALID_GROUP_ID for every partition;
- the transaction coordinator's verification of the offsets partition (see
  ``verify_offsets_partition``) and the partition's producer state
  (INVALID_PRODUCER_EPOCH for a fenced epoch): that error for every partition;
- the group checks of ClassicGroup.validateOffsetCommit for transactional
  commits (v3+ carry generation, member id and instance id): ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, COORDINATOR_NOT_AVAILABLE;
- OFFSET_METADATA_TOO_LARGE per partition;
- a failed write: COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR (clients retry);
- before v2, COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE
  (0.11-2.0 clients did not expect it, KAFKA-7296).

v5 is a transaction.version 2 client's, which sends no AddOffsetsToTxn: the group's
offsets partition is first added to the transaction (the transaction coordinator's
AddPartitionsToTxn, verify_only false, as Kafka's group coordinator has its broker do;
``TransactionCoordinator.add_partitions_for_write``), whatever
``transaction.partition.verification.enable`` says. A partition the transaction did
not add is TRANSACTION_ABORTABLE from v4 (INVALID_TXN_STATE before), as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.groups import Outcome
from kafkette.broker.groups.coordinator import CoordinatorUnavailable, ProducerRejected
from kafkette.broker.handlers.offset_commit_fetch import (
    errors_by_topic,
    offset_commits,
    topics_allowed,
)
from kafkette.broker.internal_topics import OFFSETS_TOPIC
from kafkette.broker.security.authorizer.checks import (
    READ,
    TRANSACTIONAL_ID,
    WRITE,
    denied,
    group_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.transactions.coordinator import TransactionCoordinator
    from kafkette.wire.connection import Request

TopicPartition = tuple[str, int]


IMPLICIT_ADD_SINCE = 5  # TxnOffsetCommit 5: transaction.version 2
TRANSACTION_ABORTABLE_SINCE = 4


def verify_offsets_partition(
    broker: Broker, body: dict, offsets_partition: int, version: int = IMPLICIT_ADD_SINCE
) -> ErrorCode:
    """The transaction coordinator's check that this transaction added the group's
    offsets partition (AddOffsetsToTxn) with this producer id and current epoch.

    Kafka 4.0 verifies TxnOffsetCommit like a transactional Produce (KIP-890
    part 1) and maps the coordinator's answer through the group coordinator's
    error handling: a fenced producer sees INVALID_PRODUCER_EPOCH, a
    transaction whose markers are still being written COORDINATOR_NOT_AVAILABLE
    (clients look the coordinator up again and retry). A request without a
    producer id cannot belong to any transaction (INVALID_PRODUCER_ID_MAPPING)
    and is never written as an ordinary commit.
    """
    if body["producer_id"] < 0 or body["producer_epoch"] < 0:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if not broker.config.transactions.transaction_partition_verification_enable:
        return ErrorCode.NONE
    error = broker.transactions.verify_partition(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        OFFSETS_TOPIC, offsets_partition,
    )
    return commit_error(error, version)


def commit_error(error: ErrorCode, version: int) -> ErrorCode:
    """The transaction coordinator's answer (verification or implicit add) as the group
    coordinator answers it to a TxnOffsetCommit of ``version``: Kafka's
    AddPartitionsToTxnManager mappings, then its coordinator error handling."""
    if error == ErrorCode.TRANSACTION_ABORTABLE and version < TRANSACTION_ABORTABLE_SINCE:
        return ErrorCode.INVALID_TXN_STATE
    if error == ErrorCode.CONCURRENT_TRANSACTIONS and version >= IMPLICIT_ADD_SINCE:
        return error  # retried by TV2 clients, as Produce 12+ answers it
    return _VERIFICATION_ERRORS.get(error, error)


_VERIFICATION_ERRORS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    # Kafka's group coordinator: a failed verification request (NETWORK_EXCEPTION) is
    # COORDINATOR_LOAD_IN_PROGRESS, which clients retry without a coordinator lookup.
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


async def _add_offsets_partition(
    transactions: TransactionCoordinator, body: dict, offsets_partition: int
) -> ErrorCode:
    """v5: the group's offsets partition added to the transaction (NONE once it is)."""
    if body["producer_id"] < 0 or body["producer_epoch"] < 0:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    return await transactions.add_partitions_for_write(
        body["transactional_id"], body["producer_id"], body["producer_epoch"],
        frozenset({(OFFSETS_TOPIC, offsets_partition)}),
        retry=False,  # Kafka's group coordinator answers CONCURRENT_TRANSACTIONS at once
    )


async def handle_txn_offset_commit(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    if broker.authorizer is not None:
        # Kafka: WRITE on the transactional id, READ on the group, READ on each topic.
        if denied(broker, request, WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
            refusal = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif group_denied(broker, request, READ, body["group_id"]):
            refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            refusal = ErrorCode.NONE
        if refusal:
            errors = {(t["name"], p["partition_index"]): int(refusal)
                      for t in body["topics"] for p in t["partitions"]}
            return {"throttle_time_ms": 0, "topics": errors_by_topic(body["topics"], errors)}
    allowed, refused = topics_allowed(broker, request, READ, body["topics"])
    offsets, errors = offset_commits(broker, allowed, with_leader_epoch=version >= 2)
    errors.update(refused)
    if offsets:
        errors.update(await _commit(broker, body, version, offsets))
    if version < 2:
        loading = int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        unavailable = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        errors = {tp: unavailable if e == loading else e for tp, e in errors.items()}
    return {"throttle_time_ms": 0, "topics": errors_by_topic(body["topics"], errors)}


async def _commit(
    broker: Broker,
    body: dict,
    version: int,
    offsets: dict[TopicPartition, tuple[int, int, str | None]],
) -> dict[TopicPartition, int]:
    group_id = body["group_id"]
    if not group_id:
        return dict.fromkeys(offsets, int(ErrorCode.INVALID_GROUP_ID))
    coordinator = broker.groups
    v3 = version >= 3
    producer_id = body["producer_id"]
    producer_epoch = body["producer_epoch"]

    if version >= IMPLICIT_ADD_SINCE:
        added = await _add_offsets_partition(
            broker.transactions, body, broker.groups.state.partition_for(group_id)
        )
        if added != ErrorCode.NONE:
            return dict.fromkeys(offsets, int(commit_error(added, version)))

    def call(state, now):
        generation = body["generation_id"] if v3 else -1
        member_id = body["member_id"] if v3 else ""
        # A KIP-848 group checks member and epoch itself (broker/groups/consumer); a
        # share group has no consumer offsets.
        verdict = state.validate_offset_commit(
            group_id, member_id, generation, version=-1, transactional=True,
            instance_id=body["group_instance_id"] if v3 else None,
        )
        if verdict:
            return Outcome(dict.fromkeys(offsets, int(verdict)))
        consumer = verdict is not None
        return state.offsets.commit_txn_offsets(
            group_id=group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            generation_id=-1 if consumer else generation,
            member_id="" if consumer else member_id,
            group_instance_id=None if consumer or not v3 else body["group_instance_id"],
            offsets=offsets,
            now_ms=now,
        )

    try:
        outcome = await coordinator.run_transactional(
            call, group_id=group_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify=lambda partition: verify_offsets_partition(broker, body, partition, version),
        )
    except (CoordinatorUnavailable, ProducerRejected) as exc:
        return dict.fromkeys(offsets, int(exc.code))
    return {tp: int(e) for tp, e in outcome.result.items()}
