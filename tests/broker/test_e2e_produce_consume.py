"""kafka-python and confluent-kafka produce and read back 10,000 keyed records per codec.

Each case gets its own 3-partition topic on the module's broker. The producer's
delivery reports say where each record went; reading back with both clients
(assign + offset 0, no group) must give, per partition, offsets 0..n-1 holding the
records in the order they were produced, with the exact keys and values. A raw
Fetch then checks that the broker stored the batches with the producer's codec
(``compression.type=producer``).
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka import codec as kafka_codec

from kafkette.wire.record_batch import read_header

RECORDS = 10_000
PARTITIONS = 3
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TIMEOUT = 60.0

# (partition, offset, key, value) in produce order
Placed = tuple[int, int, bytes, bytes]


def record_key(i: int) -> bytes:
    return b"key-%d" % (i % 97)


def record_value(i: int) -> bytes:
    # Repetitive enough that every codec really compresses.
    return b"value-%06d-" % i + b"x" * (i % 50)


def produce_confluent(bootstrap: str, topic: str, codec: str) -> list[Placed]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 5,
            "message.timeout.ms": 30_000,
        }
    )
    placed: list[Placed | None] = [None] * RECORDS
    errors: list[str] = []

    def report(index: int):
        def on_delivery(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                placed[index] = (msg.partition(), msg.offset(), msg.key(), msg.value())

        return on_delivery

    for i in range(RECORDS):
        while True:
            try:
                producer.produce(
                    topic, key=record_key(i), value=record_value(i), on_delivery=report(i)
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0, "confluent producer did not deliver everything"
    assert not errors, errors[:5]
    assert all(p is not None for p in placed)
    return placed  # type: ignore[return-value]


KAFKA_PYTHON_CODEC_PACKAGES = {
    "snappy": (kafka_codec.has_snappy, "python-snappy"),
    "lz4": (kafka_codec.has_lz4, "lz4"),
    "zstd": (kafka_codec.has_zstd, "zstandard"),
}


def require_kafka_python_codec(codec: str) -> None:
    if codec in KAFKA_PYTHON_CODEC_PACKAGES:
        available, package = KAFKA_PYTHON_CODEC_PACKAGES[codec]
        if not available():
            pytest.skip(f"kafka-python needs the {package} package for {codec}")


def produce_kafka_python(bootstrap: str, topic: str, codec: str) -> list[Placed]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        request_timeout_ms=30_000,
    )
    try:
        futures = [
            producer.send(topic, key=record_key(i), value=record_value(i)) for i in range(RECORDS)
        ]
        producer.flush(TIMEOUT)
        placed = []
        for i, future in enumerate(futures):
            metadata = future.get(timeout=TIMEOUT)
            placed.append((metadata.partition, metadata.offset, record_key(i), record_value(i)))
        return placed
    finally:
        producer.close(timeout=10)


def consume_confluent(bootstrap: str, topic: str, expected: int) -> list[Placed]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    got: list[Placed] = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < expected and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                assert message.error() is None, message.error()
                got.append((message.partition(), message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return got


def consume_kafka_python(bootstrap: str, topic: str, expected: int) -> list[Placed]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    got: list[Placed] = []
    try:
        partitions = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + TIMEOUT
        while len(got) < expected and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=500, max_records=5000).items():
                got.extend((tp.partition, m.offset, m.key, m.value) for m in messages)
    finally:
        consumer.close()
    return got


PRODUCERS = {"confluent": produce_confluent, "kafka-python": produce_kafka_python}
CONSUMERS = {"confluent": consume_confluent, "kafka-python": consume_kafka_python}


def by_partition(records: list[Placed]) -> dict[int, list[Placed]]:
    result: dict[int, list[Placed]] = defaultdict(list)
    for record in records:
        result[record[0]].append(record)
    return dict(result)


@pytest.mark.parametrize("codec", list(CODEC_IDS))
@pytest.mark.parametrize("client", list(PRODUCERS))
def test_produce_and_consume_every_codec(broker, create_topic, raw_client, client, codec) -> None:
    require_kafka_python_codec(codec)  # every case reads back with kafka-python too
    topic = create_topic(broker.bootstrap, PARTITIONS)
    placed = PRODUCERS[client](broker.bootstrap, topic, codec)

    produced = by_partition(placed)
    assert sorted(produced) == list(range(PARTITIONS)), "keys should spread over all partitions"
    for partition, records in produced.items():
        # Produce order within a partition is offset order, contiguous from 0.
        assert [r[1] for r in records] == list(range(len(records))), partition
    key_partitions = defaultdict(set)
    for partition, _, key, _ in placed:
        key_partitions[key].add(partition)
    assert all(len(parts) == 1 for parts in key_partitions.values())

    # Read back by the same client, then by the other one (codec framing must agree).
    for reader in (client, *(other for other in CONSUMERS if other != client)):
        consumed = CONSUMERS[reader](broker.bootstrap, topic, RECORDS)
        assert len(consumed) == RECORDS, reader
        assert by_partition(consumed) == produced, reader

    # The broker keeps the producer's codec: the first stored batch says which.
    connection = raw_client(broker.bootstrap)
    for partition in range(PARTITIONS):
        data = connection.fetch(topic, partition, 0, max_bytes=64 * 1024)
        assert data.error_code == 0
        assert data.high_watermark == len(produced[partition])
        header = read_header(data.records, 0)
        assert header.base_offset == 0
        assert header.compression == CODEC_IDS[codec], (partition, header)
