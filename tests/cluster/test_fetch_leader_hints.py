"""KIP-951 in Fetch 16+: a broker that does not lead a partition says who does.

A Fetch by topic id sent to a broker that does not lead the partition is answered
NOT_LEADER_OR_FOLLOWER with ``current_leader`` (id and epoch from the cluster's
metadata) and the leader's endpoint in ``node_endpoints``, as Kafka 4.0 answers; the
leader itself serves the same request. Before v16 no hint is given.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import call as _call
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode

ZERO = uuid.UUID(int=0)




def _fetch(address: str, version: int, topic: str, topic_id: uuid.UUID) -> dict:
    return _call(address, ApiKey.FETCH, version, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
        "forgotten_topics_data": [],
        "topics": [{"topic": topic, "topic_id": topic_id, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20,
        }]}],
    })


def test_non_leader_names_the_leader_from_v16(cluster, wait_until) -> None:
    c = cluster(2)
    topic = "hints-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=30)[topic].result(60)

    def leader_and_id() -> tuple[int, uuid.UUID] | None:
        body = _call(c.bootstrap.split(",")[0], ApiKey.METADATA, 12, {
            "topics": [{"name": topic, "topic_id": ZERO}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
        (answer,) = body["topics"]
        if answer["error_code"] or not answer["partitions"]:
            return None
        leader = answer["partitions"][0]["leader_id"]
        return (leader, answer["topic_id"]) if leader >= 0 else None

    wait_until(lambda: leader_and_id() is not None, timeout=60, what="a leader")
    leader, topic_id = leader_and_id()
    other = next(i for i in c.brokers if i != leader)
    producer = Producer({"bootstrap.servers": c.bootstrap})
    producer.produce(topic, b"hello", partition=0)
    assert producer.flush(30) == 0

    served = _fetch(c.brokers[leader].address, 17, topic, topic_id)
    (part,) = served["responses"][0]["partitions"]
    assert part["error_code"] == 0 and part["high_watermark"] == 1 and len(part["records"]) > 0

    refused = _fetch(c.brokers[other].address, 16, topic, topic_id)
    (part,) = refused["responses"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part["current_leader"]["leader_id"] == leader
    assert part["current_leader"]["leader_epoch"] >= 0
    host, _, port = c.brokers[leader].address.rpartition(":")
    assert [(n["node_id"], n["host"], n["port"]) for n in refused["node_endpoints"]] == [
        (leader, host, int(port))]

    old = _fetch(c.brokers[other].address, 15, topic, topic_id)
    (part,) = old["responses"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part["current_leader"] == {"leader_id": -1, "leader_epoch": -1}
    assert old["node_endpoints"] == []
