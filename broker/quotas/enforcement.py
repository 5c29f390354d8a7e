"""Client quotas' decisions for one request: its throttle time, and what the throttle changes.

Called by the answer path (broker/network/answer.py), once per request, only while a
quota exists; the answer path encodes and sends, this module only records and decides.
As Kafka's KafkaApis does:

- Produce records the request's size against ``producer_byte_rate``; every request
  records the event loop's time spent on it against ``request_percentage``.
- Fetch (from a consumer, not a follower) records the encoded response's size against
  ``consumer_byte_rate``. When it must be throttled (by either quota) the size is taken
  back and the answer is an empty Fetch response (no partitions) carrying the throttle
  time: the records stay for the fetch after the throttle, nothing is sent twice. Its
  fetch session is left as Kafka leaves it (the answer's ``finish`` hook is told it is
  throttled): a throttled full fetch answers session id 0 and starts none, a throttled
  incremental one leaves the session's cached data.
- The throttle is the longer of the two; it goes into the response's
  ``throttle_time_ms`` where the response has that field.
- KIP-219: the response goes out at once and the connection is then muted (nothing more
  is read from it) for the throttle time; the client, which sees throttle_time_ms, holds
  back too. A client older than KIP-219 (Produce < 6, Fetch < 8) gets its response only
  after the throttle time, as before KIP-219 (the connection gives the request's memory
  back to the pool before that wait).
- Throttle times are whole milliseconds, rounded first: only a throttle of at least one
  millisecond after rounding throttles (Kafka's are integers throughout).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.quotas.entities import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
)
from kafkette.wire.apis import ApiKey, api_spec
from kafkette.wire.fetch_replica import replica_id_of
from kafkette.wire.schema import in_range, load_message

if TYPE_CHECKING:
    from kafkette.broker.quotas.manager import QuotaManager
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request, RequestHeader

# The first version of each API whose client throttles itself (KIP-219); below it the
# broker delays the response instead.
CLIENT_THROTTLES_FROM = {ApiKey.PRODUCE: 6, ApiKey.FETCH: 8}


INT32_MAX = 2**31 - 1  # the largest throttle_time_ms the answer can carry


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


def _from_follower(broker: Broker, request: Request) -> bool:
    """Replication is never throttled by client quotas, but a follower is only what the
    Fetch handler takes for one: in cluster mode, and a live broker's id. On a single
    node (or with an id no broker has) a Fetch claiming a replica id is a consumer's,
    so that ``replica_id=0`` is no way around a consumer quota."""
    cluster = broker.cluster
    if cluster is None:
        return False
    replica_id = replica_id_of(request.body, request.header.api_version)
    return replica_id is not None and replica_id >= 0 and replica_id in cluster.metadata.brokers


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


@dataclass(slots=True)
class Throttle:
    """One request's quota accounting, made by :func:`decide`: the quotas that apply to
    its client (``resolved``, empty for none) and its throttle so far (``ms``, whole
    milliseconds). The answer path finishes it: the response's size (a consumer's
    Fetch), then the time spent encoding."""

    quotas: QuotaManager
    resolved: dict
    now_ms: float
    ms: int

    def measures_response(self, api_key: int) -> bool:
        """Whether the encoded response's size counts (a consumer's Fetch, under a
        ``consumer_byte_rate``): the answer path then encodes before finishing."""
        return api_key == ApiKey.FETCH and CONSUMER_BYTE_RATE in self.resolved

    def record_response(self, size: int) -> None:
        """Record the response's size (no length prefix); taken back if it throttles."""
        quotas, resolved = self.quotas, self.resolved
        fetch_ms = quotas.record(resolved, CONSUMER_BYTE_RATE, size, self.now_ms)
        self.ms = max(self.ms, min(round(fetch_ms), INT32_MAX))
        if self.ms > 0:
            quotas.unrecord(resolved, CONSUMER_BYTE_RATE, size, self.now_ms)

    @property
    def times_encoding(self) -> bool:
        return REQUEST_PERCENTAGE in self.resolved

    def record_encoding(self, seconds: float) -> None:
        """Encoding the answer counts too, without throttling this request (Kafka records
        its network thread's time the same way, once the response is done). Sending is
        not counted: its time is mostly waiting for the client's socket."""
        self.quotas.record(self.resolved, REQUEST_PERCENTAGE, seconds * 100.0, self.now_ms)

    def delays_answer(self, header: RequestHeader) -> bool:
        """A client older than KIP-219 gets its answer late instead of being muted."""
        return self.ms > 0 and header.api_version < CLIENT_THROTTLES_FROM.get(header.api_key, 0)


def decide(broker: Broker, quotas: QuotaManager, request: Request) -> Throttle:
    """After the handler: record the request (its time, a Produce's size) and decide its
    throttle so far."""
    api_key = request.header.api_key
    now_ms = time.monotonic() * 1000
    busy = _busy_seconds(quotas)
    if api_key == ApiKey.FETCH and _from_follower(broker, request):
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
    # Kafka's throttle times are whole milliseconds: less than half of one is none.
    # Byte-rate throttles have no upper bound (as Kafka); the wire field is an int32.
    return Throttle(quotas, resolved, now_ms, min(round(throttle_ms), INT32_MAX))


def throttled_response(header: RequestHeader, response: dict, throttle_ms: int) -> dict:
    """The answer a throttled request gets: a Fetch's without its partitions (Kafka's
    getThrottledResponse), and ``throttle_time_ms`` set where the response has it. A
    new dict: a handler may answer with one it keeps (ApiVersions' is cached)."""
    if header.api_key == ApiKey.FETCH:
        response = {
            "error_code": response.get("error_code", 0),
            "session_id": response.get("session_id", 0),
            "responses": [],
        }
    if _has_throttle_field(header.api_key, header.api_version):
        response = {
            **response,
            "throttle_time_ms": max(response.get("throttle_time_ms") or 0, throttle_ms),
        }
    return response
