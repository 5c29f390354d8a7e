"""The ``_schemas`` topic's records, byte for byte as Confluent Schema Registry writes them
(UTF-8 JSON keys with a fixed field order, values with empty fields left out), so a topic
copied from a Confluent registry loads here and the other way round.

Interface pinned on day 0 (docs/schema-registry.md "Storage"); bodies: helper A1.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkette.broker.schema_registry.formats import Reference


@dataclass(frozen=True)
class SchemaKey:
    subject: str
    version: int
    magic: int = 1


@dataclass(frozen=True)
class ConfigKey:
    subject: str | None  # None: the global config


@dataclass(frozen=True)
class ModeKey:
    subject: str | None  # None: the global mode


@dataclass(frozen=True)
class DeleteSubjectKey:
    subject: str


@dataclass(frozen=True)
class ClearSubjectKey:
    subject: str


@dataclass(frozen=True)
class NoopKey:
    pass


Key = SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey | ClearSubjectKey | NoopKey


@dataclass(frozen=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()


@dataclass(frozen=True)
class ConfigValue:
    subject: str | None
    compatibility_level: str


@dataclass(frozen=True)
class ModeValue:
    subject: str | None
    mode: str


@dataclass(frozen=True)
class DeleteSubjectValue:
    subject: str
    version: int


@dataclass(frozen=True)
class ClearSubjectValue:
    subject: str


@dataclass(frozen=True)
class NoopValue:
    """kafkette's addition: the highest id ever given, so that compaction removing the
    highest id's records cannot make a restarted registry give it again."""

    max_id: int


Value = SchemaValue | ConfigValue | ModeValue | DeleteSubjectValue | ClearSubjectValue | NoopValue


def encode_key(key: Key) -> bytes:
    raise NotImplementedError


def encode_value(value: Value | None) -> bytes | None:
    raise NotImplementedError


def decode(key: bytes, value: bytes | None) -> tuple[Key, Value | None] | None:
    """The record's key and value (None value: a tombstone); None for a record this registry
    does not know (unknown key type, garbage): the caller logs it once and skips it."""
    raise NotImplementedError
