"""Share groups' GROUP configs: Kafka's validators and messages, ISO-8601 durations for
share.auto.offset.reset=by_duration, and the settings a group runs with."""

from __future__ import annotations

import pytest

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.share_groups.group_configs import (
    GroupConfigError,
    GroupConfigStore,
    default_of,
    duration_ms,
    validate,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("PT1H", 3_600_000), ("P1D", 86_400_000), ("PT1.5S", 1500), ("P1DT2H30M", 95_400_000)],
)
def test_iso_durations(text: str, ms: int) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "PT-1H", "P1W"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(GroupConfigError):
        duration_ms(text)


def test_validators_follow_the_broker_bounds() -> None:
    groups = GroupConfig()
    validate("share.record.lock.duration.ms", "15000", groups)
    validate("share.auto.offset.reset", "by_duration:PT10M", groups)
    validate("share.auto.offset.reset", "EARLIEST", groups)
    for name, value, message in [
        ("share.record.lock.duration.ms", "14999", "Value must be at least 15000"),
        ("share.record.lock.duration.ms", "60001", "Value must be no more than 60000"),
        ("share.delivery.count.limit", "x", "Not a number of type INT"),
        ("share.auto.offset.reset", "sometime", "must be either 'earliest', 'latest'"),
        ("share.isolation.level", "dirty", "String must be one of"),
        ("consumer.session.timeout.ms", "45000", "Unknown group config name"),
    ]:
        with pytest.raises(GroupConfigError, match=message):
            validate(name, value, groups)
    lowered = GroupConfig(group_share_min_record_lock_duration_ms=1000)
    validate("share.record.lock.duration.ms", "1000", lowered)


def test_defaults_come_from_the_broker() -> None:
    groups = GroupConfig(group_share_delivery_count_limit=7)
    assert default_of("share.delivery.count.limit", groups) == "7"
    assert default_of("share.auto.offset.reset", groups) == "latest"


def test_store_survives_reopening(tmp_path) -> None:
    path = tmp_path / "group-configs.json"
    store = GroupConfigStore(path)
    store.replace("g", {"share.auto.offset.reset": "earliest"})
    store.replace("h", {"share.isolation.level": "read_committed"})
    store.replace("h", {})
    again = GroupConfigStore(path)
    assert again.get("g") == {"share.auto.offset.reset": "earliest"}
    assert again.get("h") == {}
