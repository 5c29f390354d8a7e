"""``serve_console``: the web console's HTTP server, beside the broker in its trio run.

Hypercorn's Trio worker serves the Starlette app in the broker's own event loop, so the
pages read the broker's state through ``BrokerStateView`` with no locks and no thread
hops. The listening socket is bound here, before hypercorn starts, so that a busy port
is one clear ``StartupError`` line and port 0 gives a known port.
"""

from __future__ import annotations

import logging
import socket
from functools import partial

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio import serve

from kafkette.broker.server import Endpoint, StartupError
from kafkette.broker.state_view import BrokerStateView

from .app import build_app, host_allow_list
from .throughput import ThroughputSampler

log = logging.getLogger("kafkette.console")


class _BoundConfig(Config):
    """A hypercorn config serving on a socket we already bound (hypercorn's own
    ``create_sockets`` would bind ``config.bind`` itself)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def create_sockets(self) -> Sockets:
        return Sockets(secure_sockets=[], insecure_sockets=[self._sock], quic_sockets=[])


def bind_listener(endpoint: Endpoint) -> socket.socket:
    """A listening TCP socket on ``endpoint``; ``StartupError`` (one line) when it cannot."""
    try:
        infos = socket.getaddrinfo(
            endpoint.host, endpoint.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise StartupError(f"cannot listen on {endpoint} for the console: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise StartupError(f"cannot listen on {endpoint} for the console: {reason}") from None
    return sock


def _http_log() -> logging.Logger:
    """hypercorn's own log lines (its "Running on ..." would repeat ours): warnings and
    errors, all of it at DEBUG."""
    http_log = logging.getLogger("kafkette.console.http")
    if not http_log.isEnabledFor(logging.DEBUG):
        http_log.setLevel(logging.WARNING)
    return http_log


async def serve_console(
    view: BrokerStateView,
    endpoint: Endpoint,
    *,
    allow_writes: bool = False,
    bootstrap: str,
    task_status: trio.TaskStatus[Endpoint] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the console on ``endpoint`` until cancelled; ``task_status.started`` gets the
    bound endpoint (the real port when ``endpoint.port`` is 0). Cancellation (the broker
    stopping) closes open connections at once: pages are cheap to reload, and a
    shutdown never waits on a browser."""
    sock = bind_listener(endpoint)
    host, port = sock.getsockname()[:2]
    bound = Endpoint(endpoint.host, port)
    config = _BoundConfig(sock)
    config.accesslog = None
    config.errorlog = _http_log()
    sampler = ThroughputSampler(view)
    allowed = host_allow_list(host, endpoint.host, port)
    app = build_app(
        view, sampler, allow_writes=allow_writes, bootstrap=bootstrap, allowed_hosts=allowed
    )
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sampler.run)
            await nursery.start(partial(serve, app, config, mode="asgi"))
            shown = f"[{host}]" if ":" in host else host
            mode = "read-write" if allow_writes else "read-only"
            log.info("console on http://%s:%d/ (%s)", shown, port, mode)
            task_status.started(bound)
    finally:
        sock.close()
