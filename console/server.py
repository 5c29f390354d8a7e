"""``serve_console``: the web console's HTTP server, beside the broker in its trio run.

Hypercorn's Trio worker serves the Starlette app in the broker's own event loop, so the
pages read the broker's state through ``BrokerStateView`` with no locks and no thread
hops. The listening socket is bound here, before hypercorn starts, so that a busy port
is one clear ``StartupError`` line and port 0 gives a known port.
"""

from __future__ import annotations

import logging
from functools import partial

import trio
from hypercorn.trio import serve

from kafkette.broker.network.http_listener import BoundConfig, bind_listener, quiet_http_log
from kafkette.broker.server import Endpoint
from kafkette.broker.state_view import BrokerStateView

from .app import build_app, host_allow_list
from .throughput import ThroughputSampler

log = logging.getLogger("kafkette.console")


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
    sock = bind_listener(endpoint, "the console")
    host, port = sock.getsockname()[:2]
    bound = Endpoint(endpoint.host, port)
    config = BoundConfig(sock)
    config.accesslog = None
    config.errorlog = quiet_http_log("kafkette.console.http")
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
