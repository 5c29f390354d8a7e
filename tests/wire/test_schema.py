"""Reading Kafka's JSON definitions: versions, names, defaults, common structs.

Every definition kafka-python ships is loaded and compared field by field with
kafka-python's own loader (``kafka.protocol.schemas.load_json``), which strips
comments and resolves ``commonStructs`` independently of ours.
"""

from __future__ import annotations

import importlib.resources

import pytest
from kafka.protocol.schemas import load_json

from kafkette.wire import coverage
from kafkette.wire.apis import SUPPORTED
from kafkette.wire.schema import (
    ALWAYS,
    NEVER,
    SCHEMA_PACKAGE,
    FieldSpec,
    in_range,
    load_message,
    parse_versions,
    schema_folder,
    snake_case,
)

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

DEFINITIONS = sorted(
    entry.name.removesuffix(".json")
    for entry in importlib.resources.files(SCHEMA_PACKAGE).iterdir()
    if entry.name.endswith(".json")
)


def test_schema_folder_is_the_package_resources_folder() -> None:
    """Found from the import spec (no ``import kafka``), it is the folder importlib.resources
    names once the package has been imported."""
    assert str(schema_folder()) == str(importlib.resources.files(SCHEMA_PACKAGE))
    assert {entry.name for entry in schema_folder().iterdir()} >= {
        name + ".json" for name in DEFINITIONS
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3+", (3, 0x7FFF)),
        ("0+", ALWAYS),
        ("1-4", (1, 4)),
        ("5", (5, 5)),
        ("none", NEVER),
        ("", NEVER),
        (None, NEVER),
    ],
)
def test_parse_versions(text: str | None, expected: tuple[int, int]) -> None:
    assert parse_versions(text) == expected


def test_never_contains_no_version() -> None:
    assert not any(in_range(v, NEVER) for v in range(-1, 100))
    assert in_range(0, ALWAYS) and in_range(0x7FFF, ALWAYS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("IsrNodes", "isr_nodes"),
        ("TopicId", "topic_id"),
        ("Records", "records"),
        ("ClientID", "client_id"),
        ("HTTPServer", "http_server"),
        ("V2Field", "v2_field"),
    ],
)
def test_snake_case(name: str, expected: str) -> None:
    assert snake_case(name) == expected


def test_missing_definition_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        load_message("NoSuchRequest")


def test_load_is_cached() -> None:
    assert load_message("FetchRequest") is load_message("FetchRequest")


def _field(fields: tuple[FieldSpec, ...], name: str) -> FieldSpec:
    return next(f for f in fields if f.name == name)


def test_fetch_request_facts() -> None:
    spec = load_message("FetchRequest")
    assert (spec.api_key, spec.kind) == (1, "request")
    assert spec.valid_versions[0] == 4  # kafka-python ships the 4.0 definitions
    assert spec.is_flexible(12) and not spec.is_flexible(11)
    cluster_id = _field(spec.fields, "cluster_id")
    assert (cluster_id.tag, cluster_id.tagged_versions) == (0, (12, 0x7FFF))
    assert cluster_id.default is None  # "default": "null"
    max_bytes = _field(spec.fields, "max_bytes")
    assert max_bytes.default == 0x7FFFFFFF  # written as "0x7fffffff"
    topics = _field(spec.fields, "topics")
    assert topics.is_array and topics.is_struct
    assert [f.name for f in topics.fields][:2] == ["topic", "topic_id"]


def test_common_structs_are_resolved() -> None:
    """ProduceResponse's NodeEndpoints and ListOffsets' shared structs come inline."""
    spec = load_message("MetadataResponse")
    brokers = _field(spec.fields, "brokers")
    assert {f.name for f in brokers.fields} >= {"node_id", "host", "port", "rack"}
    join = load_message("JoinGroupRequest")
    protocols = _field(join.fields, "protocols")
    assert [f.name for f in protocols.fields] == ["name", "metadata"]


def test_request_header_client_id_is_never_flexible() -> None:
    header = load_message("RequestHeader")
    client_id = _field(header.fields, "client_id")
    assert client_id.flexible_versions == NEVER
    assert client_id.nullable_versions == (1, 0x7FFF)


def test_tagged_struct() -> None:
    """FetchResponse's diverging epoch: a tagged struct whose default is its own defaults."""
    fetch = load_message("FetchResponse")
    partitions = _field(_field(fetch.fields, "responses").fields, "partitions")
    diverging = _field(partitions.fields, "diverging_epoch")
    assert diverging.is_struct and not diverging.is_array
    assert diverging.tag == 0
    assert _field(diverging.fields, "epoch").default == -1


def test_unquoted_json_defaults() -> None:
    """Some definitions write defaults as JSON literals (false, -1) instead of strings."""
    for name in DEFINITIONS:
        for field in _walk(load_message(name).fields):
            if field.type == "bool":
                assert field.default in (True, False), (name, field.name)
            elif field.type in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
                assert isinstance(field.default, int), (name, field.name)


def _walk(fields: tuple[FieldSpec, ...]):
    for field in fields:
        yield field
        yield from _walk(field.fields)


def _oracle_versions(raw: dict, key: str) -> tuple[int, int]:
    return parse_versions(raw.get(key))


@pytest.mark.parametrize("name", DEFINITIONS)
def test_matches_kafka_python_loader(name: str) -> None:
    raw = load_json(name)
    spec = load_message(name)
    assert spec.name == raw["name"]
    assert spec.kind == raw["type"]
    assert spec.api_key == raw.get("apiKey")
    assert spec.valid_versions == parse_versions(raw.get("validVersions"))
    assert spec.flexible_versions == parse_versions(raw.get("flexibleVersions"))
    _compare_fields(spec.fields, raw.get("fields", []), name)


def _compare_fields(ours: tuple[FieldSpec, ...], theirs: list[dict], where: str) -> None:
    assert [f.json_name for f in ours] == [t["name"] for t in theirs], where
    for field, raw in zip(ours, theirs, strict=True):
        at = f"{where}.{raw['name']}"
        assert field.type == raw["type"], at
        assert field.versions == parse_versions(raw["versions"]), at
        assert field.nullable_versions == parse_versions(raw.get("nullableVersions")), at
        assert field.tag == raw.get("tag"), at
        if "tag" in raw:
            assert field.tagged_versions == parse_versions(raw["taggedVersions"]), at
        else:
            assert field.tagged_versions == NEVER, at
        _compare_fields(field.fields, raw.get("fields", []), at)


def test_protocol_coverage_page_is_generated_and_current(tmp_path) -> None:
    """docs/protocol-coverage.md is `python -m kafkette.wire.coverage` output, never edited."""
    page = coverage.render()
    for api in SUPPORTED.values():
        advertised = f"{api.min_version}-{api.max_version}"
        if api.min_version == api.max_version:
            advertised = str(api.min_version)
        if not api.advertised:  # served, left out of ApiVersions (KIP-714's APIs)
            advertised = "not advertised"
        assert f"| {int(api.key)} | {api.name} | {advertised} |" in page
    out = tmp_path / "coverage.md"
    assert coverage.main(["--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == page
    assert coverage.main(["--check", "--output", str(out)]) == 0
    out.write_text(page + "edited by hand\n", encoding="utf-8")
    assert coverage.main(["--check", "--output", str(out)]) == 1
    assert coverage.main(["--check"]) == 0, "docs/protocol-coverage.md is stale"
