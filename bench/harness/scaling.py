"""Scaling with work: many clients, many partitions, and a broker holding many idle partitions.

``scaling``: for 1, 4 and 16 concurrent producers, then as many consumers, over topics of 1, 16
and 256 partitions (nine cells per broker, each a few seconds). Every client is its own process
(bench.harness.load_client), so the harness's GIL is not what is measured. Producers write
100 B records, acks=1, linger.ms=5, record i to partition i mod P; consumers read what the
producers wrote, the partitions dealt out round-robin (with fewer partitions than consumers
each partition has several readers, as several consumer groups would). Figures: aggregate
records/s of each phase and the broker's CPU seconds per million records produced.

``idle-partitions``: 10,000 partitions (quick: 2,000) in topics of 1,000, then idle: creation time,
RSS, the broker's CPU use while nothing happens (per-partition timers and scans show here), and
the round trip of a full Metadata request (every topic, v7) answered over those partitions.
"""

from __future__ import annotations

import socket
import statistics
import time

from .load_client import ClientGroup
from .probe import api_versions, metadata_all_topics
from .processes import CpuWindow
from .workloads import Context, WorkloadError, create_topic

CLIENTS = (1, 4, 16)
PARTITIONS = (1, 16, 256)
RECORD_SIZE = 100
IDLE_CPU_WINDOW_S = 5.0
METADATA_SAMPLES = 9
# Kafka refuses one CreateTopics of 10,000 partitions (more than its 10,000 records a controller
# operation: POLICY_VIOLATION "excessively large batch"), and so does kafkette: topics of 1,000.
IDLE_TOPIC_PARTITIONS = 1_000


def cell_key(partitions: int, clients: int, figure: str) -> str:
    return f"scaling.p{partitions}.c{clients}.{figure}"


def _assignments(partitions: int, clients: int) -> list[list[int]]:
    if partitions >= clients:
        return [list(range(index, partitions, clients)) for index in range(clients)]
    return [[index % partitions] for index in range(clients)]


def _run_cell(ctx: Context, partitions: int, clients: int) -> dict[str, float]:
    seconds = ctx.sizes.scaling_seconds
    topic = f"scale-p{partitions}-c{clients}"
    create_topic(ctx, topic, partitions=partitions)
    common = ["--bootstrap", ctx.broker.bootstrap, "--topic", topic]
    producers = [["produce", *common, "--partitions", str(partitions), "--size",
                  str(RECORD_SIZE), "--seconds", str(seconds)] for _ in range(clients)]
    window = CpuWindow(ctx.broker.proc.pid)
    with ClientGroup(producers) as group:
        group.start()
        window.start()
        group.go()
        results = group.results(timeout_s=seconds + 90)
        window.stop()
    errors = [result["error"] for result in results if result["error"]]
    if errors:
        raise WorkloadError(f"{topic} producer: {errors[0]}")
    produced = sum(result["records"] for result in results)
    figures = {
        cell_key(partitions, clients, "produce_per_s"):
            produced / max(result["seconds"] for result in results),
        cell_key(partitions, clients, "broker_cpu_s_per_m"): window.broker_s / (produced / 1e6),
    }
    consumers = [["consume", *common, "--assign", ",".join(map(str, assigned)), "--seconds",
                  str(2 * seconds), "--group", f"scale-{index}"]
                 for index, assigned in enumerate(_assignments(partitions, clients))]
    with ClientGroup(consumers) as group:
        group.start()
        group.go()
        results = group.results(timeout_s=2 * seconds + 90)
    errors = [result["error"] for result in results if result["error"]]
    if errors:
        raise WorkloadError(f"{topic} consumer: {errors[0]}")
    slowest = max(result["seconds"] for result in results)
    if slowest > 0:
        figures[cell_key(partitions, clients, "consume_per_s")] = (
            sum(result["records"] for result in results) / slowest
        )
    return figures


def scaling(ctx: Context) -> dict[str, float]:
    figures: dict[str, float] = {}
    for partitions in PARTITIONS:
        for clients in CLIENTS:
            ctx.note(f"{clients} producers/consumers over {partitions} partitions")
            figures.update(_run_cell(ctx, partitions, clients))
    return figures


def idle_partitions(ctx: Context) -> dict[str, float]:
    count = ctx.sizes.idle_partitions
    topics = -(-count // IDLE_TOPIC_PARTITIONS)
    create_s = 0.0
    for index in range(topics):  # one request per topic, as Kafka caps a request's records
        ctx.note(f"create {count:,} partitions: topic {index + 1} of {topics}")
        partitions = min(IDLE_TOPIC_PARTITIONS, count - index * IDLE_TOPIC_PARTITIONS)
        create_s += create_topic(ctx, f"idle-{index}", partitions=partitions, timeout_s=300)
    time.sleep(1.0)
    ctx.note("idle")
    window = CpuWindow(ctx.broker.proc.pid)
    window.start()
    time.sleep(IDLE_CPU_WINDOW_S)
    window.stop()
    rss = ctx.broker.rss_mb()
    ctx.note("Metadata round trips")
    times_ms = []
    with socket.create_connection((ctx.broker.host, ctx.broker.port), timeout=30) as sock:
        api_versions(sock)
        for index in range(METADATA_SAMPLES + 1):
            started = time.perf_counter()
            size = metadata_all_topics(sock, correlation_id=100 + index)
            if index:  # the first one warms caches on both sides
                times_ms.append((time.perf_counter() - started) * 1e3)
    return {
        "idle.create_s": create_s,
        "idle.rss_mb": rss,
        "idle.cpu_pct": 100 * window.broker_s / window.wall_s,
        "idle.metadata_ms": statistics.median(times_ms),
        "idle.metadata_kb": size / 1000,
    }
