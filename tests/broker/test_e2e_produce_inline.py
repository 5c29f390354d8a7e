"""Small produce requests append on the event loop; anything that would block goes to a
worker thread. Whichever way each request goes, the records land once, in order.

The topic's ``segment.bytes`` is tiny and ``flush.messages`` small, so most small
requests find the event-loop append refused (a roll or an fsync is due) and are
finished by a worker thread, while the others append in place: an idempotent
confluent-kafka producer sending one small request after another must find every
record at offsets 0..n-1, in order, over many segments, and a long-polling consumer
reading at the log end (its reads run on the event loop) must see them all.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

RECORDS = 400


def test_inline_and_threaded_appends_interleave_in_order(broker, create_topic, read_all):
    topic = create_topic(
        broker.bootstrap, partitions=1,
        configs={"segment.bytes": "2000", "flush.messages": "7"},
    )
    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": "inline-appends",
        "enable.auto.commit": False, "fetch.wait.max.ms": 500,
    })
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[int, bytes]] = []
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set() and len(seen) < RECORDS:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                seen.append((message.offset(), message.value()))

    reader = threading.Thread(target=consume)
    reader.start()
    producer = Producer({
        "bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 0,
    })
    failures: list[str] = []
    try:
        for i in range(RECORDS):
            producer.produce(
                topic, b"value-%04d" % i, partition=0,
                on_delivery=lambda err, _m: err is not None and failures.append(str(err)),
            )
            if i % 5 == 0:
                producer.flush(10)  # one request on its own: an event-loop append
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while len(seen) < RECORDS and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        reader.join(10)
        consumer.close()
    assert failures == []
    expected = [(i, b"value-%04d" % i) for i in range(RECORDS)]
    assert seen == expected
    stored = read_all(broker.bootstrap, topic, 1)
    assert [(r.offset, r.value) for r in stored] == expected
    segments = list((broker.broker.config.data_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) > 3
