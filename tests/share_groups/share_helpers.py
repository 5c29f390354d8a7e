"""What the share-group tests do with confluent-kafka: make topics, set group configs,
produce, and poll a ShareConsumer until a condition holds."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)


def _admin(boot: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": boot})


def create_topic(boot: str, topic: str, partitions: int = 1) -> None:
    admin = _admin(boot)  # kept alive until its answer is in
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=10)


def set_group_configs(boot: str, group: str, **configs: str) -> None:
    entries = [
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = _admin(boot)
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)


def produce(boot: str, topic: str, values: list[str], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": boot, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=partition)
    assert producer.flush(10) == 0


def share_consumer(boot: str, group: str, topic: str, **extra: object) -> ShareConsumer:
    config = {"bootstrap.servers": boot, "group.id": group, **extra}
    consumer = ShareConsumer(config)
    consumer.subscribe([topic])
    return consumer


def poll_until(
    consumer, done: Callable[[list], bool], timeout: float = 20.0, on_batch=None
) -> list:
    """Poll until ``done(messages so far)``; every message is checked error-free."""
    got: list = []
    deadline = time.monotonic() + timeout
    while not done(got) and time.monotonic() < deadline:
        batch = [m for m in consumer.poll(0.5) or []]
        for m in batch:
            assert m.error() is None, m.error()
        got += batch
        if on_batch is not None and batch:
            on_batch(batch)
    return got


def values(messages: list) -> list[str]:
    return [m.value().decode() for m in messages]


def nothing_more(consumer, seconds: float) -> list:
    """What ``consumer`` gets in ``seconds`` (expected: nothing)."""
    return poll_until(consumer, lambda got: False, timeout=seconds)
