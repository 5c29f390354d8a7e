"""Three kafkette brokers on a real ZooKeeper: one cluster, the same answers everywhere.

Real ``kafkette serve`` processes (``cluster`` fixture), created and inspected with
confluent-kafka's AdminClient and raw Metadata requests to each broker in turn;
the znodes are read with kazoo and checked against Kafka's ZooKeeper layout.
"""

from __future__ import annotations

import base64
import json
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster import zk_wire


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 30000})


def _create(admin: AdminClient, *topics: NewTopic) -> None:
    for future in admin.create_topics(list(topics), request_timeout=60).values():
        future.result(timeout=60)


def _kafka_uuid(text: str) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode().rstrip("=")


def test_rf3_topic_every_broker_answers_the_same_metadata(cluster, wait_until) -> None:
    built = cluster(3, broker_configs={2: {"broker.rack": "rack-b"}})
    admin = _admin(built.bootstrap)
    _create(admin, NewTopic("orders", num_partitions=3, replication_factor=3))


    def agreed():
        # Brokers follow ZooKeeper's watches: each converges within moments of the others.
        views = [zk_wire.metadata(b.address, ["orders"]) for b in built.brokers.values()]
        return views[0] if views[0] == views[1] == views[2] else None

    view = wait_until(agreed, what="the three brokers answering the same metadata")
    assert [b[0] for b in view["brokers"]] == [1, 2, 3]
    assert [b[3] for b in view["brokers"]] == [None, "rack-b", None]  # broker.rack
    assert view["controller_id"] in (1, 2, 3)
    partitions = view["topics"]["orders"]["partitions"]
    assert sorted(partitions) == [0, 1, 2]
    leaders = set()
    for state in partitions.values():
        assert state["error_code"] == 0
        assert sorted(state["replicas"]) == [1, 2, 3]
        assert sorted(state["isr"]) == [1, 2, 3]
        assert state["leader"] == state["replicas"][0]  # the preferred replica leads
        assert state["leader_epoch"] == 0
        assert state["offline"] == []
        leaders.add(state["leader"])
    assert leaders == {1, 2, 3}  # round-robin assignment spreads the leaders

    # The znodes are Kafka's, with the same facts.
    zk = built.zk()
    assert json.loads(zk.get("/cluster/id")[0])["id"] == view["cluster_id"]
    assert json.loads(zk.get("/controller")[0])["brokerid"] == view["controller_id"]
    assert int(zk.get("/controller_epoch")[0]) >= 1
    registration = json.loads(zk.get("/brokers/ids/2")[0])
    host, port = built.brokers[2].address.rsplit(":", 1)
    assert registration["endpoints"] == [f"PLAINTEXT://{host}:{port}"]
    assert (registration["host"], registration["port"], registration["version"]) == (
        host, int(port), 5,
    )
    assert registration["rack"] == "rack-b"
    assert zk.exists("/brokers/ids/2").ephemeralOwner != 0
    assignment = json.loads(zk.get("/brokers/topics/orders")[0])
    assert assignment["version"] == 3
    assert assignment["topic_id"] == _kafka_uuid(view["topics"]["orders"]["topic_id"])
    assert {int(p): r for p, r in assignment["partitions"].items()} == {
        p: s["replicas"] for p, s in partitions.items()
    }
    for p, s in partitions.items():
        state = json.loads(zk.get(f"/brokers/topics/orders/partitions/{p}/state")[0])
        assert state == {
            "controller_epoch": state["controller_epoch"],
            "leader": s["leader"],
            "version": 1,
            "leader_epoch": 0,
            "isr": s["isr"],
        }

    # DescribeCluster (confluent) from any broker: the three brokers and the controller.
    described = admin.describe_cluster(request_timeout=30).result(timeout=30)
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == view["controller_id"]
    assert described.cluster_id == view["cluster_id"]
