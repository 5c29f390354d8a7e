"""Spark's Kafka source with ``kafka.isolation.level=read_committed`` on a topic holding
committed and aborted transactions (issue 14): exactly the committed records, no aborted one.

The connector computes ``endingOffsets=latest`` with its consumer's isolation level (the last
stable offset under read_committed) and must step over the offsets Kafka leaves without a
record for the application: the COMMIT/ABORT markers and, under read_committed, the aborted
records. A read with the default isolation level sees the aborted records too.
"""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'kafkette[spark]'")

from batch_report import read_range
from clickstream_generator import ensure_topic

PARTITIONS = 2


def _transactions(bootstrap: str, topic: str) -> tuple[set, set]:
    """Commit, abort, commit (each transaction writes to both partitions), then a last
    transaction aborted. Returns ({(partition, key, value)} committed, ... aborted)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"spark-txn-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(30)
    committed, aborted = set(), set()
    for n, commit in enumerate((True, False, True, False)):
        producer.begin_transaction()
        written = {
            (p, f"k{n}-{i}".encode(), f"txn {n} record {i} {'commit' if commit else 'ABORT'}"
             .encode())
            for p in range(PARTITIONS)
            for i in range(5 + n)
        }
        for partition, key, value in sorted(written):
            producer.produce(topic, key=key, value=value, partition=partition)
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(30)
            committed |= written
        else:
            producer.abort_transaction(30)
            aborted |= written
    return committed, aborted


def _rows(df) -> set:
    return {(row.partition, bytes(row.key), bytes(row.value)) for row in df.collect()}


def test_read_committed_reads_exactly_the_committed_records(spark, bootstrap):
    topic = f"transactional-read-{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, topic, PARTITIONS)
    committed, aborted = _transactions(bootstrap, topic)

    rows = _rows(
        read_range(spark, bootstrap, topic=topic,
                   kafka_options={"isolation.level": "read_committed"})
    )
    assert rows == committed, (
        f"read_committed: {len(rows & aborted)} aborted records read, "
        f"{len(committed - rows)} committed records missing"
    )

    everything = _rows(read_range(spark, bootstrap, topic=topic))
    assert everything == committed | aborted
