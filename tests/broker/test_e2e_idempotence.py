"""Idempotent producers: no duplicates from a real client, and the broker's sequence checks.

The raw tests build batches with ``kafkette.wire.records`` and send them with
kafka-python's protocol classes, after an InitProducerId, exactly as a client
retrying a batch would: the same batch twice must be acknowledged twice with the
same base offset and stored once; a sequence gap is refused with
OUT_OF_ORDER_SEQUENCE_NUMBER (45) and writes nothing.
"""

from __future__ import annotations

from confluent_kafka import Producer

from kafkette.wire.record_batch import read_header
from kafkette.wire.records import build_batch_from_values, decode_batches

RECORDS = 5_000
OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def test_confluent_idempotent_producer_writes_each_record_once(
    broker, create_topic, read_all, raw_client
) -> None:
    topic = create_topic(broker.bootstrap, 3)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 30_000,
        }
    )
    errors: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(str(err))

    for i in range(RECORDS):
        producer.produce(topic, key=b"k%d" % (i % 31), value=b"v%d" % i, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors, errors[:5]

    records = read_all(broker.bootstrap, topic, 3)
    values = [r.value for r in records]
    assert len(values) == RECORDS
    assert sorted(values) == sorted(b"v%d" % i for i in range(RECORDS))
    for partition in range(3):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == list(range(len(offsets)))

    # The batches really were idempotent: they carry a producer id and sequences from 0.
    connection = raw_client(broker.bootstrap)
    for partition in range(3):
        data = connection.fetch(topic, partition, 0, max_bytes=16 * 1024)
        header = read_header(data.records, 0)
        assert header.producer_id >= 0 and header.producer_epoch == 0
        assert header.base_sequence == 0


def _stored_values(connection, topic: str) -> list[bytes | None]:
    data = connection.fetch(topic, 0, 0)
    assert data.error_code == 0
    return [record.value for _, records in decode_batches(data.records) for record in records]


def test_same_idempotent_batch_twice_is_stored_once(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    producer_id, epoch = connection.init_producer_id()
    assert producer_id >= 0 and epoch == 0

    # Something before it, so the batch's base offset is not trivially 0.
    plain = build_batch_from_values([(None, b"plain-0"), (None, b"plain-1")])
    assert connection.produce(topic, 0, plain).error_code == 0

    batch = build_batch_from_values(
        [(b"k", b"idem-0"), (b"k", b"idem-1"), (b"k", b"idem-2")],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0,
    )
    first = connection.produce(topic, 0, batch)
    assert first.error_code == 0
    assert first.base_offset == 2
    retry = connection.produce(topic, 0, batch)
    assert retry.error_code == 0
    assert retry.base_offset == first.base_offset

    # The next sequence continues normally, right after the single copy.
    following = build_batch_from_values(
        [(b"k", b"idem-3")], producer_id=producer_id, producer_epoch=epoch, base_sequence=3
    )
    after = connection.produce(topic, 0, following)
    assert after.error_code == 0
    assert after.base_offset == 5

    assert _stored_values(connection, topic) == [
        b"plain-0",
        b"plain-1",
        b"idem-0",
        b"idem-1",
        b"idem-2",
        b"idem-3",
    ]


def test_sequence_gap_is_out_of_order(broker, create_topic, raw_client) -> None:
    topic = create_topic(broker.bootstrap, 1)
    connection = raw_client(broker.bootstrap)
    producer_id, epoch = connection.init_producer_id()

    first = build_batch_from_values(
        [(None, b"a"), (None, b"b")], producer_id=producer_id, producer_epoch=epoch, base_sequence=0
    )
    assert connection.produce(topic, 0, first).error_code == 0
    gap = build_batch_from_values(
        [(None, b"c")], producer_id=producer_id, producer_epoch=epoch, base_sequence=5
    )
    refused = connection.produce(topic, 0, gap)
    assert refused.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert refused.base_offset == -1

    # The expected sequence is still accepted, and nothing of the refused batch was written.
    resumed = build_batch_from_values(
        [(None, b"d")], producer_id=producer_id, producer_epoch=epoch, base_sequence=2
    )
    accepted = connection.produce(topic, 0, resumed)
    assert accepted.error_code == 0
    assert accepted.base_offset == 2
    assert _stored_values(connection, topic) == [b"a", b"b", b"d"]
