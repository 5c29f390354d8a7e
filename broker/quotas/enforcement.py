"""Answering a request under client quotas: throttle_time_ms and KIP-219 muting.

Called by the connection loop (broker/connection.py), once per request, only while a
quota exists. As Kafka's KafkaApis does:

- Produce records the request's size against ``producer_byte_rate``; every request
  records the event loop's time spent on it against ``request_percentage``.
- Fetch (from a consumer, not a follower) records the encoded response's size against
  ``consumer_byte_rate``. When it must be throttled (by either quota) the size is taken
  back and the answer is an empty Fetch response (no partitions) carrying the throttle
  time: the records stay for the fetch after the throttle, nothing is sent twice. Its
  fetch session is left as Kafka leaves it: a throttled full fetch answers session id
  0 and starts none, a throttled incremental one leaves the session's cached data.
- The throttle is the longer of the two; it goes into the response's
  ``throttle_time_ms`` where the response has that field.
- KIP-219: the response goes out at once and the connection is then muted (nothing more
  is read from it) for the throttle time; the client, which sees throttle_time_ms, holds
  back too. A client older than KIP-219 (Produce < 6, Fetch < 8) gets its response only
  after the throttle time, as before KIP-219.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

import trio

from kafkette.broker.fetch_sessions.answer import finish_answer
from kafkette.broker.quotas.entities import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
)
from kafkette.broker.response_writer import send_chunks
from kafkette.wire.apis import ApiKey, api_spec
from kafkette.wire.schema import in_range, load_message

if TYPE_CHECKING:
    from kafkette.broker.quotas.manager import QuotaManager
    from kafkette.wire.connection import Request, ServerConnection

# The first version of each API whose client throttles itself (KIP-219); below it the
# broker delays the response instead.
CLIENT_THROTTLES_FROM = {ApiKey.PRODUCE: 6, ApiKey.FETCH: 8}


@functools.cache
def _has_throttle_field(api_key: int, version: int) -> bool:
    api = api_spec(api_key)
    if api is None:
        return False
    definition = load_message(api.response_definition)
    return any(
        f.name == "throttle_time_ms" and in_range(version, f.versions) for f in definition.fields
    )


def _client_identity(request: Request) -> tuple[str, str]:
    session = request.session
    principal = getattr(session, "principal", None)
    user = principal.name if principal is not None else "ANONYMOUS"
    return user, request.header.client_id or ""


def _from_follower(request: Request) -> bool:
    body = request.body
    replica_id = body.get("replica_id", -1)
    if replica_id is None or replica_id < 0:
        state = body.get("replica_state")
        replica_id = state.get("replica_id", -1) if isinstance(state, dict) else -1
    return replica_id is not None and replica_id >= 0


def start_timing(quotas: QuotaManager) -> None:
    """Before the handler runs: count the event loop's time on this task from now (the
    current step counts from here, not from its start: that was the frame's reading)."""
    timer = quotas.timer
    if timer is not None:
        timer.busy[trio.lowlevel.current_task()] = 0.0
        timer.step_started = time.perf_counter()


def _busy_seconds(quotas: QuotaManager) -> float:
    """The handler's time: its finished steps, and the current one so far."""
    timer = quotas.timer
    if timer is None:
        return 0.0
    busy = timer.busy.pop(trio.lowlevel.current_task(), None)
    if busy is None:  # the timer came after this request started
        return 0.0
    return busy + time.perf_counter() - timer.step_started


async def answer(
    quotas: QuotaManager,
    conn: ServerConnection,
    stream: trio.abc.Stream,
    request: Request,
    response: dict | None,
) -> tuple[int, float]:
    """Record the request, throttle it if over quota and send its response (if any).

    Returns the response's bytes and the seconds to keep the connection muted."""
    header = request.header
    api_key = header.api_key
    now_ms = time.monotonic() * 1000
    busy = _busy_seconds(quotas)
    if api_key == ApiKey.FETCH and _from_follower(request):
        resolved = {}  # replication is never throttled by client quotas
    else:
        resolved = quotas.resolve(*_client_identity(request))
    throttle_ms = 0.0
    if resolved:
        if busy:
            throttle_ms = quotas.record(resolved, REQUEST_PERCENTAGE, busy * 100.0, now_ms)
        if api_key == ApiKey.PRODUCE:
            # The request's size without its length prefix (Kafka's request.sizeInBytes).
            produce_ms = quotas.record(resolved, PRODUCER_BYTE_RATE, request.size, now_ms)
            throttle_ms = max(throttle_ms, produce_ms)
    if response is None:  # Produce acks=0: no answer, but the connection is muted
        return 0, throttle_ms / 1000
    timed = REQUEST_PERCENTAGE in resolved
    encoding_started = time.perf_counter() if timed else 0.0
    chunks = None
    if api_key == ApiKey.FETCH:
        if CONSUMER_BYTE_RATE in resolved:
            chunks = conn.encode_response(header, response)
            size = int.from_bytes(chunks[0][:4], "big")  # type: ignore[index]  # no prefix
            fetch_ms = quotas.record(resolved, CONSUMER_BYTE_RATE, size, now_ms)
            throttle_ms = max(throttle_ms, fetch_ms)
            if throttle_ms > 0:
                quotas.unrecord(resolved, CONSUMER_BYTE_RATE, size, now_ms)
        throttled = throttle_ms > 0
        # The fetch session follows only an answer sent whole (Kafka decides the throttle
        # before touching the session): a throttled full fetch starts none.
        if finish_answer(response, throttled):
            chunks = None
        if throttled:
            response = {
                "error_code": response.get("error_code", 0),
                "session_id": response.get("session_id", 0),
                "responses": [],
            }
            chunks = None
    throttle = round(throttle_ms)
    if throttle > 0 and _has_throttle_field(api_key, header.api_version):
        # A copy: a handler may answer with a dict it keeps (ApiVersions' is cached).
        response = {
            **response,
            "throttle_time_ms": max(response.get("throttle_time_ms") or 0, throttle),
        }
        chunks = None
    if chunks is None:
        chunks = conn.encode_response(header, response)
    response_bytes = 4 + int.from_bytes(chunks[0][:4], "big")  # type: ignore[index]
    encoding_s = time.perf_counter() - encoding_started if timed else 0.0
    seconds = throttle / 1000
    if throttle > 0 and header.api_version < CLIENT_THROTTLES_FROM.get(api_key, 0):
        await trio.sleep(seconds)  # before KIP-219: the answer itself is late
        seconds = 0.0
    await send_chunks(stream, chunks)
    if timed:
        # Encoding the answer counts too, without throttling this request (Kafka records
        # its network thread's time the same way, once the response went out). Sending is
        # not counted: its time is mostly waiting for the client's socket.
        quotas.record(resolved, REQUEST_PERCENTAGE, encoding_s * 100.0, now_ms)
    return response_bytes, seconds
