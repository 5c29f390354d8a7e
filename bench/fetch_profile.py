"""Where a consumer's Fetch costs go, on any broker: fill a topic, consume it, print the figures.

    python -m bench.fetch_profile --bootstrap HOST:PORT --pid PID [--size 100] [--records N]

Fills a fresh topic with ``--records`` records of ``--size`` bytes (confluent-kafka producer,
acks=1, linger.ms=5, partitions round-robin), then consumes it from offset 0 with a
confluent-kafka consumer and prints, beside the rate:

- how the producer batched (records per batch, from librdkafka's own ``batchcnt`` statistics):
  the consumer's work per record depends on it, and a producer batches differently against
  brokers that acknowledge at different speeds;
- Fetch requests and bytes per Fetch response (librdkafka's broker statistics);
- the broker's CPU seconds per million records consumed (``/proc/PID/stat`` utime+stime, when
  ``--pid`` is given): a figure that survives a noisy machine, unlike the rate.

``--start-kafkette`` starts a fresh ``kafkette serve`` (in a temporary data dir) and uses it.
Run it against the reference Kafka (``kafka-ref start 19092``; its pid from ``kafka-ref``) for
the same figures beside it. ``--consume-only TOPIC`` consumes an existing topic again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.serve_process import ServeProcess

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of ``pid`` (all threads), in seconds; 0 without a pid."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def log_layout(log_dir: str, topic: str) -> dict[str, float]:
    """Batches and records per batch as stored (Kafka and kafkette share the file format)."""
    from kafkette.log.batch_scan import scan_batches
    from kafkette.log.file_region import SegmentFile

    batches = records = 0
    for path in sorted(Path(log_dir).glob(f"{topic}-*/*.log")):
        file = SegmentFile(path, create=False)
        try:
            for _pos, header in scan_batches(file, 0, file.size(), validate=False):
                batches += 1
                records += header.last_offset - header.base_offset + 1
        finally:
            file.close()
    return {"stored_batches": batches,
            "stored_records_per_batch": records / batches if batches else 0.0}


def start_kafkette(configs: list[str]) -> tuple[subprocess.Popen[str], str, str]:
    """A fresh ``kafkette serve`` (``configs``: ``key=value``) once ready: its process, its
    bootstrap and its data dir (the log is beside it, ``<data dir>.log``)."""
    data_dir = tempfile.mkdtemp(prefix="fetch-profile-")
    args = ["--listen", "127.0.0.1:0", "--data-dir", data_dir, "--log-level", "WARNING"]
    for config in configs:
        args += ["--config", config]
    serve = ServeProcess(args, Path(data_dir + ".log")).wait_ready(120)
    return serve.proc, serve.bootstrap, data_dir


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    deadline = time.time() + 30
    while time.time() < deadline:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        if meta and meta.error is None and len(meta.partitions) == partitions and all(
            p.leader >= 0 for p in meta.partitions.values()
        ):
            return
        time.sleep(0.05)
    raise SystemExit(f"{topic} not led in time")


def fill(bootstrap: str, topic: str, partitions: int, size: int, records: int,
         linger_ms: int, batch_records: int) -> dict[str, float]:
    """Produce ``records``; returns the producer's batching (records per batch, batches)."""
    stats: list[dict] = []
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "1", "linger.ms": linger_ms,
        "queue.buffering.max.messages": 1_000_000, "statistics.interval.ms": 1000,
        "batch.num.messages": batch_records,
        "stats_cb": lambda s: stats.append(json.loads(s)),
    })
    value = bytes(size)
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.001)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(60)
    seconds = time.perf_counter() - started
    time.sleep(1.1)
    producer.poll(0)
    t = stats[-1]["topics"][topic] if stats and topic in stats[-1]["topics"] else None
    figures = {"produce_s": seconds}
    if t is not None:
        figures["producer_records_per_batch_avg"] = t["batchcnt"]["avg"]
        figures["producer_batch_bytes_avg"] = t["batchsize"]["avg"]
        figures["producer_batches_sampled"] = t["batchcnt"]["cnt"]
    return figures


def consume(bootstrap: str, topic: str, partitions: int, records: int, pid: int | None,
            extra: dict[str, str]) -> dict[str, float]:
    stats: list[dict] = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"fp-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False, "statistics.interval.ms": 500,
        "stats_cb": lambda s: stats.append(json.loads(s)), **extra,
    })
    records = min(records, sum(
        consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(partitions)
    ))
    # The clock runs from the first Fetch (the topic's partitions are already known): with
    # many partitions the first responses alone can hold most of the topic.
    consumer.list_topics(topic, timeout=10)
    received = counted_from = 0
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    while received < records:
        msgs = consumer.consume(min(10_000, records - received), 2.0)
        if not msgs and time.perf_counter() - t0 > 120:
            break
        received += len(msgs)
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    time.sleep(0.6)
    consumer.poll(0)
    consumer.close()
    fetches = rxbytes = 0
    rtt_avg = rtt_p99 = 0.0
    for broker in (stats[-1]["brokers"].values() if stats else []):
        if broker.get("nodeid", -1) < 0:
            continue
        fetches += broker.get("req", {}).get("Fetch", 0)
        rxbytes += broker.get("rxbytes", 0)
        # The last window's round trips (request sent to response read), in microseconds.
        rtt_avg = max(rtt_avg, broker["rtt"]["avg"] / 1000)
        rtt_p99 = max(rtt_p99, broker["rtt"]["p99"] / 1000)
    rtts = [b["rtt"]["avg"] / 1000 for s in stats for b in s["brokers"].values()
            if b.get("nodeid", -1) >= 0 and b["rtt"]["cnt"]]
    counted = received - counted_from
    figures = {
        "records": received,
        "records_per_s": counted / seconds,
        "seconds": seconds,
        "fetch_requests": fetches,
        "bytes_per_fetch": rxbytes / fetches if fetches else 0.0,
        "records_per_fetch": received / fetches if fetches else 0.0,
        "fetch_rtt_ms_median_window": sorted(rtts)[len(rtts) // 2] if rtts else 0.0,
    }
    if pid is not None:
        figures["broker_cpu_s"] = cpu
        figures["broker_cpu_s_per_M_records"] = cpu / counted * 1e6
        figures["broker_cpu_share"] = cpu / seconds
    return figures


def raw_fetches(bootstrap: str, topic: str, partitions: int, count: int, partition_bytes: int,
                pid: int | None, offset: int = 0) -> dict[str, float]:
    """``count`` Fetch requests (v12, one at a time, same offsets) over one socket: the
    broker's cost per request with no client work in the way (responses are not decoded)."""
    import socket
    import struct

    from kafkette.wire.apis import ApiKey
    from kafkette.wire.client_connection import ClientConnection

    body = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 * 1024 * 1024,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": offset,
             "last_fetched_epoch": -1, "log_start_offset": -1,
             "partition_max_bytes": partition_bytes}
            for p in range(partitions)]}],
        "forgotten_topics_data": [], "rack_id": "",
    }
    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    conn = ClientConnection()
    frame = conn.send_request(ApiKey.FETCH, 12, body, "fetch-profile")
    frames = [frame]
    for _ in range(count):
        frames.append(ClientConnection().send_request(ApiKey.FETCH, 12, body, "fetch-profile"))

    def exchange(request: bytes) -> int:
        sock.sendall(request)
        head = sock.recv(4, socket.MSG_WAITALL)
        size = struct.unpack(">i", head)[0]
        left = size
        while left:
            got = len(sock.recv(min(left, 1 << 20)))
            if not got:
                raise SystemExit("broker closed the connection")
            left -= got
        return size

    size = exchange(frames[0])  # warm-up
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    total = 0
    for request in frames[1:]:
        total += exchange(request)
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    sock.close()
    return {"fetches": count, "response_bytes": size, "fetches_per_s": count / seconds,
            "broker_cpu_us_per_fetch": cpu / count * 1e6,
            "wall_us_per_fetch": seconds / count * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap")
    parser.add_argument("--pid", type=int)
    parser.add_argument("--start-kafkette", action="store_true")
    parser.add_argument("--kafkette-config", action="append", default=[])
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-records", type=int, default=10_000,
                        help="producer batch.num.messages (librdkafka's default 10000)")
    parser.add_argument("--consume-only", metavar="TOPIC")
    parser.add_argument("--rounds", type=int, default=1, help="consume the topic this many times")
    parser.add_argument("-X", action="append", default=[], help="consumer config key=value")
    parser.add_argument("--log-dir", help="the broker's data dir, to count stored batches")
    parser.add_argument("--raw-fetches", type=int, metavar="N",
                        help="instead of a consumer: N raw Fetch requests, one at a time")
    parser.add_argument("--raw-partition-bytes", type=int, default=16384)
    parser.add_argument("--hold", action="store_true", help="keep the started broker until Enter")
    args = parser.parse_args()
    proc = None
    bootstrap, pid = args.bootstrap, args.pid
    if args.start_kafkette:
        proc, bootstrap, args.log_dir = start_kafkette(args.kafkette_config)
        pid = proc.pid
        print(f"kafkette pid {pid} on {bootstrap}", flush=True)
    try:
        topic = args.consume_only or f"fp-{args.size}-{uuid.uuid4().hex[:6]}"
        if not args.consume_only:
            create_topic(bootstrap, topic, args.partitions)
            print(topic, fill(bootstrap, topic, args.partitions, args.size, args.records,
                              args.linger_ms, args.batch_records), flush=True)
        if args.log_dir:
            time.sleep(1)  # Kafka writes through the page cache; the files are readable
            print(log_layout(args.log_dir, topic), flush=True)
        if args.raw_fetches:
            figures = raw_fetches(bootstrap, topic, args.partitions, args.raw_fetches,
                                  args.raw_partition_bytes, pid)
            print({k: round(v, 3) for k, v in figures.items()},
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            return
        extra = dict(x.split("=", 1) for x in args.X)
        for _ in range(args.rounds):
            figures = consume(bootstrap, topic, args.partitions, args.records, pid, extra)
            load = os.getloadavg()[0]
            print({k: round(v, 3) for k, v in figures.items()}, f"load {load:.2f}", flush=True)
        if args.hold:
            input("Enter to stop> ")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
