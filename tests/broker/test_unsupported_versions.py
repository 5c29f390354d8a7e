"""A version outside the advertised range: error 35 where the protocol can say it, else close.

The requests are laid out by hand (header + body from the codec) on a raw socket,
because real clients never send a version the broker did not advertise.
"""

from __future__ import annotations

import socket
import struct

import pytest

from bench.harness.raw_wire import ConnectionClosed, connect, read_frame
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.codec import message_codec
from kafkette.wire.primitives import write_string, write_uvarint

UNSUPPORTED_VERSION = 35


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    with EmbeddedBroker.start(tmp_path_factory.mktemp("unsupported")) as broker:
        yield broker.bootstrap


def _frame(api_key: int, version: int, correlation_id: int, body: bytes, flexible: bool) -> bytes:
    header = bytearray(struct.pack(">hhi", api_key, version, correlation_id))
    write_string(header, "unsupported-version-test")
    if flexible:
        write_uvarint(header, 0)  # no tagged fields
    payload = bytes(header) + body
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytes | None:
    """One response frame, or None if the broker closed the connection."""
    try:
        return read_frame(sock)
    except ConnectionClosed:
        return None


def _api_versions_still_answered(sock: socket.socket) -> None:
    sock.sendall(_frame(18, 0, 99, b"", flexible=False))
    answer = _read_frame(sock)
    assert answer is not None, "the connection was closed after the refusal"
    assert struct.unpack_from(">i", answer)[0] == 99
    body, _ = message_codec("ApiVersionsResponse", 0).decode(memoryview(answer)[4:])
    assert body["error_code"] == 0


def test_list_transactions_2_gets_unsupported_version_and_the_connection_stays(
    bootstrap,
) -> None:
    """ListTransactions v2 (KIP-1152): a version the definitions know, with a top-level
    error code in its response, that kafkette does not serve (Fetch 18 was the example
    until kafkette served it)."""
    request = message_codec("ListTransactionsRequest", 2).encode({})
    with connect(bootstrap) as sock:
        sock.sendall(_frame(66, 2, 7, request, flexible=True))
        answer = _read_frame(sock)
        assert answer is not None, "v2 closed the connection instead of answering 35"
        correlation_id, tagged_fields = struct.unpack_from(">ib", answer)
        assert (correlation_id, tagged_fields) == (7, 0)  # response header v1
        body, _ = message_codec("ListTransactionsResponse", 2).decode(memoryview(answer)[5:])
        assert body["error_code"] == UNSUPPORTED_VERSION
        assert body["transaction_states"] == []
        _api_versions_still_answered(sock)


@pytest.mark.parametrize(
    ("api_key", "version", "why"),
    [
        (3, 14, "a Metadata version no definition knows"),
        (0, 2, "Produce v2: advertised for librdkafka's sake, never served"),
        (0, 12 + 1, "Produce v13: its response has no top-level error code"),
    ],
)
def test_versions_that_cannot_be_answered_close_the_connection(
    bootstrap, api_key: int, version: int, why: str
) -> None:
    with connect(bootstrap) as sock:
        sock.sendall(_frame(api_key, version, 5, b"\x00" * 16, flexible=version >= 9))
        assert _read_frame(sock) is None, f"expected a closed connection for {why}"
    with connect(bootstrap) as sock:  # the broker itself keeps serving
        _api_versions_still_answered(sock)
