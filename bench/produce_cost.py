"""Broker CPU per produced MB, and throughput, for two kafkette builds side by side.

Run ``python -m bench.produce_cost --bin before=/venv-a/bin/kafkette --bin
after=/venv-b/bin/kafkette``. For each round, each point (100 B / 1 KiB records,
uncompressed and with codecs) and each build in turn (A B A B ...), starts a fresh
``kafkette serve``, produces the same records with confluent-kafka (acks=1,
linger.ms=5) and reads the broker process's CPU time (all threads, from
``/proc/PID/task/*/schedstat``) around the produce. Prints per point the median records/s and broker
CPU ms per MB of record payload.

Why CPU: on a shared 2-core machine throughput swings with whatever else runs, while
the broker's CPU per MB barely does, and that is what validating batches changes.
Values are half random, half repeated text, so codecs have realistic work.

``--perf-test`` measures instead what Kafka's own ``kafka-producer-perf-test.sh`` costs
the broker with its defaults (16 KiB batches, linger.ms=5, a 3-partition topic, acks=1;
1 KiB and 100 B records): broker CPU microseconds per Produce request (counted by the
broker's metrics endpoint) and per stored batch (counted in the segment files), the
figures the per-batch and per-request work of the produce path shows in.
``--raw`` measures the same without a JVM: pre-encoded Produce v9 requests of one
batch per partition (3 partitions; 15 x 1 KiB or 130 x 100 B records, about the
perf test's 16 KiB batches), five in flight on one connection, so only the broker's
work is timed and the figure barely moves with the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import re
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import free_port, read_frame
from bench.harness.serve_process import ServeProcess

POINTS = [
    (100, "none"),
    (1024, "none"),
    (100, "lz4"),
    (1024, "lz4"),
    (100, "zstd"),
    (1024, "zstd"),
    (100, "snappy"),
    (1024, "snappy"),
    (100, "gzip"),
    (1024, "gzip"),
]


def broker_cpu_s(pid: int) -> float:
    """CPU seconds of every live thread of ``pid`` (``schedstat``: ns, not 10 ms ticks).

    Trio's worker threads stay cached for seconds after use, so none exits mid-measure.
    """
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e9


@contextlib.contextmanager
def fresh_broker(
    binary: str, extra: tuple[str, ...] = ()
) -> Iterator[tuple[int, str, Path]]:
    """``<binary> serve`` on a free port in a temporary data dir, once ready: (its pid, its
    bootstrap, its data dir); stopped and its data removed on the way out. ``extra``: more ``serve``
    arguments."""
    data_dir = Path(tempfile.mkdtemp(prefix="kafkette-cost-"))
    serve = ServeProcess(
        ["--listen", "127.0.0.1:0", "--data-dir", str(data_dir / "data"), *extra],
        data_dir / "broker.log",
        command=[binary, "serve"],
    )
    try:
        serve.wait_ready(30)
        yield serve.proc.pid, serve.bootstrap, data_dir / "data"
    finally:
        if serve.proc.poll() is None:
            serve.terminate(10)
        shutil.rmtree(data_dir, ignore_errors=True)


def produce(bootstrap: str, topic: str, values: list[bytes], count: int, codec: str) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 5,
            "compression.type": codec,
            "queue.buffering.max.messages": 1_000_000,
            "delivery.report.only.error": True,
        }
    )
    failures: list[object] = []
    on_delivery = _fail_to(failures)
    next_value = itertools.cycle(values).__next__
    started = time.perf_counter()
    for sent in range(count):
        if sent % 1000 == 0:
            producer.poll(0)
        while True:
            try:
                producer.produce(topic, next_value(), partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
    left = producer.flush(60)
    if left or failures:
        raise RuntimeError(f"{left} unacknowledged, {len(failures)} failed: {failures[:1]}")
    return time.perf_counter() - started


def _fail_to(failures: list[object]) -> object:
    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    return on_delivery


def one_run(binary: str, size: int, codec: str, megabytes: float) -> tuple[float, float]:
    """(records/s, broker CPU ms per MB) for one fresh broker."""
    with fresh_broker(binary) as (pid, bootstrap, _):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("cost", 1, 1)])["cost"].result(15)
        rnd = random.Random(size)
        text = b"kafkette bench value " * (size // 20 + 1)
        values = [rnd.randbytes(size // 2) + text[: size - size // 2] for _ in range(256)]
        produce(bootstrap, "cost", values, 2000, codec)  # warm-up
        count = int(megabytes * 1e6) // size
        cpu_before = broker_cpu_s(pid)
        seconds = produce(bootstrap, "cost", values, count, codec)
        cpu = broker_cpu_s(pid) - cpu_before
        return count / seconds, cpu * 1000 / (count * size / 1e6)


PERF_TOPIC = "perf-cost"
PRODUCE_REQUESTS = re.compile(
    r'^kafka_network_requestmetrics_requests_total\{request="Produce",[^}]*\} ([\d.e+]+)$', re.M
)


def produce_requests(metrics_port: int) -> int:
    """Produce requests answered so far, all versions (the broker's metrics endpoint)."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return int(sum(float(count) for count in PRODUCE_REQUESTS.findall(text)))


def stored_batches(data_dir: Path, topic: str) -> int:
    """Record batches in the topic's segment files (8-byte offset, 4-byte length framing)."""
    count = 0
    for segment in data_dir.glob(f"{topic}-*/*.log"):
        data = segment.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            if length <= 0:
                break
            pos += 12 + length
            count += 1
    return count


def perf_test_run(binary: str, home: Path, size: int, records: int) -> dict[str, float]:
    """One fresh broker, one ``kafka-producer-perf-test.sh`` run with its defaults (acks=1)."""
    metrics_port = free_port()
    tool = home / "bin" / "kafka-producer-perf-test.sh"
    metrics = ("--metrics-listen", f"127.0.0.1:{metrics_port}")
    with (
        fresh_broker(binary, metrics) as (pid, bootstrap, data),
        tempfile.TemporaryDirectory() as logs,
    ):
        env = {
            "KAFKA_HOME": str(home),
            "LOG_DIR": logs,
            "KAFKA_HEAP_OPTS": "-Xmx512m",
            "PATH": "/usr/bin:/bin",
        }
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(PERF_TOPIC, 3, 1)])[PERF_TOPIC].result(15)
        requests_before = produce_requests(metrics_port)
        cpu_before = broker_cpu_s(pid)
        done = subprocess.run(
            [
                str(tool),
                "--topic",
                PERF_TOPIC,
                "--num-records",
                str(records),
                "--record-size",
                str(size),
                "--throughput",
                "-1",
                "--producer-props",
                f"bootstrap.servers={bootstrap}",
                "acks=1",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=True,
        )
        cpu = broker_cpu_s(pid) - cpu_before
        requests = produce_requests(metrics_port) - requests_before
        batches = stored_batches(data, PERF_TOPIC)
        rate = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", done.stdout)
        return {
            "records_per_s": float(rate[-1][1]) if rate else 0.0,
            "us_per_request": cpu * 1e6 / max(requests, 1),
            "us_per_batch": cpu * 1e6 / max(batches, 1),
            "batches_per_request": batches / max(requests, 1),
        }


def perf_test_main(builds: dict[str, str], rounds: int, records_1k: int) -> int:
    """Broker CPU per Produce request and per batch under kafka-producer-perf-test."""
    from bench.harness.brokers import reference_kafka_home

    home = reference_kafka_home()
    if home is None:
        raise SystemExit("kafka-producer-perf-test.sh needs KAFKA_HOME or the reference Kafka")
    points = [(1024, records_1k), (100, records_1k * 5)]
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(rounds):
        for size, records in points:
            for name, binary in builds.items():
                results.setdefault((name, size), []).append(
                    perf_test_run(binary, home, size, records)
                )
    print(
        f"{'build':>10} {'record':>6} | {'rec/s':>9} {'CPU us/request':>15} "
        f"{'CPU us/batch':>13} {'batches/request':>16}"
    )
    for size, _ in points:
        for name in builds:
            runs = results[(name, size)]
            cells = [
                statistics.median(run[key] for run in runs)
                for key in (
                    "records_per_s",
                    "us_per_request",
                    "us_per_batch",
                    "batches_per_request",
                )
            ]
            print(
                f"{name:>10} {size:>6} | {cells[0]:>9,.0f} {cells[1]:>15,.0f} "
                f"{cells[2]:>13,.0f} {cells[3]:>16.2f}"
            )
    return 0


RAW_POINTS = [(1024, 15), (100, 130)]  # (record bytes, records per batch): ~16 KiB batches
RAW_PARTITIONS = 3
RAW_IN_FLIGHT = 5


def _produce_frame(correlation_id: int, batch: bytes) -> bytes:
    """One framed Produce v9 request (acks=1): ``batch`` for each of the partitions."""
    from kafkette.wire.codec import message_codec

    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 30_000,
        "topic_data": [
            {
                "name": PERF_TOPIC,
                "partition_data": [
                    {"index": index, "records": batch} for index in range(RAW_PARTITIONS)
                ],
            }
        ],
    }
    client_id = b"produce-cost"
    header = struct.pack(">hhih", 0, 9, correlation_id, len(client_id)) + client_id + b"\0"
    message = header + message_codec("ProduceRequest", 9).encode(body)
    return struct.pack(">i", len(message)) + message


def _pipeline(sock: socket.socket, frames: list[bytes]) -> None:
    """Send ``frames`` with RAW_IN_FLIGHT unanswered at most; read every answer."""
    sent = answered = 0
    while answered < len(frames):
        while sent - answered < RAW_IN_FLIGHT and sent < len(frames):
            sock.sendall(frames[sent])
            sent += 1
        read_frame(sock)
        answered += 1


def raw_run(binary: str, size: int, per_batch: int, requests: int) -> dict[str, float]:
    """One fresh broker: CPU per request and per batch for ``requests`` pipelined Produces."""
    from kafkette.wire.records import build_batch_from_values

    with fresh_broker(binary) as (pid, bootstrap, _):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(PERF_TOPIC, RAW_PARTITIONS, 1)])[PERF_TOPIC].result(15)
        batch = build_batch_from_values([(None, b"x" * size)] * per_batch)
        frames = [_produce_frame(index, batch) for index in range(requests)]
        host, _, port = bootstrap.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            _pipeline(sock, frames[: requests // 10])  # warm-up
            cpu_before = broker_cpu_s(pid)
            started = time.perf_counter()
            _pipeline(sock, frames)
            seconds = time.perf_counter() - started
            cpu = broker_cpu_s(pid) - cpu_before
        return {
            "requests_per_s": requests / seconds,
            "us_per_request": cpu * 1e6 / requests,
            "us_per_batch": cpu * 1e6 / (requests * RAW_PARTITIONS),
        }


def raw_main(builds: dict[str, str], rounds: int, requests: int) -> int:
    """Broker CPU per Produce request and per batch, pipelined raw requests."""
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(rounds):
        for size, per_batch in RAW_POINTS:
            for name, binary in builds.items():
                results.setdefault((name, size), []).append(
                    raw_run(binary, size, per_batch, requests)
                )
    print(f"{'build':>10} {'record':>6} | {'req/s':>7} {'CPU us/request':>15} {'CPU us/batch':>13}")
    for size, _ in RAW_POINTS:
        for name in builds:
            runs = results[(name, size)]
            rate, per_request, per_batch = (
                statistics.median(run[key] for run in runs)
                for key in ("requests_per_s", "us_per_request", "us_per_batch")
            )
            low = min(run["us_per_batch"] for run in runs)
            high = max(run["us_per_batch"] for run in runs)
            print(
                f"{name:>10} {size:>6} | {rate:>7,.0f} {per_request:>15,.0f} "
                f"{per_batch:>6,.0f} ({low:,.0f}-{high:,.0f})"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=float, default=20.0, help="payload MB per point")
    parser.add_argument("--points", default="", help="e.g. 100:none,1024:lz4 (default: all)")
    parser.add_argument(
        "--perf-test",
        action="store_true",
        help="CPU per request and per batch under kafka-producer-perf-test.sh",
    )
    parser.add_argument(
        "--records",
        type=int,
        default=200_000,
        help="--perf-test: 1 KiB records per run (5x as many 100 B ones)",
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="CPU per request and per batch for pipelined raw Produce requests (no JVM)",
    )
    parser.add_argument("--requests", type=int, default=3000, help="--raw: requests per run")
    args = parser.parse_args(argv)
    builds = dict(item.split("=", 1) for item in args.bin)
    if args.raw:
        return raw_main(builds, args.rounds, args.requests)
    if args.perf_test:
        return perf_test_main(builds, args.rounds, args.records)
    points = POINTS
    if args.points:
        points = [(int(s), c) for s, c in (p.split(":") for p in args.points.split(","))]
    results: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for size, codec in points:
            for name, binary in builds.items():
                results.setdefault((name, size, codec), []).append(
                    one_run(binary, size, codec, args.mb)
                )
    names = list(builds)
    print(
        f"{'record':>6} {'codec':>6} | "
        + " | ".join(f"{n + ' rec/s':>14} {n + ' CPU ms/MB':>18}" for n in names)
    )
    for size, codec in points:
        cells = []
        for name in names:
            runs = results[(name, size, codec)]
            rate = statistics.median(r for r, _ in runs)
            cost = statistics.median(c for _, c in runs)
            low, high = min(c for _, c in runs), max(c for _, c in runs)
            cells.append(f"{rate:>14,.0f} {cost:>6.2f} ({low:.2f}-{high:.2f})")
        print(f"{size:>6} {codec:>6} | " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
