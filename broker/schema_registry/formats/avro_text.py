"""Avro schema text as Java Avro's ``Schema.toString()`` prints it, and Confluent's normalized
form, over schemas parsed by the ``avro`` library.

Confluent stores and answers the Java print, so a schema registered by the Python serializer
(the user's own spelling) and by the Java one (``toString()``) must print to the same text to
dedupe to one id. Java's order: record ``type,name,namespace,doc,fields,<props>,aliases``;
field ``name,type,doc,default,order,aliases,<props>``; enum ``type,name,namespace,doc,symbols,
default,<props>,aliases``; fixed ``type,name,namespace,doc,size,<props>,aliases``; a
``namespace`` only where it differs from the enclosing one, names referenced relative to it.

The avro library drops or adds some properties (a fixed's ``doc``, a decimal's ``scale``), so
properties come from the input JSON: ``index_raw`` maps each parsed schema to the JSON object it
was parsed from.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from kafkette.broker.schema_registry.formats.json_text import dumps, java_sort_key, quote
from kafkette.broker.schema_registry.formats.normalize import deep_sorted

NAMED = ("record", "error", "enum", "fixed")
PRIMITIVE_NAMES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
# Java's Schema.Type names: a same-namespace reference that spells one is written in full.
_TYPE_NAMES = (*PRIMITIVE_NAMES, "record", "enum", "array", "map", "union", "fixed")
_SCHEMA_RESERVED = frozenset(
    ("doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases")
)
_ENUM_RESERVED = _SCHEMA_RESERVED | {"default"}
FIELD_RESERVED = frozenset(("default", "doc", "name", "order", "type", "aliases"))
# Java Avro 1.10/1.11 logical types and the types they apply to (decimal: bytes and fixed).
_LOGICAL = {
    "date": "int",
    "time-millis": "int",
    "time-micros": "long",
    "timestamp-millis": "long",
    "timestamp-micros": "long",
    "local-timestamp-millis": "long",
    "local-timestamp-micros": "long",
    "uuid": "string",
}


def index_raw(raw: object, schema: Any, out: dict[int, dict]) -> None:
    """Record in ``out`` the JSON object each schema object in ``schema`` came from."""
    if isinstance(raw, list):
        for raw_branch, branch in zip(raw, schema.schemas, strict=False):
            index_raw(raw_branch, branch, out)
        return
    if not isinstance(raw, dict) or id(schema) in out:
        return
    out[id(schema)] = raw
    if schema.type in ("record", "error"):
        for raw_field, field in zip(raw.get("fields") or (), schema.fields, strict=False):
            index_raw(raw_field.get("type"), field.type, out)
    elif schema.type == "array":
        index_raw(raw.get("items"), schema.items, out)
    elif schema.type == "map":
        index_raw(raw.get("values"), schema.values, out)


def java_type(schema: Any) -> str:
    """Java's ``Schema.Type`` name of ``schema`` (``RECORD``, ``INT``, ...)."""
    return "RECORD" if schema.type == "error" else schema.type.upper()


def props(schema: Any, raw_of: dict[int, dict]) -> list[tuple[str, object]]:
    """The schema's own properties (Java's ``getObjectProps``), in input order."""
    raw = raw_of.get(id(schema))
    if raw is None:
        return []
    reserved = _ENUM_RESERVED if schema.type == "enum" else _SCHEMA_RESERVED
    return [(key, value) for key, value in raw.items() if key not in reserved]


def doc(schema: Any, raw_of: dict[int, dict]) -> str | None:
    value = raw_of.get(id(schema), {}).get("doc")
    return value if isinstance(value, str) else None


def split_name(full: str) -> tuple[str | None, str]:
    space, _, name = full.rpartition(".")
    return (space or None), name


def aliases(schema: Any, raw_of: dict[int, dict]) -> list[str]:
    """A named schema's aliases as full names (Java: relative to its namespace), deduped."""
    space = split_name(schema.fullname)[0]
    out: list[str] = []
    for alias in raw_of.get(id(schema), {}).get("aliases") or ():
        full = alias if "." in alias or not space else f"{space}.{alias}"
        if full not in out:
            out.append(full)
    return out


def field_props(field: Any) -> list[tuple[str, object]]:
    return [(key, value) for key, value in field.props.items() if key not in FIELD_RESERVED]


def field_aliases(field: Any) -> list[str]:
    out: list[str] = []
    for alias in field.props.get("aliases") or ():
        if alias not in out:
            out.append(alias)
    return out


def field_default(field: Any) -> object:
    """The field's default as Java holds it: a text default of a float/double field is a
    number (Java converts it while parsing)."""
    value = field.default
    if isinstance(value, str) and field.type.type in ("float", "double"):
        return java_parse_double(value)
    return value


def java_parse_double(text: str) -> float:
    """Java's ``Double.valueOf`` for the common spellings; ValueError otherwise."""
    stripped = text.strip()
    if stripped in ("NaN", "+NaN", "-NaN"):
        return float("nan")
    if stripped.lstrip("+-") == "Infinity":
        return float("-inf") if stripped.startswith("-") else float("inf")
    if stripped.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise ValueError(f'For input string: "{text}"')
    try:
        return float(stripped.rstrip("dDfF") if stripped[-1:] in "dDfF" else stripped)
    except ValueError:
        raise ValueError(f'For input string: "{text}"') from None


def _qualified(full: str, space: str | None) -> str:
    """Java's ``Name.getQualified(space)``."""
    own_space, name = split_name(full)
    if own_space is not None and own_space == space and name not in _TYPE_NAMES:
        return name
    return full


class Printer:
    """Java's ``Schema.toJson`` walk; ``known`` are named schemas printed by name only (the
    referenced schemas of a canonical print; empty for a resolved one)."""

    def __init__(self, raw_of: dict[int, dict], known: dict[str, Any] | None = None) -> None:
        self.raw_of = raw_of
        self.names: dict[str, Any] = dict(known or {})
        self.space: str | None = None

    def print(self, schema: Any) -> str:
        out: list[str] = []
        self._schema(schema, out)
        return "".join(out)

    def _schema(self, schema: Any, out: list[str]) -> None:
        kind = schema.type
        if kind == "union":
            out.append("[")
            for index, branch in enumerate(schema.schemas):
                if index:
                    out.append(",")
                self._schema(branch, out)
            out.append("]")
        elif kind in NAMED:
            self._named(schema, out)
        elif kind in ("array", "map"):
            key = "items" if kind == "array" else "values"
            out.append(f'{{"type":"{kind}","{key}":')
            self._schema(schema.items if kind == "array" else schema.values, out)
            self._props(props(schema, self.raw_of), out)
            out.append("}")
        else:
            own = props(schema, self.raw_of)
            if not own:
                out.append(quote(kind))
            else:
                out.append(f'{{"type":"{kind}"')
                self._props(own, out)
                out.append("}")

    def _named(self, schema: Any, out: list[str]) -> None:
        full = schema.fullname
        if full in self.names:
            out.append(quote(_qualified(full, self.space)))
            return
        self.names[full] = schema
        space, name = split_name(full)
        saved = self.space
        out.append(f'{{"type":{quote(schema.type)},"name":{quote(name)}')
        if space is not None:
            if space != self.space:
                out.append(f',"namespace":{quote(space)}')
        elif self.space is not None:
            out.append(',"namespace":""')
        if schema.type in ("record", "error"):
            self.space = space
        text = doc(schema, self.raw_of)
        if text is not None:
            out.append(f',"doc":{quote(text)}')
        if schema.type == "enum":
            out.append(',"symbols":' + dumps(list(schema.symbols)))
            default = schema.props.get("default")
            if isinstance(default, str):
                out.append(f',"default":{quote(default)}')
        elif schema.type == "fixed":
            out.append(f',"size":{schema.size}')
        else:
            out.append(',"fields":[')
            for index, field in enumerate(schema.fields):
                if index:
                    out.append(",")
                self._field(field, out)
            out.append("]")
        self._props(props(schema, self.raw_of), out)
        names = aliases(schema, self.raw_of)
        if names:
            out.append(',"aliases":' + dumps([_qualified(alias, space) for alias in names]))
        out.append("}")
        self.space = saved

    def _field(self, field: Any, out: list[str]) -> None:
        out.append(f'{{"name":{quote(field.name)},"type":')
        self._schema(field.type, out)
        if isinstance(field.doc, str):
            out.append(f',"doc":{quote(field.doc)}')
        if field.has_default:
            out.append(',"default":' + dumps(field_default(field)))
        if field.order in ("descending", "ignore"):
            out.append(f',"order":"{field.order}"')
        names = field_aliases(field)
        if names:
            out.append(',"aliases":' + dumps(names))
        self._props(field_props(field), out)
        out.append("}")

    @staticmethod
    def _props(items: list[tuple[str, object]], out: list[str]) -> None:
        for key, value in items:
            out.append(f",{quote(key)}:{dumps(value)}")


def _sorted_props(items: list[tuple[str, object]]) -> list[tuple[str, object]]:
    return sorted(((key, deep_sorted(value)) for key, value in items), key=_first_key)


def _first_key(item: tuple[str, object]) -> bytes:
    return java_sort_key(item[0])


def _logical(schema: Any, raw_of: dict[int, dict]) -> dict[str, object]:
    """The logical-type properties Java writes first in a normalized schema (empty when Java
    would not recognise a valid logical type)."""
    raw = raw_of.get(id(schema), {})
    name = raw.get("logicalType")
    kind = schema.type
    if name in _LOGICAL:
        return {"logicalType": name} if _LOGICAL[name] == kind else {}
    if name != "decimal" or kind not in ("bytes", "fixed"):
        return {}
    precision, scale = raw.get("precision"), raw.get("scale", 0)
    if not java_int(precision) or not java_int(scale):
        return {}
    assert isinstance(precision, int) and isinstance(scale, int)
    if precision <= 0 or scale < 0 or scale > precision:
        return {}
    if kind == "fixed" and precision > _max_decimal_precision(schema.size):
        return {}
    out: dict[str, object] = {"logicalType": "decimal", "precision": precision}
    if scale:
        out["scale"] = scale
    return out


def java_int(value: object) -> bool:
    """Whether ``value`` is a JSON integer in Java's ``int`` range."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31


def java_long(value: object) -> bool:
    """Whether ``value`` is a JSON integer in Java's ``long`` range."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def _max_decimal_precision(size: int) -> int:
    return math.floor(math.log10(2) * (8 * size - 1))


def normalized(schema: Any, raw_of: dict[int, dict], known: set[str]) -> object:
    """Confluent's normalized form of ``schema`` as JSON data (sorted properties, full names,
    sorted aliases; ``known``: full names printed as references). Confluent re-parses this
    and stores its Java print: so does ``avro.parse``."""
    return _Normalizer(raw_of, set(known)).schema(schema)


class _Normalizer:
    def __init__(self, raw_of: dict[int, dict], env: set[str]) -> None:
        self.raw_of = raw_of
        self.env = env

    def schema(self, schema: Any) -> object:
        kind = schema.type
        if kind == "union":
            return [self.schema(branch) for branch in schema.schemas]
        own = _sorted_props(props(schema, self.raw_of))
        if kind in ("array", "map"):
            out: dict[str, object] = {"type": kind}
            if kind == "array":
                out["items"] = self.schema(schema.items)
            else:
                out["values"] = self.schema(schema.values)
            out.update(own)
            return out
        if kind in NAMED:
            return self._named(schema, own)
        logical = _logical(schema, self.raw_of)
        if not logical and not own:
            return kind
        out = {"type": kind, **logical}
        out.update(own)
        return out

    def _named(self, schema: Any, own: list[tuple[str, object]]) -> object:
        full = schema.fullname
        if full in self.env:
            return full
        self.env.add(full)
        out: dict[str, object] = {"name": full, "type": schema.type}
        if schema.type == "enum":
            out["symbols"] = list(schema.symbols)
        elif schema.type == "fixed":
            out["size"] = schema.size
            out.update(_logical(schema, self.raw_of))
        else:
            out["fields"] = [self._field(field) for field in schema.fields]
        text = doc(schema, self.raw_of)
        if text:
            out["doc"] = text
        names = aliases(schema, self.raw_of)
        if names:
            out["aliases"] = sorted(names, key=java_sort_key)
        if schema.type == "enum" and isinstance(schema.props.get("default"), str):
            out["default"] = schema.props["default"]
        out.update(own)
        return out

    def _field(self, field: Any) -> dict[str, object]:
        out: dict[str, object] = {"name": field.name, "type": self.schema(field.type)}
        if field.order in ("descending", "ignore"):
            out["order"] = field.order
        if isinstance(field.doc, str):
            out["doc"] = field.doc
        names = field_aliases(field)
        if names:
            out["aliases"] = sorted(names, key=java_sort_key)
        if field.has_default:
            out["default"] = deep_sorted(_java_default(field_default(field), field.type))
        out.update(_sorted_props(field_props(field)))
        return out


def _java_default(value: object, schema: Any) -> object:
    """A default as Java's ``JacksonUtils.toObject`` then ``toJson`` give it back: numbers
    take the (first union branch's) type, so ``1`` for a double is ``1.0``."""
    if schema.type == "union":
        schema = schema.schemas[0]
    kind = schema.type
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        if kind == "double":
            return float(value)
        if kind == "float":
            return _float32(float(value))
        return value
    if isinstance(value, list):
        items = schema.items if kind == "array" else None
        return [_java_default(item, items) if items else item for item in value]
    if isinstance(value, dict):
        out: dict[str, object] = {}
        fields = schema.fields_dict if kind in ("record", "error") else {}
        for key, item in value.items():
            sub = schema.values if kind == "map" else getattr(fields.get(key), "type", None)
            out[key] = _java_default(item, sub) if sub is not None else item
        return out
    return value


def _float32(value: float) -> float:
    """``value`` as a Java float written by Jackson (shortest digits) and read back as a
    double: 0.1 stays 0.1, 1/3 becomes 0.33333334."""
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return value
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            return float(text)
    return single
