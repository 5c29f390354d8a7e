"""GetTelemetrySubscriptions (71) and PushTelemetry (72): KIP-714 without a metrics plugin.

Served but not advertised (``wire/apis.py``), as Kafka 4.0 does when no
ClientTelemetryReceiver is configured. The rules are in ``broker/telemetry/``: the
instances and their throttling, the subscriptions they are evaluated from, the push
checks. A push is checked as Kafka checks it and then dropped: no metrics are kept.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.session import Session
from kafkette.broker.telemetry.instances import (
    ACCEPTED_COMPRESSION_TYPES,
    DELTA_TEMPORALITY,
    RESERVED_INSTANCE_IDS,
    TELEMETRY_MAX_BYTES,
    ClientIdentity,
    current_state,
    identity_of,
)
from kafkette.broker.telemetry.push import receive_push
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

ZERO_UUID = uuid.UUID(int=0)


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
    state = await current_state(broker)
    now = _now_ms()
    instance = state.instance(instance_id, _identity(request), now, _session(request))
    if not state.accept_get(instance, now):
        return _get_error(ErrorCode.THROTTLING_QUOTA_EXCEEDED)
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "client_instance_id": instance_id,
        "subscription_id": instance.subscription_id,
        "accepted_compression_types": list(ACCEPTED_COMPRESSION_TYPES),
        "push_interval_ms": instance.push_interval_ms,
        "telemetry_max_bytes": TELEMETRY_MAX_BYTES,
        "delta_temporality": DELTA_TEMPORALITY,
        "requested_metrics": list(instance.metrics),
    }


def _push_answer(code: ErrorCode) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code)}


async def handle_push_telemetry(broker: Broker, request: Request) -> dict:
    body = request.body
    instance_id = body["client_instance_id"]
    if instance_id is None or instance_id in RESERVED_INSTANCE_IDS:
        return _push_answer(ErrorCode.INVALID_REQUEST)
    state = await current_state(broker)
    now = _now_ms()
    instance = state.instance(instance_id, _identity(request), now, _session(request))
    return _push_answer(await receive_push(instance, state, body, now, request.peer))
