"""``--log-format json``: one JSON object per line, for log shippers.

Every line has ``ts`` (ISO 8601, UTC, milliseconds), ``level``, ``logger`` and
``message``; a traceback, when there is one, rides in ``exc``. A request-log line
(logger ``kafkette.request``) adds its fields as they are, typed (``api``,
``version``, ``client_id``, ``peer``, ``correlation_id``, ``time_ms``,
``response_bytes``, ``errors``), so a machine never parses the message text.
"""

from __future__ import annotations

import json
import logging
import time

# The structured fields a log call may attach with ``extra=`` (request_log does).
STRUCTURED_FIELDS = (
    "api",
    "version",
    "client_id",
    "peer",
    "correlation_id",
    "time_ms",
    "queue_ms",
    "response_bytes",
    "errors",
    "held_back",
)


class JsonFormatter(logging.Formatter):
    """Format a record as one line of JSON (never a raw newline inside)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": _iso_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in STRUCTURED_FIELDS:
            value = record.__dict__.get(name, _MISSING)
            if value is not _MISSING:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False, default=str)


_MISSING = object()


def _iso_utc(created: float) -> str:
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
