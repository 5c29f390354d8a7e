"""Config entries as DescribeConfigs shows them: value, source, type, synonyms.

A topic config's value comes from the topic (source DYNAMIC_TOPIC_CONFIG) or
from the broker config that supplies its default (STATIC_BROKER_CONFIG when
set at start, else DEFAULT_CONFIG), with that broker config as its synonym,
as Kafka reports it. Broker configs are static (set at start: the properties file,
``--config`` or a ``serve`` flag standing for a config) or defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkette.broker.config import BROKER_CONFIGS, TOPIC_CONFIGS

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8

SOURCE_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

CONFIG_TYPES = {
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}


def _entry(
    name: str,
    value: str | None,
    source: int,
    type_: str,
    doc: str,
    synonyms: list[dict],
    read_only: bool = False,
) -> dict:
    # Kafka never tells a password's value (keystore passwords, inline keys, JAAS).
    sensitive = type_ == "PASSWORD"
    if sensitive:
        value = None
        synonyms = [{**synonym, "value": None} for synonym in synonyms]
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "config_source": source,
        "is_default": source == SOURCE_DEFAULT,
        "is_sensitive": sensitive,
        "synonyms": synonyms,
        "config_type": CONFIG_TYPES.get(type_, 0),
        "documentation": doc,
    }


def topic_config_entries(
    broker: Broker, topic: str, overrides: Mapping[str, str | None] | None = None
) -> list[dict]:
    configs = dict(broker.topics.topic_configs(topic) if overrides is None else overrides)
    entries = []
    for name, (broker_name, type_, doc) in sorted(TOPIC_CONFIGS.items()):
        synonyms = []
        if name in configs and configs[name] is not None:
            synonyms.append({"name": name, "value": configs[name], "source": SOURCE_TOPIC})
        if broker_name is not None and broker_name in broker.config.explicit:
            synonyms.append(
                {
                    "name": broker_name,
                    "value": broker.config.explicit[broker_name],
                    "source": SOURCE_STATIC_BROKER,
                }
            )
        default = broker.config.topic_default(name)
        if broker_name is not None:
            synonyms.append(
                {
                    "name": broker_name,
                    "value": BROKER_CONFIGS[broker_name].default
                    if broker_name in BROKER_CONFIGS
                    else default,
                    "source": SOURCE_DEFAULT,
                }
            )
        source = synonyms[0]["source"] if synonyms else SOURCE_DEFAULT
        value = (
            synonyms[0]["value"]
            if synonyms and synonyms[0]["source"] != SOURCE_DEFAULT
            else default
        )
        entries.append(_entry(name, value, source, type_, doc, synonyms))
    return entries


def broker_config_entries(broker: Broker) -> list[dict]:
    """Every broker config as Kafka 4.0 shows it: one set at start (file, ``--config``
    or a flag) is STATIC_BROKER_CONFIG, with synonyms [static value, default value]
    (the default left out when it is null); otherwise DEFAULT_CONFIG."""
    given = broker.config.given_at_start()
    flags = broker.config.flags
    if "listeners" in flags and "advertised.listeners" not in given and broker.listener_plan.simple:
        # --listen alone: clients are told the listen address (the bound port once bound).
        given["advertised.listeners"] = f"PLAINTEXT://{broker.advertised}"
    entries = []
    for name, definition in sorted(BROKER_CONFIGS.items()):
        if name in given:
            value = given[name]
            source = SOURCE_STATIC_BROKER
            synonyms = [{"name": name, "value": value, "source": SOURCE_STATIC_BROKER}]
            if definition.default is not None:
                default = {"name": name, "value": definition.default, "source": SOURCE_DEFAULT}
                synonyms.append(default)
        else:
            value = broker.config.value_of(name)
            source = SOURCE_DEFAULT
            synonyms = [{"name": name, "value": value, "source": source}]
        entries.append(
            _entry(name, value, source, definition.type, definition.doc, synonyms, read_only=True)
        )
    return entries
