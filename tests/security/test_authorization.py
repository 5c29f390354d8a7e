"""Requests refused or allowed as the ACLs say, with real clients (confluent-kafka,
kafka-python), as Kafka's StandardAuthorizer decides and with Kafka's error codes.

The principal is User:ANONYMOUS (PLAINTEXT listener). The first broker has
``allow.everyone.if.no.acl.found=true``: a resource no ACL covers is open, so the
test client can manage ACLs (the cluster has none) and each test closes just its
own topics, groups and transactional ids. The second has no ACLs and no super user:
everything is refused.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from bench.harness.raw_wire import read_exactly
from kafkette.broker.embedded import EmbeddedBroker
from tests.security import acl_support as support

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
DENY = AclPermissionType.DENY
TIMEOUT = 20


@pytest.fixture(scope="module")
def open_broker(tmp_path_factory: pytest.TempPathFactory):
    broker = support.start_broker(
        tmp_path_factory.mktemp("authz-open"), allow_everyone_if_no_acl_found="true"
    )
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def _create_topic(bootstrap: str, topic: str) -> None:
    client = support.admin(bootstrap)  # kept until the answer: a dropped client cancels it
    futures = client.create_topics([NewTopic(topic, 1)], request_timeout=20)
    futures[topic].result(timeout=TIMEOUT)


def _produce(bootstrap: str, topic: str, **extra) -> KafkaError | None:
    """Produce one record; the delivery error (None when it was written)."""
    return support.produce_one({"bootstrap.servers": bootstrap, **extra}, topic)


def _consume_error_or_values(bootstrap: str, topic: str, group: str, want: int):
    """The first error the consumer reports, or the values once ``want`` arrived."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and len(values) < want:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                return msg.error()
            values.append(msg.value())
        return values
    finally:
        consumer.close()


def test_deny_wins_over_allow(open_broker: EmbeddedBroker) -> None:
    topic = support.name("deny-wins")
    _create_topic(open_broker.bootstrap, topic)
    assert _produce(open_broker.bootstrap, topic) is None
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(TOPIC, topic, AclOperation.WRITE),
        support.binding(TOPIC, topic, AclOperation.ALL, DENY, principal="User:*"),
    ])
    error = _produce(open_broker.bootstrap, topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_prefixed_read_acl_allows_consuming_not_producing(open_broker: EmbeddedBroker) -> None:
    prefix = support.name("ro") + "-"
    topic = prefix + "events"
    _create_topic(open_broker.bootstrap, topic)
    assert _produce(open_broker.bootstrap, topic) is None
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(TOPIC, prefix, AclOperation.READ, principal="User:*",
                        pattern=ResourcePatternType.PREFIXED),
    ])
    # The topic is now covered by an ACL: WRITE has no ALLOW, so it is refused.
    error = _produce(open_broker.bootstrap, topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # READ allows consuming (and implies DESCRIBE, which Metadata needs).
    assert _consume_error_or_values(open_broker.bootstrap, topic, support.name("g"), 1) == [b"v"]


def test_metadata_leaves_out_topics_the_principal_may_not_describe(
    open_broker: EmbeddedBroker,
) -> None:
    hidden, shown = support.name("hidden"), support.name("shown")
    _create_topic(open_broker.bootstrap, hidden)
    _create_topic(open_broker.bootstrap, shown)
    client = support.admin(open_broker.bootstrap)
    support.create_acls(client, [
        support.binding(TOPIC, hidden, AclOperation.WRITE, principal="User:alice"),
    ])
    listed = client.list_topics(timeout=TIMEOUT).topics
    assert shown in listed and hidden not in listed
    described = client.describe_topics(TopicCollection([hidden]), request_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as refused:
        described[hidden].result(timeout=TIMEOUT)
    assert support.error_name(refused.value) == "TOPIC_AUTHORIZATION_FAILED"


def test_a_group_the_principal_may_not_read_refuses_the_consumer(
    open_broker: EmbeddedBroker,
) -> None:
    topic, group = support.name("grp-topic"), support.name("closed-group")
    _create_topic(open_broker.bootstrap, topic)
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(GROUP, group, AclOperation.READ, DENY),
    ])
    error = _consume_error_or_values(open_broker.bootstrap, topic, group, 1)
    assert isinstance(error, KafkaError), error
    assert error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_a_transactional_id_the_principal_may_not_write_is_refused(
    open_broker: EmbeddedBroker,
) -> None:
    transactional_id = support.name("txn")
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(ResourceType.TRANSACTIONAL_ID, transactional_id, AclOperation.WRITE,
                        DENY),
    ])
    producer = Producer({"bootstrap.servers": open_broker.bootstrap,
                         "transactional.id": transactional_id})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(TIMEOUT)
    assert support.error_name(refused.value) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_authorized_operations_report_what_the_acls_allow(open_broker: EmbeddedBroker) -> None:
    topic = support.name("ops")
    _create_topic(open_broker.bootstrap, topic)
    client = support.admin(open_broker.bootstrap)
    support.create_acls(client, [
        support.binding(TOPIC, topic, AclOperation.READ),
        support.binding(TOPIC, topic, AclOperation.ALTER_CONFIGS),
    ])
    described = client.describe_topics(
        TopicCollection([topic]), request_timeout=TIMEOUT, include_authorized_operations=True
    )[topic].result(timeout=TIMEOUT)
    assert set(described.authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS,
    }
    # With no ACL on the cluster, every cluster operation is allowed here.
    cluster = client.describe_cluster(
        request_timeout=TIMEOUT, include_authorized_operations=True
    ).result(timeout=TIMEOUT)
    assert AclOperation.ALTER in set(cluster.authorized_operations)


def test_host_patterns_match_the_client_address(open_broker: EmbeddedBroker) -> None:
    elsewhere, here = support.name("elsewhere"), support.name("here")
    for topic in (elsewhere, here):
        _create_topic(open_broker.bootstrap, topic)
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(TOPIC, elsewhere, AclOperation.WRITE, host="10.9.9.9"),
        support.binding(TOPIC, here, AclOperation.WRITE, host="127.0.0.1"),
    ])
    assert _produce(open_broker.bootstrap, here) is None
    error = _produce(open_broker.bootstrap, elsewhere)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_without_acls_and_super_users_everything_is_refused(tmp_path: Path) -> None:
    broker = support.start_broker(tmp_path, super_users="User:ANONYMOUS")
    topic = support.name("closed")
    try:
        _create_topic(broker.bootstrap, topic)  # as super user
    finally:
        broker.stop(timeout=30)
    broker = support.start_broker(tmp_path)  # no super user, no ACL, no open rule
    try:
        client = support.admin(broker.bootstrap)
        assert topic not in client.list_topics(timeout=TIMEOUT).topics
        with pytest.raises(KafkaException) as acl_refused:
            support.create_acls(client, [support.binding(TOPIC, topic, AclOperation.READ)])
        assert support.error_name(acl_refused.value) == "CLUSTER_AUTHORIZATION_FAILED"
        created = client.create_topics([NewTopic(support.name("new"), 1)], request_timeout=20)
        with pytest.raises(KafkaException) as refused:
            next(iter(created.values())).result(timeout=TIMEOUT)
        assert support.error_name(refused.value) == "TOPIC_AUTHORIZATION_FAILED"
        error = _produce(broker.bootstrap, topic)
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        broker.stop(timeout=30)


def test_an_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(
    tmp_path: Path,
) -> None:
    """KIP-679: InitProducerId without a transactional id is allowed with IDEMPOTENT_WRITE
    on the cluster or WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED."""
    broker = support.start_broker(tmp_path)
    try:
        assert _init_producer_id_error(broker) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    finally:
        broker.stop(timeout=30)
    broker = support.start_broker(tmp_path, super_users="User:ANONYMOUS")
    try:  # a super user adds WRITE on the topics named logs-*
        support.create_acls(support.admin(broker.bootstrap), [
            support.binding(TOPIC, "logs-", AclOperation.WRITE,
                            pattern=ResourcePatternType.PREFIXED),
        ])
    finally:
        broker.stop(timeout=30)
    broker = support.start_broker(tmp_path)
    try:
        assert _init_producer_id_error(broker) == 0
    finally:
        broker.stop(timeout=30)


def _init_producer_id_error(broker: EmbeddedBroker) -> int:
    """InitProducerId v0 without a transactional id, over a plain socket: the error code."""
    client_id = b"t"
    request = struct.pack(">hhih", 22, 0, 1, len(client_id)) + client_id
    request += struct.pack(">hi", -1, 60000)  # transactional_id null, timeout
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", read_exactly(sock, 4))[0]
        response = read_exactly(sock, size)
    # correlation id, throttle_time_ms, then the error code
    return struct.unpack(">h", response[8:10])[0]


def test_an_acks_0_produce_refused_closes_the_connection(open_broker: EmbeddedBroker) -> None:
    """acks=0 has no answer to carry TOPIC_AUTHORIZATION_FAILED: Kafka closes the
    connection instead, so the producer notices; an allowed one keeps it open."""
    from kafka.protocol.metadata import MetadataRequest
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    allowed, refused = support.name("acks0-ok"), support.name("acks0-denied")
    for topic in (allowed, refused):
        _create_topic(open_broker.bootstrap, topic)
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(TOPIC, refused, AclOperation.WRITE, DENY),
    ])
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    builder.append(timestamp=None, key=None, value=b"v", headers=[])
    builder.close()
    records = bytes(builder.buffer())

    def produce_acks_0(sock: socket.socket, topic: str) -> None:
        data = ProduceRequest.TopicProduceData
        request = ProduceRequest(transactional_id=None, acks=0, timeout_ms=10_000, topic_data=[
            data(name=topic, partition_data=[
                data.PartitionProduceData(index=0, records=records)])])
        request.with_header(correlation_id=1, client_id="acks0")
        sock.sendall(request.encode(version=9, header=True, framed=True))

    host, port = open_broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        produce_acks_0(sock, allowed)
        metadata = MetadataRequest(topics=None, allow_auto_topic_creation=False)
        metadata.with_header(correlation_id=2, client_id="acks0")
        sock.sendall(metadata.encode(version=9, header=True, framed=True))
        size = struct.unpack(">i", read_exactly(sock, 4))[0]
        assert len(read_exactly(sock, size)) == size  # still open, answering
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        produce_acks_0(sock, refused)
        assert sock.recv(1) == b""  # closed by the broker


def test_group_admin_needs_describe_and_delete_on_the_group(open_broker: EmbeddedBroker) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions

    topic, group = support.name("admin-grp-topic"), support.name("admin-grp")
    _create_topic(open_broker.bootstrap, topic)
    assert _produce(open_broker.bootstrap, topic) is None
    assert _consume_error_or_values(open_broker.bootstrap, topic, group, 1) == [b"v"]
    client = support.admin(open_broker.bootstrap)
    # READ on the group (it implies DESCRIBE), no DELETE.
    support.create_acls(client, [support.binding(GROUP, group, AclOperation.READ)])
    offsets = client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT
    )[group].result(timeout=TIMEOUT)
    assert offsets.group_id == group
    with pytest.raises(KafkaException) as refused:
        client.delete_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert support.error_name(refused.value) == "GROUP_AUTHORIZATION_FAILED"
    # A DENY of DESCRIBE: the offsets are refused too.
    support.create_acls(client, [support.binding(GROUP, group, AclOperation.DESCRIBE, DENY)])
    with pytest.raises(KafkaException) as hidden:
        client.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT
        )[group].result(timeout=TIMEOUT)
    assert support.error_name(hidden.value) == "GROUP_AUTHORIZATION_FAILED"


def test_denials_that_only_filter_are_not_logged(open_broker: EmbeddedBroker, caplog) -> None:
    """Kafka's logIfDenied=false: Metadata leaving out topics writes no line per topic;
    a refused request writes one line per decision (not per retry), even when a
    filtering check made that decision first."""
    prefix = support.name("quiet") + "-"
    topics = [prefix + str(n) for n in range(5)]
    for topic in topics:
        _create_topic(open_broker.bootstrap, topic)
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(TOPIC, prefix, AclOperation.WRITE, principal="User:alice",
                        pattern=ResourcePatternType.PREFIXED),
    ])
    caplog.set_level("INFO", logger="kafkette.authorizer")
    listed = support.admin(open_broker.bootstrap).list_topics(timeout=TIMEOUT).topics
    assert not set(topics) & set(listed)
    denials = [r for r in caplog.records if "is Denied" in r.getMessage()]
    assert denials == []
    error = _produce(open_broker.bootstrap, topics[0])
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    denials = [r.getMessage() for r in caplog.records if "is Denied" in r.getMessage()]
    # The producer's Metadata for the topic is refused (it may not DESCRIBE it), again
    # and again as it retries: one line.
    assert len(denials) == 1, denials
    assert "DESCRIBE from host = 127.0.0.1" in denials[0] and topics[0] in denials[0]
