"""AVRO schemas: parse with the ``avro`` library, print as Java Avro does, check with Java
Avro's reader/writer rules (Confluent's Avro provider does all three with Java Avro 1.10/1.11).

Referenced schemas (``dependencies``) are parsed first, each after its own references, into
one shared ``avro.name.Names``, so the schema names their types by full name. The avro library
is more lenient or stricter than Java in places; the Java rules are applied after it: field
defaults must match their type (Java validates them, the library does not), names follow
Java's ``validateName`` (Unicode letters allowed, so the library's ASCII check is off), union
branches are unique, ``aliases`` are arrays of strings.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import avro.errors
import avro.name
import avro.schema

from kafkette.broker.schema_registry.formats import (
    Dependency,
    ParsedSchema,
    Reference,
    SchemaFormatError,
)
from kafkette.broker.schema_registry.formats import avro_text as text_
from kafkette.broker.schema_registry.formats.avro_compat import Checker
from kafkette.broker.schema_registry.formats.budget import TOO_COMPLEX
from kafkette.broker.schema_registry.formats.invalid import invalid_schema
from kafkette.broker.schema_registry.formats.json_text import dumps, load_json
from kafkette.broker.schema_registry.formats.normalize import sorted_references

# An unknown or invalid logicalType is a plain type for Java too; the library warns each time.
warnings.filterwarnings("ignore", category=avro.errors.IgnoredLogicalType)

TYPE = "AVRO"


@dataclass
class AvroNative:
    """A parsed schema: ``raw_of`` maps every schema object (this one's and its
    dependencies') to its JSON; ``known`` are the referenced top-level types by full name."""

    schema: Any
    raw_of: dict[int, dict] = field(default_factory=dict)
    known: dict[str, Any] = field(default_factory=dict)


def parse(
    text: str,
    references: Sequence[Reference],
    dependencies: Mapping[str, Dependency],
    *,
    normalize: bool,
) -> ParsedSchema:
    """``text`` parsed with ``references`` resolved in ``dependencies``; raises
    ``SchemaFormatError`` with Confluent's 42201 text plus the parser's reason."""
    try:
        try:
            native = _load(text, references, dependencies)
            if normalize:
                known = set(native.known)
                data = text_.normalized(native.schema, native.raw_of, known)
                native = _load(dumps(data), references, dependencies)
                references = sorted_references(references)
            canonical = text_.Printer(native.raw_of, native.known).print(native.schema)
        except RecursionError:  # nesting deeper than the walks here can follow
            raise SchemaFormatError("schema nested too deeply") from None
    except SchemaFormatError as exc:
        raise invalid_schema(text, references, TYPE, str(exc)) from None
    return ParsedSchema(TYPE, canonical, tuple(references), native)


def render(parsed: ParsedSchema, fmt: str | None) -> str:
    """``resolved``: referenced types written out in place; otherwise the canonical text."""
    native = parsed.native
    if fmt == "resolved" and isinstance(native, AvroNative):
        return text_.Printer(native.raw_of).print(native.schema)
    return parsed.canonical


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Java Avro's incompatibilities of ``reader`` reading ``writer``'s data, as Confluent 7.0
    words them (``Incompatibility{type:.., location:.., message:.., reader:.., writer:..}``):
    the first ones (``avro_compat.Checker.texts`` bounds them), then how many more."""
    r_native, w_native = reader.native, writer.native
    assert isinstance(r_native, AvroNative) and isinstance(w_native, AvroNative)
    raw_of = {**w_native.raw_of, **r_native.raw_of}
    try:
        return Checker(raw_of).texts(r_native.schema, w_native.schema)
    except ValueError as exc:  # a reader field matching two writer fields, as Java throws
        return [f"Unexpected exception during compatibility check: {exc}"]
    except RecursionError:
        raise SchemaFormatError(TOO_COMPLEX) from None


def _load(
    text: str, references: Sequence[Reference], dependencies: Mapping[str, Dependency]
) -> AvroNative:
    loader = _Loader(dependencies)
    for ref in references:
        loader.dependency(ref.name, ())
    return AvroNative(loader.parse(text), loader.raw_of, loader.known)


class _Loader:
    """One parse: the shared names, the JSON of every schema object, the top-level types of
    the dependencies."""

    def __init__(self, dependencies: Mapping[str, Dependency]) -> None:
        self.dependencies = dependencies
        self.names = _JavaNames(validate_names=False)
        self.raw_of: dict[int, dict] = {}
        self.known: dict[str, Any] = {}
        self.loaded: set[str] = set()
        self.checked: set[int] = set()
        self.defaults = _Defaults()

    def dependency(self, name: str, path: tuple[str, ...]) -> None:
        if name in self.loaded:
            return
        if name in path:
            raise SchemaFormatError(f"Circular reference to {name}")
        dependency = self.dependencies.get(name)
        if dependency is None:
            raise SchemaFormatError(f"Reference {name} was not found")
        for ref in dependency.references:
            self.dependency(ref.name, (*path, name))
        self.loaded.add(name)
        schema = self.parse(dependency.text)
        if getattr(schema, "fullname", None) and schema.type in text_.NAMED:
            self.known[schema.fullname] = schema

    def parse(self, text: str) -> Any:
        data = load_json(text)
        try:
            if isinstance(data, str) and self.names.has_name(data, None):
                schema = self.names.get_name(data, None)  # a referenced type by name alone
            else:
                _prepare(data)
                schema = avro.schema.make_avsc_object(
                    data, self.names, validate_enum_symbols=False, validate_names=False
                )
        except SchemaFormatError:
            raise
        except Exception as exc:  # the library's reasons come in many exception types
            raise SchemaFormatError(str(exc) or type(exc).__name__) from None
        text_.index_raw(data, schema, self.raw_of)
        self._check(schema)
        return schema

    def _check(self, schema: Any) -> None:
        """Java Avro's rules the library does not apply, over the schema objects new here."""
        if id(schema) in self.checked:
            return
        self.checked.add(id(schema))
        kind = schema.type
        if kind not in (*text_.PRIMITIVE_NAMES, *text_.NAMED, "array", "map", "union"):
            raise SchemaFormatError(f"Type not supported: {kind}")
        if kind in text_.NAMED:
            _valid_name(schema.name)
            _aliases(self.raw_of.get(id(schema), {}))
        if kind == "enum":
            for symbol in schema.symbols:
                _valid_name(symbol)
            default = schema.props.get("default")
            if isinstance(default, str) and default not in schema.symbols:
                raise SchemaFormatError(
                    f"The Enum Default: {default} is not in the enum symbol set:"
                    f" [{', '.join(schema.symbols)}]"
                )
        elif kind in ("record", "error"):
            for field_ in schema.fields:
                _valid_name(field_.name)
                _aliases(field_.props)
                self._check(field_.type)
                if field_.has_default:
                    self._default(field_)
        elif kind == "array":
            self._check(schema.items)
        elif kind == "map":
            self._check(schema.values)
        elif kind == "union":
            seen: set[str] = set()
            for branch in schema.schemas:
                key = getattr(branch, "fullname", None) or branch.type
                if key in seen:
                    raise SchemaFormatError(f"Duplicate in union:{key}")
                seen.add(key)
                self._check(branch)

    def _default(self, field_: Any) -> None:
        try:
            value = text_.field_default(field_)
            valid = self.defaults.field(field_)
        except ValueError as exc:
            raise SchemaFormatError(str(exc)) from None
        if not valid:
            schema = text_.Printer(self.raw_of).print(field_.type)
            raise SchemaFormatError(
                f"Invalid default for field {field_.name}: {dumps(value)} not a {schema}"
            )


class _JavaNames(avro.name.Names):
    """Names resolved as Java does: in the enclosing namespace, else in the null one (the
    library tries only the first, so a namespaced record could not name a referenced type
    that has no namespace)."""

    def _full(self, name: str, space: str | None) -> str | None:
        full = avro.name.Name(name, space, self.default_namespace, validate_name=False).fullname
        if full not in self.names and "." not in name and name in self.names:
            return name
        return full

    def add_name(self, name_attr: str, space_attr: str | None, new_schema: Any) -> Any:
        # The library turns "namespace": "" into None, then takes the enclosing namespace;
        # Java's "" is the null namespace. Null namespaces are dropped before parsing, so None
        # here is always "" (or no enclosing namespace, where both mean the same).
        return super().add_name(name_attr, "" if space_attr is None else space_attr, new_schema)

    def has_name(self, name_attr: str, space_attr: str | None = None) -> bool:
        return self._full(name_attr, space_attr) in self.names

    def get_name(self, name_attr: str, space_attr: str | None = None) -> Any:
        full = self._full(name_attr, space_attr)
        return None if full is None else self.names.get(full)


def _prepare(data: object) -> None:
    """Before the library sees the JSON: ``"namespace": null`` means "the enclosing one" to
    Java, the same as no key; ``error_union`` is the library's own type, not Avro's."""
    if isinstance(data, dict):
        if "namespace" in data and data["namespace"] is None:
            del data["namespace"]
        if data.get("type") == "error_union":
            raise SchemaFormatError("Type not supported: error_union")
        for value in data.values():
            _prepare(value)
    elif isinstance(data, list):
        for value in data:
            _prepare(value)


def _valid_name(name: object) -> None:
    """Java Avro's ``validateName``: a letter or ``_``, then letters, digits or ``_``."""
    if not isinstance(name, str) or not name:
        raise SchemaFormatError("Empty name")
    if not (name[0].isalpha() or name[0] == "_"):
        raise SchemaFormatError(f"Illegal initial character: {name}")
    for char in name[1:]:
        if not (char.isalpha() or char.isdecimal() or char == "_"):
            raise SchemaFormatError(f"Illegal character in: {name}")


def _aliases(raw: Mapping[str, object]) -> None:
    value = raw.get("aliases")
    if value is None:
        return
    if not isinstance(value, list):
        raise SchemaFormatError(f"aliases not an array: {dumps(dict(raw))}")
    for alias in value:
        if not isinstance(alias, str):
            raise SchemaFormatError(f"alias not a string: {dumps(alias)}")


class _Defaults:
    """Java Avro's ``isValidDefault`` (a union's default is its first branch's), over one
    parse. A record field missing from a value takes its own default, whose validity is
    computed once per field (``known``). ``expanding`` are the fields whose defaults are being
    checked on this path: a default that needs itself again (a record with a field of its own
    type, defaulting to ``{}``) would be infinite, so it is invalid (Java overflows its stack)."""

    def __init__(self) -> None:
        self.known: dict[int, bool] = {}
        self.expanding: set[int] = set()

    def field(self, field_: Any) -> bool:
        """Whether the field's default is valid for its type."""
        key = id(field_)
        if key in self.known:
            return self.known[key]
        if key in self.expanding:
            return False
        self.expanding.add(key)
        try:
            valid = self.valid(field_.type, text_.field_default(field_))
        finally:
            self.expanding.discard(key)
        self.known[key] = valid
        return valid

    def valid(self, schema: Any, value: object) -> bool:
        kind = schema.type
        if kind in ("string", "bytes", "enum", "fixed"):
            return isinstance(value, str)
        if kind == "int":
            return text_.java_int(value)
        if kind == "long":
            return text_.java_long(value)
        if kind in ("float", "double"):
            return isinstance(value, int | float) and not isinstance(value, bool)
        if kind == "boolean":
            return isinstance(value, bool)
        if kind == "null":
            return value is None
        if kind == "array":
            return isinstance(value, list) and all(self.valid(schema.items, v) for v in value)
        if kind == "map":
            return isinstance(value, dict) and all(
                self.valid(schema.values, v) for v in value.values()
            )
        if kind == "union":
            return self.valid(schema.schemas[0], value)
        if kind in ("record", "error"):
            if not isinstance(value, dict):
                return False
            for field_ in schema.fields:
                if field_.name in value:
                    valid = self.valid(field_.type, value[field_.name])
                else:
                    valid = field_.has_default and self.field(field_)
                if not valid:
                    return False
            return True
        return False
