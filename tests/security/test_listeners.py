"""Kafka's listeners on kafkette: several named listeners, each client told its own.

``listeners=`` in a properties file (or ``--config``) takes effect; Metadata and
FindCoordinator answer a client with the endpoints of the listener it came in on; a bad
listener setting stops the start with one line and exit code 2, as other config errors.
"""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from bench.harness.raw_wire import call, read_exactly

TIMEOUT_S = 20
METADATA = 3  # API key


def metadata_brokers(bootstrap: str) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every broker in a Metadata answer on ``bootstrap``.

    One request on one connection (kafkette's client codec): a client library would go on to
    connect to the advertised addresses, which some tests set to ports nothing listens on, and
    then fail or not depending on which of its connections asks first."""
    answer = call(bootstrap, METADATA, 1, {"topics": []}, timeout=TIMEOUT_S)
    return sorted((b["node_id"], b["host"], b["port"]) for b in answer["brokers"])


def find_coordinator(bootstrap: str, group: str) -> tuple[str, int]:
    """FindCoordinator v1 over a raw socket: the group coordinator's (host, port)."""
    host, _, port = bootstrap.rpartition(":")
    client_id = b"listeners-test"
    key = group.encode()
    body = struct.pack(">h", len(key)) + key + b"\x00"  # key, key_type GROUP
    header = struct.pack(">hhih", 10, 1, 7, len(client_id)) + client_id
    frame = header + body
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", read_exactly(sock, 4))[0]
        answer = read_exactly(sock, size)
    # correlation id, throttle_time_ms, error_code, error_message (nullable), node_id, host, port
    position = 4 + 4
    error = struct.unpack_from(">h", answer, position)[0]
    position += 2
    message_length = struct.unpack_from(">h", answer, position)[0]
    position += 2 + max(message_length, 0)
    position += 4  # node id
    host_length = struct.unpack_from(">h", answer, position)[0]
    position += 2
    coordinator_host = answer[position:position + host_length].decode()
    position += host_length
    coordinator_port = struct.unpack_from(">i", answer, position)[0]
    assert error == 0, error
    return coordinator_host, coordinator_port


def test_each_listener_advertises_itself(secure_broker) -> None:
    broker = secure_broker(
        {
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
            # Port 0: the bound port; INTERNAL is told to clients by another name.
            "advertised.listeners": "CLIENT://127.0.0.1:0,INTERNAL://localhost:0",
            "inter.broker.listener.name": "INTERNAL",
        },
        listeners="CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    )
    endpoints = broker.endpoints
    assert set(endpoints) == {"CLIENT", "INTERNAL"}
    client_port = int(endpoints["CLIENT"].rpartition(":")[2])
    internal_port = int(endpoints["INTERNAL"].rpartition(":")[2])
    assert client_port != internal_port
    # The ready line is the first listener's advertised endpoint.
    assert broker.bootstrap == f"127.0.0.1:{client_port}"
    assert broker.stdout_lines == [f"kafkette ready on 127.0.0.1:{client_port}"]

    assert metadata_brokers(endpoints["CLIENT"]) == [(1, "127.0.0.1", client_port)]
    assert metadata_brokers(endpoints["INTERNAL"]) == [(1, "localhost", internal_port)]
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert find_coordinator(endpoints["CLIENT"], group) == ("127.0.0.1", client_port)
    assert find_coordinator(endpoints["INTERNAL"], group) == ("localhost", internal_port)

    # A consumer group through the INTERNAL listener: every connection librdkafka makes
    # (the coordinator's too) goes to the endpoints that listener advertised.
    topic = f"t-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": endpoints["INTERNAL"]})
    for index in range(10):
        producer.produce(topic, f"v{index}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": endpoints["INTERNAL"],
            "group.id": group,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        values = []
        for _ in range(200):
            if len(values) == 10:
                break
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == [f"v{index}".encode() for index in range(10)]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert broker.terminate() == 0


def test_an_advertised_port_without_host_is_kept_for_every_listener(secure_broker) -> None:
    """advertised.listeners ``NAME://:PORT``: this machine's name and that port, the first
    listener's as well as the others' (the ready line is the first's)."""
    broker = secure_broker(
        {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECOND:PLAINTEXT",
            "advertised.listeners": "PLAINTEXT://:19092,SECOND://:19093",
        },
        listeners="PLAINTEXT://127.0.0.1:0,SECOND://127.0.0.1:0",
    )
    host = socket.gethostname()
    assert broker.stdout_lines == [f"kafkette ready on {host}:19092"]
    assert metadata_brokers(broker.endpoints["PLAINTEXT"]) == [(1, host, 19092)]
    assert metadata_brokers(broker.endpoints["SECOND"]) == [(1, host, 19093)]


def test_a_tls_client_on_a_plaintext_listener_is_named_in_the_line(secure_broker) -> None:
    broker = secure_broker()
    host, _, port = broker.bootstrap.rpartition(":")
    context = ssl.create_default_context()
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            context.wrap_socket(raw, server_hostname=host)
    line = broker.wait_for_log(r"closing connection from .*").group(0)
    assert line.endswith(
        "exceeds socket.request.max.bytes=104857600 (a TLS client on a PLAINTEXT listener?)"
    ), line


def test_config_line_listeners_and_the_simple_form(tmp_path) -> None:
    """``--config listeners=...`` takes effect without a file; ``--listen`` stays one
    PLAINTEXT listener (and wins over a listeners= line)."""
    command = [
        sys.executable, "-m", "kafkette", "serve", "--data-dir", str(tmp_path / "d"),
        "--config", "listeners=EXTERNAL://127.0.0.1:0",
        "--config", "listener.security.protocol.map=EXTERNAL:PLAINTEXT",
        "--config", "inter.broker.listener.name=EXTERNAL",
    ]
    for extra, expected_name in (((), "EXTERNAL"), (("--listen", "127.0.0.1:0"), None)):
        process = subprocess.Popen(
            [*command, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True,
        )
        try:
            assert process.stdout is not None
            ready = process.stdout.readline().strip()
            assert ready.startswith("kafkette ready on 127.0.0.1:"), ready
            bootstrap = ready.rpartition(" ")[2]
            port = int(bootstrap.rpartition(":")[2])
            assert port != 0
            assert metadata_brokers(bootstrap) == [(1, "127.0.0.1", port)]
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0
        if expected_name:
            assert f"listening on {expected_name}://127.0.0.1:{port}" in stderr
        else:
            assert f"listening on 127.0.0.1:{port}" in stderr


BAD_CONFIGS = [
    (
        {"listeners": "FOO://127.0.0.1:0"},
        "listeners: Error creating broker listeners from 'FOO://127.0.0.1:0':"
        " No security protocol defined for listener FOO",
    ),
    (
        {"listeners": "PLAINTEXT://127.0.0.1:0,plaintext://127.0.0.1:0"},
        "Each listener must have a different name, listeners: "
        "PLAINTEXT://127.0.0.1:0,plaintext://127.0.0.1:0",
    ),
    (
        {"listeners": "PLAINTEXT:127.0.0.1:0"},
        "listeners: Error creating broker listeners from 'PLAINTEXT:127.0.0.1:0':"
        " Unable to parse PLAINTEXT:127.0.0.1:0 to a broker endpoint",
    ),
    (
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:0,OTHER://h:1",
        },
        "advertised.listeners listener names must be equal to or a subset of the ones"
        " defined in listeners. Found PLAINTEXT,OTHER. The valid options based on the"
        " current configuration are PLAINTEXT",
    ),
    (
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "advertised.listeners": "PLAINTEXT://0.0.0.0:0",
        },
        "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0."
        " Use a routable IP address.",
    ),
    (
        {"listeners": "PLAINTEXT://127.0.0.1:0", "listener.security.protocol.map": "PLAINTEXT:TLS"},
        "listener.security.protocol.map: unknown security protocol TLS for listener PLAINTEXT"
        " (one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
    ),
    (
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "inter.broker.listener.name": "PLAINTEXT",
            "security.inter.broker.protocol": "PLAINTEXT",
        },
        "Only one of inter.broker.listener.name and security.inter.broker.protocol"
        " should be set.",
    ),
    (
        {"listeners": "PLAINTEXT://127.0.0.1:0", "listener.name.other.ssl.keystore.type": "PEM"},
        "listener.name.other.ssl.keystore.type names listener OTHER, which listeners does"
        " not define (PLAINTEXT)",
    ),
    (
        {"listeners": "SSL://127.0.0.1:0", "listener.name.ssl.ssl.keystore.kind": "PEM"},
        "unknown broker config listener.name.ssl.ssl.keystore.kind",
    ),
    (
        {"listeners": "SSL://127.0.0.1:0"},
        "listener SSL (SSL) needs a keystore: set ssl.keystore.location"
        " (or listener.name.ssl.ssl.keystore.location)",
    ),
]


def test_bad_listener_configs_stop_the_start_with_one_line(secure_broker) -> None:
    """Two through ``kafkette serve`` (exit code 2, one line, as other config errors),
    every one through the same checks in-process (load_config, then Broker)."""
    from kafkette.broker.config import load_config
    from kafkette.broker.server import Broker

    for configs, line in (BAD_CONFIGS[0], BAD_CONFIGS[-1]):
        broker = secure_broker(configs, listeners=None, ready=False)
        assert broker.wait_exit() == (2, [f"kafkette: {line}"])
    for configs, line in BAD_CONFIGS:
        with pytest.raises(ValueError) as refused:
            Broker(load_config(configs))
        assert str(refused.value) == line, configs


def test_a_kraft_quick_start_file_serves_its_broker_listener_only() -> None:
    """Kafka 4's config/server.properties: the CONTROLLER listener (controller.listener.names)
    is not bound, and an unset protocol map lets it speak PLAINTEXT, as KRaft does."""
    from kafkette.broker.security.listeners import plan_listeners

    plan = plan_listeners(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
            "advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
        },
        clustered=False,
    )
    assert [str(listener) for listener in plan.listeners] == ["PLAINTEXT://:9092"]
    assert plan.advertised["PLAINTEXT"] == ("localhost", 9092)


def test_listener_names_are_case_insensitive_and_per_listener_values_win() -> None:
    from kafkette.broker.security.listeners import listener_value, plan_listeners

    explicit = {
        "listeners": "client://127.0.0.1:9093",
        "listener.security.protocol.map": "Client:ssl",
        "ssl.client.auth": "none",
        "listener.name.client.ssl.client.auth": "required",
        "inter.broker.listener.name": "client",
    }
    plan = plan_listeners(explicit, clustered=True)
    [listener] = plan.listeners
    assert (listener.name, listener.security_protocol) == ("CLIENT", "SSL")
    assert plan.inter_broker.name == "CLIENT"
    assert listener_value(explicit, listener, "ssl.client.auth", "none") == "required"
    assert listener_value(explicit, listener, "ssl.keystore.type", "JKS") == "JKS"


def test_in_a_cluster_the_inter_broker_listener_must_exist() -> None:
    from kafkette.broker.security.listeners import ListenerConfigError, plan_listeners

    explicit = {"listeners": "SSL://127.0.0.1:9093"}
    assert plan_listeners(explicit, clustered=False).listeners[0].name == "SSL"
    with pytest.raises(ListenerConfigError) as refused:
        plan_listeners(explicit, clustered=True)
    assert str(refused.value) == (
        "inter.broker.listener.name must be a listener name defined in advertised.listeners."
        " The valid options based on currently configured listeners are SSL"
    )
    explicit["security.inter.broker.protocol"] = "SSL"
    assert plan_listeners(explicit, clustered=True).inter_broker.name == "SSL"
