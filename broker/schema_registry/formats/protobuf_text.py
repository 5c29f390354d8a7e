"""A FileDescriptorProto printed back as .proto text: the registry's stored form of every
Protobuf schema, whether it arrived as text (Java clients) or as base64 of a serialized
descriptor (Python clients). protobuf ships no .proto printer, so this is ours.

The printer is deterministic and faithful: compiling its output gives the same descriptor
(ignoring source info and ``json_name`` values equal to protoc's default), including the
order of messages and of nested types (Confluent's serializers address messages by index).
Type and option names are printed as short as protoc's scoping rules allow, checked against
every symbol of the file and its dependencies, else fully qualified with a leading dot.
``normalize`` gives Confluent's normalized variant: sorted imports, options, reserved
ranges, enum values (but the first, which carries meaning), fields by number (oneofs after
the other fields), fully qualified names. Editions files are refused (``UnsupportedDescriptor``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import Message
from google.protobuf.text_encoding import CEscape
from google.protobuf.unknown_fields import UnknownFieldSet

# The descriptor classes, by the names the Protobuf modules use.
FDP = descriptor_pb2.FileDescriptorProto
FieldProto = descriptor_pb2.FieldDescriptorProto
MessageProto = descriptor_pb2.DescriptorProto
EnumProto = descriptor_pb2.EnumDescriptorProto
MAX_FIELD_NUMBER = 536_870_911
MAX_ENUM_NUMBER = 2_147_483_647
INDENT = "  "

SCALAR_NAMES = {
    FieldProto.TYPE_DOUBLE: "double",
    FieldProto.TYPE_FLOAT: "float",
    FieldProto.TYPE_INT64: "int64",
    FieldProto.TYPE_UINT64: "uint64",
    FieldProto.TYPE_INT32: "int32",
    FieldProto.TYPE_FIXED64: "fixed64",
    FieldProto.TYPE_FIXED32: "fixed32",
    FieldProto.TYPE_BOOL: "bool",
    FieldProto.TYPE_STRING: "string",
    FieldProto.TYPE_BYTES: "bytes",
    FieldProto.TYPE_UINT32: "uint32",
    FieldProto.TYPE_SFIXED32: "sfixed32",
    FieldProto.TYPE_SFIXED64: "sfixed64",
    FieldProto.TYPE_SINT32: "sint32",
    FieldProto.TYPE_SINT64: "sint64",
}
_NAMED = (FieldProto.TYPE_MESSAGE, FieldProto.TYPE_ENUM, FieldProto.TYPE_GROUP)
_SKIPPED_OPTIONS = {"uninterpreted_option", "features"}


def real_oneof(fl: FieldProto) -> int | None:
    """The index of the oneof ``fl`` is a member of, None for a plain field (or a proto3
    ``optional`` one: its synthetic oneof is not written)."""
    if fl.HasField("oneof_index") and not fl.proto3_optional:
        return fl.oneof_index
    return None


def is_group_type(parent: MessageProto, full: str) -> bool:
    """Whether the nested type ``full`` is the type of a group field of ``parent`` (written
    by the group, not as a message of its own)."""
    return any(
        fl.type == FieldProto.TYPE_GROUP and fl.type_name.lstrip(".") == full for fl in parent.field
    )


def dependency_order(files: Mapping[str, FDP]) -> list[FDP]:
    """``files`` ordered so that each comes after those it imports (that are in ``files``),
    the order a ``DescriptorPool`` accepts them in."""
    out: list[FDP] = []
    seen: set[str] = set()
    for root in sorted(files):
        stack = [(root, iter(files[root].dependency))] if root not in seen else []
        seen.add(root)
        while stack:
            name, deps = stack[-1]
            dep = next(deps, None)
            if dep is None:
                stack.pop()
                out.append(files[name])
            elif dep in files and dep not in seen:
                seen.add(dep)
                stack.append((dep, iter(files[dep].dependency)))
    return out


class UnsupportedDescriptor(ValueError):
    """The descriptor uses something this printer does not write (editions)."""


def default_json_name(name: str) -> str:
    """protoc's default JSON name: underscores dropped, the letter after one upper-cased."""
    out: list[str] = []
    upper_next = False
    for ch in name:
        if ch == "_":
            upper_next = True
        elif upper_next:
            out.append(ch.upper())
            upper_next = False
        else:
            out.append(ch)
    return "".join(out)


def to_text(fdp: FDP, files: Mapping[str, FDP] | None = None, *, normalize: bool = False) -> str:
    """``fdp`` as .proto text. ``files`` holds its dependencies (transitively, by file name):
    their symbols let names be printed short, and custom options be decoded."""
    if fdp.syntax not in ("", "proto2", "proto3"):
        raise UnsupportedDescriptor(f"syntax {fdp.syntax!r} is not supported (only proto2/proto3)")
    return _Printer(fdp, dict(files or {}), normalize).file()


@dataclass
class _Item:
    """One entry of a message body in print order: a field, or a whole oneof."""

    fields: list[FieldProto]
    oneof: int | None  # index into oneof_decl, None for a plain field


class _Printer:
    def __init__(self, fdp: FDP, files: dict[str, FDP], normalize: bool) -> None:
        self.fdp = fdp
        self.files = files
        self.normalize = normalize
        self.proto3 = fdp.syntax == "proto3"
        self.symbols: set[str] = set()
        for f in [*files.values(), fdp]:
            _collect_symbols(f, self.symbols)
        self._option_classes: dict[str, type[Message]] | None = None

    # ---- names -------------------------------------------------------------------------
    def name(self, full: str, *scopes: str) -> str:
        """``full`` (with or without a leading dot) as the shortest name protoc resolves to
        it from each of ``scopes`` (a conservative model of protoc's lookup)."""
        target = full.lstrip(".")
        if self.normalize:
            return "." + target
        parts = target.split(".")
        for k in range(1, len(parts) + 1):
            cand = parts[-k:]
            if all(self._resolves(cand, scope, target) for scope in scopes):
                return ".".join(cand)
        return "." + target

    def _resolves(self, cand: list[str], scope: str, target: str) -> bool:
        prefix = scope.split(".") if scope else []
        for i in range(len(prefix), -1, -1):
            first = ".".join([*prefix[:i], cand[0]])
            if first in self.symbols:
                return ".".join([*prefix[:i], *cand]) == target
        return False

    # ---- file --------------------------------------------------------------------------
    def file(self) -> str:
        f = self.fdp
        pkg = f.package
        out: list[str] = [f'syntax = "{"proto3" if self.proto3 else "proto2"}";\n']
        if f.HasField("package"):
            out.append(f"package {pkg};\n")
        imports = self._imports()
        if imports:
            out.append("\n")
            out += imports
        opts = self.options(f.options, pkg + ".x" if pkg else "x")
        if opts:
            out.append("\n")
            out += [f"option {n} = {v};\n" for n, v in opts]
        body: list[str] = []
        for m in f.message_type:
            body += self.message(m, pkg)
        for e in f.enum_type:
            body += self.enum(e, pkg)
        body += self.extends(f.extension, pkg)
        for s in f.service:
            body += self.service(s, pkg)
        if body:
            out.append("\n")
            out += body
        return "".join(out)

    def _imports(self) -> list[str]:
        f = self.fdp
        public, weak = set(f.public_dependency), set(f.weak_dependency)
        rows = []
        for i, dep in enumerate(f.dependency):
            kind = "public " if i in public else "weak " if i in weak else ""
            rows.append((0 if not kind else 1 if kind == "public " else 2, dep, kind))
        if self.normalize:
            rows = sorted(set(rows))
        return [f'import {kind}"{_quote(dep)}";\n' for _, dep, kind in rows]

    # ---- messages ----------------------------------------------------------------------
    def message(self, m: MessageProto, scope: str) -> list[str]:
        full = f"{scope}.{m.name}" if scope else m.name
        body = self.message_body(m, full)
        return [f"message {m.name} {{\n", *_indent(body), "}\n"]

    def message_body(self, m: MessageProto, full: str) -> list[str]:
        out: list[str] = []
        out += self._reserved(m.reserved_range, m.reserved_name, MAX_FIELD_NUMBER, True)
        out += [f"option {n} = {v};\n" for n, v in self.options(m.options, full)]
        synthetic = {
            f"{full}.{t.name}": t
            for t in m.nested_type
            if t.options.map_entry or is_group_type(m, f"{full}.{t.name}")
        }
        # ordinary nested messages, each with the number of synthetic (map entry / group)
        # types before it: it must be printed before the field that makes the next one.
        pending: list[tuple[int, MessageProto]] = []
        seen = 0
        for t in m.nested_type:
            if f"{full}.{t.name}" in synthetic:
                seen += 1
            else:
                pending.append((seen, t))
        made = 0
        for item in self._items(m, full, synthetic):
            owners = [fl for fl in item.fields if fl.type_name.lstrip(".") in synthetic]
            if owners:
                while pending and pending[0][0] <= made:
                    out += self.message(pending.pop(0)[1], full)
                made += len(owners)
            out += self._item(item, m, full, synthetic)
        for rng in m.extension_range:
            out += self._extension_range(rng, full)
        out += self.extends(m.extension, full)
        for _, t in pending:
            out += self.message(t, full)
        for e in m.enum_type:
            out += self.enum(e, full)
        return out

    def _items(self, m: MessageProto, full: str, synthetic: Mapping[str, object]) -> list[_Item]:
        items: list[_Item] = []
        done: set[int] = set()
        for fl in m.field:
            k = real_oneof(fl)
            if k is None:
                items.append(_Item([fl], None))
            elif k not in done:
                done.add(k)
                items.append(_Item([x for x in m.field if real_oneof(x) == k], k))
        if not self.normalize:
            return items
        plain = sorted((i for i in items if i.oneof is None), key=lambda i: i.fields[0].number)
        oneofs = [_Item(sorted(i.fields, key=lambda f: f.number), i.oneof) for i in items]
        oneofs = sorted(
            (i for i in oneofs if i.oneof is not None), key=lambda i: i.fields[0].number
        )
        normalized = plain + oneofs

        def owners(seq: Iterable[_Item]) -> list[str]:
            return [f.name for i in seq for f in i.fields if f.type_name.lstrip(".") in synthetic]

        # Sorting must not reorder map entry / group types (message indexes count them).
        return normalized if owners(normalized) == owners(items) else items

    def _item(self, item: _Item, m: MessageProto, full: str, synthetic: Mapping) -> list[str]:
        if item.oneof is None:
            return self.field(item.fields[0], full, synthetic, in_oneof=False)
        decl = m.oneof_decl[item.oneof]
        body = [f"option {n} = {v};\n" for n, v in self.options(decl.options, full)]
        for fl in item.fields:
            body += self.field(fl, full, synthetic, in_oneof=True)
        return [f"oneof {decl.name} {{\n", *_indent(body), "}\n"]

    def field(self, fl: FieldProto, scope: str, synthetic: Mapping, *, in_oneof: bool) -> list[str]:
        entry = synthetic.get(fl.type_name.lstrip(".")) if fl.type_name else None
        if entry is not None and entry.options.map_entry:
            key, value = entry.field[0], entry.field[1]
            entry_scope = fl.type_name.lstrip(".")
            head = f"map<{self._type(key, entry_scope)}, {self._type(value, entry_scope)}>"
        else:
            label = self._label(fl, in_oneof)
            head = f"{label}{self._type(fl, scope)}" if fl.type != FieldProto.TYPE_GROUP else ""
        opts = self._field_options(fl, f"{scope}.{fl.name}" if scope else fl.name)
        tail = f" [{', '.join(f'{n} = {v}' for n, v in opts)}]" if opts else ""
        if fl.type == FieldProto.TYPE_GROUP and entry is not None:
            group_full = fl.type_name.lstrip(".")
            body = self.message_body(entry, group_full)
            label = self._label(fl, in_oneof)
            return [
                f"{label}group {entry.name} = {fl.number}{tail} {{\n",
                *_indent(body),
                "}\n",
            ]
        return [f"{head} {fl.name} = {fl.number}{tail};\n"]

    def _label(self, fl: FieldProto, in_oneof: bool) -> str:
        if in_oneof:
            return ""
        if fl.label == FieldProto.LABEL_REPEATED:
            return "repeated "
        if fl.label == FieldProto.LABEL_REQUIRED:
            return "required "
        if not self.proto3 or fl.proto3_optional:
            return "optional "
        return ""

    def _type(self, fl: FieldProto, scope: str) -> str:
        if fl.type in _NAMED or (not fl.HasField("type") and fl.type_name):
            return self.name(fl.type_name, scope)
        return SCALAR_NAMES[fl.type]

    def _field_options(self, fl: FieldProto, owner: str) -> list[tuple[str, str]]:
        special: list[tuple[str, str]] = []
        if fl.HasField("default_value"):
            special.append(("default", _default(fl)))
        if fl.HasField("json_name") and fl.json_name != default_json_name(fl.name):
            special.append(("json_name", f'"{_quote(fl.json_name)}"'))
        opts = special + self.options(fl.options, owner)
        return sorted(opts) if self.normalize else opts

    def _extension_range(
        self, rng: descriptor_pb2.DescriptorProto.ExtensionRange, full: str
    ) -> list[str]:
        text = _range(rng.start, rng.end - 1, MAX_FIELD_NUMBER)
        opts = self.options(rng.options, full + ".x")
        tail = f" [{', '.join(f'{n} = {v}' for n, v in opts)}]" if opts else ""
        return [f"extensions {text}{tail};\n"]

    def _reserved(
        self, ranges: Iterable, names: Iterable[str], max_number: int, exclusive: bool
    ) -> list[str]:
        spans = [(r.start, r.end - 1 if exclusive else r.end) for r in ranges]
        names = list(names)
        if self.normalize:
            spans, names = sorted(set(spans)), sorted(set(names))
        out = []
        if spans:
            out.append(f"reserved {', '.join(_range(a, b, max_number) for a, b in spans)};\n")
        if names:
            quoted = ", ".join('"' + _quote(n) + '"' for n in names)
            out.append(f"reserved {quoted};\n")
        return out

    # ---- enums, extensions, services ---------------------------------------------------
    def enum(self, e: EnumProto, scope: str) -> list[str]:
        full = f"{scope}.{e.name}" if scope else e.name
        body = self._reserved(e.reserved_range, e.reserved_name, MAX_ENUM_NUMBER, False)
        body += [f"option {n} = {v};\n" for n, v in self.options(e.options, full)]
        values = list(e.value)
        if self.normalize:
            # the first value stays: it is the default (proto2) and must be zero (proto3)
            values[1:] = sorted(values[1:], key=lambda v: (v.number, v.name))
        for v in values:
            # enum values are siblings of their enum: options resolve from the enum's scope
            opts = self.options(v.options, f"{scope}.{v.name}" if scope else v.name)
            tail = f" [{', '.join(f'{n} = {x}' for n, x in opts)}]" if opts else ""
            body.append(f"{v.name} = {v.number}{tail};\n")
        return [f"enum {e.name} {{\n", *_indent(body), "}\n"]

    def extends(self, exts: Iterable[FieldProto], scope: str) -> list[str]:
        groups: list[tuple[str, list[FieldProto]]] = []
        for ext in exts:
            if self.normalize:
                match = [g for g in groups if g[0] == ext.extendee]
                if match:
                    match[0][1].append(ext)
                    continue
            elif groups and groups[-1][0] == ext.extendee:
                groups[-1][1].append(ext)
                continue
            groups.append((ext.extendee, [ext]))
        out: list[str] = []
        for extendee, fields in groups:
            if self.normalize:
                fields = sorted(fields, key=lambda f: f.number)
            body: list[str] = []
            for fl in fields:
                body += self.field(fl, scope, {}, in_oneof=False)
            out += [f"extend {self.name(extendee, scope)} {{\n", *_indent(body), "}\n"]
        return out

    def service(self, s: descriptor_pb2.ServiceDescriptorProto, scope: str) -> list[str]:
        full = f"{scope}.{s.name}" if scope else s.name
        body = [f"option {n} = {v};\n" for n, v in self.options(s.options, full + ".x")]
        for meth in s.method:
            req = ("stream " if meth.client_streaming else "") + self.name(meth.input_type, full)
            resp = ("stream " if meth.server_streaming else "") + self.name(meth.output_type, full)
            head = f"rpc {meth.name} ({req}) returns ({resp})"
            opts = self.options(meth.options, f"{full}.{meth.name}.x")
            if opts:
                inner = [f"{INDENT}option {n} = {v};\n" for n, v in opts]
                body += [f"{head} {{\n", *inner, "}\n"]
            else:
                body.append(f"{head};\n")
        return [f"service {s.name} {{\n", *_indent(body), "}\n"]

    # ---- options -----------------------------------------------------------------------
    def options(self, opts: Message, owner: str) -> list[tuple[str, str]]:
        """(name, value text) of each option set in ``opts``; custom options (extensions,
        unknown to descriptor_pb2) are decoded through a pool of the file and its
        dependencies. ``owner`` is the full name of the element they sit on."""
        if len(UnknownFieldSet(opts)):
            opts = self._decode_custom(opts)
        scopes = (owner.rpartition(".")[0], owner)
        out: list[tuple[str, str]] = []
        for fd, value in opts.ListFields():
            if fd.name in _SKIPPED_OPTIONS and not fd.is_extension:
                continue
            if fd.name == "map_entry" and not fd.is_extension:
                continue  # implied by the map<K, V> syntax
            name = f"({self.name(fd.full_name, *scopes)})" if fd.is_extension else fd.name
            values = list(value) if fd.is_repeated else [value]
            out += [(name, _option_value(fd, v)) for v in values]
        return sorted(out) if self.normalize else out

    def _decode_custom(self, opts: Message) -> Message:
        if self._option_classes is None:
            self._option_classes = _option_classes(self.fdp, self.files)
        cls = self._option_classes.get(opts.DESCRIPTOR.full_name)
        if cls is None:
            return opts  # no pool: unknown fields (custom options) are not printed
        decoded = cls()
        decoded.ParseFromString(opts.SerializeToString())
        return decoded


def _option_classes(fdp: FDP, files: Mapping[str, FDP]) -> dict[str, type[Message]]:
    """Message classes for google.protobuf.*Options from a pool holding ``fdp`` and its
    dependencies, so extensions they define parse as fields; {} if the pool refuses."""
    pool = descriptor_pool.DescriptorPool()
    try:
        for f in [*dependency_order(files), fdp]:
            pool.Add(f)
        names = [d.full_name for d in descriptor_pb2.DESCRIPTOR.message_types_by_name.values()]
        out = {}
        for name in names:
            if name.endswith("Options"):
                out[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        return out
    except (TypeError, KeyError):
        return {}


def _option_value(fd, value: object) -> str:
    if fd.type == fd.TYPE_MESSAGE or fd.type == fd.TYPE_GROUP:
        inner = text_format.MessageToString(value, as_one_line=True, as_utf8=True)
        return "{ " + inner + " }" if inner else "{}"
    if fd.type == fd.TYPE_ENUM:
        known = fd.enum_type.values_by_number.get(value)
        return known.name if known is not None else str(value)
    if fd.type == fd.TYPE_BOOL:
        return "true" if value else "false"
    if fd.type == fd.TYPE_STRING:
        return f'"{_quote(value)}"'
    if fd.type == fd.TYPE_BYTES:
        return f'"{CEscape(value, False)}"'
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return _float(value)
    return str(value)


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _default(fl: FieldProto) -> str:
    value = fl.default_value
    if fl.type == FieldProto.TYPE_STRING:
        return f'"{_quote(value)}"'
    if fl.type == FieldProto.TYPE_BYTES:
        return f'"{value}"'  # FieldDescriptorProto keeps bytes defaults C-escaped
    return value


def _quote(text: str) -> str:
    return CEscape(text, True)


def _range(start: int, end: int, max_number: int) -> str:
    if start == end:
        return str(start)
    return f"{start} to {'max' if end == max_number else end}"


def _indent(lines: list[str]) -> list[str]:
    # each entry is one or more complete lines; indent every line of it
    return [
        "".join(INDENT + ln if ln.strip() else ln for ln in chunk.splitlines(keepends=True))
        for chunk in lines
    ]


def _collect_symbols(f: FDP, out: set[str]) -> None:
    """Every name protoc may find while resolving: package prefixes, types, fields, oneofs,
    enum values (siblings of their enum), extensions, services and methods."""
    pkg = f.package
    if pkg:
        parts = pkg.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))

    def q(scope: str, name: str) -> str:
        return f"{scope}.{name}" if scope else name

    def message(m: MessageProto, scope: str) -> None:
        full = q(scope, m.name)
        out.add(full)
        out.update(q(full, x.name) for x in [*m.field, *m.extension, *m.oneof_decl])
        for t in m.nested_type:
            message(t, full)
        for e in m.enum_type:
            enum(e, full)

    def enum(e: EnumProto, scope: str) -> None:
        out.add(q(scope, e.name))
        out.update(q(scope, v.name) for v in e.value)

    for m in f.message_type:
        message(m, pkg)
    for e in f.enum_type:
        enum(e, pkg)
    out.update(q(pkg, x.name) for x in f.extension)
    for s in f.service:
        out.add(q(pkg, s.name))
        out.update(q(q(pkg, s.name), meth.name) for meth in s.method)
