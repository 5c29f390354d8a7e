"""The console's ASGI app: HTML pages and a small JSON API over one ``BrokerStateView``.

Every endpoint is ``async``: Starlette runs plain functions in a worker thread, and the
view must only be called on the event loop (the broker's objects are not thread-safe).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
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
from .throughput import ThroughputSampler
from .values import FORMATS, parse_timestamp, show, timestamp_text

log = logging.getLogger("kafkette.console")

DEFAULT_COUNT = 20
MAX_COUNT = 500
# The header a same-origin script sets on writes: a cross-site form cannot send it, and
# a cross-site fetch that does needs a CORS preflight this app never grants.
WRITE_HEADER = "x-kafkette-console"


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

    def page(self, title: str, body: Html, active: str, status: int = 200) -> HTMLResponse:
        document = pages.layout(title, body, active=active, allow_writes=self.allow_writes)
        return HTMLResponse(document, status_code=status)

    def not_found(self, text: str, active: str) -> HTMLResponse:
        return self.page("Not found", pages.message(text), active, status=404)

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
            mode, start, count, note = self._browse_range(summary, q)
        except ValueError as exc:
            return self.page(
                f"{name}-{index}", pages.message(f"Bad query: {exc}"), "/topics", status=400
            )
        try:
            records = await self.view.read_records(name, index, start, count)
        except UnknownPartition:
            return self.not_found(f"No partition {name}-{index} on this broker.", "/topics")
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

    async def groups(self, request: Request) -> Response:
        return self.page("Consumer groups", pages.groups(self.view.groups()), "/groups")

    async def group(self, request: Request) -> Response:
        group_id = request.query_params.get("id", "")
        found = self.view.group(group_id)
        if found is None:
            return self.not_found(f"No group {group_id!r}.", "/groups")
        return self.page(f"Group {group_id}", pages.group(found), "/groups")

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
            mode, start, count, _ = self._browse_range(summary, request.query_params)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        try:
            records = await self.view.read_records(name, index, start, count)
        except UnknownPartition:
            return JSONResponse({"error": "unknown partition"}, status_code=404)
        return JSONResponse(
            {
                "topic": name,
                "partition": index,
                "from": mode,
                "start_offset": start,
                "high_watermark": summary.high_watermark,
                "records": [_record_json(r, fmt) for r in records],
            }
        )

    async def api_groups(self, request: Request) -> Response:
        return JSONResponse([_group_json(g) for g in self.view.groups()])

    async def api_group(self, request: Request) -> Response:
        found = self.view.group(request.query_params.get("id", ""))
        if found is None:
            return JSONResponse({"error": "unknown group"}, status_code=404)
        return JSONResponse(_group_json(found))

    async def api_produce(self, request: Request) -> Response:
        if not self.allow_writes:
            return JSONResponse(
                {"error": "the console is read-only (start the broker with --ui-allow-writes)"},
                status_code=403,
            )
        refusal = _cross_site_refusal(request)
        if refusal is not None:
            return JSONResponse({"error": refusal}, status_code=403)
        try:
            wanted = parse_request(await request.json())
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            return JSONResponse({"error": str(exc)}, status_code=400)
        if self.view.topic(wanted.topic) is None:
            return JSONResponse({"error": f"unknown topic {wanted.topic!r}"}, status_code=404)
        try:
            delivered = await produce(self.bootstrap, wanted)
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

    def _browse_range(self, summary: PartitionSummary, q: Any) -> tuple[str, int, int, str]:
        """``(mode, start offset, count, note)`` from the browser's query parameters."""
        count = int(q.get("count") or DEFAULT_COUNT)
        if not 1 <= count <= MAX_COUNT:
            raise ValueError(f"count must be 1-{MAX_COUNT}")
        mode = q.get("from", "latest")
        if mode == "offset":
            start = int(q.get("offset") or 0)
            note = f"{count} records from offset {start}."
        elif mode == "timestamp":
            wanted = parse_timestamp(q.get("timestamp", ""))
            start = self.view.offset_for_timestamp(summary.topic, summary.partition, wanted)
            note = (
                f"From the first record at or after {timestamp_text(wanted)}: offset {start} "
                "(as ListOffsets by timestamp finds it)."
            )
        elif mode == "latest":
            start = max(summary.log_start_offset, summary.high_watermark - count)
            note = f"The last {count} offsets below the high watermark ({summary.high_watermark})."
        else:
            raise ValueError("from must be latest, offset or timestamp")
        return mode, max(start, 0), count, note


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
) -> SecurityHeaders:
    console = Console(view, sampler, allow_writes=allow_writes, bootstrap=bootstrap)
    routes = [
        Route("/", console.overview),
        Route("/topics", console.topics),
        Route("/topics/{name}", console.topic),
        Route("/topics/{name}/{partition:int}", console.partition),
        Route("/groups", console.groups),
        Route("/group", console.group),
        Route("/produce", console.produce_page),
        Route("/api/overview", console.api_overview),
        Route("/api/throughput", console.api_throughput),
        Route("/api/topics", console.api_topics),
        Route("/api/topics/{name}", console.api_topic),
        Route("/api/topics/{name}/{partition:int}/records", console.api_records),
        Route("/api/groups", console.api_groups),
        Route("/api/group", console.api_group),
        Route("/api/produce", console.api_produce, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=static_dir()), name="static"),
    ]
    return SecurityHeaders(Starlette(routes=routes))


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

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *self.HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)
