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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkette.broker.schema_registry.formats import avro_text
from kafkette.broker.schema_registry.formats.json_text import java_sort_key

_PROMOTIONS = {
    "long": ("int",),
    "float": ("int", "long"),
    "double": ("int", "long", "float"),
    "bytes": ("string",),
    "string": ("bytes",),
}


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

    def text(self, raw_of: dict[int, dict]) -> str:
        reader = avro_text.Printer(raw_of).print(self.reader)
        writer = avro_text.Printer(raw_of).print(self.writer)
        return (
            f"Incompatibility{{type:{self.type}, location:{self.pointer()}, "
            f"message:{self.message}, reader:{reader}, writer:{writer}}}"
        )


_IN_PROGRESS: tuple[Incompatibility, ...] = ()


class Checker:
    """One check's memo; ``check(reader, writer)`` lists why the reader cannot read data
    written with the writer (empty: it can)."""

    def __init__(self, raw_of: dict[int, dict]) -> None:
        self.raw_of = raw_of
        self.memo: dict[tuple[int, int], tuple[Incompatibility, ...] | None] = {}

    def check(self, reader: Any, writer: Any) -> list[Incompatibility]:
        return list(self._pair("", reader, writer, ()))

    def _pair(
        self, token: str, reader: Any, writer: Any, location: tuple[str, ...]
    ) -> tuple[Incompatibility, ...]:
        location = (*location, token)
        key = (id(reader), id(writer))
        if key in self.memo:
            found = self.memo[key]
            return () if found is None else found
        self.memo[key] = None  # in progress: compatible unless proven otherwise
        result = self._calculate(reader, writer, location)
        self.memo[key] = result
        return result

    def _fresh(self, reader: Any, writer: Any) -> tuple[Incompatibility, ...]:
        return self._pair("", reader, writer, ())

    def _calculate(
        self, reader: Any, writer: Any, location: tuple[str, ...]
    ) -> tuple[Incompatibility, ...]:
        r_type, w_type = _kind(reader), _kind(writer)
        if r_type == w_type:
            if r_type == "array":
                return self._pair("items", reader.items, writer.items, location)
            if r_type == "map":
                return self._pair("values", reader.values, writer.values, location)
            if r_type == "fixed":
                return self._names(reader, writer, location) + _fixed_size(reader, writer, location)
            if r_type == "enum":
                return self._names(reader, writer, location) + _enum_symbols(
                    reader, writer, location
                )
            if r_type == "record":
                return self._names(reader, writer, location) + self._fields(
                    reader, writer, location
                )
            if r_type == "union":
                found: tuple[Incompatibility, ...] = ()
                for index, branch in enumerate(writer.schemas):
                    if self._fresh(reader, branch):
                        message = f"reader union lacking writer type: {_java(branch)}"
                        found += (
                            Incompatibility(
                                "MISSING_UNION_BRANCH",
                                (*location, str(index)),
                                message,
                                reader,
                                writer,
                            ),
                        )
                return found
            return ()
        if w_type == "union":
            found = ()
            for branch in writer.schemas:
                found += self._fresh(reader, branch)
            return found
        if r_type == "union":
            for branch in reader.schemas:
                if not self._fresh(branch, writer):
                    return ()
            message = f"reader union lacking writer type: {_java(writer)}"
            return (Incompatibility("MISSING_UNION_BRANCH", location, message, reader, writer),)
        if w_type in _PROMOTIONS.get(r_type, ()):
            return ()
        message = f"reader type: {_java(reader)} not compatible with writer type: {_java(writer)}"
        return (Incompatibility("TYPE_MISMATCH", location, message, reader, writer),)

    def _names(
        self, reader: Any, writer: Any, location: tuple[str, ...]
    ) -> tuple[Incompatibility, ...]:
        if reader.name == writer.name:
            return ()
        if writer.fullname in avro_text.aliases(reader, self.raw_of):
            return ()
        message = f"expected: {writer.fullname}"
        return (Incompatibility("NAME_MISMATCH", (*location, "name"), message, reader, writer),)

    def _fields(
        self, reader: Any, writer: Any, location: tuple[str, ...]
    ) -> tuple[Incompatibility, ...]:
        found: tuple[Incompatibility, ...] = ()
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
                found += self._pair("type", field.type, matches[0].type, at)
            elif field.has_default:
                continue
            elif field.type.type == "enum" and field.type.props.get("default") is not None:
                found += self._pair("type", field.type, writer, at)
            else:
                found += (
                    Incompatibility(
                        "READER_FIELD_MISSING_DEFAULT_VALUE", at, field.name, reader, writer
                    ),
                )
        return found


def _kind(schema: Any) -> str:
    return "record" if schema.type == "error" else schema.type


def _java(schema: Any) -> str:
    return avro_text.java_type(schema)


def _fixed_size(reader: Any, writer: Any, location: tuple[str, ...]) -> tuple[Incompatibility, ...]:
    if reader.size == writer.size:
        return ()
    message = f"expected: {writer.size}, found: {reader.size}"
    return (Incompatibility("FIXED_SIZE_MISMATCH", (*location, "size"), message, reader, writer),)


def _enum_symbols(
    reader: Any, writer: Any, location: tuple[str, ...]
) -> tuple[Incompatibility, ...]:
    missing = sorted(set(writer.symbols) - set(reader.symbols), key=java_sort_key)
    if not missing:
        return ()
    default = reader.props.get("default")
    if default is not None and default in reader.symbols:
        return ()
    message = "[" + ", ".join(missing) + "]"
    return (
        Incompatibility("MISSING_ENUM_SYMBOLS", (*location, "symbols"), message, reader, writer),
    )
