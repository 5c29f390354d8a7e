"""The schema registry's REST API: a small ASGI app over ``SchemaRegistry`` (registry.py).

Confluent Schema Registry's endpoints, answered as its 7.0 server answers them (the shapes
Java client 7.0.16 and Python client 2.16 read), with the transport manners both clients
rely on:

* routing on the *raw* path, split on ``/`` before each segment is percent-decoded, so a
  subject may hold ``/`` (``%2F``); a trailing ``/`` is accepted everywhere;
* request bodies in any of Confluent's JSON media types, ``application/octet-stream`` or
  none; anything else 415. Answers in ``application/vnd.schemaregistry.v1+json`` unless
  the Accept header asks only for one of the other two;
* every success is 200 (Java 7.0.16 takes nothing else); errors are
  ``{"error_code": .., "message": ..}``: Confluent's codes from ``RegistryError``, Jersey's
  ``HTTP 404 Not Found`` / ``HTTP 405 Method Not Allowed`` / 415, 400 for malformed JSON;
* query booleans case-insensitive (Python sends ``False``), both ``deletedOnly`` and
  Python's ``deleted_only``;
* writes this broker may not do (``NotLeader``) go to the leader's registry
  (forwarding.py), and so do the reads of a broker with no replica of ``_schemas`` (50004
  when there is no leader to ask: it has no state of its own to answer from).

Handlers are thin: decode the parameters, call the facade, encode. Every request is
counted in ``registry.stats``. Work that grows with the data runs in worker threads of the
app's own (JSON bodies over ``INLINE_JSON_BYTES``, ``GET /schemas``), and at most
``MAX_BODY_REQUESTS`` requests with a body are read and handled at once (each may hold
``MAX_BODY_BYTES``).
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote_to_bytes

import trio

from kafkette.broker.network.http_listener import answer_lifespan
from kafkette.broker.schema_registry import errors
from kafkette.broker.schema_registry.errors import NotLeader, RegistryError
from kafkette.broker.schema_registry.forwarding import (
    APPLIED_OFFSET_HEADER,
    FORWARDED_HEADER,
    ForwardedCall,
    ForwardingFailed,
    forward,
)

if TYPE_CHECKING:
    from kafkette.broker.schema_registry.registry import SchemaRegistry

log = logging.getLogger("kafkette.schema_registry")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

V1_JSON = "application/vnd.schemaregistry.v1+json"
SR_JSON = "application/vnd.schemaregistry+json"
JSON = "application/json"
# What the server answers in, with Confluent's quality (qs) for each.
_OFFERED = ((V1_JSON, 1.0), (SR_JSON, 0.9), (JSON, 0.5))
_REQUEST_TYPES = frozenset({V1_JSON, SR_JSON, JSON, "application/octet-stream"})
# Confluent 7.0 has no limit; above this a body is refused with 42209 before it is read on.
MAX_BODY_BYTES = 16 * 1024 * 1024
# Requests with a body (POST, PUT) read and handled at once; more wait for a turn. Bodies
# are the memory a request holds (GET and DELETE answer from the state).
MAX_BODY_REQUESTS = 8
# A body up to this size is decoded on the event loop (microseconds); a larger one, and the
# encoding of a ``GET /schemas`` answer, in one of ``JSON_THREADS`` worker threads.
INLINE_JSON_BYTES = 64 * 1024
JSON_THREADS = 2
# How long a follower that forwarded a write waits for its own copy of ``_schemas`` to hold
# it before answering (a replica fetch and a high-watermark move; the leader's answer is
# sent anyway after this).
FOLLOWER_CATCH_UP_S = 5.0
# The order Confluent answers (its provider map's iteration order).
SCHEMA_TYPES = ["JSON", "PROTOBUF", "AVRO"]
UNMATCHED = "unmatched"  # the endpoint a request with an unknown path is counted under
_FORWARDED = FORWARDED_HEADER.lower()


@dataclass(frozen=True)
class Raw:
    """An answer body sent as is (a schema's text), not JSON-encoded."""

    text: str


@dataclass(frozen=True)
class Built:
    """An answer whose JSON value ``build`` makes (from immutable values) and the app
    encodes in a worker thread: one that may be large."""

    build: Callable[[], object]


_NOT_DECODED = object()


@dataclass
class Request:
    """One HTTP request, decoded: what handlers read."""

    method: str
    raw_path: bytes
    query_string: bytes
    headers: dict[str, str]  # lower-case names; the last of repeated headers
    query: dict[str, str]  # the first of repeated parameters
    body: bytes = b""
    decoded: object = _NOT_DECODED  # the body's JSON value, or the RegistryError it gets

    def flag(self, *names: str, default: bool = False) -> bool:
        """A boolean parameter (JAX-RS rules: "true" in any case is true, anything else
        false); the first of ``names`` present counts."""
        for name in names:
            if name in self.query:
                return self.query[name].strip().lower() == "true"
        return default

    def text(self, name: str) -> str | None:
        return self.query.get(name)

    def integer(self, name: str, default: int) -> int:
        try:
            return int(self.query.get(name, "").strip())
        except ValueError:
            return default

    async def decode_body(self, limiter: trio.CapacityLimiter) -> None:
        """Decode the body for ``json_body``: in a worker thread when it is large."""
        if len(self.body) <= INLINE_JSON_BYTES:
            self.decoded = _decode_json(self.body)
        else:
            self.decoded = await trio.to_thread.run_sync(_decode_json, self.body, limiter=limiter)

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object; {} when empty. 400 for anything else."""
        value = _decode_json(self.body) if self.decoded is _NOT_DECODED else self.decoded
        if isinstance(value, RegistryError):
            raise value
        assert isinstance(value, dict)
        return value


def _decode_json(body: bytes) -> dict[str, Any] | RegistryError:
    """A request body as a JSON object ({} when empty), or the 400 it gets."""
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return RegistryError(
            400, 400, f"Unexpected JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        )
    except UnicodeDecodeError:
        return RegistryError(400, 400, "Invalid UTF-8 in the request body")
    except RecursionError:  # arrays or objects nested deeper than the decoder goes
        return RegistryError(400, 400, "Unexpected JSON: nested too deeply")
    if not isinstance(value, dict):
        kind = {list: "Array", str: "String", bool: "Boolean", type(None): "null"}.get(
            type(value), "Number"
        )
        return RegistryError(
            400, 400, f"Cannot deserialize the request from {kind} value: expected an object"
        )
    return value


Handler = Callable[["SchemaRegistry", Request, dict[str, Any]], Awaitable[object]]


@dataclass(frozen=True)
class Write:
    """A write's wording when it cannot be done here: no leader known (50004), or the
    leader could not be reached (50003). Confluent's texts, per operation."""

    no_leader: str
    forward_failed: str


def _write(no_leader: str, operation: str) -> Write:
    return Write(no_leader, f"Error while forwarding {operation} request to the leader")


REGISTER = _write("Leader not known.", "register schema")
DELETE_VERSION = _write("Leader not known.", "delete schema version")
DELETE_SUBJECT = _write("Leader not known.", "delete subject")
UPDATE_CONFIG = _write("Failed to update compatibility level", "update config")
DELETE_CONFIG = _write("Failed to delete compatibility level", "delete config")
UPDATE_MODE = _write("Failed to update mode", "update mode")
DELETE_MODE = _write("Failed to delete mode", "delete mode")
# A read sent on by a broker that holds no replica of ``_schemas`` (see ``_answer``).
READ = _write("Leader not known.", "read")


@dataclass(frozen=True)
class Route:
    """``pattern``: literal segments and ``{name}`` placeholders; ``methods``: the
    handler of each method, and the write wording for those that write."""

    pattern: tuple[str, ...]
    methods: dict[str, tuple[Handler, Write | None]]

    @property
    def template(self) -> str:
        return "/" + "/".join(self.pattern)

    def match(self, segments: list[str]) -> dict[str, Any] | None:
        if len(segments) != len(self.pattern):
            return None
        params: dict[str, Any] = {}
        for part, segment in zip(self.pattern, segments, strict=True):
            if part.startswith("{"):
                name = part[1:-1]
                if name == "id":
                    # Jersey answers 404 when a path parameter does not convert.
                    if not re.fullmatch(r"[+-]?\d{1,10}", segment):
                        return None
                    params[name] = int(segment)
                else:
                    params[name] = segment
            elif part != segment:
                return None
        return params


# --- handlers ---------------------------------------------------------------------


def _page(items: list[Any], request: Request) -> list[Any]:
    """``offset`` and ``limit`` (Python sends ``offset=0&limit=-1``: all)."""
    offset = max(request.integer("offset", 0), 0)
    limit = request.integer("limit", -1)
    items = items[offset:]
    return items[:limit] if limit > 0 else items


async def _root(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    if request.method == "POST":
        request.json_body()
    return {}


async def _cluster_id(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    broker = getattr(registry, "broker", None)
    kafka_cluster = getattr(broker, "cluster_id", "") or ""
    return {
        "scope": {
            "path": [],
            "clusters": {
                "kafka-cluster": kafka_cluster,
                "schema-registry-cluster": "schema-registry",
            },
        }
    }


async def _server_version(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    from kafkette import __version__

    # The API level served is Confluent 7.0.16's; commitId names what serves it.
    return {"version": "7.0.16", "commitId": f"kafkette-{__version__}"}


async def _schema_types(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return list(SCHEMA_TYPES)


async def _contexts(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return ["."]


async def _schema_by_id(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    found = await registry.get_schema(
        p["id"], subject=request.text("subject"), fmt=request.text("format")
    )
    if request.flag("fetchMaxId"):
        found = {**found, "maxId": registry.state.max_id()}
    return found


async def _raw_schema_by_id(
    registry: SchemaRegistry, request: Request, p: dict[str, Any]
) -> object:
    found = await registry.get_schema(
        p["id"], subject=request.text("subject"), fmt=request.text("format")
    )
    return Raw(found["schema"])


async def _schema_id_subjects(
    registry: SchemaRegistry, request: Request, p: dict[str, Any]
) -> object:
    found = await registry.schema_subjects(p["id"], deleted=request.flag("deleted"))
    return _page(found, request)


async def _schema_id_versions(
    registry: SchemaRegistry, request: Request, p: dict[str, Any]
) -> object:
    found = await registry.schema_versions(p["id"], deleted=request.flag("deleted"))
    return _page(found, request)


def _prefix(request: Request) -> str:
    """``subjectPrefix``; its ``:*:`` context wildcard is the state's to read."""
    return request.text("subjectPrefix") or ""


async def _schemas(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    """``GET /schemas`` (Java ``getSchemas``): every version of the subjects with the
    prefix, or the latest of each with ``latestOnly``; built and encoded off the loop."""
    from kafkette.broker.schema_registry.registry import version_entity

    found = registry.versions_listed(
        prefix=_prefix(request), deleted=request.flag("deleted"),
        latest_only=request.flag("latestOnly"),
    )  # fmt: skip
    page = _page(found, request)
    return Built(lambda: [version_entity(v) for v in page])


async def _subjects(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    found = await registry.subjects(
        deleted=request.flag("deleted"),
        deleted_only=request.flag("deletedOnly", "deleted_only"),
        prefix=_prefix(request),
    )
    return _page(found, request)


async def _lookup(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.lookup(
        p["subject"],
        request.json_body(),
        normalize=request.flag("normalize"),
        deleted=request.flag("deleted"),
    )


async def _delete_subject(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.delete_subject(p["subject"], permanent=request.flag("permanent"))


async def _versions(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    found = await registry.versions(
        p["subject"],
        deleted=request.flag("deleted"),
        deleted_only=request.flag("deletedOnly", "deleted_only"),
    )
    return _page(found, request)


async def _register(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.register(
        p["subject"], request.json_body(), normalize=request.flag("normalize")
    )


async def _get_version(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.get_version(
        p["subject"], p["version"], deleted=request.flag("deleted"), fmt=request.text("format")
    )


async def _raw_version(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    found = await registry.get_version(
        p["subject"], p["version"], deleted=request.flag("deleted"), fmt=request.text("format")
    )
    return Raw(found["schema"])


async def _referenced_by(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return _page(await registry.referenced_by(p["subject"], p["version"]), request)


async def _delete_version(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.delete_version(
        p["subject"], p["version"], permanent=request.flag("permanent")
    )


async def _get_config(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.get_config(
        p.get("subject"), default_to_global=request.flag("defaultToGlobal")
    )


async def _set_config(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.set_config(p.get("subject"), request.json_body())


async def _delete_config(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.delete_config(p.get("subject"))


async def _get_mode(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.get_mode(
        p.get("subject"), default_to_global=request.flag("defaultToGlobal")
    )


async def _set_mode(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.set_mode(
        p.get("subject"), request.json_body(), force=request.flag("force")
    )


async def _delete_mode(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.delete_mode(p["subject"])


async def _check(registry: SchemaRegistry, request: Request, p: dict[str, Any]) -> object:
    return await registry.check_compatibility(
        p["subject"],
        p.get("version"),
        request.json_body(),
        verbose=request.flag("verbose"),
        normalize=request.flag("normalize"),
    )


def _routes() -> tuple[Route, ...]:
    def route(path: str, **methods: Handler | tuple[Handler, Write]) -> Route:
        pattern = tuple(part for part in path.split("/") if part)
        table = {
            name: entry if isinstance(entry, tuple) else (entry, None)
            for name, entry in methods.items()
        }
        return Route(pattern, table)

    subject_version = "subjects/{subject}/versions/{version}"
    return (
        route("/", GET=_root, POST=_root),
        route("v1/metadata/id", GET=_cluster_id),
        route("v1/metadata/version", GET=_server_version),
        route("contexts", GET=_contexts),
        route("schemas", GET=_schemas),
        route("schemas/types", GET=_schema_types),
        route("schemas/ids/{id}", GET=_schema_by_id),
        route("schemas/ids/{id}/schema", GET=_raw_schema_by_id),
        route("schemas/ids/{id}/subjects", GET=_schema_id_subjects),
        route("schemas/ids/{id}/versions", GET=_schema_id_versions),
        route("subjects", GET=_subjects),
        route("subjects/{subject}", POST=_lookup, DELETE=(_delete_subject, DELETE_SUBJECT)),
        route("subjects/{subject}/versions", GET=_versions, POST=(_register, REGISTER)),
        route(subject_version, GET=_get_version, DELETE=(_delete_version, DELETE_VERSION)),
        route(subject_version + "/schema", GET=_raw_version),
        route(subject_version + "/referencedby", GET=_referenced_by),
        route(
            "config",
            GET=_get_config,
            PUT=(_set_config, UPDATE_CONFIG),
            DELETE=(_delete_config, DELETE_CONFIG),
        ),
        route(
            "config/{subject}",
            GET=_get_config,
            PUT=(_set_config, UPDATE_CONFIG),
            DELETE=(_delete_config, DELETE_CONFIG),
        ),
        route("mode", GET=_get_mode, PUT=(_set_mode, UPDATE_MODE)),
        route(
            "mode/{subject}",
            GET=_get_mode,
            PUT=(_set_mode, UPDATE_MODE),
            DELETE=(_delete_mode, DELETE_MODE),
        ),
        route("compatibility/subjects/{subject}/versions/{version}", POST=_check),
        route("compatibility/subjects/{subject}/versions", POST=_check),
    )


ROUTES = _routes()

# --- transport ---------------------------------------------------------------------


def path_segments(raw_path: bytes) -> list[str]:
    """The path split on ``/``, then each segment percent-decoded (UTF-8, else Latin-1:
    Java 7.0's client escapes a Latin-1 character as its own code, ``é`` as ``%E9``);
    one trailing ``/`` is dropped."""
    parts = raw_path.split(b"/")
    if parts and parts[0] == b"":
        parts = parts[1:]
    if parts and parts[-1] == b"":
        parts = parts[:-1]
    segments = []
    for part in parts:
        decoded = unquote_to_bytes(part)
        try:
            segments.append(decoded.decode("utf-8"))
        except UnicodeDecodeError:
            segments.append(decoded.decode("latin-1"))
    return segments


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def negotiate(accept: str | None) -> str:
    """The answer's media type for an Accept header (JAX-RS: the client's quality
    first, then the server's); v1+json when nothing offered is accepted."""
    if not accept:
        return V1_JSON
    ranges: list[tuple[str, float]] = []
    for item in accept.split(","):
        media, *params = item.split(";")
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranges.append((media.strip().lower(), quality))
    best, best_key = V1_JSON, (0.0, 0.0)
    for offered, qs in _OFFERED:
        main = offered.split("/")[0]
        quality = max(
            (q for media, q in ranges if media in (offered, f"{main}/*", "*/*", "*")),
            default=0.0,
        )
        if quality > 0 and (quality, qs) > best_key:
            best, best_key = offered, (quality, qs)
    return best


NOT_FOUND = RegistryError(404, 404, "HTTP 404 Not Found")
METHOD_NOT_ALLOWED = RegistryError(405, 405, "HTTP 405 Method Not Allowed")
UNSUPPORTED_MEDIA_TYPE = RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
INTERNAL_ERROR = RegistryError(500, 500, "Internal Server Error")


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str
    error_code: int | None = None
    applied_offset: int | None = None  # a write's: sent as APPLIED_OFFSET_HEADER


class RegistryApp:
    """The ASGI app (``make_app``)."""

    def __init__(self, registry: SchemaRegistry, client_tls: ssl.SSLContext | None = None) -> None:
        self.registry = registry
        self.client_tls = client_tls
        self._bodies = trio.CapacityLimiter(MAX_BODY_REQUESTS)
        self._json = trio.CapacityLimiter(JSON_THREADS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        method = scope["method"].upper()
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        raw_path = raw_path.split(b"?", 1)[0]
        query_string = scope.get("query_string", b"")
        request = Request(
            method=method,
            raw_path=raw_path,
            query_string=query_string,
            headers=headers,
            query=_query(query_string),
        )
        media = negotiate(headers.get("accept"))
        template = UNMATCHED
        try:
            route, params = _find(path_segments(raw_path), method)
            template = route.template
            handler, write = route.methods["GET" if method == "HEAD" else method]
            if method in ("POST", "PUT"):
                _check_content_type(headers.get("content-type"))
                async with self._bodies:
                    request.body = await _read_body(receive)
                    await request.decode_body(self._json)
                    answer = await self._answer(handler, write, request, params, media)
            else:
                answer = await self._answer(handler, write, request, params, media)
        except RegistryError as error:
            answer = _error(error, media)
        except Exception:
            log.exception("schema registry: %s %s failed", method, template)
            answer = _error(INTERNAL_ERROR, media)
        status = answer.status
        self.registry.stats.count(
            method, template, status, answer.error_code, time.perf_counter() - started
        )
        headers = [
            (b"content-type", answer.content_type.encode("latin-1")),
            (b"content-length", str(len(answer.body)).encode()),
        ]
        if answer.applied_offset is not None:
            headers.append((APPLIED_OFFSET_HEADER.lower().encode(), b"%d" % answer.applied_offset))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else answer.body})

    async def _answer(
        self,
        handler: Handler,
        write: Write | None,
        request: Request,
        params: dict[str, Any],
        media: str,
    ) -> _Answer:
        store = self.registry.store
        if write is None and not store.has_local_copy() and store.exists():
            # A broker beyond ``_schemas``' replicas (a cluster larger than its replication
            # factor) has no state of its own: its reads are the leader's, and with no
            # leader to ask it has no answer (50004, retriable; not an empty registry).
            return await self._forward(self.registry.leadership.other_leader_url(), READ, request)
        try:
            value = await handler(self.registry, request, params)
        except NotLeader as not_leader:
            return await self._forward(not_leader.url, write, request)
        if isinstance(value, Raw):
            return _Answer(200, _raw_text(value.text), media)
        if isinstance(value, Built):
            body = await trio.to_thread.run_sync(lambda: _encode(value.build()), limiter=self._json)
            return _Answer(200, body, media)
        applied = store.applied_offset if write is not None else None
        return _Answer(200, _encode(value), media, applied_offset=applied)

    async def _forward(
        self, leader_url: str | None, write: Write | None, request: Request
    ) -> _Answer:
        wording = write or REGISTER
        if leader_url is None or request.headers.get(_FORWARDED) == "1":
            raise errors.leader_not_known(wording.no_leader)
        call = ForwardedCall(
            request.method, request.raw_path, request.query_string, request.body, request.headers
        )
        try:
            answer = await forward(leader_url, call, tls=self.client_tls)
        except ForwardingFailed as exc:
            log.warning(
                "schema registry: forwarding %s to the leader failed: %s", request.method, exc
            )
            raise errors.forwarding_error(wording.forward_failed) from None
        store = self.registry.store
        if answer.status == 200 and answer.applied_offset is not None and store.has_local_copy():
            # Read-your-writes through this follower: a lookup right after the register
            # must find it here too (bounded: the answer goes out late, never wrong). A
            # broker with no copy sends its reads to the leader: nothing to wait for.
            await store.wait_applied(answer.applied_offset, FOLLOWER_CATCH_UP_S)
        return _Answer(
            answer.status,
            answer.body,
            answer.content_type or V1_JSON,
            _error_code_of(answer.status, answer.body),
        )


def make_app(registry: SchemaRegistry, *, client_tls: ssl.SSLContext | None = None) -> RegistryApp:
    """The registry's ASGI app; ``client_tls`` verifies an https leader when forwarding."""
    return RegistryApp(registry, client_tls)


def _find(segments: list[str], method: str) -> tuple[Route, dict[str, Any]]:
    """The route and its parameters; 404 for an unknown path, 405 for a known path and
    a method it does not take (HEAD goes where GET goes)."""
    wanted = "GET" if method == "HEAD" else method
    matched = False
    for route in ROUTES:
        params = route.match(segments)
        if params is None:
            continue
        matched = True
        if wanted in route.methods:
            return route, params
    raise METHOD_NOT_ALLOWED if matched else NOT_FOUND


def _query(query_string: bytes) -> dict[str, str]:
    query: dict[str, str] = {}
    text = query_string.decode("utf-8", "replace")
    for name, value in parse_qsl(text, keep_blank_values=True):
        query.setdefault(name, value)
    return query


def _check_content_type(value: str | None) -> None:
    if value is not None and value.strip() and _media_type(value) not in _REQUEST_TYPES:
        raise UNSUPPORTED_MEDIA_TYPE


async def _read_body(receive: Receive) -> bytes:
    """The request body; 42209 above ``MAX_BODY_BYTES``, once the rest (up to as much
    again) is read and dropped, so that the client, still sending, reads the answer."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        more = message.get("more_body", False)
        if size > MAX_BODY_BYTES:
            chunks.clear()
            if not more or size > 2 * MAX_BODY_BYTES:
                raise errors.schema_too_large()
            continue
        chunks.append(chunk)
        if not more:
            break
    return b"".join(chunks)


def _encode(value: object) -> bytes:
    """Compact JSON in UTF-8. A string holding a lone surrogate (a schema or subject read
    from a ``_schemas`` written elsewhere: UTF-8 has no form for it) makes the whole answer
    ASCII with ``\\uXXXX`` escapes instead: still exactly the stored text to any JSON
    reader, where replacing the character would change the schema."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def _raw_text(text: str) -> bytes:
    """A schema's text alone, in UTF-8. One with a lone surrogate has no UTF-8 form, and a
    replacement character would be another schema: 50001, pointing at the JSON answers,
    which carry it escaped."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise errors.store_error(
            "The stored schema holds a lone UTF-16 surrogate, which UTF-8 text cannot carry;"
            " read it as JSON (GET /schemas/ids/{id} or /subjects/{subject}/versions/{version})"
        ) from None


def _error(error: RegistryError, media: str) -> _Answer:
    return _Answer(error.status, _encode(error.body()), media, error.error_code)


def _error_code_of(status: int, body: bytes) -> int | None:
    """A relayed answer's ``error_code``, for the counters."""
    if status < 400:
        return None
    try:
        code = json.loads(body).get("error_code")
    except (ValueError, AttributeError):
        return status
    return code if isinstance(code, int) else status
