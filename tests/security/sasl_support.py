"""Helpers of the SASL tests: JAAS lines, client settings, a raw SASL connection.

Loaded by path from the test modules (pytest runs with ``--import-mode=importlib``):
``sasl = load_sasl_support()`` is in each of them. No fixtures here (the brokers come from
tests/security/conftest.py's ``secure_broker``); plain functions and one small class.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from bench.harness.raw_wire import RawConnection

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
TIMEOUT_S = 20.0


@pytest.fixture(autouse=True)
def no_internal_errors(caplog: pytest.LogCaptureFixture):
    """Autouse in every SASL test module (``no_internal_errors = sasl.no_internal_errors``):
    a connection the broker closed must have been closed on purpose, never by a bug of
    ours caught as "an internal error" (the broker runs in the test's process)."""
    yield
    records = caplog.get_records("setup") + caplog.get_records("call")
    bugs = [r.getMessage() for r in records if "internal error" in r.getMessage()]
    assert not bugs, bugs


def plain_jaas(users: dict[str, str], **options: str) -> str:
    """A PlainLoginModule line with ``user_<name>="<password>"`` options."""
    parts = [f'{key}="{value}"' for key, value in options.items()]
    parts += [f'user_{name}="{password}"' for name, password in users.items()]
    return f"{PLAIN_MODULE} required {' '.join(parts)};"


def sasl_broker_configs(mechanisms: str, users: dict[str, str] | None = None, **extra: str) -> dict:
    """Broker lines: the enabled mechanisms, PLAIN users (if any), anything else."""
    configs = {"sasl.enabled.mechanisms": mechanisms, "num.partitions": "1",
               "group.initial.rebalance.delay.ms": "0"}
    if users is not None:
        configs["sasl.jaas.config"] = plain_jaas(users)
    configs.update(extra)
    return configs


def confluent_sasl(bootstrap: str, mechanism: str, username: str, password: str) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": username,
        "sasl.password": password,
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def confluent_roundtrip(conf: dict, topic: str, count: int = 5) -> list[bytes]:
    """Create ``topic``, produce ``count`` records and read them back, all with ``conf``."""
    admin = AdminClient(dict(conf))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT_S)
    producer = Producer(dict(conf))
    for index in range(count):
        producer.produce(topic, value=f"v{index}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**conf, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            values.append(message.value())
    finally:
        consumer.close()
    return values


def confluent_failure(conf: dict, timeout: float = TIMEOUT_S) -> str:
    """The authentication error librdkafka reports for ``conf`` (the error callback's)."""
    errors: list[str] = []
    producer = Producer({**conf, "error_cb": lambda err: errors.append(str(err))})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    return errors[0] if errors else ""


def set_scram_user(
    bootstrap_conf: dict, user: str, password: str, mechanism: str = "SCRAM-SHA-256",
    iterations: int = 4096,
) -> None:
    """AlterUserScramCredentials with confluent-kafka's AdminClient."""
    admin = AdminClient(dict(bootstrap_conf))
    mech = ScramMechanism[mechanism.replace("-", "_")]
    info = ScramCredentialInfo(mech, iterations)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())]
    )
    futures[user].result(timeout=TIMEOUT_S)


def scram_512_znode(password: str, iterations: int = 4096) -> bytes:
    """``/config/users/<user>`` as Kafka's ``kafka-configs.sh --zookeeper`` wrote it for
    SCRAM-SHA-512 (computed here from RFC 5802, independently of the broker's code)."""
    salt = os.urandom(24)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    stored_key = hashlib.sha512(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha512").digest()

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    credential = (f"salt={b64(salt)},stored_key={b64(stored_key)},"
                  f"server_key={b64(server_key)},iterations={iterations}")
    return json.dumps({"version": 1, "config": {"SCRAM-SHA-512": credential}}).encode()


def scram_inter_broker_configs(zookeeper_connect: str, chroot: str) -> dict[str, str]:
    """Two listeners, CLIENT (PLAINTEXT) and BROKER (SASL_PLAINTEXT, SCRAM-SHA-512, as
    ``User:broker``), replicating with acks=all over BROKER. The brokers' own user is
    written in ZooKeeper first, as Kafka's operators do before the brokers start."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper_connect, timeout=10.0)
    zk.start(timeout=15)
    try:
        zk.create(f"{chroot}/config/users/broker", scram_512_znode("broker-pw"), makepath=True)
    finally:
        zk.stop()
        zk.close()
    return {
        "listeners": "CLIENT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.broker.scram-sha-512.sasl.jaas.config":
            f'{SCRAM_MODULE} required username="broker" password="broker-pw";',
        "zookeeper.connect": zookeeper_connect + chroot,
        "offsets.topic.replication.factor": "2",
        "min.insync.replicas": "2",
    }


def produce_acked(
    bootstrap: str, topic: str, count: int, timeout: float = 30.0
) -> tuple[int, list]:
    """Produce ``count`` records with acks=all; (records still unsent after ``timeout``,
    delivery errors): ``(0, [])`` once every record was acknowledged by the in-sync
    replicas, i.e. after the followers fetched them."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "message.timeout.ms": 30000})
    failures: list[object] = []
    for index in range(count):
        producer.produce(topic, f"r{index}".encode(),
                         on_delivery=lambda err, _: err and failures.append(err))
    return producer.flush(timeout), failures


def unsecured_token(principal: str, lifetime_s: int = 3600, **claims: object) -> str:
    """An unsecured JWS (``alg: none``, empty signature) as librdkafka makes one."""

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    now = int(time.time())
    body = {"sub": principal, "iat": now, "exp": now + lifetime_s, **claims}
    return f"{part({'alg': 'none'})}.{part(body)}."


class RawSasl(RawConnection):
    """One blocking socket speaking Kafka's framing with kafka-python's message classes
    (an encoder independent of the broker's); every read has a deadline."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        super().__init__(bootstrap, timeout, client_id="sasl-test")

    def send_raw_token(self, token: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(token)) + token)

    def closed_by_broker(self, timeout: float = 5.0) -> bool:
        """True once the broker closed the connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    # The SASL exchange ----------------------------------------------------------

    def handshake(self, mechanism: str, version: int = 1) -> object:
        from kafka.protocol.sasl import SaslHandshakeRequest

        return self.request(SaslHandshakeRequest(mechanism=mechanism), version)

    def authenticate(self, token: bytes, version: int = 2) -> object:
        from kafka.protocol.sasl import SaslAuthenticateRequest

        return self.request(SaslAuthenticateRequest(auth_bytes=token), version)

    def plain(self, username: str, password: str, version: int = 2) -> object:
        """SaslHandshake v1 + one SaslAuthenticate with a PLAIN token; its response."""
        handshake = self.handshake("PLAIN")
        assert handshake.error_code == 0, handshake  # type: ignore[attr-defined]
        return self.authenticate(f"\0{username}\0{password}".encode(), version)

    def metadata(self) -> object:
        from kafka.protocol.metadata import MetadataRequest

        return self.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 4)
