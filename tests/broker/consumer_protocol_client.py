"""A blocking raw-protocol client for the KIP-848 tests: our own codec over a socket.

kafka-python has no classes for ConsumerGroupHeartbeat/ConsumerGroupDescribe, so the
tests speak them with ``kafkette.wire.client_connection`` (the same client the
test can point at the reference Kafka to compare answers).
"""

from __future__ import annotations

from bench.harness.raw_wire import WireConnection

HEARTBEAT = 68
DESCRIBE = 69


class RawClient(WireConnection):
    """One connection; ``request`` sends with client id ``raw`` unless told otherwise."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        super().__init__(bootstrap, "raw", timeout)

    def heartbeat(self, version: int = 1, **fields: object) -> dict:
        body = {"instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
                "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": None, **fields}
        return self.request(HEARTBEAT, version, body)

    def join(self, group: str, member: str, topics: list[str], **fields: object) -> dict:
        return self.heartbeat(group_id=group, member_id=member, member_epoch=0,
                              rebalance_timeout_ms=30000, subscribed_topic_names=topics,
                              topic_partitions=[], **fields)
