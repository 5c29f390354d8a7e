"""``kafkette serve`` in a child process: the one handle of the tests, compat-tests and bench.

The contract with ``kafkette serve``: it prints ``kafkette ready on HOST:PORT`` on stdout once
it accepts connections, logs to stderr, and stops gracefully on SIGTERM. The handle keeps every
stdout line (a reader thread, so the child never blocks on a full pipe), writes stderr to a log
file, and reads ``/proc`` for the figures bench scripts print (descriptors, RSS, CPU).

One handle is one process: a broker restarted on the same port and data dir (kill -9 series,
clusters) is a new ``ServeProcess`` each time, appending to the same log if asked;
``RestartedServe`` is that for the kill -9 series of the tests and bench. Every wait has a
deadline; a start that misses it raises ``ServeFailed`` with the broker's log, never hangs.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

READY_LINE = re.compile(r"^kafkette ready on (\S+):(\d+)\s*$")
SERVE = (sys.executable, "-m", "kafkette", "serve")


class ServeFailed(AssertionError):
    """The broker did not print its ready line, or ignored SIGTERM. An AssertionError, so that
    a test meeting it fails like any other check, with the broker's log in the message."""


def serve_args(
    data_dir: Path | None = None,
    listen: str = "127.0.0.1:0",
    configs: Mapping[str, str] | None = None,
) -> list[str]:
    """``--listen``, ``--data-dir`` and one ``--config key=value`` per config."""
    args = ["--listen", listen]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    for key, value in (configs or {}).items():
        args += ["--config", f"{key}={value}"]
    return args


def serve_refused(*args: str, timeout: float = 60.0) -> tuple[int, list[str]]:
    """Run ``kafkette serve <args>`` expecting it to give up (start-up errors): its exit
    code and stderr lines. It must never have printed its ready line."""
    result = subprocess.run(
        [*SERVE, *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert "ready" not in result.stdout
    return result.returncode, result.stderr.splitlines()


class ServeProcess:
    """``kafkette serve <args>``: stdout lines kept (the ready line gives ``host``/``port``),
    stderr (the broker's log) written to ``log_path``.

    ``append_log`` appends to the log after a line naming the start (restarts share one log);
    ``nofile`` lowers ``RLIMIT_NOFILE`` in the child, as ``ulimit -n`` would; ``new_session``
    keeps signals aimed at the caller's process group (a Ctrl-C) away from the broker;
    ``command`` runs another build's ``serve`` (e.g. ``[venv/bin/kafkette, "serve"]``).
    """

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        *,
        append_log: bool = False,
        nofile: int | None = None,
        new_session: bool = False,
        command: Sequence[str] = SERVE,
    ) -> None:
        self.log_path = log_path
        self.stdout_lines: list[str] = []
        self.host = ""
        self.port = 0
        self.frozen = False
        self.ready_s = 0.0
        self._ready = threading.Event()
        self._stdout_done = threading.Event()
        command = [*command, *args]

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab" if append_log else "wb") as log:
            if append_log:
                log.write(f"--- {time.strftime('%H:%M:%S')} start: {' '.join(command)}\n".encode())
                log.flush()
            self._started = time.perf_counter()
            self.proc = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                preexec_fn=limit if nofile is not None else None, start_new_session=new_session,
            )  # fmt: skip
        threading.Thread(target=self._pump_stdout, daemon=True).start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.stdout_lines.append(line)
            match = READY_LINE.match(line)
            if match and not self._ready.is_set():
                self.ready_s = time.perf_counter() - self._started
                self.host, self.port = match.group(1), int(match.group(2))
                self._ready.set()
        self.proc.stdout.close()
        self._stdout_done.set()
        self._ready.set()  # the process ended: wake a waiter so it can report

    def wait_ready(self, timeout: float = 30.0):  # type: ignore[no-untyped-def]
        """Wait for the ready line; returns self (the subclass). ``ServeFailed`` (the broker
        killed) when it does not come within ``timeout`` seconds."""
        if not self._ready.wait(timeout) or not self.port:
            self.kill()
            raise ServeFailed(
                f"kafkette serve did not print its ready line within {timeout}s; "
                f"exit={self.proc.poll()} stdout={self.stdout_lines!r}\n{self.stderr_text()}"
            )
        return self

    @property
    def bootstrap(self) -> str:
        """The ready line's HOST:PORT (the first listener's advertised endpoint)."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Alive (frozen counts as alive: the process exists, it just does not run)."""
        return self.proc.poll() is None

    def stderr_text(self) -> str:
        """The broker's whole log so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        """The last ``lines`` lines of the broker's log."""
        return "\n".join(self.stderr_text().splitlines()[-lines:])

    def wait_for_log(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """The first match of regex ``pattern`` in the broker's log, waiting for it."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.stderr_text())
            if match is not None:
                return match
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"no log line matching {pattern!r} within {timeout}s:\n{self.stderr_text()}"
                )
            time.sleep(0.05)

    def wait_exit(self, timeout: float = 30.0) -> tuple[int, list[str]]:
        """For a start expected to fail: (exit code, stderr lines)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"kafkette serve still running after {timeout}s:\n{self.stderr_text()}"
            ) from None
        self._stdout_done.wait(5)
        return code, self.stderr_text().splitlines()

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM (a frozen broker is thawed to receive it) and wait: the graceful stop.
        Returns the exit code; ``ServeFailed`` (the broker killed) if it ignores SIGTERM."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            if self.frozen:
                self.thaw()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ServeFailed(
                f"broker ignored SIGTERM for {timeout}s; its log:\n{self.log_tail()}"
            ) from None
        self._stdout_done.wait(5)
        return code

    def kill(self) -> None:
        """SIGKILL (a frozen process too): the crash, no chance to flush or write the
        clean-shutdown marker."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(30)
        finally:
            self.frozen = False
            self._stdout_done.wait(5)

    def freeze(self) -> None:
        """SIGSTOP: the process stays, holds its sockets and sends nothing (a long GC pause)."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        """SIGCONT after ``freeze``."""
        os.kill(self.proc.pid, signal.SIGCONT)
        self.frozen = False

    # --- figures from /proc, for the bench scripts ------------------------------------------

    def fds(self) -> int:
        """Open file descriptors of the broker."""
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_mb(self) -> float:
        """The broker's resident set, MiB."""
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> float:
        """User + system CPU seconds the broker has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RestartedServe:
    """``kafkette serve`` on one data dir and port, started again after each kill -9: the
    broker of a crash series (``crash_load.run_series`` and ``txn_crash_load.run_series``
    take its ``start`` and ``kill``).

    Every start is a new ``ServeProcess`` (``serve``: the current one) appending to the one
    log at ``log_path``; ``alternate`` is added to every other start (the 2nd, 4th, ...), e.g.
    ``log.flush.interval.messages=1``, so one series sees both settings. ``kill`` checks that
    no clean-shutdown marker was left, so each restart really recovers; ``restart_seconds``
    holds the kill-to-ready time of each restart.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int,
        args: Sequence[str],
        log_path: Path,
        *,
        alternate: Sequence[str] = (),
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.args = [*serve_args(data_dir, f"127.0.0.1:{port}"), *args]
        self.alternate = tuple(alternate)
        self.log_path = log_path
        self.serve: ServeProcess | None = None
        self.starts = 0
        self.restart_seconds: list[float] = []
        self._killed_at: float | None = None

    def start(self, timeout: float = 60.0) -> str:
        """Start (again) and wait for the ready line; the bootstrap address."""
        extra = self.alternate if self.starts % 2 else ()
        self.starts += 1
        self.serve = ServeProcess([*self.args, *extra], self.log_path, append_log=True)
        self.serve.wait_ready(timeout)
        assert self.serve.port == self.port, (self.serve.port, self.port)
        if self._killed_at is not None:
            self.restart_seconds.append(time.monotonic() - self._killed_at)
        return self.serve.bootstrap

    def kill(self) -> None:
        """SIGKILL the current process: the crash."""
        assert self.serve is not None, "start() first"
        self.serve.kill()
        self._killed_at = time.monotonic()
        assert not (self.data_dir / ".kafka_cleanshutdown").exists()

    def stop(self, timeout: float = 30.0) -> None:
        """The end of a series: SIGTERM if still running (killed if it ignores it)."""
        if self.serve is not None and self.serve.running:
            try:
                self.serve.terminate(timeout)
            except ServeFailed:
                pass  # ignored SIGTERM: killed
