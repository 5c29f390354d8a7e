"""Start kafkette for the suite, or check that an external broker answers.

Contract with ``kafkette serve``: it prints exactly one line ``kafkette ready on HOST:PORT``
on stdout once it accepts connections and stops gracefully on SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

READY = re.compile(r"^kafkette ready on (\S+):(\d+)\s*$")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 3.0


class BrokerUnavailable(Exception):
    """The broker could not be started or reached; the message is the one-line reason."""


@dataclass
class KafketteProcess:
    """A running ``kafkette serve`` child. ``stderr_path`` keeps its log for failure messages."""

    proc: subprocess.Popen
    host: str
    port: int
    stderr_path: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> int | None:
        """SIGTERM, wait, then SIGKILL if it did not exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def start_kafkette(data_dir: Path, configs: dict[str, str], stderr_path: Path) -> KafketteProcess:
    """Run ``python -m kafkette serve`` on a free port and wait for its ready line; the
    broker's stderr (its log) goes to ``stderr_path``."""
    cmd = [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0"]
    cmd += ["--data-dir", str(data_dir)]
    for key, value in configs.items():
        cmd += ["--config", f"{key}={value}"]
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    with open(stderr_path, "wb") as err:
        # Own session: signals aimed at the test runner's process group (a Ctrl-C, a CI
        # runner's cleanup) do not reach the broker; stop() below is what ends it.
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    lines: list[str] = []

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if READY.match(line):
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    match = READY.match(lines[-1]) if lines else None
    if match is None:
        proc.kill()
        proc.wait(5)
        log_tail = tail(stderr_path)
        raise BrokerUnavailable(
            f"kafkette did not print 'kafkette ready on HOST:PORT' within {START_TIMEOUT_S:.0f}s "
            f"(exit code {proc.returncode}; stdout {''.join(lines)[-300:]!r}; "
            f"stderr tail: {log_tail})"
        )
    # Keep draining stdout so the broker never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return KafketteProcess(proc, match.group(1), int(match.group(2)), stderr_path)


def check_reachable(bootstrap: str) -> None:
    """Fail fast with ``cannot connect to HOST:PORT`` instead of letting clients retry."""
    host, _, port = bootstrap.rpartition(":")
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise BrokerUnavailable(f"cannot connect to {host}:{port}: {exc}") from exc
            time.sleep(0.2)


def tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` lines of the broker's log, joined with `` | `` (for one-line errors)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no stderr)"
    return " | ".join(text.strip().splitlines()[-lines:])[-400:] or "(empty)"


def kafkette_version() -> str:
    try:
        from importlib.metadata import version

        return f"kafkette {version('kafkette')}"
    except Exception:
        return "kafkette (version unknown)"


def env_bootstrap() -> str | None:
    return os.environ.get("KAFKETTE_BOOTSTRAP") or None
