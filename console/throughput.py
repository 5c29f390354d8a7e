"""The overview's live throughput: the partitions' traffic counters, sampled once a second.

The broker keeps plain running totals per partition (bytes and records in and out);
rates are differences between two samples. The console keeps the last few minutes in
a ring buffer so a page opened now shows a chart at once, and a page that polls gets
new points without the broker doing any work per request.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

import trio

from kafkette.broker.state_view import BrokerStateView

log = logging.getLogger("kafkette.console")

SAMPLE_INTERVAL_S = 1.0
# A failing sample is logged at most this often (it would fail every second).
ERROR_LOG_INTERVAL_S = 60.0
KEEP_SAMPLES = 300  # five minutes at one a second


@dataclass(frozen=True, slots=True)
class Rate:
    at_ms: int
    bytes_in: float
    records_in: float
    bytes_out: float
    records_out: float


class ThroughputSampler:
    """Per-second rates of the whole broker, newest last (``KEEP_SAMPLES`` at most)."""

    def __init__(self, view: BrokerStateView, keep: int = KEEP_SAMPLES) -> None:
        self._view = view
        self.rates: deque[Rate] = deque(maxlen=keep)
        self._last: tuple[float, tuple[int, int, int, int]] | None = None

    def totals(self) -> tuple[int, int, int, int]:
        bytes_in = records_in = bytes_out = records_out = 0
        for p in self._view.partitions():
            bytes_in += p.bytes_in
            records_in += p.records_in
            bytes_out += p.bytes_out
            records_out += p.records_out
        return bytes_in, records_in, bytes_out, records_out

    def sample(self) -> None:
        """Take one sample; from the second on, append the rates since the previous one."""
        now = time.monotonic()
        totals = self.totals()
        if self._last is not None:
            then, before = self._last
            elapsed = max(now - then, 1e-3)
            deltas = [max(a - b, 0) / elapsed for a, b in zip(totals, before, strict=True)]
            self.rates.append(Rate(int(time.time() * 1000), *deltas))
        self._last = (now, totals)

    async def run(self, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        """Sample until cancelled (runs in the console's nursery). A failing sample is
        logged (throttled) and skipped: the chart must never take the broker down."""
        last_logged = -ERROR_LOG_INTERVAL_S
        while True:
            try:
                self.sample()
            except Exception:
                now = time.monotonic()
                if now - last_logged >= ERROR_LOG_INTERVAL_S:
                    last_logged = now
                    log.exception("console throughput sample failed (logged once a minute)")
            await trio.sleep(interval_s)
