"""ListOffsets seen through both clients: earliest, latest, and lookups by timestamp.

Kafka's contract for a timestamp lookup: the earliest offset whose record
timestamp is >= the target, with that record's timestamp; none (-1) past the
last record. Records carry explicit CreateTime timestamps one second apart.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient

from kafkette.wire.records import Record, build_batch

RECORDS = 10
STEP_MS = 1000
# An hour ago, on a whole second: well inside the default retention.
BASE_MS = (int(time.time()) - 3600) * 1000


@pytest.fixture(scope="module")
def timed_topic(broker) -> str:
    """Partition 0: ten single-record batches, BASE_MS + i s. Partition 1: empty."""
    from confluent_kafka.admin import NewTopic

    topic = "timed"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(RECORDS):
        producer.produce(topic, value=b"t%d" % i, partition=0, timestamp=BASE_MS + i * STEP_MS)
        assert producer.flush(10) == 0  # one batch per record
    return topic


def confluent_offsets_for_times(bootstrap: str, topic: str, queries: dict[int, int]):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        answer = consumer.offsets_for_times(
            [TopicPartition(topic, partition, ts) for partition, ts in queries.items()],
            timeout=10,
        )
        watermarks = {
            partition: consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            for partition in queries
        }
    finally:
        consumer.close()
    for tp in answer:
        assert tp.error is None, tp.error
    return {tp.partition: tp.offset for tp in answer}, watermarks


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (BASE_MS - 60_000, 0),  # before everything: the first record
        (BASE_MS, 0),  # exact match
        (BASE_MS + 1500, 2),  # between records: the next one
        (BASE_MS + 9 * STEP_MS, 9),  # the last record
        (BASE_MS + 9 * STEP_MS + 1, -1),  # past the last: none (OFFSET_END)
    ],
    # Named, not numbered by time: parallel workers must collect the same test ids.
    ids=["before-all", "exact", "between", "last", "past-last"],
)
def test_confluent_offsets_for_times(broker, timed_topic, target, expected) -> None:
    offsets, watermarks = confluent_offsets_for_times(
        broker.bootstrap, timed_topic, {0: target, 1: target}
    )
    assert offsets == {0: expected, 1: -1}
    assert watermarks == {0: (0, RECORDS), 1: (0, 0)}


def test_confluent_admin_list_offsets(broker, timed_topic) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max_timestamp": OffsetSpec.max_timestamp(),
        "for_timestamp": OffsetSpec.for_timestamp(BASE_MS + 4500),
    }
    results = {}
    for name, spec in specs.items():
        tp = TopicPartition(timed_topic, 0)
        results[name] = admin.list_offsets({tp: spec})[tp].result(15)
    assert results["earliest"].offset == 0
    assert results["latest"].offset == RECORDS
    assert results["max_timestamp"].offset == RECORDS - 1
    assert results["max_timestamp"].timestamp == BASE_MS + 9 * STEP_MS
    assert results["for_timestamp"].offset == 5
    assert results["for_timestamp"].timestamp == BASE_MS + 5 * STEP_MS


def test_kafka_python_offsets(broker, timed_topic) -> None:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        p0, p1 = KafkaTopicPartition(timed_topic, 0), KafkaTopicPartition(timed_topic, 1)
        assert consumer.beginning_offsets([p0, p1]) == {p0: 0, p1: 0}
        assert consumer.end_offsets([p0, p1]) == {p0: RECORDS, p1: 0}
        found = consumer.offsets_for_times({p0: BASE_MS + 1500, p1: BASE_MS})
        assert found[p1] is None
        assert (found[p0].offset, found[p0].timestamp) == (2, BASE_MS + 2 * STEP_MS)
        exact = consumer.offsets_for_times({p0: BASE_MS + 7 * STEP_MS})[p0]
        assert (exact.offset, exact.timestamp) == (7, BASE_MS + 7 * STEP_MS)
        assert consumer.offsets_for_times({p0: BASE_MS + 10 * STEP_MS})[p0] is None
    finally:
        consumer.close()


def test_offsets_after_delete_records(broker, create_topic) -> None:
    """DeleteRecords moves the earliest offset; timestamp lookups never answer below it."""
    topic = create_topic(broker.bootstrap, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(6):
        producer.produce(topic, value=b"d%d" % i, partition=0, timestamp=BASE_MS + i * STEP_MS)
        assert producer.flush(10) == 0
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = KafkaTopicPartition(topic, 0)
        admin.delete_records({tp: 4})
        assert consumer.beginning_offsets([tp]) == {tp: 4}
        assert consumer.end_offsets([tp]) == {tp: 6}
        assert consumer.offsets_for_times({tp: BASE_MS})[tp].offset == 4
    finally:
        consumer.close()
        admin.close()


def test_timestamp_lookup_inside_a_multi_record_batch(broker, create_topic, raw_client) -> None:
    """Kafka answers with the first *record* at or after the target, even mid-batch."""
    topic = create_topic(broker.bootstrap, 1)
    batch = build_batch(
        [Record(i, i * STEP_MS, None, b"b%d" % i) for i in range(5)], base_timestamp=BASE_MS
    )
    assert raw_client(broker.bootstrap).produce(topic, 0, batch).error_code == 0

    offsets, _ = confluent_offsets_for_times(broker.bootstrap, topic, {0: BASE_MS + 2500})
    assert offsets == {0: 3}
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = KafkaTopicPartition(topic, 0)
        found = consumer.offsets_for_times({tp: BASE_MS + 2500})[tp]
    finally:
        consumer.close()
    assert (found.offset, found.timestamp) == (3, BASE_MS + 3 * STEP_MS)
