"""The codec against two independent oracles, for every advertised (API, version).

Random message values are generated from OUR reading of Kafka's definitions
(``load_message``; seeded, ``message_values.py``), then checked three ways:

* our own round trip: ``decode(encode(value))`` gives the value back, with every
  field of the definition present (defaults where this version lacks it);
* kafka-python's protocol classes (``kafka.protocol.*``), which compile their own
  codec from the same JSON: they decode our bytes to the same values, and encode
  the same values to the same bytes;
* kio (``kio.schema`` + ``kio.serial``), generated from Kafka's definitions by a
  separate code generator with a native reader: it reads our bytes and writes
  them back identically, and what kio writes from its own random entities (drawn by
  hypothesis from kio's own types) we decode and re-encode byte for byte.

Known, deliberate differences between an oracle and Kafka's definition are
converted explicitly (see ``_kp_value`` and ``_kio_plain``), never skipped.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import importlib
import io
import pkgutil
import random
import typing

import kafka.protocol
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage

from kafkette.wire import supplement
from kafkette.wire.apis import SUPPORTED
from kafkette.wire.codec import INLINE_RECORDS_LIMIT, Output, default_value, message_codec
from kafkette.wire.exceptions import EncodeError
from kafkette.wire.primitives import ZERO_UUID
from kafkette.wire.schema import FieldSpec, in_range, load_message
from tests.wire import message_values
from tests.wire.message_values import examples, message_value

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

kio_index = pytest.importorskip("kio.index", reason="kio (PyPI) is the second codec oracle")
kio_serial = pytest.importorskip("kio.serial", reason="kio (PyPI) is the second codec oracle")
kio_errors = pytest.importorskip("kio.schema.errors", reason="kio ships its error code enum")
kio_primitive = pytest.importorskip("kio.static.primitive", reason="kio ships its value types")

# kio registers hypothesis strategies for its value types except Records (plain bytes to it).
st.register_type_strategy(kio_primitive.Records, st.binary(max_size=32))

EXAMPLES = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

def _advertised() -> list[tuple[str, int]]:
    pairs = []
    for api in SUPPORTED.values():
        for version in range(api.decode_min, api.max_version + 1):
            pairs.append((api.request_definition, version))
            pairs.append((api.response_definition, version))
    return pairs


ADVERTISED = _advertised()
IDS = [f"{name}-v{version}" for name, version in ADVERTISED]
# kafka-python has no class for what wire/supplement defines (test_supplement_definitions).
KP_ADVERTISED = [(n, v) for n, v in ADVERTISED if n not in supplement.names()]
KP_IDS = [f"{name}-v{version}" for name, version in KP_ADVERTISED]


# --- helpers -----------------------------------------------------------------------------------


def complete(fields: tuple[FieldSpec, ...], version: int, value: dict) -> dict:
    """``value`` as the decoder returns it: absent fields at their defaults, records as views."""
    out = {}
    for f in fields:
        if f.name not in value:
            out[f.name] = default_value(f, version)
            continue
        item = value[f.name]
        if item is not None and f.is_struct:
            if f.is_array:
                item = [complete(f.fields, version, element) for element in item]
            else:
                item = complete(f.fields, version, item)
        out[f.name] = item
    return out


def _plain(value: object) -> object:
    """Records decode to memoryviews; compare them as bytes."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _is_tagged(field: FieldSpec, version: int, flexible: bool) -> bool:
    return flexible and field.tag is not None and in_range(version, field.tagged_versions)


# --- our own round trip ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "version"), ADVERTISED, ids=IDS)
def test_round_trip(name: str, version: int) -> None:
    codec = message_codec(name, version)
    for number, value in examples(name, version, functools.partial(message_value, name, version)):
        encoded = codec.encode(value)
        decoded, end = codec.decode(memoryview(encoded))
        assert end == len(encoded), number
        assert _plain(decoded) == complete(codec.spec.fields, version, value), number
        assert codec.encode(decoded) == encoded, number


def test_every_advertised_version_below_the_definitions_is_explained() -> None:
    """Only Produce advertises versions (0-2) the definitions no longer carry (KAFKA-18659)."""
    below = {
        api.name: (api.min_version, api.decode_min)
        for api in SUPPORTED.values()
        if api.min_version < api.decode_min
    }
    assert below == {"Produce": (0, 3)}
    assert load_message("ProduceRequest").valid_versions[0] == 3
    for api in SUPPORTED.values():
        for definition in (api.request_definition, api.response_definition):
            low, high = load_message(definition).valid_versions
            assert low <= api.decode_min and api.max_version <= high, definition


# --- oracle 1: kafka-python's protocol classes -----------------------------------------------


@functools.cache
def _kafka_python_classes() -> dict[str, type]:
    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name and "generate_stubs" not in module.name:
            importlib.import_module(module.name)
    found: dict[str, type] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None:
            found[cls.name] = cls
    return found


def _kp_pairs(fields: tuple[FieldSpec, ...], kp_struct: object) -> list[tuple[FieldSpec, object]]:
    """Our fields next to kafka-python's, matched by position and checked by JSON name."""
    # ``.fields`` (not ``._fields``): a struct array's element struct holds the data classes.
    kp_fields = list(kp_struct.fields.values())  # type: ignore[attr-defined]
    assert len(kp_fields) == len(fields)
    for ours, theirs in zip(fields, kp_fields, strict=True):
        assert ours.json_name == theirs._name or theirs._type_str == "bitfield", theirs._name
    return list(zip(fields, kp_fields, strict=True))


def _bits(value: int) -> set[int] | None:
    """kafka-python patches MetadataResponse's int32 authorized_operations into a bit set,
    with only bit 31 (Kafka's -2147483648 "not requested") meaning None."""
    bits = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
    return None if bits == {31} else bits


def _kp_value(obj: object, kp_struct: object, fields: tuple[FieldSpec, ...], version: int) -> dict:
    """A kafka-python decoded object in our shape (our names, in-version fields only)."""
    out = {}
    for f, kf in _kp_pairs(fields, kp_struct):
        if not in_range(version, f.versions):
            continue
        value = getattr(obj, kf.name)
        if kf._type_str == "bitfield":
            pass  # compared as a bit set, see _bits
        elif value is None and f.type == "uuid":
            value = ZERO_UUID  # kafka-python decodes the all-zero UUID as None
        elif value is None and f.is_struct and not f.is_array and f.tag is not None:
            # kafka-python's default for an absent tagged struct is None; Kafka's (and ours)
            # is the struct with its own defaults. Only legal where the struct is not nullable.
            assert not in_range(version, f.nullable_versions)
            value = default_value(f, version)
            out[f.name] = value
            continue
        elif isinstance(value, bytes | bytearray | memoryview):
            value = bytes(value)
        if value is not None and f.is_struct:
            if f.is_array:
                value = [_kp_value(item, kf, f.fields, version) for item in value]
            else:
                value = _kp_value(value, kf, f.fields, version)
        out[f.name] = value
    return out


def _to_kp(
    value: dict, fields: tuple[FieldSpec, ...], kp_struct: object, version: int, flexible: bool
) -> dict:
    """Keyword arguments for kafka-python's classes carrying the same values.

    Tagged fields at their default are left out: they are not on the wire (Kafka's rule),
    and kafka-python compares an absent tagged struct with None rather than its defaults.
    """
    kwargs = {}
    for f, kf in _kp_pairs(fields, kp_struct):
        if not in_range(version, f.versions):
            continue
        item = value[f.name]
        if _is_tagged(f, version, flexible) and item == default_value(f, version):
            continue
        if kf._type_str == "bitfield":
            item = _bits(item)
        elif item is not None and f.is_struct:
            make = kf.data_class  # type: ignore[attr-defined]
            if f.is_array:
                item = [
                    make(version=version, **_to_kp(e, f.fields, kf, version, flexible))
                    for e in item
                ]
            else:
                item = make(version=version, **_to_kp(item, f.fields, kf, version, flexible))
        kwargs[kf.name] = item
    return kwargs


def _ours_for_kp(fields: tuple[FieldSpec, ...], kp_struct: object, version: int, value: dict):
    """Our value with kafka-python's known representation changes applied (bit sets)."""
    out = {}
    for f, kf in _kp_pairs(fields, kp_struct):
        if f.name not in value or not in_range(version, f.versions):
            continue
        item = value[f.name]
        if kf._type_str == "bitfield":
            item = _bits(item)
        elif item is not None and f.is_struct:
            if f.is_array:
                item = [_ours_for_kp(f.fields, kf, version, e) for e in item]
            else:
                item = _ours_for_kp(f.fields, kf, version, item)
        out[f.name] = item
    return out


def test_kafka_python_has_every_advertised_message() -> None:
    classes = _kafka_python_classes()
    missing = {name for name, _ in KP_ADVERTISED if name not in classes}
    assert not missing


@pytest.mark.parametrize(("name", "version"), KP_ADVERTISED, ids=KP_IDS)
def test_kafka_python_agrees(name: str, version: int) -> None:
    for number, value in examples(name, version, functools.partial(message_value, name, version)):
        try:
            _kafka_python_agrees(name, version, value)
        except AssertionError as exc:
            exc.add_note(f"example {number} of {name} v{version}")
            raise


def _kafka_python_agrees(name: str, version: int, value: dict) -> None:
    codec = message_codec(name, version)
    kp_cls = _kafka_python_classes()[name]
    kp_struct = kp_cls._struct
    ours = codec.encode(value)

    read_as, wire = version, ours
    if name == "ApiVersionsResponse" and value["error_code"] != 0:
        # kafka-python reads every errored ApiVersions response as v0 (KIP-511: a broker
        # that does not know the requested version answers in v0), so it gets a v0 body.
        read_as, wire = 0, message_codec(name, 0).encode(value)
    theirs_decoded = kp_cls.decode(wire, version=read_as)
    expected = _ours_for_kp(codec.spec.fields, kp_struct, read_as, value)
    assert _kp_value(theirs_decoded, kp_struct, codec.spec.fields, read_as) == expected

    kwargs = _to_kp(value, codec.spec.fields, kp_struct, version, codec.flexible)
    theirs = kp_cls[version](**kwargs).encode(version=version)
    assert theirs == ours


# --- oracle 2: kio ----------------------------------------------------------------------------


@functools.cache
def _kio_class(name: str, version: int) -> type:
    spec = load_message(name)
    if spec.kind == "request":
        return kio_index.load_request_schema(spec.api_key, version)
    return kio_index.load_response_schema(spec.api_key, version)


def _kio_write(cls: type, entity: object) -> bytes:
    buffer = io.BytesIO()
    kio_serial.entity_writer(cls)(buffer, entity)
    return buffer.getvalue()


def _kio_plain(entity: object, fields: tuple[FieldSpec, ...], version: int) -> dict:
    """A kio entity in our shape. kio renames and retypes some fields (``throttle_time_ms``
    becomes a ``timedelta`` named ``throttle_time``, error codes an enum, an all-zero
    UUID ``None``), so fields are matched by position among those present at ``version``."""
    present = [f for f in fields if in_range(version, f.versions)]
    kio_fields = dataclasses.fields(entity)  # type: ignore[arg-type]
    assert len(kio_fields) == len(present), [k.name for k in kio_fields]
    out = {}
    for f, kf in zip(present, kio_fields, strict=True):
        kio_type = kf.metadata.get("kafka_type")
        out[f.name] = _kio_value(getattr(entity, kf.name), f, kio_type, version)
    return out


def _kio_value(value: object, f: FieldSpec, kio_type: str | None, version: int) -> object:
    if value is None:
        if f.type == "uuid":
            return ZERO_UUID  # kio reads the all-zero UUID as None
        if kio_type == "datetime_i64":
            return -1  # kio's "no timestamp" for an int64 timestamp field holding -1
        return None
    if f.is_struct:
        if f.is_array:
            return [_kio_plain(item, f.fields, version) for item in value]  # type: ignore[attr-defined]
        return _kio_plain(value, f.fields, version)
    if f.is_array:
        element = _element(f)
        return [_kio_value(item, element, kio_type, version) for item in value]  # type: ignore[attr-defined]
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)  # kio's own conversion to milliseconds
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    return value


def _element(f: FieldSpec) -> FieldSpec:
    return dataclasses.replace(f, type=f.element_type)


def _present_only(fields: tuple[FieldSpec, ...], version: int, value: dict) -> dict:
    out = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        item = _plain(value[f.name])
        if item is not None and f.is_struct:
            if f.is_array:
                item = [_present_only(f.fields, version, e) for e in item]
            else:
                item = _present_only(f.fields, version, item)
        out[f.name] = item
    return out


_TIMESTAMP_MAX_MS = 253402300799000  # 9999-12-31T23:59:59Z, the end of Python's datetime


def _kio_domain(kio_type: str | None, optional: bool) -> message_values.Special:
    """kio types some int fields more narrowly than Kafka's wire does: error codes must be
    ones it knows, timestamps non-negative (-1 is its None), durations must fit a
    ``timedelta``. Values outside those are valid Kafka but not kio input, so the
    ours-to-kio direction stays inside them; everything else uses our generator."""
    if kio_type == "error_code":
        codes = sorted(code.value for code in kio_errors.ErrorCode)
        return lambda _f, rng: rng.choice(codes)
    if kio_type == "datetime_i64":
        def stamp(_f: FieldSpec, rng: random.Random) -> int:
            if optional and rng.random() < 0.25:
                return -1
            return message_values.integer(0, _TIMESTAMP_MAX_MS, rng)
        return stamp
    if kio_type == "timedelta_i64":
        return lambda _f, rng: message_values.integer(-(10**15), 10**15, rng)
    return None


def _kio_nested(annotation: object) -> type:
    """The entity class inside ``tuple[X, ...] | None`` and the like."""
    if dataclasses.is_dataclass(annotation):
        return annotation  # type: ignore[return-value]
    for arg in typing.get_args(annotation):
        if arg is not type(None) and arg is not Ellipsis:
            try:
                return _kio_nested(arg)
            except LookupError:
                continue
    raise LookupError(f"no entity type in {annotation!r}")


def kio_domain_value(cls: type, fields: tuple[FieldSpec, ...], version: int,
                     rng: random.Random) -> dict:
    """A value of our shape that kio's entity ``cls`` can hold (see ``_kio_domain``)."""
    present = [f for f in fields if in_range(version, f.versions)]
    kio_fields = dataclasses.fields(cls)
    assert len(kio_fields) == len(present)
    value = {}
    for f, kf in zip(present, kio_fields, strict=True):
        nullable = in_range(version, f.nullable_versions)
        if f.is_struct:
            nested = _kio_nested(kf.type)
            if nullable and rng.random() < 0.2:
                value[f.name] = None
            elif f.is_array:
                value[f.name] = [kio_domain_value(nested, f.fields, version, rng)
                                 for _ in range(rng.randint(0, 3))]
            else:
                value[f.name] = kio_domain_value(nested, f.fields, version, rng)
            continue
        special = _kio_domain(kf.metadata.get("kafka_type"), type(None) in typing.get_args(kf.type))
        value[f.name] = message_values.field_value(f, version, rng, special)
    return value


def kio_message_value(name: str, version: int, rng: random.Random) -> dict:
    return kio_domain_value(_kio_class(name, version), load_message(name).fields, version, rng)


@pytest.mark.parametrize(("name", "version"), ADVERTISED, ids=IDS)
def test_kio_reads_and_writes_our_bytes(name: str, version: int) -> None:
    codec = message_codec(name, version)
    cls = _kio_class(name, version)
    draw = functools.partial(kio_message_value, name, version)
    for number, value in examples(name, version, draw):
        ours = codec.encode(value)
        entity, end = kio_serial.entity_reader(cls)(ours, 0)
        assert end == len(ours), number
        assert _kio_plain(entity, codec.spec.fields, version) == _present_only(
            codec.spec.fields, version, value
        ), number
        assert _kio_write(cls, entity) == ours, number


@functools.cache
def kio_entity_strategy(cls: type) -> st.SearchStrategy:
    """Random kio entities built from kio's own dataclasses and value types (not from our
    reading of the definitions), with arrays capped at three elements to stay fast."""
    hints = typing.get_type_hints(cls)
    return st.builds(
        cls, **{f.name: _kio_type_strategy(hints[f.name]) for f in dataclasses.fields(cls)}
    )


def _kio_type_strategy(annotation: object) -> st.SearchStrategy:
    if dataclasses.is_dataclass(annotation):
        return kio_entity_strategy(annotation)  # type: ignore[arg-type]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple:
        return st.lists(_kio_type_strategy(args[0]), max_size=3).map(tuple)
    if type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        return st.one_of(st.none(), _kio_type_strategy(inner))
    return st.from_type(annotation)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "version"), ADVERTISED, ids=IDS)
@EXAMPLES
@given(data=st.data())
def test_we_read_and_write_kio_bytes(name: str, version: int, data: st.DataObject) -> None:
    codec = message_codec(name, version)
    cls = _kio_class(name, version)
    entity = data.draw(kio_entity_strategy(cls))
    theirs = _kio_write(cls, entity)
    decoded, end = codec.decode(memoryview(theirs))
    assert end == len(theirs)
    assert _present_only(codec.spec.fields, version, decoded) == _kio_plain(
        entity, codec.spec.fields, version
    )
    assert codec.encode(decoded) == theirs


# --- encoder behaviour the oracles do not cover ----------------------------------------------


def test_missing_fields_take_the_definitions_defaults() -> None:
    codec = message_codec("MetadataRequest", 12)
    decoded, _ = codec.decode(memoryview(codec.encode({"topics": None})))
    assert decoded == {
        "topics": None,
        "allow_auto_topic_creation": True,  # the definition's "default": "true"
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def test_fields_absent_from_a_version_decode_to_their_defaults() -> None:
    codec = message_codec("MetadataResponse", 0)
    decoded, _ = codec.decode(memoryview(codec.encode({"brokers": [], "topics": []})))
    assert decoded["throttle_time_ms"] == 0  # added in v3
    assert decoded["cluster_id"] is None  # added in v2, default "null"
    assert decoded["controller_id"] == -1  # added in v1, default "-1"


def test_tagged_field_at_its_default_is_not_written() -> None:
    codec = message_codec("ApiVersionsResponse", 3)
    plain = codec.encode({"api_keys": []})
    assert plain.endswith(b"\x00")  # an empty tagged-field section
    tagged = codec.encode({"api_keys": [], "zk_migration_ready": True})
    assert len(tagged) > len(plain)
    assert codec.decode(memoryview(tagged))[0]["zk_migration_ready"] is True


def test_unknown_tags_are_skipped() -> None:
    codec = message_codec("ApiVersionsRequest", 3)
    body = codec.encode({"client_software_name": "a", "client_software_version": "1"})
    assert body.endswith(b"\x00")
    with_unknown = body[:-1] + b"\x01" + b"\x63\x03xyz"  # one tag 99 carrying three bytes
    decoded, end = codec.decode(memoryview(with_unknown))
    assert end == len(with_unknown)
    assert decoded["client_software_name"] == "a"


def test_value_out_of_range_is_an_encode_error() -> None:
    codec = message_codec("MetadataRequest", 0)
    with pytest.raises(EncodeError):
        codec.encode({"topics": [{"name": 5}]})
    with pytest.raises(EncodeError):
        message_codec("FindCoordinatorRequest", 1).encode({"key": "g", "key_type": 300})
    with pytest.raises(EncodeError):
        message_codec("HeartbeatRequest", 0).encode({"generation_id": 2**31})


def test_decoded_records_are_a_view_into_the_frame() -> None:
    codec = message_codec("ProduceRequest", 9)
    payload = b"R" * 100
    frame = bytearray(
        codec.encode(
            {
                "acks": -1,
                "timeout_ms": 1000,
                "topic_data": [
                    {"name": "t", "partition_data": [{"index": 0, "records": payload}]}
                ],
            }
        )
    )
    decoded, _ = codec.decode(memoryview(frame))
    records = decoded["topic_data"][0]["partition_data"][0]["records"]
    assert isinstance(records, memoryview)
    assert records.obj is frame  # no copy: Produce patches batches in place
    frame[frame.index(payload)] = ord("X")
    assert records[0] == ord("X")


class _Region:
    """A stand-in file region: anything with an int ``length``."""

    def __init__(self, length: int) -> None:
        self.length = length


def test_large_records_and_regions_travel_as_their_own_chunks() -> None:
    codec = message_codec("FetchResponse", 12)
    big = b"B" * INLINE_RECORDS_LIMIT
    region = _Region(5000)
    small = b"s" * 10

    def response(records: object) -> dict:
        partition = {"partition_index": 0, "records": records}
        return {"responses": [{"topic": "t", "partitions": [partition]}]}

    out = Output()
    codec.encode_into(out, response([small, big, region]))
    chunks = out.finish()
    assert [type(c) for c in chunks] == [bytes, bytes, _Region, bytes]
    assert chunks[1] is big and chunks[2] is region  # handed out, not copied
    assert chunks[0].endswith(small)  # small parts are copied inline

    # Filling the region with bytes gives the same frame as an all-inline encode.
    filler = b"r" * region.length
    inline = codec.encode(response([small, big, filler]))
    assert chunks[0] + chunks[1] + filler + chunks[3] == inline
    decoded, _ = codec.decode(memoryview(inline))
    records = decoded["responses"][0]["partitions"][0]["records"]
    assert records.tobytes() == small + big + filler

    with pytest.raises(EncodeError):
        codec.encode(response([region]))  # a region needs an Output to travel uncopied


def test_defaults_are_fresh_objects_on_every_decode() -> None:
    """Defaults come from precomputed templates; handlers may mutate what they get."""
    codec = message_codec("FetchResponse", 12)
    partition = {"partition_index": 0, "records": None}
    encoded = codec.encode({"responses": [{"topic": "t", "partitions": [partition]}]})
    first, _ = codec.decode(memoryview(encoded))
    decoded_partition = first["responses"][0]["partitions"][0]
    assert decoded_partition["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert decoded_partition["current_leader"] == {"leader_id": -1, "leader_epoch": -1}
    decoded_partition["diverging_epoch"]["epoch"] = 7
    decoded_partition["current_leader"]["leader_id"] = 3
    old, _ = message_codec("ProduceResponse", 8).decode(
        memoryview(message_codec("ProduceResponse", 8).encode({"responses": []}))
    )
    old["node_endpoints"].append("mutated")  # absent in v8: a default list

    second, _ = codec.decode(memoryview(encoded))
    again = second["responses"][0]["partitions"][0]
    assert again["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert again["current_leader"] == {"leader_id": -1, "leader_epoch": -1}
    assert again["diverging_epoch"] is not decoded_partition["diverging_epoch"]
    fresh, _ = message_codec("ProduceResponse", 8).decode(
        memoryview(message_codec("ProduceResponse", 8).encode({"responses": []}))
    )
    assert fresh["node_endpoints"] == []
    responses = next(f for f in load_message("FetchResponse").fields if f.name == "responses")
    assert default_value(responses, 12) == []
    assert default_value(responses, 12) is not default_value(responses, 12)
