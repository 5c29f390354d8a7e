"""The request log and the Prometheus endpoint, end to end.

One ``kafkette serve`` process for the module (``--log-level DEBUG --log-format json
--metrics-listen 127.0.0.1:0``, and a schema registry), real clients (confluent-kafka, its
SchemaRegistryClient for the registry) and real HTTP scrapes
(urllib) parsed with prometheus_client's own text parser. Lag is checked against the
reference Kafka's ``kafka-consumer-groups.sh --describe`` run against kafkette where
Java and the reference distribution are there (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.serve_process import ServeFailed, ServeProcess
from tests.reference_kafka import reference_script_or_skip

METRICS_URL = re.compile(r"metrics on (http://\S+/metrics)")
REGISTRY_URL = re.compile(r"schema registry on (http://\S+)")
RECORDS = 100
VALUE = b"v" * 100


class Served(ServeProcess):
    """A ``kafkette serve`` child with its stderr in a file; bounded waits only."""

    def __init__(self, tmp: Path, *args: str) -> None:
        super().__init__(["--listen", "127.0.0.1:0", "--data-dir", str(tmp / "data"), *args],
                         tmp / "broker.log")
        self.wait_ready(30)

    def stop(self) -> None:
        try:
            self.terminate(30)
        except ServeFailed:
            pass  # ignored SIGTERM: killed


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    broker = Served(
        tmp_path_factory.mktemp("observed"),
        "--log-level", "DEBUG", "--log-format", "json", "--metrics-listen", "127.0.0.1:0",
        "--config", "group.initial.rebalance.delay.ms=0",
        "--schema-registry-listen", "127.0.0.1:0",
    )  # fmt: skip
    yield broker
    broker.stop()


def metrics_url(served: Served) -> str:
    return logged_url(served, "kafkette.metrics", METRICS_URL)


def logged_url(served: Served, logger: str, pattern: re.Pattern[str]) -> str:
    for line in served.stderr_text().splitlines():
        entry = json.loads(line)
        if entry["logger"] == logger:
            match = pattern.search(entry["message"])
            if match:
                return match.group(1)
    raise AssertionError(f"no {pattern.pattern!r} line from {logger}")


def scrape(served: Served) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape, by (name, labels)."""
    with urllib.request.urlopen(metrics_url(served), timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def entries_once(served: Served, seen: Callable[[list[dict]], bool]) -> list[dict]:
    """The JSON log lines once ``seen`` holds for them (or at a generous deadline).

    The request log writes a request's line after its response went out (the time it
    reports includes the send), so a client can hold the answer before the line exists.
    """
    deadline = time.monotonic() + 15
    while True:
        text = served.stderr_text()
        # Only whole lines: the broker may be writing the last one right now.
        whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
        entries = [json.loads(line) for line in whole.splitlines()]
        if seen(entries) or time.monotonic() > deadline:
            return entries
        time.sleep(0.05)


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def bucket_samples(samples: dict, name: str, **labels: str) -> list[tuple[dict, float]]:
    """The samples named ``name`` whose labels include ``labels`` (histogram buckets)."""
    wanted = set(labels.items())
    return [
        (dict(key), number)
        for (sample, key), number in samples.items()
        if sample == name and wanted <= key
    ]


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    name = f"obs-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=15)
    return name


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for _ in range(count):
        producer.produce(topic, VALUE, partition=partition)
    assert producer.flush(15) == 0


def consume_all(bootstrap: str, topic: str, partition: int, count: int, group: str) -> None:
    """Read ``count`` records of one partition from offset 0 (assign, no rebalance)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        seen = 0
        deadline = time.monotonic() + 20
        while seen < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen += 1
        assert seen == count
    finally:
        consumer.close()


def commit(bootstrap: str, group: str, topic: str, partition: int, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_scrape_shows_exact_records_bytes_and_offsets(served: Served) -> None:
    topic = new_topic(served.bootstrap)
    produce(served.bootstrap, topic, RECORDS, partition=0)
    consume_all(served.bootstrap, topic, 0, RECORDS, f"reader-{topic}")
    samples = scrape(served)
    records_in = "kafka_server_brokertopicmetrics_messagesin_total"
    assert value(samples, records_in, topic=topic) == RECORDS
    assert value(samples, "kafka_log_log_logendoffset", topic=topic, partition="0") == RECORDS
    assert value(samples, "kafka_log_log_logendoffset", topic=topic, partition="1") == 0
    assert value(samples, "kafka_log_log_logstartoffset", topic=topic, partition="0") == 0
    size = value(samples, "kafka_log_log_size", topic=topic, partition="0")
    # Batches are stored as they arrived: bytes in is exactly what the segment holds, and
    # the consumer read the partition once from offset 0: the same bytes, the same records.
    assert size > RECORDS * len(VALUE)
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == size
    assert value(samples, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) == size
    assert value(samples, "kafka_server_brokertopicmetrics_messagesout_total", topic=topic) == (
        RECORDS
    )
    produce_requests = sum(
        count for (name, labels), count in samples.items()
        if name == "kafka_network_requestmetrics_requests_total"
        and dict(labels).get("request") == "Produce"
    )  # fmt: skip
    assert produce_requests >= 1
    assert value(samples, "kafka_server_socket_server_metrics_connection_creation_total",
                 listener="PLAINTEXT") >= 3  # fmt: skip


def test_latency_histogram_moves_under_load(served: Served) -> None:
    topic = new_topic(served.bootstrap, partitions=1)
    before = scrape(served)
    producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 0})
    for _ in range(20):
        producer.produce(topic, VALUE)
        assert producer.flush(10) == 0  # one Produce request each
    name = "kafka_network_requestmetrics_totaltimems"
    # A request is timed once its response went out: the last one may land just after.
    deadline = time.monotonic() + 15
    while True:
        after = scrape(served)
        moved = value(after, f"{name}_count", request="Produce") - value(
            before, f"{name}_count", request="Produce"
        )
        if moved >= 20 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert moved >= 20
    buckets = [
        (float(labels["le"]), number)
        for labels, number in bucket_samples(after, f"{name}_bucket", request="Produce")
    ]
    assert [le for le, _ in buckets] == sorted(le for le, _ in buckets)
    counts = [number for _, number in buckets]
    assert counts == sorted(counts), "histogram buckets must be cumulative"
    assert counts[-1] == value(after, f"{name}_count", request="Produce")
    assert value(after, f"{name}_sum", request="Produce") > value(
        before, f"{name}_sum", request="Produce"
    )
    assert value(after, "kafka_network_requestmetrics_requestqueuetimems_count",
                 request="Produce") == value(after, f"{name}_count", request="Produce")  # fmt: skip


def test_group_lag_equals_kafka_consumer_groups(served: Served) -> None:
    topic = new_topic(served.bootstrap)
    produce(served.bootstrap, topic, RECORDS, partition=0)
    produce(served.bootstrap, topic, 30, partition=1)
    group = f"lagging-{topic}"
    commit(served.bootstrap, group, topic, 0, 40)
    commit(served.bootstrap, group, topic, 1, 30)
    samples = scrape(served)
    lag = "kafka_consumergroup_lag"
    assert value(samples, lag, consumergroup=group, topic=topic, partition="0") == 60
    assert value(samples, lag, consumergroup=group, topic=topic, partition="1") == 0
    assert value(samples, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == 60
    assert value(samples, "kafka_consumergroup_current_offset",
                 consumergroup=group, topic=topic, partition="0") == 40  # fmt: skip
    assert value(samples, "kafka_consumergroup_members", consumergroup=group) == 0
    assert value(samples, "kafka_consumergroup_state", consumergroup=group, state="Empty") == 1
    script = reference_script_or_skip("lag checked against the committed offsets only")
    described = subprocess.run(
        [str(script), "bin", "kafka-consumer-groups.sh", "--bootstrap-server", served.bootstrap,
         "--describe", "--group", group],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert described.returncode == 0, described.stderr
    rows = {}
    for line in described.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == topic:
            rows[int(fields[2])] = int(fields[5])  # GROUP TOPIC PARTITION CURRENT LEO LAG
    assert rows == {
        0: value(samples, lag, consumergroup=group, topic=topic, partition="0"),
        1: value(samples, lag, consumergroup=group, topic=topic, partition="1"),
    }


def test_debug_request_lines_are_json_with_the_request_fields(served: Served) -> None:
    topic = new_topic(served.bootstrap, partitions=1)
    produce(served.bootstrap, topic, 3)
    entries = entries_once(served, lambda entries: any(
        e.get("api") == "Produce" and e["level"] == "DEBUG" for e in entries))
    assert all({"ts", "level", "logger", "message"} <= set(e) for e in entries)
    requests = [e for e in entries if e["logger"] == "kafkette.request" and "api" in e
                and e["level"] == "DEBUG" and "time_ms" in e]  # fmt: skip
    produced = [e for e in requests if e["api"] == "Produce"]
    assert produced, "no Produce request line"
    line = produced[-1]
    assert line["client_id"] == "rdkafka"
    assert re.fullmatch(r"127\.0\.0\.1:\d+", line["peer"])
    assert line["errors"] == [] and line["time_ms"] >= 0 and line["response_bytes"] > 0
    assert isinstance(line["correlation_id"], int) and isinstance(line["version"], int)
    assert "Produce v" in line["message"] and f"correlation_id={line['correlation_id']}" in (
        line["message"]
    )
    opened = [
        e for e in entries
        if e["logger"] == "kafkette.request" and re.fullmatch(r"connection from \S+ opened",
                                                               e["message"])
    ]  # fmt: skip
    assert opened


def test_a_refused_request_gives_one_warning_and_counts_an_error(served: Served) -> None:
    missing = f"missing-{uuid.uuid4().hex[:10]}"
    before = scrape(served)
    admin = AdminClient({"bootstrap.servers": served.bootstrap})
    with pytest.raises(Exception, match=r"UNKNOWN_TOPIC|does not exist|nknown"):
        admin.delete_topics([missing], operation_timeout=5)[missing].result(timeout=15)
    def refused(e: dict) -> bool:
        return e["level"] == "WARNING" and e.get("api") == "DeleteTopics"

    warnings = [e for e in entries_once(served, lambda es: any(map(refused, es))) if refused(e)]
    assert len(warnings) == 1
    assert warnings[0]["errors"] == ["UNKNOWN_TOPIC_OR_PARTITION"]
    after = scrape(served)
    name = "kafka_network_requestmetrics_errors_total"
    labels = {"request": "DeleteTopics", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert value(after, name, **labels) == value(before, name, **labels) + 1


def test_a_busy_metrics_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0",
             "--data-dir", str(tmp_path / "data"), "--metrics-listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 1
    assert "kafkette ready" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kafkette: cannot listen on 127.0.0.1:{port} for metrics")
    assert "Traceback" not in done.stderr


def test_schema_registry_requests_errors_and_state_are_scraped(served: Served) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    url = logged_url(served, "kafkette.schema_registry", REGISTRY_URL)
    client = SchemaRegistryClient({"url": url})
    subject = f"obs-{uuid.uuid4().hex[:10]}-value"
    avro = '{"type":"record","name":"Reading","fields":[{"name":"c","type":"double"}]}'
    before = scrape(served)
    schema_id = client.register_schema(subject, Schema(avro, "AVRO"))
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_latest_version(f"missing-{subject}")
    with pytest.raises(SchemaRegistryError) as bad:
        client.register_schema(subject, Schema('{"type":"record"', "AVRO"))
    assert (missing.value.error_code, bad.value.error_code) == (40401, 42201)
    after = scrape(served)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests, versions = "kafkette_schema_registry_requests_total", "/subjects/{subject}/versions"
    assert moved(requests, method="POST", endpoint=versions, status="200") == 1
    assert moved(requests, method="POST", endpoint=versions, status="422") == 1
    assert moved(requests, method="GET", endpoint=versions + "/{version}", status="404") == 1
    assert moved("kafkette_schema_registry_errors_total", error_code="40401") == 1
    assert moved("kafkette_schema_registry_errors_total", error_code="42201") == 1
    assert moved("kafkette_schema_registry_request_seconds_total", endpoint=versions) > 0
    # The gauges read the registry's state: this module registers nothing else.
    assert value(after, "kafkette_schema_registry_subjects") == 1
    assert value(after, "kafkette_schema_registry_schemas") == 1
    assert value(after, "kafkette_schema_registry_max_id") == schema_id
    assert value(after, "kafkette_schema_registry_leader") == 1
