"""The client side of one Kafka connection, sans I/O (the mirror of ``connection.py``).

A broker talking to another broker (a follower fetching from its leader) is a
Kafka client. ``send_request`` encodes a request frame and remembers which API
and version each correlation id carries, because a response names neither:
its header is decoded by the version of the request it answers (header v1,
with tagged fields, for flexible versions; v0 otherwise and always for
ApiVersions, KIP-511). ``receive_data`` buffers what the socket produced and
``next_response`` hands back whole decoded responses or ``NEED_DATA``. No
sockets, no trio: the transport (``broker/cluster/peer_client.py``) owns I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkette.wire import primitives as p
from kafkette.wire.apis import ApiKey, api_spec
from kafkette.wire.codec import message_codec
from kafkette.wire.connection import NEED_DATA, _NeedData, announced_frame_size
from kafkette.wire.exceptions import MalformedFrameError
from kafkette.wire.schema import load_message

__all__ = ["NEED_DATA", "ClientConnection", "Response"]

# A follower asks for replica.fetch.response.max.bytes (10 MiB) at most; a frame far
# beyond what any request of ours can produce means the stream is out of sync.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class _Pending:
    correlation_id: int
    api_key: int
    api_version: int


@dataclass(slots=True)
class Response:
    """One decoded response: ``body`` keys are the definition's snake_case names.

    ``frame`` keeps alive the bytes that ``records`` memoryviews point into.
    """

    correlation_id: int
    api_key: int
    api_version: int
    body: dict
    frame: bytearray


def request_header_flexible(api_key: int, api_version: int) -> bool:
    """Request header v2 (tagged fields) for flexible versions; ApiVersions from v3."""
    api = api_spec(api_key)
    if api is None:
        raise ValueError(f"unknown api key {api_key}")
    if api_key == ApiKey.API_VERSIONS:
        return api_version >= 3
    return load_message(api.request_definition).is_flexible(api_version)


def response_header_flexible(api_key: int, api_version: int) -> bool:
    """Response header v1 for flexible versions, except ApiVersions (always v0)."""
    if api_key == ApiKey.API_VERSIONS:
        return False
    return request_header_flexible(api_key, api_version)


class ClientConnection:
    """Encodes requests and matches responses to them, in order.

    Kafka answers the requests of one connection in the order they were sent,
    so a response whose correlation id is not the oldest pending one means the
    stream is broken: ``MalformedFrameError``, and the caller closes the
    connection (as after any error here).
    """

    def __init__(self, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.max_response_bytes = max_response_bytes
        self._buffer = bytearray()
        self._pending: list[_Pending] = []
        self._next_correlation_id = 0

    @property
    def in_flight(self) -> int:
        """Requests sent whose responses have not been handed out yet."""
        return len(self._pending)

    def send_request(
        self, api_key: int, api_version: int, body: dict, client_id: str | None = None
    ) -> bytes:
        """The whole frame (size prefix included) of one request; the caller writes it."""
        api = api_spec(api_key)
        if api is None:
            raise ValueError(f"unknown api key {api_key}")
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        out = bytearray(b"\0\0\0\0")
        p.write_int16(out, api_key)
        p.write_int16(out, api_version)
        p.write_int32(out, correlation_id)
        p.write_string(out, client_id)  # the header's client_id is never compact
        if request_header_flexible(api_key, api_version):
            out.append(0)  # no tagged fields
        message_codec(api.request_definition, api_version).encode_into(out, body)
        _SIZE.pack_into(out, 0, len(out) - 4)
        self._pending.append(_Pending(correlation_id, api_key, api_version))
        return bytes(out)

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    def next_response(self) -> Response | _NeedData:
        """The next whole response, or NEED_DATA. Raises ``MalformedFrameError``."""
        size = announced_frame_size(
            self._buffer, self.max_response_bytes, minimum=4, what="response frame"
        )
        if size is None or len(self._buffer) < 4 + size:
            return NEED_DATA
        if not self._pending:
            raise MalformedFrameError("a response arrived with no request pending")
        frame = self._buffer[4 : 4 + size]
        del self._buffer[: 4 + size]
        pending = self._pending.pop(0)
        view = memoryview(frame)
        correlation_id = _SIZE.unpack_from(view, 0)[0]
        if correlation_id != pending.correlation_id:
            raise MalformedFrameError(
                f"response correlation id {correlation_id}, expected {pending.correlation_id}"
            )
        pos = 4
        if response_header_flexible(pending.api_key, pending.api_version):
            pos = _skip_tagged_fields(view, pos)
        api = api_spec(pending.api_key)
        assert api is not None  # checked when sent
        codec = message_codec(api.response_definition, pending.api_version)
        body, _ = codec.decode(view, pos)
        return Response(correlation_id, pending.api_key, pending.api_version, body, frame)


def _skip_tagged_fields(view: memoryview, pos: int) -> int:
    count, pos = p.read_uvarint(view, pos)
    for _ in range(count):
        _, pos = p.read_uvarint(view, pos)
        size, pos = p.read_uvarint(view, pos)
        pos += size
        if pos > len(view):
            raise MalformedFrameError("header tagged field runs past the end of the frame")
    return pos
