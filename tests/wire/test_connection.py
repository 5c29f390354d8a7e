"""Request framing through ``ServerConnection``: headers, buffering, refusals, responses.

Requests come from kafka-python's encoder (what a real client sends) or are laid
out byte by byte here where the test is about exact bytes; responses are read back
with kafka-python's decoder.
"""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from kafkette.wire.apis import SUPPORTED, ApiKey, api_versions_entries
from kafkette.wire.codec import message_codec
from kafkette.wire.connection import NEED_DATA, Request, RequestHeader, ServerConnection
from kafkette.wire.exceptions import (
    FrameTooLargeError,
    MalformedFrameError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kafkette.wire.primitives import ZERO_UUID

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")


def client_frame(request: object, correlation_id: int = 1, client_id: str = "cli") -> bytes:
    """A framed request exactly as kafka-python puts it on the socket."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)  # type: ignore[attr-defined]
    return request.encode(header=True, framed=True)  # type: ignore[attr-defined, no-any-return]


def raw_frame(
    api_key: int,
    version: int,
    body: bytes,
    *,
    correlation_id: int = 1,
    client_id: bytes | None = b"cli",
    flexible: bool = False,
) -> bytes:
    """A framed request laid out by hand: header v1 (or v2 with ``flexible``) + body."""
    header = struct.pack(">hhi", api_key, version, correlation_id)
    header += b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def only_request(data: bytes, **kwargs: int) -> Request:
    connection = ServerConnection(**kwargs)
    connection.receive_data(data)
    request = connection.next_request()
    assert isinstance(request, Request)
    assert connection.next_request() is NEED_DATA
    assert connection.buffered == 0
    return request


def _topic(version: int, name: str) -> object:
    return MetadataRequest.MetadataRequestTopic(version=version, name=name)


def joined(chunks: list[object]) -> bytes:
    return b"".join(chunks)  # type: ignore[arg-type]


# --- request headers --------------------------------------------------------------------------


def test_header_v1_from_kafka_python() -> None:
    frame = client_frame(MetadataRequest[8](topics=[_topic(8, "t")]), 42, "my-client")
    request = only_request(frame)
    assert request.header == RequestHeader(3, 8, 42, "my-client", flexible=False)
    assert request.api.key is ApiKey.METADATA
    assert request.body["topics"] == [{"name": "t", "topic_id": ZERO_UUID}]
    assert request.size == len(frame) - 4


def test_header_v2_from_kafka_python() -> None:
    frame = client_frame(MetadataRequest[12](topics=None), 7, "flex")
    request = only_request(frame)
    assert request.header == RequestHeader(3, 12, 7, "flex", flexible=True)
    assert request.body["topics"] is None


def test_header_v2_client_id_stays_a_classic_string() -> None:
    body = message_codec("MetadataRequest", 12).encode({"topics": []})
    # int16 length 5 then "hello": a compact string would start with uvarint 6.
    frame = raw_frame(3, 12, body, client_id=b"hello", flexible=True)
    assert frame[12:19] == b"\x00\x05hello"
    request = only_request(frame)
    assert request.header.client_id == "hello"
    assert request.body["topics"] == []


def test_null_client_id() -> None:
    body = message_codec("MetadataRequest", 1).encode({"topics": None})
    assert only_request(raw_frame(3, 1, body, client_id=None)).header.client_id is None


def test_header_v2_tagged_fields_are_skipped() -> None:
    body = message_codec("MetadataRequest", 12).encode({"topics": []})
    plain = raw_frame(3, 12, body, flexible=True)
    payload = plain[4:-len(body) - 1] + b"\x01\x05\x02hi" + body  # one tag (5) of two bytes
    request = only_request(struct.pack(">i", len(payload)) + payload)
    assert request.body["topics"] == []


def test_api_versions_v3_request_uses_header_v2() -> None:
    frame = client_frame(
        ApiVersionsRequest[3](client_software_name="kcat", client_software_version="1.7")
    )
    request = only_request(frame)
    assert request.header.flexible
    assert request.body["client_software_name"] == "kcat"


def test_trailing_bytes_after_the_body_are_ignored() -> None:
    body = message_codec("MetadataRequest", 13).encode({"topics": None})
    request = only_request(raw_frame(3, 13, body + b"\x00\x00\x00", flexible=True))
    assert request.body["topics"] is None


# --- buffering --------------------------------------------------------------------------------


def test_partial_frames_are_buffered_byte_by_byte() -> None:
    frame = client_frame(MetadataRequest[9](topics=[_topic(9, "abc")]), 5)
    connection = ServerConnection()
    for byte in frame[:-1]:
        connection.receive_data(bytes([byte]))
        assert connection.next_request() is NEED_DATA
    connection.receive_data(frame[-1:])
    request = connection.next_request()
    assert isinstance(request, Request)
    assert request.header.correlation_id == 5
    assert connection.next_request() is NEED_DATA


def test_several_frames_in_one_chunk() -> None:
    frames = [
        client_frame(MetadataRequest[v](topics=[_topic(v, f"t{v}")]), correlation_id=v)
        for v in (4, 9, 12)
    ]
    connection = ServerConnection()
    connection.receive_data(b"".join(frames) + frames[0][:6])
    got = []
    while (request := connection.next_request()) is not NEED_DATA:
        got.append(request)
    assert [r.header.correlation_id for r in got] == [4, 9, 12]  # type: ignore[union-attr]
    assert [r.body["topics"][0]["name"] for r in got] == ["t4", "t9", "t12"]  # type: ignore[union-attr]
    assert connection.buffered == 6
    connection.receive_data(frames[0][6:])
    assert connection.next_request().header.correlation_id == 4  # type: ignore[union-attr]


@pytest.mark.parametrize("trailing", [b"", b"\0\0"], ids=["exact-frame", "frame-and-more"])
def test_frame_bytes_are_owned_by_the_request(trailing: bytes) -> None:
    """The request's records views point into its own frame, not the connection's buffer.

    A buffer holding exactly one frame is handed over without a copy; one holding more is
    sliced. Either way later data must not disturb a decoded request.
    """
    codec = message_codec("ProduceRequest", 9)
    partition = {"index": 0, "records": b"batch-bytes"}
    body = codec.encode({"acks": 1, "topic_data": [{"name": "t", "partition_data": [partition]}]})
    connection = ServerConnection()
    connection.receive_data(raw_frame(0, 9, body, flexible=True) + trailing)
    request = connection.next_request()
    assert isinstance(request, Request)
    assert request.size == len(raw_frame(0, 9, body, flexible=True)) - 4
    assert connection.buffered == len(trailing)
    connection.receive_data(b"\xee" * 64)  # more data must not disturb the decoded request
    records = request.body["topic_data"][0]["partition_data"][0]["records"]
    frame = request.frame
    owner = frame.obj if isinstance(frame, memoryview) else frame
    assert records.obj is owner
    assert owner is not connection._buffer
    assert records.tobytes() == b"batch-bytes"
    records[0:5] = b"BATCH"  # produce patches offsets in place: the view must be writable
    assert bytes(frame).count(b"BATCH-bytes") == 1


# --- refusals ---------------------------------------------------------------------------------


def test_unknown_api_key() -> None:
    with pytest.raises(UnknownApiKeyError) as caught:
        only_request(raw_frame(999, 0, b""))  # no API has this key
    assert caught.value.api_key == 999
    with pytest.raises(UnknownApiKeyError):
        only_request(raw_frame(-1, 0, b""))


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(3, 14), (1, 3), (66, 2), (0, 0), (0, 2), (0, 14), (17, 2), (8, 11), (9, 11)],
)
def test_unsupported_version_carries_the_header(api_key: int, version: int) -> None:
    connection = ServerConnection()
    connection.receive_data(raw_frame(api_key, version, b"", correlation_id=99, client_id=b"c"))
    with pytest.raises(UnsupportedVersionError) as caught:
        connection.next_request()
    error = caught.value
    assert error.error_code == 35
    assert (error.api_key, error.api_version) == (api_key, version)
    assert error.header.correlation_id == 99  # type: ignore[union-attr]
    assert error.header.client_id == "c"  # type: ignore[union-attr]
    assert connection.buffered == 0  # the frame is consumed: the connection stays usable


def test_every_advertised_version_below_decode_min_is_refused() -> None:
    for api in SUPPORTED.values():
        for version in range(api.min_version, api.decode_min):
            with pytest.raises(UnsupportedVersionError):
                only_request(raw_frame(api.key, version, b""))


def test_unknown_api_versions_version_gets_a_v0_fallback_kafka_python_reads() -> None:
    connection = ServerConnection()
    # A client newer than us: ApiVersions v99 with a header v2 and a body we cannot know.
    connection.receive_data(raw_frame(18, 99, b"\x00future", correlation_id=3, flexible=True))
    with pytest.raises(UnsupportedVersionError) as caught:
        connection.next_request()
    header = caught.value.header
    assert isinstance(header, RequestHeader)
    response = joined(connection.encode_api_versions_fallback(header))
    decoded = ApiVersionsResponse.decode(response, version=4, header=True, framed=True)
    assert decoded.header.correlation_id == 3
    assert decoded.error_code == 35
    advertised = {(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys}
    expected = {(e["api_key"], e["min_version"], e["max_version"]) for e in api_versions_entries()}
    assert advertised == expected
    # v0 layout: size, correlation id, error code, array of 6-byte entries, nothing more.
    assert len(response) == 4 + 4 + 2 + 4 + 6 * len(expected)


def test_frame_larger_than_max_is_refused_from_the_prefix() -> None:
    connection = ServerConnection(max_request_bytes=1000)
    connection.receive_data(struct.pack(">i", 1001))
    with pytest.raises(FrameTooLargeError) as caught:
        connection.next_request()
    assert (caught.value.size, caught.value.limit) == (1001, 1000)
    assert isinstance(caught.value, MalformedFrameError)


def test_frame_of_exactly_max_is_accepted() -> None:
    body = message_codec("MetadataRequest", 1).encode({"topics": None})
    frame = raw_frame(3, 1, body)
    assert only_request(frame, max_request_bytes=len(frame) - 4).body["topics"] is None


def test_default_limit_refuses_a_2_gib_claim_without_allocating() -> None:
    connection = ServerConnection()
    connection.receive_data(b"\x7f\xff\xff\xff")
    with pytest.raises(FrameTooLargeError):
        connection.next_request()


def test_negative_size() -> None:
    connection = ServerConnection()
    connection.receive_data(struct.pack(">i", -5))
    with pytest.raises(MalformedFrameError):
        connection.next_request()


def test_frame_shorter_than_a_header() -> None:
    with pytest.raises(MalformedFrameError):
        only_request(struct.pack(">i", 5) + b"\x00\x03\x00\x01\x00")


def test_truncated_body_is_malformed() -> None:
    body = message_codec("MetadataRequest", 4).encode({"topics": [{"name": "topic"}]})
    with pytest.raises(MalformedFrameError):
        only_request(raw_frame(3, 4, body[:-3]))


# --- responses --------------------------------------------------------------------------------


def _answer(request_frame: bytes, body: dict) -> bytes:
    connection = ServerConnection()
    connection.receive_data(request_frame)
    request = connection.next_request()
    assert isinstance(request, Request)
    return joined(connection.encode_response(request.header, body))


METADATA_BODY = {
    "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
    "cluster_id": "c1",
    "controller_id": 1,
    "topics": [],
}


def test_response_header_v0() -> None:
    response = _answer(client_frame(MetadataRequest[8](topics=None), 11), METADATA_BODY)
    assert response[4:8] == struct.pack(">i", 11)
    assert struct.unpack(">i", response[:4])[0] == len(response) - 4
    decoded = MetadataResponse.decode(response, version=8, header=True, framed=True)
    assert decoded.header.correlation_id == 11
    assert decoded.brokers[0].host == "127.0.0.1"
    assert decoded.cluster_id == "c1"


def test_response_header_v1() -> None:
    response = _answer(client_frame(MetadataRequest[12](topics=None), 12), METADATA_BODY)
    assert response[4:9] == struct.pack(">i", 12) + b"\x00"  # empty header tagged fields
    decoded = MetadataResponse.decode(response, version=12, header=True, framed=True)
    assert decoded.header.correlation_id == 12
    assert decoded.brokers[0].port == 9092


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_header_is_always_v0(version: int) -> None:
    request = ApiVersionsRequest[version]()
    if version >= 3:
        request = ApiVersionsRequest[version](client_software_name="x", client_software_version="1")
    response = _answer(client_frame(request, 13), {"api_keys": api_versions_entries()})
    # After the correlation id comes the body's error code, never a tagged-fields byte.
    assert response[4:10] == struct.pack(">ih", 13, 0)
    decoded = ApiVersionsResponse.decode(response, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == 13
    assert len(decoded.api_keys) == len(api_versions_entries())


def test_response_size_prefix_counts_uncopied_parts() -> None:
    class Region:
        length = 70000

    request = client_frame(
        _fetch_request(), correlation_id=21
    )
    connection = ServerConnection()
    connection.receive_data(request)
    parsed = connection.next_request()
    assert isinstance(parsed, Request)
    region = Region()
    partition = {"partition_index": 0, "high_watermark": 5, "records": [region]}
    body = {"responses": [{"topic": "t", "partitions": [partition]}]}
    chunks = connection.encode_response(parsed.header, body)
    assert any(chunk is region for chunk in chunks)
    total = sum(c.length if c is region else len(c) for c in chunks)  # type: ignore[arg-type]
    assert struct.unpack(">i", chunks[0][:4])[0] == total - 4  # type: ignore[index]


def _fetch_request() -> object:
    from kafka.protocol.consumer import FetchRequest

    return FetchRequest[12](
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[],
    )
