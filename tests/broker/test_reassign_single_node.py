"""Reassignments on a single node: its one broker holds every replica, so a move to
exactly that broker is accepted (nothing moves), any other broker is
INVALID_REPLICA_ASSIGNMENT (39, not alive), a cancel is NO_REASSIGNMENT_IN_PROGRESS (85),
an unknown partition UNKNOWN_TOPIC_OR_PARTITION (3), and nothing is ever listed. (The
cluster's reassignments are in tests/cluster/test_reassign*.py.)"""

from __future__ import annotations

from kafka import KafkaAdminClient, TopicPartition


def test_single_node_reassignments(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        node_id = admin.describe_cluster()["controller_id"]
        results = admin.alter_partition_reassignments({
            TopicPartition(topic, 0): [node_id],
            TopicPartition(topic, 1): [node_id, node_id + 1],
            TopicPartition(topic, 5): [node_id],
        })
        codes = {tp.partition: 0 if e is None else e.errno for tp, e in results.items()}
        assert codes == {0: 0, 1: 39, 5: 3}
        cancel = admin.alter_partition_reassignments({TopicPartition(topic, 0): None})
        assert {tp.partition: e.errno for tp, e in cancel.items()} == {0: 85}
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()
