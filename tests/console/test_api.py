"""The console without a browser: its JSON API against what clients see, read-only mode
(403), the write guard, escaping of record data, and startup errors.

Brokers are real ``kafkette serve`` processes; records come from confluent-kafka.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from html import escape

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.console import support

GROUP, HOSTILE, TOPIC = support.GROUP, support.HOSTILE, support.TOPIC
PARTITIONS = support.PARTITIONS
ConsoleBroker, Workload, http = support.ConsoleBroker, support.Workload, support.http
ShareWorkload, SHARE_GROUP, SHARE_TOPIC = (
    support.ShareWorkload, support.SHARE_GROUP, support.SHARE_TOPIC)

WRITE_HEADERS = {"Content-Type": "application/json", "X-Kafkette-Console": "1"}


def test_api_topics_match_the_broker_as_clients_see_it(
    console: ConsoleBroker, workload: Workload
) -> None:
    topics = {t["name"]: t for t in http(console.url + "api/topics").json()}
    assert TOPIC in topics
    orders = topics[TOPIC]
    assert orders["partition_count"] == PARTITIONS
    assert orders["internal"] is False
    consumer = Consumer({"bootstrap.servers": workload.bootstrap, "group.id": "api-probe"})
    try:
        for row in orders["partitions"]:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(TOPIC, row["partition"]), timeout=15
            )
            assert (row["log_start_offset"], row["high_watermark"]) == (low, high)
            assert row["size_bytes"] > 0
    finally:
        consumer.close()


def test_api_records_latest_are_the_last_records_a_consumer_reads(
    console: ConsoleBroker, workload: Workload
) -> None:
    reply = http(console.url + f"api/topics/{TOPIC}/1/records?from=latest&count=4&format=hex")
    assert reply.status == 200
    got = reply.json()["records"]
    expected = workload.records[1][-4:]
    assert [r["offset"] for r in got] == [offset for offset, _, _ in expected]
    for row, (_, key, value) in zip(got, expected, strict=True):
        assert row["value"] == value.hex(" ")
        assert row["key"] == (None if key is None else key.hex(" "))


def test_api_records_from_offset_and_timestamp_and_formats(
    console: ConsoleBroker, workload: Workload
) -> None:
    rows = http(console.url + f"api/topics/{TOPIC}/0/records?from=offset&offset=12&count=3").json()
    by_offset = {r["offset"]: r for r in rows["records"]}
    assert list(by_offset) == [12, 13, 14]
    assert by_offset[12]["value_format"] == "json"
    assert json.loads(by_offset[12]["value"]) == {"order": 7, "items": ["a", "b"]}
    assert "\n  " in by_offset[12]["value"]  # pretty-printed
    assert by_offset[13]["value_format"] == "hex"  # not UTF-8
    assert by_offset[13]["key"] is None
    assert by_offset[13]["headers"] == [["bin", "00 ff"]]  # not UTF-8: hex
    assert by_offset[14]["value"] == HOSTILE  # JSON carries the text as it is

    # From a timestamp before everything: offset 0; after everything: nothing.
    early = http(console.url + f"api/topics/{TOPIC}/0/records?from=timestamp&timestamp=0&count=2")
    assert [r["offset"] for r in early.json()["records"]] == [0, 1]
    late = http(
        console.url + f"api/topics/{TOPIC}/0/records?from=timestamp&timestamp=2999-01-01T00:00:00Z"
    )
    assert late.json()["records"] == []
    assert http(console.url + f"api/topics/{TOPIC}/0/records?from=sideways").status == 400
    assert http(console.url + f"api/topics/{TOPIC}/9/records").status == 404
    assert http(console.url + "api/topics/no-such-topic").status == 404


def test_api_group_lag_equals_what_the_clients_see(
    console: ConsoleBroker, workload: Workload
) -> None:
    group = http(console.url + f"api/group?id={GROUP}").json()
    assert group["state"] == "Stable"
    assert [m["client_id"] for m in group["members"]] == ["billing-1"]
    assert sorted(p for _, p in group["members"][0]["assignment"]) == list(range(PARTITIONS))
    seen = workload.client_view_of_lag()
    rows = {r["partition"]: r for r in group["lag"] if r["topic"] == TOPIC}
    assert {
        p: (r["committed_offset"], r["log_end_offset"], r["lag"]) for p, r in rows.items()
    } == seen
    assert group["total_lag"] == sum(lag for _, _, lag in seen.values()) == 18
    listed = {g["group_id"]: g for g in http(console.url + "api/groups").json()}
    assert listed[GROUP]["total_lag"] == 18


def test_read_only_by_default_no_form_and_403(console: ConsoleBroker, workload: Workload) -> None:
    body = json.dumps({"topic": TOPIC, "value": "nope"}).encode()
    reply = http(console.url + "api/produce", method="POST", body=body, headers=WRITE_HEADERS)
    assert reply.status == 403
    assert "read-only" in reply.json()["error"]
    page = http(console.url + "produce")
    assert page.status == 403
    assert 'id="produce"' not in page.text
    assert 'href="/produce"' not in http(console.url).text
    high = http(console.url + f"api/topics/{TOPIC}").json()["partitions"]
    assert sum(p["high_watermark"] for p in high) == sum(map(len, workload.records.values()))


def test_pages_escape_record_data(console: ConsoleBroker, workload: Workload) -> None:
    page = http(console.url + f"topics/{TOPIC}/2?from=latest&count=5&format=utf8")
    assert page.status == 200
    assert "<script>window.__pwned" not in page.text
    assert "<img src=x" not in page.text
    assert escape(HOSTILE, quote=True) in page.text  # value, key and header: shown as text
    assert page.text.count(escape(HOSTILE, quote=True)) == 3
    assert "script-src 'self'" in page.headers["content-security-policy"]


def test_html_pages_answer(console: ConsoleBroker, workload: Workload) -> None:
    for path in (
        "",
        "topics",
        f"topics/{TOPIC}",
        f"topics/{TOPIC}/0",
        "groups",
        f"group?id={GROUP}",
        "static/console.js",
        "static/console.css",
    ):
        assert http(console.url + path).status == 200, path
    assert http(console.url + "topics/nope").status == 404
    assert http(console.url + "group?id=nope").status == 404
    overview = http(console.url + "api/overview").json()
    assert overview["allow_writes"] is False
    assert overview["topics"] >= 1


def test_unknown_paths_answer_with_the_console_page_or_json(console: ConsoleBroker) -> None:
    """Paths no route takes get the console's own page (JSON under /api/), not
    Starlette's plain-text "Not Found"."""
    for path in ("nope", f"topics/{TOPIC}/not-a-partition", "static/nope.css"):
        page = http(console.url + path)
        assert page.status == 404, path
        assert page.headers["content-type"].startswith("text/html"), path
        assert "- kafkette console</title>" in page.text and 'id="message"' in page.text, path
        assert f"/{path} is not a page of this console" in page.text, path
    api = http(console.url + "api/nope")
    assert api.status == 404 and api.json() == {"error": "unknown path /api/nope"}
    method = http(console.url + "api/produce")  # GET on a POST-only route
    assert method.status == 405 and method.headers["allow"] == "POST"
    assert method.json() == {"error": "GET is not allowed on /api/produce."}


def test_a_bad_timestamp_or_count_is_said_in_plain_words(
    console: ConsoleBroker, workload: Workload
) -> None:
    records = console.url + f"api/topics/{TOPIC}/0/records"
    bad = http(records + "?from=timestamp&timestamp=yesterday")
    assert bad.status == 400
    assert bad.json() == {
        "error": "timestamp 'yesterday' is neither milliseconds since the epoch nor an ISO 8601 "
        "time: write e.g. 1763892000000 or 2026-11-23T10:00:00Z"
    }
    page = http(console.url + f"topics/{TOPIC}/0?from=timestamp&timestamp=yesterday")
    assert page.status == 400 and "neither milliseconds since the epoch" in page.text
    assert "isoformat" not in page.text
    count = http(records + "?count=lots")
    assert (count.status, count.json()) == (
        400,
        {"error": "count must be a whole number, not 'lots'"},
    )


@pytest.fixture(scope="module")
def writable(start_console: Callable[..., ConsoleBroker]) -> ConsoleBroker:
    broker = start_console("--ui-allow-writes")
    http_reply = http(broker.url + "api/overview").json()
    assert http_reply["allow_writes"] is True
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("notes", 2, 1)]).values():
        future.result(30)
    return broker


def test_produce_goes_through_a_client_and_a_consumer_reads_it(writable: ConsoleBroker) -> None:
    body = {
        "topic": "notes",
        "partition": 1,
        "key": "k1",
        "value": '{"a": 1}',
        "headers": [["origin", "console"]],
    }
    reply = http(
        writable.url + "api/produce",
        method="POST",
        body=json.dumps(body).encode(),
        headers=WRITE_HEADERS,
    )
    assert reply.status == 200, reply.body
    delivered = reply.json()
    assert (delivered["topic"], delivered["partition"], delivered["offset"]) == ("notes", 1, 0)

    consumer = Consumer(
        {
            "bootstrap.servers": writable.bootstrap,
            "group.id": "notes-reader",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition("notes", 1, 0)])
        message = None
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                break
        assert message is not None and not message.error()
        assert (message.key(), message.value()) == (b"k1", b'{"a": 1}')
        assert message.headers() == [("origin", b"console")]
    finally:
        consumer.close()
    page = http(writable.url + "produce")
    assert page.status == 200 and 'id="produce"' in page.text


def test_produce_refuses_cross_site_and_bad_requests(writable: ConsoleBroker) -> None:
    url = writable.url + "api/produce"
    body = json.dumps({"topic": "notes", "value": "x"}).encode()
    # A cross-site HTML form can only send these content types, and no custom header.
    form = http(
        url,
        method="POST",
        body=b"topic=notes&value=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status == 403
    no_header = http(url, method="POST", body=body, headers={"Content-Type": "application/json"})
    assert no_header.status == 403
    other_origin = http(
        url, method="POST", body=body, headers={**WRITE_HEADERS, "Origin": "http://evil.example"}
    )
    assert other_origin.status == 403
    assert http(url, method="POST", body=b"{not json", headers=WRITE_HEADERS).status == 400
    unknown = http(
        url,
        method="POST",
        headers=WRITE_HEADERS,
        body=json.dumps({"topic": "absent", "value": "x"}).encode(),
    )
    assert unknown.status == 404
    bad_partition = http(
        url,
        method="POST",
        headers=WRITE_HEADERS,
        body=json.dumps({"topic": "notes", "partition": 7, "value": "x"}).encode(),
    )
    assert bad_partition.status == 502
    assert http(url, method="GET").status == 405
    # Nothing of the refused writes reached the log.
    partitions = http(writable.url + "api/topics/notes").json()["partitions"]
    assert sum(p["high_watermark"] for p in partitions) <= 1


def test_busy_console_port_is_one_line_and_exit_1(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kafkette",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                str(tmp_path / "d"),
                "--ui-listen",
                f"127.0.0.1:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kafkette: cannot listen on 127.0.0.1:{port} for the console:"), (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_broker_with_console_stops_cleanly_on_sigterm(
    start_console: Callable[..., ConsoleBroker],
) -> None:
    broker = start_console()
    assert "(read-only)" in broker.log_text()
    # A keep-alive connection left open must not hold the shutdown up.
    netloc = broker.url.split("//")[1].rstrip("/")
    held = socket.create_connection((netloc.split(":")[0], int(netloc.rsplit(":", 1)[1])))
    held.sendall(f"GET /api/overview HTTP/1.1\r\nHost: {netloc}\r\n\r\n".encode())
    assert held.recv(100).startswith(b"HTTP/1.1 200")
    try:
        broker.stop()
    finally:
        held.close()
    assert broker.proc.returncode == 0, broker.log_text()
    assert "Traceback" not in broker.log_text()


def test_api_share_group_in_flight_and_what_admin_clients_see(
    console: ConsoleBroker, share_workload: ShareWorkload
) -> None:
    seen = share_workload.client_view()
    group = http(console.url + f"api/group?id={SHARE_GROUP}").json()
    assert (group["type"], group["state"], group["assignor"]) == ("share", "Stable", "simple")
    assert [m["member_id"] for m in group["members"]] == seen["members"]
    assert group["members"][0]["assignment"] == [[SHARE_TOPIC, 0]]
    [row] = group["partitions"]
    assert {k: row[k] for k in ("topic", "partition", "start_offset", "in_flight", "acquired",
                                "available", "acknowledged", "archived", "delivery_complete",
                                "lag", "loaded")} == {
        "topic": SHARE_TOPIC, "partition": 0, "start_offset": 4, "in_flight": 6, "acquired": 4,
        "available": 0, "acknowledged": 1, "archived": 1, "delivery_complete": 2, "lag": 4,
        "loaded": True}
    assert (row["start_offset"], row["lag"]) == (seen["start_offset"], seen["lag"])
    assert (group["in_flight"], group["total_lag"]) == (6, 4)
    listed = http(console.url + "api/share-groups").json()
    assert [g["group_id"] for g in listed] == [SHARE_GROUP]
    assert SHARE_GROUP not in {g["group_id"] for g in http(console.url + "api/groups").json()}


def test_no_schemas_entry_without_a_schema_registry(console: ConsoleBroker) -> None:
    """This broker serves no schema registry: no Schemas entry, and its paths say so."""
    assert 'href="/schemas"' not in http(console.url).text
    page = http(console.url + "schemas")
    assert page.status == 404 and "serves no schema registry" in page.text
    assert http(console.url + "schema?subject=x").status == 404
    api = http(console.url + "api/schemas")
    assert (api.status, api.json()) == (404, {"error": "no schema registry on this broker"})
