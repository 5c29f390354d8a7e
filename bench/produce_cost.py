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
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

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


def start(binary: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    """``<binary> serve`` on a free port, once ready; its log inside ``data_dir``."""
    serve = ServeProcess(["--listen", "127.0.0.1:0", "--data-dir", str(data_dir / "data")],
                         data_dir / "broker.log", command=[binary, "serve"])
    return serve.wait_ready(30).proc, serve.bootstrap


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
    data_dir = Path(tempfile.mkdtemp(prefix="kafkette-cost-"))
    process, bootstrap = start(binary, data_dir)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("cost", 1, 1)])["cost"].result(15)
        rnd = random.Random(size)
        text = b"kafkette bench value " * (size // 20 + 1)
        values = [rnd.randbytes(size // 2) + text[: size - size // 2] for _ in range(256)]
        produce(bootstrap, "cost", values, 2000, codec)  # warm-up
        count = int(megabytes * 1e6) // size
        cpu_before = broker_cpu_s(process.pid)
        seconds = produce(bootstrap, "cost", values, count, codec)
        cpu = broker_cpu_s(process.pid) - cpu_before
        return count / seconds, cpu * 1000 / (count * size / 1e6)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=float, default=20.0, help="payload MB per point")
    parser.add_argument("--points", default="", help="e.g. 100:none,1024:lz4 (default: all)")
    args = parser.parse_args(argv)
    builds = dict(item.split("=", 1) for item in args.bin)
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
