"""How the message browser shows a key, a value or a header: UTF-8, JSON or hex.

Kafka records are bytes; Kafka's own tools print them as UTF-8 text
(``kafka-console-consumer.sh`` uses a StringDeserializer by default) and the web
consoles people use offer JSON and hex besides. ``auto`` picks per record: pretty
JSON when the bytes are a JSON object or array, UTF-8 when they decode, hex otherwise.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

FORMATS = ("auto", "utf8", "json", "hex")


def show(data: bytes | None, fmt: str) -> tuple[str, str]:
    """``(text, format used)`` for ``data`` in ``fmt`` (falls back when it does not fit:
    JSON that does not parse shows as UTF-8, bytes that do not decode as hex)."""
    if data is None:
        return "null", "null"
    if fmt == "hex":
        return data.hex(" "), "hex"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex(" "), "hex"
    if fmt in ("json", "auto"):
        stripped = text.lstrip()
        if fmt == "json" or stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json"
            except ValueError:
                pass
    return text, "utf8"


def timestamp_text(ms: int) -> str:
    """A record timestamp as ISO 8601 UTC with milliseconds (``-1``: none)."""
    if ms < 0:
        return "-"
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch from ``text``: digits are milliseconds, anything else
    ISO 8601 (no zone means UTC). Raises ValueError."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def size_text(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
