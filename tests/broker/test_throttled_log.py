"""ThrottledLog: one line per kind of failure per interval, with the held-back count."""

from __future__ import annotations

import errno
import logging

from kafkette.broker.throttled_log import ThrottledLog

NO_SPACE = OSError(errno.ENOSPC, "No space left on device", "/data/t-0/x.log")
IO_ERROR = OSError(errno.EIO, "Input/output error")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_one_line_per_kind_per_interval_with_the_count_held_back(caplog) -> None:
    clock = Clock()
    throttled = ThrottledLog(logging.getLogger("test.throttled"), 60.0, clock)
    caplog.set_level(logging.WARNING, "test.throttled")
    assert throttled.failure("append to", "t-0", NO_SPACE)
    for i in range(12):
        clock.now += 1
        assert not throttled.failure("append to", f"t-{i}", NO_SPACE)
    assert throttled.failure("append to", "t-0", IO_ERROR)  # another kind: its own line
    clock.now = 160.0
    assert throttled.failure("append to", "t-3", NO_SPACE)
    assert messages(caplog) == [
        "append to t-0 failed: [Errno 28] No space left on device",
        "append to t-0 failed: [Errno 5] Input/output error",
        "append to t-3 failed: [Errno 28] No space left on device (12 more in the last 60 s)",
    ]
    assert all(r.exc_info is None for r in caplog.records)  # expected conditions: no traceback


def test_an_unexpected_exception_keeps_its_traceback_but_is_throttled_too(caplog) -> None:
    clock = Clock()
    throttled = ThrottledLog(logging.getLogger("test.throttled"), 60.0, clock)
    caplog.set_level(logging.WARNING, "test.throttled")
    bug = KeyError("x")
    assert throttled.failure("writing to", "__consumer_offsets-3", bug)
    assert not throttled.failure("writing to", "__consumer_offsets-3", bug)
    [record] = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
