"""Kafka's connection limits, idle timeout and request memory bound, over real sockets.

- ``max.connections.per.ip``: a connection over the limit is accepted and closed at once.
- ``max.connections``: over the limit, the broker stops accepting; the client waits in the
  backlog and is served once another connection closes.
- ``connections.max.idle.ms``: a silent connection is closed; a busy one is not.
- ``queued.max.request.bytes``: a frame body that does not fit the pool is not read until
  memory is given back; small requests are served meanwhile.
- EMFILE on accept: logged (rate-limited) and retried, the broker keeps serving.
"""

from __future__ import annotations

import resource
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from kafkette.broker.embedded import EmbeddedBroker

MIB = 1024 * 1024


def api_versions_frame(correlation_id: int, padding: int = 0) -> bytes:
    """ApiVersions v0; bytes after the body are ignored by the broker, as by Kafka."""
    client = b"limits"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client)) + client + bytes(padding)
    return struct.pack(">i", len(body)) + body


def connect(broker: EmbeddedBroker, timeout: float = 10.0) -> socket.socket:
    host, port = broker.bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def answered(sock: socket.socket, correlation_id: int, timeout: float = 10.0) -> bool:
    """Send ApiVersions; True once its answer arrives, False if the peer closed or was silent."""
    sock.settimeout(timeout)
    try:
        sock.sendall(api_versions_frame(correlation_id))
        return receive_answer(sock) == correlation_id
    except (ConnectionError, TimeoutError):
        return False


def receive_answer(sock: socket.socket) -> int | None:
    """The correlation id of the next response, None at EOF."""
    head = sock.recv(8, socket.MSG_WAITALL)
    if len(head) < 8:
        return None
    size, correlation_id = struct.unpack(">ii", head)
    sock.recv(size - 4, socket.MSG_WAITALL)
    return correlation_id


def closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def on_loop(broker: EmbeddedBroker, read):
    """Read broker state on its own event loop thread."""
    return broker.on_loop(read)


def eventually(broker: EmbeddedBroker, read, expected, timeout: float = 10.0) -> None:
    """Wait (bounded) until ``read()`` on the broker's loop gives ``expected``."""
    deadline = time.monotonic() + timeout
    while (value := broker.on_loop(read)) != expected:
        assert time.monotonic() < deadline, f"{value!r} != {expected!r}"
        time.sleep(0.02)


@pytest.fixture
def start(tmp_path):
    started: list[EmbeddedBroker] = []

    def start(**configs: str) -> EmbeddedBroker:
        broker = EmbeddedBroker.start(data_dir=tmp_path / f"data-{len(started)}", configs=configs)
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


def test_connection_over_the_per_ip_limit_is_closed(start) -> None:
    broker = start(**{"max.connections.per.ip": "2"})
    first, second = connect(broker), connect(broker)
    assert answered(first, 1) and answered(second, 2)
    third = connect(broker)
    assert closed_by_peer(third)
    second.close()
    # The slot is free again once the broker has seen the close.
    eventually(broker, lambda: broker.broker.connection_limits.open, 1)
    fourth = connect(broker)
    assert answered(fourth, 4)
    assert answered(first, 5)
    for sock in (first, third, fourth):
        sock.close()


def test_per_ip_override_wins(start) -> None:
    broker = start(**{"max.connections.per.ip": "0",
                      "max.connections.per.ip.overrides": "127.0.0.1:1"})
    allowed = connect(broker)
    assert answered(allowed, 1)
    refused = connect(broker)
    assert closed_by_peer(refused)
    allowed.close()
    refused.close()


def test_over_max_connections_the_broker_stops_accepting(start) -> None:
    broker = start(**{"max.connections": "2"})
    first, second = connect(broker), connect(broker)
    assert answered(first, 1) and answered(second, 2)
    waiting = connect(broker)  # completes in the listen backlog: not accepted, not served
    waiting.sendall(api_versions_frame(3))
    waiting.settimeout(1.0)
    with pytest.raises(TimeoutError):
        waiting.recv(1)
    first.close()
    waiting.settimeout(10)
    assert receive_answer(waiting) == 3
    for sock in (second, waiting):
        sock.close()


def test_idle_connections_are_closed_busy_ones_are_not(start) -> None:
    broker = start(**{"connections.max.idle.ms": "1500"})
    idle, busy = connect(broker), connect(broker)
    assert answered(idle, 1)
    started = time.monotonic()
    correlation_id = 10
    while time.monotonic() - started < 2.5:
        correlation_id += 1
        assert answered(busy, correlation_id)
        time.sleep(0.05)
    assert closed_by_peer(idle, timeout=10)
    assert answered(busy, correlation_id + 1)
    idle.close()
    busy.close()


def test_frames_beyond_the_memory_pool_wait_small_requests_do_not(start) -> None:
    broker = start(**{"socket.request.max.bytes": str(MIB), "queued.max.request.bytes": str(MIB)})
    pool = broker.broker.request_memory
    # A holds the whole pool: its prefix announced 1 MiB, the body trickles.
    holder = connect(broker)
    holder_frame = api_versions_frame(1, padding=MIB - 16)
    holder.sendall(holder_frame[: 200 * 1024])
    eventually(broker, lambda: pool.in_use, MIB)
    # B's 600 KB frame does not fit: B is not read (it waits for memory).
    waiter = connect(broker)
    sender = threading.Thread(
        target=waiter.sendall, args=(api_versions_frame(2, padding=600 * 1024),), daemon=True
    )
    sender.start()
    eventually(broker, lambda: pool.waiting, 1)
    waiter.settimeout(0.5)
    with pytest.raises(TimeoutError):
        waiter.recv(1)
    # Small requests are served meanwhile, on a new connection and on a busy one.
    small = connect(broker)
    assert answered(small, 3)
    assert on_loop(broker, lambda: (pool.in_use, pool.waiting)) == (MIB, 1)
    # A's request completes and is answered: its memory goes to B, whose answer follows.
    holder.sendall(holder_frame[200 * 1024:])
    holder.settimeout(10)
    assert receive_answer(holder) == 1
    waiter.settimeout(10)
    assert receive_answer(waiter) == 2
    sender.join(10)
    # Memory goes back once the answer is written (the client may read it a little earlier).
    eventually(broker, lambda: (pool.in_use, pool.waiting), (0, 0))
    # A connection closed in the middle of a big frame gives its reservation back.
    quitter = connect(broker)
    quitter.sendall(api_versions_frame(4, padding=MIB - 16)[: 100 * 1024])
    eventually(broker, lambda: pool.in_use, MIB)
    quitter.close()
    eventually(broker, lambda: pool.in_use, 0)
    for sock in (holder, waiter, small):
        sock.close()


def test_running_out_of_descriptors_on_accept_is_logged_and_retried(tmp_path) -> None:
    """Under ``ulimit -n 64``: clients beyond it wait, one log line, no traceback, and the
    broker serves again once they go."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 64

    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    log_path = tmp_path / "emfile.log"
    with log_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0",
             "--data-dir", str(tmp_path / "data")],
            stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, text=True,
            preexec_fn=low_fd_limit,
        )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.startswith("kafkette ready on 127.0.0.1:"), log_path.read_text()
        port = int(ready.rsplit(":", 1)[1])
        clients = [socket.create_connection(("127.0.0.1", port), timeout=10)
                   for _ in range(limit + 20)]
        deadline = time.monotonic() + 30
        while "accept failed" not in log_path.read_text():
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        time.sleep(0.5)  # it keeps retrying every 100 ms meanwhile, logging none of them
        assert proc.poll() is None
        for client in clients:
            client.close()
        fresh = socket.create_connection(("127.0.0.1", port), timeout=10)
        fresh.settimeout(30)
        fresh.sendall(api_versions_frame(7))
        assert receive_answer(fresh) == 7
        fresh.close()
        errors = [line for line in log_path.read_text().splitlines() if "accept failed" in line]
        assert 1 <= len(errors) <= 2, errors
        assert "too many open files" in errors[0]
        assert "Traceback" not in log_path.read_text()
    finally:
        proc.kill()
        proc.wait(10)
