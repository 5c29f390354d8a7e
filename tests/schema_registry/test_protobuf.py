"""The PROTOBUF format: .proto text and base64 FileDescriptorProto (what confluent-kafka's
Python ProtobufSerializer registers) become one canonical text; references and built-in
imports; invalid schemas refused with protoc's reason; Confluent's compatibility rules
(research §7.4) through ``levels.check_level``.
"""

from __future__ import annotations

import base64
import importlib
import os
import sys
from collections import OrderedDict
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from kafkette.broker.schema_registry.formats import (
    Dependency,
    Reference,
    SchemaFormatError,
    parse,
    render,
)
from kafkette.broker.schema_registry.formats.levels import DIFFERENT_TYPE, check_level

P = "PROTOBUF"

COMMON = """\
syntax = "proto3";
package kafkette.srtest.common;

message Money {
  string currency = 1;
  int64 units = 2;
}
"""

ORDER = """\
syntax = "proto3";
package kafkette.srtest;

import "google/protobuf/timestamp.proto";
import "kafkette_srtest/common.proto";

option java_package = "io.kafkette.srtest";

message Order {
  string id = 1;
  google.protobuf.Timestamp placed_at = 2;
  kafkette.srtest.common.Money total = 3;
  map<string, int32> counts = 4;
  optional string note = 5;
  oneof payment {
    string card = 6;
    int64 voucher = 7;
  }
  enum Status {
    STATUS_UNSPECIFIED = 0;
    OPEN = 1;
  }
  Status status = 8;
}
"""

COMMON_REF = Reference("kafkette_srtest/common.proto", "common-value", 1)


def _deps(common: str = COMMON) -> dict[str, Dependency]:
    return {COMMON_REF.name: Dependency(COMMON_REF.name, P, common)}


def _parse(text: str, **kw) -> object:
    refs = kw.pop("references", ())
    deps = kw.pop("dependencies", {})
    return parse(P, text, refs, deps, normalize=kw.pop("normalize", False))


# ---- what the Python client sends ---------------------------------------------------------
@pytest.fixture(scope="module")
def python_client_schemas(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(schema string for Order, for its import) exactly as confluent-kafka's
    ProtobufSerializer registers them: ``_schema_to_str(message.DESCRIPTOR.file)``, base64
    of the generated module's serialized FileDescriptorProto."""
    from confluent_kafka.schema_registry.protobuf import _schema_to_str
    from grpc_tools import protoc

    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("gen")
    (src / "kafkette_srtest").mkdir()
    (src / "kafkette_srtest" / "common.proto").write_text(COMMON)
    (src / "kafkette_srtest" / "order.proto").write_text(ORDER)
    rc = protoc.main(
        [
            "protoc",
            f"-I{src}",
            f"-I{protoc._get_resource_file_name('grpc_tools', '_proto')}",
            f"--python_out={out}",
            "kafkette_srtest/common.proto",
            "kafkette_srtest/order.proto",
        ]
    )
    assert rc == 0
    sys.path.insert(0, str(out))
    try:
        module = importlib.import_module("kafkette_srtest.order_pb2")
    finally:
        sys.path.remove(str(out))
    order_file = module.Order.DESCRIPTOR.file
    common_file = order_file.dependencies[1]
    return _schema_to_str(order_file), _schema_to_str(common_file)


def test_python_base64_and_java_text_are_one_schema(python_client_schemas) -> None:
    order_b64, common_b64 = python_client_schemas
    from_text = _parse(ORDER, references=[COMMON_REF], dependencies=_deps())
    from_b64 = _parse(order_b64, references=[COMMON_REF], dependencies=_deps())
    assert from_b64.canonical == from_text.canonical
    assert from_b64 == from_text  # canonical + references: the registry's dedupe key
    # the dependency too, on its own
    assert _parse(common_b64).canonical == _parse(COMMON).canonical


def test_canonical_text_is_our_printing() -> None:
    canonical = _parse(ORDER, references=[COMMON_REF], dependencies=_deps()).canonical
    assert canonical.startswith('syntax = "proto3";\npackage kafkette.srtest;\n\n')
    assert 'import "google/protobuf/timestamp.proto";\n' in canonical
    assert "  common.Money total = 3;\n" in canonical
    assert "  map<string, int32> counts = 4;\n" in canonical
    assert "  optional string note = 5;\n" in canonical
    # whitespace and comments do not make another schema
    noisy = ORDER.replace("  string id = 1;", "  // the key\n  string   id=1 ;")
    assert _parse(noisy, references=[COMMON_REF], dependencies=_deps()).canonical == canonical


def test_serialized_render_is_the_descriptor_of_the_stored_text(python_client_schemas) -> None:
    order_b64, _ = python_client_schemas
    parsed = _parse(ORDER, references=[COMMON_REF], dependencies=_deps())
    served = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(render(parsed, "serialized"))
    )
    sent = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(order_b64))
    served.ClearField("name")
    sent.ClearField("name")
    assert served == sent
    assert render(parsed, None) == parsed.canonical
    assert render(parsed, "resolved") == parsed.canonical
    # the stored text parses to the same schema again (what a registry restart does)
    again = _parse(parsed.canonical, references=[COMMON_REF], dependencies=_deps())
    assert render(again, "serialized") == render(parsed, "serialized")


@pytest.mark.parametrize(
    "imports",
    [
        'import "google/protobuf/wrappers.proto";\nimport "google/protobuf/any.proto";',
        'import "google/type/money.proto";\nimport "google/type/date.proto";',
        'import "confluent/meta.proto";\nimport "confluent/type/decimal.proto";',
    ],
)
def test_built_in_imports_need_no_reference(imports: str) -> None:
    text = f'syntax = "proto3";\npackage t;\n{imports}\nmessage M {{\n  string a = 1;\n}}\n'
    if "google/type" in imports:
        pytest.importorskip("google.type.money_pb2")
    assert imports.splitlines()[0] + "\n" in _parse(text).canonical


def test_confluent_meta_options_and_decimal() -> None:
    text = """\
syntax = "proto3";
package t;
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message M {
  option (confluent.message_meta) = { doc: "an order" params { key: "k" value: "v" } };
  confluent.type.Decimal amount = 1 [(confluent.field_meta) = { doc: "money" tags: "PII" }];
}
"""
    canonical = _parse(text).canonical
    assert '(confluent.message_meta) = { doc: "an order" params { key: "k" value: "v" } }' in (
        canonical
    )
    assert '[(confluent.field_meta) = { doc: "money" tags: "PII" }]' in canonical


# ---- invalid schemas ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            'syntax = "proto3";\nmessage M {\n  strin a = 1;\n}\n',
            '3:3: "strin" is not defined.',
        ),
        (
            'syntax = "proto3";\nmessage M {\n  int32 a = 1;\n  int32 b = 1;\n}\n',
            '4:13: Field number 1 has already been used in "M" by field "a".',
        ),
        ('syntax = "proto3";\nmessage M {\n', "3:1: Reached end of input in message definition"),
        (
            'syntax = "proto3";\nimport "nowhere/x.proto";\nmessage M {}\n',
            "nowhere/x.proto: File not found.",
        ),
        ("not a schema", "1:1: Expected top-level statement"),
        ('edition = "2023";\nmessage M {}\n', "editions"),
    ],
)
def test_invalid_text_gives_protocs_reason(text: str, reason: str) -> None:
    with pytest.raises(SchemaFormatError) as info:
        _parse(text)
    message = str(info.value)
    assert message.startswith(f"Invalid schema {text} with refs [] of type PROTOBUF, details: ")
    assert reason in message


def test_invalid_message_lists_the_references() -> None:
    with pytest.raises(SchemaFormatError) as info:
        _parse(
            ORDER.replace("Money total", "Mony total"),
            references=[COMMON_REF],
            dependencies=_deps(),
        )
    assert (
        " with refs [{name='kafkette_srtest/common.proto', subject='common-value', version=1}]"
        " of type PROTOBUF, details: " in str(info.value)
    )
    assert '"kafkette.srtest.common.Mony" is not defined.' in str(info.value)


def test_missing_reference_is_an_invalid_schema() -> None:
    with pytest.raises(SchemaFormatError, match=r"kafkette_srtest/common\.proto: File not found"):
        _parse(ORDER)


def _fdp_b64(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.standard_b64encode(fdp.SerializeToString()).decode()


def test_invalid_descriptor_gives_the_pools_reason() -> None:
    fdp = descriptor_pb2.FileDescriptorProto(name="d.proto", syntax="proto3")
    msg = fdp.message_type.add(name="M")
    for name in ("a", "b"):
        msg.field.add(name=name, number=1, type=9, label=1)
    with pytest.raises(SchemaFormatError, match=r"details: .*duplicate field number \(1\)"):
        _parse(_fdp_b64(fdp))
    missing = descriptor_pb2.FileDescriptorProto(name="e.proto", dependency=["gone/x.proto"])
    with pytest.raises(SchemaFormatError, match=r"gone/x\.proto: File not found"):
        _parse(_fdp_b64(missing))


def test_reference_name_must_stay_inside() -> None:
    deps = {"../evil.proto": Dependency("../evil.proto", P, COMMON)}
    with pytest.raises(SchemaFormatError, match="not a relative import path"):
        _parse('syntax = "proto3";\nmessage M {}\n', dependencies=deps)


# ---- normalize ----------------------------------------------------------------------------
def test_normalize_makes_spellings_one_schema() -> None:
    a = """\
syntax = "proto3";
package n;
import "google/protobuf/wrappers.proto";
import "google/protobuf/timestamp.proto";
option java_package = "x";
option go_package = "y";
message M {
  int32 b = 2;
  string a = 1;
  google.protobuf.Timestamp t = 3;
  reserved 9, 7;
}
"""
    b = """\
syntax = "proto3";
package n;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
option go_package = "y";
option java_package = "x";
message M {
  reserved 7, 9;
  string a = 1;
  int32 b = 2;
  .google.protobuf.Timestamp t = 3;
}
"""
    assert _parse(a).canonical != _parse(b).canonical
    assert _parse(a, normalize=True).canonical == _parse(b, normalize=True).canonical


# ---- compatibility (research §7.4) --------------------------------------------------------
def _m(body: str, *, package: str = "c", syntax: str = "proto3", extra: str = "") -> str:
    return f'syntax = "{syntax}";\npackage {package};\nmessage M {{\n{body}\n}}\n{extra}'


def _incompatible(path: str, kind: str) -> str:
    return f"Found incompatible change: Difference{{fullPath='{path}', type={kind}}}"


ENUM = "enum E {\n  E0 = 0;\n  E1 = 1;\n}\n"
OTHER = "message O {\n  int32 x = 1;\n}\nmessage P {\n  int32 y = 1;\n}\n"

BACKWARD_CASES = [
    # (id, old, new, messages under BACKWARD)
    ("field added", _m("int32 a = 1;"), _m("int32 a = 1;\nstring b = 2;"), []),
    ("field removed", _m("int32 a = 1;\nstring b = 2;"), _m("int32 a = 1;"), []),
    ("field renamed", _m("int32 a = 1;"), _m("int32 z = 1;"), []),
    ("int32 -> int64", _m("int32 a = 1;"), _m("int64 a = 1;"), []),
    ("uint64 -> bool", _m("uint64 a = 1;"), _m("bool a = 1;"), []),
    ("int32 -> enum", _m("int32 a = 1;", extra=ENUM), _m("E a = 1;", extra=ENUM), []),
    ("string -> bytes", _m("string a = 1;"), _m("bytes a = 1;"), []),
    ("fixed32 -> sfixed32", _m("fixed32 a = 1;"), _m("sfixed32 a = 1;"), []),
    ("fixed64 -> sfixed64", _m("fixed64 a = 1;"), _m("sfixed64 a = 1;"), []),
    ("sint32 -> sint64", _m("sint32 a = 1;"), _m("sint64 a = 1;"), []),
    (
        "int32 -> sint32",
        _m("int32 a = 1;"),
        _m("sint32 a = 1;"),
        [_incompatible("#/M/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
    (
        "float -> double",
        _m("float a = 1;"),
        _m("double a = 1;"),
        [_incompatible("#/M/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
    (
        "fixed32 -> int32",
        _m("fixed32 a = 1;"),
        _m("int32 a = 1;"),
        [_incompatible("#/M/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
    (
        "scalar -> message",
        _m("int32 a = 1;", extra=OTHER),
        _m("O a = 1;", extra=OTHER),
        [_incompatible("#/M/1", "FIELD_KIND_CHANGED")],
    ),
    (
        "message -> other message",
        _m("O a = 1;", extra=OTHER),
        _m("P a = 1;", extra=OTHER),
        [_incompatible("#/M/1", "FIELD_NAMED_TYPE_CHANGED")],
    ),
    ("string -> repeated string", _m("string a = 1;"), _m("repeated string a = 1;"), []),
    (
        "proto2 optional int32 -> repeated int32",
        _m("optional int32 a = 1;", syntax="proto2"),
        _m("repeated int32 a = 1;", syntax="proto2"),
        [_incompatible("#/M/1", "FIELD_NUMERIC_LABEL_CHANGED")],
    ),
    (
        "proto2 optional string -> repeated string",
        _m("optional string a = 1;", syntax="proto2"),
        _m("repeated string a = 1;", syntax="proto2"),
        [],
    ),
    # 7.0.16 compares labels only when both sides have one, and a proto3 field without a
    # label has none: these pass
    ("proto3 int32 -> repeated int32", _m("int32 a = 1;"), _m("repeated int32 a = 1;"), []),
    ("proto3 int32 -> optional int32", _m("int32 a = 1;"), _m("optional int32 a = 1;"), []),
    (
        "proto3 optional int32 -> repeated int32",
        _m("optional int32 a = 1;"),
        _m("repeated int32 a = 1;"),
        [_incompatible("#/M/1", "FIELD_NUMERIC_LABEL_CHANGED")],
    ),
    (
        "map value kind",
        _m("map<string, int32> a = 1;"),
        _m("map<string, string> a = 1;"),
        [_incompatible("#/M/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
    ("map value in group", _m("map<string, int32> a = 1;"), _m("map<string, int64> a = 1;"), []),
    (
        "map -> scalar",
        _m("map<string, int32> a = 1;"),
        _m("int32 a = 1;"),
        [_incompatible("#/M/1", "FIELD_KIND_CHANGED")],
    ),
    ("message added", _m("int32 a = 1;"), _m("int32 a = 1;", extra=OTHER), []),
    (
        "message removed",
        _m("int32 a = 1;", extra=OTHER),
        _m("int32 a = 1;"),
        # in Java HashMap order: "P" hashes to bucket 0, "O" to bucket 15
        [_incompatible("#/P", "MESSAGE_REMOVED"), _incompatible("#/O", "MESSAGE_REMOVED")],
    ),
    (
        "messages reordered",
        _m("int32 a = 1;", extra=OTHER),
        _m(
            "int32 a = 1;", extra="message P {\n  int32 y = 1;\n}\nmessage O {\n  int32 x = 1;\n}\n"
        ),
        [],
    ),
    (
        "package changed",
        _m("int32 a = 1;"),
        _m("int32 a = 1;", package="d"),
        [_incompatible("#/", "PACKAGE_CHANGED")],
    ),
    (
        "nested message field changed",
        _m("message In {\n  int32 x = 1;\n}\nIn i = 1;"),
        _m("message In {\n  string x = 1;\n}\nIn i = 1;"),
        [_incompatible("#/M/In/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
    (
        "required field added",
        _m("optional int32 a = 1;", syntax="proto2"),
        _m("optional int32 a = 1;\nrequired int32 b = 2;", syntax="proto2"),
        [_incompatible("#/M/2", "REQUIRED_FIELD_ADDED")],
    ),
    (
        "required field removed",
        _m("optional int32 a = 1;\nrequired int32 b = 2;", syntax="proto2"),
        _m("optional int32 a = 1;", syntax="proto2"),
        [_incompatible("#/M/2", "REQUIRED_FIELD_REMOVED")],
    ),
    (
        "enum constant added",
        _m("int32 a = 1;", extra=ENUM),
        _m("int32 a = 1;", extra=ENUM.replace("E1 = 1;", "E1 = 1;\n  E2 = 2;")),
        [],
    ),
    (
        "enum constant removed",
        _m("int32 a = 1;", extra=ENUM),
        _m("int32 a = 1;", extra=ENUM.replace("  E1 = 1;\n", "")),
        [],
    ),
    (
        "enum constant renamed",
        _m("int32 a = 1;", extra=ENUM),
        _m("int32 a = 1;", extra=ENUM.replace("E1 = 1", "EONE = 1")),
        [],
    ),
    ("enum removed", _m("int32 a = 1;", extra=ENUM), _m("int32 a = 1;"), []),
    (
        "field moved into a new oneof",
        _m("int32 a = 1;\nint32 b = 2;"),
        _m("int32 a = 1;\noneof o {\n  int32 b = 2;\n}"),
        [],
    ),
    (
        "two fields moved into a oneof",
        _m("int32 a = 1;\nint32 b = 2;"),
        _m("oneof o {\n  int32 a = 1;\n  int32 b = 2;\n}"),
        [_incompatible("#/M/o", "MULTIPLE_FIELDS_MOVED_TO_ONEOF")],
    ),
    (
        "field moved into an existing oneof",
        _m("int32 a = 1;\noneof o {\n  int32 b = 2;\n}"),
        _m("oneof o {\n  int32 a = 1;\n  int32 b = 2;\n}"),
        [_incompatible("#/M/o", "FIELD_MOVED_TO_EXISTING_ONEOF")],
    ),
    (
        "oneof field added",
        _m("oneof o {\n  int32 a = 1;\n}"),
        _m("oneof o {\n  int32 a = 1;\n  string b = 2;\n}"),
        [],
    ),
    (
        "oneof field removed",
        _m("oneof o {\n  int32 a = 1;\n  string b = 2;\n}"),
        _m("oneof o {\n  int32 a = 1;\n}"),
        [_incompatible("#/M/o/2", "ONEOF_FIELD_REMOVED")],
    ),
    (
        "whole oneof removed",
        _m("int32 z = 9;\noneof o {\n  int32 a = 1;\n  string b = 2;\n}"),
        _m("int32 z = 9;"),
        [],
    ),
    (
        "oneof field moved to top level (incompatible in 7.0.16)",
        _m("oneof o {\n  int32 a = 1;\n  string b = 2;\n}"),
        _m("oneof o {\n  int32 a = 1;\n}\nstring b = 2;"),
        [_incompatible("#/M/o/2", "ONEOF_FIELD_REMOVED")],
    ),
    (
        "oneof member type changed",
        _m("oneof o {\n  int32 a = 1;\n}"),
        _m("oneof o {\n  double a = 1;\n}"),
        [_incompatible("#/M/o/1", "FIELD_SCALAR_KIND_CHANGED")],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in BACKWARD_CASES], ids=[c[0] for c in BACKWARD_CASES]
)
def test_backward_rules(old: str, new: str, expected: list[str]) -> None:
    assert check_level("BACKWARD", _parse(new), [(1, _parse(old))]) == expected


def test_forward_swaps_the_sides() -> None:
    old, new = _m("int32 a = 1;\nstring b = 2;"), _m("int32 a = 1;\nint32 c = 3;")
    assert check_level("FORWARD", _parse(new), [(1, _parse(old))]) == []
    proto2_old = _m("optional int32 a = 1;", syntax="proto2")
    proto2_new = _m("optional int32 a = 1;\nrequired int32 b = 2;", syntax="proto2")
    # FORWARD: the old schema reads the new one's data: the old lacks a required field the
    # new one has -> from the diff's view (original=new, update=old) it was removed
    assert check_level("FORWARD", _parse(proto2_new), [(1, _parse(proto2_old))]) == [
        _incompatible("#/M/2", "REQUIRED_FIELD_REMOVED")
    ]
    # FULL: the old-reads-new half first, as Confluent's mutual-read strategy lists them.
    assert check_level("FULL", _parse(proto2_new), [(1, _parse(proto2_old))]) == [
        _incompatible("#/M/2", "REQUIRED_FIELD_REMOVED"),
        _incompatible("#/M/2", "REQUIRED_FIELD_ADDED"),
    ]


def test_transitive_checks_every_version() -> None:
    v1, v2, v3 = _m("int32 a = 1;"), _m("int64 a = 1;"), _m("sint64 a = 1;")
    history = [(1, _parse(v1)), (2, _parse(v2))]
    assert check_level("BACKWARD", _parse(v3), history[1:]) == [
        _incompatible("#/M/1", "FIELD_SCALAR_KIND_CHANGED")
    ]
    ok = _m("uint32 a = 1;")
    assert check_level("BACKWARD_TRANSITIVE", _parse(ok), history) == []


def test_different_schema_type() -> None:
    from kafkette.broker.schema_registry.formats import ParsedSchema

    avro = ParsedSchema("AVRO", '"string"')
    assert check_level("BACKWARD", _parse(_m("int32 a = 1;")), [(1, avro)]) == [DIFFERENT_TYPE]


def test_referenced_message_changes_are_followed() -> None:
    old_common, new_common = COMMON, COMMON.replace("int64 units = 2;", "string units = 2;")
    old = _parse(ORDER, references=[COMMON_REF], dependencies=_deps(old_common))
    ref2 = Reference(COMMON_REF.name, "common-value", 2)
    new = _parse(ORDER, references=[ref2], dependencies=_deps(new_common))
    assert check_level("BACKWARD", new, [(1, old)]) == [
        _incompatible("#/Money/2", "FIELD_SCALAR_KIND_CHANGED"),
        _incompatible("#/Order/3", "FIELD_NAMED_TYPE_CHANGED"),
    ]
    # the same subject-version on both sides is not compared again
    same = _parse(ORDER, references=[COMMON_REF], dependencies=_deps(old_common))
    assert check_level("FULL", same, [(1, old)]) == []


def test_python_registered_schema_evolves_like_text(python_client_schemas) -> None:
    order_b64, _ = python_client_schemas
    old = _parse(order_b64, references=[COMMON_REF], dependencies=_deps())
    new_text = ORDER.replace("map<string, int32> counts = 4;", "map<string, string> counts = 4;")
    new = _parse(new_text, references=[COMMON_REF], dependencies=_deps())
    assert check_level("BACKWARD", new, [(1, old)]) == [
        _incompatible("#/Order/4", "FIELD_SCALAR_KIND_CHANGED")
    ]


ABORTS_PROTOC = """syntax = "proto2";
package self.opt;
import "google/protobuf/descriptor.proto";
message Holder { optional int32 x = 1; extensions 100 to 200; }
extend google.protobuf.FieldOptions { optional string label = 50001; }
extend google.protobuf.MessageOptions { optional Holder holder = 50002; }
message M { option (holder) = { x: 5 [self.opt.label]: "z" }; }
"""


def test_an_input_that_aborts_protoc_is_refused_and_the_next_compiles() -> None:
    """protoc aborts its process on this option value (an extension of FieldOptions inside a
    Holder value): in the broker's process that would end the broker; in protoc's child it
    is one refused schema, and a new child compiles the next one."""
    with pytest.raises(SchemaFormatError, match="protoc stopped while compiling this schema"):
        parse("PROTOBUF", ABORTS_PROTOC)
    parsed = parse("PROTOBUF", 'syntax = "proto3";\nmessage AfterTheCrash { string a = 1; }\n')
    assert "message AfterTheCrash" in parsed.canonical


# ---- hostile or odd input: a refusal (42201), never a hang or another exception ----------
@pytest.mark.parametrize(
    ("names", "reason"),
    [
        (["a.proto", "a.proto/b.proto"], "reference name 'a.proto/b.proto' cannot be used"),
        (["a\0.proto"], "not a relative import path"),
        (["a\\b.proto"], "not a relative import path"),
        (["\ud800.proto"], "cannot be used"),
    ],
)
def test_reference_names_that_are_no_file_names_are_refused(names: list[str], reason: str):
    deps = {name: Dependency(name, P, 'syntax = "proto3";\n') for name in names}
    with pytest.raises(SchemaFormatError) as caught:
        _parse('syntax = "proto3";\nmessage M {}\n', dependencies=deps)
    assert reason in str(caught.value)
    str(caught.value).encode("utf-8")  # the 42201 answer can carry it


def test_a_lone_surrogate_is_refused():
    text = 'syntax = "proto3";\n// \ud800\nmessage M {}\n'
    with pytest.raises(SchemaFormatError, match="unpaired surrogate") as caught:
        _parse(text)
    assert "\\ud800" in str(caught.value)  # quoted, so that the answer encodes


def test_a_protoc_that_hangs_is_killed_and_replaced(tmp_path):
    """protoc reading a FIFO nobody writes blocks forever: the parent kills the child after
    its timeout, says so, and the next compile gets a new child."""
    from kafkette.broker.schema_registry.formats import protoc_child

    os.mkfifo(tmp_path / "hang.proto")
    (tmp_path / "ok.proto").write_text('syntax = "proto3";\nmessage Ok {}\n')
    child = protoc_child._Child(timeout_s=0.5)
    try:
        with pytest.raises(protoc_child.ProtocCrashed, match=r"took more than 0\.5 s"):
            child.compile("hang.proto", [str(tmp_path)])
        [(module, _source)] = child.compile("ok.proto", [str(tmp_path)])
        assert module == "ok_pb2.py"
    finally:
        if child._proc is not None:
            child._proc.kill()
            child._proc.wait()


def test_the_protoc_child_is_bounded_and_answers_on_its_own_pipe():
    """Its address space is limited, and its fd 1 is not the answer pipe (a stray print in
    the child cannot break the line protocol)."""
    from kafkette.broker.schema_registry.formats import protoc_child

    _parse('syntax = "proto3";\nmessage Limits {}\n')
    proc = protoc_child._CHILD._proc
    assert proc is not None
    limits = Path(f"/proc/{proc.pid}/limits").read_text()
    [line] = [row for row in limits.splitlines() if row.startswith("Max address space")]
    assert line.split()[3] == str(protoc_child.MEMORY_LIMIT)
    assert not os.readlink(f"/proc/{proc.pid}/fd/1").startswith("pipe:")


def test_parses_are_cached_by_digest_and_big_texts_are_not_cached(monkeypatch):
    """The cache holds no request text (bodies may be megabytes): keys are SHA-256 digests,
    and inputs over ``CACHE_MAX_INPUT`` are not kept at all."""
    from kafkette.broker.schema_registry.formats import protobuf

    monkeypatch.setattr(protobuf, "_cache", OrderedDict())
    small = 'syntax = "proto3";\nmessage Cached {}\n'
    _parse(small)
    assert _parse(small).canonical == 'syntax = "proto3";\n\nmessage Cached {\n}\n'
    [key] = protobuf._cache
    assert isinstance(key, bytes) and len(key) == 32
    _parse(small + "// " + "x" * protobuf.CACHE_MAX_INPUT + "\n")
    assert list(protobuf._cache) == [key]


def _chain(levels: int, leaf: str) -> str:
    """M0 has two fields of type M1, M1 two of M2, ..."""
    out = ['syntax = "proto3";\npackage chain;\n']
    for i in range(levels):
        out.append(f"message M{i} {{ M{i + 1} a = 1; M{i + 1} b = 2; }}\n")
    out.append(f"message M{levels} {{ {leaf} v = 1; }}\n")
    return "".join(out)


def _top(chain: str, version: int):
    ref = Reference("chain.proto", "chain-value", version)
    text = 'syntax = "proto3";\nimport "chain.proto";\nmessage Top { chain.M0 m = 1; }\n'
    return _parse(text, references=[ref], dependencies={ref.name: Dependency(ref.name, P, chain)})


def test_referenced_message_types_are_compared_once_per_pair(monkeypatch):
    """Each side's M0 comes from another version of the reference, so every message-typed
    field is followed: 2^40 times without a memo. With a leaf change, its difference is
    found on each path: the check gives up after its budget, with an error."""
    from kafkette.broker.schema_registry.formats import budget

    assert (
        check_level("FULL", _top(_chain(40, "int32"), 2), [(1, _top(_chain(40, "int32"), 1))]) == []
    )
    monkeypatch.setattr(budget, "STEPS", 5000)  # the default's behaviour, sooner
    old, new = _top(_chain(40, "int32"), 1), _top(_chain(40, "string"), 2)
    with pytest.raises(SchemaFormatError, match=r"^schema too complex to compare$"):
        check_level("BACKWARD", new, [(1, old)])
