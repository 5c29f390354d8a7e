"""A null where the definition allows none is a malformed request, as in Kafka.

Kafka's generated readers throw "non-nullable field X was serialized as null" and
the broker closes the connection. For every served request (API, version) and
every string, bytes, records or array field at any depth, a message with that one
field null must fail to decode with ``MalformedFrameError`` unless the field is
nullable at that version, in which case the handler gets None.
"""

from __future__ import annotations

import uuid

import pytest

from kafkette.wire.apis import SUPPORTED
from kafkette.wire.codec import message_codec
from kafkette.wire.exceptions import MalformedFrameError
from kafkette.wire.schema import FieldSpec, in_range, load_message

SCALARS: dict[str, object] = {
    "int8": 1,
    "int16": 2,
    "uint16": 3,
    "int32": 4,
    "uint32": 5,
    "int64": 6,
    "float64": 0.5,
    "bool": True,
    "string": "s",
    "bytes": b"b",
    "records": b"r" * 8,
    "uuid": uuid.UUID(int=1),
}
NULLABLE_TYPES = ("string", "bytes", "records")


def _sample(fields: tuple[FieldSpec, ...], version: int) -> dict:
    out: dict[str, object] = {}
    for f in fields:
        if in_range(version, f.versions):
            value = _sample(f.fields, version) if f.is_struct else SCALARS[f.element_type]
            out[f.name] = [value] if f.is_array else value
    return out


def _null_cases(fields: tuple[FieldSpec, ...], version: int, path: tuple[str, ...] = ()):
    """(path, nullable) of every field present at ``version`` that can be encoded as null."""
    for f in fields:
        if not in_range(version, f.versions) or f.tag is not None:
            continue
        here = (*path, f.name)
        if f.is_array or f.element_type in NULLABLE_TYPES:
            yield here, in_range(version, f.nullable_versions)
        if f.is_struct:
            yield from _null_cases(f.fields, version, here)


def _set_null(message: dict, path: tuple[str, ...]) -> None:
    node: object = message
    for name in path[:-1]:
        node = node[name]  # type: ignore[index]
        if isinstance(node, list):
            node = node[0]
    node[path[-1]] = None  # type: ignore[index]


def _get(message: dict, path: tuple[str, ...]) -> object:
    node: object = message
    for name in path:
        if isinstance(node, list):
            node = node[0]
        node = node[name]  # type: ignore[index]
    return node


CASES = [
    pytest.param(
        spec.request_definition,
        version,
        path,
        nullable,
        id=f"{spec.name}-v{version}-" + ".".join(path),
    )
    for spec in SUPPORTED.values()
    for version in range(spec.decode_min, spec.max_version + 1)
    for path, nullable in _null_cases(load_message(spec.request_definition).fields, version)
]


@pytest.mark.parametrize(("definition", "version", "path", "nullable"), CASES)
def test_null_decodes_only_where_the_definition_allows_it(
    definition: str, version: int, path: tuple[str, ...], nullable: bool
) -> None:
    codec = message_codec(definition, version)
    message = _sample(load_message(definition).fields, version)
    _set_null(message, path)
    frame = memoryview(codec.encode(message))
    if nullable:
        decoded, _ = codec.decode(frame)
        assert _get(decoded, path) is None
    else:
        with pytest.raises(MalformedFrameError, match="serialized as null"):
            codec.decode(frame)


def test_array_elements_are_never_null() -> None:
    """``[]string`` elements: a -1 length inside the array is malformed too."""
    codec = message_codec("DescribeGroupsRequest", 0)
    frame = b"\x00\x00\x00\x01" + b"\xff\xff"  # one group id, null
    with pytest.raises(MalformedFrameError, match="serialized as null"):
        codec.decode(memoryview(frame))
