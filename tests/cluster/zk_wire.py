"""Raw requests to one broker of a cluster, for the ZooKeeper-side cluster tests.

One request on a fresh connection to exactly the broker named, encoded and
decoded by kafka-python's protocol classes (an encoder independent of ours,
``bench.harness.raw_wire``), so a test can compare what each broker says.
"""

from __future__ import annotations

from kafka.protocol.metadata import MetadataRequest

from bench.harness.raw_wire import raw_request

METADATA_VERSION = 12


def request(address: str, message, version: int, client_id: str = "zk-tests"):
    """One request to the broker at ``address``; its decoded response."""
    return raw_request(address, message, version, client_id, timeout=15)


def metadata(address: str, topics: list[str] | None = None) -> dict:
    """The broker's Metadata (v12), as plain data: brokers, controller, topics by name."""
    wanted = None if topics is None else [
        MetadataRequest.MetadataRequestTopic(name=t) for t in topics
    ]
    response = request(
        address, MetadataRequest(topics=wanted, allow_auto_topic_creation=False),
        METADATA_VERSION,
    )
    return {
        "cluster_id": response.cluster_id,
        "controller_id": response.controller_id,
        "brokers": sorted((b.node_id, b.host, b.port, b.rack) for b in response.brokers),
        "topics": {
            t.name: {
                "error_code": t.error_code,
                "topic_id": str(t.topic_id),
                "partitions": {
                    p.partition_index: {
                        "error_code": p.error_code,
                        "leader": p.leader_id,
                        "leader_epoch": p.leader_epoch,
                        "replicas": list(p.replica_nodes),
                        "isr": list(p.isr_nodes),
                        "offline": list(p.offline_replicas),
                    }
                    for p in t.partitions
                },
            }
            for t in response.topics
        },
    }


def topic_configs(address: str, topic: str) -> dict[str, str]:
    """DescribeConfigs (v1) of ``topic`` on this broker: the topic's own overrides."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest

    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=topic, configuration_keys=None
    )
    response = request(address, DescribeConfigsRequest(resources=[resource]), 1)
    [result] = response.results
    assert result.error_code == 0, (result.error_code, result.error_message)
    return {c.name: c.value for c in result.configs if c.config_source == 1}


def find_coordinator(address: str, key: str, key_type: int = 0) -> tuple[int, int]:
    """FindCoordinator (v3) on this broker: (error code, coordinator node id)."""
    from kafka.protocol.metadata import FindCoordinatorRequest

    response = request(address, FindCoordinatorRequest(key=key, key_type=key_type), 3)
    return response.error_code, response.node_id


def init_producer_id(address: str) -> tuple[int, int]:
    """InitProducerId (v1, idempotent producer) on this broker: (error code, producer id)."""
    from kafka.protocol.producer.transaction import InitProducerIdRequest

    response = request(
        address, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 1
    )
    return response.error_code, response.producer_id
