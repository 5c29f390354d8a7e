"""Client metrics subscriptions in a cluster: ``/config/client-metrics/<name>`` in ZooKeeper.

Two brokers on one chroot: a subscription altered through the first is in ZooKeeper
in Kafka's entity-config JSON, the second lists and describes it, and a deletion
through the second removes the znode. Skips when ZooKeeper is not installed.
"""

from __future__ import annotations

import json
import struct

from bench.harness.raw_wire import exchange
from kafkette.wire.codec import message_codec

CLIENT_METRICS = 16


def _request(bootstrap: str, name: str, api_key: int, version: int, body: dict) -> dict:
    """One request on a fresh connection, encoded and decoded by kafkette's codec."""
    request = message_codec(name + "Request", version)
    header = struct.pack(">hhih", api_key, version, 7, 4) + b"test"
    payload = header + (b"\0" if request.flexible else b"") + request.encode(body)
    frame = exchange(bootstrap, struct.pack(">i", len(payload)) + payload, timeout=15)
    response = message_codec(name + "Response", version)
    return response.decode(memoryview(frame), 5 if request.flexible else 4)[0]


def _incremental(bootstrap: str, name: str, changes: list[tuple[str, int, str | None]]) -> dict:
    answer = _request(bootstrap, "IncrementalAlterConfigs", 44, 1, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
            {"name": n, "config_operation": op, "value": v} for n, op, v in changes]}],
        "validate_only": False,
    })  # fmt: skip
    return answer["responses"][0]


def _described(bootstrap: str, name: str) -> list[tuple[str, str]]:
    answer = _request(bootstrap, "DescribeConfigs", 32, 4, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name,
                       "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False,
    })  # fmt: skip
    return [(c["name"], c["value"]) for c in answer["results"][0]["configs"]]


def _listed(bootstrap: str) -> list[str]:
    answer = _request(bootstrap, "ListConfigResources", 74, 0, {})
    assert answer["error_code"] == 0
    return [r["resource_name"] for r in answer["config_resources"]]


def test_a_subscription_altered_at_one_broker_is_in_zookeeper_and_at_the_other(
    zookeeper_connect, kazoo_client, zk_member
) -> None:
    zk = kazoo_client(zookeeper_connect)
    with zk_member(1) as first, zk_member(2) as second:
        assert _listed(second.bootstrap) == []
        altered = _incremental(first.bootstrap, "sub/1", [
            ("metrics", 0, "org.apache.kafka."), ("interval.ms", 0, "1000")])
        assert altered["error_code"] == 0
        node = json.loads(zk.get("/config/client-metrics/sub%2F1")[0])
        assert node == {"version": 1, "config": {"metrics": "org.apache.kafka.",
                                                 "interval.ms": "1000"}}  # fmt: skip
        assert _listed(second.bootstrap) == ["sub/1"]
        assert _described(second.bootstrap, "sub/1") == [
            ("interval.ms", "1000"), ("metrics", "org.apache.kafka.")]
        # validation still Kafka's; nothing written
        refused = _incremental(second.bootstrap, "sub/1", [("interval.ms", 0, "5")])
        assert refused["error_code"] == 42
        assert json.loads(zk.get("/config/client-metrics/sub%2F1")[0]) == node
        # deleting the last configs through the second broker removes the subscription
        assert _incremental(second.bootstrap, "sub/1", [
            ("metrics", 1, None), ("interval.ms", 1, None)])["error_code"] == 0
        assert zk.exists("/config/client-metrics/sub%2F1") is None
        assert _listed(first.bootstrap) == []
