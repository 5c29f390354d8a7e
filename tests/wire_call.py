"""One request, one answer, on a fresh connection, through kafkette's own client codec.

For the tests whose requests no client in the test environment sends (Produce 13,
Fetch by topic id, DescribeTopicPartitions, fields the admin clients hide): the body
is encoded and the answer decoded by ``kafkette.wire.client_connection``, over a real
socket. tests/conftest.py registers this module as ``kafkette_test_wire_call`` in
``sys.modules`` (test modules cannot import each other under ``--import-mode=importlib``).
"""

from __future__ import annotations

import socket

from kafkette.wire.client_connection import NEED_DATA, ClientConnection

TIMEOUT_S = 30.0


def call(
    address: str, api_key: int, version: int, body: dict, client_id: str = "kafkette-test",
    timeout: float = TIMEOUT_S,
) -> dict:
    """The decoded answer body of ``body`` sent to ``address`` (HOST:PORT); an assertion
    fails if the broker closes the connection instead."""
    host, _, port = address.rpartition(":")
    conn = ClientConnection()
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(conn.send_request(api_key, version, body, client_id))
        while (response := conn.next_response()) is NEED_DATA:
            data = sock.recv(1 << 20)
            assert data, f"{address} closed the connection"
            conn.receive_data(data)
    return response.body
