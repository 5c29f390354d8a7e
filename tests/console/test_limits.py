"""The console under hostile or huge record contents and requests: bounded reads, no 500s,
exact from-timestamp lookups, DNS-rebinding and body-size refusals; and its Schemas pages
(the broker serves a schema registry too) showing what a client registered, hostile subject
names included. Real broker process, real clients (confluent-kafka and its
SchemaRegistryClient), real HTTP."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from html import escape
from urllib.parse import urlencode

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.console import support

ConsoleBroker, http = support.ConsoleBroker, support.http

WRITE_HEADERS = {"Content-Type": "application/json", "X-Kafkette-Console": "1"}
MIB = 1024 * 1024
SHOW_BYTES = 64 * 1024  # console.values.SHOW_BYTES


@pytest.fixture(scope="module")
def broker(start_console: Callable[..., ConsoleBroker]) -> ConsoleBroker:
    started = start_console("--ui-allow-writes", "--schema-registry-listen", "127.0.0.1:0")
    admin = AdminClient({"bootstrap.servers": started.bootstrap})
    topics = [NewTopic(name, 1, 1) for name in ("big", "odd", "times")]
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)
    return started


def _produce(bootstrap: str, topic: str, records: list[dict], **config: object) -> list[int]:
    """Produce ``records`` (kwargs of Producer.produce) and return their offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **config})
    offsets: list[int] = []
    errors: list[object] = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())

    for record in records:
        producer.produce(topic, on_delivery=delivered, **record)
    assert producer.flush(30) == 0
    assert not errors, errors
    return sorted(offsets)


def test_huge_compressed_records_are_read_within_a_budget_and_cut(broker: ConsoleBroker) -> None:
    # Six 1 MiB values that compress to almost nothing: one look must stop at about
    # 4 MiB decoded, and each shown value is cut at 64 KiB.
    values = [bytes([65 + i]) * MIB for i in range(6)]
    _produce(
        broker.bootstrap,
        "big",
        [{"value": v} for v in values],
        **{"compression.type": "gzip", "message.max.bytes": 8 * MIB, "linger.ms": 200},
    )
    reply = http(broker.url + "api/topics/big/0/records?from=offset&offset=0&count=500")
    assert reply.status == 200
    rows = reply.json()["records"]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]  # 4 MiB budget, not all six
    for row, value in zip(rows, values, strict=False):
        shown = value[:SHOW_BYTES].decode()
        assert row["value"] == f"{shown}… {MIB - SHOW_BYTES} more bytes"
    hexed = http(broker.url + "api/topics/big/0/records?from=offset&offset=5&format=hex").json()
    assert [r["offset"] for r in hexed["records"]] == [5]  # always at least one record
    assert hexed["records"][0]["value"].endswith(f"… {MIB - SHOW_BYTES} more bytes")
    page = http(broker.url + "topics/big/0?from=offset&offset=0&count=500&format=json")
    assert page.status == 200
    assert f"… {MIB - SHOW_BYTES} more bytes" in page.text
    assert len(page.body) < 2 * MIB


def test_record_contents_never_cause_a_500(broker: ConsoleBroker) -> None:
    int64_max = 2**63 - 1
    _produce(
        broker.bootstrap,
        "odd",
        [
            {"value": b"far future", "timestamp": int64_max},
            {"value": b"[" * 100_000},
            {"value": b'{"a": ' * 50_000},
        ],
    )
    for fmt in ("auto", "json", "utf8", "hex"):
        api = http(broker.url + f"api/topics/odd/0/records?from=offset&offset=0&format={fmt}")
        assert api.status == 200, api.text
        rows = api.json()["records"]
        assert [r["offset"] for r in rows] == [0, 1, 2]
        assert rows[0]["timestamp"] == int64_max
        page = http(broker.url + f"topics/odd/0?from=offset&offset=0&format={fmt}")
        assert page.status == 200, page.text
        assert str(int64_max) in page.text  # past year 9999: shown as milliseconds
    at_max = http(broker.url + f"api/topics/odd/0/records?from=timestamp&timestamp={int64_max}")
    assert at_max.status == 200
    assert [r["offset"] for r in at_max.json()["records"]] == [0, 1, 2]
    for bad in ("99999999999999999999", "-99999999999999999999", "9" * 5000, "not-a-time"):
        query = f"?from=timestamp&timestamp={bad}"
        assert http(broker.url + "api/topics/odd/0/records" + query).status == 400
        assert http(broker.url + "topics/odd/0" + query).status == 400


def test_from_timestamp_finds_the_record_inside_a_batch(broker: ConsoleBroker) -> None:
    base_ts = 1_700_000_000_000
    # One batch (lingering producer): the log knows only the batch's max timestamp.
    offsets = _produce(
        broker.bootstrap,
        "times",
        [{"value": f"r{i}".encode(), "timestamp": base_ts + 10 * i} for i in range(5)],
        **{"linger.ms": 500, "batch.num.messages": 100},
    )
    assert offsets == [0, 1, 2, 3, 4]
    for wanted, first in ((base_ts + 20, 2), (base_ts + 15, 2), (base_ts, 0), (base_ts + 40, 4)):
        reply = http(
            broker.url + f"api/topics/times/0/records?from=timestamp&timestamp={wanted}&count=1"
        )
        assert reply.status == 200
        assert [r["offset"] for r in reply.json()["records"]] == [first], wanted
    page = http(broker.url + f"topics/times/0?from=timestamp&timestamp={base_ts + 30}&count=1")
    assert "offset 3" in page.text


def _raw(broker: ConsoleBroker, request: bytes) -> bytes:
    netloc = broker.url.split("//")[1].rstrip("/")
    with socket.create_connection(
        (netloc.split(":")[0], int(netloc.rsplit(":", 1)[1])), timeout=30
    ) as sock:
        sock.sendall(request)
        return sock.recv(200)


def test_only_this_consoles_host_names_are_answered(broker: ConsoleBroker) -> None:
    port = int(broker.url.rstrip("/").rsplit(":", 1)[1])
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
        assert http(broker.url + "api/overview", headers={"Host": host}).status == 200, host
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}"):
        reply = http(broker.url + "api/overview", headers={"Host": host})
        assert reply.status == 421, host
        assert b"node_id" not in reply.body
    no_host = _raw(broker, b"GET /api/overview HTTP/1.0\r\n\r\n")
    assert no_host.startswith(b"HTTP/1.1 400") or no_host.startswith(b"HTTP/1.0 400"), no_host
    foreign = http(broker.url + "api/overview", headers={"Origin": "http://evil.example"})
    assert foreign.status == 403
    own = http(broker.url + "api/overview", headers={"Origin": f"http://localhost:{port}"})
    assert own.status == 200


def test_produce_refuses_a_body_over_2_mib(broker: ConsoleBroker) -> None:
    url = broker.url + "api/produce"
    netloc = broker.url.split("//")[1].rstrip("/")
    head = (
        f"POST /api/produce HTTP/1.1\r\nHost: {netloc}\r\n"
        "Content-Type: application/json\r\nX-Kafkette-Console: 1\r\n"
    )
    # No length given (chunked): the read stops once past 2 MiB. Exactly one byte more is
    # sent, all of which the console reads before answering (no reset while sending).
    body = b"x" * (2 * MIB + 1)
    chunked = _raw(
        broker,
        (head + "Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n").encode()
        + body
        + b"\r\n0\r\n\r\n",
    )
    assert chunked.startswith(b"HTTP/1.1 413"), chunked
    # A claimed length is refused before the body is read (none is sent here).
    claimed = _raw(broker, (head + f"Content-Length: {1024 * MIB}\r\n\r\n").encode())
    assert claimed.startswith(b"HTTP/1.1 413"), claimed
    small = json.dumps({"topic": "odd", "value": "ok"}).encode()
    assert http(url, method="POST", body=small, headers=WRITE_HEADERS).status == 200


def test_shown_start_offset_is_clamped_to_the_log_start(broker: ConsoleBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("trimmed", 1, 1)]).values():
        future.result(timeout=30)
    _produce(broker.bootstrap, "trimmed", [{"value": f"t{i}".encode()} for i in range(5)])
    for future in admin.delete_records([TopicPartition("trimmed", 0, 3)]).values():
        future.result(timeout=30)
    reply = http(broker.url + "api/topics/trimmed/0/records?from=offset&offset=0").json()
    assert reply["start_offset"] == 3
    assert [r["offset"] for r in reply["records"]] == [3, 4]
    early = http(broker.url + "api/topics/trimmed/0/records?from=timestamp&timestamp=0").json()
    assert early["start_offset"] == 3


SKU = {"name": "sku", "type": "string"}
BASE = json.dumps({"type": "record", "name": "Base", "namespace": "shop", "fields": [SKU]})
QTY = {"name": "qty", "type": "int", "default": 1}
BASE_2 = json.dumps({"type": "record", "name": "Base", "namespace": "shop", "fields": [SKU, QTY]})
BASE_FIELD = {"name": "b", "type": "Base"}  # shop.Base, from the reference
ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [BASE_FIELD]})
PROTO = 'syntax = "proto3";\npackage shop;\n\nmessage Ping {\n  int32 n = 1;\n}\n'


def test_schemas_pages_show_what_a_client_registered(broker: ConsoleBroker) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

    found = re.search(r"schema registry on (http://\S+)", broker.log_text())
    assert found, "no 'schema registry on' line"
    registry = found.group(1)
    client = SchemaRegistryClient({"url": registry})
    hostile = "orders" + support.HOSTILE  # markup in a subject name: text on every page
    base_1 = client.register_schema("base", Schema(BASE, "AVRO"))
    base_2 = client.register_schema("base", Schema(BASE_2, "AVRO"))
    order = client.register_schema(
        hostile, Schema(ORDER, "AVRO", [SchemaReference("shop.Base", "base", 1)])
    )
    ping = client.register_schema("pings/v1", Schema(PROTO, "PROTOBUF"))
    client.set_compatibility("base", "FULL")
    stored_base_1 = client.get_version("base", 1).schema.schema_str

    listing = http(broker.url + "api/schemas").json()
    assert listing["registry"] == {
        "url": registry, "is_leader": True, "leader_url": registry, "subjects": 3,
        "schemas": 4, "max_id": max(base_1, base_2, order, ping), "mode": "READWRITE",
        "compatibility": "BACKWARD",
    }  # fmt: skip
    rows = {row.pop("subject"): row for row in listing["subjects"]}
    assert rows == {
        "base": {"schema_type": "AVRO", "versions": [1, 2], "latest_id": base_2,
                 "compatibility": "FULL", "compatibility_own": True},
        hostile: {"schema_type": "AVRO", "versions": [1], "latest_id": order,
                  "compatibility": "BACKWARD", "compatibility_own": False},
        "pings/v1": {"schema_type": "PROTOBUF", "versions": [1], "latest_id": ping,
                     "compatibility": "BACKWARD", "compatibility_own": False},
    }  # fmt: skip

    def api(subject: str, version: str | None = None) -> support.Reply:
        query = {"subject": subject} | ({} if version is None else {"version": version})
        return http(broker.url + "api/schema?" + urlencode(query))

    first = api("base", "1").json()["version"]
    assert first == {"subject": "base", "version": 1, "id": base_1, "schema_type": "AVRO",
                     "schema": stored_base_1, "references": [],
                     "referenced_by": [{"subject": hostile, "version": 1}]}  # fmt: skip
    assert api("base").json()["version"]["version"] == 2  # no version: the latest
    assert api(hostile).json()["version"]["references"] == [
        {"name": "shop.Base", "subject": "base", "version": 1}
    ]
    assert api("pings/v1").json()["version"]["schema"] == client.get_schema(ping).schema_str
    assert api("base", "9").status == 404 and api("nope").status == 404
    assert api("base", "two").json() == {
        "error": "version must be a version number or latest, not 'two'"
    }

    page = http(broker.url + "schemas")
    assert page.status == 200 and '<a href="/schemas" class="active">Schemas</a>' in page.text
    assert support.HOSTILE not in page.text and escape(hostile, quote=True) in page.text
    detail = http(broker.url + "schema?" + urlencode({"subject": hostile})).text
    assert support.HOSTILE not in detail
    assert '<a href="/schema?subject=base&amp;version=1">base</a>' in detail  # the reference
    pretty = json.dumps(json.loads(client.get_schema(order).schema_str), indent=2)
    assert escape(pretty, quote=True) in detail and pretty.count("\n") > 3
    proto = http(broker.url + "schema?" + urlencode({"subject": "pings/v1"})).text
    assert escape(client.get_schema(ping).schema_str, quote=True) in proto  # as stored
    assert http(broker.url + "schema?subject=base&version=0").status == 400
