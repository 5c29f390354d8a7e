"""SCRAM in a cluster: credentials in ZooKeeper's ``/config/users/<user>`` (Kafka's layout),
and brokers authenticating to each other (``sasl.mechanism.inter.broker.protocol``).

Two brokers on one ZooKeeper chroot. A user created through the first broker is in
ZooKeeper in Kafka's format (salted keys, no password) and authenticates at the second
at once. Brokers whose inter-broker listener is SASL_PLAINTEXT with SCRAM-SHA-512 (their
user written in ZooKeeper beforehand, as Kafka's operators do) replicate over it.
Skips when ZooKeeper is not installed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from kafkette.broker.embedded import EmbeddedBroker
from tests.security import sasl_support as sasl

no_internal_errors = sasl.no_internal_errors  # autouse: no connection closed by a bug


def start_member(tmp_path: Path, connect: str, broker_id: int) -> EmbeddedBroker:
    """A broker of a SCRAM-SHA-512 cluster on ``connect``: SASL_PLAINTEXT for users,
    PLAINTEXT for the administrator."""
    return EmbeddedBroker.start(tmp_path / f"b{broker_id}", sasl.sasl_broker_configs(
        "SCRAM-SHA-512",
        listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        **{"zookeeper.connect": connect, "broker.id": str(broker_id),
           "offsets.topic.replication.factor": "1"},
    ))


def test_a_user_made_at_one_broker_authenticates_at_another(zookeeper, tmp_path) -> None:
    connect = f"{zookeeper.connect_string}/sasl-{uuid.uuid4().hex[:8]}"

    with start_member(tmp_path, connect, 1) as first, start_member(tmp_path, connect, 2) as second:
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


def test_brokers_replicate_over_a_sasl_listener_with_scram(zookeeper, tmp_path, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkette.sasl")
    chroot = f"/sasl-ib-{uuid.uuid4().hex[:8]}"
    common = sasl.scram_inter_broker_configs(zookeeper.connect_string, chroot)
    with (
        EmbeddedBroker.start(tmp_path / "b1", {**common, "broker.id": "1"}) as first,
        EmbeddedBroker.start(tmp_path / "b2", {**common, "broker.id": "2"}),
    ):
        client = str(first.broker.endpoint_for("CLIENT"))
        admin = AdminClient({"bootstrap.servers": client})
        topic = sasl.unique("replicated")
        for _ in range(100):  # until the first broker sees the second
            if len(admin.list_topics(timeout=10).brokers) == 2:
                break
            time.sleep(0.1)
        admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(30)
        # acks=all with min.insync.replicas=2: answered once the follower fetched them,
        # over BROKER after authenticating with SCRAM.
        assert sasl.produce_acked(client, topic, 20, 30) == (0, [])
    assert "authenticated as User:broker (SCRAM-SHA-512, listener BROKER)" in caplog.text


def test_a_silent_zookeeper_refuses_the_login_and_the_broker_keeps_serving(
    zookeeper, tmp_path, caplog
) -> None:
    """ZooKeeper stopped (SIGSTOP) while a client logs in with SCRAM: the login is refused
    with SASL_AUTHENTICATION_FAILED after the lookup's deadline, one log line, no traceback;
    the broker answers the next client meanwhile."""
    import signal

    caplog.set_level(logging.INFO, logger="kafkette.sasl")
    connect = f"{zookeeper.connect_string}/sasl-quiet-{uuid.uuid4().hex[:8]}"
    configs = sasl.sasl_broker_configs(
        "SCRAM-SHA-256",
        listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        **{"zookeeper.connect": connect, "broker.id": "1",
           "offsets.topic.replication.factor": "1",
           "connection.failed.authentication.delay.ms": "0"},
    )
    with EmbeddedBroker.start(tmp_path / "b1", configs) as broker:
        plain = str(broker.broker.endpoint_for("PLAINTEXT"))
        sasl.set_scram_user({"bootstrap.servers": plain}, "quiet", "quiet-password")
        zookeeper.process.send_signal(signal.SIGSTOP)
        try:
            with sasl.RawSasl(str(broker.broker.endpoint_for("SASL_PLAINTEXT")), 30) as raw:
                from kafka.protocol.sasl import SaslAuthenticateRequest

                assert raw.handshake("SCRAM-SHA-256").error_code == 0
                request = SaslAuthenticateRequest(auth_bytes=b"n,,n=quiet,r=client-nonce-1")
                raw.send(request, 2)
                with sasl.RawSasl(plain) as other:  # served while the login waits
                    assert other.metadata().brokers
                response = request.header.get_response_class().decode(
                    raw.read_frame(), version=2, header=True
                )
                assert response.error_code == 58
                assert raw.closed_by_broker()
            with sasl.RawSasl(plain) as other:
                assert other.metadata().brokers
        finally:
            zookeeper.process.send_signal(signal.SIGCONT)
    refused = [r.getMessage() for r in caplog.records if "could not be obtained" in r.getMessage()]
    assert len(refused) == 1 and "no answer from the credential store" in refused[0]


def _scram_login(bootstrap: str, user: str, password: str) -> int:
    """One SCRAM-SHA-512 login over a raw connection (RFC 5802 computed here, independently
    of the broker's code); the last error code (0: authenticated)."""

    def hmac512(key: bytes, text: bytes) -> bytes:
        return hmac.new(key, text, "sha512").digest()

    with sasl.RawSasl(bootstrap) as raw:
        assert raw.handshake("SCRAM-SHA-512").error_code == 0
        first_bare = f"n={user},r={uuid.uuid4().hex}"
        first = raw.authenticate(f"n,,{first_bare}".encode())
        if first.error_code:
            return first.error_code
        server_first = first.auth_bytes.decode()
        attrs = dict(part.split("=", 1) for part in server_first.split(","))
        salted = hashlib.pbkdf2_hmac(
            "sha512", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac512(salted, b"Client Key")
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac512(hashlib.sha512(client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        final = raw.authenticate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
        return final.error_code


def test_a_broker_remembers_users_and_forgets_them_when_they_change(
    zookeeper, tmp_path
) -> None:
    """The second broker keeps the users it has seen (a login while ZooKeeper is stopped
    succeeds), and its ZooKeeper watch drops a user changed through the first broker:
    the new password works there at once and the old one no longer does."""
    import signal

    connect = f"{zookeeper.connect_string}/sasl-cache-{uuid.uuid4().hex[:8]}"

    with start_member(tmp_path, connect, 1) as first, start_member(tmp_path, connect, 2) as second:
        admin_at_first = {"bootstrap.servers": str(first.broker.endpoint_for("PLAINTEXT"))}
        at_second = str(second.broker.endpoint_for("SASL_PLAINTEXT"))
        sasl.set_scram_user(admin_at_first, "yves", "old-pw", "SCRAM-SHA-512")
        assert _scram_login(at_second, "yves", "old-pw") == 0
        zookeeper.process.send_signal(signal.SIGSTOP)
        try:
            assert _scram_login(at_second, "yves", "old-pw") == 0  # from memory
        finally:
            zookeeper.process.send_signal(signal.SIGCONT)
        sasl.set_scram_user(admin_at_first, "yves", "new-pw", "SCRAM-SHA-512")
        deadline = time.monotonic() + 15
        while _scram_login(at_second, "yves", "new-pw") != 0:
            assert time.monotonic() < deadline, "the second broker kept the old credential"
            time.sleep(0.2)
        assert _scram_login(at_second, "yves", "old-pw") == 58
