"""Tiny hand-written Kafka requests for probing a broker over a raw socket.

Why not a client library: start time is "process launch to first successful Metadata", and a
client's reconnect backoff (librdkafka waits ~100 ms between attempts) would swamp a broker that
starts in 50 ms. Why not ``kafkette.wire``: the harness must not trust the code it measures.

Only two requests are spoken, both non-flexible versions every Kafka since 2.x (and 4.x, which
dropped Metadata v0-v3) accepts: ApiVersions v0 and Metadata v4..v7. All functions are blocking
and not thread-safe per socket; every wait is bounded by an explicit timeout in seconds.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

from .raw_wire import read_exactly

API_VERSIONS = 18
METADATA = 3
CLIENT_ID = b"kafkette-bench"


class ProbeError(Exception):
    """The broker answered, but not with a well-formed, successful response."""


def _request(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    """Frame a request with header v1 (api key, version, correlation id, client id)."""
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _round_trip(sock: socket.socket, request: bytes, correlation_id: int) -> bytes:
    """Send one framed request; return the response body after the correlation id."""
    sock.sendall(request)
    (size,) = struct.unpack(">i", read_exactly(sock, 4))
    if size < 4 or size > 64 * 1024 * 1024:
        raise ProbeError(f"implausible response size {size}")
    frame = read_exactly(sock, size)
    (got_id,) = struct.unpack_from(">i", frame)
    if got_id != correlation_id:
        raise ProbeError(f"correlation id {got_id} != {correlation_id}")
    return frame[4:]


def api_versions(sock: socket.socket, correlation_id: int = 1) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 on an open socket; returns {api_key: (min_version, max_version)}."""
    body = _round_trip(sock, _request(API_VERSIONS, 0, correlation_id, b""), correlation_id)
    error_code, count = struct.unpack_from(">hi", body)
    if error_code != 0:
        raise ProbeError(f"ApiVersions error code {error_code}")
    ranges: dict[int, tuple[int, int]] = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", body, 6 + 6 * index)
        ranges[key] = (low, high)
    return ranges


def metadata_broker_count(
    sock: socket.socket, version: int, correlation_id: int = 2
) -> int:
    """Metadata (all topics) at a non-flexible ``version`` in 4..7; returns the broker count.

    Contract: raises ProbeError unless the response names at least one broker, so a return
    value means "a client could bootstrap from this broker now".
    """
    if not 4 <= version <= 7:
        raise ValueError("only Metadata v4..v7 are spoken here")
    # topics = null (all topics), allow_auto_topic_creation = false
    body = _round_trip(
        sock, _request(METADATA, version, correlation_id, struct.pack(">ib", -1, 0)), correlation_id
    )
    _throttle_ms, broker_count = struct.unpack_from(">ii", body)
    if broker_count < 1:
        raise ProbeError("Metadata response lists no broker")
    return broker_count


def metadata_all_topics(sock: socket.socket, correlation_id: int) -> int:
    """Metadata v7 for every topic (what a client's full refresh asks); returns the response size
    in bytes once all of it has arrived. The body is not parsed: only its cost is measured."""
    request = _request(METADATA, 7, correlation_id, struct.pack(">ib", -1, 0))
    return len(_round_trip(sock, request, correlation_id))


def probe_metadata(host: str, port: int, timeout_s: float = 1.0) -> int:
    """Connect, negotiate with ApiVersions, fetch Metadata; return the broker count.

    Raises OSError while nothing listens yet and ProbeError on a malformed answer.
    """
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        ranges = api_versions(sock)
        if METADATA not in ranges:
            raise ProbeError("broker does not offer Metadata")
        low, high = ranges[METADATA]
        version = min(high, 7)
        if version < max(low, 4):
            raise ProbeError(f"Metadata versions {low}..{high} do not overlap 4..7")
        return metadata_broker_count(sock, version)


def wait_for_metadata(
    host: str, port: int, deadline: float, is_alive: Callable[[], bool], interval_s: float = 0.005
) -> float:
    """Poll until a Metadata probe succeeds; return ``time.perf_counter()`` at that moment.

    ``deadline`` is a ``time.perf_counter()`` value. ``is_alive()`` is checked between attempts
    so a broker that crashed on start fails fast instead of burning the whole deadline.
    """
    last_error: Exception | None = None
    while time.perf_counter() < deadline:
        try:
            remaining = deadline - time.perf_counter()
            probe_metadata(host, port, timeout_s=max(0.05, min(2.0, remaining)))
            return time.perf_counter()
        except (OSError, ProbeError) as error:
            last_error = error
        if not is_alive():
            raise RuntimeError(f"broker exited before answering Metadata ({last_error})")
        time.sleep(interval_s)
    raise TimeoutError(f"no successful Metadata from {host}:{port} ({last_error})")


def open_idle_connections(
    host: str, port: int, count: int, deadline: float
) -> list[socket.socket]:
    """Open ``count`` connections, each proven live by one ApiVersions round trip.

    The sockets are left open and idle; the caller owns them and must close them. On any
    failure every socket opened so far is closed before the error propagates.
    """
    sockets: list[socket.socket] = []
    try:
        for index in range(count):
            if time.perf_counter() > deadline:
                raise TimeoutError(f"opened only {index} of {count} connections in time")
            sock = socket.create_connection((host, port), timeout=10.0)
            sockets.append(sock)
            api_versions(sock, correlation_id=index + 1)
        return sockets
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
