"""GetTelemetrySubscriptions (71) and PushTelemetry (72): KIP-714 without a metrics plugin.

Served but not advertised (``wire/apis.py``), as Kafka 4.0 does when no
ClientTelemetryReceiver is configured. The rules are in ``broker/telemetry.py``;
the subscriptions are read from ``broker/client_metrics.py``'s store. A push is
checked as Kafka checks it and then dropped: no metrics are kept.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

import trio

from kafkette.broker.client_metrics import store_of
from kafkette.broker.client_metrics_zk import SubscriptionStoreUnavailable
from kafkette.broker.security.session import Session
from kafkette.broker.telemetry import (
    ACCEPTED_COMPRESSION_TYPES,
    DELTA_TEMPORALITY,
    PUSH_COMPRESSION_TYPES,
    RESERVED_INSTANCE_IDS,
    TELEMETRY_MAX_BYTES,
    ClientIdentity,
    Subscription,
    TelemetryState,
    identity_of,
    state_of,
)
from kafkette.wire.compression import (
    CompressionError,
    CompressionType,
    DecompressedTooLargeError,
    decompressed_view,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.telemetry")

ZERO_UUID = uuid.UUID(int=0)
# A payload is decompressed only to check it, as Kafka does before handing it to no
# plugin; past this much it is accepted unread rather than expanded further.
DECOMPRESS_CHECK_LIMIT = 4 * TELEMETRY_MAX_BYTES


async def _state(broker: Broker) -> TelemetryState:
    """The telemetry state, told the subscriptions as they are now.

    In a cluster they are read from ZooKeeper; when it cannot be reached the
    subscriptions last seen stand (one log line), so clients keep their answers."""
    store = store_of(broker)
    state = state_of(broker)
    try:
        subscriptions = {name: await store.configs(name) for name in await store.names()}
    except SubscriptionStoreUnavailable as exc:
        log.warning("client metrics subscriptions not read (%s): the last seen stand", exc)
        return state
    state.note_subscriptions(subscriptions)
    return state


def _session(request: Request) -> Session | None:
    return request.session if isinstance(request.session, Session) else None


def _identity(request: Request) -> ClientIdentity:
    return identity_of(request.peer, request.header.client_id, request.session)


def _now_ms() -> float:
    return trio.current_time() * 1000.0


def _get_error(code: ErrorCode) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "client_instance_id": ZERO_UUID,
        "subscription_id": 0,
        "accepted_compression_types": [],
        "push_interval_ms": 0,
        "telemetry_max_bytes": 0,
        "delta_temporality": False,
        "requested_metrics": [],
    }


async def handle_get_telemetry_subscriptions(broker: Broker, request: Request) -> dict:
    instance_id = request.body["client_instance_id"]
    if instance_id is None or instance_id == ZERO_UUID:
        instance_id = uuid.uuid4()
    state = await _state(broker)
    now = _now_ms()
    instance = state.instance(instance_id, _identity(request), now, _session(request))
    if not state.accept_get(instance, now):
        return _get_error(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "client_instance_id": instance_id,
        "subscription_id": instance.subscription_id,
        "accepted_compression_types": list(ACCEPTED_COMPRESSION_TYPES),
        "push_interval_ms": instance.push_interval_ms,
        "telemetry_max_bytes": TELEMETRY_MAX_BYTES,
        "delta_temporality": DELTA_TEMPORALITY,
        "requested_metrics": list(instance.metrics),
    }


def _decompresses(codec: int, payload: bytes) -> bool:
    try:
        with decompressed_view(codec, payload, DECOMPRESS_CHECK_LIMIT):
            pass
    except DecompressedTooLargeError:
        return True
    except CompressionError:
        return False
    return True


def _push_answer(code: ErrorCode) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code)}


async def handle_push_telemetry(broker: Broker, request: Request) -> dict:
    body = request.body
    instance_id = body["client_instance_id"]
    if instance_id is None or instance_id in RESERVED_INSTANCE_IDS:
        return _push_answer(ErrorCode.INVALID_REQUEST)
    state = await _state(broker)
    now = _now_ms()
    instance = state.instance(instance_id, _identity(request), now, _session(request))
    try:
        code = await _check_push(instance, state, body, now, request.peer)
    finally:
        # Kafka sets the flag in a finally after its checks, whatever they said.
        instance.terminating = bool(body["terminating"])
    instance.last_error = code
    return _push_answer(code)


async def _check_push(
    instance: Subscription, state: TelemetryState, body: dict, now: float, peer: str
) -> ErrorCode:
    """The push's answer, checked in Kafka 4.0's order (broker/telemetry.py)."""
    if instance.terminating:  # nothing is accepted after a terminating push
        return ErrorCode.INVALID_REQUEST
    # The timestamp moves whenever a push may come, a terminating one included.
    if not state.accept_push(instance, now) and not body["terminating"]:
        return ErrorCode.THROTTLING_QUOTA_EXCEEDED
    if body["subscription_id"] != instance.subscription_id:
        return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    codec = body["compression_type"]
    if codec not in PUSH_COMPRESSION_TYPES:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    metrics = body["metrics"]
    if metrics is not None and len(metrics) > TELEMETRY_MAX_BYTES:
        return ErrorCode.TELEMETRY_TOO_LARGE
    if metrics and codec != CompressionType.NONE:
        payload = bytes(metrics)
        decompresses = await trio.to_thread.run_sync(
            _decompresses, codec, payload, limiter=state.decompress_limiter
        )
        if not decompresses:
            log.info("telemetry push from %s does not decompress", peer)
            return ErrorCode.INVALID_RECORD
    return ErrorCode.NONE
