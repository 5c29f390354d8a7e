"""The JSON format: Confluent's JSON Schema diff (which changes a new schema may make), its
7.0 message form, the levels over it, the stored text, invalid schemas and ``$ref``s to other
subjects' schemas through references."""

from __future__ import annotations

import json

import pytest

from kafkette.broker.schema_registry import formats
from kafkette.broker.schema_registry.formats import (
    Dependency,
    Reference,
    SchemaFormatError,
    budget,
)
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


# ---- hostile or odd input: a refusal (42201), never a hang or another exception ----------
def _closed_by_pattern(pattern: str, **properties: object) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "patternProperties": {pattern: STR},
        "additionalProperties": False,
    }


def test_pattern_properties_match_with_re2():
    """A removed property is judged by the pattern that covers it. Patterns run on RE2: a
    backreference (Python's re knows it, RE2 does not) covers nothing, and a pattern that
    backtracks catastrophically in Python's re takes linear time."""
    old = parse(_closed_by_pattern(r"^(x)\1$", xx=STR))
    new = parse(_closed_by_pattern(r"^(x)\1$"))
    assert formats.check(new, old) == [
        "Found incompatible change: Difference{jsonPath='#/properties/xx', "
        "type=PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL}"
    ]
    name = "a" * 64 + "!"
    old = parse(_closed_by_pattern("^(a+)+$", **{name: STR}))
    new = parse(_closed_by_pattern("^(a+)+$"))
    [message] = formats.check(new, old)
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in message


def _any_of_chain(levels: int, leaf: dict) -> dict:
    """``d0`` is an anyOf of two (distinct) references to ``d1``, and so on: 4^levels pairs
    of schemas for a walk that does not remember the pairs it compared."""
    definitions: dict = {f"d{levels}": leaf}
    for i in range(levels):
        ref = f"#/definitions/d{i + 1}"
        definitions[f"d{i}"] = {"anyOf": [{"$ref": ref, "title": "a"}, {"$ref": ref, "title": "b"}]}
    return {"definitions": definitions, "$ref": "#/definitions/d0"}


def test_each_pair_of_schemas_is_compared_once():
    old = parse(_any_of_chain(40, INT))
    assert formats.check(parse(_any_of_chain(40, INT)), old) == []
    assert formats.check(parse(_any_of_chain(40, {"type": "number"})), old) == []
    narrowed = formats.check(old, parse(_any_of_chain(40, {"type": "number"})))
    assert narrowed == [
        "Found incompatible change: Difference{jsonPath='#/', "
        "type=COMBINED_TYPE_SUBSCHEMAS_CHANGED}"
    ]


def _property_chain(levels: int, leaf: dict) -> dict:
    """``d0`` has two properties of schema ``d1``, and so on: 2^levels paths to the leaf."""
    definitions: dict = {f"d{levels}": leaf}
    for i in range(levels):
        ref = {"$ref": f"#/definitions/d{i + 1}"}
        definitions[f"d{i}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    return {"definitions": definitions, "$ref": "#/definitions/d0"}


def test_a_comparison_past_the_budget_is_refused_not_an_incompatibility(monkeypatch):
    """Each pair of schemas is compared once, but the leaf's change is found on each of 2^40
    paths: the check gives up after its step budget, with an error rather than a verdict."""
    monkeypatch.setattr(budget, "STEPS", 5000)  # the default's behaviour, sooner
    assert formats.check(parse(_property_chain(40, INT)), parse(_property_chain(40, INT))) == []
    old, new = parse(_property_chain(40, INT)), parse(_property_chain(40, STR))
    with pytest.raises(SchemaFormatError, match=r"^schema too complex to compare$"):
        check_level("BACKWARD", new, [(1, old)])


NUMBERS = [
    # multipleOf 1e30 / 0.7 has more digits than a decimal context: no remainder, a change
    ('"multipleOf": 0.7', '"multipleOf": 1e30', ["MULTIPLE_OF_CHANGED #/multipleOf"]),
    ('"multipleOf": 1e30', '"multipleOf": 0.7', ["MULTIPLE_OF_CHANGED #/multipleOf"]),
    ('"multipleOf": 2', '"multipleOf": 6', ["MULTIPLE_OF_EXPANDED #/multipleOf"]),
    ('"multipleOf": 0.5', '"multipleOf": 0.25', []),
    ('"maximum": 1E-400', '"maximum": 1E-500', ["MAXIMUM_DECREASED #/maximum"]),
    ('"maximum": 1E+999999', '"maximum": 1E+999998', ["MAXIMUM_DECREASED #/maximum"]),
]


@pytest.mark.parametrize(("old", "new", "expected"), NUMBERS)
def test_number_keywords_compare_without_decimal_errors(old, new, expected):
    old_parsed = parse(f'{{"type": "number", {old}}}')
    messages = formats.check(parse(f'{{"type": "number", {new}}}'), old_parsed)
    found = [m.split("type=")[1][:-1] + " " + m.split("'")[1] for m in messages]
    assert found == expected


def test_numbers_that_cannot_be_ordered_are_a_change():
    from decimal import Decimal

    old, new = parse({"type": "number", "maximum": 1.5}), parse({"type": "number", "maximum": 2})
    new.native.root.maximum = Decimal("NaN")  # unreachable from a text now: NaN is refused
    assert formats.check(new, old) == [
        "Found incompatible change: Difference{jsonPath='#/maximum', type=MAXIMUM_CHANGED}"
    ]


def _one_ref(dependency_text: str, root: dict | None = None):
    refs = [Reference("dep.json", "dep-value", 1)]
    deps = {"dep.json": Dependency("dep.json", "JSON", dependency_text)}
    return parse({**(root or {}), "$ref": "dep.json"}, refs, deps)


HOSTILE = [
    ("not nested 300 deep", lambda: parse('{"not":' * 300 + "{}" + "}" * 300), "nested too"),
    ("$schema an array", lambda: parse('{"$schema": []}'), "[] is not of type 'string'"),
    ("NaN", lambda: parse('{"type": "number", "maximum": NaN}'), "non-standard token 'NaN'"),
    ("Infinity", lambda: parse('{"multipleOf": Infinity}'), "non-standard token 'Infinity'"),
    ("-Infinity", lambda: parse('{"minimum": -Infinity}'), "non-standard token '-Infinity'"),
    ("lone surrogate", lambda: parse('{"description": "\\ud800"}'), "unpaired surrogate"),
    ("a reference that is no JSON object", lambda: _one_ref('"string"'), "dep.json is not"),
    ("a reference's $schema a number", lambda: _one_ref('{"$schema": 5}'), "not a string"),
    ("a root $id that is no URL", lambda: _one_ref("{}", {"$id": "http://["}), "IPv6"),
    ("a circular $ref", lambda: parse('{"$ref": "#"}'), "circular"),
    (
        "a chain of 65 $refs",
        lambda: parse(
            {
                "definitions": {f"r{i}": {"$ref": f"#/definitions/r{i + 1}"} for i in range(65)}
                | {"r65": STR},
                "$ref": "#/definitions/r0",
            }
        ),
        "more than 64 references",
    ),
]


@pytest.mark.parametrize(("name", "attempt", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_schemas_are_refused_with_a_reason(name, attempt, reason):
    with pytest.raises(SchemaFormatError) as caught:
        attempt()
    message = str(caught.value)
    assert message.startswith("Invalid schema ") and reason in message, message
    message.encode("utf-8")  # the 42201 answer can carry it


def test_surrogate_pairs_are_fine():
    parsed = parse('{"description": "\\ud83d\\ude00"}')
    assert parsed.canonical == '{"description":"\U0001f600"}'


def test_combined_subschemas_are_matched_without_deep_recursion():
    """The matching of combined subschemas: old i reads like new i+1 and new i, and the last
    one only like its own, so the last augmenting path runs through all 3000 of them."""
    from kafkette.broker.schema_registry.formats import json_diff

    n = 3000
    edges: dict = {}
    for i in range(n - 1):
        edges[(i, i + 1)] = []
        edges[(i, i)] = []
    edges[(n - 1, n - 1)] = []
    assert json_diff._maximum_matching(n, n, edges) == {(i, i) for i in range(n)}


def test_a_property_against_a_partially_open_model_both_ways():
    """Added to, or removed from, an object whose additionalProperties is a schema: covered
    when the property's schema is what that schema allows, else not (both directions)."""
    model = '"additionalProperties": {"type": "string"}'
    bare = parse(f'{{"type": "object", {model}}}')
    text = parse(f'{{"type": "object", "properties": {{"x": {{"type": "string"}}}}, {model}}}')
    number = parse(f'{{"type": "object", "properties": {{"x": {{"type": "integer"}}}}, {model}}}')
    assert formats.check(text, bare) == [] and formats.check(bare, text) == []
    for change, messages in (("ADDED", formats.check(number, bare)),
                             ("REMOVED", formats.check(bare, number))):  # fmt: skip
        assert messages[-1] == (
            "Found incompatible change: Difference{jsonPath='#/properties/x', "
            f"type=PROPERTY_{change}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL}}"
        )
