"""Optional py-spy sampling of the kafkette process while a workload runs (``--profile``).

Why a sampler and not cProfile: it attaches from outside, so the broker runs unmodified, and it
sees the whole process including Trio's scheduler. ``--nonblocking`` keeps the broker running
while it is sampled; figures from profiled runs are still perturbed and flagged as such.
py-spy writes its output when it receives SIGINT, so it is stopped with SIGINT first.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

from .processes import ProcessRegistry


def py_spy_binary() -> str | None:
    beside_python = Path(sys.executable).with_name("py-spy")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("py-spy")


class PySpyRecording:
    """Context manager: samples ``pid`` into ``output`` (SVG flame graph) until exit."""

    def __init__(self, registry: ProcessRegistry, pid: int, output: Path, rate_hz: int = 100):
        self.registry = registry
        self.pid = pid
        self.output = output
        self.rate_hz = rate_hz
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PySpyRecording:
        binary = py_spy_binary()
        if binary is None:
            raise RuntimeError("--profile needs py-spy (pip install py-spy)")
        argv = [
            binary, "record", "--pid", str(self.pid), "--output", str(self.output),
            "--format", "flamegraph", "--rate", str(self.rate_hz), "--nonblocking",
        ]
        self.proc = self.registry.spawn(argv, self.output.with_suffix(".log"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self.registry.stop(self.proc, grace_s=2.0)
