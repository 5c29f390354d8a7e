"""How records look as text: kcat-like format strings and kafkette's JSON record objects.

Both directions live here so that ``kafkette consume --json`` writes exactly what
``kafkette produce --json`` reads. Nothing here talks to a broker or imports a client
library: a record is anything with confluent-kafka's ``Message`` methods (``key()``,
``value()``, ``headers()``, ``topic()``, ``partition()``, ``offset()``, ``timestamp()``).

Format strings (``consume -f``) are compiled once into one Python function that renders a
whole batch with a single list comprehension: the consume path does no per-token dispatch
per record, which is what lets it keep up with kcat.

JSON bytes: Kafka keys, values and header values are bytes that may be null. In JSON a
string is the UTF-8 text of the bytes, ``null`` is null, and ``{"base64": "..."}`` is bytes
that are not valid UTF-8. Headers are a list of ``[name, value]`` pairs, because Kafka
allows the same header name twice and keeps their order; a JSON object is accepted on input.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_FORMAT = "%s\\n"

# token -> expression over the message ``m`` that yields bytes
_TOKENS: dict[str, str] = {
    "s": "(m.value() or b'')",
    "k": "(m.key() or b'')",
    "S": "_size(m.value())",
    "K": "_size(m.key())",
    "t": "m.topic().encode()",
    "p": "b'%d' % m.partition()",
    "o": "b'%d' % m.offset()",
    "T": "b'%d' % m.timestamp()[1]",
    "h": "_headers_csv(m.headers())",
}

_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\", "0": b"\0"}

TOKEN_HELP = (
    "%s value, %k key, %S value size, %K key size (-1 for null), %t topic, %p partition, "
    "%o offset, %T timestamp (ms), %h headers (n=v,...), %% a %; escapes \\n \\r \\t "
    "\\\\ \\xNN"
)


class FormatError(ValueError):
    """A format string that cannot be compiled (unknown token, bad escape)."""


def _size(data: bytes | None) -> bytes:
    return b"-1" if data is None else b"%d" % len(data)


def _headers_csv(headers: Sequence[tuple[str, bytes | None]] | None) -> bytes:
    if not headers:
        return b""
    return b",".join(name.encode() + b"=" + (value or b"") for name, value in headers)


def parse_format(text: str) -> list[bytes | str]:
    """Split a format string into literal bytes and token letters (kcat's syntax)."""
    parts: list[bytes | str] = []
    literal = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%":
            if i + 1 >= len(text):
                raise FormatError("the format ends with a lone %: write %% for a percent sign")
            token = text[i + 1]
            if token == "%":
                literal += b"%"
            elif token in _TOKENS:
                if literal:
                    parts.append(bytes(literal))
                    literal.clear()
                parts.append(token)
            else:
                raise FormatError(f"unknown format token %{token}: use {TOKEN_HELP}")
            i += 2
        elif char == "\\" and i + 1 < len(text):
            escape = text[i + 1]
            if escape == "x":
                digits = text[i + 2 : i + 4]
                try:
                    literal.append(int(digits, 16))
                except ValueError:
                    raise FormatError(f"\\x needs two hex digits, got {digits!r}") from None
                i += 4
            elif escape in _ESCAPES:
                literal += _ESCAPES[escape]
                i += 2
            else:
                literal += text[i : i + 2].encode()
                i += 2
        else:
            literal += char.encode()
            i += 1
    if literal:
        parts.append(bytes(literal))
    return parts


def compile_format(text: str) -> Callable[[list[Any]], list[bytes]]:
    """A function from a batch of messages to the rendered bytes of its records.

    Error events in the batch (partition EOF and the like: ``m.error()`` set) are skipped;
    the caller looks at them when the output is shorter than the batch. The format becomes
    the body of one generated list comprehension: literals are inlined as ``bytes``
    constants (``repr``, so no user text is ever evaluated as code).
    """
    parts = parse_format(text)
    expressions = [repr(part) if isinstance(part, bytes) else _TOKENS[part] for part in parts]
    body = " + ".join(expressions) or "b''"
    source = f"def render(batch):\n    return [{body} for m in batch if m.error() is None]\n"
    namespace: dict[str, Any] = {"_size": _size, "_headers_csv": _headers_csv}
    exec(compile(source, f"<format {text!r}>", "exec"), namespace)
    return namespace["render"]


# ---------------------------------------------------------------- JSON records


def bytes_to_json(data: bytes | None) -> Any:
    """``None`` -> null, UTF-8 -> string, anything else -> ``{"base64": ...}``."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def json_to_bytes(value: Any, field: str) -> bytes | None:
    """The inverse of ``bytes_to_json``; other JSON (numbers, objects...) is sent as its text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and value.keys() == {"base64"}:
        try:
            return base64.b64decode(value["base64"], validate=True)
        except (binascii.Error, TypeError):
            raise ValueError(f"{field}: {{'base64': ...}} holds invalid base64") from None
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


TIMESTAMP_TYPES = {0: None, 1: "CreateTime", 2: "LogAppendTime"}


def render_json(batch: list[Any]) -> list[bytes]:
    """``compile_format``'s counterpart for ``--json``: one line per record."""
    return [message_to_json(m).encode() + b"\n" for m in batch if m.error() is None]


def message_to_json(message: Any) -> str:
    """One consumed record as one line of JSON (without the newline)."""
    ts_type, ts = message.timestamp()
    headers = message.headers() or ()
    return json.dumps(
        {
            "topic": message.topic(),
            "partition": message.partition(),
            "offset": message.offset(),
            "timestamp": ts if ts_type else None,
            "timestamp_type": TIMESTAMP_TYPES.get(ts_type),
            "key": bytes_to_json(message.key()),
            "value": bytes_to_json(message.value()),
            "headers": [[name, bytes_to_json(value)] for name, value in headers],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


class JsonRecord:
    """A record to produce, read from one line of JSON."""

    __slots__ = ("headers", "key", "partition", "timestamp", "value")

    def __init__(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
        partition: int | None,
        timestamp: int | None,
    ) -> None:
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
        self.timestamp = timestamp


def _int_field(document: dict[str, Any], name: str) -> int | None:
    value = document.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def _headers_field(value: Any) -> list[tuple[str, bytes | None]]:
    if value is None:
        return []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list):
        pairs = []
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError(f"headers: each item must be [name, value], got {pair!r}")
            pairs.append((pair[0], pair[1]))
    else:
        raise ValueError("headers must be a list of [name, value] pairs or an object")
    headers = []
    for name, header_value in pairs:
        if not isinstance(name, str):
            raise ValueError(f"headers: a header name must be a string, got {name!r}")
        headers.append((name, json_to_bytes(header_value, f"header {name!r}")))
    return headers


def parse_json_record(line: bytes) -> JsonRecord:
    """One input line -> a record; ``ValueError`` names what is wrong with it.

    Known fields: key, value, headers, partition, timestamp (ms). Others (topic, offset,
    timestamp_type, as ``consume --json`` writes them) are ignored, so consumed records can
    be piped straight back into ``produce --json``.
    """
    try:
        document = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(document, dict):
        raise ValueError("each line must be a JSON object with key/value/headers/...")
    return JsonRecord(
        key=json_to_bytes(document.get("key"), "key"),
        value=json_to_bytes(document.get("value"), "value"),
        headers=_headers_field(document.get("headers")),
        partition=_int_field(document, "partition"),
        timestamp=_int_field(document, "timestamp"),
    )
