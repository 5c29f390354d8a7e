"""InitProducerId: idempotent producers here, transactional ones at the coordinator.

Without a transactional id every request gets a fresh producer id and epoch
0, whatever id and epoch it carries, as Kafka's coordinator "blindly accepts"
it: idempotent clients bump their epoch locally (KIP-360) and ask for a new id
only when the epoch is exhausted. Handing out the sent id with a higher epoch
would let any client take over another producer's id (a transactional one's
included) and fence it on partitions it writes.

A request with a transactional id goes to the transaction coordinator
(``TransactionCoordinator.init_producer_id``): epoch bump of the id's producer
id, fencing and abort of a running transaction (answered
CONCURRENT_TRANSACTIONS until the abort is written; the client retries),
CONCURRENT_TRANSACTIONS while markers are pending, and a new producer id once
the epoch is exhausted, as Kafka does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from kafkette.broker.handlers.transactions import for_version
from kafkette.broker.security.authorizer.checks import (
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    cluster_denied,
    denied,
)
from kafkette.broker.throttled_log import storage_errors
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


async def handle_init_producer_id(broker: Broker, request: Request) -> dict:
    body = request.body
    if broker.authorizer is not None and (refusal := _refusal(broker, request)):
        return {"throttle_time_ms": 0, "error_code": int(refusal),
                "producer_id": -1, "producer_epoch": -1}
    if body["transactional_id"] is not None:
        result = await broker.transactions.init_producer_id(
            body["transactional_id"],
            body["transaction_timeout_ms"],
            body["producer_id"],
            body["producer_epoch"],
        )
        return {
            "throttle_time_ms": 0,
            "error_code": for_version(result.error, request.header.api_version, 4),
            "producer_id": result.producer_id,
            "producer_epoch": result.producer_epoch,
        }
    try:
        producer_id = await trio.to_thread.run_sync(broker.producer_ids.allocate)
    except OSError as exc:
        # The next id block cannot be persisted (a full disk): Kafka answers
        # COORDINATOR_LOAD_IN_PROGRESS while it waits for a new block; clients retry.
        storage_errors.failure("allocating a producer id block in", "the data dir", exc)
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "producer_id": producer_id,
        "producer_epoch": 0,
    }


def _refusal(broker: Broker, request: Request) -> ErrorCode:
    """Kafka's checks: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on
    the cluster or WRITE on some topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED."""
    transactional_id = request.body["transactional_id"]
    if transactional_id is not None:
        if denied(broker, request, WRITE, TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return ErrorCode.NONE
    assert broker.authorizer is not None
    if cluster_denied(broker, request, IDEMPOTENT_WRITE, quiet=True) and not (
        broker.authorizer.allows_some(request.session, WRITE, TOPIC)
    ):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return ErrorCode.NONE
