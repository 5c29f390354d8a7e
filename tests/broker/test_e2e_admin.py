"""Topic and config administration from kafka-python's and confluent-kafka's admin clients.

The module's broker starts with ``log.retention.bytes`` set, so a topic config can
show each of Kafka's sources: DYNAMIC_TOPIC_CONFIG (a topic override),
STATIC_BROKER_CONFIG (the broker's own setting) and DEFAULT_CONFIG.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import kafka.errors as kafka_errors
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.admin import NewPartitions as KafkaNewPartitions
from kafka.admin import NewTopic as KafkaNewTopic

from kafkette.broker.embedded import EmbeddedBroker

BROKER_RETENTION_BYTES = "5000000"
TIMEOUT = 15


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("admin-data"),
        configs={"num.partitions": "3", "log.retention.bytes": BROKER_RETENTION_BYTES},
    )
    try:
        yield embedded
    finally:
        gc.collect()  # drop librdkafka handles the tests left behind: they close their sockets
        embedded.stop()


@pytest.fixture
def confluent_admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def kafka_admin(broker) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        yield admin
    finally:
        admin.close()


def confluent_error(future) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT)
    return raised.value.args[0]


def describe_topic_configs(admin: AdminClient, topic: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(TIMEOUT)


def partition_count(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=TIMEOUT).topics[topic].partitions)


# --- confluent-kafka ------------------------------------------------------------


def test_confluent_topic_lifecycle(confluent_admin, unique_name) -> None:
    admin = confluent_admin
    topic = unique_name
    futures = admin.create_topics(
        [NewTopic(topic, 2, 1, config={"retention.ms": "123456"})], operation_timeout=10
    )
    futures[topic].result(TIMEOUT)
    assert partition_count(admin, topic) == 2

    again = admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=10)
    assert confluent_error(again[topic]).code() == KafkaError.TOPIC_ALREADY_EXISTS

    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(TIMEOUT)
    assert partition_count(admin, topic) == 5
    shrink = admin.create_partitions([NewPartitions(topic, 3)])
    assert confluent_error(shrink[topic]).code() == KafkaError.INVALID_PARTITIONS

    admin.delete_topics([topic], operation_timeout=10)[topic].result(TIMEOUT)
    assert topic not in admin.list_topics(timeout=TIMEOUT).topics
    gone = admin.delete_topics([topic], operation_timeout=10)
    assert confluent_error(gone[topic]).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_confluent_describe_and_alter_configs(confluent_admin, unique_name) -> None:
    admin = confluent_admin
    topic = unique_name
    admin.create_topics(
        [NewTopic(topic, 1, 1, config={"retention.ms": "123456"})], operation_timeout=10
    )[topic].result(TIMEOUT)

    configs = describe_topic_configs(admin, topic)
    assert configs["retention.ms"].value == "123456"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.bytes"].value == BROKER_RETENTION_BYTES
    assert configs["retention.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].is_default

    # Incremental: set one, delete another (back to the default), leave the rest.
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT)
    configs = describe_topic_configs(admin, topic)
    assert configs["segment.bytes"].value == "1048576"
    assert configs["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "604800000"  # log.retention.hours=168
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    # Non-incremental AlterConfigs replaces the whole set: segment.bytes reverts.
    with pytest.warns(DeprecationWarning):
        futures = admin.alter_configs(
            [ConfigResource(ResourceType.TOPIC, topic, set_config={"max.message.bytes": "2000000"})]
        )
    for future in futures.values():
        future.result(TIMEOUT)
    configs = describe_topic_configs(admin, topic)
    assert configs["max.message.bytes"].value == "2000000"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    broker_resource = ConfigResource(ResourceType.BROKER, "1")
    broker_configs = admin.describe_configs([broker_resource])[broker_resource].result(TIMEOUT)
    assert broker_configs["num.partitions"].value == "3"
    assert broker_configs["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert broker_configs["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_confluent_refuses_bad_topics(confluent_admin, unique_name) -> None:
    admin = confluent_admin
    for name in ("bad name!", "a" * 250, ".."):
        futures = admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=10)
        assert confluent_error(futures[name]).code() == KafkaError.TOPIC_EXCEPTION, name
    futures = admin.create_topics([NewTopic(unique_name, 1, 3)], operation_timeout=10)
    assert confluent_error(futures[unique_name]).code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert unique_name not in admin.list_topics(timeout=TIMEOUT).topics


# --- kafka-python -----------------------------------------------------------------


def kafka_topic_configs(admin: KafkaAdminClient, topic: str, names: list[str]) -> dict:
    resource = KafkaConfigResource(ConfigResourceType.TOPIC, topic, dict.fromkeys(names))
    return admin.describe_configs([resource], config_filter="all")["topic"][topic]


def test_kafka_python_topic_and_config_admin(kafka_admin, unique_name) -> None:
    admin = kafka_admin
    topic = unique_name
    created = admin.create_topics(
        [KafkaNewTopic(topic, 2, 1, topic_configs={"retention.ms": "123456"})]
    )
    [result] = created["topics"]
    assert result["error_code"] == 0
    assert result["num_partitions"] == 2
    assert result["configs"]["retention.ms"]["value"] == "123456"
    assert result["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert topic in admin.list_topics()

    configs = kafka_topic_configs(admin, topic, ["retention.ms", "retention.bytes", "segment.ms"])
    assert configs["retention.ms"]["value"] == "123456"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.bytes"]["value"] == BROKER_RETENTION_BYTES
    assert configs["retention.bytes"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert configs["segment.ms"]["config_source"] == "DEFAULT_CONFIG"

    # The "modified" filter (the default) lists only the override.
    modified = admin.describe_configs([KafkaConfigResource(ConfigResourceType.TOPIC, topic)])
    assert set(modified["topic"][topic]) == {"retention.ms"}

    incremental = KafkaConfigResource(ConfigResourceType.TOPIC, topic, {"retention.bytes": "1000"})
    assert admin.alter_configs([incremental], incremental=True) == {"topic": {topic: "OK"}}
    whole = KafkaConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "999"})
    assert admin.alter_configs([whole], incremental=False) == {"topic": {topic: "OK"}}
    configs = kafka_topic_configs(admin, topic, ["retention.ms", "retention.bytes"])
    assert configs["retention.ms"]["value"] == "999"
    # kafka-python resends the other modified keys with a non-incremental alter.
    assert configs["retention.bytes"]["value"] == "1000"
    assert configs["retention.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

    admin.create_partitions({topic: KafkaNewPartitions(4)})
    [described] = admin.describe_topics([topic])
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1, 2, 3]
    assert all(p["leader_id"] == 1 and p["replica_nodes"] == [1] for p in described["partitions"])

    deleted = admin.delete_topics([topic])
    assert [t["error_code"] for t in deleted["topics"]] == [0]
    assert topic not in admin.list_topics()


def test_kafka_python_refuses_bad_topics(kafka_admin, unique_name) -> None:
    with pytest.raises(kafka_errors.InvalidTopicError):
        kafka_admin.create_topics([KafkaNewTopic("bad name!", 1, 1)])
    with pytest.raises(kafka_errors.InvalidReplicationFactorError):
        kafka_admin.create_topics([KafkaNewTopic(unique_name, 1, 3)])
    assert unique_name not in kafka_admin.list_topics()
