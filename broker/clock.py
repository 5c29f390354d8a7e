"""The wall clock in Kafka's unit (milliseconds since the epoch), in one place."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
