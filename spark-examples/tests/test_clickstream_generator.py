"""The clickstream generator: deterministic events, and its CLI producing them keyed by user."""

from __future__ import annotations

import json
from datetime import datetime

from clickstream_generator import PAGES, generate_page_views, main


def test_same_seed_same_events_and_longer_runs_extend_shorter_ones():
    assert generate_page_views(50, seed=3) == generate_page_views(50, seed=3)
    assert generate_page_views(50, seed=3) != generate_page_views(50, seed=4)
    assert generate_page_views(20, seed=3, skip=30) == generate_page_views(50, seed=3)[30:]


def test_events_are_out_of_order_by_at_most_the_lateness_bound():
    views = generate_page_views(2000, max_lateness_ms=20_000)
    newest = views[0].timestamp_ms
    late = 0
    for view in views:
        assert view.timestamp_ms >= newest - 20_000
        late += view.timestamp_ms < newest
        newest = max(newest, view.timestamp_ms)
    assert late > 100  # the watermark has real work to do
    assert {view.page for view in views} == set(PAGES)


def test_json_body_carries_user_page_and_utc_timestamp():
    view = generate_page_views(1, seed=9)[0]
    body = json.loads(view.value)
    assert body["user"] == view.user == view.key.decode()
    assert body["page"] == view.page
    assert body["timestamp"].endswith("Z")
    assert datetime.fromisoformat(body["timestamp"]).timestamp() * 1000 == view.timestamp_ms


def test_cli_produces_the_events_keyed_by_user(bootstrap, topic_name, read_topic, capsys):
    topic = topic_name()

    main(["--bootstrap-server", bootstrap, "--topic", topic, "--count", "120", "--seed", "5",
          "--skip", "10", "--partitions", "3"])

    assert f"produced 120 page views (seq 10..129) to {topic}" in capsys.readouterr().out
    records = read_topic(topic)
    expected = generate_page_views(120, seed=5, skip=10)
    assert sorted(value for *_, value in records) == sorted(v.value for v in expected)
    partitions_of_user: dict[bytes, set[int]] = {}
    for partition, _, key, value in records:
        assert json.loads(value)["user"].encode() == key
        partitions_of_user.setdefault(key, set()).add(partition)
    assert all(len(parts) == 1 for parts in partitions_of_user.values())
    assert {p for parts in partitions_of_user.values() for p in parts} == {0, 1, 2}


def test_a_topic_the_generator_creates_keeps_its_2024_records(bootstrap, topic_name):
    """The events are dated 2024: a topic with Kafka's default time retention (7 days) would
    lose them at the broker's next retention check, so the generator's topics have none."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    topic = topic_name()
    main(["--bootstrap-server", bootstrap, "--topic", topic, "--count", "5"])

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    # The topic's own setting (this session's broker has log.retention.ms=-1 as well).
    assert configs["retention.ms"].value == "-1"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
