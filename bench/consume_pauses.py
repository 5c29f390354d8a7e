"""Why consume at 100 B with librdkafka's defaults is a client timer, not a broker figure.

    python -m bench.consume_pauses [--rounds 5] [--records 1000000] [--no-kafka]

With its default queue limits a librdkafka consumer stops fetching a partition for
``fetch.queue.backoff.ms`` (1 s) whenever its local queue holds ``queued.min.messages``
(100,000) records. At 100 B a broker fills that queue in a fraction of a second, so a
consume run is a series of cycles: a *fill phase* (fetching while the application drains,
until the queue reaches 100,000) then a 1 s pause. The records of a cycle are the 100,000
queued plus what the application drained during the fill phase, so the rate is about::

    (100_000 + drain_rate * fill_s) / (fill_s + 1.0)

which *falls* as the broker answers faster (a shorter fill phase). This script measures, for a
fresh kafkette and the reference Apache Kafka in alternating rounds, beside the rate: the
pauses per million records and the mean fill phase (from librdkafka's ``debug=fetch`` lines),
the broker's CPU seconds per million records, and the same consumer's rate with the pause
switched off (``fetch.queue.backoff.ms=0``, queue limits lifted): the figure the broker
decides.

The topic is filled as bench/harness/workloads.py fills it (batches cut at a fixed record count), so
both brokers store and serve the same batches.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import shutil
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.fetch_profile import cpu_seconds, create_topic, start_kafkette
from bench.harness.workloads import UNPAUSED, fill_config

SIZE = 100
KAFKA_REF = Path(__file__).resolve().parents[2] / "shared" / "reference-kafka" / "kafka-ref"


class _FetchPauses(logging.Handler):
    """Collects librdkafka's "queued.min.messages exceeded" debug lines, with times."""

    def __init__(self) -> None:
        super().__init__()
        self.pauses: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "queued.min.messages exceeded" in record.getMessage():
            self.pauses.append(time.perf_counter())


def fill(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer({
        "bootstrap.servers": bootstrap, **fill_config(SIZE),
        "queue.buffering.max.messages": 2_000_000,
    })
    value = bytes(SIZE)
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.005)
    if producer.flush(120):
        raise SystemExit("fill did not finish")


def consume(bootstrap: str, topic: str, records: int, pid: int | None,
            extra: dict[str, str]) -> dict[str, float]:
    pauses = _FetchPauses()
    logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(pauses)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "consume-pauses", "enable.auto.commit": False,
        "debug": "fetch", "logger": logger, **extra,
    })
    consumer.assign([TopicPartition(topic, 0, 0)])
    received = counted_from = 0
    started = 0.0
    cpu_before = 0.0
    deadline = time.perf_counter() + 120
    while received < records and time.perf_counter() < deadline:
        messages = consumer.consume(num_messages=min(10_000, records - received), timeout=0.5)
        received += len(messages)
        if messages and not started:
            started, counted_from, cpu_before = time.perf_counter(), received, cpu_seconds(pid)
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu_before
    consumer.close()
    if received < records:
        raise SystemExit(f"consumed only {received} of {records}")
    timed = [t for t in pauses.pauses if t >= started]
    if not timed and "fetch.queue.backoff.ms" not in extra:
        raise SystemExit("no queued.min.messages pause seen: librdkafka's debug lines changed?")
    # A fill phase: from the end of one pause (pause start + 1 s) to the next pause.
    fills = [b - (a + 1.0) for a, b in itertools.pairwise(timed)]
    counted = received - counted_from
    return {
        "records_per_s": counted / seconds,
        "pauses_per_m": len(timed) / (counted / 1e6),
        "fill_phase_ms": 1000 * statistics.mean(fills) if fills else float("nan"),
        "broker_cpu_s_per_m": cpu / (counted / 1e6) if pid else float("nan"),
    }


def run_round(name: str, bootstrap: str, pid: int | None, records: int) -> dict[str, float]:
    topic = f"pauses-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    fill(bootstrap, topic, records)
    figures = consume(bootstrap, topic, records, pid, {})
    unpaused = consume(bootstrap, topic, records, pid, dict(UNPAUSED))
    figures["unpaused_records_per_s"] = unpaused["records_per_s"]
    print(name, {k: round(v, 2) for k, v in figures.items()},
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--kafka-port", type=int, default=19092)
    parser.add_argument("--no-kafka", action="store_true")
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"kafkette": [], "kafka": []}
    for _ in range(args.rounds):
        proc, bootstrap, data_dir = start_kafkette([])
        try:
            results["kafkette"].append(run_round("kafkette", bootstrap, proc.pid, args.records))
        finally:
            proc.terminate()
            proc.wait(30)
            shutil.rmtree(data_dir, ignore_errors=True)
        if args.no_kafka or not KAFKA_REF.exists():
            continue
        started = subprocess.run([str(KAFKA_REF), "start", str(args.kafka_port)], check=True,
                                 capture_output=True, text=True)
        pid = int(started.stdout.split()[-1])  # kafka-ref prints the JVM's pid last
        try:
            results["kafka"].append(run_round(
                "kafka", f"127.0.0.1:{args.kafka_port}", pid, args.records
            ))
        finally:
            subprocess.run([str(KAFKA_REF), "stop", str(args.kafka_port)], capture_output=True)
    print("\nmedian [min-max] over", args.rounds, "rounds")
    keys = list(results["kafkette"][0])
    for key in keys:
        line = [f"{key:>24}"]
        medians = {}
        for name, rounds in results.items():
            values = [r[key] for r in rounds]
            if not values:
                continue
            medians[name] = statistics.median(values)
            line.append(f"{name} {medians[name]:,.2f} [{min(values):,.2f}-{max(values):,.2f}]")
        if len(medians) == 2 and medians["kafka"]:
            line.append(f"ratio {medians['kafkette'] / medians['kafka']:.2f}x")
        print("  ".join(line))


if __name__ == "__main__":
    main()
