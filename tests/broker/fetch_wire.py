"""A Fetch client on our own wire codec for the fetch-session and topic-id tests.

Loaded by path (``raw_wire.load_beside``). One connection, one request at a time,
bounded by the socket timeout: a broker that does not answer fails the test.
"""

from __future__ import annotations

import socket
import uuid

from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import NEED_DATA, ClientConnection

ZERO = uuid.UUID(int=0)


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "fetch-wire-test") -> None:
        self.client_id = client_id
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.conn = ClientConnection()

    def close(self) -> None:
        self.sock.close()

    def request(self, api_key: int, version: int, body: dict) -> dict:
        self.sock.sendall(self.conn.send_request(api_key, version, body, self.client_id))
        while (response := self.conn.next_response()) is NEED_DATA:
            data = self.sock.recv(1 << 20)
            assert data, "broker closed the connection"
            self.conn.receive_data(data)
        return response.body

    def topic_id(self, topic: str) -> uuid.UUID:
        body = self.request(
            ApiKey.METADATA, 12,
            {"topics": [{"name": topic, "topic_id": ZERO}], "allow_auto_topic_creation": False,
             "include_topic_authorized_operations": False},
        )
        (answer,) = body["topics"]
        assert answer["error_code"] == 0, answer
        return answer["topic_id"]

    def fetch(self, version: int, session_id: int, epoch: int, topics: list[dict],
              forgotten: list[dict] | None = None, max_wait_ms: int = 50, **extra) -> dict:
        body = {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": topics, "forgotten_topics_data": forgotten or [], "rack_id": "",
        }
        body.update(extra)
        return self.request(ApiKey.FETCH, version, body)


def partition(index: int, offset: int = 0, **extra) -> dict:
    fetch = {"partition": index, "current_leader_epoch": -1, "fetch_offset": offset,
             "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    fetch.update(extra)
    return fetch


def topic_entry(name: str, topic_id: uuid.UUID, partitions: list[dict]) -> dict:
    """Both keys: the codec writes the one the version has (name to 12, id from 13)."""
    return {"topic": name, "topic_id": topic_id, "partitions": partitions}


def answered(body: dict) -> dict[int, dict]:
    """Partition index -> answer, over every topic of a one-topic answer."""
    return {p["partition_index"]: p for t in body["responses"] for p in t["partitions"]}
