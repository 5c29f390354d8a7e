"""Client quotas: the admin APIs as Kafka 4.0 answers them, and real clients throttled.

The configs are set with kafka-configs.sh from the reference Kafka (when Java and the
reference are there: three JVM runs, the slowest test here) and with raw requests
(kafka-python's classes); a confluent-kafka producer and consumer are then slowed to
their byte rates. Rates use
``quota.window.num=2`` so that the burst a new client is allowed ((num - 1) windows of
quota) is one second's worth and a test of a few seconds shows the limit; bounds are
generous (half the expected time) because the machine is shared.
"""

from __future__ import annotations

import math
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from confluent_kafka import Consumer, Producer
from kafka.protocol.admin import AlterClientQuotasRequest as Alter
from kafka.protocol.admin import DescribeClientQuotasRequest as Describe

from bench.harness.serve_process import serve_refused
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.client_connection import NEED_DATA
from tests.broker import fetch_wire as fw
from tests.reference_kafka import reference_script_or_skip

RATE = 10 * 1024  # bytes per second
RECORDS = 40
RECORD_BYTES = 1000
EXPECTED_S = RECORDS * RECORD_BYTES / RATE - 1  # less the one-window burst
CONFIGS = {"quota.window.num": "2", "num.partitions": "1"}


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("quota-data"), configs=CONFIGS
    )
    try:
        yield embedded
    finally:
        embedded.stop(timeout=30)


def _alter(client, entity, ops, validate_only=False, version=1):  # type: ignore[no-untyped-def]
    request = Alter(
        entries=[
            Alter.EntryData(
                entity=[
                    Alter.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity
                ],
                ops=[Alter.EntryData.OpData(key=k, value=v, remove=r) for k, v, r in ops],
            )
        ],
        validate_only=validate_only,
    )
    response = client.request(request, version)
    return [(e.error_code, e.error_message) for e in response.entries]


def _describe(client, components, strict=False, version=1):  # type: ignore[no-untyped-def]
    request = Describe(
        components=[Describe.ComponentData(entity_type=t, match_type=m, match=s)
                    for t, m, s in components],
        strict=strict,
    )  # fmt: skip
    response = client.request(request, version)
    entries = None if response.entries is None else {
        tuple((x.entity_type, x.entity_name) for x in e.entity): {v.key: v.value for v in e.values}
        for e in response.entries
    }
    return response.error_code, response.error_message, entries


def test_alter_checks_each_entry_as_kafka(quota_broker, raw_client) -> None:
    client = raw_client(quota_broker.bootstrap)
    invalid = 42
    assert _alter(client, [("client-id", "v1")], [("foo", 1.0, False)]) == [
        (invalid, "Invalid configuration key foo")]
    assert _alter(client, [("client-id", "v1")], [("producer_byte_rate", 0.0, False)]) == [
        (invalid, "Quota producer_byte_rate must be greater than 0")]
    assert _alter(client, [("client-id", "v1")], [("producer_byte_rate", 1.5, False)]) == [
        (invalid, "producer_byte_rate cannot be a fractional value.")]
    assert _alter(client, [("client-id", "v1")], [("producer_byte_rate", -math.inf, False)]) == [
        (invalid, "Quota producer_byte_rate must be greater than 0")]
    assert _alter(client, [("user", "v1")], [("producer_byte_rate", 1e20, False)]) == [
        (invalid, "Proposed value for producer_byte_rate is too large for a LONG.")]
    assert _alter(client, [("ip", "1.2.3.4")], [("producer_byte_rate", 5.0, False)]) == [
        (invalid, "Invalid configuration key producer_byte_rate")]
    assert _alter(client, [("ip", "1.2.3.4"), ("user", "u")],
                  [("connection_creation_rate", 5.0, False)])[0][0] == invalid  # fmt: skip
    assert _alter(client, [("foo", "x")], [("producer_byte_rate", 5.0, False)]) == [
        (invalid, "Unhandled client quota entity type: foo")]
    assert _alter(client, [("user", "")], [("producer_byte_rate", 5.0, False)]) == [
        (invalid, "Empty user not supported")]
    assert _alter(client, [], [("producer_byte_rate", 5.0, False)]) == [
        (invalid, "Invalid empty client quota entity")]
    assert _alter(client, [("user", "v0")], [("producer_byte_rate", 0.5, False)], version=0) == [
        (invalid, "producer_byte_rate cannot be a fractional value.")]
    # validate_only: checked, not stored
    assert _alter(client, [("user", "vo")], [("request_percentage", 1.5, False)], True) == [
        (0, None)]
    assert _describe(client, [("user", 0, "vo")]) == (0, "", {})


def test_describe_filters_as_kafka(quota_broker, raw_client) -> None:
    client = raw_client(quota_broker.bootstrap)
    assert _alter(client, [("client-id", "f1")], [("producer_byte_rate", 2048.0, False)]) == [
        (0, None)]
    assert _alter(client, [("user", "fu"), ("client-id", "f1")],
                  [("consumer_byte_rate", 4096.0, False)]) == [(0, None)]  # fmt: skip
    assert _alter(client, [("user", None)], [("request_percentage", 200.0, False)]) == [
        (0, None)]
    code, _, strict = _describe(client, [("client-id", 0, "f1")], strict=True)
    assert code == 0 and strict == {(("client-id", "f1"),): {"producer_byte_rate": 2048.0}}
    _, _, loose = _describe(client, [("client-id", 0, "f1")])
    assert loose == {
        (("client-id", "f1"),): {"producer_byte_rate": 2048.0},
        (("client-id", "f1"), ("user", "fu")): {"consumer_byte_rate": 4096.0},
    }
    _, _, defaults = _describe(client, [("user", 1, None)], strict=True)
    assert defaults == {(("user", None),): {"request_percentage": 200.0}}
    assert _describe(client, [("user", 0, None)])[:2] == (
        42, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
    assert _describe(client, [("foo", 2, None)])[:2] == (35, "Unsupported entity type foo")
    # removing the last value removes the entity
    assert _alter(client, [("user", None)], [("request_percentage", 0.0, True)]) == [(0, None)]
    assert _describe(client, [("user", 1, None)]) == (0, "", {})


def _produce(bootstrap: str, topic: str, client_id: str) -> tuple[float, list[int]]:
    throttles: list[int] = []
    producer = Producer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
        "batch.size": 4096, "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    started = time.monotonic()
    for _ in range(RECORDS):
        producer.produce(topic, b"x" * RECORD_BYTES)
        producer.poll(0)
    assert producer.flush(60) == 0
    return time.monotonic() - started, throttles


def test_producer_is_slowed_to_its_byte_rate(quota_broker, raw_client) -> None:
    client = raw_client(quota_broker.bootstrap)
    slow = f"slow-{uuid.uuid4().hex[:6]}"
    assert _alter(client, [("client-id", slow)], [("producer_byte_rate", RATE, False)]) == [
        (0, None)]
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    elapsed, throttles = _produce(quota_broker.bootstrap, topic, slow)
    assert elapsed >= EXPECTED_S / 2, (elapsed, throttles)
    assert throttles and max(throttles) > 0
    # another client id has no quota: never throttled
    _, free_throttles = _produce(quota_broker.bootstrap, topic, f"free-{uuid.uuid4().hex[:6]}")
    assert not any(free_throttles)


def test_consumer_is_slowed_to_its_byte_rate(quota_broker, raw_client) -> None:
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    _produce(quota_broker.bootstrap, topic, f"fill-{uuid.uuid4().hex[:6]}")
    client = raw_client(quota_broker.bootstrap)
    slow = f"slowc-{uuid.uuid4().hex[:6]}"
    assert _alter(client, [("client-id", slow)], [("consumer_byte_rate", RATE, False)]) == [
        (0, None)]
    throttles: list[int] = []
    consumer = Consumer({
        "bootstrap.servers": quota_broker.bootstrap, "client.id": slow,
        "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
        # a fetch answer well below the quota's window, so that each one can pass
        "fetch.max.bytes": 4096, "max.partition.fetch.bytes": 4096, "message.max.bytes": 4096,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })  # fmt: skip
    try:
        consumer.subscribe([topic])
        received, first, deadline = 0, None, time.monotonic() + 60
        while received < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                received += 1
                first = first or time.monotonic()
        assert received == RECORDS
        assert first is not None
        elapsed = time.monotonic() - first
    finally:
        consumer.close()
    assert elapsed >= EXPECTED_S / 2, (elapsed, throttles)
    assert throttles and max(throttles) > 0


def test_quotas_survive_a_restart(tmp_path: Path, raw_client) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedBroker.start(data_dir=data_dir) as first:
        client = raw_client(first.bootstrap)
        assert _alter(client, [("user", "alice"), ("client-id", None)],
                      [("producer_byte_rate", 1024.0, False)]) == [(0, None)]  # fmt: skip
        assert _alter(client, [("ip", None)], [("connection_creation_rate", 7.0, False)]) == [
            (0, None)]
    assert (data_dir / "client-quotas.json").exists()
    with EmbeddedBroker.start(data_dir=data_dir) as second:
        client = raw_client(second.bootstrap)
        assert _describe(client, [], version=0)[2] == {
            (("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0},
            (("ip", None),): {"connection_creation_rate": 7.0},
        }


def test_kafka_configs_tool_sets_and_shows_quotas(quota_broker) -> None:
    script = reference_script_or_skip()

    def configs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "bin", "kafka-configs.sh", "--bootstrap-server",
             quota_broker.bootstrap, *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    client_id = f"tool-{uuid.uuid4().hex[:6]}"
    altered = configs("--alter", "--add-config", "producer_byte_rate=1024,request_percentage=50",
                      "--entity-type", "clients", "--entity-name", client_id)  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    assert f"Completed updating config for client {client_id}." in altered.stdout
    shown = configs("--describe", "--entity-type", "clients")
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines()
                if x.startswith(f"Quota configs for client-id '{client_id}' are "))  # fmt: skip
    assert "producer_byte_rate=1024.0" in line and "request_percentage=50.0" in line
    bad = configs("--alter", "--add-config", "producer_byte_rate=1.5",
                  "--entity-type", "clients", "--entity-name", client_id)  # fmt: skip
    assert bad.returncode != 0
    assert "producer_byte_rate cannot be a fractional value." in bad.stdout + bad.stderr


def test_request_percentage_throttles_and_mutes(quota_broker, raw_client) -> None:
    """A tiny request_percentage: Metadata answers soon carry throttle_time_ms, and the
    next request on that connection is read only after it (KIP-219 muting)."""
    from kafka.protocol.metadata import MetadataRequest

    busy = f"busy-{uuid.uuid4().hex[:6]}"
    admin = raw_client(quota_broker.bootstrap)
    assert _alter(admin, [("client-id", busy)], [("request_percentage", 0.0001, False)]) == [
        (0, None)]
    client = raw_client(quota_broker.bootstrap)
    throttle_ms = 0
    for correlation_id in range(1, 200):
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
        request.with_header(correlation_id=correlation_id, client_id=busy)
        client.sock.sendall(request.encode(version=8, header=True, framed=True))
        answer = request.header.get_response_class().decode(
            client.read_frame(), version=8, header=True)  # fmt: skip
        throttle_ms = answer.throttle_time_ms
        if throttle_ms:
            break
    assert 0 < throttle_ms <= 1000  # bounded by one window, as Kafka bounds it
    started = time.monotonic()
    client.sock.sendall(request.encode(version=8, header=True, framed=True))
    client.read_frame()
    assert time.monotonic() - started >= throttle_ms / 1000 / 2  # muted meanwhile
    assert _alter(admin, [("client-id", busy)], [("request_percentage", 0.0, True)]) == [
        (0, None)]


def test_connection_creation_rate_closes_connections_over_it(tmp_path: Path, raw_client) -> None:
    """KIP-612: connections from an ip over its connection_creation_rate are held, then
    closed unanswered; the first ones (within the rate) are served."""
    from kafka.protocol.metadata import MetadataRequest

    with EmbeddedBroker.start(data_dir=tmp_path / "data", configs=CONFIGS) as broker:
        admin = raw_client(broker.bootstrap)
        assert _alter(admin, [("ip", "127.0.0.1")], [("connection_creation_rate", 2.0, False)]) == [
            (0, None)]
        answered = refused = 0
        for _ in range(8):
            client = raw_client(broker.bootstrap)
            try:
                client.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 8)
                answered += 1
            except Exception as exc:  # conftest's ConnectionClosed: EOF or reset
                if type(exc).__name__ != "ConnectionClosed":
                    raise
                refused += 1
        assert answered >= 1 and refused >= 1, (answered, refused)


def test_a_damaged_quotas_file_stops_the_start(tmp_path: Path) -> None:
    """Serving clients without the limits they were given is refused: one error line
    (after the data dir, opened first, is closed cleanly), exit 1."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "client-quotas.json").write_text("{not json")
    code, lines = serve_refused("--listen", "127.0.0.1:0", "--data-dir", str(data_dir))
    assert code == 1
    errors = [line for line in lines if line.startswith("kafkette:")]
    assert len(errors) == 1 and "invalid client quotas file" in errors[0], lines
    assert (data_dir / "client-quotas.json").read_text() == "{not json"


def test_concurrent_alterations_all_land(tmp_path: Path) -> None:
    """AlterClientQuotas requests answered at once (each its own connection's task) are
    applied one after the other: none is lost, and the file holds them all."""
    from kafkette.broker.quotas.store import FileQuotaStore

    store = FileQuotaStore.load(tmp_path)
    users = [f"user-{i}" for i in range(8)]

    async def alter_all() -> None:
        async with trio.open_nursery() as nursery:
            for user in users:
                nursery.start_soon(store.apply, {(("user", user),): {"producer_byte_rate": 1.0}})

    trio.run(alter_all)
    expected = {(("user", user),): {"producer_byte_rate": 1.0} for user in users}
    assert trio.run(store.read) == expected
    assert trio.run(FileQuotaStore.load(tmp_path).read) == expected


def _limit(client, key: str, rate: int = RATE) -> str:  # type: ignore[no-untyped-def]
    """A fresh client id held to ``rate`` for ``key``."""
    client_id = f"lim-{uuid.uuid4().hex[:8]}"
    assert _alter(client, [("client-id", client_id)], [(key, rate, False)]) == [(0, None)]
    return client_id


def test_a_replica_id_on_a_single_node_is_no_way_around_a_consumer_quota(
    quota_broker, raw_client
) -> None:
    """Only a live broker of a cluster fetches as a follower (exempt from client quotas):
    on a single node a Fetch claiming replica_id=0 is a consumer's, and is throttled."""
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    _produce(quota_broker.bootstrap, topic, f"fill-{uuid.uuid4().hex[:6]}")  # 40 KB
    client = fw.WireClient(quota_broker.bootstrap, _limit(raw_client(quota_broker.bootstrap),
                                                          "consumer_byte_rate"))
    try:
        entry = fw.topic_entry(topic, fw.ZERO, [fw.partition(0)])
        answer = client.fetch(12, 0, -1, [entry], replica_id=0)
    finally:
        client.close()
    assert answer["throttle_time_ms"] > 0 and answer["responses"] == []


def test_a_pre_kip219_answer_waits_without_holding_request_memory(
    quota_broker, raw_client
) -> None:
    """Produce v5 (before KIP-219) over its quota is answered after the throttle time;
    meanwhile the request's bytes are back in the pool (queued.max.request.bytes) for
    other connections."""
    import threading

    from kafkette.wire.apis import ApiKey
    from kafkette.wire.records import build_batch_from_values
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    _produce(quota_broker.bootstrap, topic, f"fill-{uuid.uuid4().hex[:6]}")  # creates it
    # 50 KB/s; a 120 KB frame (above SMALL_FRAME_BYTES: it holds pool memory while read)
    # is throttled for about 1.4 s.
    limited = _limit(raw_client(quota_broker.bootstrap), "producer_byte_rate", 5 * RATE)
    client = fw.WireClient(quota_broker.bootstrap, limited)
    batch = build_batch_from_values([(None, b"x" * 1000)] * 120)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
    answer: dict = {}

    def send() -> None:
        # The frame's start first: the broker then reserves the frame's size in the pool
        # before reading the rest (a frame read whole at once reserves nothing).
        frame = client.conn.send_request(ApiKey.PRODUCE, 5, body, client.client_id)
        client.sock.sendall(frame[:100])
        time.sleep(0.3)
        client.sock.sendall(frame[100:])
        while (response := client.conn.next_response()) is NEED_DATA:
            data = client.sock.recv(1 << 20)
            assert data, "broker closed the connection"
            client.conn.receive_data(data)
        answer.update(response.body)

    def send_or_keep_the_error() -> None:
        try:
            send()
        except BaseException as exc:  # the thread's failure is the test's (re-raised below)
            failed.append(exc)

    failed: list[BaseException] = []
    sender = threading.Thread(target=send_or_keep_the_error)
    pool = quota_broker.broker.request_memory
    try:
        sender.start()
        held = []
        deadline = time.monotonic() + 30
        while sender.is_alive() and time.monotonic() < deadline:
            held.append(pool.in_use)
            time.sleep(0.05)
        reserved_at_start = max(held[:8])
        sender.join(5)
    finally:
        client.close()
    if failed:
        raise failed[0]
    assert answer["throttle_time_ms"] > 0
    partition = answer["responses"][0]["partition_responses"][0]
    assert partition["error_code"] == 0
    # The frame was held while it came in, not during the throttle time (seconds) after.
    assert reserved_at_start > 0, held
    assert len(held) > 5 and max(held[len(held) // 2:]) == 0, held

