"""The server side of one Kafka connection, sans I/O (in the style of h11).

Feed it the bytes a socket produced with ``receive_data``; ``next_request``
hands back whole decoded requests or ``NEED_DATA``. ``encode_response`` turns
a response dict into the chunks to write: bytes, plus uncopied record parts
(file regions) that the transport sends as it can. No sockets, no trio.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkette.wire import primitives as p
from kafkette.wire.apis import ApiKey, ApiSpec, api_spec, api_versions_entries
from kafkette.wire.codec import Output, message_codec, part_length
from kafkette.wire.exceptions import (
    FrameTooLargeError,
    MalformedFrameError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kafkette.wire.schema import in_range, load_message

DEFAULT_MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes
UNSUPPORTED_VERSION = 35
_SIZE = struct.Struct(">i")
_HEADER_FIXED = struct.Struct(">hhi")


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = _NeedData()


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A request's header fields; ``flexible``: it and its response use tagged fields."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool  # request header v2 and, except for ApiVersions, response header v1


@dataclass(slots=True)
class Request:
    """One decoded request. ``body`` keys are the definition's snake_case field names."""

    header: RequestHeader
    api: ApiSpec
    body: dict
    size: int  # bytes on the wire, without the length prefix
    # Keeps the bytes that body's memoryviews (records) point into.
    frame: bytearray | memoryview = field(repr=False, default_factory=bytearray)
    peer: str = ""  # "host:port" of the client, filled in by the transport
    # Who sent it (the broker's security Session: listener, principal), filled in by the
    # transport; the codec never reads it.
    session: object = None


def _response_header_flexible(header: RequestHeader) -> bool:
    return header.flexible and header.api_key != ApiKey.API_VERSIONS


class ServerConnection:
    """Buffers a peer's bytes and yields its requests in order.

    Frames above ``max_request_bytes`` are refused from their length prefix,
    before anything is allocated for them. After any ``MalformedFrameError``
    the stream is out of sync: the caller closes the connection.
    """

    def __init__(self, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self.max_request_bytes = max_request_bytes
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    def next_frame_size(self) -> int | None:
        """The announced size of the next frame, once its prefix has arrived."""
        return announced_frame_size(self._buffer, self.max_request_bytes)

    def next_request(self) -> Request | _NeedData:
        """The next whole request, or NEED_DATA.

        Raises ``MalformedFrameError`` (close the connection) or
        ``UnsupportedVersionError`` carrying the header (answer it).
        """
        size = self.next_frame_size()
        if size is None or len(self._buffer) < 4 + size:
            return NEED_DATA
        end = 4 + size
        if len(self._buffer) == end:
            # The buffer is exactly this frame (usual for a large request, which is read
            # up to its end): hand the buffer over rather than copy a megabyte.
            whole, self._buffer = self._buffer, bytearray()
            return parse_request(memoryview(whole)[4:])
        frame = self._buffer[4:end]
        del self._buffer[:end]
        return parse_request(frame)

    def next_frame(self) -> bytes | _NeedData:
        """The next whole frame's bytes, undecoded, or NEED_DATA: the bare SASL tokens a
        client sends after SaslHandshake v0 have no request header."""
        size = self.next_frame_size()
        if size is None or len(self._buffer) < 4 + size:
            return NEED_DATA
        frame = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return frame

    @staticmethod
    def encode_frame(payload: bytes) -> bytes:
        """A bare frame: size prefix and payload (a SASL v0 token)."""
        return _SIZE.pack(len(payload)) + payload

    def encode_response(self, header: RequestHeader, body: dict) -> list[object]:
        """Chunks of one response frame: the first holds the size prefix and header."""
        api = api_spec(header.api_key)
        assert api is not None, "responses only answer requests we decoded"
        codec = message_codec(api.response_definition, header.api_version)
        out = Output()
        out += b"\0\0\0\0"
        p.write_int32(out, header.correlation_id)
        if _response_header_flexible(header):
            out.append(0)  # empty tagged fields
        codec.encode_into(out, body)
        return _frame_chunks(out)

    def encode_api_versions_fallback(self, header: RequestHeader) -> list[object]:
        """KIP-511: an ApiVersions version we do not know gets error 35 in a v0 body."""
        codec = message_codec("ApiVersionsResponse", 0)
        out = Output()
        out += b"\0\0\0\0"
        p.write_int32(out, header.correlation_id)
        codec.encode_into(
            out, {"error_code": UNSUPPORTED_VERSION, "api_keys": api_versions_entries()}
        )
        return _frame_chunks(out)

    def encode_unsupported_version(self, header: RequestHeader) -> list[object] | None:
        """UNSUPPORTED_VERSION (35) for a version we do not serve, where it can be said.

        Kafka's definitions know many versions beyond the advertised ranges (Fetch
        13-18, say). When the response at that version has a top-level
        ``error_code``, the answer is that field set to 35 and everything else at
        its default. Otherwise (no such field, or a version no definition knows)
        None: the caller closes the connection, as Kafka's socket server does.
        """
        api = api_spec(header.api_key)
        if api is None:
            return None
        definition = load_message(api.response_definition)
        if not definition.valid_versions[0] <= header.api_version <= definition.valid_versions[1]:
            return None
        if not any(
            f.name == "error_code" and in_range(header.api_version, f.versions)
            for f in definition.fields
        ):
            return None
        return self.encode_response(header, {"error_code": UNSUPPORTED_VERSION})


def announced_frame_size(
    buffer: bytearray, limit: int, minimum: int = 0, what: str = "frame"
) -> int | None:
    """The size prefix of the frame at the start of ``buffer`` (None until its 4 bytes
    arrived), checked against ``minimum`` and ``limit``; both sides of a connection
    read frames this way. Raises ``MalformedFrameError`` / ``FrameTooLargeError``."""
    if len(buffer) < 4:
        return None
    size = _SIZE.unpack_from(buffer, 0)[0]
    if size < minimum:
        raise MalformedFrameError(f"{what} size {size} is below {minimum}")
    if size > limit:
        raise FrameTooLargeError(size, limit)
    return size


def _frame_chunks(out: Output) -> list[object]:
    if not out.chunks:  # all in one buffer (every answer but a Fetch's): size it in place
        _SIZE.pack_into(out, 0, len(out) - 4)
        return out.finish()
    chunks = out.finish()
    total = sum(part_length(c) for c in chunks) - 4
    first = bytearray(chunks[0])  # type: ignore[arg-type]
    _SIZE.pack_into(first, 0, total)
    chunks[0] = bytes(first)
    return chunks


def parse_request(frame: bytearray | memoryview) -> Request:
    """Decode one frame (without its size prefix) into a Request."""
    view = memoryview(frame)
    if len(view) < _HEADER_FIXED.size:
        raise MalformedFrameError("frame shorter than a request header")
    api_key, api_version, correlation_id = _HEADER_FIXED.unpack_from(view, 0)
    api = api_spec(api_key)
    if api is None:
        raise UnknownApiKeyError(api_key)
    definition = load_message(api.request_definition)
    flexible = definition.is_flexible(api_version) or (
        api_key == ApiKey.API_VERSIONS and api_version >= 3
    )
    client_id, pos = p.read_string(view, _HEADER_FIXED.size)
    header = RequestHeader(api_key, api_version, correlation_id, client_id, flexible)  # type: ignore[arg-type]
    if not (api.min_version <= api_version <= api.max_version) or api_version < api.decode_min:
        raise UnsupportedVersionError(api_key, api_version, header)
    if flexible:
        pos = _skip_tagged_fields(view, pos)
    codec = message_codec(api.request_definition, api_version)
    # Bytes after the body are ignored, as Kafka's own parser does: librdkafka
    # sends some (Metadata v13 from librdkafka 2.x carries three).
    body, _ = codec.decode(view, pos)
    return Request(header, api, body, len(frame), frame)


def _skip_tagged_fields(view: memoryview, pos: int) -> int:
    count, pos = p.read_uvarint(view, pos)
    for _ in range(count):
        _, pos = p.read_uvarint(view, pos)
        size, pos = p.read_uvarint(view, pos)
        pos += size
        if pos > len(view):
            raise MalformedFrameError("header tagged field runs past the end of the frame")
    return pos
