"""``kafkette serve`` in a child process, for the bench scripts that measure one broker.

The broker listens on a free port (its ready line gives the bootstrap), writes its log to
a file, and is read from ``/proc`` for the figures the scripts print (descriptors, RSS,
CPU). ``nofile`` lowers ``RLIMIT_NOFILE`` in the child, as ``ulimit -n`` would.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path


class ServeProcess:
    """``kafkette serve --data-dir data_dir`` with ``configs``; ``ready_s`` is how long it
    took to print its ready line."""

    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        *,
        configs: Mapping[str, str] | None = None,
        nofile: int | None = None,
        ready_timeout_s: float = 120.0,
    ) -> None:
        args = [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0",
                "--data-dir", str(data_dir)]  # fmt: skip
        for key, value in (configs or {}).items():
            args += ["--config", f"{key}={value}"]

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        started = time.perf_counter()
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL,
            text=True, preexec_fn=limit,
        )  # fmt: skip
        self.bootstrap = ""
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith("kafkette ready on ") and not ready.is_set():
                    self.bootstrap = line.split()[-1]
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(ready_timeout_s) or not self.bootstrap:
            self.proc.kill()
            raise SystemExit(f"broker did not start; see {log_path}")
        self.ready_s = time.perf_counter() - started

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_mb(self) -> float:
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

    def stop(self, timeout_s: float = 300.0) -> float:
        """SIGTERM, wait; the seconds the clean stop took. A non-zero exit ends the bench."""
        started = time.perf_counter()
        self.proc.terminate()
        code = self.proc.wait(timeout_s)
        self._log.close()
        if code != 0:
            raise SystemExit(f"broker exited with {code}")
        return time.perf_counter() - started
