"""GetTelemetrySubscriptions (71) / PushTelemetry (72): KIP-714 as Kafka 4.0 without a plugin.

Raw requests through our codec (kafka-python has no classes for them). Every expected
answer below was measured on the reference Kafka 4.0.0 with the same requests in the
same order (docs/operations-apis.md): subscription ids included, which Kafka derives
from the requested metrics in Java's HashSet order, the push interval and the instance id.
"""

from __future__ import annotations

import gzip
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from kafkette.broker.telemetry.instances import TelemetryState, identity_of
from tests.broker.consumer_protocol_client import RawClient

ZERO = uuid.UUID(int=0)
FIXED = uuid.UUID("12345678-1234-1234-1234-123456789abc")
GET, PUSH = 71, 72
CLIENT_METRICS = 16
THROTTLED, UNKNOWN_SUBSCRIPTION, INVALID_REQUEST = 89, 117, 42
UNSUPPORTED_COMPRESSION, INVALID_RECORD, TOO_LARGE = 76, 87, 118




class Client(RawClient):
    """One connection speaking our codec; ``software`` is announced with ApiVersions v3."""

    def __init__(self, bootstrap: str, client_id: str, software: str | None = None) -> None:
        super().__init__(bootstrap, timeout=15)
        self.client_id = client_id
        if software is not None:
            self.api_versions = self.request(
                18, 3, {"client_software_name": software, "client_software_version": "1.2"}
            )

    def request(self, api_key: int, version: int, body: dict) -> dict:  # type: ignore[override]
        return super().request(api_key, version, body, self.client_id)

    def get(self, instance_id: uuid.UUID = ZERO) -> dict:
        return self.request(GET, 0, {"client_instance_id": instance_id})

    def push(self, got: dict, **fields: object) -> int:
        body = {
            "client_instance_id": got["client_instance_id"],
            "subscription_id": got["subscription_id"],
            "terminating": False,
            "compression_type": 0,
            "metrics": b"",
        }
        body.update(fields)
        return self.request(PUSH, 0, body)["error_code"]


@pytest.fixture
def client(broker):
    made: list[Client] = []

    def connect(client_id: str = "probe", software: str | None = "probe-sw") -> Client:
        made.append(Client(broker.bootstrap, client_id, software))
        return made[-1]

    yield connect
    for c in made:
        c.close()


def _subscribe(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    c = Client(bootstrap, "telemetry-admin")
    try:
        answer = c.request(44, 1, {
            "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
                {"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}],
            "validate_only": False,
        })
    finally:
        c.close()
    assert [r["error_code"] for r in answer["responses"]] == [0]


def _unsubscribe(bootstrap: str, name: str, keys: list[str]) -> None:
    c = Client(bootstrap, "telemetry-admin")
    try:
        answer = c.request(44, 1, {
            "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
                {"name": k, "config_operation": 1, "value": None} for k in keys]}],
            "validate_only": False,
        })
    finally:
        c.close()
    assert [r["error_code"] for r in answer["responses"]] == [0]


def test_api_versions_leaves_telemetry_out_but_both_are_answered(client) -> None:
    c = client()
    keys = {entry["api_key"] for entry in c.api_versions["api_keys"]}
    assert 74 in keys and GET not in keys and PUSH not in keys  # as Kafka 4.0, no plugin
    got = c.get()  # and yet answered, the connection kept
    assert got["error_code"] == 0
    assert c.push(got) == 0


def test_get_without_subscriptions_is_kafka_40s_answer(client) -> None:
    c = client()
    got = c.get()
    assert got["client_instance_id"] not in (ZERO, None)
    assert (got["throttle_time_ms"], got["error_code"]) == (0, 0)
    assert got["accepted_compression_types"] == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert (got["push_interval_ms"], got["telemetry_max_bytes"]) == (300_000, 1_048_576)
    assert got["delta_temporality"] is True
    assert got["requested_metrics"] == []  # nothing to collect: clients do not push
    # The client's own id is kept; Kafka 4.0 gave this one this subscription id.
    fixed = client().get(FIXED)
    assert (fixed["client_instance_id"], fixed["subscription_id"]) == (FIXED, -1869900006)
    # Asked again within the push interval: throttled, every other field zero.
    again = client().get(got["client_instance_id"])
    assert again == {
        "throttle_time_ms": 0, "error_code": THROTTLED, "client_instance_id": ZERO,
        "subscription_id": 0, "accepted_compression_types": [], "push_interval_ms": 0,
        "telemetry_max_bytes": 0, "delta_temporality": False, "requested_metrics": [],
    }


def test_push_checks_in_kafka_40s_order(client) -> None:
    c = client()
    got = c.get()
    assert c.push(got, client_instance_id=ZERO) == INVALID_REQUEST
    assert c.push(got) == 0  # right after a get: accepted, and dropped (no plugin)
    assert c.push(got) == THROTTLED  # before the push interval
    assert c.push(got, subscription_id=got["subscription_id"] + 1) == THROTTLED  # throttle first
    assert client().push({"client_instance_id": uuid.uuid4(), "subscription_id": 0}) == (
        UNKNOWN_SUBSCRIPTION)
    outcomes = []
    for fields in (
        {"subscription_id": 1},
        {"compression_type": 9},
        {"compression_type": 1, "metrics": b"garbage"},
        {"compression_type": 9, "metrics": b"x" * 1_048_577},  # compression before size
        {"metrics": b"x" * 1_048_577},
        {"compression_type": 1, "metrics": gzip.compress(b"otlp")},
        {"metrics": b"uncompressed"},
    ):
        fresh = c.get()
        outcomes.append(c.push(fresh, **fields))
    assert outcomes == [
        UNKNOWN_SUBSCRIPTION, UNSUPPORTED_COMPRESSION, INVALID_RECORD, UNSUPPORTED_COMPRESSION,
        TOO_LARGE, 0, 0,
    ]


def test_terminating_push_ends_the_instance(client) -> None:
    c = client()
    got = c.get()
    assert c.push(got) == 0
    assert c.push(got, terminating=True) == 0  # a terminating push is never throttled
    assert c.push(got, terminating=True) == INVALID_REQUEST
    fresh = c.get()
    # Recorded even when the push fails on its subscription id.
    assert c.push(fresh, terminating=True, subscription_id=7) == UNKNOWN_SUBSCRIPTION
    assert c.push(fresh, terminating=True) == INVALID_REQUEST


def test_subscriptions_decide_metrics_interval_and_id(broker, client) -> None:
    bootstrap = broker.bootstrap
    _subscribe(bootstrap, "subA", {
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.,"
                   "zeta.metric,alpha",
        "interval.ms": "60000", "match": "client_id=probe.*"})
    _subscribe(bootstrap, "subB", {"metrics": "org.apache.kafka.producer.,bbb",
                                   "interval.ms": "5000",
                                   "match": "client_software_name=probe-sw"})
    _subscribe(bootstrap, "subC", {"metrics": "cmetric", "interval.ms": "2000",
                                   "match": "client_software_name=other"})
    try:
        both = client("probe", "probe-sw").get(uuid.UUID("0924b0e3-b473-4f2b-82c7-bd163c304e01"))
        assert both["requested_metrics"] == [  # Java's HashSet order, as Kafka lists them
            "org.apache.kafka.producer.", "org.apache.kafka.consumer.coordinator.", "bbb",
            "alpha", "zeta.metric"]
        assert (both["push_interval_ms"], both["subscription_id"]) == (5000, 295958684)
        by_id = client("probe", None).get(uuid.UUID("2a399ed4-c733-4110-8e53-e33dcd0ec540"))
        assert by_id["requested_metrics"] == [
            "org.apache.kafka.producer.", "org.apache.kafka.consumer.coordinator.", "alpha",
            "zeta.metric"]
        assert (by_id["push_interval_ms"], by_id["subscription_id"]) == (60000, -1832421287)
        other = client("xx", "other").get(uuid.UUID("6e4efd13-584a-4b26-89ee-dd9276ae5589"))
        assert other["requested_metrics"] == ["cmetric"]
        assert (other["push_interval_ms"], other["subscription_id"]) == (2000, 1240060377)
        none = client("xx", None).get(uuid.UUID("638d413d-7d39-4258-ad68-1a130d985fdb"))
        assert none["requested_metrics"] == []
        assert (none["push_interval_ms"], none["subscription_id"]) == (300000, 1786977651)
        # A client that never announced its software is "unknown"; "*" asks for all.
        _subscribe(bootstrap, "subD", {"metrics": "*,more", "interval.ms": "3000",
                                       "match": "client_software_name=unknown"})
        everything = client("yy", None).get()
        assert (everything["requested_metrics"], everything["push_interval_ms"]) == (["*"], 3000)
    finally:
        for name in ("subA", "subB", "subC", "subD"):
            _unsubscribe(bootstrap, name, ["metrics", "interval.ms", "match"])


def test_a_subscription_change_reevaluates_and_unthrottles(broker, client) -> None:
    c = client("changer", "probe-sw")
    got = c.get()
    assert got["requested_metrics"] == []
    assert c.get(got["client_instance_id"])["error_code"] == THROTTLED
    _subscribe(broker.bootstrap, "changer", {"metrics": "org.apache.kafka.",
                                             "match": "client_id=changer"})
    try:
        changed = c.get(got["client_instance_id"])
        assert changed["error_code"] == 0
        assert changed["requested_metrics"] == ["org.apache.kafka."]
        assert changed["subscription_id"] != got["subscription_id"]
        # The subscription id the client held is now unknown.
        assert c.push(got) == UNKNOWN_SUBSCRIPTION
    finally:
        _unsubscribe(broker.bootstrap, "changer", ["metrics", "match"])


def test_confluent_kafka_with_metrics_push_keeps_working(broker, create_topic) -> None:
    """A smoke test: librdkafka pushes metrics only where the broker advertises KIP-714's
    APIs, so here it must simply produce and consume as usual with ``enable.metrics.push``."""
    topic = create_topic(broker.bootstrap, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.metrics.push": True})
    for i in range(5):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": f"telemetry-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest", "enable.metrics.push": True,
    })
    try:
        consumer.subscribe([topic])
        values = []
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) == 5:
                break
        assert values == [f"m{i}".encode() for i in range(5)]
    finally:
        consumer.close()


def test_terminating_flag_follows_every_push(client) -> None:
    """Kafka sets the flag from each push in a ``finally`` after its checks, and a
    terminating push still counts as the last push (measured on Kafka 4.0.0)."""
    c = client()
    got = c.get()
    assert c.push(got, terminating=True) == 0
    assert c.push(got) == INVALID_REQUEST  # terminating: refused, and the flag cleared
    assert c.push(got) == THROTTLED  # the terminating push was the last accepted one


def test_a_failed_push_does_not_unthrottle_the_get(client) -> None:
    """Kafka 4.0 means to answer a get at once after UNKNOWN_SUBSCRIPTION_ID or
    UNSUPPORTED_COMPRESSION_TYPE, but its condition is always true: measured, the get
    is throttled after every failed push, those two included."""
    outcomes = []
    for fields in ({"subscription_id": 1}, {"compression_type": 9},
                   {"compression_type": 1, "metrics": b"garbage"}):
        c = client()
        got = c.get()
        failed = c.push(got, **fields)
        outcomes.append((failed, c.get(got["client_instance_id"])["error_code"]))
    assert outcomes == [(UNKNOWN_SUBSCRIPTION, THROTTLED), (UNSUPPORTED_COMPRESSION, THROTTLED),
                        (INVALID_RECORD, THROTTLED)]


def test_an_instance_is_forgotten_when_its_connection_closes(client) -> None:
    """Kafka's ClientConnectionDisconnectListener: throttled on its connection, the
    instance is new again (and answered) once that connection is gone."""
    first = client()
    got = first.get()
    instance_id = got["client_instance_id"]
    assert first.get(instance_id)["error_code"] == THROTTLED
    first.close()
    second = client()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the broker sees the close shortly after
        answer = second.get(instance_id)
        if answer["error_code"] == 0:
            break
        time.sleep(0.1)
    assert answer["error_code"] == 0
    assert answer["subscription_id"] == got["subscription_id"]  # ids derive, not stored
    # Now tied to the second connection: the first one's end no longer drops it.
    assert second.get(instance_id)["error_code"] == THROTTLED


@pytest.mark.parametrize(("name", "version"), [
    ("bad name", "1.0"), ("ok", "-1"), ("x.", "1"), ("", "1"), ("ok", "1.2 beta"),
])
def test_api_versions_refuses_invalid_software(client, name: str, version: str) -> None:
    """Kafka's ApiVersionsRequest.isValid (v3+): INVALID_REQUEST, no api keys (measured)."""
    c = client(software=None)
    answer = c.request(18, 3, {"client_software_name": name, "client_software_version": version})
    assert (answer["error_code"], answer["api_keys"]) == (INVALID_REQUEST, [])
    good = c.request(18, 3, {"client_software_name": "a", "client_software_version": "1.2-x.3"})
    assert good["error_code"] == 0 and good["api_keys"]  # the connection is kept


def test_software_is_the_connections_own(broker, client) -> None:
    """The software a connection announced matches for it alone: another connection from
    the same client that never said is "unknown"."""
    _subscribe(broker.bootstrap, "by-sw", {"metrics": "org.apache.kafka.",
                                           "match": "client_software_name=probe-sw"})
    try:
        announced = client("sw", "probe-sw").get()
        assert announced["requested_metrics"] == ["org.apache.kafka."]
        silent = client("sw", None).get()
        assert silent["requested_metrics"] == []
    finally:
        _unsubscribe(broker.bootstrap, "by-sw", ["metrics", "match"])


def test_idle_instances_expire_after_three_intervals_or_a_minute() -> None:
    """The rule on its own (a minute is too long to wait for over a socket)."""
    state = TelemetryState()
    identity = identity_of("127.0.0.1:1", "c", None)
    short, long_ = uuid.uuid4(), uuid.uuid4()
    state.instance(short, identity, 0.0)  # 300 s interval: kept 900 s
    state.instance(long_, identity, 1_000.0)
    state.instance(long_, identity, 899_000.0)
    assert set(state.instances) == {short, long_}
    state.expire(900_000.0)
    assert set(state.instances) == {long_}
    assert state.instances[long_].idle_limit_ms() == 900_000
