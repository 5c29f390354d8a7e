"""Fetch 13-17: topics named by topic id (KIP-516), as Kafka 4.0 answers them.

confluent-kafka (librdkafka 2.x) consumes with Fetch 16 by topic id; raw requests on
our own codec check every version 13-17, v15's ``replica_state`` and v17's replica
directory id, and UNKNOWN_TOPIC_ID for an id no topic has (a deleted topic's id too).
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kafkette.wire.errors import ErrorCode
from tests.broker import fetch_wire as fw


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(15) == 0


def test_confluent_consumer_fetches_by_topic_id(broker, create_topic) -> None:
    stats = broker.broker.request_observer.enable_metrics()
    topic = create_topic(broker.bootstrap, partitions=3)
    _produce(broker.bootstrap, topic, 3, 50)
    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(120):
            for message in consumer.consume(200, timeout=0.5):
                assert message.error() is None, message.error()
                got.append(message.value())
            if len(got) >= 150:
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"{p}-{i}".encode() for p in range(3) for i in range(50))
    fetch_versions = {v for (api, v), n in dict(stats.requests).items() if api == "Fetch" and n}
    assert fetch_versions and min(fetch_versions) >= 13, fetch_versions


def test_every_version_13_to_17_by_id(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(broker.bootstrap, topic, 2, 3)
    c = fw.WireClient(broker.bootstrap)
    try:
        tid = c.topic_id(topic)
        for version in range(13, 18):
            extra = {}
            fetch_extra = {}
            if version >= 15:  # KIP-903: the consumer's replica_state (id -1)
                extra["replica_state"] = {"replica_id": -1, "replica_epoch": -1}
            if version >= 17:  # a follower's directory id: read, ignored on one log dir
                fetch_extra["replica_directory_id"] = uuid.uuid4()
            body = c.fetch(version, 0, -1, [
                {"topic_id": tid, "partitions": [fw.partition(0, **fetch_extra),
                                                 fw.partition(1, offset=3, **fetch_extra)]},
            ], **extra)
            assert body["error_code"] == 0 and body["session_id"] == 0
            (answer,) = body["responses"]
            assert answer["topic_id"] == tid
            parts = fw.answered(body)
            assert [parts[i]["error_code"] for i in (0, 1)] == [0, 0], version
            assert parts[0]["high_watermark"] == 3 and parts[1]["high_watermark"] == 3
            assert len(parts[0]["records"]) > 0 and not parts[1]["records"]  # 1 read at its end
            assert body.get("node_endpoints", []) == []  # no leader moved on one node
    finally:
        c.close()


def test_unknown_topic_id_answered_per_partition(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=1)
    _produce(broker.bootstrap, topic, 1, 1)
    c = fw.WireClient(broker.bootstrap)
    try:
        tid = c.topic_id(topic)
        stranger = uuid.uuid4()
        body = c.fetch(17, 0, -1, [
            {"topic_id": stranger, "partitions": [fw.partition(0), fw.partition(4)]},
            {"topic_id": tid, "partitions": [fw.partition(0)]},
        ])
        assert body["error_code"] == 0
        by_id = {t["topic_id"]: {p["partition_index"]: p for p in t["partitions"]}
                 for t in body["responses"]}
        assert {i: p["error_code"] for i, p in by_id[stranger].items()} == {
            0: ErrorCode.UNKNOWN_TOPIC_ID, 4: ErrorCode.UNKNOWN_TOPIC_ID}
        assert by_id[stranger][0]["high_watermark"] == -1
        assert by_id[tid][0]["error_code"] == 0 and len(by_id[tid][0]["records"]) > 0
        zero = c.fetch(13, 0, -1, [{"topic_id": fw.ZERO, "partitions": [fw.partition(0)]}])
        assert fw.answered(zero)[0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID

        # A deleted topic's id is unknown at once (and a session by id reports it).
        session = c.fetch(17, 0, 0, [{"topic_id": tid, "partitions": [fw.partition(0, 1)]}])
        assert session["session_id"] != 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics([topic], operation_timeout=10)[topic].result(timeout=15)
        after = c.fetch(17, 0, -1, [{"topic_id": tid, "partitions": [fw.partition(0)]}])
        assert fw.answered(after)[0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        incremental = c.fetch(17, session["session_id"], 1, [])
        assert fw.answered(incremental)[0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    finally:
        c.close()


def test_names_still_serve_fetch_up_to_12(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=1)
    _produce(broker.bootstrap, topic, 1, 2)
    c = fw.WireClient(broker.bootstrap)
    try:
        for version in (4, 7, 11, 12):
            body = c.fetch(version, 0, -1, [{"topic": topic, "partitions": [fw.partition(0)]}])
            (answer,) = body["responses"]
            assert answer["topic"] == topic
            assert answer["partitions"][0]["error_code"] == 0
            assert answer["partitions"][0]["high_watermark"] == 2
    finally:
        c.close()
