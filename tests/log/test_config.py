"""LogConfig parsing from Kafka's topic-level and broker-level names."""

from __future__ import annotations

import pytest

from kafkette.log import LogConfig, log_config_for, log_config_from_broker_props


def test_topic_names_override_broker_defaults():
    base = LogConfig(retention_ms=5)
    config = log_config_for(
        {
            "segment.bytes": "1024",
            "segment.ms": "60000",
            "retention.ms": "-1",
            "retention.bytes": "2048",
            "index.interval.bytes": "10",
            "segment.index.bytes": "120",
            "flush.messages": "1",
            "flush.ms": "0",
            "cleanup.policy": "delete, compact",
            "message.timestamp.type": "LogAppendTime",
            "max.message.bytes": "12",  # not a log setting: ignored
        },
        base,
    )
    assert config == LogConfig(
        segment_bytes=1024, segment_ms=60000, retention_ms=-1, retention_bytes=2048,
        index_interval_bytes=10, max_index_bytes=120, flush_interval_messages=1,
        flush_interval_ms=0, cleanup_policy="compact,delete",
        message_timestamp_type="LogAppendTime",
    )
    assert not LogConfig(cleanup_policy="compact").deletes
    assert config.deletes
    assert log_config_for({}, base) == base


@pytest.mark.parametrize(
    "name,value",
    [
        ("segment.bytes", "abc"),
        ("segment.bytes", "10"),
        ("retention.ms", "-2"),
        ("flush.messages", "0"),
        ("cleanup.policy", "shred"),
        ("message.timestamp.type", "WallTime"),
        ("segment.index.bytes", "4"),
    ],
)
def test_bad_values_raise_naming_nothing_silently(name, value):
    with pytest.raises(ValueError):
        log_config_for({name: value}, LogConfig())


def test_broker_props_with_kafka_precedence():
    config = log_config_from_broker_props(
        {
            "log.retention.hours": "1",
            "log.roll.hours": "2",
            "log.roll.ms": "500",
            "log.segment.bytes": "4096",
            "log.flush.interval.messages": "10",
            "log.cleanup.policy": "delete",
        }
    )
    assert config.retention_ms == 3_600_000
    assert config.segment_ms == 500  # log.roll.ms beats log.roll.hours
    assert (config.segment_bytes, config.flush_interval_messages) == (4096, 10)
    assert log_config_from_broker_props({"log.retention.minutes": "2",
                                         "log.retention.ms": "7"}).retention_ms == 7
