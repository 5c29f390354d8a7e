"""Transactional produce throughput beside idempotent produce, kafkette and Apache Kafka in the
same run (issue 14).

Run ``python -m bench.txn_bench`` from the repository root (``--records`` per measurement,
default 100,000; ``--rounds``, default 1; ``--brokers kafkette,kafka``; ``--json``).

For each round, each broker in turn is started fresh and alone (``bench.harness.brokers``: kafkette
with a fresh data dir, Apache Kafka from ``KAFKA_HOME``, else from the reference distribution's
``kafka-ref home``), and one confluent-kafka producer sends 1 KiB records to one partition:

- ``idempotent``: ``enable.idempotence=true``, ``acks=all``, ``linger.ms=5``;
- (first, unmeasured: 5,000 idempotent records and 10 transactions of 100, to warm up)
- ``txn-100`` / ``txn-10000``: ``transactional.id`` set (so idempotent, acks=all), the same
  records in transactions of 100 and of 10,000 records: begin, produce, commit. A commit
  waits for the coordinator's markers, so small transactions measure commit latency.

The figure is records/s from the first produce to the last acknowledgement (last commit).
Each run is checked: the log ends at records + one marker per transaction and the last stable
offset equals the high watermark (nothing left open). A broker that cannot start or fails a
measurement prints ``n/a`` with the reason; the others still run. A script, not a test:
figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .harness.brokers import Broker, RunningBroker, all_brokers
from .harness.processes import ProcessRegistry
from .harness.producing import produce_all

RECORD_SIZE = 1024
MB = 1024 * 1024
MEASUREMENTS = ("idempotent", "txn-100", "txn-10000")
START_TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[1]


class MeasurementError(Exception):
    """A measurement failed on this broker (shown as n/a with the reason)."""


def _reference_kafka_home() -> str | None:
    """KAFKA_HOME of the reference distribution (``kafka-ref home``), if it is here."""
    given = os.environ.get("KAFKETTE_KAFKA_REF")
    base = Path(given) if given else REPO.parent / "shared" / "reference-kafka"
    script = base if base.name == "kafka-ref" else base / "kafka-ref"
    if not script.is_file():
        return None
    done = subprocess.run(
        [str(script), "home"], capture_output=True, text=True, timeout=180, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def create_topic(bootstrap: str) -> str:
    name = f"txn-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=60)
    return name


def end_offsets(bootstrap: str, topic: str) -> tuple[int, int]:
    """(high watermark, last stable offset) of partition 0."""
    found = []
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "txn-bench", "isolation.level": isolation}
        )
        try:
            marks = consumer.get_watermark_offsets(TopicPartition(topic, 0), 30, cached=False)
            found.append(marks[1])
        finally:
            consumer.close()
    return found[0], found[1]


def _producer(bootstrap: str, extra: dict, failures: list[str]) -> Producer:
    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "delivery.report.only.error": True,
            "queue.buffering.max.messages": 1_000_000,
            **extra,
        },
        on_delivery=on_delivery,
    )


def _send(producer: Producer, topic: str, value: bytes, count: int) -> None:
    produce_all(producer, topic, (value for _ in range(count)))


def produce_idempotent(bootstrap: str, topic: str, records: int) -> tuple[float, int]:
    """Seconds to send ``records`` idempotently; transactions: 0."""
    failures: list[str] = []
    producer = _producer(bootstrap, {"enable.idempotence": True, "acks": "all"}, failures)
    value = bytes(RECORD_SIZE)
    # Off the clock, as init_transactions is for the transactional runs: connection,
    # producer id, the topic's metadata (one record, counted by the caller's check).
    producer.produce(topic, value, partition=0)
    if producer.flush(60):
        raise MeasurementError("the first record was not acknowledged within 60 s")
    started = time.perf_counter()
    _send(producer, topic, value, records)
    left = producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or left:
        raise MeasurementError(f"{len(failures)} failed, {left} unacked: {failures[:1]}")
    return elapsed, 0


def produce_transactional(
    bootstrap: str, topic: str, records: int, per_txn: int
) -> tuple[float, int]:
    """Seconds to send ``records`` in transactions of ``per_txn``; the number of transactions."""
    failures: list[str] = []
    producer = _producer(bootstrap, {"transactional.id": f"txn-bench-{topic}"}, failures)
    producer.init_transactions(30)
    producer.list_topics(topic, timeout=30)  # the topic's metadata, off the clock
    value = bytes(RECORD_SIZE)
    transactions = 0
    started = time.perf_counter()
    for first in range(0, records, per_txn):
        producer.begin_transaction()
        _send(producer, topic, value, min(per_txn, records - first))
        producer.commit_transaction(120)  # flushes, then EndTxn; raises on failed deliveries
        transactions += 1
    elapsed = time.perf_counter() - started
    if failures:
        raise MeasurementError(f"{len(failures)} deliveries failed: {failures[0]}")
    return elapsed, transactions


def measure(bootstrap: str, name: str, records: int) -> dict[str, float]:
    topic = create_topic(bootstrap)
    run: Callable[[], tuple[float, int]]
    if name == "idempotent":
        run = lambda: produce_idempotent(bootstrap, topic, records)  # noqa: E731
    else:
        per_txn = int(name.removeprefix("txn-"))
        run = lambda: produce_transactional(bootstrap, topic, records, per_txn)  # noqa: E731
    seconds, transactions = run()
    high, stable = end_offsets(bootstrap, topic)
    first = 1 if name == "idempotent" else 0  # the idempotent run's off-the-clock record
    if high != first + records + transactions or stable != high:
        raise MeasurementError(
            f"log ends at {high} (LSO {stable}); expected {records} records + "
            f"{transactions} markers, nothing open"
        )
    return {
        "records_per_s": records / seconds,
        "mb_per_s": records * RECORD_SIZE / seconds / MB,
        "transactions": transactions,
    }


def run_broker(
    broker: Broker, registry: ProcessRegistry, scratch: Path, records: int
) -> dict[str, dict | str]:
    """Every measurement on one fresh broker: figures, or the reason it failed."""
    reason = broker.unavailable_reason()
    if reason:
        return dict.fromkeys(MEASUREMENTS, f"unavailable: {reason}")
    workdir = Path(tempfile.mkdtemp(prefix=f"{broker.name}-", dir=scratch))
    try:
        running: RunningBroker = broker.start(registry, workdir, START_TIMEOUT_S)
    except Exception as exc:  # any start failure is reported, the other brokers still run
        return dict.fromkeys(MEASUREMENTS, f"did not start: {str(exc).splitlines()[0]}")
    results: dict[str, dict | str] = {}
    try:
        try:  # warm both paths (a JVM's JIT, kafkette's caches) before the clock runs
            produce_idempotent(running.bootstrap, create_topic(running.bootstrap), 5_000)
            produce_transactional(running.bootstrap, create_topic(running.bootstrap), 1_000, 100)
        except Exception:  # the measurements below report the failure
            pass
        for name in MEASUREMENTS:
            try:
                results[name] = measure(running.bootstrap, name, records)
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


def report(runs: dict[str, list[dict]], brokers: list[str], records: int) -> dict:
    """Prints the table (median over rounds); returns the medians."""
    medians: dict[str, dict[str, float | str]] = {}
    for broker in brokers:
        for name in MEASUREMENTS:
            figures = [r[name] for r in runs[broker] if isinstance(r[name], dict)]
            if figures:
                rate = statistics.median(f["records_per_s"] for f in figures)
                medians.setdefault(name, {})[broker] = rate
            else:
                reasons = {r[name] for r in runs[broker]}
                medians.setdefault(name, {})[broker] = "n/a: " + "; ".join(sorted(reasons))
    print(f"produce throughput, 1 KiB records, {records} records per measurement, one partition,")
    print("one confluent-kafka producer, records/s (MB/s), median of rounds:")
    width = 22
    print("  " + "measurement".ljust(14) + "".join(b.rjust(width) for b in brokers))
    notes = []
    for name in MEASUREMENTS:
        cells = []
        for broker in brokers:
            value = medians[name][broker]
            if isinstance(value, str):
                cells.append("n/a".rjust(width))
                notes.append(f"  {broker} {name}: {value.removeprefix('n/a: ')}")
            else:
                cells.append(f"{value:10.0f} ({value * RECORD_SIZE / MB:5.1f})".rjust(width))
        print("  " + name.ljust(14) + "".join(cells))
    if "kafkette" in brokers and "kafka" in brokers:
        for name in MEASUREMENTS:
            ours, theirs = medians[name]["kafkette"], medians[name]["kafka"]
            if isinstance(ours, float) and isinstance(theirs, float):
                print(f"  kafkette / Apache Kafka, {name}: {ours / theirs:.2f}")
    for note in notes:
        print(note)
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records per measurement")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per broker")
    parser.add_argument("--brokers", default="kafkette,kafka", help="from: kafkette, kafka")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    known = all_brokers()
    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    if not names or any(n not in known for n in names):
        parser.error(f"--brokers: choose from {', '.join(known)}")
    if "kafka" in names and not os.environ.get("KAFKA_HOME"):
        home = _reference_kafka_home()
        if home:
            os.environ["KAFKA_HOME"] = home
    registry = ProcessRegistry()
    runs: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="txn-bench-") as scratch:
        try:
            for _ in range(args.rounds):
                for name in names:
                    one = run_broker(known[name], registry, Path(scratch), args.records)
                    runs[name].append(one)
        finally:
            registry.stop_all()
    versions = {name: known[name].version() for name in names}
    print("brokers: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    medians = report(runs, names, args.records)
    if args.json:
        print(json.dumps({"versions": versions, "records": args.records, "runs": runs,
                          "medians": medians}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
