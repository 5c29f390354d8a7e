"""Fetch long-polling: a waiting fetch answers as soon as data arrives, not at max_wait.

Bounds are loose on purpose (data produced 0.5 s in must arrive before 3 s of a
5 s wait): they tell "woken by the append" from "ran to the deadline", nothing finer.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.protocol.metadata import MetadataRequest

from kafkette.wire.records import build_batch_from_values, decode_batches

MAX_WAIT_MS = 5000
WELL_BEFORE_MAX_WAIT = 3.0


class BackgroundFetch(threading.Thread):
    """One blocking raw Fetch on its own connection; records when it returned."""

    def __init__(self, connection, topic: str, **fetch_args) -> None:
        super().__init__(daemon=True)
        self.connection = connection
        self.topic = topic
        self.fetch_args = fetch_args
        self.started_at = 0.0
        self.finished_at: float | None = None
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        self.started_at = time.monotonic()
        try:
            self.result = self.connection.fetch(self.topic, 0, **self.fetch_args)
        except BaseException as exc:  # reported by the test thread
            self.error = exc
        self.finished_at = time.monotonic()

    @property
    def elapsed(self) -> float:
        assert self.finished_at is not None
        return self.finished_at - self.started_at


def test_waiting_fetch_is_woken_by_a_produce(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    waiting = BackgroundFetch(
        raw_client(broker.bootstrap), topic, offset=0, max_wait_ms=MAX_WAIT_MS, min_bytes=1
    )
    waiting.start()
    time.sleep(0.5)
    assert waiting.is_alive(), "the fetch should still be waiting for data"

    # Meanwhile another connection is served: metadata, then the produce itself.
    other = raw_client(broker.bootstrap)
    metadata = other.request(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 9
    )
    assert [t.name for t in metadata.topics] == [topic]
    assert waiting.is_alive()
    produced = other.produce(topic, 0, build_batch_from_values([(b"k", b"wake up")]))
    assert produced.error_code == 0

    waiting.join(MAX_WAIT_MS / 1000 + 5)
    assert not waiting.is_alive()
    assert waiting.error is None, waiting.error
    assert waiting.elapsed < WELL_BEFORE_MAX_WAIT, waiting.elapsed
    assert waiting.result.error_code == 0
    assert waiting.result.high_watermark == 1
    [(_, records)] = decode_batches(waiting.result.records)
    assert [(r.offset, r.key, r.value) for r in records] == [(0, b"k", b"wake up")]


def test_fetch_without_enough_data_waits_for_max_wait(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    started = time.monotonic()
    empty = connection.fetch(topic, 0, 0, max_wait_ms=800, min_bytes=1)
    waited = time.monotonic() - started
    assert empty.error_code == 0
    assert empty.records in (b"", None)
    assert 0.7 <= waited < MAX_WAIT_MS / 1000, waited

    # Some data, but less than min_bytes: answered at max_wait with what there is.
    assert connection.produce(topic, 0, build_batch_from_values([(None, b"small")])).error_code == 0
    started = time.monotonic()
    partial = connection.fetch(topic, 0, 0, max_wait_ms=800, min_bytes=1 << 20)
    waited = time.monotonic() - started
    assert 0.7 <= waited < MAX_WAIT_MS / 1000, waited
    [(_, records)] = decode_batches(partial.records)
    assert [r.value for r in records] == [b"small"]


def produce_later(bootstrap: str, topic: str, value: bytes, delay: float) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        producer.produce(topic, value=value, partition=0)
        producer.flush(10)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_confluent_consumer_long_poll(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": MAX_WAIT_MS,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumer.consume(1, 0.3)  # connect and send the first (waiting) fetch
        started = time.monotonic()
        producer = produce_later(broker.bootstrap, topic, b"late", 0.5)
        message = None
        while message is None and time.monotonic() - started < MAX_WAIT_MS / 1000 + 5:
            message = consumer.poll(0.1)
        arrived = time.monotonic() - started
        producer.join(10)
    finally:
        consumer.close()
    assert message is not None and message.error() is None
    assert message.value() == b"late" and message.offset() == 0
    assert arrived < WELL_BEFORE_MAX_WAIT, arrived


def test_kafka_python_consumer_long_poll(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, 1)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        enable_auto_commit=False,
        fetch_max_wait_ms=MAX_WAIT_MS,
        request_timeout_ms=MAX_WAIT_MS + 10_000,
    )
    try:
        partition = KafkaTopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        consumer.poll(timeout_ms=300)
        started = time.monotonic()
        producer = produce_later(broker.bootstrap, topic, b"late", 0.5)
        got = []
        while not got and time.monotonic() - started < MAX_WAIT_MS / 1000 + 5:
            for messages in consumer.poll(timeout_ms=100).values():
                got.extend(messages)
        arrived = time.monotonic() - started
        producer.join(10)
    finally:
        consumer.close()
    assert [(m.offset, m.value) for m in got] == [(0, b"late")]
    assert arrived < WELL_BEFORE_MAX_WAIT, arrived
