"""Topic ids in a cluster: every broker answers the id ZooKeeper's topic znode carries,
the same after a broker restarts, and serves Produce 13 / Metadata v12 by that id; a
topic deleted and re-created under the same name answers only its new id.

Produce 13 and Metadata by id go through kafkette's own client codec (no client in the
test environment sends Produce 13); records are read back with confluent-kafka.
"""

from __future__ import annotations

import base64
import json
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import call
from kafkette.wire.apis import ApiKey
from kafkette.wire.records import build_batch_from_values

TIMEOUT = 30


def produce_13(address: str, topic_id: uuid.UUID, value: bytes) -> int:
    batch = build_batch_from_values([(None, value)])
    produced = call(address, ApiKey.PRODUCE, 13, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10_000,
        "topic_data": [{"topic_id": topic_id, "partition_data": [{"index": 0, "records": batch}]}],
    })["responses"][0]
    assert produced["topic_id"] == topic_id
    return produced["partition_responses"][0]["error_code"]


def metadata_by_id(address: str, topic_id: uuid.UUID) -> dict:
    (topic,) = call(address, ApiKey.METADATA, 12, {
        "topics": [{"name": None, "topic_id": topic_id}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    })["topics"]
    return topic


def znode_topic_id(built, topic: str) -> uuid.UUID:
    zk = built.zk()
    raw = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["topic_id"]
    return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))


def test_ids_from_zookeeper_on_every_broker_and_across_a_restart(cluster, wait_until) -> None:
    built = cluster(2)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    for future in admin.create_topics(
        [NewTopic("ids", num_partitions=2, replication_factor=2)], request_timeout=60
    ).values():
        future.result(timeout=60)
    topic_id = znode_topic_id(built, "ids")
    addresses = {b: broker.address for b, broker in built.brokers.items()}
    for address in addresses.values():
        answer = wait_until(
            lambda a=address: (t := metadata_by_id(a, topic_id))["error_code"] == 0
            and all(p["leader_id"] >= 0 for p in t["partitions"]) and t,
            timeout=TIMEOUT, what=f"topic known by id at {address}",
        )
        assert answer["name"] == "ids" and len(answer["partitions"]) == 2

    leader = next(p["leader_id"] for p in answer["partitions"] if p["partition_index"] == 0)
    assert produce_13(addresses[leader], topic_id, b"by-id") == 0
    unknown = metadata_by_id(addresses[leader], uuid.uuid4())
    assert unknown["error_code"] == 100  # UNKNOWN_TOPIC_ID

    other = next(b for b in addresses if b != leader)
    built.stop(other)
    built.start(other)
    assert wait_until(
        lambda: metadata_by_id(addresses[other], topic_id)["name"] == "ids",
        timeout=TIMEOUT, what="the restarted broker answers the same id",
    )
    assert znode_topic_id(built, "ids") == topic_id
    consumer = Consumer({"bootstrap.servers": built.bootstrap, "group.id": "ids-check"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("ids", 0), timeout=TIMEOUT)
    finally:
        consumer.close()
    assert (low, high) == (0, 1)


def test_a_re_created_topic_answers_only_its_new_id(cluster, wait_until) -> None:
    """Deleted and re-created under the same name: every broker answers the old id with
    UNKNOWN_TOPIC_ID (Produce 13, Metadata by id) and the new one normally; what the
    old id wrote is gone with the old topic."""
    built = cluster(2)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    addresses = {b: broker.address for b, broker in built.brokers.items()}

    def create() -> uuid.UUID:
        for future in admin.create_topics(
            [NewTopic("again", num_partitions=1, replication_factor=2)], request_timeout=60
        ).values():
            future.result(timeout=60)
        return znode_topic_id(built, "again")

    def leader_of(topic_id: uuid.UUID) -> int:
        for address in addresses.values():
            known = wait_until(
                lambda a=address: (t := metadata_by_id(a, topic_id))["error_code"] == 0
                and t["partitions"][0]["leader_id"] >= 0 and t,
                timeout=TIMEOUT, what=f"topic known by id at {address}",
            )
        return known["partitions"][0]["leader_id"]

    old = create()
    assert wait_until(lambda: produce_13(addresses[leader_of(old)], old, b"old") == 0,
                      timeout=TIMEOUT, what="the old id takes records")
    admin.delete_topics(["again"], request_timeout=60)["again"].result(timeout=60)
    for address in addresses.values():
        wait_until(lambda a=address: metadata_by_id(a, old)["error_code"] == 100,
                   timeout=TIMEOUT, what=f"old id forgotten at {address}")
    new = create()
    assert new != old
    leader = leader_of(new)
    for address in addresses.values():
        stale = metadata_by_id(address, old)
        assert (stale["name"], stale["error_code"]) == (None, 100)  # UNKNOWN_TOPIC_ID
        assert produce_13(address, old, b"stale") == 100
    assert wait_until(lambda: produce_13(addresses[leader], new, b"new") == 0,
                      timeout=TIMEOUT, what="the new id takes records")
    consumer = Consumer({"bootstrap.servers": built.bootstrap, "group.id": "again-check"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("again", 0), timeout=TIMEOUT)
    finally:
        consumer.close()
    assert (low, high) == (0, 1)
