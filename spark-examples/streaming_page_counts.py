"""Structured Streaming: event-time windowed page-view counts from Kafka, back to Kafka and Parquet.

Reads the clickstream with Spark's Kafka source (``subscribe`` or ``subscribePattern``), counts
views per page in tumbling event-time windows with a watermark, and writes each finished window
once (append mode) to an output topic through the Kafka sink and to a Parquet folder. Both sinks
keep a checkpoint under ``--checkpoint-dir``, so a restarted job resumes where it stopped.

Usage::

    python spark-examples/streaming_page_counts.py --bootstrap-server 127.0.0.1:9092 \\
        --topic clickstream --output-topic page-view-counts \\
        --parquet-dir spark-examples/output/page-view-counts \\
        --checkpoint-dir spark-examples/.checkpoints/page-view-counts [--available-now]
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from page_views import kafka_source_options, parse_page_views
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from spark_session import build_spark_session

DEFAULT_WINDOW = "5 minutes"
DEFAULT_WATERMARK = "2 minutes"  # must exceed the generator's max lateness (20 s)


def read_clickstream(
    spark: SparkSession,
    bootstrap: str,
    topic: str | None = None,
    topic_pattern: str | None = None,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
    fail_on_data_loss: bool = True,
    kafka_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """The raw Kafka stream (``key, value, topic, partition, offset, timestamp, ...``).

    ``starting_offsets`` is ``earliest``, ``latest`` or per-partition JSON and only matters on a
    query's first run; afterwards its checkpoint decides.
    """
    reader = spark.readStream.format("kafka").options(
        **kafka_source_options(bootstrap, topic, topic_pattern, kafka_options)
    )
    reader = reader.option("startingOffsets", starting_offsets)
    reader = reader.option("failOnDataLoss", str(fail_on_data_loss).lower())
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


def windowed_page_counts(
    views: DataFrame, window: str = DEFAULT_WINDOW, watermark: str = DEFAULT_WATERMARK
) -> DataFrame:
    """Views per page per tumbling event-time window: ``window_start, window_end, page, views``.

    In append mode a window is emitted once the watermark (max event time seen minus
    ``watermark``) passes its end; events older than the watermark are dropped as late.
    """
    counts = (
        views.withWatermark("event_time", watermark)
        .groupBy(F.window("event_time", window).alias("window"), "page")
        .count()
    )
    return counts.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "page",
        F.col("count").alias("views"),
    )


def as_kafka_records(counts: DataFrame) -> DataFrame:
    """Counts -> Kafka sink rows: key ``<page>@<window start>``, value the row as JSON."""
    return counts.select(
        F.concat_ws("@", "page", F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss'Z'")).alias(
            "key"
        ),
        F.to_json(F.struct("window_start", "window_end", "page", "views")).alias("value"),
    )


def start_pipeline(
    spark: SparkSession,
    bootstrap: str,
    output_topic: str,
    parquet_dir: str | Path,
    checkpoint_dir: str | Path,
    topic: str | None = None,
    topic_pattern: str | None = None,
    available_now: bool = False,
    processing_time: str = "10 seconds",
    window: str = DEFAULT_WINDOW,
    watermark: str = DEFAULT_WATERMARK,
    **source_options,
) -> list[StreamingQuery]:
    """Start the Kafka-sink query and the Parquet-sink query; return both, running.

    Each query has its own checkpoint (``<checkpoint_dir>/kafka-sink``, ``.../parquet-sink``)
    and reads the source independently. ``available_now`` processes what is in the topic now
    (possibly in several micro-batches, see ``max_offsets_per_trigger``) and then stops;
    otherwise a micro-batch runs every ``processing_time``. ``source_options`` go to
    :func:`read_clickstream`.
    """
    checkpoints = Path(checkpoint_dir)
    raw = read_clickstream(spark, bootstrap, topic, topic_pattern, **source_options)
    counts = windowed_page_counts(parse_page_views(raw), window, watermark)
    trigger = {"availableNow": True} if available_now else {"processingTime": processing_time}

    to_kafka = (
        as_kafka_records(counts)
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output_topic)
        .option("checkpointLocation", str(checkpoints / "kafka-sink"))
        .outputMode("append")
        .trigger(**trigger)
        .queryName("page_view_counts_to_kafka")
        .start()
    )
    to_parquet = (
        counts.writeStream.format("parquet")
        .option("path", str(parquet_dir))
        .option("checkpointLocation", str(checkpoints / "parquet-sink"))
        .outputMode("append")
        .trigger(**trigger)
        .queryName("page_view_counts_to_parquet")
        .start()
    )
    return [to_kafka, to_parquet]


def await_all(queries: Sequence[StreamingQuery]) -> None:
    """Wait for every query to finish; re-raise the first failure."""
    for query in queries:
        query.awaitTermination()
        error = query.exception()
        if error is not None:
            raise error


def run_until_signalled(queries: Sequence[StreamingQuery], poll_seconds: float = 1.0) -> None:
    """Keep continuous queries running until SIGINT/SIGTERM, then stop them; re-raise failures.

    Must run in the main thread. A signal only sets a flag: interrupting a blocked py4j call
    (PySpark's own Ctrl-C handling) would break the connection to the JVM instead of stopping.
    """
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set())
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        while not stop.is_set() and all(query.isActive for query in queries):
            queries[0].awaitTermination(poll_seconds)  # raises if that query failed
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for query in queries:
            stop_between_batches(query)
    await_all(queries)


def stop_between_batches(query: StreamingQuery, timeout: float = 30.0) -> None:
    """Stop ``query``, first waiting up to ``timeout`` seconds for a running micro-batch to end.

    Stopping mid-batch is safe (the batch is redone on restart) but noisy and wasteful.
    """
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()


def rows_written(progress: Mapping) -> int | None:
    """Rows one micro-batch handed to its sink, from its progress report.

    The Kafka sink reports ``sink.numOutputRows``; file sinks (Parquet) report -1. In append
    mode the aggregation's state store emits a window exactly when the watermark evicts it, so
    its ``numRowsRemoved`` is the rows the sink got (the plan after it maps rows one to one).
    None when neither is known.
    """
    reported = progress["sink"].get("numOutputRows", -1)
    if reported is not None and reported >= 0:
        return reported
    operators = progress.get("stateOperators") or []
    if operators:
        return operators[-1].get("numRowsRemoved")
    return None


def summarize(query: StreamingQuery) -> str:
    """One line: micro-batches run, records read and rows written in this process's lifetime."""
    progress = query.recentProgress  # Spark keeps the last 100 progress reports
    read = sum(p["numInputRows"] for p in progress)
    outputs = [rows_written(p) for p in progress]
    written = sum(outputs) if None not in outputs else "an unknown number of rows"
    return f"{query.name}: {len(progress)} micro-batches, {read} records read, {written} written"


def parse_kafka_settings(pairs: Sequence[str]) -> dict[str, str]:
    """``["client.id=x", ...]`` -> ``{"client.id": "x"}`` (from repeated ``--kafka`` flags)."""
    settings = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--kafka expects NAME=VALUE, got {pair!r}")
        settings[name.removeprefix("kafka.")] = value
    return settings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--topic", help="subscribe: topic name(s), comma-separated")
    source.add_argument("--topic-pattern", help="subscribePattern: Java regex of topic names")
    parser.add_argument("--output-topic", default="page-view-counts")
    parser.add_argument("--parquet-dir", default="spark-examples/output/page-view-counts")
    parser.add_argument("--checkpoint-dir", default="spark-examples/.checkpoints/page-view-counts")
    parser.add_argument("--starting-offsets", default="earliest", help="earliest|latest|JSON")
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument("--no-fail-on-data-loss", action="store_true")
    parser.add_argument("--kafka", action="append", default=[], metavar="NAME=VALUE",
                        help="a Kafka client setting, passed as kafka.NAME (repeatable)")
    parser.add_argument("--window", default=DEFAULT_WINDOW)
    parser.add_argument("--watermark", default=DEFAULT_WATERMARK)
    parser.add_argument("--available-now", action="store_true",
                        help="process what is in the topic now, then exit")
    parser.add_argument("--processing-time", default="10 seconds")
    args = parser.parse_args(argv)
    topic = args.topic if args.topic or args.topic_pattern else "clickstream"

    # Adaptive execution does not apply to streaming; disabling it spares a warning per query.
    spark = build_spark_session(
        "kafkette-page-view-counts", conf={"spark.sql.adaptive.enabled": "false"}
    )
    queries = start_pipeline(
        spark,
        args.bootstrap_server,
        args.output_topic,
        args.parquet_dir,
        args.checkpoint_dir,
        topic=topic,
        topic_pattern=args.topic_pattern,
        available_now=args.available_now,
        processing_time=args.processing_time,
        window=args.window,
        watermark=args.watermark,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        fail_on_data_loss=not args.no_fail_on_data_loss,
        kafka_options=parse_kafka_settings(args.kafka),
    )
    try:
        if args.available_now:
            await_all(queries)
        else:
            print("running until Ctrl-C or SIGTERM; a restart resumes from the checkpoints")
            run_until_signalled(queries)
    finally:
        for query in queries:
            print(summarize(query))
        spark.stop()


if __name__ == "__main__":
    main()
