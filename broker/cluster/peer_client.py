"""A connection from this broker to another one, for replication requests.

A follower is a Kafka client of its leader. This is the transport around the
sans-I/O ``ClientConnection``: it opens a TCP stream on first use, sends one
request at a time and reads until its response is whole. Timeouts belong to
the caller (``trio.fail_after`` around ``request``), as everywhere in the
broker; a request that is cancelled, or fails in any way, leaves the stream in
an unknown state, so the connection is closed and the next request opens a
new one. Backing off between attempts is the caller's choice too (the fetcher
waits ``replica.fetch.backoff.ms``).

The connection goes to the other broker's inter-broker listener
(``inter.broker.listener.name`` / ``security.inter.broker.protocol``) and speaks its
protocol: TLS with that listener's ``ssl.*`` settings as a client (truststore, keystore
for mutual TLS, host name check per ``ssl.endpoint.identification.algorithm``), and on
a SASL listener a SaslHandshake and SaslAuthenticate exchange before the first request
(``broker/security/sasl/client.py``). ``PeerSecurity`` carries that: ``Broker.peer_security``,
handed explicitly to whatever makes PeerClients (the replica fetchers, the transaction
marker sender).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.tls_receive import drain_tls_receives
from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import NEED_DATA, ClientConnection, Response
from kafkette.wire.exceptions import MalformedFrameError

if TYPE_CHECKING:
    from kafkette.broker.config import BrokerConfig
    from kafkette.broker.security.listeners import ListenerSpec

RECEIVE_CHUNK = 256 * 1024


@dataclass(frozen=True)
class PeerSecurity:
    """How this broker talks to the others: the inter-broker listener's protocol."""

    tls: ssl.SSLContext | None = None
    # (mechanism, username, password) on a SASL inter-broker listener.
    sasl: tuple[str, str, str] | None = None

    @classmethod
    def for_listener(cls, config: BrokerConfig, listener: ListenerSpec) -> PeerSecurity:
        """From the broker's config; raises ValueError (one line) for what cannot work."""
        protocol = listener.security_protocol
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            from kafkette.broker.security.tls import client_context

            context = client_context(config.explicit, listener)
        sasl = None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            from kafkette.broker.security.sasl.client import inter_broker_credentials

            sasl = inter_broker_credentials(config.explicit, listener.name)
        return cls(context, sasl)


def _reason(exc: BaseException) -> str:
    """What went wrong, TLS failures included (trio wraps them in BrokenResourceError,
    whose own text is empty)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS: {cause.reason}: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or cause}"
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


PLAINTEXT_PEERS = PeerSecurity()


class PeerError(Exception):
    """The peer could not be reached or broke the stream; the connection is closed."""


class PeerClient:
    """One connection to ``host:port``, one request in flight. Event loop only."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        max_response_bytes: int,
        security: PeerSecurity = PLAINTEXT_PEERS,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._max_response_bytes = max_response_bytes
        self.security = security
        self._stream: trio.abc.Stream | None = None
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
                raise PeerError(f"{self.host}:{self.port}: {_reason(exc)}") from exc
            except MalformedFrameError as exc:
                raise PeerError(f"{self.host}:{self.port}: bad response: {exc}") from exc
            finally:
                if not done:  # cancelled or failed half way: the stream is out of sync
                    self._close_now()

    async def _exchange(self, api_key: int, api_version: int, body: dict) -> Response:
        if self._stream is None or self._conn is None:
            self._stream = await self._connect()
            self._conn = ClientConnection(self._max_response_bytes)
            if self.security.sasl is not None:
                await self._authenticate(*self.security.sasl)
        return await self._round_trip(api_key, api_version, body)

    async def _connect(self) -> trio.abc.Stream:
        stream = await trio.open_tcp_stream(self.host, self.port)
        context = self.security.tls
        if context is None:
            return stream
        secured = trio.SSLStream(stream, context, server_hostname=self.host)
        drain_tls_receives(secured)  # a replica fetch answer arrives as many records
        try:
            await secured.do_handshake()
        except BaseException:
            stream.socket.close()
            raise
        return secured

    async def _authenticate(self, mechanism: str, username: str, password: str) -> None:
        """SaslHandshake v1 then SaslAuthenticate round trips (KIP-152), as Kafka's
        inter-broker client does; the exchange itself is broker/security/sasl/client.py."""
        from kafkette.broker.security.sasl.client import SaslClientError, authenticate_client

        handshake = await self._round_trip(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        if handshake.body["error_code"]:
            raise PeerError(
                f"{self.host}:{self.port}: SASL mechanism {mechanism} refused"
                f" (error {handshake.body['error_code']}, enabled:"
                f" {handshake.body.get('mechanisms')})"
            )

        async def exchange(token: bytes) -> bytes:
            answer = await self._round_trip(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
            if answer.body["error_code"]:
                raise SaslClientError(
                    answer.body.get("error_message") or f"error {answer.body['error_code']}"
                )
            return bytes(answer.body["auth_bytes"])

        try:
            await authenticate_client(exchange, mechanism, username, password)
        except SaslClientError as exc:
            raise PeerError(f"{self.host}:{self.port}: SASL authentication failed: {exc}") from exc

    async def _round_trip(self, api_key: int, api_version: int, body: dict) -> Response:
        stream, conn = self._stream, self._conn
        assert stream is not None and conn is not None
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
        if isinstance(stream, trio.SSLStream):
            stream = stream.transport_stream  # no close_notify: the socket just goes
        if isinstance(stream, trio.SocketStream):
            # SocketStream.aclose does no I/O that could block; closing the socket
            # synchronously is what a cancelled caller needs.
            stream.socket.close()

    async def aclose(self) -> None:
        self._close_now()
