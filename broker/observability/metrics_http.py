"""``--metrics-listen HOST:PORT``: Prometheus metrics at ``/metrics``, from the broker process.

Served by hypercorn's Trio worker on the broker's own event loop, so a scrape reads
the broker's counters and ``BrokerStateView`` snapshots with no locks: the collectors
run inside the request, between two broker requests, and only the text is written in a
worker thread. Each
broker has its own ``CollectorRegistry`` (never prometheus_client's global one: a
test process runs several brokers). Turning metrics on is what creates the request
counters; without ``--metrics-listen`` they do not exist and cost nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio
from hypercorn.config import Config
from hypercorn.trio.run import worker_serve
from hypercorn.utils import wrap_app
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kafkette.broker.network.http_listener import answer_lifespan
from kafkette.broker.observability.collectors import (
    GroupCollector,
    LogCollector,
    RequestCollector,
    ShareGroupCollector,
)
from kafkette.broker.observability.schema_registry_metrics import SchemaRegistryCollector
from kafkette.broker.server import Endpoint, StartupError

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.state_view import BrokerStateView

log = logging.getLogger("kafkette.metrics")
# hypercorn's own lines ("Running on ... (CTRL + C to quit)") would mislead here: only its
# warnings and errors are kept.
_http_log = logging.getLogger("kafkette.metrics.http")
_http_log.setLevel(logging.WARNING)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def metrics_registry(broker: Broker, view: BrokerStateView) -> CollectorRegistry:
    """A registry of this broker's collectors (turns its request counters on)."""
    stats = broker.request_observer.enable_metrics()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RequestCollector(stats, view))
    registry.register(LogCollector(view))
    registry.register(GroupCollector(view))
    registry.register(ShareGroupCollector(view))
    if broker.config.schema_registry.enabled:
        registry.register(SchemaRegistryCollector(view))
    return registry


class _Collected:
    """Metric families already collected, in the shape ``generate_latest`` reads."""

    def __init__(self, families: list) -> None:
        self._families = families

    def collect(self) -> list:
        return self._families


class MetricsApp:
    """A minimal ASGI app: ``GET /metrics`` (and ``/``) answer the exposition format."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        # One scrape formats at a time, never on trio's default limiter (the broker's disk work).
        self._limiter = trio.CapacityLimiter(1)

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] not in ("/metrics", "/"):
            await _respond(send, 404, b"not found: try /metrics\n", "text/plain; charset=utf-8")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"GET only\n", "text/plain; charset=utf-8")
            return
        # The collectors read broker state, so they run here on the event loop; writing
        # the text (most of a large scrape's time) happens in a worker thread of its own.
        families = list(self._registry.collect())
        body = await trio.to_thread.run_sync(
            generate_latest, _Collected(families), limiter=self._limiter
        )
        await _respond(send, 200, body if scope["method"] == "GET" else b"", CONTENT_TYPE_LATEST,
                       length=len(body))  # fmt: skip


async def _respond(send: Send, status: int, body: bytes, content_type: str,
                   length: int | None = None) -> None:  # fmt: skip
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body) if length is None else length).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def serve_metrics(
    broker: Broker,
    view: BrokerStateView,
    endpoint: Endpoint,
    *,
    task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``/metrics`` on ``endpoint`` until cancelled; ``task_status.started`` gets
    the bound endpoint (port 0 picks a free one). A port that cannot be bound is a
    ``StartupError`` with one line."""
    config = Config()
    host = endpoint.host
    config.bind = [f"[{host}]:{endpoint.port}" if ":" in host else f"{host}:{endpoint.port}"]
    config.errorlog = _http_log
    config.accesslog = None
    config.graceful_timeout = 1.0
    try:
        sockets = config.create_sockets()
        for sock in sockets.insecure_sockets:
            sock.listen(config.backlog)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StartupError(
            f"cannot listen on {endpoint.host}:{endpoint.port} for metrics: {reason}"
        ) from None
    sock = sockets.insecure_sockets[0]
    bound = Endpoint(endpoint.host, sock.getsockname()[1])
    app = MetricsApp(metrics_registry(broker, view))
    url_host = f"[{bound.host}]" if ":" in bound.host else bound.host
    log.info("metrics on http://%s:%d/metrics", url_host, bound.port)
    await worker_serve(
        wrap_app(app, config.wsgi_max_body_size, "asgi"),
        config,
        sockets=sockets,
        task_status=_started_with(task_status, bound),
    )


class _started_with:
    """Hand the caller our bound Endpoint when hypercorn reports it is serving."""

    def __init__(self, task_status: trio.TaskStatus, value: object) -> None:
        self._task_status = task_status
        self._value = value

    def started(self, _binds: object = None) -> None:
        self._task_status.started(self._value)
