"""JSON schemas: parse (JSON, then the metaschema of the document's ``$schema``, draft-07 when
absent, as Confluent 7.0 defaults to), print as Confluent's Jackson mapper does (compact, key
order kept, numbers as written), and check compatibility with Confluent's diff
(``json_diff``).

A reference's name is the URL a ``$ref`` uses for it; referenced schemas are registered under
that name resolved against the root's ``$id``, as Confluent registers them with its loader.
Every ``$ref`` reachable from the root must resolve (Confluent's loader resolves them while
loading), else the schema is invalid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

import jsonschema
import jsonschema_specifications
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource, Specification
from referencing.exceptions import CannotDetermineSpecification, NoInternalID, Unresolvable
from referencing.jsonschema import DRAFT4, DRAFT7, UnknownDialect, specification_with

from kafkette.broker.schema_registry.formats import (
    Dependency,
    ParsedSchema,
    Reference,
    SchemaFormatError,
    json_diff,
)
from kafkette.broker.schema_registry.formats.budget import TOO_COMPLEX
from kafkette.broker.schema_registry.formats.invalid import invalid_schema
from kafkette.broker.schema_registry.formats.json_model import Loader, Node, resolve_all
from kafkette.broker.schema_registry.formats.json_text import dumps, load_json
from kafkette.broker.schema_registry.formats.normalize import deep_sorted, sorted_references

TYPE = "JSON"
# What resolving and walking a hostile document can raise besides our own errors (a
# reference's odd ``$schema``, an ``$id`` that is no URL, nesting deeper than the stack).
_LIBRARY_ERRORS = (
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
    RecursionError,
    CannotDetermineSpecification,
    NoInternalID,
    Unresolvable,
    UnknownDialect,
)


@dataclass
class JsonNative:
    """A parsed schema: its JSON and its diff model (references resolved)."""

    document: object
    root: Node


def parse(
    text: str,
    references: Sequence[Reference],
    dependencies: Mapping[str, Dependency],
    *,
    normalize: bool,
) -> ParsedSchema:
    """``text`` parsed and checked against its metaschema, its ``$ref``s resolved through
    ``dependencies``; raises ``SchemaFormatError`` with Confluent's 42201 text and the
    reason."""
    try:
        document = _load_json(text)
        _check_metaschema(document)
        root = _model(document, references, dependencies)
    except SchemaFormatError as exc:
        raise invalid_schema(text, references, TYPE, str(exc)) from None
    if normalize:
        document = deep_sorted(document)
        references = sorted_references(references)
    return ParsedSchema(TYPE, dumps(document), tuple(references), JsonNative(document, root))


def render(parsed: ParsedSchema, fmt: str | None) -> str:
    """The canonical text whatever ``fmt`` asks."""
    return parsed.canonical


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why ``reader`` (the update) cannot read data valid under ``writer`` (the original),
    as Confluent 7.0 words it."""
    r_native, w_native = reader.native, writer.native
    assert isinstance(r_native, JsonNative) and isinstance(w_native, JsonNative)
    try:
        found = json_diff.incompatible(w_native.root, r_native.root)
    except RecursionError:
        raise SchemaFormatError(TOO_COMPLEX) from None
    return [f"Found incompatible change: {diff}" for diff in found]


def _load_json(text: str) -> dict:
    """A JSON object with decimals kept as written (Confluent reads them as ``BigDecimal``)."""
    document = load_json(text, decimals=True)
    if not isinstance(document, dict):
        raise SchemaFormatError("a JSON schema must be a JSON object")
    return document


def _check_metaschema(document: dict) -> None:
    try:
        validator = jsonschema.validators.validator_for(
            document, default=jsonschema.Draft7Validator
        )
    except TypeError:  # an unhashable "$schema": the draft-07 metaschema says what is wrong
        validator = jsonschema.Draft7Validator
    try:
        validator.check_schema(document)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        raise SchemaFormatError(f"{exc.message} at #/{where}") from None
    except RecursionError:
        raise SchemaFormatError("schema nested too deeply") from None


def _specification(document: dict) -> Specification:
    return specification_with(str(document.get("$schema", "")), default=DRAFT7)


def _model(
    document: dict, references: Sequence[Reference], dependencies: Mapping[str, Dependency]
) -> Node:
    """The diff model of ``document`` with every reachable ``$ref`` resolved."""
    specification = _specification(document)
    draft4 = specification is DRAFT4
    base = document.get("id" if draft4 else "$id")
    base = base if isinstance(base, str) else ""
    try:
        resources = [(base, specification.create_resource(document))]
        for name in _closure(references, dependencies):
            dep_document = _dependency_document(name, dependencies[name])
            resource = Resource.from_contents(dep_document, default_specification=DRAFT7)
            resources.append((urljoin(base, name) if base else name, resource))
        registry: Registry = jsonschema_specifications.REGISTRY.with_resources(resources)
        registry = registry.crawl()
        loader = Loader(draft4, specification)
        root = loader.load(document, registry.resolver(base_uri=base))
        resolve_all(root)
    except _LIBRARY_ERRORS as exc:
        raise SchemaFormatError(str(exc) or type(exc).__name__) from None
    return root


def _dependency_document(name: str, dependency: Dependency) -> dict:
    """A referenced schema's JSON object (one registered as another type, e.g. an Avro
    ``"string"``, is not one)."""
    try:
        document = _load_json(dependency.text)
    except SchemaFormatError as exc:
        raise SchemaFormatError(f"Reference {name} is not a JSON schema: {exc}") from None
    dialect = document.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise SchemaFormatError(f"Reference {name} has a $schema that is not a string")
    return document


def _closure(references: Sequence[Reference], dependencies: Mapping[str, Dependency]) -> list[str]:
    """The reference names reachable from ``references`` (each once)."""
    out: list[str] = []
    stack = [ref.name for ref in reversed(references)]
    while stack:
        name = stack.pop()
        if name in out:
            continue
        dependency = dependencies.get(name)
        if dependency is None:
            raise SchemaFormatError(f"Reference {name} was not found")
        out.append(name)
        stack.extend(ref.name for ref in reversed(dependency.references))
    return out
