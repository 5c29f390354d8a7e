"""Many partitions under a small descriptor limit: create, produce, consume, restart.

    python -m bench.many_partitions [--partitions 10000] [--nofile 1024] [--sample 100]

Starts ``kafkette serve`` with ``RLIMIT_NOFILE`` lowered (as ``ulimit -n``),
creates one topic of ``--partitions`` partitions (CreateTopics up to Kafka's
10,000-records-per-operation bound, then CreatePartitions in steps), produces
one record to each of ``--sample`` partitions, consumes them back, stops the
broker cleanly, restarts it and consumes again, then produces once more, kills
it (SIGKILL), restarts (recovery of every partition) and reads both records.
Prints descriptors in use, times and RSS at each step; exits non-zero if
anything was lost.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.harness.serve_process import ServeProcess, serve_args

# Kafka's controller writes at most 10,000 records per operation (topic + partitions).
CREATE_STEP = 9_999
GROW_STEP = 10_000


def create(bootstrap: str, topic: str, partitions: int) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    started = time.perf_counter()
    first = min(partitions, CREATE_STEP)
    admin.create_topics([NewTopic(topic, first, 1)], operation_timeout=300)[topic].result(300)
    total = first
    while total < partitions:
        total = min(partitions, total + GROW_STEP)
        admin.create_partitions([NewPartitions(topic, total)], operation_timeout=300)[
            topic
        ].result(300)
    return time.perf_counter() - started


def produce(bootstrap: str, topic: str, sample: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failures: list[object] = []
    for p in sample:
        producer.produce(topic, f"v{p}".encode(), partition=p,
                         on_delivery=lambda err, _m: err and failures.append(err))
    if producer.flush(120) or failures:
        raise SystemExit(f"produce failed: {failures[:3]}")


def consume(bootstrap: str, topic: str, sample: list[int]) -> dict[int, bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-many",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in sample])
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 120
    while len(got) < len(sample) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got[message.partition()] = message.value()
    consumer.close()
    return got


def consume_all(bootstrap: str, topic: str, sample: list[int], each: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-many-2",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in sample])
    got: list[bytes] = []
    deadline = time.monotonic() + 120
    while len(got) < each * len(sample) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.close()
    return got


def start(data_dir: Path, log_path: Path, nofile: int) -> ServeProcess:
    """A fresh ``kafkette serve`` on ``data_dir`` under ``ulimit -n nofile``, once ready."""
    return ServeProcess(serve_args(data_dir), log_path, append_log=True, nofile=nofile).wait_ready(
        300
    )


def clean_stop(broker: ServeProcess) -> float:
    """SIGTERM and wait; the seconds the clean stop took. A non-zero exit ends the bench."""
    started = time.perf_counter()
    code = broker.terminate(300)
    if code != 0:
        raise SystemExit(f"broker exited with {code}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--sample", type=int, default=100)
    args = parser.parse_args()
    topic = "many"
    step = max(1, args.partitions // args.sample)
    sample = sorted({*range(0, args.partitions, step), args.partitions - 1})
    expected = {p: f"v{p}".encode() for p in sample}
    with tempfile.TemporaryDirectory(prefix="kafkette-many-") as tmp:
        data_dir = Path(tmp) / "data"
        log_path = Path(tmp) / "broker.log"
        broker = start(data_dir, log_path, args.nofile)
        print(f"{'ulimit -n':<36}{args.nofile:>10}")
        print(f"{'start, empty (s)':<36}{broker.ready_s:>10.2f}")
        created_s = create(broker.bootstrap, topic, args.partitions)
        print(f"{'create ' + str(args.partitions) + ' partitions (s)':<36}{created_s:>10.2f}")
        print(f"{'fds after create':<36}{broker.fds():>10}")
        produce(broker.bootstrap, topic, sample)
        ok = consume(broker.bootstrap, topic, sample) == expected
        print(f"{'fds after produce+consume':<36}{broker.fds():>10}")
        print(f"{'RSS (MB)':<36}{broker.rss_mb():>10.1f}")
        print(f"{'clean stop (s)':<36}{clean_stop(broker):>10.2f}")
        dirs = sum(1 for d in data_dir.iterdir() if d.name.startswith(topic + "-"))
        print(f"{'partition directories':<36}{dirs:>10}")
        broker = start(data_dir, log_path, args.nofile)
        print(f"{'restart until ready (s)':<36}{broker.ready_s:>10.2f}")
        print(f"{'fds after restart':<36}{broker.fds():>10}")
        again = consume(broker.bootstrap, topic, sample) == expected
        print(f"{'fds after consume':<36}{broker.fds():>10}")
        print(f"{'RSS after restart (MB)':<36}{broker.rss_mb():>10.1f}")
        produce(broker.bootstrap, topic, sample)
        broker.kill()
        broker = start(data_dir, log_path, args.nofile)
        print(f"{'restart after kill -9 (s)':<36}{broker.ready_s:>10.2f}")
        print(f"{'fds after recovery':<36}{broker.fds():>10}")
        twice = len(consume_all(broker.bootstrap, topic, sample, 2)) == 2 * len(sample)
        clean_stop(broker)
        verdict = f"{ok}/{again}/{twice}"
        print(f"{'sample read back: first/clean/crash':<36}{verdict:>16}")
        return 0 if ok and again and twice and dirs == args.partitions else 1


if __name__ == "__main__":
    sys.exit(main())
