"""The schema registry's HTTP surface (api.py, http_server.py, forwarding.py) against a real
embedded broker: the transport manners Confluent's clients rely on (research notes §1, §2).

One plain-HTTP broker for the module; the TLS tests start one more (client certificates
required) from the test CA. The listener choice (http/https, TLS settings) is checked on
``bind_registry_listener`` directly: it binds a socket and needs no broker.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio

from bench.harness.serve_process import ServeProcess, serve_args, serve_refused
from kafkette.broker.config import load_config
from kafkette.broker.schema_registry.api import (
    JSON,
    SR_JSON,
    V1_JSON,
    negotiate,
    path_segments,
)
from kafkette.broker.schema_registry.forwarding import (
    ForwardedCall,
    ForwardingFailed,
    forward,
)
from kafkette.broker.schema_registry.http_server import bind_registry_listener
from kafkette.broker.server import StartupError
from kafkette.testing import KafkaBroker, broker
from kafkette.testing_tls import TlsMaterial, make_tls_material

PYTHON_GET_ACCEPT = f"{V1_JSON}, {SR_JSON}, {JSON}"
JAVA_DEFAULT_ACCEPT = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"


def record(name: str, *fields: tuple[str, str]) -> str:
    return json.dumps(
        {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}
    )


@dataclass
class Answer:
    status: int
    content_type: str | None
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    url: str,
    method: str,
    path: str,
    body: object = None,
    *,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> Answer:
    """One request with exactly this path and these headers (http.client changes nothing)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, context=context, timeout=10
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    sent = dict(headers or {})
    data: bytes | None
    if body is None:
        data = None
    elif isinstance(body, bytes):
        data = body
    else:
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", V1_JSON)
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        return Answer(response.status, response.getheader("Content-Type"), response.read())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def kafkette() -> Iterator[KafkaBroker]:
    with broker(schema_registry=True) as running:
        yield running


@pytest.fixture(scope="module")
def url(kafkette: KafkaBroker) -> str:
    assert kafkette.schema_registry_url is not None
    return kafkette.schema_registry_url


def register(url: str, subject_path: str, schema: str, **extra: object) -> int:
    answer = call(url, "POST", f"/subjects/{subject_path}/versions", {"schema": schema, **extra})
    assert answer.status == 200, answer.body
    return answer.json()["id"]


# --- pure pieces ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "segments"),
    [
        (b"/", []),
        (b"/subjects", ["subjects"]),
        (b"/subjects/", ["subjects"]),
        (b"/subjects/a%2Fb/versions", ["subjects", "a/b", "versions"]),
        (b"/subjects/a%3Ab%2F/versions/", ["subjects", "a:b/", "versions"]),
        (b"/subjects/caf%C3%A9", ["subjects", "café"]),
        (b"/subjects/caf%E9", ["subjects", "café"]),  # Java 7.0's Latin-1 escape
        (b"/subjects/%zz", ["subjects", "%zz"]),  # not an escape: kept, never a 500
        (b"/subjects//versions", ["subjects", "", "versions"]),
    ],
)
def test_path_segments_split_before_decoding(raw: bytes, segments: list[str]) -> None:
    assert path_segments(raw) == segments


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (None, V1_JSON),
        ("*/*", V1_JSON),
        (PYTHON_GET_ACCEPT, V1_JSON),
        (JAVA_DEFAULT_ACCEPT, V1_JSON),
        (JSON, JSON),
        (SR_JSON, SR_JSON),
        (f"{JSON}, {SR_JSON}", SR_JSON),
        (f"{JSON}, {SR_JSON};q=0.5", JSON),
        ("application/*", V1_JSON),
        ("text/html", V1_JSON),  # nothing offered is accepted: the default, not a 406
    ],
)
def test_accept_negotiation(accept: str | None, media: str) -> None:
    assert negotiate(accept) == media


# --- transport ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status", "body"),
    [
        ("GET", "/", 200, {}),
        ("GET", "/schemas/types", 200, ["JSON", "PROTOBUF", "AVRO"]),
        ("GET", "/schemas/types/", 200, ["JSON", "PROTOBUF", "AVRO"]),
        ("GET", "/contexts?offset=0&limit=-1", 200, ["."]),
        ("GET", "/nothing/here", 404, {"error_code": 404, "message": "HTTP 404 Not Found"}),
        ("GET", "/clusters", 404, {"error_code": 404, "message": "HTTP 404 Not Found"}),
        ("GET", "/schemas/ids/abc", 404, {"error_code": 404, "message": "HTTP 404 Not Found"}),
        (
            "GET",
            "/associations/resources/-/orders?resourceType=topic&associationType=value",
            404,
            {"error_code": 404, "message": "HTTP 404 Not Found"},
        ),
        (
            "PATCH",
            "/subjects",
            405,
            {"error_code": 405, "message": "HTTP 405 Method Not Allowed"},
        ),
        ("DELETE", "/mode", 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}),
        (
            "GET",
            "/schemas/ids/987654",
            404,
            {"error_code": 40403, "message": "Schema 987654 not found"},
        ),
    ],
)
def test_fixed_answers_and_jersey_errors(
    url: str, method: str, path: str, status: int, body: object
) -> None:
    answer = call(url, method, path)
    assert (answer.status, answer.json()) == (status, body)
    assert answer.content_type == V1_JSON


def test_cluster_id_is_the_kafka_cluster_id(url: str, kafkette: KafkaBroker) -> None:
    assert kafkette.embedded is not None
    answer = call(url, "GET", "/v1/metadata/id").json()
    assert answer == {
        "scope": {
            "path": [],
            "clusters": {
                "kafka-cluster": kafkette.embedded.broker.cluster_id,
                "schema-registry-cluster": "schema-registry",
            },
        }
    }
    assert answer["scope"]["clusters"]["kafka-cluster"]


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (V1_JSON, 200),
        (SR_JSON, 200),
        (JSON, 200),
        ("application/json; charset=utf-8", 200),
        ("application/octet-stream", 200),
        (None, 200),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
    ],
)
def test_request_content_types(url: str, content_type: str | None, status: int) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    body = json.dumps({"schema": record("ContentTypes", ("a", "int"))}).encode()
    answer = call(url, "POST", "/subjects/content-types/versions", body, headers=headers)
    assert answer.status == status, answer.body
    if status == 415:
        assert answer.json() == {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}
    else:
        assert set(answer.json()) == {"id"}  # 7.0's register answer


@pytest.mark.parametrize(
    ("accept", "media"),
    [(JSON, JSON), (PYTHON_GET_ACCEPT, V1_JSON), (JAVA_DEFAULT_ACCEPT, V1_JSON)],
)
def test_answer_content_type_follows_accept(url: str, accept: str, media: str) -> None:
    answer = call(url, "GET", "/subjects", headers={"Accept": accept})
    assert (answer.status, answer.content_type) == (200, media)
    missing = call(url, "GET", "/nowhere", headers={"Accept": accept})
    assert (missing.status, missing.content_type) == (404, media)


@pytest.mark.parametrize(
    ("body", "message_start"),
    [
        (b'{"schema": ', "Unexpected JSON: "),
        (b"[1, 2]", "Cannot deserialize the request from Array value"),
        (b'"text"', "Cannot deserialize the request from String value"),
    ],
)
def test_malformed_bodies_are_400(url: str, body: bytes, message_start: str) -> None:
    answer = call(url, "POST", "/subjects/malformed/versions", body, headers={"Content-Type": JSON})
    assert answer.status == 400
    assert answer.json()["error_code"] == 400
    assert answer.json()["message"].startswith(message_start)


@pytest.mark.parametrize("size", [40_000, 100_000], ids=["on-the-loop", "in-a-thread"])
def test_bodies_nested_deeper_than_the_decoder_goes_are_400(url: str, size: int) -> None:
    for body in (b"[" * size, b'{"schema":' * size):
        answer = call(url, "POST", "/subjects/deep/versions", body, headers={"Content-Type": JSON})
        assert (answer.status, answer.json()["error_code"]) == (400, 400), answer.body[:200]


def test_large_bodies_are_decoded_off_the_loop_with_the_same_answers(url: str) -> None:
    from kafkette.broker.schema_registry.api import INLINE_JSON_BYTES

    doc = "d" * INLINE_JSON_BYTES
    schema = json.dumps({"type": "enum", "name": "Big", "symbols": ["A"], "doc": doc})
    assert register(url, "large-body", schema) > 0
    bad = b'{"schema": "' + b"x" * INLINE_JSON_BYTES + b'"'
    answer = call(url, "POST", "/subjects/large-body/versions", bad, headers={"Content-Type": JSON})
    assert answer.status == 400 and answer.json()["message"].startswith("Unexpected JSON: ")


def test_body_over_the_limit_is_42209(url: str) -> None:
    from kafkette.broker.schema_registry.api import MAX_BODY_BYTES

    schema = json.dumps(
        {"type": "enum", "name": "E", "symbols": ["A"], "doc": "x" * MAX_BODY_BYTES}
    )
    answer = call(url, "POST", "/subjects/too-large/versions", {"schema": schema})
    assert (answer.status, answer.json()) == (
        422,
        {"error_code": 42209, "message": "Register operation failed because schema is too large"},
    )


# --- endpoints --------------------------------------------------------------------------


def test_subject_with_slash_and_colon(url: str) -> None:
    schema = record("Slashed", ("a", "int"))
    schema_id = register(url, "team%2Forders%3Avalue", schema)
    assert "team/orders:value" in call(url, "GET", "/subjects").json()
    version = call(url, "GET", "/subjects/team%2Forders%3Avalue/versions/1/").json()
    assert version["subject"] == "team/orders:value"
    assert (version["version"], version["id"]) == (1, schema_id)
    assert "schemaType" not in version  # AVRO is implied in 7.0's answers
    raw = call(url, "GET", "/subjects/team%2Forders%3Avalue/versions/latest/schema")
    assert (raw.status, raw.body.decode()) == (200, version["schema"])
    assert call(url, "GET", f"/schemas/ids/{schema_id}/subjects").json() == ["team/orders:value"]
    assert call(url, "GET", f"/schemas/ids/{schema_id}/versions").json() == [
        {"subject": "team/orders:value", "version": 1}
    ]
    assert call(url, "GET", "/subjects/team%2Forders%3Avalue/versions/1/referencedby").json() == []
    assert call(url, "GET", "/subjects?subjectPrefix=team%2F").json() == ["team/orders:value"]


def test_schema_by_id_object_and_raw(url: str) -> None:
    schema = record("ById", ("a", "string"))
    schema_id = register(url, "by-id", schema)
    found = call(url, "GET", f"/schemas/ids/{schema_id}?fetchMaxId=false").json()
    assert set(found) == {"schema"}
    raw = call(url, "GET", f"/schemas/ids/{schema_id}/schema")
    assert raw.body.decode() == found["schema"]
    with_max = call(url, "GET", f"/schemas/ids/{schema_id}?fetchMaxId=true").json()
    assert with_max["maxId"] >= schema_id


def test_schemas_listing(url: str) -> None:
    first = register(url, "listed-a", record("ListedA", ("a", "int")))
    put = call(url, "PUT", "/config/listed-a", {"compatibility": "NONE"})
    assert put.status == 200
    second = register(url, "listed-a", record("ListedC", ("c", "string")))
    third = register(url, "listed-b", record("ListedB", ("a", "int")))
    found = call(url, "GET", "/schemas?subjectPrefix=listed-").json()
    assert [(v["subject"], v["version"], v["id"]) for v in found] == [
        ("listed-a", 1, first), ("listed-a", 2, second), ("listed-b", 1, third)
    ]  # fmt: skip
    assert set(found[0]) == {"subject", "version", "id", "schema"}
    latest = call(url, "GET", "/schemas?subjectPrefix=%3A*%3Alisted-&latestOnly=true").json()
    assert [v["id"] for v in latest] == [second, third]
    paged = call(url, "GET", "/schemas?subjectPrefix=listed-&offset=1&limit=1").json()
    assert [v["id"] for v in paged] == [second]


def test_booleans_are_case_insensitive(url: str) -> None:
    schema = record("Flags", ("a", "long"))
    register(url, "flags", schema)
    lookup = call(url, "POST", "/subjects/flags?normalize=False&deleted=False", {"schema": schema})
    assert lookup.json()["version"] == 1
    assert call(url, "DELETE", "/subjects/flags/versions/1?permanent=False").json() == 1
    assert call(url, "GET", "/subjects/flags/versions?deleted=False").status == 404
    assert call(url, "GET", "/subjects/flags/versions?deleted=True").json() == [1]
    assert call(url, "GET", "/subjects/flags/versions?deleted=TRUE").json() == [1]
    assert "flags" not in call(url, "GET", "/subjects?deleted=false").json()
    assert "flags" in call(url, "GET", "/subjects?deleted=True&deleted_only=False").json()
    found = call(url, "POST", "/subjects/flags?normalize=False&deleted=True", {"schema": schema})
    assert found.json()["version"] == 1


def test_config_echo_and_answer_keys(url: str) -> None:
    put = call(url, "PUT", "/config/echoed", {"compatibility": "full"})
    assert (put.status, put.json()) == (200, {"compatibility": "FULL"})
    assert call(url, "GET", "/config/echoed").json() == {"compatibilityLevel": "FULL"}
    unset = call(url, "GET", "/config/never-set")
    assert (unset.status, unset.json()["error_code"]) == (404, 40408)
    effective = call(url, "GET", "/config/never-set?defaultToGlobal=True").json()
    assert effective == call(url, "GET", "/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert call(url, "DELETE", "/config/echoed").json() == {"compatibilityLevel": "FULL"}
    again = call(url, "DELETE", "/config/echoed")
    assert (again.status, again.json()) == (
        404,
        {"error_code": 40401, "message": "Subject 'echoed' not found."},
    )
    bad = call(url, "PUT", "/config/echoed", {"compatibility": "SIDEWAYS"})
    assert (bad.status, bad.json()["error_code"]) == (422, 42203)


def test_mode_answers(url: str) -> None:
    assert call(url, "GET", "/mode").json() == {"mode": "READWRITE"}
    assert call(url, "PUT", "/mode/moded?force=False", {"mode": "readonly"}).json() == {
        "mode": "READONLY"
    }
    assert call(url, "GET", "/mode/moded").json() == {"mode": "READONLY"}
    assert call(url, "GET", "/mode/unmoded").json()["error_code"] == 40409
    assert call(url, "GET", "/mode/unmoded?defaultToGlobal=true").json() == {"mode": "READWRITE"}
    assert call(url, "DELETE", "/mode/moded").json() == {"mode": "READONLY"}


def test_compatibility_endpoints(url: str) -> None:
    register(url, "compat", record("Compat", ("a", "int")))
    # A new field without a default: not BACKWARD compatible.
    incompatible = {"schema": record("Compat", ("a", "int"), ("b", "string"))}
    compatible = {"schema": record("Compat", ("a", "int"))}
    path = "/compatibility/subjects/compat/versions"
    assert call(url, "POST", f"{path}/latest?verbose=False", incompatible).json() == {
        "is_compatible": False
    }
    verbose = call(url, "POST", f"{path}/?verbose=true", incompatible).json()  # Java's slash
    assert verbose["is_compatible"] is False and verbose["messages"]
    assert call(url, "POST", f"{path}/1?verbose=true", compatible).json() == {
        "is_compatible": True,
        "messages": [],
    }
    refused = call(url, "POST", "/subjects/compat/versions", incompatible)
    assert (refused.status, refused.json()["error_code"]) == (409, 409)


def test_write_errors_keep_confluent_codes(url: str) -> None:
    empty = call(url, "POST", "/subjects/errors/versions", {"schemaType": "AVRO"})
    assert (empty.status, empty.json()) == (422, {"error_code": 42201, "message": "Empty schema"})
    version = call(url, "GET", "/subjects/errors/versions/one")
    assert (version.status, version.json()["error_code"]) == (422, 42202)
    missing = call(url, "DELETE", "/subjects/no-such-subject")
    assert (missing.status, missing.json()["error_code"]) == (404, 40401)


def test_requests_are_counted(url: str, kafkette: KafkaBroker) -> None:
    call(url, "GET", "/schemas/types")
    call(url, "GET", "/subjects/never-there/versions")
    call(url, "GET", "/not/a/route")
    embedded = kafkette.embedded
    assert embedded is not None

    def snapshot() -> tuple[dict, dict]:
        stats = embedded.broker.schema_registry.stats
        return dict(stats.requests), dict(stats.errors)

    requests, codes = embedded.on_loop(snapshot)
    assert requests[("GET", "/schemas/types", 200)] >= 1
    assert requests[("GET", "/subjects/{subject}/versions", 404)] >= 1
    assert requests[("GET", "unmatched", 404)] >= 1
    assert codes[40401] >= 1 and codes[404] >= 1


def test_unknown_methods_are_counted_as_other(url: str, kafkette: KafkaBroker) -> None:
    for method in ("FOO1", "FOO2", "PATCH"):
        answer = call(url, method, "/subjects")
        assert (answer.status, answer.json()["error_code"]) == (405, 405)
    embedded = kafkette.embedded
    assert embedded is not None
    requests = embedded.on_loop(lambda: dict(embedded.broker.schema_registry.stats.requests))
    known = {"GET", "HEAD", "POST", "PUT", "DELETE", "OTHER"}
    assert {method for method, _, _ in requests} <= known
    assert requests[("OTHER", "unmatched", 405)] >= 3  # no route takes these methods


def _produce(bootstrap: str, key: bytes, value: bytes | None) -> None:
    """One record into ``_schemas``, as anyone allowed to produce there can write it."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("_schemas", key=key, value=value)
    assert producer.flush(10) == 0


def test_a_record_nested_too_deeply_does_not_stall_the_registry(
    url: str, kafkette: KafkaBroker
) -> None:
    # Before: the tail raised RecursionError on it and read the same chunk again for ever;
    # every write then timed out (50002) waiting to be applied.
    _produce(kafkette.bootstrap, b"[" * 100_000, b"{}")
    started = time.monotonic()
    assert register(url, "after-nested", record("AfterNested", ("a", "int"))) > 0
    assert time.monotonic() - started < 4


def test_lone_surrogates_never_make_a_500_traceback(url: str, kafkette: KafkaBroker) -> None:
    # In an answer's text (a reference to a subject named with one): JSON escapes.
    body = {
        "schema": record("Refs", ("a", "int")),
        "references": [{"name": "x", "subject": "\ud800", "version": 1}],
    }
    refused = call(url, "POST", "/subjects/surrogate-refs/versions", body)
    assert (refused.status, refused.json()["error_code"]) == (422, 42201)
    assert "\ud800" in refused.json()["message"]
    # In a stored schema (a _schemas written elsewhere): the JSON answers carry it escaped,
    # exactly; the raw text endpoint has no UTF-8 for it and says so.
    text = '{"type":"string","doc":"\ud800"}'
    value = {"subject": "surrogate", "version": 1, "id": 40_000, "schema": text}
    _produce(
        kafkette.bootstrap,
        b'{"keytype":"SCHEMA","subject":"surrogate","version":1,"magic":1}',
        json.dumps(value).encode(),
    )
    deadline = time.monotonic() + 10
    while (found := call(url, "GET", "/schemas/ids/40000")).status == 404:
        assert time.monotonic() < deadline, found.body
        time.sleep(0.05)
    assert found.status == 200 and found.json() == {"schema": text}
    version = call(url, "GET", "/subjects/surrogate/versions/1")
    assert version.status == 200 and version.json()["schema"] == text
    raw = call(url, "GET", "/schemas/ids/40000/schema")
    assert (raw.status, raw.json()["error_code"]) == (500, 50001)


# --- forwarding -------------------------------------------------------------------------


def test_forward_relays_status_and_body(url: str) -> None:
    async def main() -> tuple[Any, Any]:
        answer = await forward(
            url,
            ForwardedCall("GET", b"/subjects/not%2Fthere/versions", b"deleted=true", b"", {}),
        )
        posted = await forward(
            url,
            ForwardedCall(
                "POST",
                b"/subjects/forwarded/versions",
                b"normalize=False",
                json.dumps({"schema": record("Forwarded", ("a", "int"))}).encode(),
                {"content-type": JSON, "x-unrelated": "dropped"},
            ),
        )
        return answer, posted

    answer, posted = trio.run(main)
    assert (answer.status, json.loads(answer.body)) == (
        404,
        {"error_code": 40401, "message": "Subject 'not/there' not found."},
    )
    assert posted.status == 200 and set(json.loads(posted.body)) == {"id"}


def test_forward_to_nobody_fails() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: nobody listens

    async def main() -> None:
        await forward(f"http://127.0.0.1:{port}", ForwardedCall("DELETE", b"/mode/x", b"", b""))

    with pytest.raises(ForwardingFailed):
        trio.run(main)


def test_forward_ignores_proxy_settings(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]  # a proxy nobody serves
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{dead}")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(urllib.request, "_opener", None)  # urlopen's, built from the env

    async def main() -> Any:
        return await forward(url, ForwardedCall("GET", b"/schemas/types", b"", b""))

    answer = trio.run(main)
    assert (answer.status, json.loads(answer.body)) == (200, ["JSON", "PROTOBUF", "AVRO"])


def test_forward_relays_a_redirect_without_following_it(url: str) -> None:
    class Redirecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"{url}/schemas/types")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Redirecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        leader = f"http://127.0.0.1:{server.server_address[1]}"

        async def main() -> Any:
            return await forward(leader, ForwardedCall("GET", b"/schemas/types", b"", b""))

        answer = trio.run(main)
        assert answer.status == 307
    finally:
        server.shutdown()
        server.server_close()


# --- a write whose outcome is unknown ----------------------------------------------------


def test_an_id_from_a_timed_out_write_is_never_given_to_another_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A register whose record reached the log but was not applied in time (50002) may
    still be applied: the next register must not plan against a state lacking it. The
    registry's tail is held (as a slow disk would) between the two registers."""
    from kafkette.broker.schema_registry import store as store_module

    gate = threading.Event()
    gate.set()
    read_chunk = store_module._read_chunk

    def held_read_chunk(*args: Any) -> Any:
        assert gate.wait(30)
        return read_chunk(*args)

    monkeypatch.setattr(store_module, "_read_chunk", held_read_chunk)
    with broker(schema_registry=True, configs={"kafkastore.timeout.ms": "500"}) as running:
        registry_url = running.schema_registry_url
        embedded = running.embedded
        assert registry_url is not None and embedded is not None

        def log_end() -> int:
            partition = embedded.broker.topics.partition("_schemas", 0)
            assert partition is not None
            return partition.log_end_offset

        a_schema, b_schema = record("Timed", ("a", "int")), record("Other", ("b", "string"))
        gate.clear()
        a = call(registry_url, "POST", "/subjects/a/versions", {"schema": a_schema})
        assert (a.status, a.json()["error_code"]) == (500, 50002), a.body
        a_end = embedded.on_loop(log_end)
        answers: list[Answer] = []
        second = threading.Thread(
            target=lambda: answers.append(
                call(registry_url, "POST", "/subjects/b/versions", {"schema": b_schema})
            )
        )
        second.start()
        deadline = time.monotonic() + 1.0
        while embedded.on_loop(log_end) == a_end and time.monotonic() < deadline:
            time.sleep(0.02)  # the second register appended (planned without the first)?
        gate.set()
        second.join(15)
        b = answers[0]
        while b.status == 500 and b.json()["error_code"] in (50002, 50004):  # retriable
            b = call(registry_url, "POST", "/subjects/b/versions", {"schema": b_schema})
        assert b.status == 200, b.body
        b_id = b.json()["id"]
        stored = call(registry_url, "GET", f"/schemas/ids/{b_id}").json()["schema"]
        assert json.loads(stored) == json.loads(b_schema)
        a_found = call(registry_url, "POST", "/subjects/a", {"schema": a_schema}).json()
        assert a_found["id"] != b_id  # the first write was applied after all, with its id


# --- listener and TLS -------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("registry-tls"))


def tls_props(m: TlsMaterial, client_auth: str = "none") -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(m.broker_keystore_pem),
        "ssl.key.password": m.password,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(m.ca_pem),
        "ssl.client.auth": client_auth,
    }


SSL_LISTENERS = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}


@pytest.mark.parametrize(
    ("listen", "with_ssl_listener", "with_keystore", "scheme"),
    [
        ("127.0.0.1:0", False, False, "http"),
        ("127.0.0.1:0", True, True, "https"),  # bare: https beside an SSL listener
        ("http://127.0.0.1:0", True, True, "http"),
        ("https://127.0.0.1:0", True, True, "https"),
        ("https://127.0.0.1:0", False, True, "https"),  # the broker-wide ssl.* settings
        ("https://127.0.0.1:0", False, False, "needs a keystore"),
    ],
)
def test_listener_scheme(
    tls: TlsMaterial, listen: str, with_ssl_listener: bool, with_keystore: bool, scheme: str
) -> None:
    props = {"schema.registry.listeners": listen}
    props.update(SSL_LISTENERS if with_ssl_listener else {})
    props.update(tls_props(tls) if with_keystore else {})
    config = load_config(props, data_dir=Path("unused"))
    if scheme not in ("http", "https"):
        with pytest.raises(StartupError, match=scheme):
            bind_registry_listener(config)
        return
    listener = bind_registry_listener(config)
    assert listener is not None
    try:
        port = listener.sock.getsockname()[1]
        assert listener.url == f"{scheme}://127.0.0.1:{port}" and port > 0
        assert (listener.tls is not None) == (scheme == "https")
        if listener.tls is not None:
            assert listener.tls.verify_mode == ssl.CERT_NONE
            assert listener.client_tls is not None
    finally:
        listener.close()


def test_listener_off_busy_port_and_client_auth(tls: TlsMaterial) -> None:
    assert bind_registry_listener(load_config({}, data_dir=Path("unused"))) is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = load_config({"schema.registry.listeners": f"127.0.0.1:{port}"})
        with pytest.raises(StartupError, match=f"cannot listen on 127.0.0.1:{port} for the schema"):
            bind_registry_listener(config)
    props = {**SSL_LISTENERS, **tls_props(tls, "required"), "schema.registry.listeners": ":0"}
    listener = bind_registry_listener(load_config(props))
    assert listener is not None and listener.tls is not None
    try:
        assert listener.tls.verify_mode == ssl.CERT_REQUIRED
    finally:
        listener.close()


def test_https_registry_with_client_certificates(tls: TlsMaterial, tmp_path: Path) -> None:
    # No scheme: https, as the broker has an SSL listener.
    configs = {**SSL_LISTENERS, **tls_props(tls, "required")}
    configs["schema.registry.listeners"] = "127.0.0.1:0"
    with broker(configs=configs, data_dir=tmp_path) as running:
        registry_url = running.schema_registry_url
        assert registry_url is not None and registry_url.startswith("https://127.0.0.1:")
        trusting = ssl.create_default_context(cafile=str(tls.ca_pem))
        mutual = ssl.create_default_context(cafile=str(tls.ca_pem))
        mutual.load_cert_chain(str(tls.client_cert_pem), str(tls.client_key_pem), tls.password)
        answer = call(registry_url, "GET", "/schemas/types", context=mutual)
        assert (answer.status, answer.json()) == (200, ["JSON", "PROTOBUF", "AVRO"])
        schema_id = register_tls(registry_url, mutual)
        assert call(registry_url, "GET", f"/schemas/ids/{schema_id}", context=mutual).status == 200
        with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
            urllib.request.urlopen(f"{registry_url}/subjects", context=trusting, timeout=10).read()
        with pytest.raises((ssl.SSLError, urllib.error.URLError)):  # the test CA is not trusted
            urllib.request.urlopen(f"{registry_url}/subjects", timeout=10).read()


def register_tls(registry_url: str, context: ssl.SSLContext) -> int:
    body = {"schema": record("OverTls", ("a", "int"))}
    answer = call(registry_url, "POST", "/subjects/tls-value/versions", body, context=context)
    assert answer.status == 200, answer.body
    return answer.json()["id"]


# --- the command line -------------------------------------------------------------------


def test_serve_flag_serves_the_registry(tmp_path: Path) -> None:
    args = [*serve_args(tmp_path / "data"), "--schema-registry-listen", "127.0.0.1:0"]
    process = ServeProcess(args, tmp_path / "serve.log").wait_ready()
    try:
        # Logged before the ready line: the registry serves once the broker says ready.
        found = re.search(r"schema registry on (http://127\.0\.0\.1:\d+)", process.stderr_text())
        assert found is not None, process.stderr_text()
        answer = call(found.group(1), "GET", "/schemas/types")
        assert (answer.status, answer.json()) == (200, ["JSON", "PROTOBUF", "AVRO"])
    finally:
        assert process.terminate() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--schema-registry-listen", "ftp://127.0.0.1:0"],
            "kafkette: --schema-registry-listen: expected http:// or https://, got 'ftp://127.0.0.1:0'",
        ),
        (
            ["--config", "schema.compatibility.level=sideways"],
            "kafkette: invalid value 'sideways' for configuration schema.compatibility.level:",
        ),
    ],
)
def test_serve_refuses_bad_registry_settings(tmp_path: Path, args: list[str], message: str) -> None:
    code, lines = serve_refused(*serve_args(tmp_path / "data"), *args)
    assert code == 2 and lines[-1].startswith(message), lines


def _property_chain(levels: int, leaf_type: str) -> str:
    """A JSON Schema whose ``d0`` has two properties of schema ``d1``, and so on: 2^levels
    paths to the leaf, so a changed leaf is found on each of them."""
    definitions: dict = {f"d{levels}": {"type": leaf_type}}
    for i in range(levels):
        ref = {"$ref": f"#/definitions/d{i + 1}"}
        definitions[f"d{i}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    return json.dumps({"definitions": definitions, "$ref": "#/definitions/d0"})


def test_a_schema_too_complex_to_compare_is_422_not_a_500(url: str) -> None:
    """The comparison's step budget (formats/budget.py) runs out: no verdict, 42201."""
    assert register(url, "too-complex", _property_chain(40, "integer"), schemaType="JSON") > 0
    body = json.dumps({"schema": _property_chain(40, "string"), "schemaType": "JSON"})
    answer = call(url, "POST", "/subjects/too-complex/versions", body.encode(),
                  headers={"Content-Type": JSON})  # fmt: skip
    assert (answer.status, answer.json()) == (
        422,
        {"error_code": 42201, "message": "schema too complex to compare"},
    ), answer.body[:300]
