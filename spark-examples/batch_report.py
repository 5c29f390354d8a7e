"""Batch report: exact page-view counts over a fixed slice of the clickstream topic.

``read.format("kafka")`` reads a bounded range: from ``startingOffsets`` (``earliest`` or
per-partition JSON) or ``startingTimestamp`` (milliseconds; the first record at or after it in
every partition) up to ``endingOffsets`` (``latest`` or JSON). Batch reads store no state, so
the same range always gives the same report.

Usage::

    python spark-examples/batch_report.py --bootstrap-server 127.0.0.1:9092 --topic clickstream \\
        [--starting-offsets '{"clickstream":{"0":10,"1":-2,"2":-2}}'] \\
        [--ending-offsets '{"clickstream":{"0":50,"1":-1,"2":-1}}'] \\
        [--starting-timestamp 1704067500000]
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from page_views import kafka_source_options, parse_page_views
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_session import build_spark_session


def read_range(
    spark: SparkSession,
    bootstrap: str,
    topic: str | None = None,
    topic_pattern: str | None = None,
    starting_offsets: str = "earliest",
    ending_offsets: str = "latest",
    starting_timestamp: int | None = None,
    include_headers: bool = False,
    kafka_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """The raw records of a bounded range, with Kafka's columns.

    ``starting_timestamp`` (ms since the epoch), when given, takes precedence over
    ``starting_offsets`` as in Spark. With ``include_headers`` a ``headers`` column
    (``array<struct<key: string, value: binary>>``) is added.
    """
    reader = spark.read.format("kafka").options(
        **kafka_source_options(bootstrap, topic, topic_pattern, kafka_options)
    )
    reader = reader.option("startingOffsets", starting_offsets)
    reader = reader.option("endingOffsets", ending_offsets)
    if starting_timestamp is not None:
        reader = reader.option("startingTimestamp", str(starting_timestamp))
    if include_headers:
        reader = reader.option("includeHeaders", "true")
    return reader.load()


def page_report(raw: DataFrame) -> DataFrame:
    """Per page: exact ``views``, distinct ``users`` and the event-time span, busiest first."""
    return (
        parse_page_views(raw)
        .groupBy("page")
        .agg(
            F.count("*").alias("views"),
            F.countDistinct("user").alias("users"),
            F.min("event_time").alias("first_view"),
            F.max("event_time").alias("last_view"),
        )
        .orderBy(F.desc("views"), "page")
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--topic", help="subscribe: topic name(s), comma-separated")
    source.add_argument("--topic-pattern", help="subscribePattern: Java regex of topic names")
    parser.add_argument("--starting-offsets", default="earliest", help="earliest|JSON")
    parser.add_argument("--ending-offsets", default="latest", help="latest|JSON")
    parser.add_argument("--starting-timestamp", type=int, help="ms since the epoch")
    args = parser.parse_args(argv)
    topic = args.topic if args.topic or args.topic_pattern else "clickstream"

    spark = build_spark_session("kafkette-batch-report")
    try:
        raw = read_range(
            spark,
            args.bootstrap_server,
            topic=topic,
            topic_pattern=args.topic_pattern,
            starting_offsets=args.starting_offsets,
            ending_offsets=args.ending_offsets,
            starting_timestamp=args.starting_timestamp,
        ).cache()
        print(f"{raw.count()} records read")
        page_report(raw).show(truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
