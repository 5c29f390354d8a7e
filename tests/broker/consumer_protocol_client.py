"""A blocking raw-protocol client for the KIP-848 tests: our own codec over a socket.

kafka-python has no classes for ConsumerGroupHeartbeat/ConsumerGroupDescribe, so the
tests speak them with ``kafkette.wire.client_connection`` (the same client the
test can point at the reference Kafka to compare answers).
"""

from __future__ import annotations

import socket

from kafkette.wire.client_connection import NEED_DATA, ClientConnection

HEARTBEAT = 68
DESCRIBE = 69


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.conn = ClientConnection()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, api_key: int, version: int, body: dict, client_id: str = "raw") -> dict:
        self.sock.sendall(self.conn.send_request(api_key, version, body, client_id))
        while True:
            response = self.conn.next_response()
            if response is not NEED_DATA:
                return response.body
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.conn.receive_data(data)

    def heartbeat(self, version: int = 1, **fields: object) -> dict:
        body = {"instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
                "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": None, **fields}
        return self.request(HEARTBEAT, version, body)

    def join(self, group: str, member: str, topics: list[str], **fields: object) -> dict:
        return self.heartbeat(group_id=group, member_id=member, member_epoch=0,
                              rebalance_timeout_ms=30000, subscribed_topic_names=topics,
                              topic_partitions=[], **fields)
