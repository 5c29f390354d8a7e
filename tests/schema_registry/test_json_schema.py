"""The JSON format: Confluent's JSON Schema diff (which changes a new schema may make), its
7.0 message form, the levels over it, the stored text, invalid schemas and ``$ref``s to other
subjects' schemas through references."""

from __future__ import annotations

import json

import pytest

from kafkette.broker.schema_registry import formats
from kafkette.broker.schema_registry.formats import Dependency, Reference, SchemaFormatError
from kafkette.broker.schema_registry.formats.levels import check_level


def parse(schema: object, references=(), dependencies=None, normalize=False):
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return formats.parse("JSON", text, references, dependencies, normalize=normalize)


def obj(closed: bool = False, required: tuple[str, ...] = (), **properties: object) -> dict:
    out: dict = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


STR = {"type": "string"}
INT = {"type": "integer"}

# (name, old, new, the incompatible differences of new reading old's data, as "TYPE path")
BACKWARD = [
    (
        "optional property added to an open model",
        obj(a=STR),
        obj(a=STR, b=INT),
        ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
    ),
    ("property removed from an open model", obj(a=STR, b=INT), obj(a=STR), []),
    ("property with an empty schema added to an open model", obj(a=STR), obj(a=STR, b={}), []),
    ("optional property added to a closed model", obj(True, a=STR), obj(True, a=STR, b=INT), []),
    (
        "required property added to a closed model",
        obj(True, a=STR),
        obj(True, ("b",), a=STR, b=INT),
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
    ),
    (
        "required property with default added to a closed model",
        obj(True, a=STR),
        obj(True, ("b",), a=STR, b={**INT, "default": 0}),
        [],
    ),
    (
        "property removed from a closed model",
        obj(True, a=STR, b=INT),
        obj(True, a=STR),
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"],
    ),
    (
        "property made required",
        obj(a=STR),
        obj(False, ("a",), a=STR),
        ["REQUIRED_ATTRIBUTE_ADDED #/required/a"],
    ),
    (
        "property made required with a default",
        obj(a=STR),
        obj(False, ("a",), a={**STR, "default": ""}),
        [],
    ),
    ("property no longer required", obj(False, ("a",), a=STR), obj(a=STR), []),
    (
        "open model closed",
        obj(a=STR),
        obj(True, a=STR),
        ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"],
    ),
    ("closed model opened", obj(True, a=STR), obj(a=STR), []),
    ("type changed", obj(a=STR), obj(a=INT), ["TYPE_CHANGED #/properties/a"]),
    ("integer widened to number", obj(a=INT), obj(a={"type": "number"}), []),
    (
        "number narrowed to integer",
        obj(a={"type": "number"}),
        obj(a=INT),
        ["TYPE_NARROWED #/properties/a"],
    ),
    ("type made nullable", obj(a=STR), obj(a={"type": ["string", "null"]}), []),
    (
        "nullable type made required",
        obj(a={"type": ["string", "null"]}),
        obj(a=STR),
        ["TYPE_CHANGED #/properties/a"],
    ),
    (
        "oneOf branch added",
        obj(a={"oneOf": [STR, INT]}),
        obj(a={"oneOf": [STR, INT, {"type": "null"}]}),
        [],
    ),
    (
        "anyOf branch removed",
        obj(a={"anyOf": [STR, INT]}),
        obj(a={"anyOf": [STR]}),
        ["SUM_TYPE_NARROWED #/properties/a"],
    ),
    (
        "allOf branch added",
        {"allOf": [obj(a=STR)]},
        {"allOf": [obj(a=STR), {"required": ["a"]}]},
        ["PRODUCT_TYPE_EXTENDED #/"],
    ),
    ("enum extended", {"enum": ["A", "B"]}, {"enum": ["A", "B", "C"]}, []),
    ("enum narrowed", {"enum": ["A", "B"]}, {"enum": ["A"]}, ["ENUM_ARRAY_NARROWED #/enum"]),
    ("enum changed", {"enum": ["A", "B"]}, {"enum": ["A", "C"]}, ["ENUM_ARRAY_CHANGED #/enum"]),
    # A typed enum is two facets (an allOf of enum and string): the narrowed enum leaves one
    # pair unmatched.
    (
        "typed enum narrowed",
        {**STR, "enum": ["A", "B"]},
        {**STR, "enum": ["A"]},
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"],
    ),
    ("typed enum extended", {**STR, "enum": ["A"]}, {**STR, "enum": ["A", "B"]}, []),
    (
        "maxLength decreased",
        {**STR, "maxLength": 10},
        {**STR, "maxLength": 5},
        ["MAX_LENGTH_DECREASED #/maxLength"],
    ),
    ("maxLength increased", {**STR, "maxLength": 5}, {**STR, "maxLength": 10}, []),
    ("minLength added", STR, {**STR, "minLength": 1}, ["MIN_LENGTH_ADDED #/minLength"]),
    ("pattern removed", {**STR, "pattern": "^a"}, STR, []),
    (
        "pattern changed",
        {**STR, "pattern": "^a"},
        {**STR, "pattern": "^b"},
        ["PATTERN_CHANGED #/pattern"],
    ),
    ("minimum added", INT, {**INT, "minimum": 0}, ["MINIMUM_ADDED #/minimum"]),
    ("maximum increased", {**INT, "maximum": 5}, {**INT, "maximum": 7.5}, []),
    (
        "exclusiveMinimum increased",
        {**INT, "exclusiveMinimum": 0},
        {**INT, "exclusiveMinimum": 1},
        ["EXCLUSIVE_MINIMUM_INCREASED #/exclusiveMinimum"],
    ),
    ("multipleOf reduced", {**INT, "multipleOf": 4}, {**INT, "multipleOf": 2}, []),
    (
        "multipleOf expanded",
        {**INT, "multipleOf": 2},
        {**INT, "multipleOf": 4},
        ["MULTIPLE_OF_EXPANDED #/multipleOf"],
    ),
    (
        "array items changed",
        {"type": "array", "items": STR},
        {"type": "array", "items": INT},
        ["TYPE_CHANGED #/items"],
    ),
    (
        "array maxItems added",
        {"type": "array"},
        {"type": "array", "maxItems": 3},
        ["MAX_ITEMS_ADDED #/maxItems"],
    ),
    (
        "uniqueItems added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        ["UNIQUE_ITEMS_ADDED #/uniqueItems"],
    ),
    (
        "tuple item added to an open array",
        {"type": "array", "items": [STR]},
        {"type": "array", "items": [STR, INT]},
        ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"],
    ),
    (
        "property covered by patternProperties added",
        {"type": "object", "patternProperties": {"^x": STR}},
        {"type": "object", "patternProperties": {"^x": STR}, "properties": {"x1": STR}},
        [],
    ),
    (
        "property not covered by additionalProperties added",
        {"type": "object", "additionalProperties": STR},
        {"type": "object", "additionalProperties": STR, "properties": {"n": INT}},
        [
            "TYPE_CHANGED #/properties/n",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/n",
        ],
    ),
    (
        "nested property added",
        obj(a=obj(x=STR)),
        obj(a=obj(x=STR, y=STR)),
        ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/a/properties/y"],
    ),
    ("not narrowed", {"not": {"type": ["string", "null"]}}, {"not": STR}, []),
    (
        "not extended",
        {"not": STR},
        {"not": {"type": ["string", "null"]}},
        ["NOT_TYPE_EXTENDED #/not"],
    ),
    (
        "description, title and default changed",
        {**STR, "title": "a"},
        {**STR, "title": "b", "description": "d", "default": "x"},
        [],
    ),
    ("anything to false", obj(a=STR), obj(a=False), ["TYPE_CHANGED #/properties/a"]),
    ("anything to an empty schema", obj(a=STR), obj(a={}), []),
    ("false to anything", obj(a=False), obj(a=STR), []),
]


@pytest.mark.parametrize(("name", "old", "new", "expected"), BACKWARD)
def test_backward_differences(name, old, new, expected):
    messages = formats.check(parse(new), parse(old))
    prefix = "Found incompatible change: Difference{jsonPath='"
    found = []
    for message in messages:
        assert message.startswith(prefix), message
        path, _, kind = message[len(prefix) : -1].partition("', type=")
        found.append(f"{kind} {path}")
    assert found == expected, name


def test_message_form_is_confluent_7():
    assert formats.check(parse(obj(a=STR, b=INT)), parse(obj(a=STR))) == [
        "Found incompatible change: Difference{jsonPath='#/properties/b', "
        "type=PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL}"
    ]


LEVELS = ("NONE", "BACKWARD", "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE")


@pytest.mark.parametrize(
    ("old", "new", "passing"),
    [
        # The surprise of STRICT: with an open model only removing a property is backward.
        (obj(a=STR), obj(a=STR, b=INT), {"NONE", "FORWARD", "FORWARD_TRANSITIVE"}),
        (obj(a=STR, b=INT), obj(a=STR), {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE"}),
        # Closed models behave as users expect.
        (obj(True, a=STR), obj(True, a=STR, b=INT), {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE"}),
        (obj(a=STR), {**obj(a=STR), "description": "x"}, set(LEVELS)),
    ],
)
def test_levels(old, new, passing):
    old_parsed, new_parsed = parse(old), parse(new)
    for level in LEVELS:
        ok = check_level(level, new_parsed, [(1, old_parsed)]) == []
        assert ok is (level in passing), level


def test_recursive_schema_is_compared_once():
    def tree(value: dict) -> dict:
        node = obj(value=value, children={"type": "array", "items": {"$ref": "#/definitions/n"}})
        return {"definitions": {"n": node}, "$ref": "#/definitions/n"}

    assert formats.check(parse(tree(INT)), parse(tree(INT))) == []
    assert formats.check(parse(tree({"type": "number"})), parse(tree(INT))) == []
    [message] = formats.check(parse(tree(INT)), parse(tree({"type": "number"})))
    assert "jsonPath='#/properties/value', type=TYPE_NARROWED" in message


ADDRESS = obj(street=STR)
ADDRESS_V2 = obj(street=STR, zip=STR)
ORDER = obj(ship_to={"$ref": "address.json"}, id=INT)


def _order(address: dict, version: int, base_id: str | None = None):
    schema = dict(ORDER, **({"$id": base_id} if base_id else {}))
    refs = [Reference("address.json", "address-value", version)]
    deps = {"address.json": Dependency("address.json", "JSON", json.dumps(address))}
    return parse(schema, refs, deps)


def test_refs_resolve_through_references():
    old, new = _order(ADDRESS, 1), _order(ADDRESS_V2, 2)
    assert old.references == (Reference("address.json", "address-value", 1),)
    assert formats.check(new, old) == [
        "Found incompatible change: Difference{jsonPath='#/properties/ship_to/properties/zip', "
        "type=PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL}"
    ]
    assert formats.check(old, new) == []


def test_refs_resolve_against_the_root_id():
    parsed = _order(ADDRESS, 1, base_id="https://example.com/schemas/order.json")
    assert formats.check(parsed, parsed) == []


def test_local_refs_and_definitions():
    schema = {
        "definitions": {"a": STR},
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/a"}},
    }
    changed = {
        "definitions": {"a": INT},
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/a"}},
    }
    [message] = formats.check(parse(changed), parse(schema))
    assert "jsonPath='#/properties/x', type=TYPE_CHANGED" in message


INVALID = [
    ('{"type":"strin"}', "'strin' is not valid under any of the given schemas at #/type"),
    ('{"type":"object",', "Invalid JSON: Expecting property name enclosed in double quotes"),
    ("[1, 2]", "a JSON schema must be a JSON object"),
    ('{"minLength":-1}', "-1 is less than the minimum of 0 at #/minLength"),
    ('{"pattern":"["}', "'[' is not a 'regex' at #/pattern"),
    (
        '{"properties":{"a":{"$ref":"#/definitions/missing"}}}',
        "$ref #/definitions/missing cannot be resolved",
    ),
    ('{"$ref":"other.json"}', "$ref other.json cannot be resolved"),
    (
        '{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":[]}',
        "[] should be non-empty at #/required",
    ),
]


@pytest.mark.parametrize(("text", "reason"), INVALID)
def test_invalid_schemas_say_why(text, reason):
    with pytest.raises(SchemaFormatError) as caught:
        parse(text)
    head = f"Invalid schema {text} with refs [] of type JSON, details: "
    assert str(caught.value).startswith(head + reason)


def test_missing_reference_is_invalid():
    refs = [Reference("address.json", "address-value", 1)]
    with pytest.raises(SchemaFormatError) as caught:
        parse(ORDER, refs, {})
    assert str(caught.value).endswith(
        "with refs [{name='address.json', subject='address-value', version=1}] of type JSON,"
        " details: Reference address.json was not found"
    )


def test_canonical_text_is_jacksons():
    text = (
        '{\n  "type": "object",\n  "properties": {"n": {"type": "number", "maximum": 1.50,'
        ' "minimum": 1e2}},\n  "title": "é\\u001f"\n}'
    )
    parsed = parse(text)
    assert parsed.canonical == (
        '{"type":"object","properties":{"n":{"type":"number","maximum":1.50,"minimum":1E+2}},'
        '"title":"é\\u001F"}'
    )
    assert formats.render(parsed, "serialized") == parsed.canonical
    assert parse(text, normalize=True).canonical == (
        '{"properties":{"n":{"maximum":1.50,"minimum":1E+2,"type":"number"}},"title":"é\\u001F",'
        '"type":"object"}'
    )


def test_normalize_makes_key_order_irrelevant():
    first = parse('{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}')
    second = parse('{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}')
    assert first.canonical != second.canonical
    first_n = parse(first.canonical, normalize=True)
    second_n = parse(second.canonical, normalize=True)
    assert first_n.canonical == second_n.canonical


def test_draft_2020_schemas_with_defs_work():
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Item": obj(name=STR)},
        "type": "object",
        "properties": {"item": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]}},
    }
    parsed = parse(schema)
    assert formats.check(parsed, parsed) == []
