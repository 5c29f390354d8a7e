"""The definitions added for Kafka 4.3's APIs that kafka-python lacks, through the real codec.

``wire/supplement`` holds KIP-932's share-group APIs (76-79, 83-87, 90-92), KIP-1071's
streams-group APIs (88, 89), the delegation-token APIs (38-41) and the KRaft admin APIs
(64, 80, 81). For every message and every version Kafka 4.3 accepts: the versions
themselves, a representative body's round trip through ``message_codec``, kio (an
independent code generator, see test_supplement_definitions) reading our bytes and writing
them back identically, flexible framing (tagged-field sections, compact lengths), nulls
where the definitions allow them and a refusal where they do not, and byte layouts worked
out by hand for ShareFetch and RenewDelegationToken. None of these APIs is in
``wire/apis.py`` yet, so the full-frame tests stand up their own ``ApiSpec``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import itertools
import struct
import uuid

import pytest

from kafkette.wire import client_connection, connection
from kafkette.wire.apis import ApiSpec
from kafkette.wire.client_connection import ClientConnection, Response
from kafkette.wire.codec import default_value, message_codec
from kafkette.wire.connection import Request, ServerConnection
from kafkette.wire.exceptions import MalformedFrameError
from kafkette.wire.schema import FieldSpec, in_range, load_message, schema_folder
from kafkette.wire.supplement import (
    delegation_tokens,
    kraft_admin,
    parse,
    share_groups,
    streams_groups,
)

kio_index = pytest.importorskip("kio.index", reason="kio (PyPI) is the independent oracle")
kio_serial = pytest.importorskip("kio.serial", reason="kio (PyPI) is the independent oracle")

# api key -> (API, lowest and highest version Kafka 4.3 accepts, first flexible version),
# read off Kafka 4.3.0's definitions (kafka-clients-4.3.0.jar).
KAFKA_43: dict[int, tuple[str, int, int, int]] = {
    38: ("CreateDelegationToken", 1, 3, 2),
    39: ("RenewDelegationToken", 1, 2, 2),
    40: ("ExpireDelegationToken", 1, 2, 2),
    41: ("DescribeDelegationToken", 1, 3, 2),
    64: ("UnregisterBroker", 0, 0, 0),
    76: ("ShareGroupHeartbeat", 1, 1, 0),
    77: ("ShareGroupDescribe", 1, 1, 0),
    78: ("ShareFetch", 1, 2, 0),
    79: ("ShareAcknowledge", 1, 2, 0),
    80: ("AddRaftVoter", 0, 1, 0),
    81: ("RemoveRaftVoter", 0, 0, 0),
    83: ("InitializeShareGroupState", 0, 0, 0),
    84: ("ReadShareGroupState", 0, 0, 0),
    85: ("WriteShareGroupState", 0, 1, 0),
    86: ("DeleteShareGroupState", 0, 0, 0),
    87: ("ReadShareGroupStateSummary", 0, 1, 0),
    88: ("StreamsGroupHeartbeat", 0, 0, 0),
    89: ("StreamsGroupDescribe", 0, 0, 0),
    90: ("DescribeShareGroupOffsets", 0, 1, 0),
    91: ("AlterShareGroupOffsets", 0, 0, 0),
    92: ("DeleteShareGroupOffsets", 0, 0, 0),
}

_MODULES = (share_groups, streams_groups, delegation_tokens, kraft_admin)
NAMES = sorted(
    parse(block)["name"]
    for module in _MODULES
    for block in module.DEFINITIONS.split("\n\n")
    if block.strip()
)
CASES = [
    (name, version)
    for name in NAMES
    for version in range(
        load_message(name).valid_versions[0], load_message(name).valid_versions[1] + 1
    )
]
IDS = [f"{name}-v{version}" for name, version in CASES]


# --- the versions --------------------------------------------------------------------------


def test_every_added_api_has_kafka_43s_versions() -> None:
    assert sorted(NAMES) == sorted(
        name + kind for name, *_ in KAFKA_43.values() for kind in ("Request", "Response")
    )
    for key, (name, low, high, flexible_from) in KAFKA_43.items():
        for kind in ("Request", "Response"):
            spec = load_message(name + kind)
            assert spec.api_key == key, spec.name
            assert spec.kind == kind.lower(), spec.name
            assert spec.valid_versions == (low, high), spec.name
            assert spec.flexible_versions == (flexible_from, 0x7FFF), spec.name
            # kafka-python ships none of them: the supplement answers.
            assert not schema_folder().joinpath(name + kind + ".json").is_file()


def _field(message: str, *path: str) -> FieldSpec:
    fields = load_message(message).fields
    for name in path:
        found = next(f for f in fields if f.name == name)
        fields = found.fields
    return found


@pytest.mark.parametrize(
    ("message", "path", "versions", "nullable"),
    [
        # v0 (Kafka 4.0's early access) fields kept as Kafka keeps them: never on the wire.
        (
            "ShareFetchRequest",
            ("topics", "partitions", "partition_max_bytes"),
            (0, 0),
            (1, 0),
        ),
        ("ShareFetchRequest", ("max_records",), (1, 0x7FFF), (1, 0)),
        ("ShareFetchRequest", ("share_acquire_mode",), (2, 0x7FFF), (1, 0)),
        ("ShareFetchRequest", ("is_renew_ack",), (2, 0x7FFF), (1, 0)),
        ("ShareFetchRequest", ("member_id",), (0, 0x7FFF), (0, 0x7FFF)),
        ("ShareFetchResponse", ("acquisition_lock_timeout_ms",), (1, 0x7FFF), (1, 0)),
        # Records may be null only in the removed v0.
        ("ShareFetchResponse", ("responses", "partitions", "records"), (0, 0x7FFF), (0, 0)),
        ("ShareAcknowledgeRequest", ("is_renew_ack",), (2, 0x7FFF), (1, 0)),
        ("ShareAcknowledgeResponse", ("acquisition_lock_timeout_ms",), (2, 0x7FFF), (1, 0)),
        ("ShareGroupHeartbeatResponse", ("assignment",), (0, 0x7FFF), (0, 0x7FFF)),
        ("DescribeShareGroupOffsetsRequest", ("groups", "topics"), (0, 0x7FFF), (0, 0x7FFF)),
        (
            "DescribeShareGroupOffsetsResponse",
            ("groups", "topics", "partitions", "lag"),
            (1, 0x7FFF),
            (1, 0),
        ),
        (
            "WriteShareGroupStateRequest",
            ("topics", "partitions", "delivery_complete_count"),
            (1, 0x7FFF),
            (1, 0),
        ),
        (
            "ReadShareGroupStateSummaryResponse",
            ("results", "partitions", "delivery_complete_count"),
            (1, 0x7FFF),
            (1, 0),
        ),
        ("StreamsGroupHeartbeatRequest", ("topology",), (0, 0x7FFF), (0, 0x7FFF)),
        ("StreamsGroupHeartbeatResponse", ("status",), (0, 0x7FFF), (0, 0x7FFF)),
        ("CreateDelegationTokenRequest", ("owner_principal_name",), (3, 0x7FFF), (3, 0x7FFF)),
        ("DescribeDelegationTokenRequest", ("owners",), (0, 0x7FFF), (0, 0x7FFF)),
        ("AddRaftVoterRequest", ("ack_when_committed",), (1, 0x7FFF), (1, 0)),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_version_and_null_facts(
    message: str, path: tuple[str, ...], versions: tuple[int, int], nullable: tuple[int, int]
) -> None:
    found = _field(message, *path)
    assert found.versions == versions
    assert found.nullable_versions == nullable


def test_defaults_that_differ_from_the_types() -> None:
    fetch = load_message("ShareFetchRequest")
    assert default_value(next(f for f in fetch.fields if f.name == "max_bytes"), 1) == 2**31 - 1
    assert default_value(_field("AddRaftVoterRequest", "ack_when_committed"), 1) is True
    assert default_value(_field("StreamsGroupHeartbeatRequest", "rebalance_timeout_ms"), 0) == -1
    described = _field("ShareGroupDescribeResponse", "groups", "authorized_operations")
    assert default_value(described, 1) == -(2**31)
    lag = _field("DescribeShareGroupOffsetsResponse", "groups", "topics", "partitions", "lag")
    assert default_value(lag, 1) == -1


# --- representative bodies -------------------------------------------------------------------

_ERROR_CODE = 15  # COORDINATOR_NOT_AVAILABLE: a code every reader knows


def sample(fields: tuple[FieldSpec, ...], version: int, counter: itertools.count) -> dict:
    """Every field present at ``version`` set to a value that is not its default (arrays
    of two), so a field the codec drops or misplaces changes the result."""
    out: dict[str, object] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        elements = [_element(f, version, counter) for _ in range(2 if f.is_array else 1)]
        out[f.name] = elements if f.is_array else elements[0]
    return out


def _element(f: FieldSpec, version: int, counter: itertools.count) -> object:
    if f.is_struct:
        return sample(f.fields, version, counter)
    n = next(counter)
    kind = f.element_type
    if kind == "int16" and f.name.endswith("error_code"):
        return _ERROR_CODE
    if kind == "int8":
        return n % 100 + 1
    if kind in ("int16", "uint16", "int32", "int64"):
        return 1000 + n
    if kind == "bool":
        return n % 2 == 0
    if kind == "string":
        return f"{f.name}-{n}"
    if kind == "bytes":
        return bytes([n % 256, 1, 2])
    if kind == "records":
        return bytes(range(n % 8, n % 8 + 12))
    if kind == "uuid":
        return uuid.UUID(int=n + 1)
    raise LookupError(f"no sample for {f.type}")


def expected(fields: tuple[FieldSpec, ...], version: int, value: dict) -> dict:
    """``value`` as the decoder returns it: absent fields at their defaults."""
    out: dict[str, object] = {}
    for f in fields:
        if f.name not in value:
            out[f.name] = default_value(f, version)
            continue
        item = value[f.name]
        if item is not None and f.is_struct:
            if f.is_array:
                item = [expected(f.fields, version, element) for element in item]
            else:
                item = expected(f.fields, version, item)
        out[f.name] = item
    return out


def plain(value: object) -> object:
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def body(name: str, version: int) -> dict:
    return sample(load_message(name).fields, version, itertools.count(1))


def round_trip(name: str, version: int, value: dict) -> bytes:
    codec = message_codec(name, version)
    encoded = codec.encode(value)
    decoded, end = codec.decode(memoryview(encoded))
    assert end == len(encoded)
    assert plain(decoded) == expected(codec.spec.fields, version, value)
    assert codec.encode(decoded) == encoded
    return encoded


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
def test_representative_body_round_trips(name: str, version: int) -> None:
    value = body(name, version)
    encoded = round_trip(name, version, value)
    assert message_codec(name, version).encode({}) != encoded  # not a body of defaults


# --- kio, the independent oracle ----------------------------------------------------------------


def _kio_class(name: str, version: int) -> type:
    spec = load_message(name)
    if spec.kind == "request":
        return kio_index.load_request_schema(spec.api_key, version)
    return kio_index.load_response_schema(spec.api_key, version)


def _kio_plain(entity: object, fields: tuple[FieldSpec, ...], version: int) -> dict:
    """A kio entity in our shape, fields matched by position (kio renames ``*_ms``)."""
    present = [f for f in fields if in_range(version, f.versions)]
    kio_fields = dataclasses.fields(entity)  # type: ignore[arg-type]
    assert len(kio_fields) == len(present)
    return {
        f.name: _kio_value(getattr(entity, kf.name), f, version)
        for f, kf in zip(present, kio_fields, strict=True)
    }


def _kio_value(value: object, f: FieldSpec, version: int) -> object:
    if value is None:
        return None
    if f.is_struct:
        if f.is_array:
            return [_kio_plain(item, f.fields, version) for item in value]  # type: ignore[attr-defined]
        return _kio_plain(value, f.fields, version)
    if f.is_array:
        element = dataclasses.replace(f, type=f.element_type)
        return [_kio_value(item, element, version) for item in value]  # type: ignore[attr-defined]
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    return value


def _present_only(fields: tuple[FieldSpec, ...], version: int, value: dict) -> dict:
    out = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        item = plain(value[f.name])
        if item is not None and f.is_struct:
            if f.is_array:
                item = [_present_only(f.fields, version, e) for e in item]
            else:
                item = _present_only(f.fields, version, item)
        out[f.name] = item
    return out


def kio_agrees(name: str, version: int, value: dict) -> None:
    """kio reads our bytes to the same values and writes them back byte for byte."""
    codec = message_codec(name, version)
    ours = codec.encode(value)
    cls = _kio_class(name, version)
    assert bool(cls.__flexible__) == codec.flexible
    entity, end = kio_serial.entity_reader(cls)(ours, 0)
    assert end == len(ours)
    assert _kio_plain(entity, codec.spec.fields, version) == _present_only(
        codec.spec.fields, version, expected(codec.spec.fields, version, value)
    )
    buffer = io.BytesIO()
    kio_serial.entity_writer(cls)(buffer, entity)
    assert buffer.getvalue() == ours


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
def test_kio_reads_and_writes_our_bytes(name: str, version: int) -> None:
    kio_agrees(name, version, body(name, version))


# --- flexible framing ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
def test_framing_follows_the_flexible_versions(name: str, version: int) -> None:
    """A flexible body ends with its (empty) tagged-field section and skips a tag it does
    not know; a body before the flexible versions has none, so the same bytes plus a tag
    section decode to something else or fail."""
    codec = message_codec(name, version)
    value = body(name, version)
    encoded = codec.encode(value)
    want = expected(codec.spec.fields, version, value)
    unknown_tag = b"\x01" + b"\x63" + b"\x02" + b"hi"  # one field: tag 99, two bytes
    if codec.flexible:
        assert encoded[-1:] == b"\x00"
        decoded, end = codec.decode(memoryview(encoded[:-1] + unknown_tag))
        assert end == len(encoded) - 1 + len(unknown_tag)
        assert plain(decoded) == want
        with pytest.raises(MalformedFrameError):
            codec.decode(memoryview(encoded[:-1]))  # the section is not optional
    else:
        decoded, end = codec.decode(memoryview(encoded + unknown_tag))
        assert end == len(encoded)  # the classic body ends before: nothing is read as tags


def test_share_fetch_request_v1_layout() -> None:
    """Worked out by hand from KIP-932's ShareFetchRequest v1: compact strings and arrays
    (length + 1 as an unsigned varint), and an empty tagged-field section after every
    struct, innermost first."""
    topic, forgotten = uuid.UUID(int=0x0102), uuid.UUID(int=0x0304)
    value = {
        "group_id": "g1",
        "member_id": "m",
        "share_session_epoch": 1,
        "max_wait_ms": 500,
        "min_bytes": 2,
        "max_bytes": 3,
        "max_records": 100,
        "batch_size": 10,
        "topics": [
            {
                "topic_id": topic,
                "partitions": [
                    {
                        "partition_index": 7,
                        "acknowledgement_batches": [
                            {"first_offset": 5, "last_offset": 6, "acknowledge_types": [1, 3]}
                        ],
                    }
                ],
            }
        ],
        "forgotten_topics_data": [{"topic_id": forgotten, "partitions": [0, 9]}],
    }
    ack_batch = (
        struct.pack(">qq", 5, 6)  # FirstOffset, LastOffset
        + b"\x03\x01\x03"  # AcknowledgeTypes: two int8s
        + b"\x00"  # the batch's tagged fields
    )
    partition = struct.pack(">i", 7) + b"\x02" + ack_batch + b"\x00"
    want = (
        b"\x03g1"  # GroupId (compact, length 2 + 1)
        + b"\x02m"  # MemberId
        + struct.pack(">iiiiii", 1, 500, 2, 3, 100, 10)
        # ShareSessionEpoch, MaxWaitMs, MinBytes, MaxBytes, MaxRecords, BatchSize
        + b"\x02"  # Topics: one
        + topic.bytes
        + b"\x02"  # Partitions: one (PartitionMaxBytes is v0 only)
        + partition
        + b"\x00"  # the topic's tagged fields
        + b"\x02"  # ForgottenTopicsData: one
        + forgotten.bytes
        + b"\x03"
        + struct.pack(">ii", 0, 9)
        + b"\x00"  # the forgotten topic's tagged fields
        + b"\x00"  # the request's tagged fields
    )
    codec = message_codec("ShareFetchRequest", 1)
    assert codec.encode(value) == want
    decoded, end = codec.decode(memoryview(want))
    assert end == len(want)
    assert decoded["topics"][0]["partitions"][0]["partition_max_bytes"] == 0  # v0's, default

    # A tag unknown to v1 inside the innermost struct is skipped there.
    batch_end = want.index(ack_batch) + len(ack_batch)
    tagged = want[: batch_end - 1] + b"\x01\x05\x01\xff" + want[batch_end:]
    assert codec.decode(memoryview(tagged))[0] == decoded

    # v2 puts ShareAcquireMode (int8) and IsRenewAck (bool) right after BatchSize.
    v2 = message_codec("ShareFetchRequest", 2).encode(
        {**value, "share_acquire_mode": 1, "is_renew_ack": True}
    )
    after_batch_size = len(b"\x03g1\x02m") + 6 * 4
    assert v2 == want[:after_batch_size] + b"\x01\x01" + want[after_batch_size:]
    kio_agrees("ShareFetchRequest", 1, value)


def test_delegation_token_versions_before_and_after_flexible() -> None:
    """RenewDelegationToken v1 is classic (int32 byte length, no tagged fields); v2 is the
    first flexible version (compact length, tagged-field section)."""
    value = {"hmac": b"\xaa\xbb", "renew_period_ms": 86_400_000}
    period = struct.pack(">q", 86_400_000)
    v1 = message_codec("RenewDelegationTokenRequest", 1).encode(value)
    v2 = message_codec("RenewDelegationTokenRequest", 2).encode(value)
    assert v1 == b"\x00\x00\x00\x02\xaa\xbb" + period
    assert v2 == b"\x03\xaa\xbb" + period + b"\x00"


# --- nulls --------------------------------------------------------------------------------------

_NULL_CAPABLE = ("string", "bytes", "records")


def _null_paths(fields: tuple[FieldSpec, ...], version: int, path: tuple[str, ...] = ()):
    """(path, nullable) of every field present at ``version`` that can be written as null:
    strings, bytes, records, arrays, and structs where the definition makes them nullable."""
    for f in fields:
        if not in_range(version, f.versions):
            continue
        here = (*path, f.name)
        nullable = in_range(version, f.nullable_versions)
        if f.is_array or f.element_type in _NULL_CAPABLE or (f.is_struct and nullable):
            yield here, nullable
        if f.is_struct:
            yield from _null_paths(f.fields, version, here)


def _set(message: dict, path: tuple[str, ...], value: object) -> bool:
    """Set ``path`` (through the first element of arrays); False if a parent is null."""
    node: object = message
    for name in path[:-1]:
        node = node[name]  # type: ignore[index]
        if isinstance(node, list):
            node = node[0]
        if node is None:
            return False
    node[path[-1]] = value  # type: ignore[index]
    return True


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
def test_every_nullable_field_null(name: str, version: int) -> None:
    fields = load_message(name).fields
    value = body(name, version)
    nulled = [path for path, nullable in _null_paths(fields, version) if nullable]
    # Deepest first, so that nulling a parent does not hide its nullable children.
    for path in sorted(nulled, key=len, reverse=True):
        assert _set(value, path, None)
    round_trip(name, version, value)
    kio_agrees(name, version, value)


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
def test_null_refused_where_not_nullable(name: str, version: int) -> None:
    codec = message_codec(name, version)
    refused = 0
    for path, nullable in _null_paths(codec.spec.fields, version):
        if nullable:
            continue
        value = body(name, version)
        assert _set(value, path, None)
        with pytest.raises(MalformedFrameError, match="serialized as null"):
            codec.decode(memoryview(codec.encode(value)))
        refused += 1
    has_non_nullable = any(not n for _, n in _null_paths(codec.spec.fields, version))
    assert (refused > 0) == has_non_nullable


def test_share_fetch_response_records_are_never_null_from_v1() -> None:
    for version in (1, 2):
        codec = message_codec("ShareFetchResponse", version)
        value = body("ShareFetchResponse", version)
        value["responses"][0]["partitions"][0]["records"] = None
        with pytest.raises(MalformedFrameError, match="Records"):
            codec.decode(memoryview(codec.encode(value)))


# --- whole frames, with an ApiSpec made here (wire/apis.py does not list these APIs yet) -------


@pytest.fixture
def serving(monkeypatch: pytest.MonkeyPatch) -> dict[int, ApiSpec]:
    """``api_spec`` of both connection modules also answering the added APIs."""
    added = {
        key: ApiSpec(key, name, low, high, low)  # type: ignore[arg-type]
        for key, (name, low, high, _) in KAFKA_43.items()
    }
    for module in (connection, client_connection):
        original = module.api_spec
        monkeypatch.setattr(
            module, "api_spec", lambda key, original=original: added.get(key) or original(key)
        )
    return added


@pytest.mark.parametrize(
    ("key", "version"),
    [(key, v) for key, (_, low, high, _) in KAFKA_43.items() for v in range(low, high + 1)],
)
def test_whole_frames_both_ways(serving: dict[int, ApiSpec], key: int, version: int) -> None:
    api = serving[key]
    client, server = ClientConnection(), ServerConnection()
    request_body = body(api.request_definition, version)
    server.receive_data(client.send_request(key, version, request_body, client_id="c1"))
    request = server.next_request()
    assert isinstance(request, Request)
    assert (request.header.api_key, request.header.api_version) == (key, version)
    # Request header v2 and response header v1 exactly where the body is flexible.
    flexible = load_message(api.request_definition).is_flexible(version)
    assert request.header.flexible == flexible
    spec = load_message(api.request_definition)
    assert plain(request.body) == expected(spec.fields, version, request_body)

    response_body = body(api.response_definition, version)
    frame = b"".join(server.encode_response(request.header, response_body))  # type: ignore[arg-type]
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert (size, correlation_id) == (len(frame) - 4, 0)
    header_tags = b"\x00" if flexible else b""
    assert frame[8:] == header_tags + message_codec(api.response_definition, version).encode(
        response_body
    )
    client.receive_data(frame)
    response = client.next_response()
    assert isinstance(response, Response)
    spec = load_message(api.response_definition)
    assert plain(response.body) == expected(spec.fields, version, response_body)
