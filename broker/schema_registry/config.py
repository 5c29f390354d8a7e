"""Schema registry settings, named as Confluent Schema Registry names them where it has a
name (``kafkastore.topic``, ``schema.compatibility.level``, ``mode.mutability``), parsed once
from the broker's properties. ``schema.registry.listeners`` unset means no registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkette.broker.config_section import from_kafka_properties, kafka_names

COMPATIBILITY_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
MODES = ("READWRITE", "READONLY", "IMPORT")


@dataclass(frozen=True)
class SchemaRegistryConfig:
    """Every field maps to the config of the same name with ``.`` for ``_``."""

    # ``http://HOST:PORT`` or ``https://HOST:PORT`` (port 0: any free port); "" = off.
    schema_registry_listeners: str = ""
    # What other brokers' registries forward writes to; "" = the bound listener's URL with
    # the broker's advertised host.
    schema_registry_advertised_url: str = ""
    schema_compatibility_level: str = "backward"
    kafkastore_topic: str = "_schemas"
    kafkastore_topic_replication_factor: int = 3
    # How long a write waits for ``_schemas`` to commit it (Confluent: 500 ms; a replicated
    # commit here can take longer), then 50002.
    kafkastore_timeout_ms: int = 5000
    mode_mutability: bool = True

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> SchemaRegistryConfig:
        return from_kafka_properties(cls, props)

    @property
    def enabled(self) -> bool:
        return bool(self.schema_registry_listeners)

    @property
    def default_level(self) -> str:
        return self.schema_compatibility_level.upper()


KAFKA_NAMES = kafka_names(SchemaRegistryConfig)
