"""Topic administration across a kafkette cluster (ZooKeeper side).

Whatever broker a request reaches, the change goes through ZooKeeper and every
broker then shows it: topic configs (DescribeConfigs on each broker),
deletions (gone from every broker's Metadata, from ZooKeeper and from every data
dir), added partitions (assigned like Kafka, with leaders). Refusals carry
Kafka's error codes. FindCoordinator names the leader of the key's partition of
``__consumer_offsets`` on every broker.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from tests.cluster import zk_wire

INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
TOPIC_ALREADY_EXISTS = 36


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _create_error(admin: AdminClient, topic: NewTopic) -> int:
    [future] = admin.create_topics([topic], request_timeout=60).values()
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=60)
    return raised.value.args[0].code()


def _knows(address: str, topic: str) -> bool:
    """Whether the broker at ``address`` answers DescribeConfigs for ``topic``."""
    try:
        zk_wire.topic_configs(address, topic)
    except AssertionError:  # its error code: not known there yet
        return False
    return True


def test_configs_and_deletion_reach_every_broker(cluster, wait_until) -> None:
    built = cluster(3)
    addresses = [b.address for b in built.brokers.values()]
    # Each step through a different broker: any broker takes any admin request.
    admin_1, admin_2, admin_3 = (_admin(a) for a in addresses)
    for future in admin_1.create_topics(
        [NewTopic("cfg", 2, 3, config={"retention.ms": "3600000"})], request_timeout=60
    ).values():
        future.result(timeout=60)
    # CreateTopics answers once the topic is made; the other brokers learn of it from
    # ZooKeeper a moment later (Kafka's createTopics documents the same delay), which a
    # loaded machine stretches (seen in CI: UNKNOWN_TOPIC_OR_PARTITION from a second broker).
    wait_until(lambda: all(_knows(a, "cfg") for a in addresses), what="every broker knows cfg")
    for address in addresses:
        assert zk_wire.topic_configs(address, "cfg") == {"retention.ms": "3600000"}

    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "cfg",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    for future in admin_2.incremental_alter_configs([resource]).values():
        future.result(timeout=60)
    wait_until(
        lambda: all(
            zk_wire.topic_configs(a, "cfg") == {"cleanup.policy": "compact"} for a in addresses
        ),
        what="the altered configs on every broker",
    )
    zk = built.zk()
    assert b'"cleanup.policy":"compact"' in zk.get("/config/topics/cfg")[0]

    for future in admin_3.delete_topics(["cfg"], request_timeout=60).values():
        future.result(timeout=60)
    wait_until(
        lambda: all(
            zk_wire.metadata(a, ["cfg"])["topics"]["cfg"]["error_code"] == 3 for a in addresses
        ),
        what="UNKNOWN_TOPIC_OR_PARTITION for the deleted topic on every broker",
    )
    assert zk.exists("/brokers/topics/cfg") is None
    assert zk.exists("/config/topics/cfg") is None
    assert zk.get_children("/admin/delete_topics") == []
    wait_until(
        lambda: (
            not any(
                (b.data_dir / f"cfg-{p}").exists() for b in built.brokers.values() for p in (0, 1)
            )
        ),
        what="the deleted topic's logs gone from every data dir",
    )


def test_create_partitions_and_kafka_refusals(cluster, wait_until) -> None:
    built = cluster(3)
    admin = _admin(built.bootstrap)
    for future in admin.create_topics([NewTopic("grow", 2, 2)], request_timeout=60).values():
        future.result(timeout=60)
    for future in admin.create_partitions([NewPartitions("grow", 5)], request_timeout=60).values():
        future.result(timeout=60)

    def agreed():
        # The broker that answered waited for its own view; the others follow their watches.
        views = [zk_wire.metadata(b.address, ["grow"]) for b in built.brokers.values()]
        return views[0] if views[0] == views[1] == views[2] else None

    partitions = wait_until(agreed, what="every broker showing 5 partitions")["topics"]["grow"][
        "partitions"
    ]
    assert sorted(partitions) == [0, 1, 2, 3, 4]
    for state in partitions.values():
        assert len(state["replicas"]) == 2 and len(set(state["replicas"])) == 2
        assert state["leader"] == state["replicas"][0]
    # Kafka continues the round robin from partition 0's first replica.
    firsts = [partitions[p]["replicas"][0] for p in range(5)]
    assert all((b - a) % 3 == 1 for a, b in itertools.pairwise(firsts)), firsts

    assert _create_error(admin, NewTopic("too-many", 1, 4)) == INVALID_REPLICATION_FACTOR
    unknown = NewTopic("nowhere", 1, replica_assignment=[[1, 9]])
    assert _create_error(admin, unknown) == INVALID_REPLICA_ASSIGNMENT
    assert _create_error(admin, NewTopic("grow", 1, 1)) == TOPIC_ALREADY_EXISTS
    for name in ("too-many", "nowhere"):
        assert zk_wire.metadata(built.brokers[1].address, [name])["topics"][name]["error_code"] == 3


def test_find_coordinator_is_the_offsets_partition_leader(cluster, wait_until) -> None:
    built = cluster(3, configs={"offsets.topic.num.partitions": "6"})
    addresses = [b.address for b in built.brokers.values()]

    def found():
        answers = {zk_wire.find_coordinator(a, "my-group") for a in addresses}
        return answers if len(answers) == 1 and next(iter(answers))[0] == 0 else None

    [(_, coordinator)] = wait_until(found, timeout=60, what="one coordinator for the group")
    view = zk_wire.metadata(addresses[0], ["__consumer_offsets"])
    partitions = view["topics"]["__consumer_offsets"]["partitions"]
    assert len(partitions) == 6
    # Kafka's rule: abs(javaStringHashCode("my-group")) % 6.
    java_hash = 0
    for char in "my-group":
        java_hash = (31 * java_hash + ord(char)) & 0xFFFFFFFF
    java_hash = java_hash - 2**32 if java_hash >= 2**31 else java_hash
    assert coordinator == partitions[abs(java_hash) % 6]["leader"]
    assert all(len(p["replicas"]) == 3 for p in partitions.values())


def _partition_dirs(data_dir: Path, topic: str) -> set[str]:
    return {p.name for p in data_dir.glob(f"{topic}-*") if p.is_dir()}


def test_each_broker_hosts_only_its_replicas(cluster, wait_until) -> None:
    built = cluster(3)
    admin = _admin(built.bootstrap)
    for future in admin.create_topics([NewTopic("spread", 3, 1)], request_timeout=60).values():
        future.result(timeout=60)

    def agreed():
        views = [zk_wire.metadata(b.address, ["spread"]) for b in built.brokers.values()]
        parts = [v["topics"]["spread"]["partitions"] for v in views]
        led = all(len(p) == 3 and all(s["leader"] >= 0 for s in p.values()) for p in parts)
        return parts[0] if led and parts[0] == parts[1] == parts[2] else None

    partitions = wait_until(agreed, what="every broker showing the topic with its leaders")
    owners = {p: state["replicas"] for p, state in partitions.items()}
    assert sorted(r for replicas in owners.values() for r in replicas) == [1, 2, 3]
    for broker_id, broker in built.brokers.items():
        # Kafka's layout: a directory for each partition this broker is a replica of, no other.
        mine = {f"spread-{p}" for p, replicas in owners.items() if broker_id in replicas}
        assert _partition_dirs(broker.data_dir, "spread") == mine
