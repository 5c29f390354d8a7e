"""Kafka requests over a plain socket: the one raw client of the tests and the bench scripts.

Tests and the kill -9 series ask brokers things no client library exposes (a fresh producer
id, raw batches with their control records, versions clients never send, malformed frames).
Two encoders, the caller's choice:

- kafka-python's protocol classes (``raw_request``, ``RawConnection``): an encoder that is
  not kafkette's, so a test does not check the codec against itself;
- kafkette's own client codec (``call``, ``WireConnection``) for what kafka-python cannot
  say (Produce 13, Fetch by topic id, DescribeTopicPartitions, fields admin clients hide).

Both share the framing here (``read_exactly``, ``read_frame``, ``exchange``), as do frames
built by hand. Blocking; every read is bounded by the socket timeout, so a broker that never
answers fails the caller instead of hanging it. No broker imports: ``kafkette.wire`` loads only
when the kafkette codec is used.
"""

from __future__ import annotations

import random
import socket
import struct
from typing import Any


class ConnectionClosed(ConnectionError):
    """The broker closed the connection (EOF or reset) before a whole frame arrived."""


# Ports are picked below the kernel's ephemeral range (``ip_local_port_range``), from here up.
LOWEST_PORT = 10_000


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host``, for a broker that restarts on the same port.

    Below the ephemeral range: a port from that range can be taken, while the broker is down
    after a kill -9, as the source port of any outgoing connection on the machine, and the
    restart then fails with "address already in use" (seen in a cluster test). Falls back to
    a kernel-chosen port if no random pick below the range is free."""
    low = _ephemeral_low()
    picker = random.Random()
    for _ in range(100):
        port = picker.randrange(LOWEST_PORT, low) if low > LOWEST_PORT else 0
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def connect(address: str, timeout: float = 10.0) -> socket.socket:
    """A blocking socket to ``address`` (HOST:PORT) whose reads time out after ``timeout``."""
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from ``sock``; ``ConnectionClosed`` on EOF or reset before them."""
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except ConnectionResetError as exc:
            raise ConnectionClosed("connection reset") from exc
        if not chunk:
            raise ConnectionClosed(f"EOF after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes:
    """The next response frame from ``sock``, without its size prefix."""
    (size,) = struct.unpack(">i", read_exactly(sock, 4))
    return read_exactly(sock, size)


def exchange(address: str, frame: bytes, timeout: float = 10.0) -> bytes:
    """Send ``frame`` (size prefix included) on a fresh connection; the answer frame."""
    with connect(address, timeout) as sock:
        sock.sendall(frame)
        return read_frame(sock)


# --- kafka-python's encoder --------------------------------------------------------------


def raw_request(
    address: str, request: Any, version: int, client_id: str = "kafkette-test",
    timeout: float = 10.0,
) -> Any:
    """Send a kafka-python ``request`` at ``version`` on a fresh connection; its decoded
    response."""
    request.with_header(correlation_id=1, client_id=client_id)
    frame = exchange(address, request.encode(version=version, header=True, framed=True), timeout)
    return request.header.get_response_class().decode(frame, version=version, header=True)


class RawConnection:
    """One connection speaking Kafka's framing with kafka-python's message classes, for a
    sequence of requests (or bytes) on the same socket."""

    def __init__(self, address: str, timeout: float = 10.0, client_id: str = "kafkette-e2e"):
        self.sock = connect(address, timeout)
        self.client_id = client_id
        self._correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def send(self, message: Any, version: int) -> int:
        """Encode and send one request; returns its correlation id."""
        correlation_id = self.next_correlation_id()
        message.with_header(correlation_id=correlation_id, client_id=self.client_id)
        self.sock.sendall(message.encode(version=version, header=True, framed=True))
        return correlation_id

    def request(self, message: Any, version: int) -> Any:
        """Send ``message`` at ``version`` and decode the answer with its response class."""
        correlation_id = self.send(message, version)
        response_class = message.header.get_response_class()
        response = response_class.decode(self.read_frame(), version=version, header=True)
        assert response.header.correlation_id == correlation_id
        return response

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """The next response frame without its size prefix."""
        return read_frame(self.sock)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the broker closes the connection within ``timeout`` without answering."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return data == b""


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 1 << 20,
) -> Any:
    """A read_uncommitted Fetch (v11 shape) of one partition, without a session."""
    from kafka.protocol.consumer import FetchRequest

    fetch_topic = FetchRequest.FetchTopic
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            fetch_topic(
                topic=topic,
                partitions=[
                    fetch_topic.FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


# --- kafkette's client codec -------------------------------------------------------------


class WireConnection:
    """One connection on kafkette's sans-I/O ``ClientConnection``: bodies are dicts with
    snake_case keys, one request at a time."""

    def __init__(self, address: str, client_id: str = "kafkette-test", timeout: float = 30.0):
        from kafkette.wire.client_connection import ClientConnection

        self.address = address
        self.client_id = client_id
        self.sock = connect(address, timeout)
        self.conn = ClientConnection()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: dict, client_id: str | None = None) -> None:
        """Write one request (``client_id`` overrides the connection's for it)."""
        self.sock.sendall(
            self.conn.send_request(api_key, version, body, client_id or self.client_id)
        )

    def receive(self) -> Any:
        """The next answer (a ``kafkette.wire.client_connection.Response``: ``header``,
        ``body``); ``ConnectionClosed`` if the broker closes the connection first."""
        from kafkette.wire.client_connection import NEED_DATA

        while (response := self.conn.next_response()) is NEED_DATA:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionClosed(f"{self.address} closed the connection")
            self.conn.receive_data(data)
        return response

    def request(
        self, api_key: int, version: int, body: dict, client_id: str | None = None
    ) -> dict:
        """Send one request and return its decoded answer body."""
        self.send(api_key, version, body, client_id)
        return self.receive().body


def call(
    address: str, api_key: int, version: int, body: dict, client_id: str = "kafkette-test",
    timeout: float = 30.0,
) -> dict:
    """One request through kafkette's client codec on a fresh connection; the decoded
    answer body (``ConnectionClosed`` if the broker closes the connection instead)."""
    with WireConnection(address, client_id, timeout) as connection:
        return connection.request(api_key, version, body)
