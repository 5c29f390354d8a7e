"""A topic znode rewritten without its topic id (a pre-2.8 tool) keeps its id and its data.

Kafka refuses such a topic rather than dropping it; kafkette's brokers follow ZooKeeper, so
a topic missing from their view would have its local logs deleted everywhere and come back
as a new, empty topic. The watcher keeps the id it knew and the controller writes it back.
"""

from __future__ import annotations

import json

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def test_topic_rewritten_without_its_id_keeps_id_and_records(cluster, wait_until) -> None:
    built = cluster(3)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    for future in admin.create_topics(
        [NewTopic("old-tool", num_partitions=1, replication_factor=3)], request_timeout=60
    ).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": built.bootstrap, "acks": "all"})
    for n in range(20):
        producer.produce("old-tool", f"v{n}".encode())
    assert producer.flush(30) == 0
    zk = built.zk()
    path = "/brokers/topics/old-tool"
    doc = json.loads(zk.get(path)[0])
    topic_id = doc["topic_id"]

    # What kafka-topics.sh --zookeeper of Kafka 2.7 writes: no topic_id.
    zk.set(path, json.dumps({"version": 1, "partitions": doc["partitions"]}).encode())

    restored = wait_until(
        lambda: json.loads(zk.get(path)[0]).get("topic_id"), timeout=30,
        what="the topic id written back",
    )
    assert restored == topic_id
    # Every broker kept its logs: the 20 records are still there, at the same offsets.
    consumer = Consumer({"bootstrap.servers": built.bootstrap, "group.id": "old-tool-check"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("old-tool", 0), timeout=10)
    finally:
        consumer.close()
    assert (low, high) == (0, 20)
    for broker in built.brokers.values():
        logs = list((broker.data_dir / "old-tool-0").glob("*.log"))
        assert sum(f.stat().st_size for f in logs) > 0, broker.data_dir
