"""tools/record_format.py without a broker: format strings and JSON records, edge by edge.

The CLI tests (test_consume.py, test_produce.py) show the same code end to end against real
brokers; these pin the corners that are cheaper to reach here (escapes, bad input, bytes that
are not UTF-8). ``Record`` stands in for confluent-kafka's ``Message``: the same methods.
"""

from __future__ import annotations

import json

import pytest

from kafkette.tools.record_format import (
    FormatError,
    bytes_to_json,
    compile_format,
    json_to_bytes,
    message_to_json,
    parse_format,
    parse_json_record,
)


class Record:
    def __init__(self, key: bytes | None, value: bytes | None, headers=None, error=None) -> None:
        self._key, self._value, self._headers, self._error = key, value, headers, error

    def key(self): return self._key
    def value(self): return self._value
    def headers(self): return self._headers
    def error(self): return self._error
    def topic(self): return "t"
    def partition(self): return 3
    def offset(self): return 42
    def timestamp(self): return (1, 1700000000000)


def test_parse_format_escapes_and_literals() -> None:
    assert parse_format(r"a\x41\tb%%%s\q\\") == [b"aA\tb%", "s", b"\\q\\"]
    with pytest.raises(FormatError, match="unknown format token %q"):
        parse_format("%q")
    with pytest.raises(FormatError, match="lone %"):
        parse_format("abc%")
    with pytest.raises(FormatError, match="two hex digits"):
        parse_format(r"\xZZ")


def test_compiled_format_renders_every_token_and_skips_errors() -> None:
    render = compile_format(r"%t %p %o %T [%k|%K] [%s|%S] %h\n")
    batch = [Record(b"k", b"v", [("a", b"1"), ("b", None)]), Record(None, None),
             Record(None, None, error="partition EOF")]
    assert render(batch) == [
        b"t 3 42 1700000000000 [k|1] [v|1] a=1,b=\n",
        b"t 3 42 1700000000000 [|-1] [|-1] \n",
    ]
    assert compile_format("")([Record(b"k", b"v")]) == [b""]
    # a format is data, never code
    assert compile_format("'''\"\"\"{}%s")([Record(None, b"x")]) == [b"'''\"\"\"{}x"]


def test_json_bytes_round_trip() -> None:
    for data in (None, b"", b"text", "é".encode(), b"\x00\xff\xfe"):
        assert json_to_bytes(json.loads(json.dumps(bytes_to_json(data))), "value") == data
    assert bytes_to_json(b"\xff") == {"base64": "/w=="}
    assert json_to_bytes({"a": [1, 2]}, "value") == b'{"a":[1,2]}'
    assert json_to_bytes(7, "value") == b"7"
    with pytest.raises(ValueError, match="invalid base64"):
        json_to_bytes({"base64": "!!"}, "value")


def test_message_to_json_then_parse_json_record() -> None:
    line = message_to_json(Record(b"\xff", "ü".encode(), [("h", b"1"), ("h", None)]))
    assert json.loads(line) == {
        "topic": "t", "partition": 3, "offset": 42, "timestamp": 1700000000000,
        "timestamp_type": "CreateTime", "key": {"base64": "/w=="}, "value": "ü",
        "headers": [["h", "1"], ["h", None]],
    }
    record = parse_json_record(line.encode())
    assert (record.key, record.value, record.headers, record.partition, record.timestamp) == (
        b"\xff", "ü".encode(), [("h", b"1"), ("h", None)], 3, 1700000000000)


@pytest.mark.parametrize(("line", "message"), [
    (b"[1]", "must be a JSON object"),
    (b"{", "not JSON"),
    (b'{"partition": "1"}', "partition must be an integer"),
    (b'{"timestamp": true}', "timestamp must be an integer"),
    (b'{"headers": [["a"]]}', r"each item must be \[name, value\]"),
    (b'{"headers": 5}', "headers must be a list"),
])
def test_parse_json_record_names_the_problem(line: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_json_record(line)
