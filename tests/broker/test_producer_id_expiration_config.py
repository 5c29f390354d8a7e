"""``producer.id.expiration.ms``: Kafka's broker config, Kafka's default, refused below 1."""

from __future__ import annotations

import pytest

from kafkette.broker.config import ConfigError, load_config


def test_producer_id_expiration_is_a_broker_config() -> None:
    assert load_config({}).log.producer_id_expiration_ms == 86_400_000
    config = load_config({"producer.id.expiration.ms": "60000"})
    assert config.log.producer_id_expiration_ms == 60_000
    assert config.value_of("producer.id.expiration.ms") == "60000"
    with pytest.raises(ConfigError):
        load_config({"producer.id.expiration.ms": "0"})
