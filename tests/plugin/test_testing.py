"""kafkette.testing: the broker context manager for unittest and notebooks, with real clients."""

from __future__ import annotations

import re
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import ConfigResource, ResourceType

import kafkette.testing
from kafkette.broker.config import ConfigError

DEADLINE_S = 30.0


def consume(bootstrap: str, topic: str, count: int, group: str | None = None) -> list:
    """``count`` records of ``topic`` (as a group member when ``group`` is given), bounded."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group or f"reader-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    records = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while len(records) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            records.append((message.partition(), message.key(), message.value()))
    finally:
        consumer.close()
    return records


def broker_config(kafka: kafkette.testing.KafkaBroker, name: str) -> str:
    node = str(next(iter(kafka.admin().list_topics(timeout=10).brokers)))
    resource = ConfigResource(ResourceType.BROKER, node)
    entries = kafka.admin().describe_configs([resource])[resource].result(timeout=10)
    return entries[name].value


def test_broker_round_trip_and_temporary_data_dir_removed_at_exit() -> None:
    with kafkette.testing.broker() as kafka:
        assert not kafka.external
        data_dir = kafka.data_dir
        assert data_dir is not None and data_dir.is_dir()
        topic = kafka.create_topic()
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, key=b"k", value=b"hello")
        assert producer.flush(10) == 0
        assert consume(kafka.bootstrap, topic, 1, group="g") == [(0, b"k", b"hello")]
        assert (data_dir / f"{topic}-0").is_dir()
        assert broker_config(kafka, "group.initial.rebalance.delay.ms") == "0"
    assert not data_dir.exists()


def test_configs_partitions_and_a_given_data_dir_is_kept(tmp_path: Path) -> None:
    configs = {"log.retention.ms": "123456789", "group.initial.rebalance.delay.ms": "250"}
    with kafkette.testing.broker(configs=configs, data_dir=tmp_path / "data") as kafka:
        assert broker_config(kafka, "log.retention.ms") == "123456789"
        assert broker_config(kafka, "group.initial.rebalance.delay.ms") == "250"
        first = kafka.create_topic(partitions=3, configs={"cleanup.policy": "compact"})
        second = kafka.create_topic(partitions=3)
        assert first != second
        named = kafka.create_topic("orders", partitions=2)
        assert named == "orders"
        topics = kafka.admin().list_topics(timeout=10).topics
        assert len(topics[first].partitions) == 3
        assert len(topics[named].partitions) == 2
        resource = ConfigResource(ResourceType.TOPIC, first)
        entries = kafka.admin().describe_configs([resource])[resource].result(timeout=10)
        assert entries["cleanup.policy"].value == "compact"
    assert (tmp_path / "data" / f"{first}-2").is_dir()
    assert (tmp_path / "data" / "orders-1").is_dir()


def test_unknown_broker_config_fails_the_start_and_leaves_no_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ConfigError, match=r"no\.such\.config"):
        with kafkette.testing.broker(configs={"no.such.config": "1"}):
            pass
    assert list(tmp_path.iterdir()) == []


def test_external_wraps_a_running_cluster_without_starting_one() -> None:
    with kafkette.testing.broker() as kafka:
        with kafkette.testing.external(kafka.bootstrap) as cluster:
            assert cluster.external and cluster.embedded is None
            topic = cluster.create_topic(partitions=2)
            assert len(kafka.admin().list_topics(topic, timeout=10).topics[topic].partitions) == 2
            cluster.delete_topics([topic])
            deadline = time.monotonic() + DEADLINE_S
            while topic in kafka.admin().list_topics(timeout=10).topics:
                assert time.monotonic() < deadline, f"{topic} still listed after deletion"
                time.sleep(0.05)


def test_external_names_an_address_where_nothing_answers() -> None:
    with kafkette.testing.broker() as kafka:
        address = kafka.bootstrap  # a port that was just free and is closed after the block
    with pytest.raises(ConnectionError, match=re.escape(address)):
        kafkette.testing.external(address, timeout=1.0)


def test_unique_topic_name_replaces_characters_kafka_refuses() -> None:
    name = kafkette.testing.unique_topic_name("test_x[a b/c]")
    assert name.startswith("test_x-a-b-c-")
    assert len(name) == len("test_x-a-b-c-") + 12
