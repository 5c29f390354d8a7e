"""The send loop of the throughput scripts: every value to one partition as fast as
librdkafka takes them (a full queue is waited out, not counted as a failure), delivery
callbacks served every thousand records so the queue drains while it fills."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def produce_all(producer: Any, topic: str, values: Iterable[bytes], partition: int = 0) -> None:
    """Hand every value of ``values`` to ``producer`` (a confluent-kafka ``Producer``);
    the caller flushes."""
    for i, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, value, partition=partition)
                break
            except BufferError:
                producer.poll(0.001)
        if i % 1000 == 0:
            producer.poll(0)
