"""Start kafkette for the suite, or check that an external broker answers.

The broker is ``bench.harness.serve_process``'s child ``kafkette serve`` (the one handle of
every suite); this module adds the suite's one-line failures (``BrokerUnavailable``) and the
reachability check of a broker it did not start.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from bench.harness.serve_process import ServeFailed, ServeProcess, serve_args

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 3.0


class BrokerUnavailable(Exception):
    """The broker could not be started or reached; the message is the one-line reason."""


class KafketteProcess(ServeProcess):
    """The suite's ``kafkette serve`` child (bench.harness's handle), stopped without raising:
    the suite records its exit code, whatever it is."""

    @property
    def stderr_path(self) -> Path:
        return self.log_path

    def stop(self) -> int | None:
        """SIGTERM, wait, then SIGKILL if it did not exit; returns the exit code."""
        try:
            return self.terminate(STOP_TIMEOUT_S)
        except ServeFailed:  # ignored SIGTERM: killed
            return self.proc.returncode


def start_kafkette(
    data_dir: Path, configs: Mapping[str, str], stderr_path: Path
) -> KafketteProcess:
    """Run ``python -m kafkette serve`` on a free port and wait for its ready line; the
    broker's stderr (its log) goes to ``stderr_path``. In its own session: signals aimed at
    the test runner's process group (a Ctrl-C, a CI runner's cleanup) do not reach the
    broker; ``stop()`` is what ends it."""
    process = KafketteProcess(serve_args(data_dir, configs=configs), stderr_path, new_session=True)
    try:
        return process.wait_ready(START_TIMEOUT_S)
    except ServeFailed:
        raise BrokerUnavailable(
            f"kafkette did not print 'kafkette ready on HOST:PORT' within {START_TIMEOUT_S:.0f}s "
            f"(exit code {process.proc.returncode}; "
            f"stdout {chr(10).join(process.stdout_lines)[-300:]!r}; "
            f"stderr tail: {tail(stderr_path)})"
        ) from None


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
