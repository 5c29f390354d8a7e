"""Kafka's own Java perf tools against the broker under test (the ``java-perf`` workload).

``kafka-producer-perf-test.sh`` then ``kafka-consumer-perf-test.sh`` from the Kafka distribution
(``KAFKA_HOME``, else the reference one via ``kafka-ref home``), the way issue 16 states them:
1 KiB records (``java-perf``; ``java-perf-100b``: 100 B records, issue 30's second size), a
3-partition topic, acks=1, 1M records (quick: 200k), a group consumer (the tool subscribes with a
fresh group; both brokers run with group.initial.rebalance.delay.ms=0). The
Java clients are the other half of the Kafka ecosystem: their fetch sessions, batching and
request pipelining differ from librdkafka's. The tools' own figures are reported as printed;
the broker's CPU seconds per million records are read from /proc beside them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .brokers import java_tool_env, reference_kafka_home
from .processes import CpuWindow
from .workloads import Context, WorkloadError, create_topic

TOPIC = "java-perf"
PARTITIONS = 3
PRODUCER_LINE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency"
)


def parse_producer(output: str) -> dict[str, float]:
    """The tool's final summary line (the last match: progress lines come every 5 s)."""
    matches = PRODUCER_LINE.findall(output)
    if not matches:
        raise WorkloadError(f"no summary from kafka-producer-perf-test.sh:\n{output[-1500:]}")
    records, per_s, _mb_s, avg_ms, max_ms = matches[-1]
    return {"records": float(records), "records_per_s": float(per_s), "avg_ms": float(avg_ms),
            "max_ms": float(max_ms)}


def parse_consumer(output: str) -> dict[str, float]:
    """The header line ``start.time, end.time, ...`` and the values line after it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for index, line in enumerate(lines[:-1]):
        if line.startswith("start.time"):
            keys = [key.strip() for key in line.split(",")]
            values = [value.strip() for value in lines[index + 1].split(",")]
            row = dict(zip(keys, values, strict=False))
            try:
                return {key: float(row[key]) for key in
                        ("data.consumed.in.nMsg", "nMsg.sec", "rebalance.time.ms",
                         "fetch.nMsg.sec")}
            except (KeyError, ValueError):
                break
    raise WorkloadError(f"no figures from kafka-consumer-perf-test.sh:\n{output[-1500:]}")


def _run_tool(home: Path, workdir: Path, argv: list[str], timeout_s: float) -> str:
    env = java_tool_env(home, workdir / "tool-logs")
    try:
        done = subprocess.run(
            [str(home / "bin" / argv[0]), *argv[1:]], capture_output=True, text=True, env=env,
            timeout=timeout_s, check=False, start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        raise WorkloadError(f"{argv[0]} did not finish in {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise WorkloadError(
            f"{argv[0]} exited {done.returncode}:\n{(done.stderr + done.stdout)[-1500:]}"
        )
    return done.stdout + done.stderr


def java_perf(ctx: Context) -> dict[str, float]:
    """Both tools with 1 KiB records; figures named ``java-perf.*``."""
    return _java_perf(ctx, 1024, "java-perf")


def java_perf_100b(ctx: Context) -> dict[str, float]:
    """Both tools with 100 B records: more records per batch, so more per-record work."""
    return _java_perf(ctx, 100, "java-perf-100b")


def _java_perf(ctx: Context, record_size: int, name: str) -> dict[str, float]:
    home = reference_kafka_home()
    if home is None or not (home / "bin" / "kafka-producer-perf-test.sh").is_file():
        raise WorkloadError("Kafka's perf tools need KAFKA_HOME (or the reference distribution)")
    records = ctx.sizes.java_perf_records
    workdir = ctx.broker.log_path.parent
    create_topic(ctx, TOPIC, partitions=PARTITIONS)
    timeout_s = max(120.0, 4 * ctx.sizes.cap_s)
    ctx.note(f"kafka-producer-perf-test.sh {records:,} x {record_size} B")
    window = CpuWindow(ctx.broker.proc.pid)
    window.start()
    produced = parse_producer(_run_tool(home, workdir, [
        "kafka-producer-perf-test.sh", "--topic", TOPIC, "--num-records", str(records),
        "--record-size", str(record_size), "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={ctx.broker.bootstrap}", "acks=1",
    ], timeout_s))
    window.stop()
    produce_cpu = window.broker_s
    if produced["records"] < records:
        raise WorkloadError(f"producer perf test sent {produced['records']:.0f} of {records}")
    ctx.note(f"kafka-consumer-perf-test.sh {records:,} records, group consumer")
    window = CpuWindow(ctx.broker.proc.pid)
    window.start()
    consumed = parse_consumer(_run_tool(home, workdir, [
        "kafka-consumer-perf-test.sh", "--bootstrap-server", ctx.broker.bootstrap,
        "--topic", TOPIC, "--messages", str(records), "--group", "kafkette-bench-java-perf",
        "--timeout", "60000",
    ], timeout_s))
    window.stop()
    if consumed["data.consumed.in.nMsg"] < records:
        raise WorkloadError(
            f"consumer perf test read {consumed['data.consumed.in.nMsg']:.0f} of {records}"
        )
    million = records / 1e6
    return {
        f"{name}.produce.records_per_s": produced["records_per_s"],
        f"{name}.produce.avg_ms": produced["avg_ms"],
        f"{name}.produce.broker_cpu_s_per_m": produce_cpu / million,
        f"{name}.consume.records_per_s": consumed["nMsg.sec"],
        f"{name}.consume.fetch_records_per_s": consumed["fetch.nMsg.sec"],
        f"{name}.consume.rebalance_ms": consumed["rebalance.time.ms"],
        f"{name}.consume.broker_cpu_s_per_m": window.broker_s / million,
    }
