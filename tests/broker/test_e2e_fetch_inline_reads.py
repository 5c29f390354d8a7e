"""Fetch reads on the event loop when the bytes are cached, in a worker thread when not.

Real confluent-kafka clients over real sockets. A consumer reading what was just
produced is answered from the page cache on the event loop (no worker thread);
after the partition's segment is dropped from the page cache, or while its log's state
lock is held, a consumer reading it from offset 0 still gets every record, the reads that
could not be done at once having gone to a worker thread.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkette.broker.handlers.fetch import READ_COUNTS
from kafkette.log.file_region import nowait_reads_supported
from tests import page_cache

RECORDS = 3000


def produce(bootstrap: str, topic: str) -> list[bytes]:
    values = [f"{i:06d}".encode() + os.urandom(94) for i in range(RECORDS)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": 100})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    return values


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False,
                         # small fetches: many Fetch requests, each a read of its own
                         "max.partition.fetch.bytes": 16384, "fetch.max.bytes": 16384,
                         "message.max.bytes": 16384})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        for _ in range(600):
            if len(values) >= count:
                break
            for message in consumer.consume(1000, 0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_recent_data_is_read_on_the_event_loop(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=1)
    values = produce(broker.bootstrap, topic)
    inline, threaded = READ_COUNTS.inline, READ_COUNTS.threaded
    assert consume_all(broker.bootstrap, topic, RECORDS) == values
    if nowait_reads_supported():
        inline_reads = READ_COUNTS.inline - inline
        assert inline_reads >= RECORDS * 100 // 16384  # one per Fetch at least
        # A checkpoint holding the log's state lock, or a page evicted under memory
        # pressure, may send the odd read to a thread; the event loop does nearly all.
        assert READ_COUNTS.threaded - threaded <= max(2, inline_reads // 10)
    else:  # every read in a worker thread, as before
        assert READ_COUNTS.threaded - threaded >= RECORDS * 100 // 16384


def test_evicted_segment_is_read_in_full(broker, create_topic, tmp_path) -> None:
    """Reads of a segment no longer in the page cache: each either refused on the event loop
    and redone in a worker thread, or served at once where the kernel read the page in before
    it looked again (a fast disk; tests/log/test_nowait_reads.py): every record, in order."""
    if not page_cache.evicts(tmp_path):  # the same file system as the broker's data dir
        pytest.skip(f"{tmp_path}'s file system keeps dropped pages: nothing to evict")
    topic = create_topic(broker.bootstrap, partitions=1)
    values = produce(broker.bootstrap, topic)
    segment = next(Path(broker.broker.config.data_dir, f"{topic}-0").glob("*.log"))
    assert page_cache.evict(segment), "the kernel kept the segment's pages"
    assert consume_all(broker.bootstrap, topic, RECORDS) == values


def test_a_read_the_event_loop_cannot_do_at_once_goes_to_a_worker_thread(
    broker, create_topic
) -> None:
    """While a worker holds the log's state lock (a truncation, a clean's swap), the event
    loop's read gives up instead of waiting, and a worker thread does it once the lock is
    free: the consumer gets every record."""
    if not nowait_reads_supported():
        pytest.skip("no preadv2(RWF_NOWAIT) here: every read is threaded already")
    topic = create_topic(broker.bootstrap, partitions=1)
    values = produce(broker.bootstrap, topic)
    log = broker.on_loop(lambda: broker.broker.topics.partition(topic, 0).log)
    fallbacks = READ_COUNTS.fallbacks
    read: list[bytes] = []
    with log._state_lock:  # as a worker busy with the log would
        reader = threading.Thread(
            target=lambda: read.extend(consume_all(broker.bootstrap, topic, RECORDS)),
            daemon=True,
        )
        reader.start()
        deadline = time.monotonic() + 30
        while READ_COUNTS.fallbacks == fallbacks:
            assert time.monotonic() < deadline, "no read gave up on the held lock"
            time.sleep(0.01)
    reader.join(60)
    assert read == values
