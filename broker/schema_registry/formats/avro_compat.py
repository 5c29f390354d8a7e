"""Java Avro's reader/writer compatibility (``SchemaCompatibility``, 1.10/1.11) over schemas
parsed by the ``avro`` library, keeping each incompatibility whole.

``avro.compatibility.ReaderWriterCompatibilityChecker`` gives the same verdicts but merges the
types, messages and locations of all findings into separate sets (and spells some messages
differently), so Confluent 7.0's per-finding text, ``Incompatibility{type:.., location:..,
message:.., reader:.., writer:..}``, cannot be rebuilt from it. This walk follows the same
rules and keeps each finding with its own location and schema fragments; the tests check its
verdicts against the library's.

Java's quirks kept: a writer union's branches and a reader union's search start a fresh
location (``/``); a pair being compared higher up counts as compatible (recursive types);
results are memoized per (reader, writer) object pair; names compare unqualified, or by the
reader's aliases (full names).

Bounded for hostile input: the first ``SHOWN`` findings are kept and the rest counted, each
schema is printed once per check however many findings name it, and every pair compared
spends a step of the check's ``budget.Budget``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkette.broker.schema_registry.formats import avro_text
from kafkette.broker.schema_registry.formats.budget import Budget
from kafkette.broker.schema_registry.formats.json_text import java_sort_key

_PROMOTIONS = {
    "long": ("int",),
    "float": ("int", "long"),
    "double": ("int", "long", "float"),
    "bytes": ("string",),
    "string": ("bytes",),
}


SHOWN = 100  # incompatibilities written out; the rest are counted
SHOWN_CHARS = 1 << 20  # and no more text than this (each one prints two whole schemas)


@dataclass(frozen=True)
class Incompatibility:
    type: str
    location: tuple[str, ...]
    message: str
    reader: Any
    writer: Any

    def pointer(self) -> str:
        """Java's ``getLocation``: a JSON pointer, the root token left out."""
        return "/" + "/".join(
            token.replace("~", "~0").replace("/", "~1") for token in self.location[1:]
        )


class Found:
    """Incompatibilities in walk order: the first ``SHOWN`` kept, all counted (a memoised
    pair is counted once per place it is reached, so the count can be large)."""

    __slots__ = ("items", "total")

    def __init__(self) -> None:
        self.items: list[Incompatibility] = []
        self.total = 0

    def __bool__(self) -> bool:
        return self.total > 0

    def add(self, incompatibility: Incompatibility) -> None:
        self.total += 1
        if len(self.items) < SHOWN:
            self.items.append(incompatibility)

    def extend(self, other: Found) -> None:
        self.total += other.total
        room = SHOWN - len(self.items)
        if room > 0:
            self.items += other.items[:room]


_NOTHING = Found()  # a pair in progress counts as compatible; never extended


class Checker:
    """One check's memo; ``check(reader, writer)`` finds why the reader cannot read data
    written with the writer (empty: it can), ``texts`` words them."""

    def __init__(self, raw_of: dict[int, dict], budget: Budget | None = None) -> None:
        self.raw_of = raw_of
        self.budget = budget or Budget()
        self.memo: dict[tuple[int, int], Found | None] = {}
        self.printed: dict[int, str] = {}

    def check(self, reader: Any, writer: Any) -> Found:
        return self._pair("", reader, writer, ())

    def texts(self, reader: Any, writer: Any) -> list[str]:
        """Confluent 7.0's ``Incompatibility{type:.., location:.., message:.., reader:..,
        writer:..}`` per finding, at most ``SHOWN`` of them and about ``SHOWN_CHARS`` of
        text, then a line saying how many more there are."""
        found = self.check(reader, writer)
        out: list[str] = []
        size = 0
        for incompatibility in found.items:
            if out and size >= SHOWN_CHARS:
                break
            out.append(self.text(incompatibility))
            size += len(out[-1])
        if found.total > len(out):
            out.append(f"... and {found.total - len(out)} more incompatibilities")
        return out

    def text(self, incompatibility: Incompatibility) -> str:
        reader = self._print(incompatibility.reader)
        writer = self._print(incompatibility.writer)
        return (
            f"Incompatibility{{type:{incompatibility.type}, location:{incompatibility.pointer()}"
            f", message:{incompatibility.message}, reader:{reader}, writer:{writer}}}"
        )

    def _print(self, schema: Any) -> str:
        text = self.printed.get(id(schema))
        if text is None:
            text = self.printed[id(schema)] = avro_text.Printer(self.raw_of).print(schema)
        return text

    def _pair(self, token: str, reader: Any, writer: Any, location: tuple[str, ...]) -> Found:
        location = (*location, token)
        key = (id(reader), id(writer))
        if key in self.memo:
            found = self.memo[key]
            return _NOTHING if found is None else found
        self.memo[key] = None  # in progress: compatible unless proven otherwise
        self.budget.spend()
        result = self._calculate(reader, writer, location)
        self.memo[key] = result
        return result

    def _fresh(self, reader: Any, writer: Any) -> Found:
        return self._pair("", reader, writer, ())

    def _calculate(self, reader: Any, writer: Any, location: tuple[str, ...]) -> Found:
        found = Found()
        r_type, w_type = _kind(reader), _kind(writer)
        if r_type == w_type:
            if r_type == "array":
                return self._pair("items", reader.items, writer.items, location)
            if r_type == "map":
                return self._pair("values", reader.values, writer.values, location)
            if r_type in ("fixed", "enum", "record"):
                self._names(found, reader, writer, location)
            if r_type == "fixed":
                _fixed_size(found, reader, writer, location)
            elif r_type == "enum":
                _enum_symbols(found, reader, writer, location)
            elif r_type == "record":
                self._fields(found, reader, writer, location)
            elif r_type == "union":
                for index, branch in enumerate(writer.schemas):
                    if self._fresh(reader, branch):
                        message = f"reader union lacking writer type: {_java(branch)}"
                        at = (*location, str(index))
                        found.add(
                            Incompatibility("MISSING_UNION_BRANCH", at, message, reader, writer)
                        )
            return found
        if w_type == "union":
            for branch in writer.schemas:
                found.extend(self._fresh(reader, branch))
            return found
        if r_type == "union":
            for branch in reader.schemas:
                if not self._fresh(branch, writer):
                    return found
            message = f"reader union lacking writer type: {_java(writer)}"
            found.add(Incompatibility("MISSING_UNION_BRANCH", location, message, reader, writer))
            return found
        if w_type in _PROMOTIONS.get(r_type, ()):
            return found
        message = f"reader type: {_java(reader)} not compatible with writer type: {_java(writer)}"
        found.add(Incompatibility("TYPE_MISMATCH", location, message, reader, writer))
        return found

    def _names(self, found: Found, reader: Any, writer: Any, location: tuple[str, ...]) -> None:
        if reader.name == writer.name:
            return
        if writer.fullname in avro_text.aliases(reader, self.raw_of):
            return
        message = f"expected: {writer.fullname}"
        at = (*location, "name")
        found.add(Incompatibility("NAME_MISMATCH", at, message, reader, writer))

    def _fields(self, found: Found, reader: Any, writer: Any, location: tuple[str, ...]) -> None:
        writer_fields = writer.fields_dict
        for index, field in enumerate(reader.fields):
            at = (*location, "fields", str(index))
            matches = [writer_fields[field.name]] if field.name in writer_fields else []
            matches += [
                writer_fields[alias]
                for alias in avro_text.field_aliases(field)
                if alias in writer_fields
            ]
            if len(matches) > 1:
                raise ValueError(
                    f"Reader record field {field.name} matches multiple fields in writer record"
                    f" schema {writer.fullname}"
                )
            if matches:
                found.extend(self._pair("type", field.type, matches[0].type, at))
            elif field.has_default:
                continue
            elif field.type.type == "enum" and field.type.props.get("default") is not None:
                found.extend(self._pair("type", field.type, writer, at))
            else:
                kind = "READER_FIELD_MISSING_DEFAULT_VALUE"
                found.add(Incompatibility(kind, at, field.name, reader, writer))


def _kind(schema: Any) -> str:
    return "record" if schema.type == "error" else schema.type


def _java(schema: Any) -> str:
    return avro_text.java_type(schema)


def _fixed_size(found: Found, reader: Any, writer: Any, location: tuple[str, ...]) -> None:
    if reader.size != writer.size:
        message = f"expected: {writer.size}, found: {reader.size}"
        at = (*location, "size")
        found.add(Incompatibility("FIXED_SIZE_MISMATCH", at, message, reader, writer))


def _enum_symbols(found: Found, reader: Any, writer: Any, location: tuple[str, ...]) -> None:
    missing = sorted(set(writer.symbols) - set(reader.symbols), key=java_sort_key)
    if not missing:
        return
    default = reader.props.get("default")
    if default is not None and default in reader.symbols:
        return
    message = "[" + ", ".join(missing) + "]"
    at = (*location, "symbols")
    found.add(Incompatibility("MISSING_ENUM_SYMBOLS", at, message, reader, writer))
