"""Authorization in a cluster: brokers are principals too.

Two brokers replicate over a SASL_PLAINTEXT ``BROKER`` listener as ``User:broker``
(SCRAM-SHA-512, the user written in ZooKeeper beforehand as Kafka's operators do),
which ``super.users`` names; clients come in on a PLAINTEXT ``CLIENT`` listener as
User:ANONYMOUS with ``allow.everyone.if.no.acl.found=true``. Once an ACL covers the
cluster resource, an anonymous client may no longer act as a broker: a Fetch sent as a
follower (replica_id >= 0) is refused TOPIC_AUTHORIZATION_FAILED (Kafka: CLUSTER_ACTION
on the cluster), while the real followers keep replicating (acks=all succeeds).
Skips when ZooKeeper is not installed.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import AclOperation, NewTopic, ResourceType

from bench.harness.raw_wire import read_exactly
from kafkette.broker.embedded import EmbeddedBroker
from tests.security import acl_support as support
from tests.security import sasl_support as sasl

TIMEOUT = 30


def _follower_fetch_error(bootstrap: str, topic: str) -> int:
    """A Fetch (v11) claiming to be broker 2's follower: the partition's error code."""
    import socket
    import struct

    from kafka.protocol.consumer import FetchRequest

    fetch_topic = FetchRequest.FetchTopic
    request = FetchRequest(
        replica_id=2, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1,
        topics=[fetch_topic(topic=topic, partitions=[fetch_topic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
            partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id="",
    )
    request.with_header(correlation_id=1, client_id="not-a-broker")
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(request.encode(version=11, header=True, framed=True))
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        frame = read_exactly(sock, size)
    response = request.header.get_response_class().decode(frame, version=11, header=True)
    return response.responses[0].partitions[0].error_code


def test_brokers_replicate_as_super_users_and_clients_cannot_fetch_as_followers(
    zookeeper, tmp_path
) -> None:
    chroot = f"/authz-{uuid.uuid4().hex[:8]}"
    common = {
        **sasl.scram_inter_broker_configs(zookeeper.connect_string, chroot),
        "authorizer.class.name": support.STANDARD_AUTHORIZER,
        "super.users": "User:broker",
        "allow.everyone.if.no.acl.found": "true",
    }
    with (
        EmbeddedBroker.start(tmp_path / "b1", {**common, "broker.id": "1"}) as first,
        EmbeddedBroker.start(tmp_path / "b2", {**common, "broker.id": "2"}),
    ):
        client = str(first.broker.endpoint_for("CLIENT"))
        admin = support.admin(client)
        deadline = time.monotonic() + TIMEOUT
        while len(admin.list_topics(timeout=10).brokers) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        topic = support.name("replicated")
        admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(TIMEOUT)
        # From now on the cluster resource is covered: anonymous clients lose
        # CLUSTER_ACTION (and every other cluster operation but DESCRIBE).
        support.create_acls(admin, [
            support.binding(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE,
                            principal="User:*"),
        ])
        leader = _leader_bootstrap(first, topic)
        assert _follower_fetch_error(leader, topic) == 29  # TOPIC_AUTHORIZATION_FAILED
        # acks=all with min.insync.replicas=2: the follower (User:broker) still fetches.
        assert sasl.produce_acked(client, topic, 10, TIMEOUT) == (0, [])


def _leader_bootstrap(broker: EmbeddedBroker, topic: str) -> str:
    """The CLIENT endpoint of the partition's leader, from Metadata."""
    admin = support.admin(str(broker.broker.endpoint_for("CLIENT")))
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=10)
        leader = metadata.topics[topic].partitions[0].leader
        if leader >= 0:
            found = metadata.brokers[leader]
            return f"{found.host}:{found.port}"
        time.sleep(0.2)
    raise AssertionError(f"{topic}-0 has no leader within {TIMEOUT}s")
