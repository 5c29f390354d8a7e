"""The console's ASGI app: HTML pages and a small JSON API over one ``BrokerStateView``.

Every endpoint is ``async``: Starlette runs plain functions in a worker thread, and the
view must only be called on the event loop (the broker's objects are not thread-safe).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kafkette.broker.state_view import (
    BrokerStateView,
    PartitionSummary,
    RecordView,
    UnknownPartition,
)

from . import pages
from .markup import Html
from .produce import ProduceFailed, parse_request, produce
from .schemas import SchemaPages
from .throughput import ThroughputSampler
from .values import FORMATS, parse_timestamp, show, timestamp_text

log = logging.getLogger("kafkette.console")

DEFAULT_COUNT = 20
MAX_COUNT = 500
# The header a same-origin script sets on writes: a cross-site form cannot send it, and
# a cross-site fetch that does needs a CORS preflight this app never grants.
WRITE_HEADER = "x-kafkette-console"
# A produce request's body at most (a record from a form, not a bulk load).
MAX_PRODUCE_BODY = 2 * 1024 * 1024
# Worker threads of the console's own (the broker's disk work uses trio's default
# limiter; a busy console must never queue in front of it).
PRODUCE_THREADS = 2
READ_THREADS = 4


def static_dir() -> Path:
    return Path(str(files("kafkette.console") / "static"))


class Console:
    """What the routes share: the view, the sampler, and whether writes are allowed."""

    def __init__(
        self,
        view: BrokerStateView,
        sampler: ThroughputSampler,
        *,
        allow_writes: bool,
        bootstrap: str,
    ) -> None:
        self.view = view
        self.sampler = sampler
        self.allow_writes = allow_writes
        self.bootstrap = bootstrap
        self.produce_limiter = trio.CapacityLimiter(PRODUCE_THREADS)
        self.read_limiter = trio.CapacityLimiter(READ_THREADS)

    def page(self, title: str, body: Html, active: str, status: int = 200) -> HTMLResponse:
        document = pages.layout(
            title,
            body,
            active=active,
            allow_writes=self.allow_writes,
            schemas=self.view.schema_registry_enabled(),
        )
        return HTMLResponse(document, status_code=status)

    def not_found(self, text: str, active: str) -> HTMLResponse:
        return self.page("Not found", pages.message(text), active, status=404)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """What no route answers (an unknown path, a method a route does not take, a
        missing static file): the console's own page, or JSON under ``/api/``, instead of
        Starlette's plain-text "Not Found"."""
        assert isinstance(exc, HTTPException)
        status, path = exc.status_code, request.url.path
        if status == 405:
            text = f"{request.method} is not allowed on {path}."
        elif status == 404:
            text = f"Nothing here: {path} is not a page of this console."
        else:
            text = f"{exc.detail}."
        headers = dict(exc.headers or {})
        if path.startswith("/api/"):
            if status == 404:
                text = f"unknown path {path}"
            return JSONResponse({"error": text}, status_code=status, headers=headers)
        title = "Not found" if status == 404 else exc.detail  # as the routes' own 404s
        response = self.page(title, pages.message(text), "", status=status)
        response.headers.update(headers)
        return response

    # Pages -------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        summary = self.view.broker()
        body = pages.overview(summary, len(self.view.group_ids()))
        return self.page("Overview", body, "/")

    async def topics(self, request: Request) -> Response:
        return self.page("Topics", pages.topics(self.view.topics()), "/topics")

    async def topic(self, request: Request) -> Response:
        name = request.path_params["name"]
        found = self.view.topic(name)
        if found is None:
            return self.not_found(f"No topic {name!r}.", "/topics")
        return self.page(f"Topic {name}", pages.topic(found), "/topics")

    async def partition(self, request: Request) -> Response:
        name, index = request.path_params["name"], request.path_params["partition"]
        summary = self._partition_summary(name, index)
        if summary is None:
            return self.not_found(f"No partition {name}-{index} on this broker.", "/topics")
        q = request.query_params
        fmt = q.get("format", "auto")
        fmt = fmt if fmt in FORMATS else "auto"
        try:
            mode, start, count, note = await self._browse_range(summary, q)
        except ValueError as exc:
            return self.page(
                f"{name}-{index}", pages.message(f"Bad query: {exc}"), "/topics", status=400
            )
        except UnknownPartition:
            return self.not_found(f"No partition {name}-{index} on this broker.", "/topics")
        try:
            records = await self.view.read_records(
                name, index, start, count, limiter=self.read_limiter
            )
        except UnknownPartition:
            return self.not_found(f"No partition {name}-{index} on this broker.", "/topics")

        def render() -> HTMLResponse:  # in a worker thread: records can be large
            body = pages.browser(
                summary,
                records,
                mode=mode,
                offset=start,
                timestamp=q.get("timestamp", ""),
                count=count,
                fmt=fmt,
                note=note,
            )
            return self.page(f"{name}-{index}", body, "/topics")

        return await trio.to_thread.run_sync(render, limiter=self.read_limiter)

    async def groups(self, request: Request) -> Response:
        body = pages.groups(self.view.groups(), self.view.share_groups())
        return self.page("Groups", body, "/groups")

    async def group(self, request: Request) -> Response:
        group_id = request.query_params.get("id", "")
        found = self.view.group(group_id)
        if found is not None:
            return self.page(f"Group {group_id}", pages.group(found), "/groups")
        shared = self.view.share_group(group_id)
        if shared is not None:
            return self.page(f"Share group {group_id}", pages.share_group(shared), "/groups")
        return self.not_found(f"No group {group_id!r}.", "/groups")

    async def produce_page(self, request: Request) -> Response:
        if not self.allow_writes:
            return self.page(
                "Produce",
                pages.message(
                    "The console is read-only: start the broker with "
                    "--ui-allow-writes to produce from here."
                ),
                "/produce",
                status=403,
            )
        return self.page("Produce", pages.produce_form(self.view.topic_names()), "/produce")

    # JSON API ----------------------------------------------------------------------

    async def api_overview(self, request: Request) -> Response:
        data = asdict(self.view.broker())
        data["groups"] = len(self.view.group_ids())
        data["allow_writes"] = self.allow_writes
        return JSONResponse(data)

    async def api_throughput(self, request: Request) -> Response:
        return JSONResponse({"interval_s": 1, "rates": [asdict(r) for r in self.sampler.rates]})

    async def api_topics(self, request: Request) -> Response:
        return JSONResponse([_topic_json(t) for t in self.view.topics()])

    async def api_topic(self, request: Request) -> Response:
        found = self.view.topic(request.path_params["name"])
        if found is None:
            return JSONResponse({"error": "unknown topic"}, status_code=404)
        return JSONResponse(_topic_json(found))

    async def api_records(self, request: Request) -> Response:
        name, index = request.path_params["name"], request.path_params["partition"]
        summary = self._partition_summary(name, index)
        if summary is None:
            return JSONResponse({"error": "unknown partition"}, status_code=404)
        fmt = request.query_params.get("format", "auto")
        fmt = fmt if fmt in FORMATS else "auto"
        try:
            mode, start, count, _ = await self._browse_range(summary, request.query_params)
            records = await self.view.read_records(
                name, index, start, count, limiter=self.read_limiter
            )
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except UnknownPartition:
            return JSONResponse({"error": "unknown partition"}, status_code=404)

        def render() -> Response:  # in a worker thread: records can be large
            document = {
                "topic": name,
                "partition": index,
                "from": mode,
                "start_offset": start,
                "high_watermark": summary.high_watermark,
                "records": [_record_json(r, fmt) for r in records],
            }
            text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
            return Response(text.encode("utf-8"), media_type="application/json")

        return await trio.to_thread.run_sync(render, limiter=self.read_limiter)

    async def api_groups(self, request: Request) -> Response:
        return JSONResponse([_group_json(g) for g in self.view.groups()])

    async def api_group(self, request: Request) -> Response:
        group_id = request.query_params.get("id", "")
        found = self.view.group(group_id)
        if found is not None:
            return JSONResponse(_group_json(found))
        shared = self.view.share_group(group_id)
        if shared is not None:
            return JSONResponse(_share_group_json(shared))
        return JSONResponse({"error": "unknown group"}, status_code=404)

    async def api_share_groups(self, request: Request) -> Response:
        return JSONResponse([_share_group_json(g) for g in self.view.share_groups()])

    async def api_produce(self, request: Request) -> Response:
        if not self.allow_writes:
            return JSONResponse(
                {"error": "the console is read-only (start the broker with --ui-allow-writes)"},
                status_code=403,
            )
        refusal = _cross_site_refusal(request)
        if refusal is not None:
            return JSONResponse({"error": refusal}, status_code=403)
        body = await _body_within(request, MAX_PRODUCE_BODY)
        if body is None:
            return JSONResponse(
                {"error": f"request body over {MAX_PRODUCE_BODY} bytes"}, status_code=413
            )
        try:
            wanted = parse_request(json.loads(body))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            return JSONResponse({"error": f"bad request: {exc}"}, status_code=400)
        if self.view.topic(wanted.topic) is None:
            return JSONResponse({"error": f"unknown topic {wanted.topic!r}"}, status_code=404)
        try:
            delivered = await produce(self.bootstrap, wanted, limiter=self.produce_limiter)
        except ProduceFailed as exc:
            log.info("console produce to %s refused: %s", wanted.topic, exc)
            return JSONResponse({"error": str(exc)}, status_code=502)
        return JSONResponse(asdict(delivered))

    # Helpers -----------------------------------------------------------------------

    def _partition_summary(self, name: str, index: int) -> PartitionSummary | None:
        found = self.view.topic(name)
        if found is None:
            return None
        return next((p for p in found.partitions if p.partition == index), None)

    async def _browse_range(self, summary: PartitionSummary, q: Any) -> tuple[str, int, int, str]:
        """``(mode, start offset, count, note)`` from the browser's query parameters
        (the start clamped to the log start offset). Raises ValueError, UnknownPartition."""
        count = _whole_number(q, "count", DEFAULT_COUNT)
        if not 1 <= count <= MAX_COUNT:
            raise ValueError(f"count must be 1-{MAX_COUNT}")
        mode = q.get("from", "latest")
        if mode == "offset":
            start = _whole_number(q, "offset", 0)
            note = f"{count} records from offset {start}."
        elif mode == "timestamp":
            wanted = parse_timestamp(q.get("timestamp", ""))
            start = await self.view.offset_for_timestamp(
                summary.topic, summary.partition, wanted, limiter=self.read_limiter
            )
            note = (
                f"From the first record at or after {timestamp_text(wanted)}: offset {start} "
                "(as ListOffsets by timestamp finds it)."
            )
        elif mode == "latest":
            start = max(summary.log_start_offset, summary.high_watermark - count)
            note = f"The last {count} offsets below the high watermark ({summary.high_watermark})."
        else:
            raise ValueError("from must be latest, offset or timestamp")
        return mode, max(start, summary.log_start_offset), count, note


def _whole_number(q: Any, name: str, default: int) -> int:
    """A query parameter that must be an integer; ValueError saying so in plain words."""
    text = q.get(name) or ""
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        shown = repr(text[:32]) + ("..." if len(text) > 32 else "")
        raise ValueError(f"{name} must be a whole number, not {shown}") from None


async def _body_within(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it is (or says it is) over ``limit`` bytes: the
    read stops there, whatever Content-Length claimed."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _cross_site_refusal(request: Request) -> str | None:
    """Why a write looks cross-site (None: it does not): JSON body, our header, same origin."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return "writes need Content-Type: application/json"
    if request.headers.get(WRITE_HEADER) != "1":
        return f"writes need the {WRITE_HEADER} header"
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        return "cross-origin writes are refused"
    return None


def _topic_json(t: Any) -> dict[str, Any]:
    data = asdict(t)
    data["configs"] = dict(t.configs)
    data["size_bytes"] = t.size_bytes
    data["records"] = t.records
    return data


def _group_json(g: Any) -> dict[str, Any]:
    data = asdict(g)
    data["total_lag"] = g.total_lag
    return data


def _share_group_json(g: Any) -> dict[str, Any]:
    data = asdict(g)
    data["type"] = "share"
    data["in_flight"] = g.in_flight
    data["total_lag"] = g.total_lag
    return data


def _record_json(r: RecordView, fmt: str) -> dict[str, Any]:
    value, used = show(r.value, fmt)
    key, key_used = show(r.key, "utf8" if fmt == "auto" else fmt)
    return {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type,
        "key": None if r.key is None else key,
        "key_format": key_used,
        "value": None if r.value is None else value,
        "value_format": used,
        "headers": [[name, show(v, "utf8")[0] if v is not None else None] for name, v in r.headers],
        "transactional": r.transactional,
    }


def build_app(
    view: BrokerStateView,
    sampler: ThroughputSampler,
    *,
    allow_writes: bool,
    bootstrap: str,
    allowed_hosts: frozenset[str],
) -> SecurityHeaders:
    """The console app; ``allowed_hosts`` are the Host header values it answers
    (``host_allow_list`` makes them)."""
    console = Console(view, sampler, allow_writes=allow_writes, bootstrap=bootstrap)
    schemas = SchemaPages(console)
    routes = [
        Route("/", console.overview),
        Route("/topics", console.topics),
        Route("/topics/{name}", console.topic),
        Route("/topics/{name}/{partition:int}", console.partition),
        Route("/groups", console.groups),
        Route("/group", console.group),
        Route("/produce", console.produce_page),
        Route("/schemas", schemas.subjects),
        Route("/schema", schemas.subject),
        Route("/api/overview", console.api_overview),
        Route("/api/throughput", console.api_throughput),
        Route("/api/topics", console.api_topics),
        Route("/api/topics/{name}", console.api_topic),
        Route("/api/topics/{name}/{partition:int}/records", console.api_records),
        Route("/api/groups", console.api_groups),
        Route("/api/group", console.api_group),
        Route("/api/share-groups", console.api_share_groups),
        Route("/api/schemas", schemas.api_subjects),
        Route("/api/schema", schemas.api_subject),
        Route("/api/produce", console.api_produce, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=static_dir()), name="static"),
    ]
    handlers = {HTTPException: console.http_error}
    return SecurityHeaders(Starlette(routes=routes, exception_handlers=handlers), allowed_hosts)


def host_allow_list(bound_host: str, listen_host: str, port: int) -> frozenset[str]:
    """The Host values a browser sends for this console: the bound address, the
    ``--ui-listen`` host and the loopback names, each with the port. Anything else is
    refused, so a DNS name rebound to this address cannot read the console."""
    names = {bound_host, listen_host, "localhost", "127.0.0.1", "::1"}
    return frozenset(f"[{h}]:{port}" if ":" in h else f"{h}:{port}" for h in names if h)


class SecurityHeaders:
    """ASGI wrapper adding headers that keep record data inert even if escaping failed:
    scripts and styles only from the console itself (no inline script runs), no framing,
    no content sniffing."""

    HEADERS = (
        (
            b"content-security-policy",
            b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            b"frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
    )

    def __init__(self, app: Starlette, allowed_hosts: frozenset[str]) -> None:
        self.app = app
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), *self.HEADERS],
                }
            )
            await send({"type": "http.response.body", "body": text.encode()})
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *self.HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Any) -> tuple[int, str] | None:
        """(status, text) when the Host or Origin is not this console's (DNS rebinding)."""
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = headers.get(b"host")
        if host is None:
            return 400, "a Host header is required\n"
        if host.decode("latin-1").lower() not in self.allowed_hosts:
            return 421, "this console does not answer for that Host\n"
        origin = headers.get(b"origin")
        if origin is not None:
            parts = urlsplit(origin.decode("latin-1"))
            if parts.scheme != "http" or parts.netloc.lower() not in self.allowed_hosts:
                return 403, "cross-origin requests are refused\n"
        return None
