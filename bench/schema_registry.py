"""What the schema registry served by the broker (issue 32) costs: register, lookup and
schema-by-id latency, and what confluent-kafka's ``AvroSerializer`` (ids cached) does to
produce throughput, on kafkette and on Apache Kafka with kafkette's registry.

    python -m bench.schema_registry [--registers 200] [--lookups 500] [--gets 1000]
        [--records 50000] [--rounds 3] [--brokers kafkette,kafka] [--json]

kafkette is started fresh (``bench.harness.brokers``) with ``--schema-registry-listen
127.0.0.1:0``; its URL comes from its ``schema registry on`` log line. Latencies are what one
client sees over one kept-alive HTTP/1.1 connection (``http.client``), one call at a time,
after 20 calls of warm-up; p50/p99/mean in milliseconds:

- ``register, new subject``: ``POST /subjects/{s}/versions`` of a new Avro record schema
  under a new subject per call (no compatibility check: the subject is empty);
- ``register, new version``: a new schema per call under one subject (a field's default
  changes), so each call is checked BACKWARD (the default) against the latest version;
- ``lookup``: ``POST /subjects/{s}`` of a registered schema (parsed and printed per call);
- ``schema by id``: ``GET /schemas/ids/{id}`` (what a deserializer asks once per id).

Every register is a write to ``_schemas``: appended, committed, applied by the registry's
tail, then answered.

Produce: one confluent-kafka ``Producer`` (``acks=1``, ``linger.ms=5``), one partition,
``--records`` records of a 4-field Avro record (32 bytes encoded) per run, after 20,000
records of warm-up per kind (the JVM's JIT). ``avro`` calls ``AvroSerializer`` per record
(the topic's subject is registered before the clock starts and its id cached: no registry
call on the path); ``bytes`` produces the same encoded bytes as a ready-made value. The kinds
alternate, ``--rounds`` times; medians are printed. ``serialize only`` runs the serializer
alone, no broker: the client's ceiling. The same produce runs against the reference Apache
Kafka 4.0 (``KAFKA_HOME`` or ``kafka-ref home``; one KRaft node), the serializer still using
kafkette's registry (kafkette stays up), so avro/bytes on each broker and kafkette/Kafka show
the broker's share. Broker CPU seconds per 100,000 records come from ``/proc``
(``CpuWindow``); they grow when the client is slower, as batches get smaller.

No registry-to-registry comparison: Confluent Schema Registry is not on this machine (no
server jars, no container runtime), so the latencies stand alone. A script, not a test:
figures depend on the machine (2 shared cores here); compare within one run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.serialization import MessageField, SerializationContext

from .harness.brokers import ApacheKafka, Broker, Kafkette, RunningBroker
from .harness.processes import CpuWindow, ProcessRegistry
from .harness.producing import produce_all

START_TIMEOUT_S = 120.0
WARMUP_CALLS = 20
WARMUP_RECORDS = 20_000
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
REGISTRY_LINE = re.compile(rb"schema registry on (https?://\S+)")
NO_REGISTRY_PEER = (
    "Confluent Schema Registry is not on this machine (no server jars, no container runtime)"
)
PRODUCE_KINDS = ("bytes", "avro")


class MeasurementError(Exception):
    """A call or a produce failed: shown as n/a with the reason."""


class RegistryKafkette(Kafkette):
    """kafkette with its schema registry on a free port of 127.0.0.1."""

    def extra_args(self) -> list[str]:
        return ["--schema-registry-listen", "127.0.0.1:0"]


def registry_url(running: RunningBroker) -> str:
    match = REGISTRY_LINE.search(running.log_path.read_bytes())
    if match is None:
        raise MeasurementError(f"no 'schema registry on' line\n{running.log_tail(5)}")
    return match.group(1).decode()


# -- HTTP latency ---------------------------------------------------------------------------


class RegistryConnection:
    """One kept-alive connection; ``call`` answers the decoded JSON or raises."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.headers = {"Content-Type": MEDIA_TYPE, "Accept": MEDIA_TYPE}

    def call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        self.connection.request(method, path, body=data, headers=self.headers)
        answer = self.connection.getresponse()
        text = answer.read()
        if answer.status != 200:
            raise MeasurementError(f"{method} {path}: {answer.status} {text[:200]!r}")
        return json.loads(text)

    def close(self) -> None:
        self.connection.close()


def avro_schema(name: str, default: str = "EUR") -> str:
    return json.dumps(
        {
            "type": "record",
            "name": name,
            "namespace": "bench",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "amount", "type": "double"},
                {"name": "customer", "type": "string"},
                {"name": "currency", "type": "string", "default": default},
            ],
        }
    )


def timed(calls: list[tuple[str, str, object]], conn: RegistryConnection) -> list[float]:
    """Seconds per call, in order."""
    took = []
    for method, path, body in calls:
        started = time.perf_counter()
        conn.call(method, path, body)
        took.append(time.perf_counter() - started)
    return took


def latency_figures(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)

    def at(fraction: float) -> float:
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000

    return {
        "calls": len(seconds),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "mean_ms": statistics.fmean(seconds) * 1000,
    }


def measure_latencies(url: str, registers: int, lookups: int, gets: int) -> dict[str, dict]:
    run = uuid.uuid4().hex[:6]
    conn = RegistryConnection(url)
    results: dict[str, dict] = {}
    try:
        # Warm-up: every code path once (parser, printer, compatibility check, the tail).
        warm = f"/subjects/warm-{run}/versions"
        for i in range(WARMUP_CALLS):
            conn.call("POST", warm, {"schema": avro_schema("Warm", f"w{i}")})
            conn.call("POST", f"/subjects/warm-{run}", {"schema": avro_schema("Warm", f"w{i}")})
        subjects = [f"bench-{run}-{i}-value" for i in range(registers)]
        calls = [
            ("POST", f"/subjects/{quote(s, safe='')}/versions", {"schema": avro_schema(f"R{i}")})
            for i, s in enumerate(subjects)
        ]
        results["register, new subject"] = latency_figures(timed(calls, conn))
        evolving = f"/subjects/evolving-{run}-value/versions"
        calls = [
            ("POST", evolving, {"schema": avro_schema("Evolving", f"c{i}")})
            for i in range(registers)
        ]
        results["register, new version"] = latency_figures(timed(calls, conn))
        calls = [
            (
                "POST",
                f"/subjects/{quote(subjects[i % registers], safe='')}",
                {"schema": avro_schema(f"R{i % registers}")},
            )
            for i in range(lookups)
        ]
        results["lookup"] = latency_figures(timed(calls, conn))
        ids = [conn.call("POST", path, body)["id"] for _m, path, body in calls[:registers]]
        calls = [("GET", f"/schemas/ids/{ids[i % len(ids)]}", None) for i in range(gets)]
        results["schema by id"] = latency_figures(timed(calls, conn))
    finally:
        conn.close()
    return results


# -- produce throughput ----------------------------------------------------------------------


def create_topic(bootstrap: str) -> str:
    name = f"sr-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=60)
    return name


def _value(i: int) -> dict:
    return {"id": i, "amount": i * 0.25, "customer": f"customer-{i % 1000:04d}", "currency": "EUR"}


def make_serializer(url: str) -> Callable[..., bytes]:
    """confluent-kafka's AvroSerializer of the bench's record, on ``url``'s registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

    client = SchemaRegistryClient({"url": url})
    return AvroSerializer(client, avro_schema("Order"))


def produce(
    bootstrap: str,
    topic: str,
    records: int,
    serializer: Callable[..., bytes] | None,
    encoded: bytes,
) -> float:
    """Seconds from the first send to the last acknowledgement."""
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 5,
            "delivery.report.only.error": True,
            "queue.buffering.max.messages": 1_000_000,
        },
        on_delivery=on_delivery,
    )
    context = SerializationContext(topic, MessageField.VALUE)
    started = time.perf_counter()
    values = (
        encoded if serializer is None else serializer(_value(i), context) for i in range(records)
    )
    produce_all(producer, topic, values)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or left:
        raise MeasurementError(f"{len(failures)} failed, {left} unacked: {failures[:1]}")
    return elapsed


def serialize_only(url: str, records: int) -> dict[str, float]:
    serializer = make_serializer(url)
    context = SerializationContext(f"serialize-only-{uuid.uuid4().hex[:6]}", MessageField.VALUE)
    serializer(_value(0), context)  # registers; the id is cached from here on
    started = time.perf_counter()
    for i in range(records):
        serializer(_value(i), context)
    return {"records_per_s": records / (time.perf_counter() - started)}


def measure_produce(
    running: RunningBroker, url: str, records: int, rounds: int
) -> dict[str, dict | str]:
    """Per kind, the median over ``rounds`` (kinds alternate within a round)."""
    serializer = make_serializer(url)
    runs: dict[str, list[dict]] = {kind: [] for kind in PRODUCE_KINDS}
    failed: dict[str, str] = {}
    # Warm-up on a topic of its own (the JVM's JIT; the serializer's first registration).
    warm = create_topic(running.bootstrap)
    encoded = serializer(_value(0), SerializationContext(warm, MessageField.VALUE))
    for _ in range(rounds):
        for kind in PRODUCE_KINDS:
            if kind in failed:
                continue
            use = serializer if kind == "avro" else None
            try:
                if not runs[kind]:
                    produce(running.bootstrap, warm, WARMUP_RECORDS, use, encoded)
                topic = create_topic(running.bootstrap)
                if use is not None:  # the topic's subject registered before the clock starts
                    use(_value(0), SerializationContext(topic, MessageField.VALUE))
                window = CpuWindow(running.proc.pid)
                window.start()
                seconds = produce(running.bootstrap, topic, records, use, encoded)
                window.stop()
            except Exception as exc:  # the client's error is this measurement's answer
                failed[kind] = f"{type(exc).__name__}: {str(exc)[:200]}"
                continue
            runs[kind].append(
                {
                    "records_per_s": records / seconds,
                    "value_bytes": len(encoded),
                    "broker_cpu_s_per_100k": window.broker_s / records * 100_000,
                    "client_core_share": window.busiest_thread[1],
                }
            )
    results: dict[str, dict | str] = dict(failed)
    for kind, figures in runs.items():
        if kind not in failed and figures:
            results[kind] = {key: statistics.median(f[key] for f in figures) for key in figures[0]}
    return results


# -- runs and report -------------------------------------------------------------------------


def start(broker: Broker, registry: ProcessRegistry, scratch: Path) -> RunningBroker | str:
    reason = broker.unavailable_reason()
    if reason:
        return f"unavailable: {reason}"
    workdir = Path(tempfile.mkdtemp(prefix=f"{broker.name}-", dir=scratch))
    try:
        return broker.start(registry, workdir, START_TIMEOUT_S)
    except Exception as exc:  # reported; the rest of the bench still runs
        return f"did not start: {str(exc).splitlines()[0]}"


def report(results: dict) -> None:
    print("schema registry latency (kafkette), one client, one kept-alive HTTP connection")
    latencies = results["latency"]
    if isinstance(latencies, str):
        print(f"  n/a: {latencies}")
    else:
        print(
            "  "
            + "call".ljust(24)
            + "calls".rjust(7)
            + "p50 ms".rjust(9)
            + "p99 ms".rjust(9)
            + "mean ms".rjust(9)
        )
        for name, f in latencies.items():
            print(
                f"  {name.ljust(24)}{f['calls']:7d}{f['p50_ms']:9.2f}{f['p99_ms']:9.2f}"
                f"{f['mean_ms']:9.2f}"
            )
    print(f"  no registry-to-registry comparison: {NO_REGISTRY_PEER}")
    records, rounds = results["records"], results["rounds"]
    sizes = {
        figures["value_bytes"]
        for runs in results["produce"].values()
        if isinstance(runs, dict)
        for figures in runs.values()
        if isinstance(figures, dict)
    }
    size = f"{int(min(sizes))}-byte values" if sizes else "values"
    print()
    print(
        f"produce throughput, {records} records of {size}, one partition, acks=1, linger.ms=5,"
        f" median of {rounds} rounds; records/s (broker CPU s per 100k records)"
    )
    brokers = [b for b in results["produce"]]
    width = 22
    print("  " + "value".ljust(16) + "".join(b.rjust(width) for b in brokers))
    notes = []
    for kind in PRODUCE_KINDS:
        cells = []
        for broker in brokers:
            value = results["produce"][broker]
            value = value.get(kind, value) if isinstance(value, dict) else value
            if isinstance(value, str):
                cells.append("n/a".rjust(width))
                notes.append(f"  {broker} {kind}: {value}")
            else:
                cell = f"{value['records_per_s']:8.0f} ({value['broker_cpu_s_per_100k']:.2f})"
                cells.append(cell.rjust(width))
        label = "avro serializer" if kind == "avro" else "ready bytes"
        print("  " + label.ljust(16) + "".join(cells))
    only = results.get("serialize_only")
    if isinstance(only, dict):
        print(f"  serialize only (no broker): {only['records_per_s']:.0f} records/s")

    def rate(broker: str, kind: str) -> float | None:
        value = results["produce"].get(broker)
        if not isinstance(value, dict) or not isinstance(value.get(kind), dict):
            return None
        return value[kind]["records_per_s"]

    for broker in brokers:
        avro, plain = rate(broker, "avro"), rate(broker, "bytes")
        if avro and plain:
            share = results["produce"][broker]["avro"]["client_core_share"]
            print(
                f"  {broker}: avro / bytes {avro / plain:.2f} (client thread at "
                f"{share:.0%} of a core with avro)"
            )
    for kind in PRODUCE_KINDS:
        ours, theirs = rate("kafkette", kind), rate("kafka", kind)
        if ours and theirs:
            print(f"  kafkette / Apache Kafka, {kind}: {ours / theirs:.2f}")
    for note in notes:
        print(note)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registers", type=int, default=200, help="registers per kind")
    parser.add_argument("--lookups", type=int, default=500)
    parser.add_argument("--gets", type=int, default=1000, help="GET /schemas/ids/{id} calls")
    parser.add_argument("--records", type=int, default=50_000, help="records per produce")
    parser.add_argument("--rounds", type=int, default=3, help="produce rounds (median)")
    parser.add_argument("--brokers", default="kafkette,kafka", help="from: kafkette, kafka")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    if "kafkette" not in names or any(n not in ("kafkette", "kafka") for n in names):
        parser.error("--brokers: kafkette (it serves the registry), optionally kafka")
    registry = ProcessRegistry()
    results: dict = {"records": args.records, "rounds": args.rounds, "produce": {}, "versions": {}}
    with tempfile.TemporaryDirectory(prefix="sr-bench-") as scratch:
        try:
            ours = RegistryKafkette()
            results["versions"]["kafkette"] = ours.version()
            running = start(ours, registry, Path(scratch))
            if isinstance(running, str):
                print(f"kafkette {running}")
                return 1
            url = registry_url(running)
            try:
                results["latency"] = measure_latencies(url, args.registers, args.lookups, args.gets)
            except Exception as exc:
                results["latency"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            results["serialize_only"] = serialize_only(url, args.records)
            results["produce"]["kafkette"] = measure_produce(
                running, url, args.records, args.rounds
            )
            if "kafka" in names:  # kafkette stays up: its registry serves the serializer
                kafka = ApacheKafka()
                other = start(kafka, registry, Path(scratch))
                results["versions"]["kafka"] = kafka.version()
                if isinstance(other, str):
                    results["produce"]["kafka"] = other
                else:
                    results["produce"]["kafka"] = measure_produce(
                        other, url, args.records, args.rounds
                    )
                    other.stop()
            running.stop()
        finally:
            registry.stop_all()
    print("brokers: " + ", ".join(f"{n} {v}" for n, v in results["versions"].items()))
    report(results)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
