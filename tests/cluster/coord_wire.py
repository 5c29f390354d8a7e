"""Raw requests for the coordinator tests: one request, one answer, through the
broker's own sans-I/O ``ClientConnection`` (decoded bodies, snake_case keys)."""

from __future__ import annotations

import socket

from kafkette.wire.client_connection import NEED_DATA, ClientConnection, Response


def request(address: str, api_key: int, version: int, body: dict) -> dict:
    host, _, port = address.rpartition(":")
    conn = ClientConnection()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(conn.send_request(api_key, version, body, "coordinator-test"))
        while True:
            response = conn.next_response()
            if response is not NEED_DATA:
                assert isinstance(response, Response)
                return response.body
            data = sock.recv(65536)
            assert data, f"{address} closed the connection"
            conn.receive_data(data)
