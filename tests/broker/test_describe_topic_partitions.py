"""DescribeTopicPartitions (API 75) on a single node: fields, unknown topics, paging.

Requests go through kafkette's own client codec over a real socket (kafka-python
has no class for this API); the broker is the module's embedded one.
"""

from __future__ import annotations

from bench.harness.raw_wire import call
from kafkette.wire.apis import ApiKey


def describe(bootstrap: str, body: dict) -> dict:
    return call(bootstrap, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body)


def test_partitions_of_named_topics_and_unknown_ones(broker, create_topic, unique_name) -> None:
    create_topic(broker.bootstrap, partitions=3, name=unique_name)
    body = describe(
        broker.bootstrap,
        {"topics": [{"name": unique_name}, {"name": "no-such-topic"}],
         "response_partition_limit": 2000, "cursor": None},
    )
    assert body["next_cursor"] is None
    by_name = {t["name"]: t for t in body["topics"]}
    assert by_name["no-such-topic"]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    topic = by_name[unique_name]
    assert topic["error_code"] == 0 and topic["is_internal"] is False
    assert [p["partition_index"] for p in topic["partitions"]] == [0, 1, 2]
    node = broker.broker.node_id
    for partition in topic["partitions"]:
        assert partition["error_code"] == 0
        assert partition["leader_id"] == node
        assert partition["replica_nodes"] == partition["isr_nodes"] == [node]
        assert partition["eligible_leader_replicas"] == partition["last_known_elr"] == []


def test_paging_with_limit_and_cursor(broker, create_topic, unique_name) -> None:
    create_topic(broker.bootstrap, partitions=3, name=unique_name)
    request = {"topics": [{"name": unique_name}], "response_partition_limit": 2, "cursor": None}
    first = describe(broker.bootstrap, request)
    assert [p["partition_index"] for p in first["topics"][0]["partitions"]] == [0, 1]
    assert first["next_cursor"] == {"topic_name": unique_name, "partition_index": 2}
    second = describe(broker.bootstrap, {**request, "cursor": first["next_cursor"]})
    assert [p["partition_index"] for p in second["topics"][0]["partitions"]] == [2]
    assert second["next_cursor"] is None


def test_shared_metadata_partition_entries_stay_unchanged(
    broker, create_topic, unique_name
) -> None:
    """Metadata's single-node partition entries are built once per partition count and
    shared between responses (broker/single_node.py); DescribeTopicPartitions adds
    its own fields to copies, never to the shared entries."""
    from kafkette.broker.single_node import shared_partition_entries

    create_topic(broker.bootstrap, partitions=5, name=unique_name)
    request = {"topics": [{"name": unique_name}], "response_partition_limit": 2000, "cursor": None}
    describe(broker.bootstrap, request)
    describe(broker.bootstrap, request)
    shared = shared_partition_entries(broker.broker.node_id, 5)
    assert [entry["partition_index"] for entry in shared] == [0, 1, 2, 3, 4]
    for entry in shared:
        assert set(entry) == {
            "error_code", "partition_index", "leader_id", "leader_epoch",
            "replica_nodes", "isr_nodes", "offline_replicas",
        }
