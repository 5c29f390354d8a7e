"""Protocol behaviour clients rely on without saying so, checked over raw connections.

Pipelined requests are answered in order; ``acks=0`` gets no answer and does not
shift the ones after it; per-partition errors use Kafka's codes; a fetch always
returns at least one whole batch (KIP-74); record headers survive between clients.
"""

from __future__ import annotations

import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from kafkette.wire.records import build_batch_from_values, decode_batches

OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_REQUIRED_ACKS = 21


def produce_request(topic: str, records: bytes, acks: int = -1) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=records)])
        ],
    )


def stored_values(connection, topic: str) -> list[bytes | None]:
    data = connection.fetch(topic, 0, 0)
    return [r.value for _, records in decode_batches(data.records) for r in records]


def test_pipelined_requests_are_answered_in_order(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    requests = [
        (ApiVersionsRequest(client_software_name="e2e", client_software_version="1"), 3),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 9),
        (produce_request(topic, build_batch_from_values([(None, b"one")])), 9),
        (produce_request(topic, build_batch_from_values([(None, b"two")])), 7),
        (MetadataRequest(topics=None), 12),
    ]
    sent = [(connection.send(message, version), message, version) for message, version in requests]
    for correlation_id, message, version in sent:
        response_class = message.header.get_response_class()
        answer = response_class.decode(connection.read_frame(), version=version, header=True)
        assert answer.header.correlation_id == correlation_id
    assert stored_values(connection, topic) == [b"one", b"two"]


def test_acks_zero_gets_no_answer(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    connection.send(produce_request(topic, build_batch_from_values([(None, b"quiet")]), acks=0), 9)
    # The next answer on this connection is for the next request.
    answer = connection.request(
        ApiVersionsRequest(client_software_name="e2e", client_software_version="1"), 3
    )
    assert answer.error_code == 0
    assert stored_values(connection, topic) == [b"quiet"]


def test_partition_errors_use_kafka_codes(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1, configs={"max.message.bytes": "2000"})
    connection = raw_client(broker.bootstrap)
    small = build_batch_from_values([(None, b"fits")])
    assert connection.produce(topic, 0, small).error_code == 0

    big = build_batch_from_values([(None, bytes(5000))])
    assert connection.produce(topic, 0, big).error_code == MESSAGE_TOO_LARGE
    assert connection.produce(topic, 7, small).error_code == UNKNOWN_TOPIC_OR_PARTITION
    # Produce never creates topics.
    missing = connection.produce("no-such-topic-xyz", 0, small)
    assert missing.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert connection.produce(topic, 0, small, acks=2).error_code == INVALID_REQUIRED_ACKS

    assert connection.fetch(topic, 0, 100).error_code == OFFSET_OUT_OF_RANGE
    assert connection.fetch(topic, 3, 0).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert stored_values(connection, topic) == [b"fits"]


def test_fetch_returns_a_whole_batch_larger_than_max_bytes(
    broker, create_topic, raw_client
) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    payload = bytes(range(256)) * 200  # 51,200 bytes
    batches = [build_batch_from_values([(None, payload + bytes([i]))]) for i in range(3)]
    for batch in batches:
        assert connection.produce(topic, 0, batch).error_code == 0

    data = connection.fetch(topic, 0, 1, max_bytes=1000)
    assert data.error_code == 0
    [(header, records)] = decode_batches(data.records)
    assert header.base_offset == 1
    assert [r.value for r in records] == [payload + b"\x01"]


def test_record_headers_travel_between_clients(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(
        topic, key=b"k", value=b"from-confluent", partition=0, headers=[("a", b"1"), ("b", None)]
    )
    assert producer.flush(10) == 0
    kafka_producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    kafka_producer.send(
        topic, key=b"k", value=b"from-kafka-python", partition=0, headers=[("c", b"3")]
    ).get(timeout=10)
    kafka_producer.close(timeout=10)

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = []
        deadline = time.monotonic() + 20
        while len(seen) < 2 and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=200).values():
                seen.extend(messages)
    finally:
        consumer.close()
    assert [(m.value, list(m.headers)) for m in seen] == [
        (b"from-confluent", [("a", b"1"), ("b", None)]),
        (b"from-kafka-python", [("c", b"3")]),
    ]

    reader = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        reader.assign([TopicPartition(topic, 0, 0)])
        messages = []
        deadline = time.monotonic() + 20
        while len(messages) < 2 and time.monotonic() < deadline:
            messages.extend(m for m in reader.consume(10, 0.2) if m.error() is None)
    finally:
        reader.close()
    assert [(m.value(), m.headers()) for m in messages] == [
        (b"from-confluent", [("a", b"1"), ("b", None)]),
        (b"from-kafka-python", [("c", b"3")]),
    ]


def test_log_append_time_topic_stamps_records(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1, configs={"message.timestamp.type": "LogAppendTime"})
    connection = raw_client(broker.bootstrap)
    created_long_ago = 1_000_000_000_000
    batch = build_batch_from_values([(None, b"a"), (None, b"b")], base_timestamp=created_long_ago)
    before = int(time.time() * 1000)
    answer = connection.produce(topic, 0, batch)
    after = int(time.time() * 1000)
    assert answer.error_code == 0
    assert before - 1000 <= answer.log_append_time_ms <= after + 1000

    data = connection.fetch(topic, 0, 0)
    [(header, records)] = decode_batches(data.records)
    assert [r.value for r in records] == [b"a", b"b"]
    assert header.is_log_append_time
    assert header.max_timestamp == answer.log_append_time_ms

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages = []
        deadline = time.monotonic() + 20
        while len(messages) < 2 and time.monotonic() < deadline:
            messages.extend(m for m in consumer.consume(10, 0.2) if m.error() is None)
    finally:
        consumer.close()
    assert [m.timestamp() for m in messages] == [
        (TIMESTAMP_LOG_APPEND_TIME, answer.log_append_time_ms)
    ] * 2
