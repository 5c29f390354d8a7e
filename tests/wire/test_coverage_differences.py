"""The "Differs from Kafka 4.0" section of docs/protocol-coverage.md (wire/coverage.py)."""

from __future__ import annotations

from kafkette.wire.apis import SUPPORTED, ApiKey
from kafkette.wire.coverage import differences, kafka_43_gaps, render
from kafkette.wire.kafka40_ranges import KAFKA_40_ADVERTISED, kafka_40_pairs


def test_kafka_40_table_is_its_api_versions_answer() -> None:
    # Spot checks against the recorded kafka-broker-api-versions.sh output of 4.0.0.
    assert KAFKA_40_ADVERTISED[0] == ("Produce", 0, 12)
    assert KAFKA_40_ADVERTISED[11] == ("JoinGroup", 2, 9)
    assert KAFKA_40_ADVERTISED[1] == ("Fetch", 4, 17)
    assert 71 not in KAFKA_40_ADVERTISED and 72 not in KAFKA_40_ADVERTISED  # no plugin
    assert len(kafka_40_pairs()) == 246


def test_every_gap_has_a_written_reason() -> None:
    unserved, extra = differences()
    assert all(reason != "not served yet" for *_, reason in unserved), unserved
    assert all(reason != "not advertised by Kafka 4.0" for *_, reason in extra), extra


def test_gaps_follow_the_supported_table() -> None:
    unserved, extra = differences()
    keys = {key for key, *_ in unserved} | {key for key, *_ in extra}
    assert ApiKey.JOIN_GROUP not in keys  # 2-9 on both
    assert ApiKey.PRODUCE not in {key for key, *_ in unserved}  # 0-12 on both, 13 beyond
    served = {  # what a client is told: the advertised ranges (71/72 are served unadvertised)
        (int(a.key), v)
        for a in SUPPORTED.values()
        if a.advertised
        for v in range(a.min_version, a.max_version + 1)
    }
    for key, _, versions, _ in unserved:
        first = int(versions.split(",")[0].split("-")[0])
        assert (key, first) not in served


def test_page_has_the_section() -> None:
    page = render()
    assert "## Differs from Kafka 4.0" in page
    unserved, _ = differences()
    for key, name, versions, reason in unserved:
        assert f"| {key} | {name} | {versions} | {reason} |" in page


def test_every_kafka_43_gap_has_a_written_reason() -> None:
    gaps = kafka_43_gaps()
    assert all(reason != "not served yet" for *_, reason in gaps), gaps
    keys = {key for key, *_ in gaps}
    assert not keys & {76, 77, 78, 79, 90, 91, 92}  # share groups are served
    assert 1 not in keys and 35 not in keys  # Fetch 18, DescribeLogDirs 5 served
    assert "## Kafka 4.3's client APIs" in render()
