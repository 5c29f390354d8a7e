"""Spark's streaming Kafka source and sink against kafkette: exact records, windows, restarts."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'kafkette[spark]'")

from page_views import EARLIEST, offsets_json
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from streaming_page_counts import await_all, read_clickstream, rows_written, start_pipeline

WINDOW_MS = 5 * 60_000
WATERMARK_MS = 2 * 60_000


def expected_closed_windows(views) -> Counter:
    """What append mode emits after all ``views``: windows ending at or before the watermark.

    Plain Python mirror of the job: tumbling 5-minute windows; the final watermark is the
    largest event time minus 2 minutes. No view is late (generator lateness <= 20 s).
    """
    watermark = max(v.timestamp_ms for v in views) - WATERMARK_MS
    counts = Counter()
    for view in views:
        start = view.timestamp_ms - view.timestamp_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark:
            counts[(start, view.page)] += 1
    return counts


def _iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def _parquet_rows(spark, path) -> list[tuple[int, str, int]]:
    rows = spark.read.parquet(str(path)).select(
        F.unix_millis("window_start").alias("start"),
        F.unix_millis("window_end").alias("end"),
        "page",
        "views",
    )
    result = []
    for row in rows.collect():
        assert row.end - row.start == WINDOW_MS
        result.append((row.start, row.page, row.views))
    return sorted(result)


def _topic_rows(records) -> list[tuple[int, str, int]]:
    result = []
    for _, _, key, value in records:
        body = json.loads(value)
        start = _iso_ms(body["window_start"])
        assert _iso_ms(body["window_end"]) - start == WINDOW_MS
        assert key.decode() == f"{body['page']}@{body['window_start'][:19]}Z"
        result.append((start, body["page"], body["views"]))
    return sorted(result)


def _as_rows(counts: Counter) -> list[tuple[int, str, int]]:
    return sorted((start, page, n) for (start, page), n in counts.items())


def _run_to_memory(spark, raw, name: str, checkpoint) -> list:
    """Drain ``raw`` with trigger(availableNow) into a memory table; return its progress."""
    query = (
        raw.select("key", "value", "topic", "partition", "offset")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    await_all([query])
    return query.recentProgress


def test_available_now_consumes_exactly_the_produced_records(
    spark, bootstrap, topic_name, produce_clickstream, tmp_path
):
    topic = topic_name()
    delivered = produce_clickstream(topic, 300)  # batches of many records, most over 1 KiB
    raw = read_clickstream(
        spark,
        bootstrap,
        topic=topic,
        max_offsets_per_trigger=100,
        # Fetch limits far below one produced batch: the broker must still hand out the first
        # batch whole (Kafka's rule), or the consumer could never make progress.
        kafka_options={
            "client.id": "kafkette-spark-stream",
            "max.partition.fetch.bytes": "512",
            "fetch.max.bytes": "1024",
        },
    )

    progress = _run_to_memory(spark, raw, "exactly_produced", tmp_path / "checkpoint")

    rows = spark.table("exactly_produced").collect()
    got = {(r.topic, r.partition, r.offset): (bytes(r.key), bytes(r.value)) for r in rows}
    assert len(rows) == len(got) == len(delivered)
    assert got == {(r.topic, r.partition, r.offset): (r.view.key, r.view.value) for r in delivered}
    batch_sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sum(batch_sizes) == 300
    assert max(batch_sizes) <= 100  # maxOffsetsPerTrigger split the backlog
    assert len(batch_sizes) >= math.ceil(300 / 100)


def test_windowed_counts_reach_kafka_and_parquet_once_across_restarts(
    spark, bootstrap, topic_name, produce_clickstream, read_topic, tmp_path
):
    topic, output_topic = topic_name(), topic_name("counts")
    first = produce_clickstream(topic, 600)
    from clickstream_generator import ensure_topic

    ensure_topic(bootstrap, output_topic, 1)
    parquet_dir, checkpoint_dir = tmp_path / "counts", tmp_path / "checkpoints"

    def run_pipeline() -> None:
        await_all(
            start_pipeline(
                spark, bootstrap, output_topic, parquet_dir, checkpoint_dir,
                topic=topic, available_now=True,
            )
        )

    run_pipeline()
    expected = _as_rows(expected_closed_windows([r.view for r in first]))
    assert len(expected) >= 20
    assert _parquet_rows(spark, parquet_dir) == expected
    assert _topic_rows(read_topic(output_topic)) == expected

    second = produce_clickstream(topic, 600, skip=600)
    run_pipeline()  # resumes from the checkpoints: only the new records are read
    expected = _as_rows(expected_closed_windows([r.view for r in first + second]))
    assert _parquet_rows(spark, parquet_dir) == expected
    assert _topic_rows(read_topic(output_topic)) == expected

    run_pipeline()  # nothing new: nothing added
    assert _parquet_rows(spark, parquet_dir) == expected
    assert _topic_rows(read_topic(output_topic)) == expected


def test_latest_starting_offsets_skip_existing_records(
    spark, bootstrap, topic_name, produce_clickstream, tmp_path
):
    topic = topic_name()
    produce_clickstream(topic, 90)
    checkpoint = tmp_path / "checkpoint"

    output = tmp_path / "records"

    def run() -> set:
        raw = read_clickstream(
            spark, bootstrap, topic_pattern=f"{topic[:-8]}[0-9a-f]{{8}}",
            starting_offsets="latest",
        )
        query = (
            raw.select("topic", "partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        await_all([query])
        if not (output / "_spark_metadata").exists():
            return set()
        rows = spark.read.parquet(str(output)).collect()
        assert len(rows) == len(set(rows))
        return {(r.topic, r.partition, r.offset) for r in rows}

    assert run() == set()
    later = produce_clickstream(topic, 60, skip=90)
    assert run() == {(r.topic, r.partition, r.offset) for r in later}
    assert run() == {(r.topic, r.partition, r.offset) for r in later}  # nothing read twice


def _delete_records_before(bootstrap: str, topic: str, partition: int, offset: int) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    for future in futures.values():
        assert future.result(30).low_watermark == offset


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_fail_on_data_loss_when_starting_offset_was_deleted(
    spark, bootstrap, topic_name, produce_clickstream, tmp_path, fail_on_data_loss
):
    topic = topic_name()
    delivered = produce_clickstream(topic, 90)
    _delete_records_before(bootstrap, topic, 0, 10)
    raw = read_clickstream(
        spark,
        bootstrap,
        topic=topic,
        starting_offsets=offsets_json({topic: {0: 2, 1: EARLIEST, 2: EARLIEST}}),
        fail_on_data_loss=fail_on_data_loss,
    )
    name = f"data_loss_{str(fail_on_data_loss).lower()}"

    if fail_on_data_loss:
        with pytest.raises(StreamingQueryException, match="data may have been lost"):
            _run_to_memory(spark, raw, name, tmp_path / "checkpoint")
        return
    _run_to_memory(spark, raw, name, tmp_path / "checkpoint")
    got = {(r.topic, r.partition, r.offset) for r in spark.table(name).collect()}
    assert got == {
        (r.topic, r.partition, r.offset)
        for r in delivered
        if r.partition != 0 or r.offset >= 10  # offsets 2..9 are gone, the rest is read
    }


def test_command_line_job_runs_the_documented_way(
    spark, bootstrap, topic_name, produce_clickstream, read_topic, tmp_path
):
    topic, output_topic = topic_name(), topic_name("counts")
    delivered = produce_clickstream(topic, 300)
    script = Path(__file__).resolve().parents[1] / "streaming_page_counts.py"
    command = [sys.executable, str(script), "--bootstrap-server", bootstrap, "--topic", topic,
               "--output-topic", output_topic, "--parquet-dir", str(tmp_path / "out"),
               "--checkpoint-dir", str(tmp_path / "checkpoints"), "--available-now"]

    result = subprocess.run(command, capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr[-3000:]
    expected = _as_rows(expected_closed_windows([r.view for r in delivered]))
    summaries = {line.split(": ", 1)[0]: line.split(": ", 1)[1]
                 for line in result.stdout.splitlines() if line.startswith("page_view_counts_to_")}
    # Both sinks say what they wrote; the Parquet one used to print "? written".
    for query in ("page_view_counts_to_kafka", "page_view_counts_to_parquet"):
        assert summaries[query].endswith(f"300 records read, {len(expected)} written"), summaries
    assert _topic_rows(read_topic(output_topic)) == expected
    assert _parquet_rows(spark, tmp_path / "out") == expected


def test_rows_written_reads_the_kafka_sink_count_or_the_evicted_windows():
    """Progress reports as Spark writes them: the Kafka sink counts its rows, a file sink says -1
    and the append-mode aggregation's evictions are what it wrote."""
    kafka = {"sink": {"description": "KafkaSink", "numOutputRows": 4}, "stateOperators": []}
    parquet = {"sink": {"description": "FileSink[out]", "numOutputRows": -1},
               "stateOperators": [{"numRowsTotal": 9, "numRowsUpdated": 3, "numRowsRemoved": 4}]}
    unknown = {"sink": {"description": "FileSink[out]", "numOutputRows": -1}}
    assert [rows_written(p) for p in (kafka, parquet, unknown)] == [4, 4, None]
