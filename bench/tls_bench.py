"""Produce and consume throughput over TLS beside plaintext, kafkette and Apache Kafka in the
same run (issue 19).

Run ``python -m bench.tls_bench`` from the repository root (``--records`` per measurement,
default 200,000; ``--size`` bytes per record, default 1024; ``--rounds``, default 1;
``--brokers kafkette,kafka``; ``--json``). The test CA comes from ``kafkette.testing_tls``
(the ``cryptography`` package, a test dependency).

Each broker in turn is started fresh and alone with two listeners, ``PLAINTEXT`` and ``SSL``
(the same ``listeners`` / ``ssl.keystore.*`` lines for both: a PKCS12 keystore, no client
authentication), kafkette with a fresh data dir, Apache Kafka from ``KAFKA_HOME`` or the
reference distribution's ``kafka-ref home`` (one KRaft node, as ``bench.harness.brokers``
starts it).
One confluent-kafka client per measurement, one partition:

- ``produce`` over each listener: ``acks=1``, ``linger.ms=5``, ``--records`` zero-filled
  records to a fresh topic (after 2,000 records of warm-up on that listener), records/s from
  the first send to the last acknowledgement;
- ``consume`` over each listener: the plaintext-produced topic read from offset 0 by an
  assigned consumer (no group); the clock starts when the first batch arrives (that batch is
  not counted, as in ``bench.harness.workloads``). Both reads find the data in the page cache.

Beside records/s and MB/s: the broker's CPU seconds per GB moved (its process tree, from
/proc). A fetch over TLS cannot use sendfile (the bytes go through the TLS library in user
space), so the consume figures show that cost. A broker that cannot start or fails a
measurement prints ``n/a`` with the reason; the others still run. A script, not a test:
figures depend on the machine (run it on a quiet one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .harness.brokers import HOST, ApacheKafka, Broker, Kafkette, RunningBroker
from .harness.processes import CpuWindow, ProcessRegistry
from .harness.producing import produce_all
from .harness.raw_wire import free_port

MB = 1_000_000
GB = 1_000_000_000
START_TIMEOUT_S = 120.0
LISTENERS = ("plaintext", "tls")
MEASUREMENTS = tuple(f"{kind} {listener}" for kind in ("produce", "consume") for listener in
                     LISTENERS)


class MeasurementError(Exception):
    """A measurement failed on this broker (shown as n/a with the reason)."""


def tls_lines(tls_dir: Path, password: str) -> dict[str, str]:
    """The broker's TLS lines (Kafka's names), the same for kafkette and Apache Kafka."""
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(tls_dir / "broker.p12"),
        "ssl.keystore.password": password,
        "ssl.key.password": password,
    }


class TlsKafkette(Kafkette):
    """kafkette with ``listeners=PLAINTEXT://...,SSL://...`` instead of ``--listen``."""

    def __init__(self, tls_dir: Path, password: str) -> None:
        super().__init__()
        self.tls = tls_lines(tls_dir, password)
        self.ssl_port = 0

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        data_dir = workdir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        log_path = workdir / "broker.log"
        port, self.ssl_port = free_port(), free_port()
        while self.ssl_port == port:
            self.ssl_port = free_port()
        lines = {
            "listeners": f"PLAINTEXT://{HOST}:{port},SSL://{HOST}:{self.ssl_port}",
            **self.tls,
        }
        argv = [*self._command(), "serve", "--data-dir", str(data_dir)]
        for config in [*self.configs, *(f"{k}={v}" for k, v in lines.items())]:
            argv += ["--config", config]
        launched = time.perf_counter()
        proc = registry.spawn(argv, log_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self._finish_start(registry, proc, log_path, launched, port,
                                  launched + timeout_s)


class TlsApacheKafka(ApacheKafka):
    """Apache Kafka (one KRaft node) with a PLAINTEXT and an SSL listener."""

    def __init__(self, tls_dir: Path, password: str) -> None:
        super().__init__()
        self.tls = tls_lines(tls_dir, password)
        self.ssl_port = 0

    def _write_config(self, workdir: Path, port: int, controller_port: int) -> Path:
        self.ssl_port = free_port()
        while self.ssl_port in (port, controller_port):
            self.ssl_port = free_port()
        plain, ssl = f"PLAINTEXT://{HOST}:{port}", f"SSL://{HOST}:{self.ssl_port}"
        self.configs = {
            "listeners": f"{plain},{ssl},CONTROLLER://{HOST}:{controller_port}",
            "advertised.listeners": f"{plain},{ssl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
            **self.tls,
        }
        return super()._write_config(workdir, port, controller_port)


def _settings(running: RunningBroker, listener: str, ssl_port: int, ca: Path) -> dict:
    if listener == "plaintext":
        return {"bootstrap.servers": running.bootstrap}
    return {
        "bootstrap.servers": f"{HOST}:{ssl_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca),
    }


def create_topic(running: RunningBroker) -> str:
    name = f"tls-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": running.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=60)
    return name


def produce(settings: dict, topic: str, size: int, records: int) -> float:
    """Seconds from the first send to the last acknowledgement of ``records`` records."""
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer({
        **settings, "acks": "1", "linger.ms": 5, "delivery.report.only.error": True,
        "queue.buffering.max.messages": 1_000_000,
    }, on_delivery=on_delivery)
    value = bytes(size)
    started = time.perf_counter()
    produce_all(producer, topic, (value for _ in range(records)))
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or left:
        raise MeasurementError(f"{len(failures)} failed, {left} unacked: {failures[:1]}")
    return elapsed


def consume(settings: dict, topic: str, records: int, cap_s: float = 120.0) -> tuple[int, float]:
    """(records counted, seconds): read ``records`` from offset 0; the clock starts when the
    first batch arrived, whose records are not counted."""
    consumer = Consumer({**settings, "group.id": "tls-bench", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        received, counted_from, started = 0, 0, 0.0
        deadline = time.perf_counter() + cap_s
        while received < records and time.perf_counter() < deadline:
            messages = consumer.consume(num_messages=min(10_000, records - received), timeout=0.5)
            for message in messages:
                if message.error():
                    raise MeasurementError(f"consume error: {message.error()}")
            received += len(messages)
            if messages and not started:
                started, counted_from = time.perf_counter(), received
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    if received < records:
        raise MeasurementError(f"consumed only {received} of {records} records in {cap_s:.0f} s")
    if received - counted_from < records // 2:
        raise MeasurementError("the first fetch returned most of the topic: too few records")
    return received - counted_from, elapsed


def _figures(records: int, size: int, seconds: float, broker_cpu_s: float) -> dict[str, float]:
    return {
        "records_per_s": records / seconds,
        "mb_per_s": records * size / seconds / MB,
        "broker_cpu_s_per_gb": broker_cpu_s / (records * size / GB),
    }


def run_broker(
    broker: Broker, registry: ProcessRegistry, scratch: Path, ca: Path, records: int, size: int
) -> dict[str, dict | str]:
    """Every measurement on one fresh broker: figures, or the reason it failed."""
    reason = broker.unavailable_reason()
    if reason:
        return dict.fromkeys(MEASUREMENTS, f"unavailable: {reason}")
    workdir = Path(tempfile.mkdtemp(prefix=f"{broker.name}-", dir=scratch))
    try:
        running = broker.start(registry, workdir, START_TIMEOUT_S)
    except Exception as exc:  # any start failure is reported, the other brokers still run
        return dict.fromkeys(MEASUREMENTS, f"did not start: {str(exc).splitlines()[0]}")
    ssl_port = broker.ssl_port  # type: ignore[attr-defined]
    results: dict[str, dict | str] = {}
    produced: dict[str, str] = {}
    try:
        for name in MEASUREMENTS:
            kind, listener = name.split()
            settings = _settings(running, listener, ssl_port, ca)
            window = CpuWindow(running.proc.pid)
            try:
                if kind == "produce":
                    produce(settings, create_topic(running), size, 2_000)  # warm-up
                    topic = produced[listener] = create_topic(running)
                    window.start()
                    seconds = produce(settings, topic, size, records)
                    window.stop()
                    results[name] = _figures(records, size, seconds, window.broker_s)
                else:
                    if "plaintext" not in produced:
                        raise MeasurementError("no topic: the plaintext produce failed")
                    window.start()
                    counted, seconds = consume(settings, produced["plaintext"], records)
                    window.stop()
                    results[name] = _figures(counted, size, seconds, window.broker_s)
            except Exception as exc:  # the client's error is the answer for this broker
                results[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            if not running.alive():
                exited = f"broker exited: {running.log_tail(3)}"
                for rest in MEASUREMENTS:
                    results.setdefault(rest, exited)
                break
    finally:
        running.stop()
    return results


def report(runs: dict[str, list[dict]], brokers: list[str], records: int, size: int) -> dict:
    """Prints the table (median over rounds); returns the medians."""
    medians: dict[str, dict[str, dict | str]] = {}
    for broker in brokers:
        for name in MEASUREMENTS:
            figures = [r[name] for r in runs[broker] if isinstance(r[name], dict)]
            if figures:
                medians.setdefault(name, {})[broker] = {
                    key: statistics.median(f[key] for f in figures) for key in figures[0]
                }
            else:
                reasons = {r[name] for r in runs[broker]}
                medians.setdefault(name, {})[broker] = "n/a: " + "; ".join(sorted(reasons))
    print(f"throughput over TLS and plaintext, {size}-byte records, {records} records per "
          "measurement, one partition, one confluent-kafka client; median of rounds;")
    print("each cell: MB/s (broker CPU seconds per GB)")
    width = 24
    print("  " + "measurement".ljust(20) + "".join(b.rjust(width) for b in brokers))
    notes = []
    for name in MEASUREMENTS:
        cells = []
        for broker in brokers:
            value = medians[name][broker]
            if isinstance(value, str):
                cells.append("n/a".rjust(width))
                notes.append(f"  {broker} {name}: {value.removeprefix('n/a: ')}")
            else:
                cell = f"{value['mb_per_s']:7.1f} ({value['broker_cpu_s_per_gb']:5.1f})"
                cells.append(cell.rjust(width))
        print("  " + name.ljust(20) + "".join(cells))

    def rate(name: str, broker: str) -> float | None:
        value = medians[name][broker]
        return value["records_per_s"] if isinstance(value, dict) else None

    for broker in brokers:
        for kind in ("produce", "consume"):
            tls, plain = rate(f"{kind} tls", broker), rate(f"{kind} plaintext", broker)
            if tls and plain:
                print(f"  {broker}: {kind} over TLS / plaintext: {tls / plain:.2f}")
    if "kafkette" in brokers and "kafka" in brokers:
        for name in MEASUREMENTS:
            ours, theirs = rate(name, "kafkette"), rate(name, "kafka")
            if ours and theirs:
                print(f"  kafkette / Apache Kafka, {name}: {ours / theirs:.2f}")
    for note in notes:
        print(note)
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000, help="records per measurement")
    parser.add_argument("--size", type=int, default=1024, help="bytes per record")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per broker")
    parser.add_argument("--brokers", default="kafkette,kafka", help="from: kafkette, kafka")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    from kafkette.testing_tls import make_tls_material

    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    if not names or any(n not in ("kafkette", "kafka") for n in names):
        parser.error("--brokers: choose from kafkette, kafka")
    registry = ProcessRegistry()
    runs: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="tls-bench-") as scratch:
        tls = make_tls_material(Path(scratch) / "tls")
        makers = {"kafkette": TlsKafkette, "kafka": TlsApacheKafka}
        brokers = {name: makers[name](tls.directory, tls.password) for name in names}
        try:
            for _ in range(args.rounds):
                for name in names:
                    one = run_broker(brokers[name], registry, Path(scratch), tls.ca_pem,
                                     args.records, args.size)
                    runs[name].append(one)
        finally:
            registry.stop_all()
    versions = {name: brokers[name].version() for name in names}
    print("brokers: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    medians = report(runs, names, args.records, args.size)
    if args.json:
        print(json.dumps({"versions": versions, "records": args.records, "size": args.size,
                          "runs": runs, "medians": medians}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
