"""SCRAM credentials of a cluster live in ZooKeeper's ``/config/users/<user>`` (Kafka's layout).

Two brokers on one ZooKeeper chroot, each with a SASL_PLAINTEXT listener (SCRAM) and a
PLAINTEXT one for the administrator. A user created through the first broker is in
ZooKeeper in Kafka's format (salted keys, no password) and authenticates at the second
at once; the second describes it. Skips when ZooKeeper is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from kafkette.broker.cluster.zookeeper_server import (
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    find_zookeeper,
)
from kafkette.broker.embedded import EmbeddedBroker

_spec = importlib.util.spec_from_file_location(
    "kafkette_sasl_support", Path(__file__).with_name("sasl_support.py")
)
sasl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sasl)


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    try:
        install = find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))
    server = ZooKeeperServer(tmp_path_factory.mktemp("zk"), tick_time_ms=500, fsync=False,
                             own_session=False, install=install)
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def test_a_user_made_at_one_broker_authenticates_at_another(zookeeper, tmp_path) -> None:
    connect = f"{zookeeper.connect_string}/sasl-{uuid.uuid4().hex[:8]}"

    def start(broker_id: int) -> EmbeddedBroker:
        return EmbeddedBroker.start(tmp_path / f"b{broker_id}", sasl.sasl_broker_configs(
            "SCRAM-SHA-512",
            listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
            **{"zookeeper.connect": connect, "broker.id": str(broker_id),
               "offsets.topic.replication.factor": "1"},
        ))

    with start(1) as first, start(2) as second:
        admin_at_first = {"bootstrap.servers": str(first.broker.endpoint_for("PLAINTEXT"))}
        sasl.set_scram_user(admin_at_first, "zed", "zed-password", "SCRAM-SHA-512", 8192)

        from kazoo.client import KazooClient

        zk = KazooClient(hosts=connect, timeout=10.0)
        zk.start(timeout=15)
        try:
            document = json.loads(zk.get("/config/users/zed")[0])
        finally:
            zk.stop()
            zk.close()
        stored = document["config"]["SCRAM-SHA-512"]
        assert document["version"] == 1
        assert stored.startswith("salt=") and stored.endswith(",iterations=8192")
        assert "zed-password" not in json.dumps(document)

        at_second = str(second.broker.endpoint_for("SASL_PLAINTEXT"))
        conf = sasl.confluent_sasl(at_second, "SCRAM-SHA-512", "zed", "zed-password")
        assert len(sasl.confluent_roundtrip(conf, sasl.unique("zk-scram"), count=2)) == 2
        admin_at_second = AdminClient(
            {"bootstrap.servers": str(second.broker.endpoint_for("PLAINTEXT"))}
        )
        described = admin_at_second.describe_user_scram_credentials(["zed"])["zed"]
        assert [i.iterations for i in described.result(timeout=20).scram_credential_infos] == [8192]
        assert not (tmp_path / "b1" / "scram-credentials.json").exists()
