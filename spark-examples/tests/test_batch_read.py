"""Spark's batch Kafka source (``read.format("kafka")``) against kafkette: exact records."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'kafkette[spark]'")

from batch_report import page_report, read_range
from clickstream_generator import SOURCE_HEADER
from page_views import EARLIEST, LATEST, offsets_json
from pyspark.sql import functions as F


def _coordinates(rows) -> set[tuple[str, int, int]]:
    return {(row.topic, row.partition, row.offset) for row in rows}


def _delivered_coordinates(delivered) -> set[tuple[str, int, int]]:
    return {(r.topic, r.partition, r.offset) for r in delivered}


def test_batch_read_returns_every_record_with_kafka_columns(
    spark, bootstrap, topic_name, produce_clickstream
):
    topic = topic_name()
    delivered = produce_clickstream(topic, 300)

    rows = (
        read_range(spark, bootstrap, topic=topic, include_headers=True,
                   kafka_options={"client.id": "kafkette-spark-test"})
        .select("key", "value", "topic", "partition", "offset",
                F.unix_millis("timestamp").alias("timestamp_ms"), "timestampType", "headers")
        .collect()
    )

    assert len(rows) == len(delivered) == 300
    expected = {
        (r.topic, r.partition, r.offset): (r.view.key, r.view.value, r.timestamp_ms, r.view)
        for r in delivered
    }
    assert {r.partition for r in delivered} == {0, 1, 2}
    for row in rows:
        key, value, timestamp_ms, view = expected[(row.topic, row.partition, row.offset)]
        assert bytes(row.key) == key
        assert bytes(row.value) == value
        assert row.timestamp_ms == timestamp_ms == view.timestamp_ms
        assert row.timestampType == 0  # CreateTime: the producer's timestamp is kept
        headers = [(h.key, bytes(h.value)) for h in row.headers]
        assert headers == [SOURCE_HEADER, ("seq", str(view.seq).encode())]
    assert _coordinates(rows) == set(expected)


def test_json_offsets_read_exactly_that_range(spark, bootstrap, topic_name, produce_clickstream):
    topic = topic_name()
    delivered = produce_clickstream(topic, 240)
    starting = {0: 5, 1: EARLIEST, 2: 10}
    ending = {0: 20, 1: LATEST, 2: 15}

    rows = read_range(
        spark,
        bootstrap,
        topic=topic,
        starting_offsets=offsets_json({topic: starting}),
        ending_offsets=offsets_json({topic: ending}),
    ).collect()

    ends = Counter(r.partition for r in delivered)  # offsets start at 0 on a new topic
    lows = {p: (0 if s == EARLIEST else s) for p, s in starting.items()}
    highs = {p: (ends[p] if e == LATEST else e) for p, e in ending.items()}
    expected = {
        (r.topic, r.partition, r.offset)
        for r in delivered
        if lows[r.partition] <= r.offset < highs[r.partition]
    }
    assert len(rows) == len(expected) == 15 + ends[1] + 5
    assert _coordinates(rows) == expected


def test_starting_timestamp_starts_each_partition_at_first_offset_at_or_after_it(
    spark, bootstrap, topic_name, produce_clickstream
):
    topic = topic_name()
    delivered = produce_clickstream(topic, 240)
    cutoff = sorted(r.timestamp_ms for r in delivered)[100]

    rows = read_range(spark, bootstrap, topic=topic, starting_timestamp=cutoff).collect()

    # Kafka's ListOffsets(timestamp) answers the earliest offset whose timestamp >= cutoff;
    # Spark reads from there to the end, later records with older timestamps included.
    by_partition = defaultdict(list)
    for r in delivered:
        by_partition[r.partition].append(r)
    expected = set()
    for records in by_partition.values():
        first = min((r.offset for r in records if r.timestamp_ms >= cutoff), default=None)
        if first is not None:
            expected |= {(r.topic, r.partition, r.offset) for r in records if r.offset >= first}
    assert 0 < len(expected) < len(delivered)
    assert _coordinates(rows) == expected


def test_subscribe_pattern_reads_only_matching_topics(
    spark, bootstrap, topic_name, produce_clickstream
):
    first, second, other = topic_name("a"), topic_name("b"), topic_name("z")
    delivered = produce_clickstream(first, 50) + produce_clickstream(second, 70, seed=8)
    produce_clickstream(other, 30)
    pattern = first[: -len("a-12345678")] + "[ab]-" + first[-8:]

    rows = read_range(spark, bootstrap, topic_pattern=pattern).collect()

    assert {row.topic for row in rows} == {first, second}
    assert _coordinates(rows) == _delivered_coordinates(delivered)


def test_batch_report_counts_are_exact(spark, bootstrap, topic_name, produce_clickstream):
    topic = topic_name()
    delivered = produce_clickstream(topic, 400, seed=11)

    report = {row.page: row for row in page_report(read_range(spark, bootstrap, topic=topic))
              .collect()}

    views = Counter(r.view.page for r in delivered)
    users = defaultdict(set)
    for r in delivered:
        users[r.view.page].add(r.view.user)
    assert {page: row.views for page, row in report.items()} == dict(views)
    assert {page: row.users for page, row in report.items()} == {
        page: len(who) for page, who in users.items()
    }
