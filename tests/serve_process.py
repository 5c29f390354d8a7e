"""``kafkette serve`` in a child process, and loading a test package's helper modules.

Shared by the test packages' conftests (tests/broker, tests/security, tests/cluster):
test modules and conftests cannot import each other under ``--import-mode=importlib``,
so tests/conftest.py registers this module as ``kafkette_test_serve_process`` in
``sys.modules`` and the others take it from there.

Every wait has a deadline; a test that hits one fails, it never hangs.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

READY_LINE = re.compile(r"^kafkette ready on (.+):(\d+)$")


def register_beside(conftest: str, prefix: str, stem: str) -> ModuleType:
    """Load ``<stem>.py`` beside ``conftest`` as ``<prefix>_<stem>`` in ``sys.modules``
    (once; dataclasses and pickling look their module up there)."""
    name = f"{prefix}_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(conftest).with_name(f"{stem}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def serve_refused(*args: str, timeout: float = 60.0) -> tuple[int, list[str]]:
    """Run ``kafkette serve <args>`` expecting it to give up (start-up errors): its exit
    code and stderr lines. It must never have printed its ready line."""
    result = subprocess.run(
        [sys.executable, "-m", "kafkette", "serve", *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert "ready" not in result.stdout
    return result.returncode, result.stderr.splitlines()


class ServeProcess:
    """``kafkette serve <args>``: stdout lines kept (the ready line gives ``host``/``port``),
    stderr (the broker's log) written to ``log_path``."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self.stdout_lines: list[str] = []
        self.host = ""
        self.port = 0
        self._ready = threading.Event()
        self._stdout_done = threading.Event()
        self._stderr = log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkette", "serve", *args],
            stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True,
        )
        threading.Thread(target=self._pump_stdout, daemon=True).start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.stdout_lines.append(line)
            match = READY_LINE.match(line)
            if match and not self._ready.is_set():
                self.host, self.port = match.group(1), int(match.group(2))
                self._ready.set()
        self.proc.stdout.close()
        self._stdout_done.set()
        self._ready.set()  # the process ended: wake a waiter so it can report

    def wait_ready(self, timeout: float = 30.0):  # type: ignore[no-untyped-def]
        """Wait for the ready line; returns self (the subclass)."""
        if not self._ready.wait(timeout) or not self.port:
            self.kill()
            raise AssertionError(
                f"kafkette serve did not print its ready line within {timeout}s; "
                f"exit={self.proc.poll()} stdout={self.stdout_lines!r}\n{self.stderr_text()}"
            )
        return self

    @property
    def bootstrap(self) -> str:
        """The ready line's HOST:PORT (the first listener's advertised endpoint)."""
        return f"{self.host}:{self.port}"

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

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
        """SIGTERM and wait: the graceful stop. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"broker ignored SIGTERM for {timeout}s") from None
        self._stdout_done.wait(5)
        return code

    def kill(self) -> None:
        """SIGKILL: the crash, no chance to flush or write the clean-shutdown marker."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        finally:
            self._stdout_done.wait(5)
            if not self._stderr.closed:
                self._stderr.close()
