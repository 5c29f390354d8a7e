"""The schema registry's HTTP(S) listener: bound with the broker's listeners, served by
hypercorn's Trio worker in the broker's own event loop.

``bind_registry_listener`` runs while the broker binds (before storage opens), so a busy
port or unusable TLS material stops the start with one line and the URL is known when the
broker registers in ZooKeeper. ``schema.registry.listeners`` is ``[http://|https://]HOST:PORT``:

* ``http://``: plain HTTP;
* ``https://``: TLS with the ``ssl.*`` settings of the broker's first SSL or SASL_SSL
  listener (its ``listener.name.<l>.ssl.*`` values included), or the broker-wide ``ssl.*``
  ones when it has no TLS listener;
* no scheme: HTTPS when the broker has an SSL or SASL_SSL listener, else HTTP.

The context is built for the registry alone (no ALPN: hypercorn then speaks HTTP/1.1), with
the listener's ``ssl.client.auth``. An HTTPS registry also gets a client context from the
same settings, for forwarding to the leader's registry (forwarding.py: writes, and the reads
of a broker with no replica of ``_schemas``).
"""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import trio

from kafkette.broker.network.http_listener import (
    BoundConfig,
    bind_listener,
    parse_listen_address,
    quiet_http_log,
)
from kafkette.broker.server import Endpoint, StartupError

if TYPE_CHECKING:
    from kafkette.broker.config import BrokerConfig
    from kafkette.broker.schema_registry.registry import SchemaRegistry
    from kafkette.broker.security.listeners import ListenerSpec

log = logging.getLogger("kafkette.schema_registry")
PURPOSE = "the schema registry"
_KEYSTORES = ("ssl.keystore.location", "ssl.keystore.key")


@dataclass(frozen=True)
class RegistryListener:
    """The bound registry socket and how it is served."""

    sock: socket.socket  # bound and listening (port 0 resolved)
    url: str  # scheme + configured host + bound port, e.g. "http://127.0.0.1:8081"
    tls: ssl.SSLContext | None
    # For forwarding to an https leader: the same ssl.* settings, client side.
    client_tls: ssl.SSLContext | None = None

    def close(self) -> None:
        self.sock.close()


def bind_registry_listener(config: BrokerConfig) -> RegistryListener | None:
    """Bind ``schema.registry.listeners``; None when the registry is off. Raises
    ``StartupError`` (one line) for a malformed address, a busy port or TLS settings the
    registry cannot use."""
    text = config.schema_registry.schema_registry_listeners
    if not config.schema_registry.enabled:
        return None
    try:
        address = parse_listen_address(text)
    except ValueError as exc:
        raise StartupError(f"schema.registry.listeners: {exc}") from None
    tls, client_tls = _registry_tls(config, address.scheme)
    sock = bind_listener(Endpoint(address.host, address.port), PURPOSE)
    port = sock.getsockname()[1]
    host = f"[{address.host}]" if ":" in address.host else address.host
    scheme = "https" if tls is not None else "http"
    return RegistryListener(sock, f"{scheme}://{host}:{port}", tls, client_tls)


def _registry_tls(
    config: BrokerConfig, scheme: str | None
) -> tuple[ssl.SSLContext | None, ssl.SSLContext | None]:
    """(server context, client context) for ``scheme``; (None, None) for plain HTTP."""
    if scheme == "http":
        return None, None
    spec = _tls_listener(config)
    if spec is None:
        if scheme is None:
            return None, None
        if not any(name in config.explicit for name in _KEYSTORES):
            raise StartupError(
                f"{PURPOSE} on https needs a keystore: set ssl.keystore.location (the"
                " broker's ssl.* settings serve it), or add an SSL listener"
            )
        from kafkette.broker.security.listeners import ListenerSpec

        spec = ListenerSpec("SSL", "SSL", "", 0)  # the broker-wide ssl.* settings
    from kafkette.broker.security.tls import TlsConfigError, client_context, server_tls

    try:
        server = server_tls(config.explicit, spec).context
        client = client_context(config.explicit, spec)
    except (TlsConfigError, OSError) as exc:
        raise StartupError(f"{PURPOSE} (https): {exc}") from None
    return server, client


def _tls_listener(config: BrokerConfig) -> ListenerSpec | None:
    """The broker's first SSL or SASL_SSL listener (``--listen`` replaces them all with
    one PLAINTEXT listener, as for the broker itself)."""
    from kafkette.broker.security.listeners import ListenerConfigError, plan_listeners

    try:
        plan = plan_listeners(config.given_at_start(), clustered=config.cluster is not None)
    except ListenerConfigError as exc:
        raise StartupError(str(exc)) from None
    for spec in plan.listeners:
        if spec.security_protocol in ("SSL", "SASL_SSL"):
            return spec
    return None


async def serve_registry(
    registry: SchemaRegistry,
    listener: RegistryListener,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the registry's API on ``listener`` until cancelled; ``task_status.started()``
    once it accepts connections. Cancellation closes open connections at once (clients
    retry), and the socket is closed on the way out."""
    from hypercorn.trio import serve

    from kafkette.broker.schema_registry.api import make_app

    config = BoundConfig(listener.sock, listener.tls)
    config.accesslog = None
    config.errorlog = quiet_http_log("kafkette.schema_registry.http")
    # A client that connects and never finishes its handshake holds a connection only so long.
    config.ssl_handshake_timeout = 10.0
    app = make_app(registry, client_tls=listener.client_tls)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve, app, config, mode="asgi"))
            log.info("schema registry on %s", listener.url)
            task_status.started()
    finally:
        listener.close()
