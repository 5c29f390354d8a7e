"""Every process the harness starts, so that every one of them is stopped, even on Ctrl-C.

Brokers are started in their own session (process group): a terminal Ctrl-C then reaches only
the harness, which stops them in order (SIGTERM to the whole group, SIGKILL after a grace
period), and a JVM's or wrapper script's children die with their parent. Memory figures are read
from /proc (Linux only), summed over the process and its descendants, in MB (10^6 bytes).
"""

from __future__ import annotations

import atexit
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

GRACE_S = 10.0


class ProcessRegistry:
    """Spawns child processes and guarantees they are stopped. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: list[subprocess.Popen[bytes]] = []
        atexit.register(self.stop_all)

    def spawn(
        self, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` with stdout+stderr appended to ``log_path``; stdin is closed."""
        log = open(log_path, "ab")  # the child keeps its own copy; ours is closed below
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=cwd, start_new_session=True,
            )
        finally:
            log.close()
        with self._lock:
            self._live.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> int | None:
        """SIGTERM the process group, wait up to ``grace_s``, then SIGKILL. Returns exit code."""
        try:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=grace_s)
            # Stragglers that outlived their leader (e.g. a wrapper script's JVM).
            _signal_group(proc.pid, signal.SIGKILL)
        finally:
            with self._lock:
                if proc in self._live:
                    self._live.remove(proc)
        return proc.returncode

    def stop_all(self) -> None:
        """Stop every process still registered; safe to call more than once."""
        with self._lock:
            live = list(self._live)
        for proc in live:
            try:
                self.stop(proc, grace_s=3.0)
            except Exception:  # best effort at shutdown: keep stopping the rest
                _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ..." - comm may contain spaces, so split after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants that exist right now."""
    children = _children_map()
    tree, stack = [], [pid]
    while stack:
        current = stack.pop()
        tree.append(current)
        stack.extend(children.get(current, []))
    return tree


def rss_mb(pid: int, tree: list[int] | None = None) -> float:
    """Resident set size of ``pid`` and its descendants, in MB = 10^6 bytes (0.0 if gone).

    ``tree``: a process_tree(pid) taken earlier, to skip the /proc scan (~10 ms).
    """
    total_kib = 0
    for member in tree if tree is not None else process_tree(pid):
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
                    break
        except OSError:
            continue
    return total_kib * 1024 / 1e6


_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu_seconds(stat_path: str) -> float:
    """utime + stime (fields 14 and 15 of /proc/.../stat) in seconds; 0.0 if gone."""
    try:
        fields = Path(stat_path).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def cpu_seconds(pid: int, tree: list[int] | None = None) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live descendants.

    For Apache Kafka ``pid`` is the JVM itself (kafka-server-start.sh execs java); threads are
    included (the process's stat counts all of them).
    """
    return sum(
        _stat_cpu_seconds(f"/proc/{member}/stat")
        for member in (tree if tree is not None else process_tree(pid))
    )


def thread_cpu_seconds() -> dict[int, tuple[str, float]]:
    """{thread id: (thread name, CPU seconds)} for every thread of this process (the harness's
    clients: Python's main thread and librdkafka's own threads)."""
    threads: dict[int, tuple[str, float]] = {}
    for entry in os.scandir("/proc/self/task"):
        try:
            name = Path(entry.path, "comm").read_text().strip()
        except OSError:
            continue
        threads[int(entry.name)] = (name, _stat_cpu_seconds(f"{entry.path}/stat"))
    return threads


class CpuWindow:
    """CPU used between ``start()`` and ``stop()``: the broker's process tree and each harness
    thread, beside the wall-clock time.

    ``broker_s``: broker CPU seconds; ``busiest_thread``: (name, share of one core) of the harness
    thread that used most CPU — near 1.0 means the client, not the broker, set the pace.
    """

    def __init__(self, broker_pid: int) -> None:
        self._pid = broker_pid
        self._tree = process_tree(broker_pid)
        self.broker_s = 0.0
        self.client_s = 0.0
        self.wall_s = 0.0
        self.busiest_thread: tuple[str, float] = ("", 0.0)

    def start(self) -> None:
        self._wall = time.perf_counter()
        self._broker = cpu_seconds(self._pid, self._tree)
        self._threads = thread_cpu_seconds()

    def stop(self) -> None:
        self.wall_s = time.perf_counter() - self._wall
        self.broker_s = cpu_seconds(self._pid, self._tree) - self._broker
        used = {
            tid: (name, seconds - self._threads.get(tid, (name, 0.0))[1])
            for tid, (name, seconds) in thread_cpu_seconds().items()
        }
        self.client_s = sum(seconds for _name, seconds in used.values())
        if used and self.wall_s > 0:
            name, seconds = max(used.values(), key=lambda item: item[1])
            self.busiest_thread = (name, seconds / self.wall_s)


class RssSampler:
    """Background thread sampling a process tree's RSS (MB, 10^6 bytes), keeping the peak.

    ``reset_peak()`` starts a new window; ``peak`` is the highest sample since then. The process
    tree is re-read only every ``TREE_REFRESH_S``: a full /proc scan holds the GIL for ~10 ms,
    which would disturb the latency workloads running in this process.
    """

    TREE_REFRESH_S = 5.0

    def __init__(self, pid: int, interval_s: float = 0.1) -> None:
        self._pid = pid
        self._interval_s = interval_s
        self._peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        tree, refreshed = process_tree(self._pid), time.monotonic()
        while not self._stop.wait(self._interval_s):
            if time.monotonic() - refreshed > self.TREE_REFRESH_S:
                tree, refreshed = process_tree(self._pid), time.monotonic()
            self._peak = max(self._peak, rss_mb(self._pid, tree))

    def reset_peak(self) -> None:
        self._peak = rss_mb(self._pid)

    @property
    def peak(self) -> float:
        return max(self._peak, rss_mb(self._pid))


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll ``predicate()`` until true or ``timeout_s`` passes; returns the last result."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def one_line_each(
    procs: list, timeout_s: float, what: str, error: type[Exception] = RuntimeError
) -> list[str]:
    """One stdout line from each of ``procs``, in their order; ``error`` when one exits
    without a line or ``timeout_s`` passes (``what`` names them in the message)."""
    deadline = time.monotonic() + timeout_s
    lines: dict[int, str] = {}
    with selectors.DefaultSelector() as selector:
        for index, proc in enumerate(procs):
            assert proc.stdout is not None
            selector.register(proc.stdout, selectors.EVENT_READ, index)
        while len(lines) < len(procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise error(f"{len(procs) - len(lines)} {what} silent after {timeout_s:.0f} s")
            for key, _events in selector.select(min(remaining, 1.0)):
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if not line:
                    raise error(f"{what} {key.data}: exited without a line")
                lines[key.data] = line
                selector.unregister(key.fileobj)
    return [lines[index] for index in range(len(procs))]
