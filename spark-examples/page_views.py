"""What the streaming job and the batch report share: Kafka source options and JSON parsing.

The page-view JSON is written by ``clickstream_generator.py``:
``{"user": "user-007", "page": "/cart", "timestamp": "2024-01-01T00:00:07.985Z"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

PAGE_VIEW_SCHEMA = StructType(
    [
        StructField("user", StringType()),
        StructField("page", StringType()),
        StructField("timestamp", TimestampType()),
    ]
)

EARLIEST = -2  # Kafka's "earliest" sentinel inside Spark's per-partition offset JSON
LATEST = -1  # "latest"; valid as a starting offset only in streaming, and as an ending offset


def offsets_json(offsets: Mapping[str, Mapping[int, int]]) -> str:
    """Spark's per-partition offset JSON: ``{"topic": {"0": 23, "1": -2}}`` from nested dicts."""
    return json.dumps(
        {
            topic: {str(partition): offset for partition, offset in sorted(parts.items())}
            for topic, parts in offsets.items()
        }
    )


def kafka_source_options(
    bootstrap: str,
    topic: str | None = None,
    topic_pattern: str | None = None,
    kafka_options: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Options naming the broker and what to read: exactly one of ``topic`` (``subscribe``,
    comma-separated list allowed) or ``topic_pattern`` (``subscribePattern``, a Java regex).

    ``kafka_options`` are Kafka consumer/producer settings without the prefix (``client.id``);
    they are passed as ``kafka.<name>`` which the connector hands to kafka-clients verbatim.
    """
    if (topic is None) == (topic_pattern is None):
        raise ValueError("give exactly one of topic or topic_pattern")
    options = {"kafka.bootstrap.servers": bootstrap}
    if topic is not None:
        options["subscribe"] = topic
    else:
        options["subscribePattern"] = topic_pattern
    for name, value in (kafka_options or {}).items():
        options[f"kafka.{name}"] = value
    return options


def parse_page_views(raw: DataFrame) -> DataFrame:
    """Kafka rows -> ``user, page, event_time`` (+ ``topic, partition, offset``).

    Rows whose value is not a page view (unparseable JSON or no timestamp) are dropped.
    """
    parsed = raw.select(
        F.from_json(F.col("value").cast("string"), PAGE_VIEW_SCHEMA).alias("view"),
        "topic",
        "partition",
        "offset",
    )
    return parsed.where(F.col("view.timestamp").isNotNull()).select(
        F.col("view.user").alias("user"),
        F.col("view.page").alias("page"),
        F.col("view.timestamp").alias("event_time"),
        "topic",
        "partition",
        "offset",
    )


