"""A connection from this broker to another one, for replication requests.

A follower is a Kafka client of its leader. This is the transport around the
sans-I/O ``ClientConnection``: it opens a TCP stream on first use, sends one
request at a time and reads until its response is whole. Timeouts belong to
the caller (``trio.fail_after`` around ``request``), as everywhere in the
broker; a request that is cancelled, or fails in any way, leaves the stream in
an unknown state, so the connection is closed and the next request opens a
new one. Backing off between attempts is the caller's choice too (the fetcher
waits ``replica.fetch.backoff.ms``).
"""

from __future__ import annotations

import trio

from kafkette.wire.client_connection import NEED_DATA, ClientConnection, Response
from kafkette.wire.exceptions import MalformedFrameError

RECEIVE_CHUNK = 256 * 1024


class PeerError(Exception):
    """The peer could not be reached or broke the stream; the connection is closed."""


class PeerClient:
    """One connection to ``host:port``, one request in flight. Event loop only."""

    def __init__(self, host: str, port: int, client_id: str, max_response_bytes: int) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._max_response_bytes = max_response_bytes
        self._stream: trio.SocketStream | None = None
        self._conn: ClientConnection | None = None
        self._lock = trio.Lock()

    async def request(self, api_key: int, api_version: int, body: dict) -> Response:
        """Send one request and return its decoded response; ``PeerError`` on failure."""
        async with self._lock:
            done = False
            try:
                response = await self._exchange(api_key, api_version, body)
                done = True
                return response
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise PeerError(f"{self.host}:{self.port}: {exc}") from exc
            except MalformedFrameError as exc:
                raise PeerError(f"{self.host}:{self.port}: bad response: {exc}") from exc
            finally:
                if not done:  # cancelled or failed half way: the stream is out of sync
                    self._close_now()

    async def _exchange(self, api_key: int, api_version: int, body: dict) -> Response:
        if self._stream is None or self._conn is None:
            self._stream = await trio.open_tcp_stream(self.host, self.port)
            self._conn = ClientConnection(self._max_response_bytes)
        stream, conn = self._stream, self._conn
        await stream.send_all(conn.send_request(api_key, api_version, body, self.client_id))
        while True:
            response = conn.next_response()
            if response is not NEED_DATA:
                assert isinstance(response, Response)
                return response
            data = await stream.receive_some(RECEIVE_CHUNK)
            if not data:
                raise PeerError(f"{self.host}:{self.port} closed the connection")
            conn.receive_data(data)

    def _close_now(self) -> None:
        stream, self._stream, self._conn = self._stream, None, None
        if stream is not None:
            # SocketStream.aclose does no I/O that could block; closing the socket
            # synchronously is what a cancelled caller needs.
            stream.socket.close()

    async def aclose(self) -> None:
        self._close_now()
