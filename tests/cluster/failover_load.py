"""Producers under acks=all idempotent load, for the failover tests: one per client family.

A plain module (no pytest), loaded by path from the cluster tests. Each
``run_*`` produces ``count`` distinct values (``<prefix>-<n>``) to one topic
while ``on_progress(acked)`` lets the test act mid-run (kill -9 a leader), and
returns the values the client saw acknowledged. A value acknowledged is a
promise: the test then reads the topic and checks each one is there exactly
once. Every producer retries through the leader change on its own (that is
what the test proves); none is told about the failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[int], None]
# Long enough to ride out a leader change (session timeout + election + metadata refresh).
DELIVERY_TIMEOUT_MS = 120_000


def run_confluent(
    bootstrap: str, topic: str, prefix: str, count: int, on_progress: Progress
) -> list[str]:
    """librdkafka: enable.idempotence, acks=all, paced so the run spans the failure."""
    from confluent_kafka import Producer

    acked: list[str] = []
    failed: list[str] = []

    def delivered(error, message) -> None:
        if error is None:
            acked.append(message.value().decode())
        else:
            failed.append(f"{message.value().decode()}: {error}")

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    for n in range(count):
        producer.produce(topic, f"{prefix}-{n}".encode(), on_delivery=delivered)
        producer.poll(0)
        if n % 50 == 49:
            producer.poll(0.02)
            on_progress(len(acked))
    deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000 + 30
    while producer.flush(1.0) and time.monotonic() < deadline:
        on_progress(len(acked))
    assert not failed, f"confluent-kafka deliveries failed: {failed[:5]}"
    return acked


def run_kafka_python(
    bootstrap: str, topic: str, prefix: str, count: int, on_progress: Progress
) -> list[str]:
    """kafka-python: enable_idempotence, acks=all, futures checked at the end."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        retries=2**31 - 1,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
        request_timeout_ms=30_000,
        metadata_max_age_ms=1000,
        retry_backoff_ms=200,
    )
    acked: list[str] = []
    lock = threading.Lock()

    def callback(value: str):
        def done(_metadata) -> None:
            with lock:
                acked.append(value)

        return done

    futures = []
    try:
        for n in range(count):
            value = f"{prefix}-{n}"
            futures.append(producer.send(topic, value.encode()).add_callback(callback(value)))
            if n % 50 == 49:
                time.sleep(0.02)
                with lock:
                    on_progress(len(acked))
        producer.flush(timeout=DELIVERY_TIMEOUT_MS / 1000 + 30)
        errors = [f.exception for f in futures if f.is_done and f.failed()]
        assert not errors, f"kafka-python sends failed: {errors[:5]}"
        with lock:
            return list(acked)
    finally:
        producer.close(timeout=10)


def run_java_verifiable(
    kafka_home: Path, bootstrap: str, topic: str, prefix: str, count: int, on_progress: Progress
) -> list[str]:
    """Kafka's own VerifiableProducer (the Java client of the reference distribution):
    one JSON line per acknowledged record on stdout."""
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as props:
        props.write(
            "enable.idempotence=true\n"
            f"delivery.timeout.ms={DELIVERY_TIMEOUT_MS}\n"
            "request.timeout.ms=30000\n"
            "metadata.max.age.ms=1000\n"
            "linger.ms=5\n"
        )
    cmd = [
        str(kafka_home / "bin" / "kafka-verifiable-producer.sh"),
        "--bootstrap-server", bootstrap,
        "--topic", topic,
        "--max-messages", str(count),
        "--throughput", "1500",
        "--acks", "-1",
        "--value-prefix", "0",
        "--producer.config", props.name,
    ]
    env = dict(os.environ, KAFKA_HEAP_OPTS="-Xmx256m")
    acked: list[str] = []
    failures: list[str] = []
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            if name == "producer_send_success":
                # --value-prefix 0 makes values "0.<n>": rewrite as this run's prefix.
                acked.append(f"{prefix}-{event['value'].split('.', 1)[1]}")
                if len(acked) % 50 == 0:
                    on_progress(len(acked))
            elif name == "producer_send_error":
                failures.append(str(event.get("exception")))
        proc.wait(timeout=DELIVERY_TIMEOUT_MS / 1000 + 60)
    finally:
        os.unlink(props.name)
    assert not failures, f"Java producer sends failed: {failures[:5]}"
    return acked


def java_value(raw: bytes, prefix: str) -> str | None:
    """A record value of ``run_java_verifiable`` as the acknowledged name (None if not one)."""
    text = raw.decode()
    if text.startswith("0."):
        return f"{prefix}-{text[2:]}"
    return None
