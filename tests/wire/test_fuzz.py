"""Fuzzing the request decoder: garbage in, only ``ProtocolError`` out.

Random bytes and mutated valid frames (bit flips, truncation, inserted bytes, huge
length and count fields) of every served (API, version) go through
``ServerConnection`` and ``parse_request``. Anything else escaping (``struct.error``,
``IndexError``, ``UnicodeDecodeError``, ``MemoryError``...) is a bug, as is a decode
that allocates in proportion to a length it has not checked against the frame.
"""

from __future__ import annotations

import functools
import struct
import tracemalloc
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkette.wire.apis import SUPPORTED
from kafkette.wire.codec import message_codec
from kafkette.wire.connection import NEED_DATA, Request, ServerConnection, parse_request
from kafkette.wire.exceptions import MalformedFrameError, ProtocolError
from kafkette.wire.schema import FieldSpec, in_range, load_message

FUZZ = settings(
    max_examples=300,
    deadline=2000,  # milliseconds: generous, only there to turn a hang into a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SAMPLE_SCALARS: dict[str, object] = {
    "int8": 1,
    "int16": 2,
    "uint16": 3,
    "int32": 4,
    "uint32": 5,
    "int64": 6,
    "float64": 0.5,
    "bool": True,
    "string": "str",
    "bytes": b"by",
    "records": b"R" * 24,
    "uuid": uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF),
}


def sample_value(fields: tuple[FieldSpec, ...], version: int) -> dict:
    """A message with every present field set and two elements in every array, so that
    every length, count and tag position of the layout appears in the frame."""
    out: dict[str, object] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        element = (
            sample_value(f.fields, version) if f.is_struct else SAMPLE_SCALARS[f.element_type]
        )
        out[f.name] = [element, element] if f.is_array else element
    return out


def _frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    header = struct.pack(">hhih", api_key, version, 77, 3) + b"fuz"
    if flexible:
        header += b"\x00"
    return header + body


@functools.cache
def valid_frames() -> list[bytes]:
    """One frame (without size prefix) per served request (API, version)."""
    frames = []
    for api in SUPPORTED.values():
        definition = load_message(api.request_definition)
        for version in range(api.decode_min, api.max_version + 1):
            codec = message_codec(api.request_definition, version)
            body = codec.encode(sample_value(definition.fields, version))
            flexible = codec.flexible or (api.name == "ApiVersions" and version >= 3)
            frames.append(_frame(api.key, version, body, flexible))
    return frames


def test_every_sample_frame_decodes() -> None:
    """The fuzz corpus itself is valid, so mutations start from real layouts."""
    for frame in valid_frames():
        request = parse_request(bytearray(frame))
        assert request.header.correlation_id == 77
        assert request.header.client_id == "fuz"


def _drain(connection: ServerConnection) -> None:
    """Pull requests until NEED_DATA; only ProtocolError may come out."""
    for _ in range(10_000):
        try:
            result = connection.next_request()
        except MalformedFrameError:
            return  # the stream is out of sync: a broker closes the connection here
        except ProtocolError:
            continue  # refused with an error code; the frame is consumed
        if result is NEED_DATA:
            return
        assert isinstance(result, Request)
    pytest.fail("the connection never ran out of requests")


def _parse(frame: bytes) -> None:
    try:
        parse_request(bytearray(frame))
    except ProtocolError:
        pass


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    connection = ServerConnection(max_request_bytes=1 << 16)
    connection.receive_data(data)
    _drain(connection)
    _parse(data)


@FUZZ
@given(st.binary(min_size=8, max_size=400))
def test_random_bodies_behind_valid_headers(data: bytes) -> None:
    """Garbage where the body should be, for whichever API the first bytes pick."""
    apis = list(SUPPORTED.values())
    api = apis[data[0] % len(apis)]
    version = api.decode_min + data[1] % (api.max_version - api.decode_min + 1)
    flexible = message_codec(api.request_definition, version).flexible
    _parse(_frame(api.key, version, data[2:], flexible))


def _mutate(frame: bytes, data: st.DataObject) -> bytes:
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "huge", "delete"]))
    position = data.draw(st.integers(0, len(frame) - 1))
    if kind == "flip":
        bit = data.draw(st.integers(0, 7))
        return frame[:position] + bytes([frame[position] ^ (1 << bit)]) + frame[position + 1 :]
    if kind == "truncate":
        return frame[:position]
    if kind == "delete":
        return frame[:position] + frame[position + data.draw(st.integers(1, 8)) :]
    if kind == "insert":
        return frame[:position] + data.draw(st.binary(min_size=1, max_size=8)) + frame[position:]
    huge = data.draw(
        st.sampled_from(
            [
                b"\x7f\xff\xff\xff",  # int32 length or count
                b"\x7f\xff",  # int16 string length
                b"\xff\xff\xff\xff\x0f",  # uvarint 2**32 - 1: compact length or count
                b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # uvarint 2**64 - 1
                b"\x80\x00\x00\x00",  # int32 minimum
            ]
        )
    )
    return frame[:position] + huge + frame[position + len(huge) :]


@FUZZ
@given(data=st.data())
def test_mutated_frames(data: st.DataObject) -> None:
    frame = _mutate(data.draw(st.sampled_from(valid_frames())), data)
    _parse(frame)
    connection = ServerConnection(max_request_bytes=1 << 16)
    connection.receive_data(struct.pack(">i", len(frame)) + frame)
    _drain(connection)


@FUZZ
@given(data=st.data())
def test_mutated_stream_with_size_prefixes(data: st.DataObject) -> None:
    """Mutations that also hit the size prefixes of several frames in one stream."""
    frames = data.draw(st.lists(st.sampled_from(valid_frames()), min_size=1, max_size=3))
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    connection = ServerConnection(max_request_bytes=1 << 16)
    mutated = _mutate(stream, data)
    split = data.draw(st.integers(0, len(mutated)))
    connection.receive_data(mutated[:split])
    _drain(connection)
    connection.receive_data(mutated[split:])
    _drain(connection)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_huge_claims_allocate_nothing_proportional(data: st.DataObject) -> None:
    """A huge length or count anywhere in a frame is refused before anything of that
    size is allocated: peak memory stays a small multiple of the frame itself."""
    frame = _mutate(data.draw(st.sampled_from(valid_frames())), data)
    tracemalloc.start()
    try:
        _parse(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024 + 200 * len(frame)


@pytest.mark.parametrize(
    ("definition", "version", "claim"),
    [
        ("MetadataRequest", 4, struct.pack(">i", 2**31 - 1)),  # classic array count
        ("MetadataRequest", 12, b"\xff\xff\xff\xff\x0f"),  # compact array count
        ("MetadataRequest", 12, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),  # 10-byte uvarint
    ],
)
def test_huge_array_counts_are_refused(definition: str, version: int, claim: bytes) -> None:
    codec = message_codec(definition, version)
    body = claim + b"\x00" * 16
    tracemalloc.start()
    try:
        with pytest.raises(MalformedFrameError):
            codec.decode(memoryview(body))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


def test_huge_tag_count_is_refused() -> None:
    codec = message_codec("ApiVersionsRequest", 3)
    body = b"\x02a\x021" + b"\xff\xff\xff\xff\x0f" + b"\x00" * 4
    with pytest.raises(MalformedFrameError):
        codec.decode(memoryview(body))


def test_tag_longer_than_the_frame_is_refused() -> None:
    codec = message_codec("ApiVersionsRequest", 3)
    body = b"\x02a\x021" + b"\x01\x00\xff\xff\xff\xff\x0f" + b"x"
    with pytest.raises(MalformedFrameError):
        codec.decode(memoryview(body))
