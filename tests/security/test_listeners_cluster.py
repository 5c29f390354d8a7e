"""Cluster mode with several listeners: every broker registers every listener, Metadata
per listener names every broker's endpoint of that listener, and the brokers replicate
over the inter-broker listener (here SSL with mutual TLS)."""

from __future__ import annotations

import json
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 30



def brokers_seen(bootstrap: str, conf: dict[str, str]) -> list[tuple[int, str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    brokers = admin.list_topics(timeout=TIMEOUT_S).brokers.values()
    return sorted((b.id, b.host, b.port) for b in brokers)


def test_two_brokers_register_both_listeners_and_replicate_over_tls(
    secure_broker, tls, zookeeper
) -> None:
    chroot = f"/kafkette-listeners-{uuid.uuid4().hex[:8]}"
    common = {
        "zookeeper.connect": zookeeper.connect_string + chroot,
        "zookeeper.session.timeout.ms": "6000",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SSL",
        "inter.broker.listener.name": "BROKER",
        # Mutual TLS between brokers: each presents its keystore as a client.
        **tls.broker(store="PKCS12", client_auth="required", listener="BROKER"),
        "offsets.topic.replication.factor": "2",
        "transaction.state.log.replication.factor": "2",
        "transaction.state.log.min.isr": "1",
        "min.insync.replicas": "2",
    }
    listeners = "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0"
    brokers = {
        broker_id: secure_broker(
            {**common, "broker.id": str(broker_id)}, listeners=listeners,
            args=("--log-level", "DEBUG"),  # the TLS connection lines name the principal
        )
        for broker_id in (1, 2)
    }
    client = {i: b.endpoints["CLIENT"] for i, b in brokers.items()}
    internal = {i: b.endpoints["BROKER"] for i, b in brokers.items()}

    def port(endpoint: str) -> int:
        return int(endpoint.rpartition(":")[2])

    expected_client = [(i, "127.0.0.1", port(client[i])) for i in (1, 2)]
    expected_internal = [(i, "127.0.0.1", port(internal[i])) for i in (1, 2)]
    for _ in range(100):  # each broker's view lists the other once its watch fired
        if brokers_seen(client[1], {}) == expected_client:
            break
    assert brokers_seen(client[1], {}) == expected_client
    assert brokers_seen(client[2], {}) == expected_client
    assert brokers_seen(internal[2], tls.confluent(mutual=True)) == expected_internal

    # The registration is Kafka's JSON, the inter-broker listener first.
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper.connect_string + chroot, timeout=TIMEOUT_S)
    zk.start(timeout=TIMEOUT_S)
    try:
        registration = json.loads(zk.get("/brokers/ids/1")[0])
    finally:
        zk.stop()
        zk.close()
    assert registration["listener_security_protocol_map"] == {
        "BROKER": "SSL", "CLIENT": "PLAINTEXT",
    }
    assert registration["endpoints"] == [
        f"BROKER://127.0.0.1:{port(internal[1])}",
        f"CLIENT://127.0.0.1:{port(client[1])}",
    ]
    assert (registration["host"], registration["port"]) == ("127.0.0.1", port(client[1]))

    # acks=all with min.insync.replicas=2: answered only once the follower fetched the
    # records, over the BROKER listener (SSL, mutual TLS).
    topic = f"replicated-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": client[1]})
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(TIMEOUT_S)
    producer = Producer(
        {"bootstrap.servers": client[2], "acks": "all", "message.timeout.ms": 30000}
    )
    failures: list[object] = []
    for index in range(50):
        producer.produce(
            topic, f"r{index}".encode(), on_delivery=lambda err, _: err and failures.append(err)
        )
    assert producer.flush(TIMEOUT_S) == 0
    assert failures == []
    # The follower's fetches came over BROKER with its broker certificate.
    leader = brokers[1] if "replica-fetcher-2" in brokers[1].stderr_text() else brokers[2]
    leader.wait_for_log(
        r"TLS connection from \S+ on listener BROKER: TLSv1\.3 \S+,"
        r" principal User:CN=localhost,O=kafkette"
    )
    for broker in brokers.values():
        assert "TLS handshake failed" not in broker.stderr_text()

    # One unreadable registration (its second endpoint has no port) is one line per
    # broker; the metadata watcher keeps following the cluster.
    zk = KazooClient(hosts=zookeeper.connect_string + chroot, timeout=TIMEOUT_S)
    zk.start(timeout=TIMEOUT_S)
    try:
        zk.create(
            "/brokers/ids/99",
            json.dumps({"version": 5, "endpoints": ["CLIENT://h:1", "BROKER://h:x"]}).encode(),
            ephemeral=True,
        )
        for broker in brokers.values():
            broker.wait_for_log("ignoring broker registration 99")
        later = f"later-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(later, 1, 2)])[later].result(TIMEOUT_S)
        seen = AdminClient({"bootstrap.servers": client[2]})
        for _ in range(100):
            if later in seen.list_topics(timeout=TIMEOUT_S).topics:
                break
            time.sleep(0.1)
        assert later in seen.list_topics(timeout=TIMEOUT_S).topics
        assert brokers_seen(client[2], {}) == expected_client
    finally:
        zk.stop()
        zk.close()
    for broker in brokers.values():
        assert broker.terminate() == 0


def test_brokers_dial_the_inter_broker_listener_wherever_it_is_registered() -> None:
    """Kafka's brokers reach each other at their inter.broker.listener.name endpoint, not
    at the first one registered (a registration written by Kafka lists them in its
    listeners order); the first one when the name is not there."""
    from kafkette.broker.cluster import znodes

    data = znodes.encode_broker(
        "c", 1, "r1", 0,
        [("CLIENT", "PLAINTEXT", "c", 1), ("BROKER", "SSL", "b", 2)],
    )
    assert znodes.decode_broker(data, "BROKER") == ("b", 2, "r1")
    assert znodes.decode_broker(data, "CLIENT") == ("c", 1, "r1")
    assert znodes.decode_broker(data, "OTHER") == ("c", 1, "r1")
    assert znodes.decode_broker(data) == ("c", 1, "r1")
