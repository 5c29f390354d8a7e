"""The .proto printer's gate: text -> descriptor -> printed text -> descriptor gives the same
descriptor, over grpc_tools' bundled well-known types, googleapis-common-protos' files (when
installed) and hand-written proto2/proto3 files using every feature the printer writes.
Printing the re-compiled descriptor again gives the same text (a fixpoint), with and without
``normalize``.

Compared descriptors ignore what protoc's Python output already drops or fills: the file
name, source info, ``json_name`` equal to protoc's default, and an options message left empty
because all its options were source-retention ones (stripped by protoc).
"""

from __future__ import annotations

import functools
import glob
import os
import re

import pytest
from google.protobuf import descriptor_pb2

from kafkette.broker.schema_registry.formats import protobuf, protobuf_text

FDP = descriptor_pb2.FileDescriptorProto

COMMON = """\
syntax = "proto3";
package acme.common;

option java_package = "com.acme.common";

message Address {
  string street = 1;
  message Geo {
    double lat = 1;
    double lng = 2;
  }
  Geo geo = 2;
}
enum Country {
  COUNTRY_UNSPECIFIED = 0;
  NL = 1;
}
"""

OPTIONS = """\
syntax = "proto2";
package acme.opts;

import "google/protobuf/descriptor.proto";

message Ann {
  optional string a = 1;
  optional int32 b = 2;
  repeated string c = 3;
  optional Nested n = 4;
  message Nested {
    optional bool on = 1;
  }
}
extend google.protobuf.FileOptions {
  optional bool file_flag = 50001;
  optional Ann file_ann = 50002;
}
extend google.protobuf.MessageOptions {
  optional string msg_tag = 50001;
}
extend google.protobuf.FieldOptions {
  optional Ann field_ann = 50001;
  repeated int32 field_nums = 50002;
  optional double field_ratio = 50003;
  optional bytes field_raw = 50004;
  optional google.protobuf.FieldDescriptorProto.Type field_kind = 50005;
}
extend google.protobuf.EnumOptions {
  optional int64 enum_id = 50001;
}
extend google.protobuf.EnumValueOptions {
  optional string alias = 50001;
}
extend google.protobuf.ServiceOptions {
  optional string owner = 50001;
}
extend google.protobuf.MethodOptions {
  optional uint32 timeout_ms = 50001;
}
extend google.protobuf.OneofOptions {
  optional bool exclusive = 50001;
}
extend google.protobuf.ExtensionRangeOptions {
  optional string range_note = 50001;
}
"""

PROTO3 = """\
syntax = "proto3";
package acme.shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import public "acme/common.proto";
import "acme/opts.proto";

option java_package = "com.acme.shop.v1";
option java_multiple_files = true;
option java_outer_classname = "ShopProto";
option go_package = "example.com/acme/shop/v1;shopv1";
option csharp_namespace = "Acme.Shop.V1";
option objc_class_prefix = "ASH";
option optimize_for = CODE_SIZE;
option (acme.opts.file_flag) = true;
option (acme.opts.file_ann) = { a: "x\\n\\"y\\"" b: -3 c: "1" c: "2" n { on: true } };

message Order {
  option deprecated = true;
  option (acme.opts.msg_tag) = "orders";
  reserved 4, 9 to 11, 100 to max;
  reserved "legacy", "old_total";

  string id = 1 [json_name = "orderId", (acme.opts.field_ann) = { a: "id" }];
  optional int64 version = 2;
  repeated int32 quantities = 3 [packed = false, deprecated = true];
  repeated sint64 deltas = 5;
  map<string, Line> lines = 6;
  message Line {
    string sku = 1;
    uint32 count = 2 [(acme.opts.field_nums) = 1, (acme.opts.field_nums) = 2];
    fixed64 price_micros = 3 [(acme.opts.field_ratio) = 0.25];
    bytes blob = 4 [(acme.opts.field_raw) = "\\001\\377"];
  }
  map<int32, acme.common.Address> addresses = 7;
  message Between {
    float f = 1 [(acme.opts.field_kind) = TYPE_GROUP];
  }
  oneof payment {
    option (acme.opts.exclusive) = true;
    string card = 8;
    Cash cash = 12;
  }
  message Cash {
    sfixed32 cents = 1;
  }
  google.protobuf.Timestamp placed_at = 13;
  google.protobuf.StringValue note = 14;
  acme.common.Address.Geo where = 15;
  acme.common.Country country = 16;
  Status status = 17;
  enum Status {
    option allow_alias = true;
    option (acme.opts.enum_id) = -7;
    reserved 9, 20 to 30, 40 to max;
    reserved "GONE";
    STATUS_UNSPECIFIED = 0;
    OPEN = 1 [(acme.opts.alias) = "o"];
    STARTED = 1 [deprecated = true];
    CLOSED = -2;
  }
  optional string comment = 18;
  sfixed64 big = 19;
  double ratio = 20;
  bool flag = 21;
  map<string, Status> by_name = 22;
}
enum Priority {
  PRIORITY_UNSPECIFIED = 0;
  HIGH = 1;
}
service Orders {
  option deprecated = true;
  option (acme.opts.owner) = "team-a";
  rpc Get (Order) returns (Order);
  rpc Watch (Order) returns (stream Order) {
    option (acme.opts.timeout_ms) = 500;
  }
  rpc Upload (stream Order.Line) returns (Order) {
    option idempotency_level = IDEMPOTENT;
  }
  rpc Chat (stream Order) returns (stream Order);
}
"""

PROTO2 = """\
package acme.legacy;

import weak "acme/opts.proto";

option java_package = "com.acme.legacy";

message Record {
  required string id = 1;
  optional int32 count = 2 [default = -5];
  optional string name = 3 [default = "a\\"b\\\\c\\n\\u00e9"];
  optional bytes raw = 4 [default = "\\000\\001\\377x"];
  optional double d = 5 [default = inf];
  optional float f = 6 [default = -inf];
  optional double n = 7 [default = nan];
  optional float g = 8 [default = 1.5e+20];
  optional bool b = 9 [default = true];
  optional Kind kind = 10 [default = SECOND];
  repeated int32 packed_ints = 11 [packed = true];
  optional uint64 big = 12 [default = 18446744073709551615];
  optional int64 small = 13 [default = -9223372036854775808];
  optional string ctype = 14 [ctype = CORD];
  optional int64 js = 15 [jstype = JS_STRING];
  optional group Result = 16 {
    optional string url = 1;
    repeated string snippets = 2;
  }
  oneof choice {
    int32 one = 17;
    group Inline = 18 {
      optional int32 x = 1;
    }
  }
  extensions 100 to 199;
  extensions 500, 600 to max;
  extend Record {
    optional string nested_ext = 150;
  }
  enum Kind {
    FIRST = 1;
    SECOND = 2;
  }
  message Deep {
    message Deeper {
      optional Record back = 1;
      optional Kind kind = 2;
      optional Deeper self = 3;
    }
  }
}
extend Record {
  optional int32 top_ext = 100;
  repeated Record.Kind kinds = 101;
}
extend Record {
  optional Record.Deep.Deeper deeper_ext = 102;
}
message WithRanges {
  extensions 10 to 20 [(acme.opts.range_note) = "ten"];
  message MapsAndMessages {
    message A {
    }
    map<string, A> first = 1;
    message B {
    }
    map<string, B> second = 2;
    message C {
    }
    optional C c = 3;
  }
}
message Set {
  option message_set_wire_format = true;
  extensions 4 to max;
}
"""

# Names that resolve differently from different scopes: the printer must not shorten them
# into something protoc binds elsewhere.
SHADOWING = """\
syntax = "proto3";
package a.b;

message Foo {
  message b {
    message Foo {
      int32 x = 1;
    }
  }
  message Bar {
    message Foo {
      string y = 1;
    }
    a.b.Foo outer = 1;
    Foo inner = 2;
    b.Foo deep = 3;
  }
  Bar.Foo bar_foo = 1;
  string value = 2;
  map<string, Bar> key = 3;
}
message c {
  Foo foo = 1;
  Foo.b.Foo bfoo = 2;
}
"""

HAND_WRITTEN = {
    "acme/common.proto": COMMON,
    "acme/opts.proto": OPTIONS,
    "acme/shop.proto": PROTO3,
    "acme/legacy.proto": PROTO2,
    "a/shadowing.proto": SHADOWING,
}


def _stripped(fdp: FDP) -> FDP:
    """``fdp`` without what the gate ignores (see the module docstring)."""
    out = FDP.FromString(fdp.SerializeToString())
    out.ClearField("name")
    out.ClearField("source_code_info")
    if out.syntax == "proto2":
        out.ClearField("syntax")
    _strip_message(out)
    return out


def _strip_message(msg) -> None:
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        for item in value if fd.is_repeated else [value]:
            _strip_message(item)
        if fd.name == "options" and not fd.is_repeated and value.ByteSize() == 0:
            msg.ClearField("options")
    if isinstance(msg, descriptor_pb2.FieldDescriptorProto):
        if msg.HasField("json_name") and msg.json_name == protobuf_text.default_json_name(msg.name):
            msg.ClearField("json_name")


def _corpus() -> list[tuple[str, str, dict[str, str]]]:
    """(id, text, dependency texts by import path) for every file of the gate."""
    import grpc_tools

    out = []
    hand_deps = {
        k: v for k, v in HAND_WRITTEN.items() if k in ("acme/common.proto", "acme/opts.proto")
    }
    for name, text in HAND_WRITTEN.items():
        deps = {k: v for k, v in hand_deps.items() if k != name}
        out.append((name, text, deps))
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    for path in sorted(glob.glob(f"{wkt}/google/protobuf/*.proto")):
        text = _read(path)
        if not _is_editions(text):
            out.append((os.path.relpath(path, wkt), text, {}))
    gapi = _googleapis_root()
    if gapi is not None:
        for path in sorted(glob.glob(f"{gapi}/google/**/*.proto", recursive=True)):
            if "/google/protobuf/" in path:
                continue
            text = _read(path)
            if not _is_editions(text):
                out.append((os.path.relpath(path, gapi), text, _imports_of(gapi, text, {})))
    return out


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _is_editions(text: str) -> bool:
    return re.search(r"^edition\s*=", text, re.M) is not None


def _googleapis_root() -> str | None:
    try:
        import google.type
    except ImportError:
        return None
    for path in google.type.__path__:
        if os.path.exists(os.path.join(path, "money.proto")):
            return os.path.dirname(os.path.dirname(path))
    return None


def _imports_of(root: str, text: str, acc: dict[str, str]) -> dict[str, str]:
    """The googleapis files ``text`` imports, transitively (built-in ones excluded)."""
    for name in re.findall(r'^import\s+(?:public\s+|weak\s+)?"([^"]+)"', text, re.M):
        if name.startswith(("google/protobuf/", "google/type/")) or name in acc:
            continue
        acc[name] = _read(os.path.join(root, name))
        _imports_of(root, acc[name], acc)
    return acc


CORPUS = _corpus()


def _compile_all(texts: dict[str, str]) -> dict[str, FDP]:
    """Every file of ``texts`` (import path -> text) compiled in one protoc run, through a
    stub importing them all (shared imports are parsed once: the gate stays fast)."""
    stub = 'syntax = "proto3";\n' + "".join(f'import "{name}";\n' for name in texts)
    _stub, files = protobuf._compile(stub, texts)
    return files


def _closure(name: str, files: dict[str, FDP], acc: dict[str, FDP] | None = None) -> dict:
    acc = {} if acc is None else acc
    for dep in files[name].dependency:
        if dep not in acc:
            acc[dep] = files[dep]
            _closure(dep, files, acc)
    return acc


@pytest.fixture(scope="module")
def originals() -> dict[str, FDP]:
    texts = {}
    for name, text, deps in CORPUS:
        texts[name] = text
        texts.update(deps)
    return _compile_all(texts)


@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_round_trip_over_the_corpus(originals: dict[str, FDP], normalize: bool) -> None:
    names = sorted(originals)
    printed = {
        n: protobuf_text.to_text(originals[n], _closure(n, originals), normalize=normalize)
        for n in names
    }
    again = _compile_all(printed)
    changed = [n for n in names if _stripped(again[n]) != _stripped(originals[n])]
    if not normalize:
        assert changed == []
    unstable = [
        n
        for n in names
        if protobuf_text.to_text(again[n], _closure(n, again), normalize=normalize) != printed[n]
    ]
    assert unstable == []
    assert len(names) >= len(HAND_WRITTEN) + 10
    assert {e[0] for e in CORPUS} <= set(names)


@functools.cache
def _printed(name: str, *, normalize: bool = False) -> str:
    entry = next(e for e in CORPUS if e[0] == name)
    fdp, files = protobuf._compile(entry[1], entry[2])
    return protobuf_text.to_text(fdp, files, normalize=normalize)


@pytest.mark.parametrize(
    "line",
    [
        'syntax = "proto3";\npackage acme.shop.v1;\n',
        'import public "acme/common.proto";\n',
        "option java_multiple_files = true;\n",
        "option optimize_for = CODE_SIZE;\n",
        "option (opts.file_flag) = true;\n",
        "  reserved 4, 9 to 11, 100 to max;\n",
        '  reserved "legacy", "old_total";\n',
        '  string id = 1 [json_name = "orderId", (opts.field_ann) = { a: "id" }];\n',
        "  optional int64 version = 2;\n",
        "  repeated int32 quantities = 3 [packed = false, deprecated = true];\n",
        "  map<string, Line> lines = 6;\n",
        "  map<int32, common.Address> addresses = 7;\n",
        "  oneof payment {\n    option (opts.exclusive) = true;\n    string card = 8;\n",
        "  google.protobuf.Timestamp placed_at = 13;\n",
        "    option allow_alias = true;\n",
        '    OPEN = 1 [(opts.alias) = "o"];\n',
        "    CLOSED = -2;\n",
        "  rpc Watch (Order) returns (stream Order) {\n    option (opts.timeout_ms) = 500;\n",
        "  rpc Chat (stream Order) returns (stream Order);\n",
    ],
)
def test_proto3_printing(line: str) -> None:
    assert line in _printed("acme/shop.proto")


@pytest.mark.parametrize(
    "line",
    [
        'syntax = "proto2";\n',
        'import weak "acme/opts.proto";\n',
        "  required string id = 1;\n",
        '  optional string name = 3 [default = "a\\"b\\\\c\\n\u00e9"];\n',
        '  optional bytes raw = 4 [default = "\\000\\001\\377x"];\n',
        "  optional double d = 5 [default = inf];\n",
        "  optional double n = 7 [default = nan];\n",
        "  optional Kind kind = 10 [default = SECOND];\n",
        "  optional group Result = 16 {\n    optional string url = 1;\n",
        "    group Inline = 18 {\n",
        "  extensions 100 to 199;\n",
        "  extensions 600 to max;\n",
        "extend Record {\n  optional int32 top_ext = 100;\n  repeated Record.Kind kinds = 101;\n",
        '  extensions 10 to 20 [(opts.range_note) = "ten"];\n',
        "    option message_set_wire_format = true;\n"[2:],
    ],
)
def test_proto2_printing(line: str) -> None:
    assert line in _printed("acme/legacy.proto")


def test_shadowed_names_are_qualified_enough() -> None:
    text = _printed("a/shadowing.proto")
    # inside Foo.Bar, "Foo" is Bar's own nested Foo: the outer one needs more
    assert "    Foo outer = 1;" not in text
    assert "    Foo inner = 2;\n" in text
    assert "  Bar.Foo bar_foo = 1;\n" in text


def test_normalized_text_sorts_and_qualifies() -> None:
    text = _printed("acme/shop.proto", normalize=True)
    assert "  .google.protobuf.Timestamp placed_at = 13;\n" in text
    # options sorted by name, fields by number, the oneof after the other fields
    assert "option csharp_namespace" in text
    assert text.index("option csharp_namespace") < text.index("option java_package")
    assert text.index("bool flag = 21;") < text.index("oneof payment {")


def test_editions_are_refused() -> None:
    fdp = FDP(name="e.proto", syntax="editions", edition=descriptor_pb2.EDITION_2023)
    with pytest.raises(protobuf_text.UnsupportedDescriptor, match="editions"):
        protobuf_text.to_text(fdp)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("first_name", "firstName"), ("a__b", "aB"), ("x", "x"), ("_lead", "Lead"), ("t_", "t")],
)
def test_default_json_name(name: str, expected: str) -> None:
    assert protobuf_text.default_json_name(name) == expected
