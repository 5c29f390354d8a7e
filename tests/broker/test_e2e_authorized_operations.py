"""With no ACLs every operation is allowed, and clients that ask are told exactly that."""

from __future__ import annotations

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

TOPIC_OPERATIONS = {
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}
CLUSTER_OPERATIONS = {
    AclOperation.CREATE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.CLUSTER_ACTION,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
}


def test_topic_and_cluster_authorized_operations(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_topics(
        TopicCollection([topic]), request_timeout=15, include_authorized_operations=True
    )[topic].result(timeout=20)
    assert set(described.authorized_operations) == TOPIC_OPERATIONS
    cluster = admin.describe_cluster(
        request_timeout=15, include_authorized_operations=True
    ).result(timeout=20)
    assert set(cluster.authorized_operations) == CLUSTER_OPERATIONS
