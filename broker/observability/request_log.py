"""The request log and the request counters: one call per request, from the connection loop.

In the spirit of Kafka's ``kafka.request.logger``, the logger ``kafkette.request``
says at DEBUG, for every request answered::

    Produce v9 correlation_id=7 client_id='rdkafka' peer=127.0.0.1:50412 time_ms=0.412
        queue_ms=0.000 response_bytes=74 errors=-

(on one line)

and, at DEBUG too, when a connection opens and closes. A client that receives a
non-zero error code from Produce, Fetch, a group API or an admin API also gets a
WARNING line, at most one per (API, error) every ``WARN_INTERVAL_S`` seconds; the
ones held back are counted on the next line of that kind. Answers that are a normal step
of the protocol, which every client meets and retries (``EXPECTED_CODES``), do not warn.

Cost, on the path of every request: two ``perf_counter`` calls and the walk of
the response for error codes (one dict look-up per topic and per partition, never
per record), done only when someone wants it: the walk runs for the APIs that
warn, or for every API when metrics are on or DEBUG is enabled; the timing only
when metrics are on or DEBUG is enabled. bench/request_log_cost.py measures it.

The counters (:class:`RequestStats`) are plain ints and bucket arrays that the
Prometheus collectors read at scrape time; they exist only once
``--metrics-listen`` turned them on (``RequestObserver.stats``).
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left
from typing import TYPE_CHECKING

from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.wire.connection import Request

REQUEST_LOG = logging.getLogger("kafkette.request")
WARN_INTERVAL_S = 10.0

# The APIs whose errors a client should not have to be the only one to see: Produce,
# Fetch, the group APIs and the admin APIs (Metadata, ApiVersions, ListOffsets, SASL and
# the transaction APIs answer errors as part of their normal dance and do not warn).
GROUP_APIS = frozenset(
    {
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.LIST_GROUPS,
        ApiKey.DELETE_GROUPS,
        ApiKey.OFFSET_DELETE,
    }
)
ADMIN_APIS = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.DELETE_RECORDS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_PRODUCERS,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.LIST_TRANSACTIONS,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    }
)
WARN_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH} | GROUP_APIS | ADMIN_APIS)
_WARN_KEYS = frozenset(int(k) for k in WARN_APIS)
# Answers that are a normal step of the protocol, not a client's problem, by API key (the
# header's int): a JoinGroup v4+ without a member id is always answered MEMBER_ID_REQUIRED
# first (KIP-394); a transactions-v2 Produce (12+) is answered CONCURRENT_TRANSACTIONS
# while the previous transaction's markers are still being written, and the client
# retries it (KIP-890; the broker already retried it for up to 100 ms). Warning on them
# would put a WARNING on every group join and on a busy transactional producer.
EXPECTED_CODES: dict[int, frozenset[int]] = {
    int(ApiKey.JOIN_GROUP): frozenset({int(ErrorCode.MEMBER_ID_REQUIRED)}),
    int(ApiKey.PRODUCE): frozenset({int(ErrorCode.CONCURRENT_TRANSACTIONS)}),
}

# Histogram bucket upper bounds, in milliseconds (Kafka's RequestMetrics are in ms).
TIME_BUCKETS_MS = (
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
    1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
)  # fmt: skip


def error_codes(body: dict) -> list[int]:
    """Every non-zero ``error_code`` in a response body: the top level's, and those of
    the dicts in its lists (topics, partitions, groups, members, ...), recursively.

    One look-up per dict; values that are not lists of dicts (records, names) are
    skipped after one type check, so a Fetch costs per partition, never per record."""
    found: list[int] = []
    _walk(body, found)
    return found


def _walk(node: dict, found: list[int]) -> None:
    code = node.get("error_code")
    if code:
        found.append(code)
    for value in node.values():
        if type(value) is list and value and type(value[0]) is dict:
            for item in value:
                _walk(item, found)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class Histogram:
    """Counts per bucket (not cumulative: one increment per observation) and the sum."""

    __slots__ = ("count", "counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(TIME_BUCKETS_MS) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value_ms: float) -> None:
        self.counts[bisect_left(TIME_BUCKETS_MS, value_ms)] += 1
        self.sum += value_ms
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus buckets: (upper bound, observations at or below it)."""
        out = []
        running = 0
        for bound, n in zip((*TIME_BUCKETS_MS, float("inf")), self.counts, strict=True):
            running += n
            out.append(("+Inf" if bound == float("inf") else repr(bound), running))
        return out


class RequestStats:
    """Request counters since metrics were turned on (event loop only, no locks)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}  # (API, version)
        self.errors: dict[tuple[str, str], int] = {}  # (API, error name)
        self.total_time: dict[str, Histogram] = {}  # per API, ms
        self.queue_time: dict[str, Histogram] = {}  # per API, ms
        self.connections_created = 0
        self.connections_closed = 0

    def record(self, api: str, version: int, total_ms: float, queue_ms: float,
               codes: list[int]) -> None:  # fmt: skip
        key = (api, version)
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        histogram = self.total_time.get(api)
        if histogram is None:
            histogram = self.total_time[api] = Histogram()
            self.queue_time[api] = Histogram()
        histogram.observe(total_ms)
        self.queue_time[api].observe(queue_ms)
        if codes:
            errors = self.errors
            for code in codes:
                ekey = (api, error_name(code))
                errors[ekey] = errors.get(ekey, 0) + 1


class RequestObserver:
    """One broker's request log and (once metrics are on) request counters."""

    def __init__(self) -> None:
        self.stats: RequestStats | None = None
        self._warned: dict[tuple[str, int], list[float]] = {}  # kind -> [last, held back]

    def enable_metrics(self) -> RequestStats:
        if self.stats is None:
            self.stats = RequestStats()
        return self.stats

    def wants_timing(self) -> bool:
        """Whether the caller should take ``perf_counter`` readings for this request."""
        return self.stats is not None or REQUEST_LOG.isEnabledFor(logging.DEBUG)

    def connection_opened(self, peer: str) -> None:
        if self.stats is not None:
            self.stats.connections_created += 1
        REQUEST_LOG.debug("connection from %s opened", peer, extra={"peer": peer})

    def connection_closed(self, peer: str, reason: str) -> None:
        if self.stats is not None:
            self.stats.connections_closed += 1
        REQUEST_LOG.debug("connection from %s closed: %s", peer, reason, extra={"peer": peer})

    def completed(
        self,
        request: Request,
        response: dict | None,
        response_bytes: int,
        started: float,
        queue_s: float,
    ) -> None:
        """After the response went out (``started``: perf_counter before the handler,
        0.0 when ``wants_timing`` said no; ``queue_s``: the request-memory wait)."""
        stats = self.stats
        debug = REQUEST_LOG.isEnabledFor(logging.DEBUG)
        header = request.header
        warns = header.api_key in _WARN_KEYS
        if stats is None and not debug and not warns:
            return
        codes = error_codes(response) if response is not None else []
        if codes and warns:
            self._warn(request, codes)
        if stats is None and not debug:
            return
        api = request.api.name
        total_ms = ((time.perf_counter() - started) + queue_s) * 1000 if started else 0.0
        queue_ms = queue_s * 1000
        if stats is not None:
            stats.record(api, header.api_version, total_ms, queue_ms, codes)
        if debug:
            names = list(dict.fromkeys(error_name(c) for c in codes))
            REQUEST_LOG.debug(
                "%s v%d correlation_id=%d client_id=%r peer=%s time_ms=%.3f queue_ms=%.3f "
                "response_bytes=%d errors=%s",
                api, header.api_version, header.correlation_id, header.client_id,
                request.peer, total_ms, queue_ms, response_bytes, ",".join(names) or "-",
                extra={
                    **_request_fields(request),
                    "time_ms": round(total_ms, 3),
                    "queue_ms": round(queue_ms, 3),
                    "response_bytes": response_bytes,
                    "errors": names,
                },
            )  # fmt: skip

    def _warn(self, request: Request, codes: list[int]) -> None:
        header = request.header
        api = request.api.name
        now = time.monotonic()
        expected = EXPECTED_CODES.get(header.api_key, frozenset())
        for code in dict.fromkeys(codes):
            if code in expected:
                continue
            kind = (api, code)
            state = self._warned.get(kind)
            if state is not None and now - state[0] < WARN_INTERVAL_S:
                state[1] += 1
                continue
            held_back = int(state[1]) if state is not None else 0
            since = now - state[0] if state is not None else 0.0
            self._warned[kind] = [now, 0]
            name = error_name(code)
            more = f" ({held_back} more in the last {since:.0f} s)" if held_back else ""
            REQUEST_LOG.warning(
                "%s v%d from client_id=%r peer=%s answered with %s%s",
                api, header.api_version, header.client_id, request.peer, name, more,
                extra={
                    **_request_fields(request),
                    "errors": [name],
                    "held_back": held_back,
                },
            )  # fmt: skip


def _request_fields(request: Request) -> dict[str, object]:
    """The fields every request line carries as JSON (``--log-format json``)."""
    header = request.header
    return {
        "api": request.api.name,
        "version": header.api_version,
        "client_id": header.client_id,
        "peer": request.peer,
        "correlation_id": header.correlation_id,
    }
