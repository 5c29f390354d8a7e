"""Fetch with and without KIP-227 sessions, 1,000 partitions.

    python -m bench.fetch_sessions_bench [--partitions 1000] [--records 100] [--tail-s 10]
                                         [--java] [--modes sessions,nosessions]

For each mode a fresh ``kafkette serve`` is started (``nosessions``:
``max.incremental.fetch.session.cache.slots=0``, Kafka's switch: every full fetch is
answered with session id 0, so the client keeps sending full fetches), one topic of
``--partitions`` partitions is filled with ``--records`` records per partition
(100 bytes each), and a consumer on our wire codec that behaves as the Java client's
FetchSessionHandler (full fetch with epoch 0; then only the partitions whose fetch
offset moved, epoch + 1; full fetches again when the broker answers session id 0)
measures, with Fetch 17:

- catch-up: reading everything back with ``fetch.max.bytes`` 256 KiB (many fetches):
  records/s, request and response bytes per fetch, broker CPU ms per fetch;
- tail: a producer writes to 10 random partitions every 20 ms while the consumer
  long-polls (max_wait 500 ms, min_bytes 1): the same figures, where most partitions
  have nothing new and a session leaves them out of both request and answer.

``--java`` also runs ``kafka-consumer-perf-test.sh`` (the Java 4.0 consumer, which
uses sessions) from the reference distribution against each broker and prints its
records/s and fetch count (the tool prints no request sizes: the bytes per request come
from our own consumer above).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.serve_process import ServeProcess, serve_args
from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import NEED_DATA, ClientConnection

VERSION = 17  # --version 12 fetches by topic name (to compare with a broker capped at 12)
_BATCH = struct.Struct(">qi")
_DELTA = struct.Struct(">i")
REPO = Path(__file__).resolve().parents[1]


class SessionConsumer:
    """A consumer of every partition of one topic, on our codec, with sessions as the
    Java client keeps them. Counts the bytes of each request and answer."""

    def __init__(self, bootstrap: str, topic_id: uuid.UUID, partitions: int,
                 max_bytes: int, partition_max_bytes: int, topic: str = "",
                 version: int = VERSION) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.conn = ClientConnection()
        self.topic_id = topic_id
        self.topic = topic
        self.version = version
        self.offsets = dict.fromkeys(range(partitions), 0)
        self.max_bytes = max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.session_id = 0
        self.epoch = 0
        self.changed: set[int] = set()
        self.fetches = self.request_bytes = self.response_bytes = self.records = 0

    def _partition(self, index: int) -> dict:
        return {"partition": index, "current_leader_epoch": -1,
                "fetch_offset": self.offsets[index], "last_fetched_epoch": -1,
                "log_start_offset": -1, "partition_max_bytes": self.partition_max_bytes}

    def fetch(self, max_wait_ms: int) -> None:
        if self.session_id == 0:  # full fetch: every partition, asking for a session
            wanted = list(self.offsets)
            epoch = 0
        else:
            wanted = sorted(self.changed)
            epoch = self.epoch
        body = {
            "replica_state": {"replica_id": -1, "replica_epoch": -1}, "replica_id": -1,
            "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": self.max_bytes,
            "isolation_level": 0, "session_id": self.session_id, "session_epoch": epoch,
            "topics": [{"topic_id": self.topic_id, "topic": self.topic,
                        "partitions": [self._partition(i) for i in wanted]}] if wanted else [],
            "forgotten_topics_data": [], "rack_id": "",
        }
        frame = self.conn.send_request(ApiKey.FETCH, self.version, body, "fetch-sessions-bench")
        self.sock.sendall(frame)
        self.request_bytes += len(frame)
        received = 0
        while (response := self.conn.next_response()) is NEED_DATA:
            data = self.sock.recv(1 << 20)
            if not data:
                raise SystemExit("broker closed the connection")
            received += len(data)
            self.conn.receive_data(data)
        self.response_bytes += received
        self.fetches += 1
        answer = response.body
        if answer["error_code"]:
            raise SystemExit(f"fetch error {answer['error_code']}")
        self.changed = set()
        for topic in answer["responses"]:
            for part in topic["partitions"]:
                if part["error_code"]:
                    raise SystemExit(f"partition error {part['error_code']}")
                records = part["records"]
                if records:
                    index = part["partition_index"]
                    next_offset, count = _next_offset(records, self.offsets[index])
                    if next_offset > self.offsets[index]:
                        self.records += count
                        self.offsets[index] = next_offset
                        self.changed.add(index)
        if answer["session_id"] != self.session_id or self.session_id == 0:
            self.session_id = answer["session_id"]
            self.epoch = 1
        else:
            self.epoch += 1

    def close(self) -> None:
        self.sock.close()


def _next_offset(records: bytes | memoryview, fetch_offset: int) -> tuple[int, int]:
    """The offset after the last whole batch, and how many offsets from fetch_offset."""
    pos = 0
    last = -1
    end = len(records)
    while pos + 27 <= end:
        base, length = _BATCH.unpack_from(records, pos)
        if pos + 12 + length > end:
            break  # a partial batch at the end of the answer
        (delta,) = _DELTA.unpack_from(records, pos + 23)
        last = base + delta
        pos += 12 + length
    if last < 0:
        return fetch_offset, 0
    return last + 1, last + 1 - fetch_offset


def _fill(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 1000, "log_level": 0})
    value = b"x" * 100
    for i in range(records):
        for p in range(partitions):
            producer.produce(topic, value, partition=p)
            if p % 5000 == 0:
                producer.poll(0)
        del i
    if producer.flush(300):
        raise SystemExit("produce did not finish")


def _topic_id(consumer: SessionConsumer, topic: str) -> uuid.UUID:
    body = {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    consumer.sock.sendall(consumer.conn.send_request(ApiKey.METADATA, 12, body, "bench"))
    while (response := consumer.conn.next_response()) is NEED_DATA:
        consumer.conn.receive_data(consumer.sock.recv(1 << 20))
    return response.body["topics"][0]["topic_id"]


def _figures(label: str, consumer: SessionConsumer, seconds: float, cpu: float) -> None:
    fetches = max(1, consumer.fetches)
    print(f"  {label:9s} {consumer.records / seconds:>12,.0f} records/s  "
          f"{consumer.fetches:>6} fetches  {consumer.request_bytes / fetches:>9,.0f} B/request  "
          f"{consumer.response_bytes / fetches:>10,.0f} B/answer  "
          f"{cpu * 1000 / fetches:>7.2f} broker CPU ms/fetch", flush=True)


def run_mode(mode: str, args: argparse.Namespace) -> None:
    configs = {"max.incremental.fetch.session.cache.slots": "0" if mode == "nosessions" else "1000"}
    print(f"Fetch v{args.version}", end=" ", flush=True)
    with tempfile.TemporaryDirectory(prefix="fetch-sessions-bench-") as tmp:
        serve = ServeProcess(
            serve_args(Path(tmp) / "data", configs=configs), Path(tmp) / "data.log"
        ).wait_ready(120)
        try:
            topic = "bench-sessions"
            admin = AdminClient({"bootstrap.servers": serve.bootstrap, "log_level": 0})
            admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(120)
            _fill(serve.bootstrap, topic, args.partitions, args.records)
            total = args.partitions * args.records
            print(f"{mode}: {args.partitions} partitions, {total:,} records", flush=True)

            probe = SessionConsumer(serve.bootstrap, uuid.UUID(int=0), 0, 0, 0)
            topic_id = _topic_id(probe, topic)
            probe.close()

            consumer = SessionConsumer(serve.bootstrap, topic_id, args.partitions,
                                       256 * 1024, 64 * 1024, topic, args.version)
            cpu0, started = serve.cpu_s(), time.perf_counter()
            deadline = started + 300
            while consumer.records < total and time.perf_counter() < deadline:
                consumer.fetch(max_wait_ms=500)
            _figures("catch-up", consumer, time.perf_counter() - started, serve.cpu_s() - cpu0)
            if consumer.records != total:
                raise SystemExit(f"read {consumer.records} of {total} records")

            stop = threading.Event()
            produced = [0]

            def produce_tail() -> None:
                producer = Producer(
                    {"bootstrap.servers": serve.bootstrap, "linger.ms": 0, "log_level": 0}
                )
                rng = random.Random(1)
                while not stop.is_set():
                    for p in rng.sample(range(args.partitions), 10):
                        producer.produce(topic, b"y" * 100, partition=p)
                        produced[0] += 1
                    producer.poll(0)
                    time.sleep(0.02)
                producer.flush(60)

            tail = SessionConsumer.__new__(SessionConsumer)
            tail.__dict__.update(consumer.__dict__)
            tail.fetches = tail.request_bytes = tail.response_bytes = tail.records = 0
            writer = threading.Thread(target=produce_tail, daemon=True)
            writer.start()
            cpu0, started = serve.cpu_s(), time.perf_counter()
            while time.perf_counter() - started < args.tail_s:
                tail.fetch(max_wait_ms=500)
            elapsed = time.perf_counter() - started
            cpu = serve.cpu_s() - cpu0
            stop.set()
            writer.join(60)
            _figures("tail", tail, elapsed, cpu)
            tail.close()
            if args.java:
                _java(serve.bootstrap, topic, total)
        finally:
            serve.terminate(120)


def _java(bootstrap: str, topic: str, total: int) -> None:
    script = None
    for base in (REPO.parent / "shared" / "reference-kafka",
                 REPO.parent.parent / "shared" / "reference-kafka"):
        if (base / "kafka-ref").exists():
            script = base / "kafka-ref"
    if script is None:
        print("  java: reference distribution not found", flush=True)
        return
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as props:
        props.write("max.partition.fetch.bytes=65536\nfetch.max.bytes=262144\n")
    try:
        result = subprocess.run(
            [str(script), "bin", "kafka-consumer-perf-test.sh", "--bootstrap-server", bootstrap,
             "--topic", topic, "--messages", str(total), "--timeout", "120000",
             "--print-metrics", "--group", f"perf-{uuid.uuid4().hex[:6]}",
             "--consumer.config", props.name],
            capture_output=True, text=True, timeout=600,
        )
    finally:
        os.unlink(props.name)
    out = result.stdout
    line = next((ln for ln in out.splitlines() if ln.count(",") >= 9 and ln[:1].isdigit()), "")
    fetches = re.search(r"consumer-fetch-manager-metrics:fetch-total:\{client-id=[^}]+\}\s*:\s*"
                        r"([\d.]+)", out)
    # The header: start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms,
    # fetch MB/s, fetch records/s (the perf tool prints no request-size metric).
    print(f"  java perf-test: {line.strip() or result.stderr[-400:]}", flush=True)
    print(f"  java fetches: {fetches.group(1) if fetches else '?'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--records", type=int, default=100, help="per partition")
    parser.add_argument("--tail-s", type=float, default=10.0)
    parser.add_argument("--java", action="store_true")
    parser.add_argument("--version", type=int, default=VERSION, help="Fetch version (12-17)")
    parser.add_argument("--modes", default="sessions,nosessions")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        run_mode(mode, args)


if __name__ == "__main__":
    main()
