"""Fetch (and produce) throughput and broker CPU per MB: a PLAINTEXT listener vs an SSL one.

Run ``python -m bench.fetch_over_tls [--mb 200] [--rounds 3]``. One ``kafkette serve``
with both listeners (TLS material from ``kafkette.testing_tls``) holds one topic of
``--mb`` MB of 1 KiB records; each round reads the whole topic with a confluent-kafka
consumer from each listener in turn (PLAINTEXT, SSL, PLAINTEXT, SSL ...) and reads the
broker process's CPU time around it; then produces ``--mb`` MB through each listener
the same way. Prints per listener the median MB/s and broker CPU ms per MB, and the
SSL/PLAINTEXT ratio of each.

Over TLS the broker cannot sendfile: each Fetch response's file regions are read in one
worker-thread hop and encrypted by OpenSSL on the event loop (broker/response_writer.py).
The CPU per MB says what that costs; the MB/s is what a consumer sees on this machine
(the client decrypts too, on the same cores).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer

from kafkette.testing_tls import make_tls_material

from .produce_cost import broker_cpu_s

RECORD = 1024
LISTENING = re.compile(r"listening on ([A-Z]+)://(\S+):(\d+),")


def start_broker(directory: Path) -> tuple[subprocess.Popen[str], dict[str, str], Path]:
    material = make_tls_material(directory / "tls")
    properties = directory / "server.properties"
    properties.write_text(
        "\n".join(
            [
                "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "ssl.keystore.type=PKCS12",
                f"ssl.keystore.location={material.broker_p12}",
                f"ssl.keystore.password={material.password}",
                "log.cleaner.enable=false",
            ]
        )
        + "\n"
    )
    log_path = directory / "broker.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkette", "serve", "--config-file", str(properties),
         "--data-dir", str(directory / "data")],
        stdout=subprocess.PIPE, stderr=log_path.open("wb"), text=True,
    )
    assert process.stdout is not None
    ready = process.stdout.readline()
    if not ready.startswith("kafkette ready on"):
        raise SystemExit(f"broker did not start:\n{log_path.read_text()}")
    endpoints = {m[0]: f"{m[1]}:{m[2]}" for m in LISTENING.findall(log_path.read_text())}
    return process, endpoints, material.ca_pem


def fill(
    bootstrap: str, topic: str, megabytes: int, extra: dict[str, str] | None = None
) -> int:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20, **(extra or {})}
    )
    value = os.urandom(RECORD // 2).hex().encode()[:RECORD]
    count = megabytes * 1024
    for index in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
        if index % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return count


def read_all(bootstrap: str, topic: str, count: int, extra: dict[str, str]) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.bytes": 50 << 20,
            "max.partition.fetch.bytes": 10 << 20,
            **extra,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    started = 0.0
    deadline = time.monotonic() + 300
    while seen < count and time.monotonic() < deadline:
        messages = consumer.consume(10000, 1.0)
        if messages and not started:
            started = time.perf_counter()
        seen += sum(1 for m in messages if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen < count:
        raise SystemExit(f"read {seen} of {count} records from {bootstrap}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkette-fetch-tls-") as tmp:
        process, endpoints, ca = start_broker(Path(tmp))
        try:
            topic = "fetch-tls"
            count = fill(endpoints["PLAINTEXT"], topic, args.mb)
            clients = {
                "PLAINTEXT": {},
                "SSL": {"security.protocol": "SSL", "ssl.ca.location": str(ca)},
            }
            fetches: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
            produces: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
            for _ in range(args.rounds):
                for name, extra in clients.items():
                    before = broker_cpu_s(process.pid)
                    elapsed = read_all(endpoints[name], topic, count, extra)
                    cpu = broker_cpu_s(process.pid) - before
                    fetches[name].append((args.mb / elapsed, cpu * 1000 / args.mb))
            for round_ in range(args.rounds):
                for name, extra in clients.items():
                    before = broker_cpu_s(process.pid)
                    started = time.perf_counter()
                    fill(endpoints[name], f"produce-{name}-{round_}", args.mb, extra)
                    elapsed = time.perf_counter() - started
                    cpu = broker_cpu_s(process.pid) - before
                    produces[name].append((args.mb / elapsed, cpu * 1000 / args.mb))
        finally:
            process.terminate()
            process.wait(30)
    for what, figures in (("fetch", fetches), ("produce", produces)):
        print(f"{what} of {args.mb} MB (1 KiB records), {args.rounds} rounds, median:")
        medians = {}
        for name, points in figures.items():
            rate = statistics.median(p[0] for p in points)
            cpu = statistics.median(p[1] for p in points)
            medians[name] = (rate, cpu)
            print(f"  {name:9} {rate:8.1f} MB/s   broker CPU {cpu:6.2f} ms/MB")
        plain, secured = medians["PLAINTEXT"], medians["SSL"]
        print(
            f"  SSL/PLAINTEXT: throughput x{secured[0] / plain[0]:.2f},"
            f" broker CPU per MB x{secured[1] / max(plain[1], 1e-9):.2f}"
        )


if __name__ == "__main__":
    main()
