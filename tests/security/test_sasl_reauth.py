"""KIP-368 re-authentication with a short ``connections.max.reauth.ms``.

The broker tells the client the session's lifetime in SaslAuthenticate; the client may
re-authenticate on the same connection (SaslHandshake + SaslAuthenticate, same
mechanism and principal); a connection whose session expired is closed at its next
request. confluent-kafka (librdkafka re-authenticates) keeps producing across several
session lifetimes without losing a record, re-authenticating on its connections.
Lifetimes are short (2 s) and every wait is generous: nothing depends on tight timing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from kafkette.broker.embedded import EmbeddedBroker
from tests.security import sasl_support as sasl

no_internal_errors = sasl.no_internal_errors  # autouse: no connection closed by a bug

LIFETIME_MS = 2000
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    configs = sasl.sasl_broker_configs(
        "PLAIN,SCRAM-SHA-256", USERS, listeners="SASL_PLAINTEXT://127.0.0.1:0",
        **{"connections.max.reauth.ms": str(LIFETIME_MS)},
    )
    with EmbeddedBroker.start(tmp_path_factory.mktemp("reauth"), configs) as broker:
        yield broker


def test_an_expired_session_is_closed_at_its_next_request(reauth_broker) -> None:
    with sasl.RawSasl(reauth_broker.bootstrap) as raw:
        response = raw.plain("alice", "alice-secret")
        assert (response.error_code, response.session_lifetime_ms) == (0, LIFETIME_MS)
        assert raw.metadata().brokers
        time.sleep(LIFETIME_MS / 1000 + 0.5)
        raw.send(_metadata_request(), 4)
        assert raw.closed_by_broker()


def test_a_client_re_authenticates_on_the_same_connection(reauth_broker) -> None:
    with sasl.RawSasl(reauth_broker.bootstrap) as raw:
        assert raw.plain("alice", "alice-secret").session_lifetime_ms == LIFETIME_MS
        time.sleep(LIFETIME_MS / 1000 / 2)
        again = raw.plain("alice", "alice-secret")
        assert (again.error_code, again.session_lifetime_ms) == (0, LIFETIME_MS)
        time.sleep(LIFETIME_MS / 1000 / 2 + 0.3)  # past the first session's end
        assert raw.metadata().brokers


def test_re_authentication_cannot_change_the_principal(reauth_broker) -> None:
    with sasl.RawSasl(reauth_broker.bootstrap) as raw:
        assert raw.plain("alice", "alice-secret").error_code == 0
        time.sleep(0.2)
        response = raw.plain("bob", "bob-secret")
        assert response.error_code == 58
        assert response.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.bob"
        )
        assert raw.closed_by_broker()


def test_re_authentication_cannot_change_the_mechanism(reauth_broker) -> None:
    with sasl.RawSasl(reauth_broker.bootstrap) as raw:
        assert raw.plain("alice", "alice-secret").error_code == 0
        time.sleep(0.2)
        assert raw.handshake("SCRAM-SHA-256").error_code == 0  # enabled on the listener
        raw.send(_authenticate(b"n,,n=alice,r=nonce"), 2)
        # As Kafka (REAUTH_BAD_MECHANISM): closed, no answer.
        with pytest.raises(ConnectionError):
            raw.read_frame()


def test_confluent_kafka_re_authenticates_and_keeps_producing(reauth_broker, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkette.sasl")  # the broker runs in this process
    errors: list[str] = []
    producer = Producer({
        **sasl.confluent_sasl(reauth_broker.bootstrap, "PLAIN", "alice", "alice-secret"),
        "error_cb": lambda err: errors.append(str(err)),
    })
    topic = sasl.unique("reauth")
    delivered: list[int] = []

    def on_delivery(err, message) -> None:
        assert err is None, err
        delivered.append(message.offset())

    deadline = time.monotonic() + 3 * LIFETIME_MS / 1000
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic, value=b"x", on_delivery=on_delivery)
        sent += 1
        producer.poll(0.25)
    assert producer.flush(20) == 0
    assert sorted(delivered) == list(range(sent))
    assert not [e for e in errors if "Authentication" in e], errors
    # librdkafka re-authenticated on its connection rather than being cut off.
    assert "re-authenticated as User:alice (PLAIN" in caplog.text


def _authenticate(token: bytes):
    from kafka.protocol.sasl import SaslAuthenticateRequest

    return SaslAuthenticateRequest(auth_bytes=token)


def _metadata_request():
    from kafka.protocol.metadata import MetadataRequest

    return MetadataRequest(topics=[], allow_auto_topic_creation=False)


def test_a_normal_request_during_re_authentication_closes(reauth_broker) -> None:
    """Between a re-authentication's SaslHandshake and its SaslAuthenticate only the
    exchange may come (Kafka closes the connection otherwise)."""
    with sasl.RawSasl(reauth_broker.bootstrap) as raw:
        assert raw.plain("alice", "alice-secret").error_code == 0
        time.sleep(1.1)  # Kafka's one second between re-authentications
        assert raw.handshake("PLAIN").error_code == 0
        raw.send(_metadata_request(), 4)
        with pytest.raises(ConnectionError):
            raw.read_frame()
