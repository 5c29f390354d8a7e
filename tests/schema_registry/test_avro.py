"""The AVRO format: Java Avro's compatibility outcomes at each of Confluent's levels, the text
Confluent stores (Java's ``Schema.toString()``), normalized text, default validation, 42201
texts and references. Expected texts were produced with Java Avro 1.11.3 and Confluent
7.0.16's ``AvroSchema`` (kafka-schema-registry-client) on the same inputs."""

from __future__ import annotations

import json

import avro.compatibility
import pytest

from kafkette.broker.schema_registry import formats
from kafkette.broker.schema_registry.formats import Dependency, Reference, SchemaFormatError
from kafkette.broker.schema_registry.formats.levels import DIFFERENT_TYPE, check_level

LEVELS = (
    "NONE",
    "BACKWARD",
    "FORWARD",
    "FULL",
    "BACKWARD_TRANSITIVE",
    "FORWARD_TRANSITIVE",
    "FULL_TRANSITIVE",
)


def parse(schema: object, references=(), dependencies=None, normalize=False):
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return formats.parse("AVRO", text, references, dependencies, normalize=normalize)


def record(*fields: dict, name: str = "R", **extra: object) -> dict:
    return {"type": "record", "name": name, **extra, "fields": list(fields)}


def enum(*symbols: str, **extra: object) -> dict:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


INT_A = {"name": "a", "type": "int"}
# (name, old, new, new reads old (BACKWARD), old reads new (FORWARD))
OUTCOMES = [
    (
        "field added with default",
        record(INT_A),
        record(INT_A, {"name": "b", "type": "string", "default": ""}),
        True,
        True,
    ),
    (
        "field added without default",
        record(INT_A),
        record(INT_A, {"name": "b", "type": "string"}),
        False,
        True,
    ),
    ("field removed", record(INT_A, {"name": "b", "type": "string"}), record(INT_A), True, False),
    (
        "field with default removed",
        record(INT_A, {"name": "b", "type": "int", "default": 0}),
        record(INT_A),
        True,
        True,
    ),
    ("int to long", record(INT_A), record({"name": "a", "type": "long"}), True, False),
    ("long to int", record({"name": "a", "type": "long"}), record(INT_A), False, True),
    (
        "float to double",
        record({"name": "a", "type": "float"}),
        record({"name": "a", "type": "double"}),
        True,
        False,
    ),
    (
        "string to bytes",
        record({"name": "a", "type": "string"}),
        record({"name": "a", "type": "bytes"}),
        True,
        True,
    ),
    ("int to string", record(INT_A), record({"name": "a", "type": "string"}), False, False),
    (
        "enum symbol added",
        record({"name": "e", "type": enum("A")}),
        record({"name": "e", "type": enum("A", "B")}),
        True,
        False,
    ),
    (
        "enum symbol removed",
        record({"name": "e", "type": enum("A", "B")}),
        record({"name": "e", "type": enum("A")}),
        False,
        True,
    ),
    (
        "enum symbol removed, reader default",
        record({"name": "e", "type": enum("A", "B", default="A")}),
        record({"name": "e", "type": enum("A", default="A")}),
        True,
        True,
    ),
    (
        "renamed with alias",
        record(INT_A, name="n.Old"),
        record(INT_A, name="n.New", aliases=["n.Old"]),
        True,
        False,
    ),
    (
        "renamed without alias",
        record(INT_A, name="n.Old"),
        record(INT_A, name="n.New"),
        False,
        False,
    ),
    ("namespace changed", record(INT_A, name="a.R"), record(INT_A, name="b.R"), True, True),
    (
        "field renamed with alias",
        record(INT_A),
        record({"name": "b", "type": "int", "aliases": ["a"]}),
        True,
        False,
    ),
    (
        "widened to a union",
        record(INT_A),
        record({"name": "a", "type": ["null", "int"]}),
        True,
        False,
    ),
    (
        "narrowed from a union",
        record({"name": "a", "type": ["null", "int"]}),
        record(INT_A),
        False,
        True,
    ),
    (
        "union branch added",
        record({"name": "a", "type": ["null", "int"]}),
        record({"name": "a", "type": ["null", "int", "string"]}),
        True,
        False,
    ),
    (
        "fixed size changed",
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "F", "size": 8},
        False,
        False,
    ),
    ("record to map", record(INT_A), {"type": "map", "values": "int"}, False, False),
]


def _expected(level: str, backward: bool, forward: bool) -> bool:
    base = level.removesuffix("_TRANSITIVE")
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward}.get(base, backward and forward)


@pytest.mark.parametrize(("name", "old", "new", "backward", "forward"), OUTCOMES)
def test_outcomes_at_each_level(name, old, new, backward, forward):
    old_parsed, new_parsed = parse(old), parse(new)
    for level in LEVELS:
        messages = check_level(level, new_parsed, [(1, old_parsed)])
        assert (messages == []) is _expected(level, backward, forward), (name, level, messages)


@pytest.mark.parametrize(("name", "old", "new", "backward", "forward"), OUTCOMES)
def test_verdicts_agree_with_the_avro_library(name, old, new, backward, forward):
    checker = avro.compatibility.ReaderWriterCompatibilityChecker
    old_parsed, new_parsed = parse(old), parse(new)
    for reader, writer, ours in (
        (new_parsed, old_parsed, backward),
        (old_parsed, new_parsed, forward),
    ):
        result = checker().get_compatibility(reader.native.schema, writer.native.schema)
        library = result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible
        assert library is ours, name


def test_transitive_levels_check_every_version_newest_first():
    v1 = parse(record(INT_A))
    v2 = parse(record(INT_A, {"name": "b", "type": "int", "default": 0}))
    v3 = parse(record(INT_A, {"name": "b", "type": "int"}))  # b without default: v1 lacks b
    previous = [(1, v1), (2, v2)]
    assert check_level("BACKWARD", v3, previous) == []
    [message] = check_level("BACKWARD_TRANSITIVE", v3, previous)
    assert message.startswith("Incompatibility{type:READER_FIELD_MISSING_DEFAULT_VALUE,")
    assert check_level("FULL_TRANSITIVE", v3, previous) != []
    assert check_level("FORWARD_TRANSITIVE", v3, previous) == []


# Confluent 7.0.16's messages, as Java Avro's Incompatibility.toString() prints them.
MESSAGES = [
    (
        record({"name": "a", "type": "long"}, name="R", namespace="n"),
        record(INT_A, {"name": "b", "type": "string"}, name="R", namespace="n"),
        [
            "Incompatibility{type:TYPE_MISMATCH, location:/fields/0/type, message:reader type:"
            ' INT not compatible with writer type: LONG, reader:"int", writer:"long"}',
            "Incompatibility{type:READER_FIELD_MISSING_DEFAULT_VALUE, location:/fields/1, "
            'message:b, reader:{"type":"record","name":"R","namespace":"n","fields":[{"name":"a"'
            ',"type":"int"},{"name":"b","type":"string"}]}, writer:{"type":"record","name":"R",'
            '"namespace":"n","fields":[{"name":"a","type":"long"}]}}',
        ],
    ),
    (
        record({"name": "e", "type": enum("A", "C", "B")}),
        record({"name": "e", "type": enum("A")}),
        [
            "Incompatibility{type:MISSING_ENUM_SYMBOLS, location:/fields/0/type/symbols, "
            'message:[B, C], reader:{"type":"enum","name":"E","symbols":["A"]}, writer:'
            '{"type":"enum","name":"E","symbols":["A","C","B"]}}'
        ],
    ),
    (
        # A writer union's branches are checked from a fresh root, as Java does.
        record({"name": "a", "type": ["null", "int"]}),
        record(INT_A),
        [
            "Incompatibility{type:TYPE_MISMATCH, location:/, message:reader type: INT not "
            'compatible with writer type: NULL, reader:"int", writer:"null"}'
        ],
    ),
    (
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "G", "size": 8},
        [
            "Incompatibility{type:NAME_MISMATCH, location:/name, message:expected: F, reader:"
            '{"type":"fixed","name":"G","size":8}, writer:{"type":"fixed","name":"F","size":4}}',
            "Incompatibility{type:FIXED_SIZE_MISMATCH, location:/size, message:expected: 4, "
            'found: 8, reader:{"type":"fixed","name":"G","size":8}, writer:{"type":"fixed",'
            '"name":"F","size":4}}',
        ],
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), MESSAGES)
def test_backward_messages_in_confluent_7_form(old, new, expected):
    assert formats.check(parse(new), parse(old)) == expected


def test_recursive_record_is_checked_once():
    def linked(value_type: str) -> dict:
        return record(
            {"name": "next", "type": ["null", "L"]}, {"name": "v", "type": value_type}, name="L"
        )

    assert formats.check(parse(linked("long")), parse(linked("int"))) == []
    [message] = formats.check(parse(linked("int")), parse(linked("long")))
    assert "location:/fields/1/type" in message


# Input in some other key order -> Java's Schema.toString() (verified with Java Avro 1.11.3).
CANONICAL = [
    (
        '{"namespace": "com.example", "fields": [{"default": null, "type": ["null", "string"],'
        ' "name": "note", "doc": "free text"}, {"type": {"symbols": ["A", "B"], "type": "enum",'
        ' "name": "Kind"}, "name": "kind"}, {"name": "when", "type": {"logicalType":'
        ' "timestamp-millis", "type": "long"}}], "type": "record", "name": "Event",'
        ' "doc": "An event"}',
        '{"type":"record","name":"Event","namespace":"com.example","doc":"An event","fields":'
        '[{"name":"note","type":["null","string"],"doc":"free text","default":null},{"name":'
        '"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},{"name":"when","type"'
        ':{"type":"long","logicalType":"timestamp-millis"}}]}',
    ),
    (
        # Full names split into name + namespace; nested types in the same namespace name it
        # no more; references are relative; aliases relative to the type's namespace.
        '{"type":"record","name":"a.b.R","fields":[{"name":"x","type":{"type":"enum","name":"E",'
        '"symbols":["A","B"],"default":"A","doc":"d","aliases":["Old","c.d.Older"],"p":1}},'
        '{"name":"y","type":"E"},{"name":"z","type":{"type":"fixed","name":"c.F","size":4,'
        '"doc":"fd","logicalType":"decimal","precision":4}},{"name":"w","type":"c.F"}],'
        '"aliases":["a.b.Q","Z"]}',
        '{"type":"record","name":"R","namespace":"a.b","fields":[{"name":"x","type":{"type":'
        '"enum","name":"E","doc":"d","symbols":["A","B"],"default":"A","p":1,"aliases":["Old",'
        '"c.d.Older"]}},{"name":"y","type":"E"},{"name":"z","type":{"type":"fixed","name":"F",'
        '"namespace":"c","doc":"fd","size":4,"logicalType":"decimal","precision":4}},{"name":'
        '"w","type":"c.F"}],"aliases":["Q","Z"]}',
    ),
    (
        # A null namespace inside a namespaced record is written "namespace":"".
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":{"type":'
        '"record","name":"Inner","namespace":"","fields":[{"name":"b","type":"int"}]}},'
        '{"name":"c","type":"Inner"}]}',
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":{"type":'
        '"record","name":"Inner","namespace":"","fields":[{"name":"b","type":"int"}]}},'
        '{"name":"c","type":"Inner"}]}',
    ),
    (
        # Numbers as Java doubles; a text default of a double field becomes a number.
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1},'
        '{"name":"b","type":"float","default":"1.5"},{"name":"c","type":"double","default":1e10},'
        '{"name":"d","type":"double","default":0.00001},{"name":"f","type":{"type":"array",'
        '"items":"int","x":true},"default":[1,2],"order":"descending","aliases":["ff"],'
        '"q":{"z":1,"a":null}}]}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1},{"name":'
        '"b","type":"float","default":1.5},{"name":"c","type":"double","default":1.0E10},{"name"'
        ':"d","type":"double","default":1.0E-5},{"name":"f","type":{"type":"array","items":'
        '"int","x":true},"default":[1,2],"order":"descending","aliases":["ff"],"q":{"z":1,'
        '"a":null}}]}',
    ),
    ('"string"', '"string"'),
    ('{"type": "string"}', '"string"'),
    (
        '["null", {"type": "string", "avro.java.string": "String"}]',
        '["null",{"type":"string","avro.java.string":"String"}]',
    ),
    (
        '{"type":"error","name":"Err","fields":[{"name":"m","type":"string","default":"\\u001f"}]}',
        '{"type":"error","name":"Err","fields":[{"name":"m","type":"string","default":"\\u001F"}]}',
    ),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_text_is_javas(text, expected):
    parsed = parse(text)
    assert parsed.canonical == expected
    assert parse(parsed.canonical).canonical == expected  # a fixed point


def test_whitespace_and_key_order_dedupe():
    pretty = json.dumps(record(INT_A, namespace="x", doc="d"), indent=2)
    shuffled = (
        '{"fields":[{"type":"int","name":"a"}],"doc":"d","name":"R","type":"record",'
        '"namespace":"x"}'
    )
    assert parse(pretty) == parse(shuffled)


# normalize=true: Confluent's normalized form, re-parsed and printed (verified with 7.0.16).
NORMALIZED = [
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"long","logicalType":'
        '"timestamp-millis","connect.name":"x"},"zeta":1,"alpha":{"b":2,"a":1}}],"zz":true,'
        '"aa":false}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"long","logicalType":'
        '"timestamp-millis","connect.name":"x"},"alpha":{"a":1,"b":2},"zeta":1}],"aa":false,'
        '"zz":true}',
    ),
    (
        '{"type":"record","name":"R","namespace":"x","aliases":["y.Old","x.Old","Old2"],"fields":'
        '[{"name":"a","type":"int","aliases":["q","b"],"default":5}]}',
        '{"type":"record","name":"R","namespace":"x","fields":[{"name":"a","type":"int",'
        '"default":5,"aliases":["b","q"]}],"aliases":["Old","Old2","y.Old"]}',
    ),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1},{"name":'
        '"b","type":"float","default":0.1},{"name":"e","type":{"type":"bytes","logicalType":'
        '"decimal","precision":4,"connect.a":1}}],"doc":""}',
        '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1.0},'
        '{"name":"b","type":"float","default":0.1},{"name":"e","type":{"type":"bytes",'
        '"logicalType":"decimal","precision":4,"connect.a":1}}]}',
    ),
]


@pytest.mark.parametrize(("text", "expected"), NORMALIZED)
def test_normalized_text(text, expected):
    assert parse(text, normalize=True).canonical == expected


def test_normalize_sorts_and_dedupes_references():
    dep = Dependency(
        "Addr", "AVRO", json.dumps(record({"name": "s", "type": "string"}, name="Addr"))
    )
    other = Dependency("Zip", "AVRO", '{"type":"fixed","name":"Zip","size":5}')
    refs = [Reference("Zip", "zip", 1), Reference("Addr", "addr", 2), Reference("Zip", "zip", 1)]
    schema = record({"name": "a", "type": "Addr"}, {"name": "z", "type": "Zip"})
    parsed = parse(schema, refs, {"Addr": dep, "Zip": other}, normalize=True)
    assert parsed.references == (Reference("Addr", "addr", 2), Reference("Zip", "zip", 1))
    assert parse(schema, refs, {"Addr": dep, "Zip": other}).references == tuple(refs)


DEFAULTS = [
    ("int", 1, None),
    ("int", 2**31, 'Invalid default for field f: 2147483648 not a "int"'),
    ("int", "s", 'Invalid default for field f: "s" not a "int"'),
    ("long", 1.5, 'Invalid default for field f: 1.5 not a "long"'),
    ("long", True, 'Invalid default for field f: true not a "long"'),
    ("double", 1, None),
    ("double", "NaN", None),
    ("double", "x", 'For input string: "x"'),
    ("boolean", 0, 'Invalid default for field f: 0 not a "boolean"'),
    ("null", None, None),
    ("string", None, 'Invalid default for field f: null not a "string"'),
    (["null", "int"], None, None),
    (["null", "int"], 1, 'Invalid default for field f: 1 not a ["null","int"]'),
    ({"type": "array", "items": "int"}, [1, 2], None),
    (
        {"type": "array", "items": "int"},
        [1, "x"],
        'Invalid default for field f: [1,"x"] not a {"type":"array","items":"int"}',
    ),
    ({"type": "map", "values": "long"}, {"k": 1}, None),
    (record({"name": "x", "type": "int"}, name="S"), {"x": 1}, None),
    (
        record({"name": "x", "type": "int"}, name="S"),
        {"y": 1},
        'Invalid default for field f: {"y":1} not a {"type":"record","name":"S","fields":'
        '[{"name":"x","type":"int"}]}',
    ),
    (record({"name": "x", "type": "int", "default": 3}, name="S"), {}, None),
    (enum("A", "B"), "Z", None),  # Java checks an enum default is text, not that it is a symbol
    ({"type": "fixed", "name": "F", "size": 2}, "ab", None),
]


@pytest.mark.parametrize(("field_type", "default", "error"), DEFAULTS)
def test_field_defaults_are_validated_as_java_does(field_type, default, error):
    schema = record({"name": "f", "type": field_type, "default": default})
    if error is None:
        parse(schema)
        return
    with pytest.raises(SchemaFormatError) as caught:
        parse(schema)
    assert str(caught.value).endswith(f", details: {error}")


INVALID = [
    (
        '{"type":"record","name":"R","fields":[{"name":"a-b","type":"long"}]}',
        "Illegal character in: a-b",
    ),
    ('{"type":"record","name":"1R","fields":[]}', "Illegal initial character: 1R"),
    (
        '{"type":"enum","name":"E","symbols":["A","B"],"default":"C"}',
        "The Enum Default: C is not in the enum symbol set: [A, B]",
    ),
    ('{"type":"enum","name":"E","symbols":["A","A"]}', None),
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"strin"}]}', "strin"),
    ('["int","int"]', None),
    ('{"type":"record","name":"R"', "Invalid JSON: "),
    ('{"type":"error_union","declared_errors":[]}', "Type not supported: error_union"),
    ('{"type":"record","name":"R","aliases":"x","fields":[]}', "aliases not an array"),
    (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}',
        None,
    ),
]


@pytest.mark.parametrize(("text", "reason"), INVALID)
def test_invalid_schemas_say_why_in_the_42201_text(text, reason):
    with pytest.raises(SchemaFormatError) as caught:
        parse(text)
    head = f"Invalid schema {text} with refs [] of type AVRO, details: "
    assert str(caught.value).startswith(head)
    if reason is not None:
        assert reason in str(caught.value)[len(head) :]


def test_unicode_names_are_valid_as_in_java():
    assert parse('{"type":"record","name":"Ré","fields":[{"name":"ü","type":"int"}]}')


ADDRESS = record({"name": "street", "type": "string"}, name="Address", namespace="com.shop")
ADDRESS_V2 = record(
    {"name": "street", "type": "string"}, {"name": "zip", "type": "string"},
    name="Address", namespace="com.shop",
)  # fmt: skip
ORDER = record(
    {"name": "ship_to", "type": "com.shop.Address"},
    {"name": "bill_to", "type": ["null", "Address"], "default": None},
    name="Order", namespace="com.shop",
)  # fmt: skip


def _with_address(address: dict, version: int = 1):
    refs = [Reference("com.shop.Address", "address-value", version)]
    deps = {"com.shop.Address": Dependency("com.shop.Address", "AVRO", json.dumps(address))}
    return parse(ORDER, refs, deps)


def test_references_to_another_subjects_type_stay_names():
    parsed = _with_address(ADDRESS)
    assert parsed.canonical == (
        '{"type":"record","name":"Order","namespace":"com.shop","fields":[{"name":"ship_to",'
        '"type":"Address"},{"name":"bill_to","type":["null","Address"],"default":null}]}'
    )
    assert parsed.references == (Reference("com.shop.Address", "address-value", 1),)
    resolved = formats.render(parsed, "resolved")
    assert json.loads(resolved)["fields"][0]["type"]["fields"] == [
        {"name": "street", "type": "string"}
    ]
    assert json.loads(resolved)["fields"][1]["type"] == ["null", "Address"]
    assert formats.render(parsed, None) == parsed.canonical


def test_compatibility_looks_through_references():
    old, new = _with_address(ADDRESS, 1), _with_address(ADDRESS_V2, 2)
    # The second use of the type meets the memoized pair: Java reports the union branch too.
    first, second = check_level("BACKWARD", new, [(1, old)])
    assert first.startswith(
        "Incompatibility{type:READER_FIELD_MISSING_DEFAULT_VALUE, location:/fields/0/type/fields/1"
    )
    assert second.startswith("Incompatibility{type:MISSING_UNION_BRANCH, location:/fields/1/type/1")
    assert check_level("FORWARD", new, [(1, old)]) == []


def test_transitive_references_parse_first_and_a_missing_one_is_invalid():
    zip_code = {"type": "fixed", "name": "com.shop.Zip", "size": 5}
    address = record({"name": "zip", "type": "Zip"}, name="Address", namespace="com.shop")
    deps = {
        "com.shop.Address": Dependency(
            "com.shop.Address", "AVRO", json.dumps(address), (Reference("com.shop.Zip", "zip", 1),)
        ),
        "com.shop.Zip": Dependency("com.shop.Zip", "AVRO", json.dumps(zip_code)),
    }
    refs = [Reference("com.shop.Address", "address-value", 1)]
    schema = record(
        {"name": "a", "type": "com.shop.Address"}, {"name": "z", "type": "com.shop.Zip"}
    )
    assert parse(schema, refs, deps).canonical.endswith('"type":"com.shop.Zip"}]}')
    with pytest.raises(SchemaFormatError) as caught:
        parse(schema, refs, {"com.shop.Address": deps["com.shop.Address"]})
    assert str(caught.value).startswith(
        f"Invalid schema {json.dumps(schema)} with refs [{{name='com.shop.Address', "
        "subject='address-value', version=1}] of type AVRO, details: "
    )


def test_a_type_without_namespace_is_found_from_a_namespaced_record():
    deps = {
        "Addr": Dependency(
            "Addr", "AVRO", json.dumps(record({"name": "s", "type": "string"}, name="Addr"))
        )
    }
    schema = record({"name": "a", "type": "Addr"}, name="Order", namespace="com.y")
    assert '"type":"Addr"' in parse(schema, [Reference("Addr", "addr", 1)], deps).canonical


def test_full_reports_the_old_reader_half_first():
    old = parse(record(INT_A))
    new = parse(record({"name": "a", "type": "long"}, {"name": "b", "type": "string"}))
    first, second = check_level("FULL", new, [(1, old)])
    assert first.startswith("Incompatibility{type:TYPE_MISMATCH, location:/fields/0/type,")
    assert second.startswith("Incompatibility{type:READER_FIELD_MISSING_DEFAULT_VALUE,")


def test_a_different_schema_type_in_any_live_version_is_incompatible():
    other = formats.parse("JSON", '{"type":"object"}')
    old, new = parse(record(INT_A)), parse(record(INT_A))
    assert check_level("BACKWARD", new, [(1, other), (2, old)]) == [DIFFERENT_TYPE]
    assert check_level("NONE", new, [(1, other), (2, old)]) == []


# ---- hostile or odd input: a refusal (42201) or a bounded answer, never a crash ----------
def test_a_default_that_needs_itself_is_invalid_not_endless():
    """R's field a (of type R) defaults to {}: valid only if a's default is, forever."""
    text = '{"type":"record","name":"R","fields":[{"name":"a","type":"R","default":{}}]}'
    with pytest.raises(SchemaFormatError, match=r"details: Invalid default for field a: \{\}"):
        parse(text)


def test_nested_defaults_are_checked_once_per_field():
    """R0 has two fields of type R1 defaulting to {}, R1 two of R2, ...: expanding the
    defaults anew at each use would take 2^40 steps."""
    schema: object = record({"name": "v", "type": "int", "default": 0}, name="R40")
    for i in range(39, -1, -1):
        schema = record(
            {"name": "a", "type": schema, "default": {}},
            {"name": "b", "type": f"R{i + 1}", "default": {}},
            name=f"R{i}",
        )
    assert parse(schema).canonical.startswith('{"type":"record","name":"R0"')


def test_many_incompatibilities_are_bounded():
    """Each incompatibility prints the reader and the writer record whole: 300 of them would
    print the 300-field records 600 times. The first 100 are written out, the rest counted."""
    old = parse(record(*({"name": f"f{i}", "type": "int"} for i in range(300))))
    new = parse(record(*({"name": f"f{i}", "type": "string"} for i in range(300))))
    messages = check_level("BACKWARD", new, [(1, old)])
    assert len(messages) == 101
    assert messages[0].startswith("Incompatibility{type:TYPE_MISMATCH, location:/fields/0/type")
    assert messages[99].startswith("Incompatibility{type:TYPE_MISMATCH, location:/fields/99/")
    assert messages[100] == "... and 200 more incompatibilities"


def test_incompatibility_text_is_bounded():
    """With big records the bound is the text: messages stop after about 1 MiB (each of these
    prints both 300 KB records)."""
    doc, old_field = "d" * 300_000, {"name": "f", "type": "int"}
    old = parse(record(old_field, doc=doc))
    new = parse(record(old_field, *({"name": f"g{i}", "type": "int"} for i in range(5)), doc=doc))
    messages = check_level("BACKWARD", new, [(1, old)])
    assert len(messages) == 3
    assert messages[0].startswith("Incompatibility{type:READER_FIELD_MISSING_DEFAULT_VALUE")
    assert messages[2] == "... and 3 more incompatibilities"


HOSTILE = [
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":NaN}]}', "NaN"),
    ('{"type":"record","name":"R","fields":[{"name":"a","type":"float","default":-Infinity}]}',
     "-Infinity"),
    ('{"type":"record","name":"R","doc":"\\ud800","fields":[]}', "unpaired surrogate U+D800"),
    ('{"type":"record","name":"R","fields":[],"x":"\ud800"}', "unpaired surrogate U+D800"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reason"), HOSTILE)
def test_non_standard_json_is_refused(text, reason):
    """JSON that Jackson refuses (NaN, Infinity) or that no answer could encode (a lone
    surrogate): stored, it would break every later read of its subject."""
    with pytest.raises(SchemaFormatError) as caught:
        parse(text)
    message = str(caught.value)
    assert message.startswith("Invalid schema ") and reason in message
    message.encode("utf-8")  # the 42201 answer can carry it
