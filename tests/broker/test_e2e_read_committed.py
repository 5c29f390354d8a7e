"""read_committed Fetch and ListOffsets, seen by real clients.

Until the transaction coordinator serves Produce with transactions, the
transactional batches and markers are appended to the partition's log
directly (from the test thread, as the broker's worker threads do), and the
fetch waiters are woken on the broker's loop. The clients then read through
the real Fetch/ListOffsets path: they must see exactly the committed records
and never an aborted one, and a read_committed consumer must stop at the
last stable offset while a transaction is open.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.protocol.consumer import FetchRequest

from kafkette.wire.record_batch import iter_batches, validate_batch
from kafkette.wire.records import ControlRecordType, Record, build_batch, build_control_batch


class Writer:
    """Appends batches straight to partition 0 of ``topic`` on the broker."""

    def __init__(self, broker, topic: str) -> None:
        self.broker = broker
        self.partition = broker.on_loop(lambda: broker.broker.topics.partition(topic, 0))
        assert self.partition is not None
        self.sequences: dict[int, int] = {}

    def _append(self, batch: bytes) -> int:
        data = bytearray(batch)
        header = validate_batch(data)
        assert self.partition.log.check_sequence(header).append
        info = self.partition.log.append(data, [header])
        self.broker.on_loop(self.partition.notify_appended)
        return info.base_offset

    def plain(self, *values: bytes) -> int:
        records = [Record(i, 0, None, v) for i, v in enumerate(values)]
        return self._append(build_batch(records))

    def txn(self, producer_id: int, *values: bytes) -> int:
        sequence = self.sequences.get(producer_id, 0)
        self.sequences[producer_id] = sequence + len(values)
        records = [Record(i, 0, None, v) for i, v in enumerate(values)]
        return self._append(
            build_batch(
                records, producer_id=producer_id, producer_epoch=0, base_sequence=sequence,
                transactional=True,
            )
        )

    def end(self, producer_id: int, commit: bool) -> int:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        return self._append(build_control_batch(kind, producer_id=producer_id, producer_epoch=0))


def write_scenario(writer: Writer) -> tuple[list[bytes], list[bytes]]:
    """Committed and aborted transactions interleaved with plain records.

    Returns (what read_committed must see, what read_uncommitted sees), in offset order.
    """
    writer.plain(b"a0", b"a1")
    writer.txn(1, b"c0", b"c1")
    writer.txn(2, b"x0")
    writer.txn(1, b"c2")
    writer.txn(2, b"x1", b"x2")
    writer.end(1, commit=True)
    writer.plain(b"a2")
    writer.end(2, commit=False)
    writer.txn(3, b"x3")
    writer.end(3, commit=False)
    writer.txn(4, b"c3")
    writer.end(4, commit=True)
    writer.plain(b"a3")
    committed = [b"a0", b"a1", b"c0", b"c1", b"c2", b"a2", b"c3", b"a3"]
    everything = [b"a0", b"a1", b"c0", b"c1", b"x0", b"c2", b"x1", b"x2", b"a2", b"x3",
                  b"c3", b"a3"]
    return committed, everything


def confluent_read(bootstrap: str, topic: str, isolation: str, count: int,
                   timeout: float = 20.0) -> list[bytes]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"g-{topic}-{isolation}",
        "enable.auto.commit": False, "isolation.level": isolation,
        "auto.offset.reset": "earliest",
    })
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            values.append(message.value())
        # Nothing more arrives after the expected records.
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, extra.value()
        return values
    finally:
        consumer.close()


def kafka_python_read(bootstrap: str, topic: str, count: int, timeout: float = 20.0):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed",
        enable_auto_commit=False, consumer_timeout_ms=1500,
    )
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
        for records in consumer.poll(timeout_ms=1000).values():
            values.extend(r.value for r in records)  # anything extra fails the caller
        end = consumer.end_offsets([tp])[tp]
        return values, end
    finally:
        consumer.close()


def test_read_committed_clients_see_only_committed_records(broker, create_topic):
    topic = create_topic(broker.bootstrap, partitions=1)
    writer = Writer(broker, topic)
    committed, everything = write_scenario(writer)
    log = writer.partition.log
    assert log.last_stable_offset == log.high_watermark
    assert confluent_read(broker.bootstrap, topic, "read_committed", len(committed)) == committed
    assert confluent_read(
        broker.bootstrap, topic, "read_uncommitted", len(everything)
    ) == everything
    values, end = kafka_python_read(broker.bootstrap, topic, len(committed))
    assert values == committed
    assert end == log.log_end_offset


def test_read_committed_consumer_stops_at_the_open_transaction(broker, create_topic):
    topic = create_topic(broker.bootstrap, partitions=1)
    writer = Writer(broker, topic)
    writer.plain(b"b0")
    first = writer.txn(7, b"o0", b"o1")
    writer.plain(b"b1")  # after the open transaction: above the LSO
    log = writer.partition.log
    assert log.last_stable_offset == first < log.high_watermark

    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
        "enable.auto.commit": False, "isolation.level": "read_committed",
        "fetch.wait.max.ms": 200,
    })
    try:
        tp = TopicPartition(topic, 0, 0)
        consumer.assign([tp])
        seen: list[bytes] = []
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                seen.append(message.value())
        assert seen == [b"b0"]  # blocked at the LSO for seconds
        # ListOffsets latest under read_committed answers the LSO.
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (0, first)
        assert consumer.position([TopicPartition(topic, 0)])[0].offset == first

        writer.end(7, commit=True)  # the long-polling fetch wakes up and reads on
        deadline = time.monotonic() + 20
        while len(seen) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seen.append(message.value())
        assert seen == [b"b0", b"o0", b"o1", b"b1"]
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert high == log.log_end_offset
    finally:
        consumer.close()


def test_kafka_python_end_offsets_under_read_committed_is_the_lso(broker, create_topic):
    topic = create_topic(broker.bootstrap, partitions=1)
    writer = Writer(broker, topic)
    writer.plain(b"p0", b"p1")
    first = writer.txn(8, b"t0")
    writer.plain(b"p2")
    committed = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level="read_committed")
    uncommitted = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = KafkaTopicPartition(topic, 0)
        assert committed.end_offsets([tp])[tp] == first == 2
        assert uncommitted.end_offsets([tp])[tp] == 4
        writer.end(8, commit=False)
        assert committed.end_offsets([tp])[tp] == 5
    finally:
        committed.close()
        uncommitted.close()


def raw_fetch(client, topic: str, offset: int, isolation_level: int, max_bytes: int):
    """Fetch v11 with an isolation level, encoded by kafka-python; that partition's answer."""
    fetch_topic = FetchRequest.FetchTopic
    request = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
        isolation_level=isolation_level, session_id=0, session_epoch=-1,
        topics=[fetch_topic(topic=topic, partitions=[fetch_topic.FetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)])],
        forgotten_topics_data=[], rack_id="",
    )
    return client.request(request, 11).responses[0].partitions[0]


@pytest.mark.parametrize("max_bytes", [1, 1 << 20])
def test_raw_fetch_answers_lso_and_aborted_transactions(broker, create_topic, raw_client,
                                                        max_bytes):
    """The wire answer itself: LSO in every partition answer, the aborted ranges that overlap."""
    topic = create_topic(broker.bootstrap, partitions=1)
    writer = Writer(broker, topic)
    writer.plain(b"q0")  # 0
    writer.txn(5, b"y0", b"y1")  # 1-2
    writer.end(5, commit=False)  # 3
    open_first = writer.txn(6, b"z0")  # 4, left open
    end = writer.partition.log.log_end_offset
    client = raw_client(broker.bootstrap)
    for isolation in (0, 1):
        answer = raw_fetch(client, topic, 0, isolation, max_bytes)
        assert answer.error_code == 0
        assert answer.last_stable_offset == open_first  # for both isolation levels
        assert answer.high_watermark == end
        aborted = [(a.producer_id, a.first_offset) for a in answer.aborted_transactions or []]
        headers = iter_batches(answer.records)
        if isolation == 0:
            assert answer.aborted_transactions is None
            assert headers[-1].next_offset == (1 if max_bytes == 1 else end)
        elif max_bytes == 1:
            # One batch (q0) returned: the next fetch position is 1, where the
            # aborted transaction starts, so it does not overlap yet.
            assert [h.base_offset for h in headers] == [0]
            assert aborted == []
        else:
            assert headers[-1].next_offset == open_first  # nothing at or past the LSO
            assert aborted == [(5, 1)]
    # From inside the aborted range, one batch at a time: the range overlaps.
    answer = raw_fetch(client, topic, 1, 1, 1)
    assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(5, 1)]
    # At the LSO: no data, the LSO answered.
    answer = raw_fetch(client, topic, open_first, 1, max_bytes)
    assert answer.records in (b"", None) and answer.last_stable_offset == open_first
