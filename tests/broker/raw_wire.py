"""Plain helpers shared by the broker tests' support modules.

``conftest.py`` and the modules it loads speak Kafka's framing on raw sockets (with
kafka-python's protocol classes, an encoder independent of ours), pick free ports and
load their sibling modules by path (pytest runs with ``--import-mode=importlib``, so no
test folder is on ``sys.path``). One copy of each lives here. A plain module, loaded by
path like the others; it imports nothing from the broker so that it stays cheap to load.
"""

from __future__ import annotations

import importlib.util
import socket
import struct
import sys
from pathlib import Path
from types import ModuleType


def load_beside(file_name: str) -> ModuleType:
    """The module ``file_name`` in this folder, loaded by path as ``kafkette_<stem>``.

    One copy per process: conftest, the load modules and the benches share it
    (``sys.modules`` is looked at first), and it is registered before it runs
    because its dataclasses look their module up.
    """
    path = Path(__file__).with_name(file_name)
    spec = importlib.util.spec_from_file_location(f"kafkette_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1, for a broker that restarts on the same port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
    """One kafka-python ``request`` at ``version`` on a fresh connection; its decoded answer."""
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
