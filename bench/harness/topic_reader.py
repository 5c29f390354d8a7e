"""Read a whole topic with confluent-kafka, bounded by a deadline.

The kill -9 series' check (``bench.harness.crash_load``) and the broker tests' reader
(``tests/broker/conftest.py``): one copy, in bench (tests may import bench, never the reverse).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition


@dataclass(frozen=True, slots=True)
class ReadRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    timeout: float = 30.0,
    group: str = "kafkette-e2e-reader",
) -> list[ReadRecord]:
    """Every record of ``topic`` from offset 0 to the high watermark, partition by partition.

    Uses assign + explicit offsets (no group). Fails, rather than hangs, when the
    watermark is not reached within ``timeout``.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
        pending = {p for p, end in ends.items() if end > 0}
        if not pending:
            return []
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(pending)])
        records: list[ReadRecord] = []
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"read of {topic} timed out; partitions left {pending}")
            for message in consumer.consume(1000, 0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if message.offset() >= ends[message.partition()]:
                            pending.discard(message.partition())
                        continue
                    raise AssertionError(f"consume error: {error}")
                records.append(
                    ReadRecord(
                        message.partition(),
                        message.offset(),
                        message.key(),
                        message.value(),
                        message.timestamp()[1],
                    )
                )
                if message.offset() + 1 >= ends[message.partition()]:
                    pending.discard(message.partition())
        return [r for r in records if r.offset < ends[r.partition]]
    finally:
        consumer.close()
