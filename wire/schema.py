"""Kafka's JSON message definitions, read from the installed kafka-python package.

kafka-python ships Apache Kafka's own ``*Request.json``/``*Response.json``
files in ``kafka/protocol/schemas/resources``. We read them from there (never
copy them into this repository), strip their ``//`` comments, resolve
``commonStructs`` and turn each field into a ``FieldSpec``. Loading is lazy and
cached per message, so start-up pays only for the APIs that are used.

The folder is found from the ``kafka`` package's import spec rather than by
importing it: ``import kafka`` runs kafka-python's client code (~80 ms), which a
broker never uses, and a broker's start time is a product figure.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.resources only for a definitions folder not on disk
    from importlib.resources.abc import Traversable

SCHEMA_PACKAGE = "kafka.protocol.schemas.resources"

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

ALWAYS = (0, 0x7FFF)
NEVER = (1, 0)


def parse_versions(text: str | None) -> tuple[int, int]:
    """``"3+"`` -> (3, 32767), ``"1-4"`` -> (1, 4), ``"5"`` -> (5, 5), ``"none"`` -> empty."""
    if text is None or text == "none" or text == "":
        return NEVER
    text = text.strip()
    if text.endswith("+"):
        return int(text[:-1]), ALWAYS[1]
    if "-" in text:
        low, high = text.split("-", 1)
        return int(low), int(high)
    return int(text), int(text)


def in_range(version: int, versions: tuple[int, int]) -> bool:
    return versions[0] <= version <= versions[1]


def snake_case(name: str) -> str:
    """Kafka's ``ThrottleTimeMs`` -> ``throttle_time_ms``: the key used in message dicts."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message or struct, as the definition states it."""

    name: str  # snake_case key in message dicts
    json_name: str
    type: str  # "int32", "string", "[]int32", "[]SomeStruct", "SomeStruct", "records", ...
    versions: tuple[int, int]
    nullable_versions: tuple[int, int]
    tagged_versions: tuple[int, int]
    tag: int | None
    flexible_versions: tuple[int, int] | None  # a field-level override (header ClientId)
    default: object
    fields: tuple[FieldSpec, ...]  # for struct and array-of-struct types

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return bool(self.fields) or self.element_type[:1].isupper()


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A whole request, response or header definition."""

    name: str
    api_key: int | None
    kind: str  # "request", "response", "header", "data"
    valid_versions: tuple[int, int]
    flexible_versions: tuple[int, int]
    fields: tuple[FieldSpec, ...]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, self.flexible_versions)


def _strip_comments(text: str) -> str:
    """Kafka's definitions carry only whole-line ``//`` comments."""
    return _COMMENT.sub("", text)


def _parse_default(raw: object, type_name: str) -> object:
    """The definition's ``default`` (a string or absent) as a Python value."""
    if type_name.startswith("[]"):
        return ()
    if raw is None:
        return _TYPE_DEFAULTS.get(type_name)
    if raw == "null":
        return None
    if type_name in ("string",):
        return raw
    if type_name == "bool":
        return raw in (True, "true")
    if type_name == "float64":
        return float(raw)
    if type_name in _INT_TYPES:
        text = str(raw)
        return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)
    return None


_INT_TYPES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
_TYPE_DEFAULTS: dict[str, object] = {
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": None,  # filled with the all-zero UUID by the codec
}


def _build_field(raw: dict, common: dict[str, list]) -> FieldSpec:
    type_name = raw["type"]
    element = type_name[2:] if type_name.startswith("[]") else type_name
    children = raw.get("fields")
    if children is None and element[:1].isupper():
        children = common.get(element, [])
    tag = raw.get("tag")
    return FieldSpec(
        name=snake_case(raw["name"]),
        json_name=raw["name"],
        type=type_name,
        versions=parse_versions(raw.get("versions")),
        nullable_versions=parse_versions(raw.get("nullableVersions")),
        tagged_versions=parse_versions(raw.get("taggedVersions")) if tag is not None else NEVER,
        tag=tag,
        flexible_versions=(
            parse_versions(raw["flexibleVersions"]) if "flexibleVersions" in raw else None
        ),
        default=_parse_default(raw.get("default"), type_name),
        fields=tuple(_build_field(child, common) for child in children or ()),
    )


@functools.cache
def schema_folder() -> Traversable:
    """The folder holding the ``*.json`` definitions, found without running ``kafka/__init__``.

    A plain install puts it on disk under the package's search location; anything else (a
    zip import, an unusual loader) falls back to ``importlib.resources``, which imports
    the package.
    """
    spec = importlib.util.find_spec(SCHEMA_PACKAGE.partition(".")[0])
    relative = SCHEMA_PACKAGE.split(".")[1:]
    for location in (spec.submodule_search_locations or ()) if spec else ():
        folder = Path(location).joinpath(*relative)
        if folder.is_dir():
            return folder
    from importlib.resources import files

    return files(SCHEMA_PACKAGE)


def _supplement(name: str) -> dict:
    """A definition kafka-python lacks, from ``wire/supplement`` (imported only then)."""
    from kafkette.wire import supplement

    raw = supplement.definition(name)
    if raw is None:
        raise LookupError(f"kafka-python ships no message definition {name!r}")
    return raw


@functools.cache
def load_message(name: str) -> MessageSpec:
    """Load one definition by its file name without ``.json`` (e.g. ``"FetchRequest"``);
    kafka-python's file first, ``wire/supplement`` when it has none."""
    resource = schema_folder().joinpath(name + ".json")
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = _supplement(name)
    else:
        raw = json.loads(_strip_comments(text))
    common = {s["name"]: s["fields"] for s in raw.get("commonStructs", ())}
    return MessageSpec(
        name=raw["name"],
        api_key=raw.get("apiKey"),
        kind=raw["type"],
        valid_versions=parse_versions(raw.get("validVersions")),
        flexible_versions=parse_versions(raw.get("flexibleVersions")),
        fields=tuple(_build_field(f, common) for f in raw["fields"]),
    )
