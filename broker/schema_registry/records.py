"""The ``_schemas`` topic's records, byte for byte as Confluent Schema Registry writes them
(UTF-8 JSON keys with a fixed field order, values with empty fields left out), so a topic
copied from a Confluent registry loads here and the other way round.

Interface pinned on day 0 (docs/schema-registry.md "Storage"); bodies: helper A1.

Writing copies Jackson's output exactly: fields in the order Confluent's classes declare them
(keys: ``@JsonPropertyOrder``; values: the ``@JsonCreator`` parameters), empty strings, nulls
and empty lists left out (``NON_EMPTY``), ``false`` and ``0`` written, no whitespace, UTF-8,
and Jackson's string escapes (``\\uXXXX`` in upper case; characters beyond the BMP written as
an escaped surrogate pair). Reading is lenient where Confluent's reader is (unknown fields,
legacy values without a subject) and refuses what it refuses (SCHEMA magic other than 0/1).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kafkette.broker.schema_registry.config import COMPATIBILITY_LEVELS
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
    subject: str | None  # None: every subject (entering IMPORT globally)


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
    subject: str | None


@dataclass(frozen=True)
class NoopValue:
    """kafkette's addition: the highest id ever given, so that compaction removing the
    highest id's records cannot make a restarted registry give it again."""

    max_id: int


Value = SchemaValue | ConfigValue | ModeValue | DeleteSubjectValue | ClearSubjectValue | NoopValue


# Confluent 7.0's modes (``READONLY_OVERRIDE`` included: a topic written by Confluent may hold it).
_MODES = frozenset({"READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"})
# -- writing -------------------------------------------------------------------------------

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_TO_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff\U00010000-\U0010ffff]')


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code > 0xFFFF:  # Jackson writes a surrogate pair, each half escaped
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def _string(text: str) -> str:
    return '"' + _TO_ESCAPE.sub(_escape, text) + '"'


def _json(value: object) -> str:
    """Compact JSON as Jackson writes it (dicts keep their order; no whitespace)."""
    if isinstance(value, str):
        return _string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(k)}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to _schemas")


def _object(*fields: tuple[str, object]) -> bytes:
    """A JSON object of ``fields`` in order, leaving out what ``NON_EMPTY`` leaves out."""
    kept = {
        name: value for name, value in fields if value is not None and value != "" and value != ()
    }
    return _json(kept).encode("utf-8")


_SUBJECT_KEYS: tuple[tuple[type, str], ...] = (
    (ConfigKey, "CONFIG"),
    (ModeKey, "MODE"),
    (DeleteSubjectKey, "DELETE_SUBJECT"),
    (ClearSubjectKey, "CLEAR_SUBJECT"),
)


def encode_key(key: Key) -> bytes:
    if isinstance(key, SchemaKey):
        return _object(
            ("keytype", "SCHEMA"),
            ("subject", key.subject),
            ("version", key.version),
            ("magic", key.magic),
        )
    for cls, keytype in _SUBJECT_KEYS:
        if isinstance(key, cls):
            return _object(("keytype", keytype), ("subject", key.subject), ("magic", 0))
    if isinstance(key, NoopKey):
        return _object(("keytype", "NOOP"), ("magic", 0))
    raise TypeError(f"not a _schemas key: {key!r}")


def _reference(ref: Reference) -> dict[str, object]:
    return {
        name: value
        for name, value in (("name", ref.name), ("subject", ref.subject), ("version", ref.version))
        if value is not None and value != ""
    }


def encode_value(value: Value | None) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, SchemaValue):
        return _object(
            ("subject", value.subject),
            ("version", value.version),
            ("id", value.id),
            ("schemaType", None if value.schema_type == "AVRO" else value.schema_type),
            ("references", tuple(_reference(r) for r in value.references)),
            ("schema", value.schema),
            ("deleted", value.deleted),
        )
    if isinstance(value, ConfigValue):
        return _object(
            ("subject", value.subject), ("compatibilityLevel", value.compatibility_level)
        )
    if isinstance(value, ModeValue):
        return _object(("subject", value.subject), ("mode", value.mode))
    if isinstance(value, DeleteSubjectValue):
        return _object(("subject", value.subject), ("version", value.version))
    if isinstance(value, ClearSubjectValue):
        return _object(("subject", value.subject))
    if isinstance(value, NoopValue):
        return _object(("maxId", value.max_id))
    raise TypeError(f"not a _schemas value: {value!r}")


# -- reading -------------------------------------------------------------------------------


class _Garbage(Exception):
    """A record this registry cannot read; ``decode`` answers None for it."""


def _load(data: bytes) -> dict[str, object]:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are
        # ValueErrors; anyone who can produce to the topic can nest arrays deeper than the
        # decoder goes: garbage too, never an exception that stops the tail
        raise _Garbage from None
    if not isinstance(obj, dict):
        raise _Garbage
    return obj


def _int(obj: dict[str, object], name: str, default: int | None = None) -> int:
    value = obj.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Garbage
    return value


def _str(obj: dict[str, object], name: str, default: str | None = None) -> str | None:
    value = obj.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _Garbage
    return value


def _subject(obj: dict[str, object]) -> str:
    subject = _str(obj, "subject")
    return "" if subject is None else subject  # NON_EMPTY left an empty subject out


def _decode_key(obj: dict[str, object]) -> Key | None:
    keytype = obj.get("keytype")
    if keytype == "SCHEMA":
        magic = _int(obj, "magic", 1)
        if magic not in (0, 1):
            raise _Garbage
        return SchemaKey(_subject(obj), _int(obj, "version"), magic)
    if keytype == "CONFIG":
        return ConfigKey(_str(obj, "subject"))
    if keytype == "MODE":
        return ModeKey(_str(obj, "subject"))
    if keytype == "DELETE_SUBJECT":
        return DeleteSubjectKey(_subject(obj))
    if keytype == "CLEAR_SUBJECT":
        return ClearSubjectKey(_str(obj, "subject"))
    if keytype == "NOOP":
        return NoopKey()
    return None  # CONTEXT (non-default contexts are not served), ASSOC, unknown


def _references(raw: object) -> tuple[Reference, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _Garbage
    refs = []
    for item in raw:
        if not isinstance(item, dict):
            raise _Garbage
        name, subject = _str(item, "name"), _str(item, "subject")
        if name is None or subject is None:
            raise _Garbage
        refs.append(Reference(name, subject, _int(item, "version")))
    return tuple(refs)


def _decode_value(key: Key, obj: dict[str, object]) -> Value | None:
    if isinstance(key, SchemaKey):
        deleted = obj.get("deleted", False)
        schema = _str(obj, "schema")
        if schema is None or not isinstance(deleted, bool | None):
            raise _Garbage
        schema_type = _str(obj, "schemaType") or "AVRO"
        return SchemaValue(
            subject=_str(obj, "subject", key.subject) or key.subject,
            version=_int(obj, "version", key.version),
            id=_int(obj, "id"),
            schema=schema,
            deleted=bool(deleted),
            schema_type=schema_type,
            references=_references(obj.get("references")),
        )
    if isinstance(key, ConfigKey):
        level = _str(obj, "compatibilityLevel")
        if level is None:  # a newer registry's config with other fields only: no level set
            return None
        if level.upper() not in COMPATIBILITY_LEVELS:
            raise _Garbage
        return ConfigValue(_str(obj, "subject", key.subject), level.upper())
    if isinstance(key, ModeKey):
        mode = _str(obj, "mode")
        if mode is None:
            return None
        if mode.upper() not in _MODES:
            raise _Garbage
        return ModeValue(_str(obj, "subject", key.subject), mode.upper())
    if isinstance(key, DeleteSubjectKey):
        return DeleteSubjectValue(_str(obj, "subject") or key.subject, _int(obj, "version"))
    if isinstance(key, ClearSubjectKey):
        return ClearSubjectValue(_str(obj, "subject", key.subject))
    raise _Garbage


def decode(key: bytes, value: bytes | None) -> tuple[Key, Value | None] | None:
    """The record's key and value (None value: a tombstone); None for a record this registry
    does not know (unknown key type, garbage): the caller logs it once and skips it."""
    try:
        decoded_key = _decode_key(_load(key))
        if decoded_key is None:
            return None
        if isinstance(decoded_key, NoopKey):
            # Confluent writes null and ignores any value; kafkette's carries the max id.
            return decoded_key, _decode_noop(value)
        if value is None:
            return decoded_key, None
        return decoded_key, _decode_value(decoded_key, _load(value))
    except _Garbage:
        return None


def _decode_noop(value: bytes | None) -> NoopValue | None:
    if value is None:
        return None
    try:
        max_id = _int(_load(value), "maxId")
    except _Garbage:
        return None
    return NoopValue(max_id)
