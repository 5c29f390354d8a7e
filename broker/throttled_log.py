"""One log line per kind of failure per interval, with a count of the ones held back.

A full disk fails every append, checkpoint and group write until space is
freed: thousands of identical errors a second. Logging each (with a
traceback) buries the one line that matters and fills the very disk that is
full, so storage failures go through :class:`ThrottledLog` instead::

    append to orders-3 failed: [Errno 28] No space left on device (12 more in the last 60 s)

The first failure of a kind is logged at once; later ones within
``interval_s`` are only counted, and the count rides on the next line of that
kind. A kind is what the caller says it is (operation and errno, typically),
not the partition, so fifty partitions failing the same way make one line.

Thread-safe: produce appends and housekeeping report from worker threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

DEFAULT_INTERVAL_S = 60.0


def describe_error(exc: BaseException) -> str:
    """``[Errno 28] No space left on device`` for an OSError (no file name: one
    line per kind reads the same for every file); ``str(exc)`` otherwise."""
    if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return str(exc) or type(exc).__name__


def error_kind(operation: str, exc: BaseException) -> tuple[str, object]:
    """The throttling key: the operation and the errno (or the exception type)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return operation, exc.errno
    return operation, type(exc).__name__


class _Kind:
    """One kind's budget: when its last line went out, how many were held back since.
    A plain class, not a dataclass: each dataclass made at import costs a start ~1 ms."""

    __slots__ = ("held_back", "last_logged")

    def __init__(self, last_logged: float) -> None:
        self.last_logged = last_logged
        self.held_back = 0


class ThrottledLog:
    """Log a failure at most once per ``interval_s`` per kind; count the rest."""

    def __init__(
        self,
        logger: logging.Logger,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval_s
        self._clock = clock
        self._kinds: dict[Hashable, _Kind] = {}
        self._lock = threading.Lock()

    def failure(self, operation: str, subject: str, exc: BaseException) -> bool:
        """``<operation> <subject> failed: <error>``, throttled by (operation, errno).

        An OSError is an expected condition (disk full, I/O error): one line,
        no traceback. Anything else is a bug: the line carries the traceback
        (still at most one per interval). Returns whether a line was written.
        """
        expected = isinstance(exc, OSError)
        return self.log(
            error_kind(operation, exc),
            logging.WARNING if expected else logging.ERROR,
            f"{operation} {subject} failed: {describe_error(exc)}",
            exc_info=None if expected else exc,
        )

    def log(
        self,
        kind: Hashable,
        level: int,
        message: str,
        exc_info: BaseException | None = None,
    ) -> bool:
        now = self._clock()
        with self._lock:
            state = self._kinds.get(kind)
            if state is not None and now - state.last_logged < self._interval:
                state.held_back += 1
                return False
            held_back = 0 if state is None else state.held_back
            since = 0.0 if state is None else now - state.last_logged
            self._kinds[kind] = _Kind(now)
        if held_back:
            message += f" ({held_back} more in the last {since:.0f} s)"
        self._logger.log(level, "%s", message, exc_info=exc_info)
        return True


# The broker's one instance for storage failures (appends, reads, checkpoints,
# group writes), so every caller shares the same budget per kind.
storage_errors = ThrottledLog(logging.getLogger("kafkette.storage"))
