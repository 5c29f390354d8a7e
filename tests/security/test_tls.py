"""TLS listeners with real clients: confluent-kafka and kafka-python, server-auth and mutual.

The broker's keystore and truststore come from ``kafkette.testing_tls`` (a test CA) in
the formats Kafka's configs take (PKCS12, PEM); a client certificate's subject is the
connection's principal (seen in the broker's DEBUG line for the connection). A client
that fails the handshake (plaintext on the TLS port, no certificate where one is
required) costs one log line and a closed connection; the broker keeps serving.
"""

from __future__ import annotations

import socket
import ssl
import struct
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaConsumer, KafkaProducer

TIMEOUT_S = 20
DEFAULT_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
API_VERSIONS_V0 = struct.pack(">ihhih", 2 + 2 + 4 + 2, 18, 0, 1, -1)  # no client id


def values_of(count: int, size: int) -> list[bytes]:
    return [f"{index:06d}".encode() * (size // 6) for index in range(count)]


def confluent_round_trip(bootstrap: str, conf: dict[str, str], count: int, size: int) -> None:
    """Produce ``count`` records of ``size`` bytes, consume them back in a group."""
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    sent = values_of(count, size)
    producer = Producer({"bootstrap.servers": bootstrap, **conf})
    for value in sent:
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **conf,
        }
    )
    received: list[bytes] = []
    try:
        consumer.subscribe([topic])
        for _ in range(300):
            if len(received) == count:
                break
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                received.append(message.value())
    finally:
        consumer.close()
    assert received == sent


def kafka_python_round_trip(bootstrap: str, conf: dict[str, object], count: int) -> None:
    topic = f"tls-kp-{uuid.uuid4().hex[:8]}"
    sent = values_of(count, 3000)
    producer = KafkaProducer(bootstrap_servers=bootstrap, **conf)
    try:
        for value in sent:
            producer.send(topic, value)
        producer.flush(TIMEOUT_S)
    finally:
        producer.close(TIMEOUT_S)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=TIMEOUT_S * 1000,
        **conf,
    )
    received: list[bytes] = []
    try:
        for message in consumer:
            received.append(message.value)
            if len(received) == count:
                break
    finally:
        consumer.close()
    assert received == sent


def brokers_seen(bootstrap: str, conf: dict[str, str]) -> list[tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap, **conf})
    return [(b.host, b.port) for b in admin.list_topics(timeout=TIMEOUT_S).brokers.values()]


def port_of(endpoint: str) -> int:
    return int(endpoint.rpartition(":")[2])


def tls_connect(endpoint: str, context: ssl.SSLContext) -> ssl.SSLSocket:
    host, _, port = endpoint.rpartition(":")
    raw = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    return context.wrap_socket(raw, server_hostname=host)


def api_versions_answered(sock: socket.socket) -> bool:
    """Send ApiVersions v0; True when a response frame comes back, False when the broker
    closed the connection instead."""
    try:
        sock.sendall(API_VERSIONS_V0)
        header = sock.recv(4)
    except (ssl.SSLError, ConnectionError):
        return False
    return len(header) == 4


def handshake_failures(broker) -> list[str]:
    return [line for line in broker.stderr_text().splitlines() if "TLS handshake failed" in line]


def test_confluent_kafka_over_tls_beside_plaintext(secure_broker, tls) -> None:
    """PKCS12 keystore; server authentication only; a plaintext listener beside it. Each
    listener's clients are told that listener's endpoint (the group coordinator's too),
    fetches over TLS return every byte."""
    broker = secure_broker(
        {**tls.broker(store="PKCS12"), "listener.security.protocol.map": DEFAULT_MAP},
        listeners="SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
    )
    ssl_endpoint, plain_endpoint = broker.endpoints["SSL"], broker.endpoints["PLAINTEXT"]
    assert broker.bootstrap == ssl_endpoint  # the ready line: the first listener
    conf = tls.confluent()
    assert brokers_seen(ssl_endpoint, conf) == [("127.0.0.1", port_of(ssl_endpoint))]
    assert brokers_seen(plain_endpoint, {}) == [("127.0.0.1", port_of(plain_endpoint))]
    # 200 records of 20 KB: fetches of several batches, read and encrypted per response.
    confluent_round_trip(ssl_endpoint, conf, count=200, size=20_000)
    # Kafka never tells a password: DescribeConfigs marks it sensitive, without a value.
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    admin = AdminClient({"bootstrap.servers": plain_endpoint})
    entries = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    password = entries["ssl.keystore.password"]
    assert (password.is_sensitive, password.value) == (True, None)
    assert entries["ssl.keystore.type"].value == "PKCS12"
    assert handshake_failures(broker) == []
    assert broker.terminate() == 0


def test_kafka_python_mutual_tls_with_a_pem_keystore(secure_broker, tls, tls_material) -> None:
    """ssl.client.auth=required: the client's certificate subject is its principal; a
    client without one is refused at the handshake (one line), the broker keeps serving."""
    broker = secure_broker(
        {**tls.broker(store="PEM", client_auth="required")},
        listeners="SSL://127.0.0.1:0",
        args=("--log-level", "DEBUG"),
    )
    endpoint = broker.endpoints["SSL"]
    kafka_python_round_trip(endpoint, tls.kafka_python(mutual=True), count=20)
    broker.wait_for_log(
        rf"TLS connection from \S+ on listener SSL: TLSv1\.3 \S+, principal"
        rf" User:{tls_material.client_subject}"
    )

    with tls_connect(endpoint, tls.client_context(mutual=False)) as sock:
        assert not api_versions_answered(sock)
    broker.wait_for_log("TLS handshake failed")
    assert len(handshake_failures(broker)) == 1
    assert "CERTIFICATE" in handshake_failures(broker)[0]  # e.g. PEER_DID_NOT_RETURN_A_CERTIFICATE

    with tls_connect(endpoint, tls.client_context(mutual=True)) as sock:
        assert api_versions_answered(sock)
    assert broker.terminate() == 0


def test_requested_client_auth_and_mapping_rules_per_listener(secure_broker, tls) -> None:
    """Two SSL listeners from one set of ssl.* lines; one overrides ssl.client.auth and
    ssl.principal.mapping.rules with its listener.name.<l>. prefix."""
    broker = secure_broker(
        {
            **tls.broker(store="PKCS12"),
            "listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
            "listener.name.mtls.ssl.client.auth": "requested",
            "listener.name.mtls.ssl.principal.mapping.rules":
                "RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U,DEFAULT",
        },
        listeners="SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
        args=("--log-level", "DEBUG"),
    )
    ssl_endpoint, mtls_endpoint = broker.endpoints["SSL"], broker.endpoints["MTLS"]
    with tls_connect(mtls_endpoint, tls.client_context(mutual=True)) as sock:
        assert api_versions_answered(sock)
    broker.wait_for_log(r"on listener MTLS: \S+ \S+, principal User:CLIENT@TEST")
    with tls_connect(mtls_endpoint, tls.client_context(mutual=False)) as sock:
        assert api_versions_answered(sock)  # requested, not required
    broker.wait_for_log(r"on listener MTLS: \S+ \S+, principal User:ANONYMOUS")
    # The SSL listener keeps ssl.client.auth=none: a certificate is not even asked for.
    with tls_connect(ssl_endpoint, tls.client_context(mutual=True)) as sock:
        assert api_versions_answered(sock)
    broker.wait_for_log(r"on listener SSL: \S+ \S+, principal User:ANONYMOUS")
    assert handshake_failures(broker) == []
    assert brokers_seen(mtls_endpoint, tls.confluent()) == [("127.0.0.1", port_of(mtls_endpoint))]


def test_plaintext_client_on_a_tls_port_is_one_line(secure_broker, tls_material, tls) -> None:
    # ssl.keystore.type JKS (Kafka's default) naming a PKCS12 file loads, as in Java.
    broker = secure_broker(
        {
            "ssl.keystore.type": "JKS",
            "ssl.keystore.location": str(tls_material.broker_p12),
            "ssl.keystore.password": tls_material.password,
        },
        listeners="SSL://127.0.0.1:0",
    )
    endpoint = broker.endpoints["SSL"]
    host, _, port = endpoint.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        sock.sendall(API_VERSIONS_V0)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    # At most a TLS alert record (content type 21), never a Kafka response.
    assert answer == b"" or answer[0] == 21, answer
    broker.wait_for_log("TLS handshake failed")
    [line] = handshake_failures(broker)
    assert line.endswith(
        "on listener SSL: TLS handshake failed: WRONG_VERSION_NUMBER"
        " (not a TLS client: one configured for PLAINTEXT?)"
    )
    # Still serving TLS clients.
    confluent_round_trip(endpoint, tls.confluent(), count=5, size=100)
    assert len(handshake_failures(broker)) == 1


def test_enabled_protocols_and_cipher_suites(secure_broker, tls) -> None:
    broker = secure_broker(
        {
            **tls.broker(),
            "listener.security.protocol.map": "TLS13:SSL,SUITE:SSL",
            "listener.name.tls13.ssl.enabled.protocols": "TLSv1.3",
            # Java's name for a TLS 1.2 suite: TLS 1.3 is then off on that listener,
            # as in Java, where no TLS 1.3 suite is enabled.
            "listener.name.suite.ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        },
        listeners="TLS13://127.0.0.1:0,SUITE://127.0.0.1:0",
    )
    tls12_only = tls.client_context()
    tls12_only.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError), tls_connect(broker.endpoints["TLS13"], tls12_only):
        pass
    with tls_connect(broker.endpoints["TLS13"], tls.client_context()) as sock:
        assert sock.version() == "TLSv1.3"
        assert api_versions_answered(sock)
    with tls_connect(broker.endpoints["SUITE"], tls.client_context()) as sock:
        assert sock.version() == "TLSv1.2"
        assert sock.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
        assert api_versions_answered(sock)


def one_line(path) -> str:
    """A PEM file's text on one line (a properties value), newlines as spaces."""
    return " ".join(path.read_text().split())


def continued_lines(path) -> str:
    """A PEM file's lines as a properties value written across lines (Java's trailing
    backslash continuation, as Kafka's docs show inline keys)."""
    return " \\\n    ".join(path.read_text().split("\n")).rstrip(" \\\n")


def test_inline_pem_keystore_and_truststore(secure_broker, tls_material, tls) -> None:
    """ssl.keystore.key / ssl.keystore.certificate.chain / ssl.truststore.certificates
    given inline in the properties file (across lines, or on one); mutual TLS with them."""
    m = tls_material
    broker = secure_broker(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": continued_lines(m.broker_key_pem),  # unencrypted: no password
            "ssl.keystore.certificate.chain": one_line(m.broker_cert_pem),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": one_line(m.ca_pem),
            "ssl.client.auth": "required",
        },
        listeners="SSL://127.0.0.1:0",
    )
    with tls_connect(broker.endpoints["SSL"], tls.client_context(mutual=True)) as sock:
        assert api_versions_answered(sock)
    assert handshake_failures(broker) == []


def bad_tls_configs(tls_material, tmp_path) -> list[tuple[dict[str, str], str]]:
    m = tls_material
    jks = tmp_path / "broker.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    return [
        (
            {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
             "ssl.keystore.password": "wrong"},
            f"Failed to load SSL keystore {m.broker_p12} of type PKCS12: not PKCS12, or the"
            " password is wrong",
        ),
        (
            {"ssl.keystore.location": str(jks), "ssl.keystore.password": m.password},
            f"SSL keystore {jks} is a Java JKS/JCEKS file, which kafkette cannot read: convert"
            f" it with keytool -importkeystore -srckeystore {jks} -destkeystore {jks}.p12"
            " -deststoretype PKCS12 and set the keystore type to PKCS12",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(m.broker_keystore_pem),
             "ssl.keystore.password": m.password},
            "SSL key store password cannot be specified with PEM format, only key password"
            " may be specified",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(m.broker_keystore_pem)},
            "SSL PEM key store is specified, but key password is not specified.",
        ),
        (
            {"ssl.keystore.location": str(m.broker_p12)},
            "SSL key store is specified, but key store password is not specified.",
        ),
        (
            {**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password},
             "ssl.client.auth": "maybe"},
            "invalid value 'maybe' for configuration ssl.client.auth: string must be one of:"
            " required, requested, none",
        ),
        (
            {**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password},
             "ssl.enabled.protocols": "SSLv3"},
            "ssl.enabled.protocols on listener SSL: SSLv3 (expected a list of TLSv1.2, TLSv1.3)",
        ),
        (
            {**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password},
             "ssl.cipher.suites": "TLS_NO_SUCH_SUITE"},
            "ssl.cipher.suites on listener SSL: none of TLS_NO_SUCH_SUITE is supported",
        ),
        (
            # Read even with ssl.client.auth=none, as Kafka reads it.
            {**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password},
             "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "nope")},
            f"cannot read SSL truststore {tmp_path / 'nope'}: No such file or directory",
        ),
        (
            # A group the pattern lacks: refused at start, never at a client's handshake.
            {**{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password},
             "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$4/"},
            "Invalid rule: RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$4/ (No group 4: the pattern has 3)",
        ),
    ]


def test_bad_tls_configs_stop_the_start_with_one_line(
    secure_broker, tls_material, tmp_path
) -> None:
    """One through ``kafkette serve`` (exit code 2, one line), every one through the same
    checks in-process (load_config, then Broker reading the TLS material)."""
    from kafkette.broker.config import load_config
    from kafkette.broker.server import Broker

    cases = bad_tls_configs(tls_material, tmp_path)
    configs, line = cases[1]
    broker = secure_broker(configs, listeners="SSL://127.0.0.1:0", ready=False)
    assert broker.wait_exit() == (2, [f"kafkette: {line}"])
    for configs, line in cases:
        with pytest.raises(ValueError) as refused:
            Broker(load_config({"listeners": "SSL://127.0.0.1:0", **configs}))
        assert str(refused.value) == line, configs
