"""The definitions kafka-python lacks (``wire/supplement``) against kio's, field by field.

kio generates its classes from Kafka's own JSON, independently of our notation: every
field of every version must match in name, order, wire type, array-ness, nullability and
default. (tests/wire/test_codec.py then round-trips random messages through kio's codec.)
"""

from __future__ import annotations

import dataclasses
import datetime
import typing

# kio (PyPI) is the independent oracle and a test dependency: missing, the tests fail.
import kio.index as kio_index
import pytest

from kafkette.wire import supplement
from kafkette.wire.schema import FieldSpec, in_range, load_message, schema_folder

# kio's kafka_type for each of Kafka's scalar types (it retypes some, e.g. durations).
_KIO_TYPES = {
    "int8": {"int8"},
    "int16": {"int16", "error_code"},
    "uint16": {"uint16"},
    "int32": {"int32", "timedelta_i32"},
    "int64": {"int64", "timedelta_i64", "datetime_i64"},
    "string": {"string"},
    "bool": {"bool"},
    "uuid": {"uuid"},
    "bytes": {"bytes"},
    "records": {"records"},
}

# The APIs the supplement defines, request and response each: those kafka-python lacks.
SUPPLEMENT_APIS = frozenset(
    {
        "ConsumerGroupHeartbeat",  # consumer_groups
        "ConsumerGroupDescribe",
        "GetTelemetrySubscriptions",  # telemetry
        "PushTelemetry",
        "ShareGroupHeartbeat",  # share_groups
        "ShareGroupDescribe",
        "ShareFetch",
        "ShareAcknowledge",
        "InitializeShareGroupState",
        "ReadShareGroupState",
        "WriteShareGroupState",
        "DeleteShareGroupState",
        "ReadShareGroupStateSummary",
        "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets",
        "StreamsGroupHeartbeat",  # streams_groups
        "StreamsGroupDescribe",
        "CreateDelegationToken",  # delegation_tokens
        "RenewDelegationToken",
        "ExpireDelegationToken",
        "DescribeDelegationToken",
        "UnregisterBroker",  # kraft_admin
        "AddRaftVoter",
        "RemoveRaftVoter",
    }
)

# Every valid version: some start above 0 (Kafka 4.0 removed the delegation tokens' v0,
# Kafka 4.1 the share-group APIs' early-access v0).
MESSAGES = [
    (name, version)
    for name in sorted(supplement.names())
    for version in range(
        load_message(name).valid_versions[0], load_message(name).valid_versions[1] + 1
    )
]


def _kio_class(name: str, version: int) -> type:
    spec = load_message(name)
    if spec.kind == "request":
        return kio_index.load_request_schema(spec.api_key, version)
    return kio_index.load_response_schema(spec.api_key, version)


def _nested(annotation: object) -> type | None:
    if dataclasses.is_dataclass(annotation):
        return annotation  # type: ignore[return-value]
    for arg in typing.get_args(annotation):
        found = _nested(arg)
        if found is not None:
            return found
    return None


def _kio_default(kf: dataclasses.Field) -> object:
    value = kf.default
    if value is dataclasses.MISSING:
        return dataclasses.MISSING
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, tuple):
        return ()
    return value if value is None else int(value) if isinstance(value, int) else value


# kio types milliseconds as timedeltas or datetimes and drops the name's ``_ms`` then
# (``throttle_time_ms`` -> ``throttle_time``); the wire type stays Kafka's int.
_KIO_TIME_TYPES = frozenset({"timedelta_i32", "timedelta_i64", "datetime_i64"})


def _kio_name(f: FieldSpec, kf: dataclasses.Field) -> str:
    if f.name.endswith("_ms") and kf.metadata.get("kafka_type") in _KIO_TIME_TYPES:
        return f.name[: -len("_ms")]
    return f.name


def _compare(fields: tuple[FieldSpec, ...], cls: type, version: int, where: str) -> int:
    present = [f for f in fields if in_range(version, f.versions)]
    kio_fields = dataclasses.fields(cls)
    assert len(kio_fields) == len(present), (where, [kf.name for kf in kio_fields])
    assert [kf.name for kf in kio_fields] == [
        _kio_name(f, kf) for f, kf in zip(present, kio_fields, strict=True)
    ], where
    checked = 0
    for f, kf in zip(present, kio_fields, strict=True):
        at = f"{where}.{f.name}"
        hints = typing.get_type_hints(cls)
        annotation = hints[kf.name]
        args = typing.get_args(annotation)
        kio_nullable = type(None) in args
        is_tuple = typing.get_origin(annotation) is tuple or any(
            typing.get_origin(a) is tuple for a in args
        )
        assert f.is_array == is_tuple, at
        assert f.tag is None and kf.metadata.get("tag") is None, at
        if f.type == "uuid":
            # kio types every uuid optional (the all-zero UUID reads as None); Kafka's
            # generator refuses nullableVersions on a uuid, so ours must have none.
            assert kio_nullable and not in_range(version, f.nullable_versions), at
        else:
            assert in_range(version, f.nullable_versions) == kio_nullable, at
        if f.is_struct:
            nested = _nested(annotation)
            assert nested is not None, at
            checked += _compare(f.fields, nested, version, at)
        else:
            assert kf.metadata["kafka_type"] in _KIO_TYPES[f.element_type], at
        kio_default = _kio_default(kf)
        if kio_default is not dataclasses.MISSING and not f.is_struct:
            ours = () if f.is_array and f.default == () else f.default
            if f.is_array and in_range(version, f.nullable_versions) and kio_default is None:
                assert f.default is None or ours == (), at
            else:
                assert ours == kio_default, at
        checked += 1
    return checked


@pytest.mark.parametrize(("name", "version"), MESSAGES, ids=[f"{n}-v{v}" for n, v in MESSAGES])
def test_supplement_matches_kio(name: str, version: int) -> None:
    spec = load_message(name)
    cls = _kio_class(name, version)
    assert int(cls.__api_key__) == spec.api_key
    assert bool(cls.__flexible__) == spec.is_flexible(version)
    # At least one field compared (GetTelemetrySubscriptionsRequest has only one).
    assert _compare(spec.fields, cls, version, f"{name}v{version}") >= 1


def test_supplement_only_fills_gaps() -> None:
    """kafka-python's own file wins: the supplement is consulted only for missing files."""
    for name in supplement.names():
        assert not schema_folder().joinpath(name + ".json").is_file(), name
    assert supplement.names() == {
        api + kind for api in SUPPLEMENT_APIS for kind in ("Request", "Response")
    }


def test_supplement_versions_match_kio() -> None:
    """kio has a class for the first and last valid version and none just outside them."""
    for name in supplement.names():
        spec = load_message(name)
        low, high = spec.valid_versions
        _kio_class(name, low)
        _kio_class(name, high)
        with pytest.raises(Exception):  # noqa: B017 - kio has no class past the last version
            _kio_class(name, high + 1)
        if low > 0:
            with pytest.raises(Exception):  # noqa: B017 - nor below the first (a removed v0)
                _kio_class(name, low - 1)
