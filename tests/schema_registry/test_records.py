"""The ``_schemas`` records byte for byte as Confluent Schema Registry 7.0 writes them (research
§5.2: Jackson, fixed key field order, NON_EMPTY values), read back leniently the way its reader
reads them, and anything else (CONTEXT, unknown key types, garbage) skipped rather than fatal."""

from __future__ import annotations

import pytest

from kafkette.broker.schema_registry.formats import Reference
from kafkette.broker.schema_registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    NoopValue,
    SchemaKey,
    SchemaValue,
    decode,
    encode_key,
    encode_value,
)

REF = Reference("com.acme.Other", "other-value", 3)

# (key, value, key bytes, value bytes): what Confluent 7.0 writes for each record type.
GOLDEN = [
    pytest.param(
        SchemaKey("t-value", 1),
        SchemaValue("t-value", 1, 1, '"string"'),
        b'{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}',
        b'{"subject":"t-value","version":1,"id":1,"schema":"\\"string\\"","deleted":false}',
        id="schema-avro",
    ),
    pytest.param(
        SchemaKey("t-value", 2),
        SchemaValue("t-value", 2, 7, "{}", True, "JSON", (REF,)),
        b'{"keytype":"SCHEMA","subject":"t-value","version":2,"magic":1}',
        b'{"subject":"t-value","version":2,"id":7,"schemaType":"JSON","references":'
        b'[{"name":"com.acme.Other","subject":"other-value","version":3}],'
        b'"schema":"{}","deleted":true}',
        id="schema-json-refs-deleted",
    ),
    pytest.param(
        SchemaKey("p", 1),
        SchemaValue("p", 1, 2, 'syntax = "proto3";\n', schema_type="PROTOBUF"),
        b'{"keytype":"SCHEMA","subject":"p","version":1,"magic":1}',
        b'{"subject":"p","version":1,"id":2,"schemaType":"PROTOBUF",'
        b'"schema":"syntax = \\"proto3\\";\\n","deleted":false}',
        id="schema-protobuf",
    ),
    pytest.param(
        SchemaKey("t-value", 1),
        None,
        b'{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}',
        None,
        id="schema-tombstone",
    ),
    pytest.param(
        ConfigKey("t-value"),
        ConfigValue("t-value", "FULL"),
        b'{"keytype":"CONFIG","subject":"t-value","magic":0}',
        b'{"subject":"t-value","compatibilityLevel":"FULL"}',
        id="config-subject",
    ),
    pytest.param(
        ConfigKey(None),
        ConfigValue(None, "BACKWARD"),
        b'{"keytype":"CONFIG","magic":0}',
        b'{"compatibilityLevel":"BACKWARD"}',
        id="config-global",
    ),
    pytest.param(
        ConfigKey("t-value"),
        None,
        b'{"keytype":"CONFIG","subject":"t-value","magic":0}',
        None,
        id="config-deleted",
    ),
    pytest.param(
        ModeKey("t-value"),
        ModeValue("t-value", "IMPORT"),
        b'{"keytype":"MODE","subject":"t-value","magic":0}',
        b'{"subject":"t-value","mode":"IMPORT"}',
        id="mode-subject",
    ),
    pytest.param(
        ModeKey(None),
        ModeValue(None, "READONLY"),
        b'{"keytype":"MODE","magic":0}',
        b'{"mode":"READONLY"}',
        id="mode-global",
    ),
    pytest.param(
        DeleteSubjectKey("t-value"),
        DeleteSubjectValue("t-value", 3),
        b'{"keytype":"DELETE_SUBJECT","subject":"t-value","magic":0}',
        b'{"subject":"t-value","version":3}',
        id="delete-subject",
    ),
    pytest.param(
        ClearSubjectKey("t-value"),
        ClearSubjectValue("t-value"),
        b'{"keytype":"CLEAR_SUBJECT","subject":"t-value","magic":0}',
        b'{"subject":"t-value"}',
        id="clear-subject",
    ),
    pytest.param(
        ClearSubjectKey(None),
        ClearSubjectValue(None),
        b'{"keytype":"CLEAR_SUBJECT","magic":0}',
        b"{}",
        id="clear-all-subjects",
    ),
    pytest.param(NoopKey(), None, b'{"keytype":"NOOP","magic":0}', None, id="noop-confluent"),
    pytest.param(
        NoopKey(), NoopValue(12), b'{"keytype":"NOOP","magic":0}', b'{"maxId":12}', id="noop-max-id"
    ),
]


@pytest.mark.parametrize(("key", "value", "key_bytes", "value_bytes"), GOLDEN)
def test_golden_bytes_and_round_trip(key, value, key_bytes, value_bytes):
    assert encode_key(key) == key_bytes
    assert encode_value(value) == value_bytes
    assert decode(key_bytes, value_bytes) == (key, value)


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("é ü 中", '"é ü 中"'),  # raw UTF-8, as Jackson (no \\u for non-ASCII)
        ("a\x01\x1f\x7f", '"a\\u0001\\u001F\x7f"'),  # control chars: upper-case hex; DEL raw
        ('"\\/\b\f\n\r\t', '"\\"\\\\/\\b\\f\\n\\r\\t"'),
        ("\U0001f600", '"\\uD83D\\uDE00"'),  # beyond the BMP: an escaped surrogate pair
        ("\u2028", '"\u2028"'),
    ],
)
def test_string_escapes_are_jacksons(text, written):
    encoded = encode_value(SchemaValue("s", 1, 1, text))
    assert (
        encoded
        == ('{"subject":"s","version":1,"id":1,"schema":' + written + ',"deleted":false}').encode()
    )
    assert decode(encode_key(SchemaKey("s", 1)), encoded)[1].schema == text


SCHEMA_KEY = b'{"keytype":"SCHEMA","subject":"s","version":2,"magic":1}'


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        pytest.param(
            b'{"keytype":"CONFIG","subject":"s","magic":0}',
            b'{"compatibilityLevel":"FULL"}',
            (ConfigKey("s"), ConfigValue("s", "FULL")),
            id="config-legacy-value-without-subject",
        ),
        pytest.param(
            b'{"keytype":"MODE","subject":"s","magic":0}',
            b'{"mode":"READONLY"}',
            (ModeKey("s"), ModeValue("s", "READONLY")),
            id="mode-legacy-value-without-subject",
        ),
        pytest.param(
            b'{"magic":0,"subject":"s","keytype":"CONFIG","extra":[1]}',
            b'{"compatibilityLevel":"full","normalize":true,"alias":"x"}',
            (ConfigKey("s"), ConfigValue("s", "FULL")),
            id="config-unknown-fields-any-order",
        ),
        pytest.param(
            b'{"keytype":"CONFIG","subject":"s","magic":0}',
            b'{"subject":"s","normalize":true}',
            (ConfigKey("s"), None),
            id="config-newer-without-level-is-no-level",
        ),
        pytest.param(
            SCHEMA_KEY,
            b'{"subject":"s","version":2,"id":3,"schemaType":"AVRO","references":[],'
            b'"metadata":{"properties":{}},"ruleSet":null,"md5":"abc","ts":1,"offset":9,'
            b'"schema":"\\"int\\"","deleted":false}',
            (SchemaKey("s", 2), SchemaValue("s", 2, 3, '"int"')),
            id="schema-newer-registry-fields",
        ),
        pytest.param(
            b'{"keytype":"SCHEMA","subject":"s","version":2,"magic":0}',
            b'{"subject":"s","version":2,"id":3,"schema":"x","references":null}',
            (SchemaKey("s", 2, 0), SchemaValue("s", 2, 3, "x")),
            id="schema-magic-0-no-deleted-null-references",
        ),
        pytest.param(
            b'{"keytype":"SCHEMA","subject":"s","version":2}',
            b'{"id":3,"schema":"x","deleted":true}',
            (SchemaKey("s", 2), SchemaValue("s", 2, 3, "x", True)),
            id="schema-defaults-from-key",
        ),
        pytest.param(
            b'{"keytype":"NOOP","magic":0}',
            b"not json",
            (NoopKey(), None),
            id="noop-any-value-ignored",
        ),
        pytest.param(SCHEMA_KEY, None, (SchemaKey("s", 2), None), id="tombstone"),
    ],
)
def test_reader_leniency(key, value, expected):
    assert decode(key, value) == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param(
            b'{"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0}',
            b'{"tenant":"default","context":".ctx"}',
            id="context",
        ),
        pytest.param(b'{"keytype":"ASSOC","magic":0}', b"{}", id="unknown-keytype"),
        pytest.param(b'{"magic":0}', b"{}", id="no-keytype"),
        pytest.param(b"not json", b"{}", id="key-not-json"),
        pytest.param(b"\xff\xfe\x00", b"{}", id="key-not-utf8"),
        pytest.param(b"[1,2]", b"{}", id="key-not-object"),
        pytest.param(b'{"keytype":["SCHEMA"]}', b"{}", id="keytype-not-string"),
        pytest.param(
            b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":2}',
            b'{"id":1,"schema":"x"}',
            id="schema-magic-2",
        ),
        pytest.param(b'{"keytype":"SCHEMA","subject":"s","magic":1}', None, id="schema-no-version"),
        pytest.param(b'{"keytype":"SCHEMA","subject":"s","version":true}', None, id="version-bool"),
        pytest.param(SCHEMA_KEY, b"{", id="value-not-json"),
        pytest.param(SCHEMA_KEY, b'"x"', id="value-not-object"),
        pytest.param(SCHEMA_KEY, b'{"schema":"x"}', id="schema-no-id"),
        pytest.param(SCHEMA_KEY, b'{"id":"1","schema":"x"}', id="schema-id-string"),
        pytest.param(SCHEMA_KEY, b'{"id":1}', id="schema-no-text"),
        pytest.param(SCHEMA_KEY, b'{"id":1,"schema":"x","deleted":"yes"}', id="deleted-string"),
        pytest.param(SCHEMA_KEY, b'{"id":1,"schema":"x","references":[{"name":"a"}]}', id="ref"),
        pytest.param(
            b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"SOMETIMES"}', id="level"
        ),
        pytest.param(b'{"keytype":"MODE","magic":0}', b'{"mode":"FORWARD"}', id="mode-unknown"),
        pytest.param(
            b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
            b'{"subject":"s"}',
            id="delete-subject-no-version",
        ),
    ],
)
def test_unknown_and_garbage_records_are_skipped(key, value):
    assert decode(key, value) is None


def test_encode_refuses_what_is_not_a_record():
    with pytest.raises(TypeError):
        encode_key(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_value(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"[" * 100_000, None),
        (b'{"keytype":"CONFIG","subject":' + b"[" * 100_000, b"{}"),
        (b'{"keytype":"CONFIG","subject":"s","magic":0}', b'{"a":' * 100_000),
        (b'{"keytype":"NOOP","magic":0}', b"[" * 100_000),
    ],
    ids=["key", "key-field", "value", "noop-value"],
)
def test_records_nested_deeper_than_the_decoder_goes_are_garbage(key, value):
    # A record anyone can produce to _schemas: skipped, never an exception in the tail.
    decoded = decode(key, value)
    assert decoded is None or decoded == (NoopKey(), None)
