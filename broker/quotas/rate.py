"""A rate over sampled windows, measured the way Kafka's quota sensors measure it.

``quota.window.num`` samples (11) of ``quota.window.size.seconds`` (1) each. A record
goes into the current sample, or starts the next one when the current one's window has
passed; samples older than all the windows together are forgotten. The rate is the sum
of the samples over the time they span, and that span is never taken as shorter than
``num - 1`` whole windows: a new client is measured as if it had been quiet before, so
a first burst of up to ``(num - 1) * window * quota`` passes unthrottled, as in Kafka.

When a record takes the rate above the quota, the client is throttled for the time that
brings it back down (Kafka's ClientQuotaManager formula):
``(rate - quota) / quota * span``.
"""

from __future__ import annotations


class SampledRate:
    __slots__ = ("_current", "_num", "_starts", "_values", "_window_ms", "last_ms")

    def __init__(self, num: int, window_ms: int, now_ms: float) -> None:
        self._num = num
        self._window_ms = window_ms
        self._starts = [now_ms]
        self._values = [0.0]
        self._current = 0
        self.last_ms = now_ms  # the last record's time (idle rates may be dropped)

    def idle(self, now_ms: float) -> bool:
        """No record within the samples' whole span: the rate is 0, and dropping it
        changes nothing the client would see."""
        return now_ms - self.last_ms >= self._num * self._window_ms

    def record(self, value: float, now_ms: float) -> None:
        self.last_ms = now_ms
        if now_ms - self._starts[self._current] >= self._window_ms:
            self._current = (self._current + 1) % self._num
            if self._current == len(self._starts):
                self._starts.append(now_ms)
                self._values.append(0.0)
            else:
                self._starts[self._current] = now_ms
                self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: float) -> None:
        expire_before = now_ms - self._num * self._window_ms
        for i, start in enumerate(self._starts):
            if start < expire_before:
                self._starts[i] = now_ms
                self._values[i] = 0.0

    def span_ms(self, now_ms: float) -> float:
        """The time the samples cover, at least ``num - 1`` whole windows."""
        self._purge(now_ms)
        elapsed = now_ms - min(self._starts)
        full_windows = int(elapsed // self._window_ms)
        if full_windows < self._num - 1:
            elapsed += (self._num - 1 - full_windows) * self._window_ms
        return elapsed

    def per_second(self, now_ms: float) -> float:
        span = self.span_ms(now_ms)  # purges first
        return sum(self._values) / (span / 1000.0)

    def throttle_ms(self, bound: float, now_ms: float) -> float:
        """0 within ``bound``; else how long until the rate is back down to it."""
        rate = self.per_second(now_ms)
        if rate <= bound:
            return 0.0
        return (rate - bound) / bound * self.span_ms(now_ms)
