"""The three schema types a registry serves (AVRO, JSON, PROTOBUF), behind one interface:
parse a registered text into a ``ParsedSchema`` (or refuse it with the parser's reason), print
it back (``render``), and say whether a reader schema can read a writer's data (``check``).
``levels.check_level`` turns ``check`` into Confluent's compatibility levels.

Synchronous and without trio: the registry runs these in a worker thread. AVRO and JSON are
pure computations; PROTOBUF writes the schema and its references to a temporary directory and
compiles them with protoc in a child process (``protoc_child``). Each type's module is
imported on first use, so a registry that only sees Avro never loads protoc.

They run on whatever any client sends, so they are bounded: bad input of any kind is a
``SchemaFormatError`` (never another exception), and ``check`` raises one too
(``budget.TOO_COMPLEX``) rather than run without end on a pathological pair of schemas.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

SCHEMA_TYPES = ("JSON", "PROTOBUF", "AVRO")  # the order /schemas/types answers in
_MODULES = {"AVRO": "avro", "JSON": "json_schema", "PROTOBUF": "protobuf"}


@dataclass(frozen=True)
class Reference:
    """A schema reference as registered: ``name`` (an Avro full name, a JSON ``$ref`` URL, a
    Protobuf import path) points at ``subject`` version ``version``."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Dependency:
    """A referenced schema's registered text, found through a ``Reference``; its own
    references are resolved in the same ``dependencies`` mapping (the transitive closure)."""

    name: str
    schema_type: str
    text: str
    references: tuple[Reference, ...] = ()


@dataclass(frozen=True)
class ParsedSchema:
    """A valid schema. ``canonical`` is the text the registry stores and answers with, and
    compares for dedupe (with ``references``); ``native`` is the format's own object."""

    schema_type: str
    canonical: str
    references: tuple[Reference, ...] = ()
    native: object = field(default=None, compare=False, repr=False)


class SchemaFormatError(Exception):
    """The schema is invalid; the message is the parser's reason (answered as 42201)."""


def _module(schema_type: str) -> ModuleType:
    try:
        name = _MODULES[schema_type]
    except KeyError:
        raise SchemaFormatError(f"Invalid schema type {schema_type}") from None
    return importlib.import_module(f"{__name__}.{name}")


def parse(
    schema_type: str,
    text: str,
    references: Sequence[Reference] = (),
    dependencies: Mapping[str, Dependency] | None = None,
    *,
    normalize: bool = False,
) -> ParsedSchema:
    """``text`` of ``schema_type`` parsed with its references resolved in ``dependencies``
    (keyed by reference name, transitive); ``normalize`` asks for Confluent's normalized
    canonical text. Raises ``SchemaFormatError`` with the reason."""
    return _module(schema_type).parse(
        text, tuple(references), dict(dependencies or {}), normalize=normalize
    )


def render(parsed: ParsedSchema, fmt: str | None = None) -> str:
    """The schema's text for an answer: ``fmt`` is the ``format`` query parameter
    (``serialized`` for PROTOBUF: base64 of the FileDescriptorProto; ``resolved`` for AVRO);
    None or an unknown value: ``canonical``."""
    return _module(parsed.schema_type).render(parsed, fmt)


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer`` (both of one type), as
    Confluent words it; [] when it can. Raises ``SchemaFormatError`` when the comparison is
    too complex to finish (see ``budget``): not an incompatibility."""
    return _module(reader.schema_type).check(reader, writer)
