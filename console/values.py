"""How the message browser shows a key, a value or a header: UTF-8, JSON or hex.

Kafka records are bytes; Kafka's own tools print them as UTF-8 text
(``kafka-console-consumer.sh`` uses a StringDeserializer by default) and the web
consoles people use offer JSON and hex besides. ``auto`` picks per record: pretty
JSON when the bytes are a JSON object or array, UTF-8 when they decode, hex otherwise.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

INT64_MAX = 2**63 - 1
FORMATS = ("auto", "utf8", "json", "hex")
# Bytes of one key, value or header shown at most: a page shows records, not dumps.
SHOW_BYTES = 64 * 1024


def show(data: bytes | None, fmt: str, limit: int = SHOW_BYTES) -> tuple[str, str]:
    """``(text, format used)`` for ``data`` in ``fmt`` (falls back when it does not fit:
    JSON that does not parse shows as UTF-8, bytes that do not decode as hex). Only the
    first ``limit`` bytes are shown, followed by "… N more bytes"."""
    if data is None:
        return "null", "null"
    more = max(len(data) - limit, 0)
    text, used = _show(data[:limit] if more else data, fmt, cut=more > 0)
    if more:
        text += f"… {more} more bytes"
    return text, used


def _show(data: bytes, fmt: str, *, cut: bool) -> tuple[str, str]:
    if fmt == "hex":
        return data.hex(" "), "hex"
    try:
        text = _decode(data, cut=cut)
    except UnicodeDecodeError:
        return data.hex(" "), "hex"
    if fmt in ("json", "auto") and not cut:
        stripped = text.lstrip()
        if fmt == "json" or stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json"
            except (ValueError, RecursionError):  # nesting deeper than Python recurses
                pass
    return text, "utf8"


def _decode(data: bytes, *, cut: bool) -> str:
    """UTF-8 text of ``data``; a cut may have split the last character (up to 3 bytes)."""
    if not cut:
        return data.decode("utf-8")
    for drop in range(4):
        try:
            return data[: len(data) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise UnicodeDecodeError("utf-8", data, 0, len(data), "not UTF-8")


def timestamp_text(ms: int) -> str:
    """A record timestamp as ISO 8601 UTC with milliseconds (``-1``: none)."""
    if ms < 0:
        return "-"
    try:
        moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):  # past year 9999: the broker takes any int64
        return str(ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch from ``text``: digits are milliseconds, anything else
    ISO 8601 (no zone means UTC). Raises ValueError (also outside int64)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        ms = int(text) if len(text) <= 25 else INT64_MAX + 1
    else:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            shown = repr(text[:64]) + ("..." if len(text) > 64 else "")
            raise ValueError(
                f"timestamp {shown} is neither milliseconds since the epoch nor an ISO 8601 "
                "time: write e.g. 1763892000000 or 2026-11-23T10:00:00Z"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            ms = int(moment.timestamp() * 1000)
        except (OverflowError, OSError) as exc:
            raise ValueError(f"timestamp out of range: {exc}") from None
    if not -INT64_MAX - 1 <= ms <= INT64_MAX:
        raise ValueError("timestamp out of range (int64 milliseconds)")
    return ms


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
