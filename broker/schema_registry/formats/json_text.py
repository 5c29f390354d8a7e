"""Compact JSON text as Jackson writes it, so that a schema's stored text is byte for byte what
Confluent's registry (Java, Jackson) stores for it: clients dedupe and compare on that text.

Differences from ``json.dumps(separators=(",", ":"), ensure_ascii=False)`` that matter:
control characters are escaped with upper-case hex (``\\u001F``); ``float`` prints as Java's
``Double.toString`` (``1.0E10``, ``1.0E-5``, ``100.0``), which is how Avro's parser (doubles)
prints numbers; ``Decimal`` prints as Java's ``BigDecimal.toString`` (``1.50``, ``1E+2``), which
is how Confluent's JSON Schema mapper (``USE_BIG_DECIMAL_FOR_FLOATS``) prints them. Non-finite
numbers are quoted (``"NaN"``), Jackson's default.

``load_json`` is the other direction, shared by the AVRO and JSON formats: Python's parser
with Jackson's refusals (``NaN``/``Infinity``, which a stored text could not be re-read with)
and no string that cannot be encoded (a lone surrogate: every answer printing it would fail).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

from kafkette.broker.schema_registry.formats import SchemaFormatError

_SURROGATE = re.compile("[\ud800-\udfff]")

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n"}
_SHORT_ESCAPES["\r"] = "\\r"


def _escape_char(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    return short if short is not None else f"\\u{ord(char):04X}"


_ESCAPES = {chr(code): _escape_char(chr(code)) for code in range(0x20)}
_ESCAPES['"'] = '\\"'
_ESCAPES["\\"] = "\\\\"
_TABLE = str.maketrans(_ESCAPES)


def load_json(text: str, *, decimals: bool = False) -> object:
    """``text`` parsed as JSON (``decimals``: non-integer numbers as ``Decimal``, as written);
    raises ``SchemaFormatError`` for invalid JSON, nesting too deep for the parser, the
    non-standard ``NaN``/``Infinity``/``-Infinity`` and lone surrogates."""
    lone = _SURROGATE.search(text)
    if lone is not None:
        raise SchemaFormatError(f"Invalid JSON: {_lone(lone.group())}")
    try:
        value = json.loads(
            text, parse_float=Decimal if decimals else None, parse_constant=_non_standard
        )
    except RecursionError:
        raise SchemaFormatError("Invalid JSON: nested too deeply") from None
    except ValueError as exc:
        raise SchemaFormatError(f"Invalid JSON: {exc}") from None
    if "\\u" in text:  # an escape may have made a lone surrogate
        _refuse_surrogates(value)
    return value


def _non_standard(name: str) -> object:
    raise SchemaFormatError(f"Invalid JSON: non-standard token '{name}' (not a JSON number)")


def _lone(char: str) -> str:
    return f"unpaired surrogate U+{ord(char):04X} in a string"


def _refuse_surrogates(value: object) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings: list[object] = [item]
        elif isinstance(item, dict):
            strings = list(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for text in strings:
            lone = _SURROGATE.search(text) if isinstance(text, str) else None
            if lone is not None:
                raise SchemaFormatError(f"Invalid JSON: {_lone(lone.group())}")


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (not encodable as UTF-8)."""
    return _SURROGATE.search(text) is not None


def quote(text: str) -> str:
    """``text`` as a JSON string literal."""
    return '"' + text.translate(_TABLE) + '"'


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (shortest digits, as JDK 19+ prints them)."""
    if value != value:
        return '"NaN"'
    if value in (float("inf"), float("-inf")):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    point = len(text) + exponent  # digits before the decimal point
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        if point >= len(text):
            return f"{minus}{text}{'0' * (point - len(text))}.0"
        return f"{minus}{text[:point]}.{text[point:]}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"


def dumps(value: object) -> str:
    """``value`` (from ``json.loads``, dicts in their key order) as compact JSON text."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def _write(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(quote(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, Decimal):
        out.append(str(value) if value.is_finite() else quote(str(value)))
    elif isinstance(value, dict):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(quote(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"not JSON: {type(value).__name__}")


def java_sort_key(text: str) -> bytes:
    """Key ordering strings as Java's ``String.compareTo`` (UTF-16 code units) does, for
    Confluent's ``TreeMap``-sorted (normalized) output."""
    return text.encode("utf-16-be", "surrogatepass")
