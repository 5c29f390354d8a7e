"""Listening sockets for the broker's HTTP servers (the web console, the schema registry).

Each server binds its socket itself, before hypercorn starts, so that a busy port is one
clear ``StartupError`` line, port 0 gives a known port, and the address is known before
anything is announced. ``BoundConfig`` then hands that socket (and, for HTTPS, a context
the broker built from its own ``ssl.*`` settings) to hypercorn's Trio worker instead of
letting hypercorn bind ``config.bind`` and build a context from PEM paths itself.
"""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Protocol

from hypercorn.config import Config, Sockets


class _HostPort(Protocol):
    host: str
    port: int


class BoundConfig(Config):
    """A hypercorn config serving on a socket we already bound; with ``tls``, as HTTPS
    with that context (hypercorn's trio worker asks ``create_ssl_context`` only for the
    secure sockets, so both overrides together are the whole TLS set-up)."""

    def __init__(self, sock: socket.socket, tls: ssl.SSLContext | None = None) -> None:
        super().__init__()
        self._sock = sock
        self._tls = tls

    def create_sockets(self) -> Sockets:
        if self._tls is not None:
            return Sockets(secure_sockets=[self._sock], insecure_sockets=[], quic_sockets=[])
        return Sockets(secure_sockets=[], insecure_sockets=[self._sock], quic_sockets=[])

    def create_ssl_context(self) -> ssl.SSLContext | None:
        return self._tls


def bind_listener(endpoint: _HostPort, purpose: str = "the console") -> socket.socket:
    """A listening, non-blocking TCP socket on ``endpoint``; ``StartupError`` (one line,
    ``cannot listen on HOST:PORT for <purpose>: <reason>``) when it cannot."""
    from kafkette.broker.server import StartupError  # the broker imports this module late

    where = f"{endpoint.host}:{endpoint.port}"
    try:
        infos = socket.getaddrinfo(
            endpoint.host, endpoint.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise StartupError(f"cannot listen on {where} for {purpose}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise StartupError(f"cannot listen on {where} for {purpose}: {reason}") from None
    return sock


def quiet_http_log(name: str) -> logging.Logger:
    """hypercorn's own log lines (its "Running on ..." would repeat ours): warnings and
    errors only, unless ``name`` is at DEBUG."""
    http_log = logging.getLogger(name)
    if not http_log.isEnabledFor(logging.DEBUG):
        http_log.setLevel(logging.WARNING)
    return http_log


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """``[http://|https://]HOST:PORT``: ``scheme`` None when the text named none."""

    scheme: str | None
    host: str
    port: int


def parse_listen_address(text: str) -> ListenAddress:
    """``HOST:PORT`` with an optional ``http://`` or ``https://`` (``[v6]:PORT`` too,
    port 0-65535, an empty host meaning every interface); raises ValueError."""
    raw = text.strip()
    scheme: str | None = None
    if "://" in raw:
        given, _, raw = raw.partition("://")
        scheme = given.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"expected http:// or https://, got {text!r}")
    raw = raw.rstrip("/")
    host, sep, port = raw.rpartition(":")
    if not sep or not port.isdigit() or "/" in raw or "," in raw:
        raise ValueError(f"expected [http://|https://]HOST:PORT, got {text!r}")
    if int(port) > 65535:
        raise ValueError(f"port {port} of {text!r} is outside 0-65535")
    return ListenAddress(scheme, host.strip("[]") or "0.0.0.0", int(port))


async def answer_lifespan(receive: Any, send: Any) -> None:
    """An ASGI ``lifespan`` scope for an app with nothing to set up or tear down: it says
    ready at startup and done at shutdown (hypercorn waits for both)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
