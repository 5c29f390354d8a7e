"""The schedule's client processes: started, read, stopped, and what they cost.

Each client script (``producer``, ``group_consumer``, ``txn_transform``, ``share_consumer``)
runs as its own process, in the root namespace or inside a node's, and writes JSON lines the
checks read. A client dies with the harness (``PR_SET_PDEATHSIG``, kept across the ``exec``
of ``ip netns exec``): a killed run leaves no client retrying against a cluster that is gone.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness.processes import cpu_seconds

REPO = Path(__file__).resolve().parents[3]
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ClientProcess:
    """A client script in a namespace (``prefix``; the root one when empty), its JSON lines
    in ``out``, its stderr beside it."""

    def __init__(self, module: str, args: list[str], out: Path, prefix: list[str]) -> None:
        self.out = out
        self.name = out.stem
        self.cpu_s = 0.0
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with (out.with_suffix(".stderr")).open("ab") as errors:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", f"bench.harness.nemesis.{module}",
                 *args, "--out", str(out)],
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors,
                preexec_fn=_die_with_parent,
            )  # fmt: skip

    def lines(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        parsed = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line being written
        return parsed

    def terminate(self) -> None:
        """SIGTERM, noting the CPU it used (gone once it is reaped)."""
        if self.proc.poll() is None:
            try:
                self.cpu_s = cpu_seconds(self.proc.pid)
            except OSError:
                pass
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, deadline: float) -> None:
        """Wait until the monotonic ``deadline``, then SIGKILL."""
        try:
            self.proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout: float) -> None:
        self.terminate()
        self.wait(time.monotonic() + timeout)

    def stderr_tail(self, lines: int = 20) -> str:
        path = self.out.with_suffix(".stderr")
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def stop_all(clients: list[ClientProcess], timeout: float) -> None:
    """SIGTERM every client at once, then wait for all against one deadline."""
    for client in clients:
        client.terminate()
    deadline = time.monotonic() + timeout
    for client in clients:
        client.wait(deadline)
