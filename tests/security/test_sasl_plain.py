"""SASL/PLAIN against the users of the listener's JAAS config, with real clients.

One broker for the module: a SASL_PLAINTEXT listener offering PLAIN (users alice and
bob, Kafka's PlainLoginModule ``user_<name>`` options) beside a PLAINTEXT listener.
Checked as a client sees it: confluent-kafka, kafka-python and aiokafka produce and
consume as PLAIN users; a wrong password or unknown user gets SASL_AUTHENTICATION_FAILED
with Kafka's message and a closed connection; an unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM with the enabled list; any other request before
authentication closes the connection; SaslHandshake v0 carries raw tokens; SASL on the
PLAINTEXT listener, or a second handshake without re-authentication, is ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from kafka import KafkaProducer

from kafkette.broker.config import ConfigError
from kafkette.broker.embedded import EmbeddedBroker
from tests.security import sasl_support as sasl

no_internal_errors = sasl.no_internal_errors  # autouse: no connection closed by a bug

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
INVALID = "Authentication failed: Invalid username or password"


@pytest.fixture(scope="module")
def plain_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    configs = sasl.sasl_broker_configs(
        "PLAIN",
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": sasl.plain_jaas(USERS),
        },
    )
    with EmbeddedBroker.start(tmp_path_factory.mktemp("sasl-plain"), configs) as broker:
        yield broker


def endpoint(broker: EmbeddedBroker, listener: str) -> str:
    return str(broker.broker.endpoint_for(listener))


def test_confluent_kafka_produces_and_consumes_as_a_plain_user(plain_broker) -> None:
    conf = sasl.confluent_sasl(endpoint(plain_broker, "SASL_PLAINTEXT"), "PLAIN", "alice",
                               "alice-secret")
    assert sasl.confluent_roundtrip(conf, sasl.unique("plain-ck")) == [
        f"v{i}".encode() for i in range(5)
    ]


def test_kafka_python_and_aiokafka_authenticate_with_plain(plain_broker) -> None:
    bootstrap = endpoint(plain_broker, "SASL_PLAINTEXT")
    topic = sasl.unique("plain-py")
    auth = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "bob", "sasl_plain_password": "bob-secret"}
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=20_000, **auth)
    try:
        producer.send(topic, b"from-kafka-python").get(timeout=20)
    finally:
        producer.close(timeout=5)

    async def aiokafka_side() -> list[bytes]:
        aio_producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **auth)
        await aio_producer.start()
        try:
            await aio_producer.send_and_wait(topic, b"from-aiokafka")
        finally:
            await aio_producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest", **auth)
        await consumer.start()
        try:
            values = []
            while len(values) < 2:
                batch = await consumer.getmany(timeout_ms=1000)
                values += [record.value for records in batch.values() for record in records]
            return values
        finally:
            await consumer.stop()

    values = asyncio.run(asyncio.wait_for(aiokafka_side(), 30))
    assert values == [b"from-kafka-python", b"from-aiokafka"]


@pytest.mark.parametrize(("username", "password"), [("alice", "wrong"), ("mallory", "x")])
def test_a_wrong_password_or_an_unknown_user_is_refused(plain_broker, username, password) -> None:
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        started = time.monotonic()
        response = raw.plain(username, password)
        assert response.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert response.error_message == INVALID
        # KIP-152: answered after connection.failed.authentication.delay.ms (100), then closed.
        assert time.monotonic() - started >= 0.09
        assert raw.closed_by_broker()


def test_clients_report_kafkas_message_for_a_wrong_password(plain_broker, caplog) -> None:
    bootstrap = endpoint(plain_broker, "SASL_PLAINTEXT")
    error = sasl.confluent_failure(sasl.confluent_sasl(bootstrap, "PLAIN", "alice", "nope"))
    assert INVALID in error

    async def aiokafka_start() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password="nope",
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaConnectionError):
        asyncio.run(asyncio.wait_for(aiokafka_start(), 30))
    assert f"[Error 58] SaslAuthenticationFailed: {INVALID}" in caplog.text


def test_an_unknown_mechanism_is_answered_with_the_enabled_list(plain_broker) -> None:
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        response = raw.handshake("SCRAM-SHA-256")
        assert response.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert response.mechanisms == ["PLAIN"]
        assert raw.closed_by_broker()


def test_a_request_before_authentication_closes_the_connection(plain_broker) -> None:
    bootstrap = endpoint(plain_broker, "SASL_PLAINTEXT")
    with sasl.RawSasl(bootstrap) as raw:
        raw.send(_metadata_request(), 4)
        assert raw.closed_by_broker()
    with sasl.RawSasl(bootstrap) as raw:  # after the handshake too
        assert raw.handshake("PLAIN").error_code == 0
        raw.send(_metadata_request(), 4)
        assert raw.closed_by_broker()
    with sasl.RawSasl(bootstrap) as raw:  # once authenticated, everything is served
        assert raw.plain("alice", "alice-secret").error_code == 0
        assert raw.metadata().brokers


def test_a_large_frame_before_authentication_closes_the_connection(plain_broker) -> None:
    # sasl.server.max.receive.size (524288): checked from the size prefix, nothing read.
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        raw.sock.sendall(struct.pack(">i", 524289) + b"\0" * 64)
        assert raw.closed_by_broker()
    with sasl.RawSasl(endpoint(plain_broker, "PLAINTEXT")) as raw:  # not on PLAINTEXT
        raw.sock.sendall(struct.pack(">i", 524289) + b"\0" * 64)
        assert not raw.closed_by_broker(timeout=0.5)


def test_sasl_handshake_v0_is_followed_by_raw_tokens(plain_broker) -> None:
    bootstrap = endpoint(plain_broker, "SASL_PLAINTEXT")
    with sasl.RawSasl(bootstrap) as raw:
        handshake = raw.handshake("PLAIN", version=0)
        assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN"])
        raw.send_raw_token(b"\0alice\0alice-secret")
        assert raw.read_frame() == b""  # PLAIN's empty server token, size-prefixed
        assert raw.metadata().brokers
    with sasl.RawSasl(bootstrap) as raw:
        assert raw.handshake("PLAIN", version=0).error_code == 0
        raw.send_raw_token(b"\0alice\0wrong")
        assert raw.closed_by_broker()  # v0 has no error frame: the connection closes


def test_sasl_outside_a_sasl_listener_is_an_illegal_state(plain_broker) -> None:
    with sasl.RawSasl(endpoint(plain_broker, "PLAINTEXT")) as raw:
        assert raw.handshake("PLAIN").error_code == 34  # ILLEGAL_SASL_STATE
        assert raw.metadata().brokers  # nothing to authenticate: served
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        assert raw.plain("alice", "alice-secret").error_code == 0
        # No connections.max.reauth.ms: a second handshake is not a re-authentication.
        assert raw.handshake("PLAIN").error_code == 34
        assert raw.authenticate(b"\0alice\0alice-secret").error_code == 34


def test_each_listener_offers_its_own_mechanisms(tmp_path) -> None:
    configs = sasl.sasl_broker_configs("SCRAM-SHA-512", USERS, **{
        "listeners": "A://127.0.0.1:0,B://127.0.0.1:0",
        "listener.security.protocol.map": "A:SASL_PLAINTEXT,B:SASL_PLAINTEXT",
        "listener.name.a.sasl.enabled.mechanisms": "PLAIN",
    })
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        with sasl.RawSasl(endpoint(broker, "A")) as raw:
            assert raw.plain("alice", "alice-secret").error_code == 0
        with sasl.RawSasl(endpoint(broker, "B")) as raw:
            refused = raw.handshake("PLAIN")
            assert (refused.error_code, refused.mechanisms) == (33, ["SCRAM-SHA-512"])


def test_settings_kafkette_cannot_serve_are_refused_at_start(tmp_path) -> None:
    sasl_listener = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
    with pytest.raises(ConfigError, match="GSSAPI"):  # Kafka's default mechanism
        EmbeddedBroker.start(tmp_path / "a", sasl_listener)
    with pytest.raises(ConfigError, match="has no JAAS config"):
        EmbeddedBroker.start(tmp_path / "b", {**sasl_listener, "sasl.enabled.mechanisms": "PLAIN"})
    with pytest.raises(ConfigError, match=r"sasl\.mechanism\.inter\.broker\.protocol must be"):
        EmbeddedBroker.start(tmp_path / "d", {  # its default GSSAPI is not enabled
            **sasl_listener, "sasl.enabled.mechanisms": "PLAIN",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.jaas.config": sasl.plain_jaas(USERS),
        })
    with pytest.raises(ConfigError, match="not terminated by semi-colon"):
        EmbeddedBroker.start(tmp_path / "c", {
            **sasl_listener, "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": f'{sasl.PLAIN_MODULE} required user_a="b"',
        })


def _metadata_request():
    from kafka.protocol.metadata import MetadataRequest

    return MetadataRequest(topics=[], allow_auto_topic_creation=False)


def test_plain_over_tls_on_a_sasl_ssl_listener(tmp_path, tls) -> None:
    configs = sasl.sasl_broker_configs(
        "PLAIN", USERS, listeners="SASL_SSL://127.0.0.1:0", **tls.broker(listener="SASL_SSL")
    )
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        conf = {
            **sasl.confluent_sasl(broker.bootstrap, "PLAIN", "bob", "bob-secret"),
            **tls.confluent(protocol="SASL_SSL"),
        }
        assert len(sasl.confluent_roundtrip(conf, sasl.unique("sasl-ssl"), count=2)) == 2
        wrong = {**conf, "sasl.password": "wrong"}
        assert INVALID in sasl.confluent_failure(wrong)


def test_unauthenticated_big_frames_do_not_take_the_request_memory(tmp_path) -> None:
    """Three connections announce ~500 KB frames before authenticating and send nothing
    more; the pool (queued.max.request.bytes = 1 MiB) is not theirs: an authenticated
    producer's ~700 KB request is answered at once."""
    mib = str(1024 * 1024)
    configs = sasl.sasl_broker_configs(
        "PLAIN", USERS, listeners="SASL_PLAINTEXT://127.0.0.1:0",
        **{"queued.max.request.bytes": mib, "socket.request.max.bytes": mib},
    )
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        bootstrap = endpoint(broker, "SASL_PLAINTEXT")
        idle = [sasl.RawSasl(bootstrap) for _ in range(3)]
        try:
            for raw in idle:
                raw.sock.sendall(struct.pack(">i", 500_000) + b"\0" * 16)
            conf = sasl.confluent_sasl(bootstrap, "PLAIN", "alice", "alice-secret")
            from confluent_kafka import Producer

            producer = Producer(conf)
            delivered: list[object] = []
            producer.produce(sasl.unique("big"), b"x" * 700_000,
                             on_delivery=lambda err, msg: delivered.append(err))
            assert producer.flush(15) == 0
            assert delivered == [None]
        finally:
            for raw in idle:
                raw.close()


def test_a_huge_mechanism_name_is_clipped_in_the_log(plain_broker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="kafkette.sasl")
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        assert raw.handshake("M" * 20_000).error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert raw.closed_by_broker()
    lines = [r.getMessage() for r in caplog.records if "MMMM" in r.getMessage()]
    assert lines and all(len(line) < 400 for line in lines), [len(x) for x in lines]


def _unserved_version() -> bytes:
    """A ListTransactions v2 request: a version Kafka's definitions know (its response has
    an error_code) that kafkette does not serve; header v2, no body needed."""
    client_id = b"sasl-test"
    body = struct.pack(">hhih", 66, 2, 7, len(client_id)) + client_id + b"\0"
    return struct.pack(">i", len(body)) + body


def test_an_unsupported_version_before_authentication_closes(plain_broker) -> None:
    with sasl.RawSasl(endpoint(plain_broker, "PLAINTEXT")) as raw:  # answered elsewhere
        raw.sock.sendall(_unserved_version())
        answer = raw.read_frame()
        assert struct.unpack(">i", answer[:4]) == (7,)  # UNSUPPORTED_VERSION's answer
    with sasl.RawSasl(endpoint(plain_broker, "SASL_PLAINTEXT")) as raw:
        raw.sock.sendall(_unserved_version())
        with pytest.raises(ConnectionError):
            raw.read_frame()
