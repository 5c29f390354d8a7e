"""Confluent's Protobuf compatibility rule (research §7.4): diff the writer's schema
("original") against the reader's ("update"), keep the differences outside the compatible
set, and word them as Confluent 7.0.16 does:
``Found incompatible change: Difference{fullPath='#/Order/3', type=FIELD_KIND_CHANGED}``.

Matching: messages and enums by name per nesting level, fields and enum constants by number,
oneofs by name. Descriptors stand in for Confluent's parsed .proto elements: map fields are
compared as ``map<K, V>`` (their synthetic entry messages are not types of their own), group
fields and proto2 groups are ignored like Confluent's element model ignores them, proto3
fields without a label have no label (``optional`` and ``repeated`` are labels), and members
of proto3 ``optional``'s synthetic oneofs are plain fields. Differences are listed in the
iteration order of the Java HashMaps Confluent uses (emulated), so ``verbose`` answers list
them as Confluent does.

Bounded for hostile input: a message-typed field whose two sides come from different places
(a reference changed) is compared in a fresh context, once per pair of types (memoised), and
every comparison and reused difference spends a step of a ``budget.Budget``; a check collects
no compatible difference (no decision depends on one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkette.broker.schema_registry.formats import SchemaFormatError
from kafkette.broker.schema_registry.formats.budget import TOO_COMPLEX, Budget
from kafkette.broker.schema_registry.formats.protobuf_text import (
    SCALAR_NAMES,
    EnumProto,
    FieldProto,
    MessageProto,
    is_group_type,
    real_oneof,
)

COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
    }
)

_SCALAR_GROUPS = {
    "int32": "GENERAL_NUMBER",
    "int64": "GENERAL_NUMBER",
    "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER",
    "bool": "GENERAL_NUMBER",
    "sint32": "SIGNED_NUMBER",
    "sint64": "SIGNED_NUMBER",
    "string": "STRING_OR_BYTES",
    "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32",
    "sfixed32": "FIXED32",
    "fixed64": "FIXED64",
    "sfixed64": "FIXED64",
    "float": "FLOAT",
    "double": "DOUBLE",
}
_LOCAL = ("", -1)  # Confluent's dummy reference for the schema's own types


@dataclass(frozen=True)
class Difference:
    type: str
    full_path: str

    def __str__(self) -> str:
        return f"Difference{{fullPath='{self.full_path}', type={self.type}}}"


@dataclass(frozen=True)
class _TypeInfo:
    package: str
    ref: tuple[str, int] | None  # (subject, version); _LOCAL; None: no direct reference
    proto: MessageProto | EnumProto
    syntax: str
    is_map: bool = False


# A field's type: ("scalar", name) | ("named", full name) | ("map", key type, value type)
_Type = tuple


def check(reader: object, writer: object) -> list[str]:
    """Why ``reader`` (a ``protobuf.ProtoSchema``) cannot read ``writer``'s data: Confluent's
    ``compare(original=writer, update=reader)`` filtered to incompatible differences."""
    try:
        found = incompatible(compare(writer, reader, keep_compatible=False))
    except RecursionError:
        raise SchemaFormatError(TOO_COMPLEX) from None
    return [f"Found incompatible change: {d}" for d in found]


def incompatible(differences: Iterable[Difference]) -> list[Difference]:
    return [d for d in differences if d.type not in COMPATIBLE_CHANGES]


def compare(
    original: object,
    update: object,
    budget: Budget | None = None,
    *,
    keep_compatible: bool = True,
) -> list[Difference]:
    """Every difference from ``original`` to ``update`` (both ``protobuf.ProtoSchema``;
    without the compatible ones unless ``keep_compatible``: no decision depends on them);
    raises ``SchemaFormatError`` when that would take more than the ``budget``."""
    walk = _Walk(budget or Budget(), keep_compatible)
    ctx = _Context(_types(original), _types(update), walk)
    o_fdp, u_fdp = original.fdp, update.fdp
    if o_fdp.package != u_fdp.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types(
        ctx,
        _scoped(o_fdp.package, o_fdp.message_type, o_fdp.enum_type),
        _scoped(u_fdp.package, u_fdp.message_type, u_fdp.enum_type),
    )
    return ctx.diffs


# ---- type tables --------------------------------------------------------------------------
def _types(schema: object) -> dict[str, _TypeInfo]:
    """Every message and enum the schema sees, by full name (no leading dot)."""
    refs: Mapping[str, object] = schema.references
    out: dict[str, _TypeInfo] = {}
    for name, fdp in schema.files.items():
        ref = refs.get(name)
        _collect(fdp, (ref.subject, ref.version) if ref is not None else None, out)
    _collect(schema.fdp, _LOCAL, out)
    return out


def _collect(fdp, ref, out: dict[str, _TypeInfo]) -> None:
    syntax = fdp.syntax or "proto2"

    def message(m: MessageProto, scope: str) -> None:
        full = f"{scope}.{m.name}" if scope else m.name
        out[full] = _TypeInfo(fdp.package, ref, m, syntax, m.options.map_entry)
        for t in m.nested_type:
            message(t, full)
        for e in m.enum_type:
            out[f"{full}.{e.name}"] = _TypeInfo(fdp.package, ref, e, syntax)

    for m in fdp.message_type:
        message(m, fdp.package)
    for e in fdp.enum_type:
        out[f"{fdp.package}.{e.name}" if fdp.package else e.name] = _TypeInfo(
            fdp.package, ref, e, syntax
        )


def _scoped(scope: str, messages: Iterable, enums: Iterable) -> list[tuple[str, object]]:
    return [(f"{scope}.{t.name}" if scope else t.name, t) for t in [*messages, *enums]]


# ---- context ------------------------------------------------------------------------------
_NO_CUT = 1 << 62


@dataclass
class _Walk:
    """What one comparison shares across its contexts. A field of a message type whose two
    sides come from different places is compared in a context of its own, whose differences
    do not depend on where the field is: ``memo`` keeps them per (original, update) type, unless
    a recursion cut inside used a message entered above (``cuts``: per memoisable comparison
    in progress, the shallowest such entry). ``budget`` bounds the comparisons and the
    differences copied from the memo."""

    budget: Budget
    keep_compatible: bool
    memo: dict[tuple[str, str], tuple[tuple[Difference, ...], bool]] = field(default_factory=dict)
    cuts: list[int] = field(default_factory=list)


@dataclass
class _Context:
    original: dict[str, _TypeInfo]
    update: dict[str, _TypeInfo]
    walk: _Walk
    path: list[str] = field(default_factory=list)
    diffs: list[Difference] = field(default_factory=list)
    # ids of original messages in progress, each with its depth among them
    comparing: dict[int, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        if kind in COMPATIBLE_CHANGES and not self.walk.keep_compatible:
            return
        self.diffs.append(Difference(kind, "#/" + "/".join(self.path)))

    def sub(self, path: list[str]) -> _Context:
        return _Context(self.original, self.update, self.walk, list(path), [], dict(self.comparing))

    def is_compatible(self) -> bool:
        return not incompatible(self.diffs)


class _Path:
    def __init__(self, ctx: _Context, part: str) -> None:
        self.ctx, self.part = ctx, part

    def __enter__(self) -> None:
        self.ctx.path.append(self.part)

    def __exit__(self, *exc: object) -> None:
        self.ctx.path.pop()


# ---- messages and enums -------------------------------------------------------------------
def _compare_types(
    ctx: _Context, original: list[tuple[str, object]], update: list[tuple[str, object]]
) -> None:
    o_msgs, o_index, o_enums = _split(ctx.original, original)
    u_msgs, u_index, u_enums = _split(ctx.update, update)
    for name in _java_order(list(o_msgs), list(u_msgs)):
        with _Path(ctx, name):
            if name not in u_msgs:
                ctx.add("MESSAGE_REMOVED")
            elif name not in o_msgs:
                ctx.add("MESSAGE_ADDED")
            else:
                _compare_messages(ctx, o_msgs[name], u_msgs[name])
                if o_index[name] != u_index[name]:
                    ctx.add("MESSAGE_MOVED")
    for name in _java_order(list(o_enums), list(u_enums)):
        with _Path(ctx, name):
            if name not in u_enums:
                ctx.add("ENUM_REMOVED")
            elif name not in o_enums:
                ctx.add("ENUM_ADDED")
            else:
                _compare_enums(ctx, o_enums[name][1], u_enums[name][1])


def _split(types: Mapping[str, _TypeInfo], elements: list[tuple[str, object]]):
    """(messages by simple name, their index among messages, enums by simple name); map
    entries and group types are not elements of their own."""
    messages: dict[str, tuple[str, MessageProto]] = {}
    index: dict[str, int] = {}
    enums: dict[str, tuple[str, EnumProto]] = {}
    for full, proto in elements:
        if isinstance(proto, EnumProto):
            enums[proto.name] = (full, proto)
        elif not _synthetic(full, types):
            index[proto.name] = len(messages)
            messages[proto.name] = (full, proto)
    return messages, index, enums


def _synthetic(full: str, types: Mapping[str, _TypeInfo]) -> bool:
    info = types.get(full)
    if info is None:
        return False
    if info.is_map:
        return True
    parent = types.get(full.rpartition(".")[0])
    if parent is None or not isinstance(parent.proto, MessageProto):
        return False
    return is_group_type(parent.proto, full)


def _compare_enums(ctx: _Context, original: EnumProto, update: EnumProto) -> None:
    o_by = {v.number: v for v in original.value}
    u_by = {v.number: v for v in update.value}
    for number in _java_order(list(o_by), list(u_by)):
        with _Path(ctx, str(number)):
            if number not in u_by:
                ctx.add("ENUM_CONST_REMOVED")
            elif number not in o_by:
                ctx.add("ENUM_CONST_ADDED")
            elif o_by[number].name != u_by[number].name:
                ctx.add("ENUM_CONST_CHANGED")


def _compare_messages(
    ctx: _Context, original: tuple[str, MessageProto], update: tuple[str, MessageProto]
) -> None:
    (o_full, o_msg), (u_full, u_msg) = original, update
    ctx.walk.budget.spend()
    entered = ctx.comparing.get(id(o_msg))
    if entered is None:
        ctx.comparing[id(o_msg)] = len(ctx.comparing)
        try:
            _compare_fields(ctx, o_full, o_msg, u_full, u_msg)
        finally:
            del ctx.comparing[id(o_msg)]
    elif ctx.walk.cuts:
        ctx.walk.cuts[-1] = min(ctx.walk.cuts[-1], entered)
    _compare_types(
        ctx,
        _scoped(o_full, o_msg.nested_type, o_msg.enum_type),
        _scoped(u_full, u_msg.nested_type, u_msg.enum_type),
    )


def _members(msg: MessageProto) -> tuple[dict[int, FieldProto], list[tuple[str, list]]]:
    """(top-level fields by number, [(oneof name, its fields)]) as Confluent's element model
    has them: proto3 ``optional`` fields are top-level, group fields are left out."""
    top: dict[int, FieldProto] = {}
    oneofs: list[tuple[str, list[FieldProto]]] = [(d.name, []) for d in msg.oneof_decl]
    for f in msg.field:
        if f.type == FieldProto.TYPE_GROUP:
            continue
        oneof = real_oneof(f)
        if oneof is not None:
            oneofs[oneof][1].append(f)
        else:
            top[f.number] = f
    synthetic = {f.oneof_index for f in msg.field if f.proto3_optional}
    return top, [o for i, o in enumerate(oneofs) if i not in synthetic]


def _compare_fields(
    ctx: _Context, o_full: str, o_msg: MessageProto, u_full: str, u_msg: MessageProto
) -> None:
    o_top, o_oneofs = _members(o_msg)
    u_top, u_oneofs = _members(u_msg)
    o_in_oneofs = {f.number for _, fields in o_oneofs for f in fields}
    for name, fields in u_oneofs:
        with _Path(ctx, name):
            moved = existing = 0
            for f in fields:
                if o_top.pop(f.number, None) is not None:
                    moved += 1  # no FIELD_REMOVED for a field that moved into a oneof
                elif f.number in o_in_oneofs:
                    existing += 1
            if moved > 1:
                ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
            elif moved == 1 and existing > 0:
                ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF")
    o_named, u_named = dict(o_oneofs), dict(u_oneofs)
    for name in _java_order(list(o_named), list(u_named)):
        with _Path(ctx, name):
            if name not in u_named:
                ctx.add("ONEOF_REMOVED")
            elif name not in o_named:
                ctx.add("ONEOF_ADDED")
            else:
                o_by = {f.number: f for f in o_named[name]}
                u_by = {f.number: f for f in u_named[name]}
                for number in _java_order(list(o_by), list(u_by)):
                    with _Path(ctx, str(number)):
                        if number not in u_by:
                            ctx.add("ONEOF_FIELD_REMOVED")
                        elif number not in o_by:
                            ctx.add("ONEOF_FIELD_ADDED")
                        else:
                            _compare_field(ctx, o_full, o_by[number], u_full, u_by[number])
    for number in _java_order(list(o_top), list(u_top)):
        with _Path(ctx, str(number)):
            o_f, u_f = o_top.get(number), u_top.get(number)
            if u_f is None:
                required = o_f.label == FieldProto.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED")
            elif o_f is None:
                required = u_f.label == FieldProto.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED")
            else:
                _compare_field(ctx, o_full, o_f, u_full, u_f)


# ---- fields -------------------------------------------------------------------------------
def _compare_field(
    ctx: _Context, o_scope: str, original: FieldProto, u_scope: str, update: FieldProto
) -> None:
    ctx.walk.budget.spend()
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    _compare_labels_and_types(
        ctx,
        _label(original, ctx.original.get(o_scope)),
        _label(update, ctx.update.get(u_scope)),
        _field_type(original, ctx.original),
        _field_type(update, ctx.update),
    )


def _label(f: FieldProto, owner: _TypeInfo | None) -> str | None:
    if real_oneof(f) is not None:
        return None
    if f.label == FieldProto.LABEL_REPEATED:
        return "REPEATED"
    if f.label == FieldProto.LABEL_REQUIRED:
        return "REQUIRED"
    proto3 = owner is not None and owner.syntax == "proto3"
    return "OPTIONAL" if not proto3 or f.proto3_optional else None


def _field_type(f: FieldProto, types: Mapping[str, _TypeInfo]) -> _Type:
    if f.type in SCALAR_NAMES:
        return ("scalar", SCALAR_NAMES[f.type])
    full = f.type_name.lstrip(".")
    info = types.get(full)
    if info is not None and info.is_map and len(info.proto.field) >= 2:
        key, value = info.proto.field[0], info.proto.field[1]
        return ("map", _field_type(key, types), _field_type(value, types))
    return ("named", full)


def _kind(t: _Type, types: Mapping[str, _TypeInfo]) -> str:
    if t[0] == "scalar":
        return "SCALAR"
    if t[0] == "map":
        return "MAP"
    info = types.get(t[1])
    return "SCALAR" if info is not None and isinstance(info.proto, EnumProto) else "MESSAGE"


def _scalar_group(t: _Type, types: Mapping[str, _TypeInfo]) -> str:
    return "GENERAL_NUMBER" if t[0] == "named" else _SCALAR_GROUPS[t[1]]


def _compare_labels_and_types(
    ctx: _Context, o_label: str | None, u_label: str | None, o_type: _Type, u_type: _Type
) -> None:
    o_kind, u_kind = _kind(o_type, ctx.original), _kind(u_type, ctx.update)
    if o_kind != u_kind:
        ctx.add("FIELD_KIND_CHANGED")
    elif o_kind == "SCALAR":
        o_group = _scalar_group(o_type, ctx.original)
        if o_group != _scalar_group(u_type, ctx.update):
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
        elif o_label is not None and u_label is not None and o_label != u_label:
            if o_group == "STRING_OR_BYTES":
                ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED")
            else:
                ctx.add("FIELD_NUMERIC_LABEL_CHANGED")
    elif o_kind == "MESSAGE":
        _compare_message_types(ctx, o_type[1], u_type[1])
    else:  # MAP: key and value compared without labels
        _compare_labels_and_types(ctx, None, None, o_type[1], u_type[1])
        _compare_labels_and_types(ctx, None, None, o_type[2], u_type[2])


def _compare_message_types(ctx: _Context, o_full: str, u_full: str) -> None:
    o_info, u_info = ctx.original.get(o_full), ctx.update.get(u_full)
    if o_info is None or u_info is None:
        if o_full != u_full:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    o_local, u_local = _local(o_full, o_info.package), _local(u_full, u_info.package)
    if o_local != u_local:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    if o_info.ref is not None and o_info.ref == u_info.ref:
        return  # both the schema's own types, or one referenced subject-version
    walk = ctx.walk
    known = walk.memo.get((o_full, u_full))
    if known is None:
        sub = ctx.sub(o_local.split("."))
        walk.cuts.append(_NO_CUT)
        try:
            _compare_messages(sub, (o_full, o_info.proto), (u_full, u_info.proto))
        finally:
            cut = walk.cuts.pop()
            if walk.cuts:
                walk.cuts[-1] = min(walk.cuts[-1], cut)
        known = (tuple(sub.diffs), sub.is_compatible())
        if cut >= len(ctx.comparing):  # no message entered above was cut short inside
            walk.memo[(o_full, u_full)] = known
    walk.budget.spend(len(known[0]))
    ctx.diffs += known[0]
    if not known[1]:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")


def _local(full: str, package: str) -> str:
    return full[len(package) + 1 :] if package and full.startswith(package + ".") else full


# ---- Java HashMap iteration order ---------------------------------------------------------
def _java_order(first: list, second: list) -> list:
    """The keys of ``new HashSet<>(first); addAll(second)`` in Java's iteration order (the
    order Confluent reports differences in). ``first`` is itself a HashMap key set."""
    first = _java_iteration(first, 16)
    initial = max(int(len(first) / 0.75) + 1, 16)
    seen = set(first)
    return _java_iteration(first + [k for k in second if k not in seen], initial)


def _java_iteration(keys: list, initial_capacity: int) -> list:
    capacity = 1
    while capacity < initial_capacity:
        capacity *= 2
    size = 0
    for _ in keys:
        size += 1
        if size > capacity * 0.75:
            capacity *= 2
    order = sorted(range(len(keys)), key=lambda i: (_java_hash(keys[i]) & (capacity - 1), i))
    return [keys[i] for i in order]


def _java_hash(key: int | str) -> int:
    if isinstance(key, int):
        h = key & 0xFFFFFFFF
    else:
        h = 0
        data = key.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h ^ (h >> 16)
