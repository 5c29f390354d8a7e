"""The catalogue of figures the harness reports: key, label, unit and which way is better.

Keys are stable: they are the JSON keys of ``bench/results/*.json`` and what targets refer to.
Workloads may only emit keys listed here (``describe`` raises on unknown keys), so a typo cannot
silently drop a figure from the report.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool


def _throughput(prefix: str, label: str) -> list[Metric]:
    return [
        Metric(f"{prefix}.records_per_s", f"{label} records/s", "rec/s", True),
        Metric(f"{prefix}.mb_per_s", f"{label} MB/s", "MB/s", True),
    ]


def _consume_details(prefix: str, label: str) -> list[Metric]:
    """What makes a consume figure comparable: the fill's batches, each Fetch response's load,
    the broker's CPU per record and the client's own limits (bench/workloads.py)."""
    return [
        Metric(f"{prefix}.fill_batches", f"{label}: batches in the partition", "batches", False),
        Metric(f"{prefix}.fill_batch_records", f"{label}: records per batch", "records", True),
        Metric(f"{prefix}.fill_batch_kb", f"{label}: KB per Produce request (one batch)", "KB",
               True),
        Metric(f"{prefix}.fetch_records", f"{label}: records per Fetch response", "records", True),
        Metric(f"{prefix}.fetch_batches", f"{label}: batches per Fetch response", "batches",
               True),
        Metric(f"{prefix}.fetch_kb", f"{label}: KB per Fetch response", "KB", True),
        Metric(f"{prefix}.fetch_used_pct", f"{label}: record bytes in received bytes", "%",
               True),
        Metric(f"{prefix}.broker_cpu_s_per_m", f"{label}: broker CPU s per million records",
               "CPU s", False),
        Metric(f"{prefix}.client_thread_busy_pct",
               f"{label}: busiest client thread (share of a core)", "%", False),
        Metric(f"{prefix}.ceiling_records_per_s",
               f"{label}: client-bound reference (same consumer, in-memory mock broker)",
               "rec/s", True),
    ]


def _catalogue() -> list[Metric]:
    metrics = [
        Metric("start_s", "start time (launch to first Metadata)", "s", False),
        Metric("idle_rss_mb", "idle RSS", "MB", False),
        Metric("loaded_rss_mb", "peak RSS under produce load", "MB", False),
    ]
    for size in ("100B", "1KiB"):
        for acks in ("1", "all"):
            metrics += _throughput(
                f"produce.confluent.{size}.acks={acks}",
                f"produce {size} acks={acks} (confluent-kafka)",
            )
            metrics += _throughput(
                f"produce.kafka-python.{size}.acks={acks}",
                f"produce {size} acks={acks} (kafka-python)",
            )
        metrics += _throughput(f"consume.{size}", f"consume {size} (confluent-kafka)")
        metrics += _consume_details(f"consume.{size}", f"consume {size}")
        for codec in ("lz4", "zstd", "snappy", "gzip"):
            metrics += _throughput(
                f"produce.confluent.{size}.{codec}",
                f"produce {size} {codec} acks=1 (confluent-kafka)",
            )
    metrics += _throughput("consume-unpaused.100B", "consume 100B, queue limits lifted")
    metrics += _consume_details("consume-unpaused.100B", "consume 100B, queue limits lifted")
    for prefix, words in (("e2e", ""), ("e2e-mixed", ", beside a full-speed producer")):
        for quantile in ("p50", "p99", "p99.9"):
            metrics.append(Metric(
                f"{prefix}.{quantile}_ms", f"end-to-end latency {quantile}{words}", "ms", False
            ))
        metrics.append(Metric(
            f"{prefix}.offered_per_s", f"end-to-end offered rate achieved{words}", "rec/s", True
        ))
    metrics += [
        Metric("e2e-mixed.background_per_s", "full-speed producer beside the latency pair",
               "rec/s", True),
        Metric("partitions.create_s", "create 1,000-partition topic", "s", False),
        Metric("partitions.rss_mb", "RSS with 1,000 partitions", "MB", False),
        Metric("partitions.produce_p50_ms", "produce latency p50, 1,000 partitions", "ms", False),
        Metric("partitions.produce_p99_ms", "produce latency p99, 1,000 partitions", "ms", False),
        Metric("connections.open_s", "open 1,000 idle connections", "s", False),
        Metric("connections.rss_mb", "RSS with 1,000 idle connections", "MB", False),
        Metric("connections.baseline_p50_ms", "produce latency p50, no idle connections", "ms",
               False),
        Metric("connections.produce_p50_ms", "produce latency p50, 1,000 idle connections", "ms",
               False),
        Metric("connections.produce_p99_ms", "produce latency p99, 1,000 idle connections", "ms",
               False),
    ]
    for name, size in (("java-perf", "1 KiB"), ("java-perf-100b", "100 B")):
        metrics += [  # bench/harness/java_perf.py: Kafka's own perf tools
            Metric(f"{name}.produce.records_per_s",
                   f"kafka-producer-perf-test {size}, 3 partitions, acks=1", "rec/s", True),
            Metric(f"{name}.produce.avg_ms", f"kafka-producer-perf-test {size} average latency",
                   "ms", False),
            Metric(f"{name}.produce.broker_cpu_s_per_m",
                   f"kafka-producer-perf-test {size}: broker CPU s per million records", "CPU s",
                   False),
            Metric(f"{name}.consume.records_per_s",
                   f"kafka-consumer-perf-test {size}, group consumer (nMsg.sec)", "rec/s", True),
            Metric(f"{name}.consume.fetch_records_per_s",
                   f"kafka-consumer-perf-test {size} without the group join (fetch.nMsg.sec)",
                   "rec/s", True),
            Metric(f"{name}.consume.rebalance_ms", f"kafka-consumer-perf-test {size} group join",
                   "ms", False),
            Metric(f"{name}.consume.broker_cpu_s_per_m",
                   f"kafka-consumer-perf-test {size}: broker CPU s per million records", "CPU s",
                   False),
        ]
    for partitions in (1, 16, 256):  # bench/scaling.py
        for clients in (1, 4, 16):
            where = f"{clients} clients x {partitions} partitions"
            prefix = f"scaling.p{partitions}.c{clients}"
            metrics += [
                Metric(f"{prefix}.produce_per_s", f"scaling produce 100B, {where}", "rec/s",
                       True),
                Metric(f"{prefix}.consume_per_s", f"scaling consume 100B, {where}", "rec/s",
                       True),
                Metric(f"{prefix}.broker_cpu_s_per_m",
                       f"scaling produce, broker CPU s per million records, {where}", "CPU s",
                       False),
            ]
    metrics += [
        Metric("idle.create_s", "create 10,000 partitions (quick 2,000), topics of 1,000",
               "s", False),
        Metric("idle.rss_mb", "RSS with 10,000 idle partitions (quick 2,000)", "MB", False),
        Metric("idle.cpu_pct", "broker CPU while idle with those partitions", "%", False),
        Metric("idle.metadata_ms", "Metadata (all topics) round trip over those partitions",
               "ms", False),
        Metric("idle.metadata_kb", "Metadata (all topics) response size", "KB", False),
    ]
    metrics += [  # bench/cleaner_produce_bench.py
        Metric("cleaner.clean_s", "clean of the compacted topic (alter to last shrink)", "s",
               False),
        Metric("cleaner.mb_per_s", "cleaner throughput (MB of log cleaned)", "MB/s", True),
        Metric("cleaner.after_mb", "compacted topic after cleaning", "MB", False),
    ]
    for state, words in (("on", "cleaner running"), ("off", "cleaner off")):
        for quantile in ("p50", "p99", "p99.9", "max"):
            metrics.append(Metric(
                f"cleaner.{state}.produce_{quantile}_ms",
                f"produce latency {quantile}, acks=all, {words}", "ms", False,
            ))
        for quantile in ("p50", "p99"):
            metrics.append(Metric(
                f"cleaner.{state}.e2e_{quantile}_ms",
                f"produce-to-consume latency {quantile}, {words}", "ms", False,
            ))
        metrics.append(Metric(f"cleaner.{state}.peak_rss_mb", f"peak RSS, {words}", "MB", False))
    return metrics


CATALOGUE: dict[str, Metric] = {metric.key: metric for metric in _catalogue()}


def describe(key: str) -> Metric:
    """The Metric for ``key``; raises KeyError for a key not in the catalogue."""
    return CATALOGUE[key]


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in 0..1) of a non-empty list; NaN if empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: list[float]) -> float:
    finite = [value for value in values if value is not None and math.isfinite(value)]
    return statistics.median(finite) if finite else math.nan
