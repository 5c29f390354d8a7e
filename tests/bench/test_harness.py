"""The benchmark harness's own logic (bench/): the Apache Kafka launcher's storage format
command, the parsers of Kafka's perf tools' output, and the side-by-side report table.

Fast and broker-free: the figures themselves are bench output, never timed tests.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bench.harness.brokers import ApacheKafka, Tansu, kafka_cluster_id
from bench.harness.java_perf import parse_consumer, parse_producer
from bench.harness.processes import ProcessRegistry
from bench.harness.report import summarize, versus_table
from bench.harness.workloads import WorkloadError


def test_cluster_ids_never_start_with_a_dash() -> None:
    ids = [kafka_cluster_id() for _ in range(3000)]  # ~47 would start with '-' unfiltered
    assert not [cluster_id for cluster_id in ids if cluster_id.startswith("-")]
    assert {len(cluster_id) for cluster_id in ids} == {22}


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_launcher_formats_with_an_attached_cluster_id_and_reports_a_failed_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    recorded = tmp_path / "format-args"
    _script(home / "bin" / "kafka-storage.sh", f'printf "%s\\n" "$@" > {recorded}')
    _script(home / "bin" / "kafka-server-start.sh", "echo 'boom: no JVM here' >&2; exit 1")
    monkeypatch.setenv("KAFKA_HOME", str(home))
    broker = ApacheKafka()
    registry = ProcessRegistry()
    with pytest.raises(RuntimeError) as failure:
        broker.start(registry, tmp_path / "work", timeout_s=20)
    assert "boom: no JVM here" in str(failure.value)
    args = recorded.read_text().split("\n")
    assert args[0] == "format"
    cluster_ids = [arg for arg in args if arg.startswith("--cluster-id=")]
    assert len(cluster_ids) == 1 and len(cluster_ids[0]) == len("--cluster-id=") + 22
    assert "-t" not in args


def test_launcher_says_why_format_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "kafka"
    (home / "bin").mkdir(parents=True)
    _script(home / "bin" / "kafka-storage.sh", "echo 'bad config' >&2; exit 3")
    _script(home / "bin" / "kafka-server-start.sh", "exit 1")
    monkeypatch.setenv("KAFKA_HOME", str(home))
    with pytest.raises(RuntimeError, match=r"(?s)format failed \(exit 3\).*bad config"):
        ApacheKafka().start(ProcessRegistry(), tmp_path / "work", timeout_s=20)


def test_kafka_home_falls_back_to_the_reference_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "kafka-ref"
    _script(script, f'[ "$1" = home ] && echo {tmp_path / "dist"}')
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("KAFKA_REF", str(script))
    broker = ApacheKafka()
    assert broker.home() == tmp_path / "dist"
    assert "has no bin/kafka-server-start.sh" in (broker.unavailable_reason() or "")


PRODUCER_OUTPUT = (
    "99217 records sent, 19843.4 records/sec (19.38 MB/sec), 1203.1 ms avg latency, "
    "1788.0 ms max latency.\n"
    "200000 records sent, 21015.026794 records/sec (20.52 MB/sec), 1111.40 ms avg latency, "
    "1788.00 ms max latency, 1071 ms 50th, 1609 ms 95th, 1741 ms 99th, 1780 ms 99.9th.\n"
)
CONSUMER_OUTPUT = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
    "2026-11-23 11:10:00:000, 2026-11-23 11:10:05:000, 195.3125, 39.0625, 200000, 40000.0000, "
    "1149, 3851, 50.7175, 51934.5624\n"
)


def test_perf_tool_output_is_parsed() -> None:
    produced = parse_producer(PRODUCER_OUTPUT)
    assert produced == {"records": 200000.0, "records_per_s": 21015.026794,
                        "avg_ms": 1111.40, "max_ms": 1788.0}
    consumed = parse_consumer(CONSUMER_OUTPUT)
    assert consumed["nMsg.sec"] == 40000.0
    assert consumed["fetch.nMsg.sec"] == 51934.5624
    assert consumed["rebalance.time.ms"] == 1149.0
    with pytest.raises(WorkloadError):
        parse_consumer("WARN something went wrong\n")
    with pytest.raises(WorkloadError):
        parse_producer("")


def test_versus_table_has_median_ratio_and_spread() -> None:
    runs = [
        {"round": r, "broker": broker, "error": None,
         "metrics": {"consume.100B.records_per_s": value}}
        for r, (broker, value) in enumerate(
            [("kafkette", 300.0), ("kafka", 200.0), ("kafkette", 360.0), ("kafka", 220.0),
             ("kafkette", 330.0), ("kafka", 210.0)]
        )
    ]
    lines = versus_table(summarize(runs), "kafka", {"kafka": "Apache Kafka"})
    assert lines[0] == (
        "| figure | kafkette | Apache Kafka | ratio | spread (kafkette / Apache Kafka) |"
    )
    assert lines[2] == (
        "| consume 100B (confluent-kafka) records/s (rec/s) | 330 | 210 | 1.57x | 18% / 10% |"
    )


def test_a_failing_reference_script_is_the_reason_kafka_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "kafka-ref"
    _script(script, "echo 'kafka-ref: java is not installed' >&2; exit 2")
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("KAFKA_REF", str(script))
    reason = ApacheKafka().unavailable_reason() or ""
    assert reason.startswith("KAFKA_HOME not set and no reference distribution")
    assert "java is not installed" in reason


def test_a_missing_tansu_is_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TANSU_BIN", str(tmp_path / "no-such-tansu"))
    assert "missing or not executable" in (Tansu().unavailable_reason() or "")
