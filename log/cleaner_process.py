"""The cleaner's heavy part in a child process, so it never competes for the broker's GIL.

Decoding every record of a compacted log is pure Python work. Run in a
broker thread it holds the GIL the event loop needs, and produce and fetch
latency grew from milliseconds to seconds while a big topic was cleaned
(docs/performance.md). So the broker keeps only what needs the live log
(pick, group, producer table, swap: ``clean_log_with`` in log/cleaner.py)
and a :class:`CleanerProcess` per ``log.cleaner.threads`` runs the
:class:`~kafkette.log.cleaner.CleanSession`: build the offset map, write
and fsync each group's ``.cleaned`` copy. The offset map lives there.

The child is ``python -m kafkette.log.cleaner_process``, started with
``subprocess`` (fork + exec: nothing of the broker's threads or trio is
inherited, unlike ``fork``; and no ``multiprocessing`` re-import of the
broker's main module). Requests and replies are length-prefixed pickles on
its stdin and a private copy of its stdout; they hold plain data only.

Lifetime: started on first use and kept; restarted if it died. The broker
stops a clean by killing the child (then removes the group's ``.cleaned``
files), which is immediate even while the child sleeps in the throttle or
is in the middle of a batch. A child never outlives the broker: a thread
in it waits for the hang-up of its stdin (the broker's end closes when the
broker exits, kill -9 included) and exits at once, so it cannot write a
``.cleaned`` file while a restarted broker recovers the same directory.
The child never renames or deletes log files: only the broker swaps.

The child runs at niceness 19 (:func:`_lower_priority`): a separate
process keeps the clean off the broker's GIL, not off its CPUs.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading

from kafkette.log.cleaner import (
    CleanAborted,
    CleanJob,
    CleanSession,
    CleanStats,
    Throttler,
)
from kafkette.log.file_region import FileGone
from kafkette.log.offset_map import OffsetMap

_log = logging.getLogger(__name__)
_LENGTH = struct.Struct(">Q")
# How often a waiting broker thread looks at its abort flag.
ABORT_POLL_S = 0.05
# The cleaner process's niceness (lowest CPU priority; see _lower_priority).
CLEANER_NICENESS = 19


class CleanerDied(RuntimeError):
    """The cleaner process exited during a request (it is restarted on next use)."""


def _write_frame(fd: int, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, length: int) -> bytes | None:
    parts: list[bytes] = []
    got = 0
    while got < length:
        chunk = os.read(fd, min(length - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _read_frame(fd: int) -> object | None:
    """One message, None at end of file."""
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    body = _read_exactly(fd, _LENGTH.unpack(head)[0])
    if body is None:
        return None
    return pickle.loads(body)


class CleanerProcess:
    """One cleaner child process, used by one clean at a time (thread-confined)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs (for tests and logs)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> None:
        """Start the child now rather than on the first clean (benches time cleans alone)."""
        self._running()

    def _running(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        if proc is not None:
            self._reap()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkette.log.cleaner_process"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
        )
        self._proc = proc
        try:  # at once, so its start (imports, ~0.15 s of CPU) already yields to the broker
            os.setpriority(os.PRIO_PROCESS, proc.pid, CLEANER_NICENESS)
        except OSError:  # it lowers itself too (_lower_priority)
            pass
        _log.info("cleaner process %d started", proc.pid)
        return proc

    def session(self, job: CleanJob, map_memory_bytes: int, io_max_bytes_per_second: float,
                abort: threading.Event) -> RemoteSession:
        """A clean session whose work runs in the child (started if needed)."""
        return RemoteSession(self, job, map_memory_bytes, io_max_bytes_per_second, abort)

    def call(self, request: tuple, abort: threading.Event) -> object:
        """Send ``request``, wait for the reply; on ``abort`` kill the child, raise CleanAborted."""
        if abort.is_set():
            raise CleanAborted("cleaner stopping")
        if request[0] != "map" and self.pid is None:
            # A new child has no session: only a clean's first request may start one.
            self.kill()
            raise CleanerDied("the cleaner process exited")
        proc = self._running()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _write_frame(proc.stdin.fileno(), request)
        except BrokenPipeError:
            self.kill()
            raise CleanerDied("the cleaner process exited") from None
        reply_fd = proc.stdout.fileno()
        poller = select.poll()
        poller.register(reply_fd, select.POLLIN)
        while not poller.poll(ABORT_POLL_S * 1000):
            if abort.is_set():
                self.kill()  # stops it mid-batch or mid-throttle; the caller removes files
                raise CleanAborted("cleaner stopping")
        reply = _read_frame(reply_fd)
        if reply is None:
            self.kill()
            raise CleanerDied("the cleaner process exited")
        status, value = reply  # type: ignore[misc]
        if status == "error":
            raise value
        return value

    def kill(self) -> None:
        """SIGKILL the child and reap it (files it was writing stay as they are)."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        self._reap()

    def _reap(self) -> None:
        proc = self._proc
        self._proc = None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        proc.wait()

    def close(self) -> None:
        """Stop the child: closing its stdin ends it; killed if it does not go at once."""
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
        self._reap()


class RemoteSession:
    """A :class:`~kafkette.log.cleaner.Session` whose work runs in a :class:`CleanerProcess`."""

    def __init__(
        self, process: CleanerProcess, job: CleanJob, map_memory_bytes: int,
        io_max_bytes_per_second: float, abort: threading.Event,
    ) -> None:
        self.stats = CleanStats()
        self._process = process
        self._job = job
        self._settings = (map_memory_bytes, io_max_bytes_per_second)
        self._abort = abort

    def build_map(self) -> int:
        end, self.stats = self._process.call(("map", self._job, *self._settings), self._abort)  # type: ignore[misc]
        return end

    def write_group(
        self, first: int, count: int, producer_batches: dict[int, set[int]]
    ) -> list[tuple[int, int, int, int]]:
        written, self.stats = self._process.call(  # type: ignore[misc]
            ("group", first, count, producer_batches), self._abort
        )
        return written

    def close(self) -> None:
        """Let the child free its offset map (skipped if it is gone or stopping)."""
        if self._process.pid is None or self._abort.is_set():
            return
        try:
            self._process.call(("end",), self._abort)
        except (CleanAborted, CleanerDied):
            pass


# ------------------------------------------------------------------ the child


def _exit_with_parent(fd: int) -> None:
    """Exit the moment the broker's end of our stdin closes (it exited or was killed)."""
    poller = select.poll()
    poller.register(fd, 0)  # POLLHUP and POLLERR are always reported
    while True:
        for _, events in poller.poll():
            if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                os._exit(0)


def _serve(requests: int, replies: int) -> None:
    offset_map: OffsetMap | None = None
    map_bytes = -1
    session: CleanSession | None = None
    never = threading.Event()  # the broker stops us by killing us
    while True:
        request = _read_frame(requests)
        if request is None:
            return
        try:
            kind = request[0]  # type: ignore[index]
            if kind == "map":
                _, job, map_memory_bytes, rate = request  # type: ignore[misc]
                if offset_map is None or map_bytes != map_memory_bytes:
                    offset_map, map_bytes = OffsetMap(map_memory_bytes), map_memory_bytes
                session = CleanSession(job, offset_map, Throttler(rate, never))
                reply: object = (session.build_map(), session.stats)
            elif kind == "group":
                _, first, count, producer_batches = request  # type: ignore[misc]
                if session is None:
                    raise ValueError("cleaner request 'group' before 'map'")
                reply = (session.write_group(first, count, producer_batches), session.stats)
            elif kind == "end":
                if session is not None:
                    session.close()
                session = None
                reply = None
            else:
                raise ValueError(f"unknown cleaner request {kind!r}")
            _write_frame(replies, ("ok", reply))
        except Exception as exc:  # handed back to the broker, which logs it
            _write_frame(replies, ("error", _portable(exc)))


def _portable(exc: Exception) -> Exception:
    """``exc`` as the broker should see it (and certain to unpickle there)."""
    if isinstance(exc, FileNotFoundError):
        return FileGone(str(exc))
    if isinstance(exc, (FileGone, CleanAborted, OSError, ValueError)):
        try:
            pickle.loads(pickle.dumps(exc))
            return exc
        except Exception:  # not picklable: described below instead
            pass
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def _lower_priority() -> None:
    """Run at niceness 19: the broker gets a CPU the moment it wants one, the clean the rest.

    At the broker's priority a clean took a whole CPU for as long as it ran;
    on a small machine the broker then fell behind its produce requests
    (answered in order per connection) whenever anything else ran too, and
    produce p99 rose from ~5 ms to 0.4-0.9 s (docs/performance.md, "Log
    cleaner"). At niceness 19 the scheduler's weights give a clean about 1.5%
    of a CPU that a priority-0 task also wants, and all of an idle one: an
    idle or lightly loaded broker cleans as fast as before. A broker whose
    CPUs are saturated by its own serving cleans slowly (Kafka's cleaner would
    compete instead); ``log.cleaner.io.max.bytes.per.second`` still caps it
    on a quiet machine. With no I/O priority set, Linux derives one from
    the niceness (best effort, lowest level), so its reads also come last.
    """
    try:
        os.nice(CLEANER_NICENESS - os.nice(0))
    except OSError:  # not permitted here: run at the broker's priority
        _log.warning("cleaner process could not lower its priority")


def main() -> None:
    """The child's entry point: serve requests on stdin until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the broker decides when we stop
    _lower_priority()
    replies = os.dup(1)
    os.dup2(2, 1)  # a stray print must not corrupt the reply stream
    threading.Thread(target=_exit_with_parent, args=(0,), daemon=True).start()
    _serve(0, replies)


__all__ = ["CLEANER_NICENESS", "CleanerDied", "CleanerProcess", "RemoteSession", "main"]

if __name__ == "__main__":
    main()
