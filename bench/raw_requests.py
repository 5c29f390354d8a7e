"""One Kafka request on a fresh socket, encoded by kafka-python's protocol classes.

The kill -9 series (``bench.crash_load``, ``bench.txn_crash_load``) and the broker tests
(``tests/broker/raw_wire.py``) ask the broker things no client library exposes (a fresh
producer id, raw batches with their control records), with an encoder that is not
kafkette's own. Blocking; no broker imports.
"""

from __future__ import annotations

import socket
import struct


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from ``sock``; ConnectionError on EOF before them."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"EOF after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def raw_request(bootstrap: str, request, version: int, client_id: str):
    """Send a kafka-python ``request`` at ``version``; return its decoded response."""
    host, _, port = bootstrap.rpartition(":")
    request.with_header(correlation_id=1, client_id=client_id)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request.encode(version=version, header=True, framed=True))
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        frame = read_exactly(sock, size)
    return request.header.get_response_class().decode(frame, version=version, header=True)


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 1 << 20,
):
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
