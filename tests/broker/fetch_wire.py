"""A Fetch client on our own wire codec for the fetch-session and topic-id tests.

One connection (``bench.harness.raw_wire.WireConnection``), one request at a time, bounded by
the socket timeout: a broker that does not answer fails the test.
"""

from __future__ import annotations

import uuid

from bench.harness.raw_wire import WireConnection
from kafkette.wire.apis import ApiKey

ZERO = uuid.UUID(int=0)


class WireClient(WireConnection):
    """Metadata for topic ids and Fetch bodies with every field, on one connection."""

    def __init__(self, bootstrap: str, client_id: str = "fetch-wire-test") -> None:
        super().__init__(bootstrap, client_id)

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
