"""How long ``kafkette serve`` takes from spawn to its ready line, and its RSS then.

    python -m bench.start_time [--starts 9] [--kafka-starts 3] [--no-kafka]
    python -m bench.start_time --bin before=/venv-a/bin/kafkette --bin after=/venv-b/bin/kafkette

Starts ``kafkette serve --listen 127.0.0.1:0 --data-dir <fresh tmp>`` ``--starts`` times
(a fresh data directory each time) and prints median, min and max of:

* ready line: spawn (just before ``Popen``) to the line ``kafkette ready on HOST:PORT`` on
  its stdout -- the figure a tool or script that waits for the line sees;
* first Metadata: spawn to the first Metadata a raw probe gets (``bench/harness/probe.py``), the
  figure the harness takes for every broker, so it compares with Kafka's;
* CPU (user + system) the broker had used at its ready line: less swayed by other work on
  the machine than wall time (though not free of it: caches and memory bandwidth are shared);
  in clock ticks (``/proc/PID/stat``, 10 ms) and, where the kernel keeps scheduler
  statistics, to the nanosecond (the run time of its threads, ``/proc/PID/task/*/schedstat``):
  the figure to compare builds by, as a start is ~0.3 s of CPU and a change a few ms of it;
* RSS at the ready line (the process alone; ``serve`` starts no children).

Which ``kafkette``: ``--bin NAME=PATH`` (repeatable: the builds take turns, A B A B, so
load that comes and goes spreads over all of them), else ``$KAFKETTE_BIN``, else this
venv's. When the reference Apache Kafka is there (``KAFKA_HOME``, else ``kafka-ref home``;
see ``bench/harness/brokers.py``), it is started ``--kafka-starts`` times as one KRaft node (storage
formatted before the clock starts, as the harness does) and its launch to first Metadata,
CPU and RSS are printed beside, with the ratios. Each start is stopped (SIGTERM) before the
next.

The brokers run with this environment less ``PYTHONDONTWRITEBYTECODE``, as an installed
kafkette runs (pip compiles its bytecode at install; an editable install writes it on the
first start, the warm-up here): with that variable set and no ``__pycache__``, every start
compiles some 150 modules from source, which times the compiler, not the start.
``--env-as-is`` keeps the environment unchanged.

A script, not a test: figures depend on the machine and its load, printed beside them.
The goal of the "start in a blink" work: ready line under 250 ms (median) on the 2-core
development machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .harness.brokers import HOST, READY_LINE, ApacheKafka, Kafkette
from .harness.probe import wait_for_metadata
from .harness.processes import ProcessRegistry, cpu_seconds, process_tree, rss_mb

GOAL_MS = 250.0
READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Start:
    """One start: seconds from spawn to the ready line (None for Kafka, which prints none)
    and to the first Metadata answer; CPU seconds and RSS in MB (10^6 bytes) at the ready
    line (Kafka: at its first Metadata answer)."""

    ready_s: float | None
    metadata_s: float
    cpu_s: float
    rss_mb: float
    run_ms: float | None = None


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def run_time_ms(pid: int) -> float | None:
    """CPU time the threads of ``pid`` have run so far, in ms to the nanosecond (the first
    field of each ``/proc/PID/task/TID/schedstat``); None without scheduler statistics.

    Threads that have ended are not counted: at ``serve``'s ready line none has (trio keeps
    its worker threads ~10 s)."""
    total_ns = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as stats:
                total_ns += int(stats.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total_ns / 1e6 if total_ns else None


def start_kafkette(command: list[str], scratch: Path, env: dict[str, str]) -> Start:
    """Spawn ``command serve`` on a fresh data dir, wait for its ready line, probe, stop.

    The ready line is read from a pipe (not a polled log file) so the figure is not rounded
    up to a polling interval; CPU and RSS are read as soon as the line arrives."""
    data_dir = Path(tempfile.mkdtemp(prefix="data-", dir=scratch))
    argv = [*command, "serve", "--listen", f"{HOST}:0", "--data-dir", str(data_dir)]
    log_path = scratch / "kafkette.log"
    with log_path.open("ab") as log:
        launched = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=log, env=env)  # fmt: skip
    try:
        line = _first_line(proc, READY_TIMEOUT_S)
        ready = time.perf_counter()
        run_ms = run_time_ms(proc.pid)
        cpu = cpu_seconds(proc.pid, [proc.pid])
        rss = rss_mb(proc.pid, [proc.pid])
        match = READY_LINE.match(line)
        if match is None:
            raise SystemExit(f"kafkette printed no ready line (got {line!r}); see {log_path}")
        answered = wait_for_metadata(HOST, int(match.group(2)), launched + READY_TIMEOUT_S,
                                     lambda: proc.poll() is None)  # fmt: skip
    finally:
        proc.terminate()
        code = proc.wait(30)
    if code != 0:
        raise SystemExit(f"kafkette exited with {code} after SIGTERM; see {log_path}")
    return Start(ready - launched, answered - launched, cpu, rss, run_ms)


def _first_line(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The child's first stdout line, or b"" if it exits or ``timeout_s`` passes first."""
    got: list[bytes] = []
    reader = threading.Thread(
        target=lambda: got.append(proc.stdout.readline() if proc.stdout else b""), daemon=True
    )
    reader.start()
    reader.join(timeout_s)
    return got[0] if got else b""


def start_kafka(kafka: ApacheKafka, registry: ProcessRegistry, scratch: Path, n: int) -> Start:
    broker = kafka.start(registry, scratch / f"kafka-{n}", READY_TIMEOUT_S * 3)
    try:
        tree = process_tree(broker.proc.pid)
        return Start(None, broker.start_s, cpu_seconds(broker.proc.pid, tree),
                     rss_mb(broker.proc.pid, tree))  # fmt: skip
    finally:
        broker.stop()


def summary(name: str, values: Sequence[float], unit: str = "ms") -> str:
    ordered = sorted(values)
    return (
        f"{name:<36} median {statistics.median(ordered):8.1f} {unit}   "
        f"min {ordered[0]:8.1f}   max {ordered[-1]:8.1f}   (n={len(ordered)})"
    )


def builds_from(items: Sequence[str]) -> dict[str, list[str]]:
    """``NAME=PATH`` items, else the one build the harness would start (``Kafkette``)."""
    if not items:
        return {"kafkette": Kafkette()._command()}
    builds = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--bin takes NAME=PATH, got {item!r}")
        builds[name] = [path]
    return builds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=9, help="starts per build (default 9)")
    parser.add_argument("--bin", action="append", default=[], metavar="NAME=PATH",
                        help="a kafkette to start (repeatable; they take turns)")
    parser.add_argument("--kafka-starts", type=int, default=3,
                        help="Apache Kafka starts, when available (default 3)")
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka")
    parser.add_argument("--env-as-is", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE if set (default: drop it)")
    args = parser.parse_args(argv)  # fmt: skip
    builds = builds_from(args.bin)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not args.env_as_is:
        env.pop("PYTHONDONTWRITEBYTECODE", None)

    registry = ProcessRegistry()
    with tempfile.TemporaryDirectory(prefix="start-time-") as tmp:
        scratch = Path(tmp)
        bytecode = "environment as is" if args.env_as_is else "bytecode cached"
        print(f"kafkette serve: {args.starts} starts per build, fresh data dir each, {bytecode}"
              f"  [{load()}]", flush=True)  # fmt: skip
        for name, command in builds.items():
            print(f"  {name}: {' '.join(command)}")
            # Warm-up: the page cache holds the interpreter and the code (and, unless
            # --env-as-is, an editable install's bytecode gets written).
            start_kafkette(command, scratch, env)
        ours: dict[str, list[Start]] = {name: [] for name in builds}
        for _ in range(args.starts):
            for name, command in builds.items():
                ours[name].append(start_kafkette(command, scratch, env))
        for name, starts in ours.items():
            print(summary(f"{name}: spawn to ready line", [s.ready_s * 1000 for s in starts
                                                           if s.ready_s is not None]))
            print(summary(f"{name}: spawn to first Metadata",
                          [s.metadata_s * 1000 for s in starts]))
            print(summary(f"{name}: CPU at ready", [s.cpu_s * 1000 for s in starts]))
            run_ms = [s.run_ms for s in starts if s.run_ms is not None]
            if run_ms:
                print(summary(f"{name}: CPU at ready (schedstat)", run_ms))
            print(summary(f"{name}: RSS at ready", [s.rss_mb for s in starts], "MB"))
            median_ms = statistics.median(s.ready_s * 1000 for s in starts if s.ready_s)
            verdict = "met" if median_ms < GOAL_MS else "not met"
            print(f"{name}: goal ready line under {GOAL_MS:.0f} ms (median): {verdict}"
                  f"  [{load()}]")  # fmt: skip

        if args.no_kafka:
            return 0
        kafka = ApacheKafka()
        reason = kafka.unavailable_reason()
        if reason is not None:
            print(f"\nApache Kafka: skipped ({reason})")
            return 0
        print(f"\nApache Kafka {kafka.version()}: {args.kafka_starts} starts, KRaft, one node"
              f"  [{load()}]", flush=True)  # fmt: skip
        theirs = [start_kafka(kafka, registry, scratch, n) for n in range(args.kafka_starts)]
        kafka_ms = statistics.median(s.metadata_s * 1000 for s in theirs)
        kafka_cpu = statistics.median(s.cpu_s for s in theirs)
        kafka_rss = statistics.median(s.rss_mb for s in theirs)
        print(summary("kafka: launch to first Metadata", [s.metadata_s * 1000 for s in theirs]))
        print(summary("kafka: CPU at first Metadata", [s.cpu_s * 1000 for s in theirs]))
        print(summary("kafka: RSS at first Metadata", [s.rss_mb for s in theirs], "MB"))
        for name, starts in ours.items():
            ready_ms = statistics.median(s.metadata_s * 1000 for s in starts)
            cpu = statistics.median(s.cpu_s for s in starts)
            rss = statistics.median(s.rss_mb for s in starts)
            print(f"ratio {name} / kafka (medians): first Metadata {ready_ms / kafka_ms:.3f}x,"
                  f" CPU {cpu / kafka_cpu:.3f}x, RSS {rss / kafka_rss:.3f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
