"""ElectLeaders on a single node: the only replica always leads, so every partition asked
answers ELECTION_NOT_NEEDED (84), an unknown one UNKNOWN_TOPIC_OR_PARTITION (3), as Kafka
answers when the preferred replica already leads. (The cluster's elections are in
tests/cluster/test_zk_failover.py.)"""

from __future__ import annotations

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient


def test_single_node_elections_are_never_needed(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    asked = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 5)]
    for election in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        results = admin.elect_leaders(election, asked).result(timeout=30)
        assert {tp.partition: err.code() for tp, err in results.items()} == {0: 84, 1: 84, 5: 3}
