"""Compile Kafka's message definitions into a decoder and an encoder per version.

Each (message, version) gets a reader and a writer built once from its
``MessageSpec`` and cached. Decoded messages are plain dicts keyed by the
snake_case field names (``throttle_time_ms``); every field of the definition
is present, taking its default where this version lacks it, so handlers never
branch on versions to read. Encoding takes the same dicts and fills what is
missing with the definition's defaults, so handlers set only what matters.

``records`` fields decode to a zero-copy ``memoryview`` into the frame. On
encode a records value is bytes-like, ``None``, or a sequence of parts (bytes,
or a file region: any object with an int ``length`` attribute): large parts are not
copied but handed out as separate chunks of the encoded output, which is how
Fetch sends stored batches straight from the segment files.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Callable, Sequence

from kafkette.wire import primitives as p
from kafkette.wire.exceptions import EncodeError, MalformedFrameError
from kafkette.wire.schema import FieldSpec, MessageSpec, in_range, load_message

# Records smaller than this are copied into the response buffer; larger ones
# travel as their own chunk (no copy, and sendfile for file regions).
INLINE_RECORDS_LIMIT = 16384


class Output(bytearray):
    """An encode buffer that can hand large payloads out as separate chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[object] = []

    def attach(self, part: object) -> None:
        """Emit what is buffered so far, then ``part`` itself, uncopied."""
        if self:
            self.chunks.append(bytes(self))
            del self[:]
        self.chunks.append(part)

    def finish(self) -> list[object]:
        if self:
            self.chunks.append(bytes(self))
            del self[:]
        return self.chunks


def part_length(part: object) -> int:
    """Bytes in one records part: a bytes-like object or a region with ``length``."""
    if isinstance(part, bytes | bytearray | memoryview):
        return memoryview(part).nbytes
    return part.length  # type: ignore[attr-defined, no-any-return]


def _records_length(value: object) -> int:
    if isinstance(value, bytes | bytearray | memoryview):
        return memoryview(value).nbytes
    return sum(part_length(part) for part in value)  # type: ignore[union-attr]


def _emit_records(out: bytearray, value: object) -> None:
    parts: Sequence[object] = (
        (value,) if isinstance(value, bytes | bytearray | memoryview) else value  # type: ignore[assignment]
    )
    for part in parts:
        if isinstance(part, bytes | bytearray | memoryview) and (
            len(part) < INLINE_RECORDS_LIMIT or not isinstance(out, Output)
        ):
            out += part
        elif isinstance(out, Output):
            out.attach(part)
        else:
            raise EncodeError("a file region can only be encoded into an Output buffer")


def write_records(out: bytearray, value: object) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    p.write_int32(out, _records_length(value))
    _emit_records(out, value)


def write_compact_records(out: bytearray, value: object) -> None:
    if value is None:
        out.append(0)
        return
    p.write_uvarint(out, _records_length(value) + 1)
    _emit_records(out, value)


_CLASSIC = {
    "string": (p.read_string, p.write_string),
    "bytes": (p.read_bytes, p.write_bytes),
    "records": (p.read_records, write_records),
}
_COMPACT = {
    "string": (p.read_compact_string, p.write_compact_string),
    "bytes": (p.read_compact_bytes, p.write_compact_bytes),
    "records": (p.read_compact_records, write_compact_records),
}


def default_value(field: FieldSpec, version: int) -> object:
    """A fresh default for ``field``: structs become dicts of their own defaults."""
    return _default_maker(field, version)[0]()


def _default_maker(field: FieldSpec, version: int) -> tuple[Callable[[], object], bool]:
    """A zero-argument callable giving a fresh default, and whether that default is an
    immutable constant. Built once per compiled struct, so decode and encode never walk
    the definition: constants come from ``repeat(value).__next__``, structs whose
    fields are all constants from ``dict.copy`` of a template."""
    if field.is_array:
        return list, False
    if field.is_struct:
        if in_range(version, field.nullable_versions) and field.default is None:
            return itertools.repeat(None).__next__, True
        children = [(child.name, *_default_maker(child, version)) for child in field.fields]
        template = {name: make() for name, make, _ in children}
        fresh = [(name, make) for name, make, constant in children if not constant]
        if not fresh:
            return template.copy, False

        def make_struct() -> dict:
            value = template.copy()
            for name, make in fresh:
                value[name] = make()
            return value

        return make_struct, False
    value = p.ZERO_UUID if field.type == "uuid" else field.default
    return itertools.repeat(value).__next__, True


def _is_flexible(field: FieldSpec, version: int, flexible: bool) -> bool:
    if field.flexible_versions is not None:
        return in_range(version, field.flexible_versions)
    return flexible


class _Compiled:
    """Reader and writer of one struct at one version."""

    __slots__ = ("read", "write")

    def __init__(self, read: p.Reader, write: p.Writer) -> None:
        self.read = read
        self.write = write


def _field_codec(field: FieldSpec, version: int, flexible: bool) -> tuple[p.Reader, p.Writer]:
    compact = _is_flexible(field, version, flexible)
    element = field.element_type
    if field.is_struct:
        inner = _compile_struct(field.fields, version, flexible)
        elem_read, elem_write = inner.read, inner.write
        if not field.is_array and in_range(version, field.nullable_versions):
            elem_read, elem_write = _nullable_struct(elem_read, elem_write)
    elif element in p.FIXED_READERS:
        elem_read, elem_write = p.FIXED_READERS[element], p.FIXED_WRITERS[element]
    elif element in _CLASSIC:
        elem_read, elem_write = (_COMPACT if compact else _CLASSIC)[element]
    else:
        raise LookupError(f"field {field.json_name} has unknown type {field.type}")
    nullable = in_range(version, field.nullable_versions)
    if element in _CLASSIC and (field.is_array or not nullable):
        elem_read = _refusing_null(elem_read, field)  # array elements are never nullable
    if not field.is_array:
        return elem_read, elem_write
    return _array(elem_read, elem_write, compact, None if nullable else field)


def _refusing_null(read: p.Reader, field: FieldSpec) -> p.Reader:
    """A string/bytes/records reader that refuses a null where the definition allows none.

    Kafka's generated readers throw on a -1 (or compact 0) length for a field that is
    not nullable at the version read, and the broker closes the connection as for any
    unparseable request. Doing the same here means a handler only ever sees None in a
    field the definitions make nullable (``broker/handlers/nullable_fields.py``).
    """

    def read_non_null(buf: memoryview, pos: int) -> tuple[object, int]:
        value, pos = read(buf, pos)
        if value is None:
            raise MalformedFrameError(
                f"non-nullable field {field.json_name} was serialized as null"
            )
        return value, pos

    return read_non_null


def _nullable_struct(read: p.Reader, write: p.Writer) -> tuple[p.Reader, p.Writer]:
    def read_nullable(buf: memoryview, pos: int) -> tuple[object, int]:
        marker, pos = p.read_int8(buf, pos)
        if marker < 0:
            return None, pos
        return read(buf, pos)

    def write_nullable(out: bytearray, value: object) -> None:
        if value is None:
            out.append(0xFF)
        else:
            out.append(1)
            write(out, value)

    return read_nullable, write_nullable


def _array(
    read: p.Reader, write: p.Writer, compact: bool, non_nullable: FieldSpec | None
) -> tuple[p.Reader, p.Writer]:
    """Reader and writer of an array; ``non_nullable`` names the field when a null
    count (-1, or compact 0) is malformed at this version rather than None."""

    def read_array(buf: memoryview, pos: int) -> tuple[object, int]:
        if compact:
            count, pos = p.read_uvarint(buf, pos)
            count -= 1
        else:
            count, pos = p.read_int32(buf, pos)  # type: ignore[assignment]
        if count < 0:
            if non_nullable is not None:
                raise MalformedFrameError(
                    f"non-nullable field {non_nullable.json_name} was serialized as null"
                )
            return None, pos
        if count > len(buf) - pos:
            raise MalformedFrameError(f"array of {count} elements cannot fit the frame")
        items = []
        append = items.append
        for _ in range(count):
            item, pos = read(buf, pos)
            append(item)
        return items, pos

    def write_array(out: bytearray, value: object) -> None:
        if value is None:
            if compact:
                out.append(0)
            else:
                out += b"\xff\xff\xff\xff"
            return
        items = value  # type: ignore[assignment]
        if compact:
            p.write_uvarint(out, len(items) + 1)  # type: ignore[arg-type]
        else:
            p.write_int32(out, len(items))  # type: ignore[arg-type]
        for item in items:  # type: ignore[attr-defined]
            write(out, item)

    return read_array, write_array


_Tagged = tuple[str, p.Reader, p.Writer, int, object]  # name, read, write, tag, default


# Fixed-width types a run of consecutive fields can be read and written with at once.
_FORMATS = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
}

# One step of a struct: a field name (or, for a fused run, a tuple of names), its reader
# and writer, and its default's maker (None for a run: it makes its own).
_Step = tuple[str | tuple[str, ...], p.Reader, p.Writer, Callable[[], object] | None]


def _compile_struct(fields: tuple[FieldSpec, ...], version: int, flexible: bool) -> _Compiled:
    makers = {f.name: _default_maker(f, version)[0] for f in fields}
    steps: list[_Step] = []
    formats: list[str | None] = []  # per step: the struct format of a fixed-width field
    tagged: dict[int, _Tagged] = {}
    absent: list[tuple[str, Callable[[], object]]] = []
    for field in fields:
        if not in_range(version, field.versions):
            absent.append((field.name, makers[field.name]))
            continue
        read, write = _field_codec(field, version, flexible)
        if flexible and field.tag is not None and in_range(version, field.tagged_versions):
            default = makers[field.name]()  # compared against, never handed out
            tagged[field.tag] = (field.name, read, write, field.tag, default)
            absent.append((field.name, makers[field.name]))  # a present tag overwrites
        else:
            steps.append((field.name, read, write, makers[field.name]))
            fixed = not field.is_array and not field.is_struct
            formats.append(_FORMATS.get(field.element_type) if fixed else None)
    steps = _fuse_fixed_runs(steps, formats)
    readers = [(name, read) for name, read, _, _ in steps]
    writers = [(name, write, make) for name, _, write, make in steps]
    tagged_in_order = [tagged[tag] for tag in sorted(tagged)]

    def read_struct(buf: memoryview, pos: int) -> tuple[object, int]:
        obj: dict[str, object] = {}
        for name, make in absent:
            obj[name] = make()
        for name, read in readers:
            value, pos = read(buf, pos)
            if name.__class__ is tuple:  # a fused run: one value per name
                obj.update(zip(name, value, strict=True))  # type: ignore[call-overload]
            else:
                obj[name] = value  # type: ignore[index]
        if flexible:
            if pos < len(buf) and buf[pos] == 0:  # no tagged fields: the usual case
                pos += 1
            else:
                pos = _read_tagged(buf, pos, obj, tagged)
        return obj, pos

    def write_struct(out: bytearray, value: object) -> None:
        obj: dict = value  # type: ignore[assignment]
        get = obj.get
        for name, write, make in writers:
            if make is None:  # a fused run reads its fields from the message itself
                write(out, obj)
                continue
            item = get(name, _MISSING)
            if item is _MISSING:
                item = make()
            write(out, item)
        if flexible:
            if tagged_in_order:
                _write_tagged(out, obj, tagged_in_order)
            else:
                out.append(0)  # a struct with no tagged field at this version: count 0

    return _Compiled(read_struct, write_struct)


def _fuse_fixed_runs(steps: list[_Step], formats: list[str | None]) -> list[_Step]:
    """Consecutive fixed-width fields become one step with one ``struct`` call.

    A Produce answer's partition is five integers in a row: one pack instead of five
    writer calls, per partition of every answer (and likewise on decode). Values,
    errors and defaults are those of the fields one by one.
    """
    fused: list[_Step] = []
    run: list[int] = []
    for index in range(len(steps) + 1):
        if index < len(steps) and formats[index] is not None:
            run.append(index)
            continue
        if len(run) > 1:
            fused.append(_fixed_run([steps[i] for i in run], [formats[i] for i in run]))
        else:
            fused.extend(steps[i] for i in run)
        run = []
        if index < len(steps):
            fused.append(steps[index])
    return fused


def _fixed_run(steps: list[_Step], formats: list[str | None]) -> _Step:
    codec = struct.Struct(">" + "".join(formats))  # type: ignore[arg-type]
    size = codec.size
    unpack_from = codec.unpack_from
    pack = codec.pack
    names = tuple(name for name, _, _, _ in steps)
    fields = [(name, make) for name, _, _, make in steps]
    one_by_one = [(name, write, make) for name, _, write, make in steps]

    def read_run(buf: memoryview, pos: int) -> tuple[object, int]:
        if pos + size > len(buf):
            raise MalformedFrameError("frame ends inside a fixed-size field")
        return unpack_from(buf, pos), pos + size

    def write_run(out: bytearray, obj: object) -> None:
        get = obj.get  # type: ignore[attr-defined]
        values = []
        for name, make in fields:
            item = get(name, _MISSING)
            values.append(make() if item is _MISSING else item)  # type: ignore[misc]
        try:
            out += pack(*values)
        except struct.error:  # the field that does not fit raises as on its own
            for (_, write, _), item in zip(one_by_one, values, strict=True):
                write(bytearray(), item)
            raise

    return names, read_run, write_run, None


_MISSING = object()


def _read_tagged(buf: memoryview, pos: int, obj: dict, tagged: dict[int, _Tagged]) -> int:
    count, pos = p.read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = p.read_uvarint(buf, pos)
        size, pos = p.read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise MalformedFrameError("tagged field runs past the end of the frame")
        known = tagged.get(tag)
        if known is not None:
            name, read = known[0], known[1]
            value, used = read(buf[:end], pos)
            if used != end:
                raise MalformedFrameError(f"tagged field {name} has {end - used} stray bytes")
            obj[name] = value
        pos = end
    return pos


def _write_tagged(out: bytearray, obj: dict, tagged: list[_Tagged]) -> None:
    """Tagged fields in ascending tag order; those at their default are left out."""
    present = []
    for name, _, write, tag, default in tagged:
        value = obj.get(name, _MISSING)
        if value is _MISSING or value == default:
            continue
        present.append((tag, write, value))
    p.write_uvarint(out, len(present))
    for tag, write, value in present:
        body = bytearray()
        write(body, value)
        p.write_uvarint(out, tag)
        p.write_uvarint(out, len(body))
        out += body


class MessageCodec:
    """Decoder and encoder of one message definition at one version."""

    __slots__ = ("_struct", "flexible", "spec", "version")

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self._struct = _compile_struct(spec.fields, version, self.flexible)

    def decode(self, buf: memoryview, pos: int = 0) -> tuple[dict, int]:
        """Decode from ``pos``; returns the message and the position after it."""
        try:
            value, end = self._struct.read(buf, pos)
        except (ValueError, OverflowError) as exc:  # UUID/struct edge cases
            if isinstance(exc, MalformedFrameError):
                raise
            raise MalformedFrameError(f"{self.spec.name} v{self.version}: {exc}") from None
        return value, end  # type: ignore[return-value]

    def encode_into(self, out: bytearray, message: dict) -> None:
        try:
            self._struct.write(out, message)
        except EncodeError:
            raise
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise EncodeError(f"{self.spec.name} v{self.version}: {exc!r}") from exc

    def encode(self, message: dict) -> bytes:
        out = bytearray()
        self.encode_into(out, message)
        return bytes(out)


@functools.cache
def message_codec(name: str, version: int) -> MessageCodec:
    """The cached codec for a definition file name (``"FetchRequest"``) and version."""
    return MessageCodec(load_message(name), version)


CodecFactory = Callable[[str, int], MessageCodec]
