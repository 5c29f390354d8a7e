"""PushTelemetry's checks, in Kafka 4.0's order; a payload is checked, then dropped.

With no ClientTelemetryReceiver plugin Kafka 4.0 still checks a push before handing it
to no one, and so does kafkette: nothing of a payload is kept. A payload is decompressed
only to check it, in the state's own few worker threads.
"""

from __future__ import annotations

import logging

import trio

from kafkette.broker.telemetry.instances import (
    PUSH_COMPRESSION_TYPES,
    TELEMETRY_MAX_BYTES,
    Subscription,
    TelemetryState,
)
from kafkette.wire.compression import (
    CompressionError,
    CompressionType,
    DecompressedTooLargeError,
    decompressed_view,
)
from kafkette.wire.errors import ErrorCode

log = logging.getLogger("kafkette.telemetry")

# A payload is decompressed only to check it, as Kafka does before handing it to no
# plugin; past this much it is accepted unread rather than expanded further.
DECOMPRESS_CHECK_LIMIT = 4 * TELEMETRY_MAX_BYTES


async def receive_push(
    instance: Subscription, state: TelemetryState, body: dict, now: float, peer: str
) -> ErrorCode:
    """The answer to a PushTelemetry ``body`` from ``instance``; the instance then keeps
    the push's terminating flag (Kafka sets it in a ``finally`` after its checks,
    whatever they said) and the answer as its last error."""
    try:
        code = await _check_push(instance, state, body, now, peer)
    finally:
        instance.terminating = bool(body["terminating"])
    instance.last_error = code
    return code


def _decompresses(codec: int, payload: bytes) -> bool:
    try:
        with decompressed_view(codec, payload, DECOMPRESS_CHECK_LIMIT):
            pass
    except DecompressedTooLargeError:
        return True
    except CompressionError:
        return False
    return True


async def _check_push(
    instance: Subscription, state: TelemetryState, body: dict, now: float, peer: str
) -> ErrorCode:
    """The push's answer, checked in Kafka 4.0's order (the package doc)."""
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
