"""How long a test waits for its broker: the ``kafka_broker`` fixture and ``kafkette.testing``.

Run ``python bench/fixture_start.py`` (or ``python -m bench.fixture_start``) from the
repository root. Prints median and spread (min, max) of:

* import: a fresh interpreter's ``import kafkette.broker.embedded`` (trio, the codec, the
  configs) -- paid once per test session, on first use of a fixture, not at plugin load;
  and ``import kafkette.pytest_plugin`` after pytest's own import, which every pytest run
  with kafkette installed pays.
* start: ``kafkette.testing.broker()`` from the call to a bound port, and to the first
  Metadata answer a real client (confluent-kafka's AdminClient) gets; stop: the ``with``
  block's exit (graceful stop, temporary data dir removed). Goal: start under 0.3 s.
* fixture: the ``kafka_broker`` fixture's setup as pytest reports it (``--durations``) in a
  fresh ``python -m pytest`` of a one-test project, so with the import above included.
* first record: a group consumer's first record with ``group.initial.rebalance.delay.ms=0``
  (the fixtures' default) beside Kafka's default of 3000 ms.

A script, not a test: figures depend on the machine and its load, printed beside them.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

IMPORT_SCRIPT = """
import time
{before}
started, cpu = time.perf_counter(), time.process_time()
import {module}
print(time.perf_counter() - started, time.process_time() - cpu)
"""

FIXTURE_TEST = """
def test_start(kafka_broker):
    assert kafka_broker.bootstrap
"""

SETUP_LINE = re.compile(r"^([0-9.]+)s setup\s+test_start\.py::test_start")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def summary(name: str, seconds: Sequence[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"{name:<44} median {statistics.median(ms):8.1f} ms   "
        f"min {ms[0]:8.1f}   max {ms[-1]:8.1f}   (n={len(ms)})"
    )


def import_times(module: str, runs: int, before: str = "") -> tuple[list[float], list[float]]:
    """(wall, CPU) seconds to import ``module`` in fresh interpreters, after ``before``."""
    script = IMPORT_SCRIPT.format(module=module, before=f"import {before}" if before else "")
    wall, cpu = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, timeout=120).stdout.split()
        wall.append(float(out[0]))
        cpu.append(float(out[1]))
    return wall, cpu


def start_stop_times(runs: int) -> tuple[list[float], ...]:
    """(to bound port, to first Metadata answer, its CPU, stop) for ``runs`` brokers here.

    CPU is this process's (every thread: the broker's and librdkafka's), which machine load
    does not inflate as it does wall time."""
    from confluent_kafka.admin import AdminClient

    import kafkette.testing

    with kafkette.testing.broker():  # warm-up: imports, first-call caches
        pass
    bound, answered, cpu, stopped = [], [], [], []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        with kafkette.testing.broker() as kafka:
            bound.append(time.perf_counter() - started)
            AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10)
            answered.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
            leaving = time.perf_counter()
        stopped.append(time.perf_counter() - leaving)
    return bound, answered, cpu, stopped


def fixture_setup_times(runs: int) -> list[float]:
    """``kafka_broker``'s setup in a fresh ``python -m pytest`` (the plugin by entry point)."""
    times = []
    with tempfile.TemporaryDirectory(prefix="fixture-start-") as project:
        Path(project, "test_start.py").write_text(FIXTURE_TEST)
        for _ in range(runs):
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--durations=0",
                 "-vv", "-o", "addopts=", f"--basetemp={project}/tmp", "test_start.py"],
                cwd=project, capture_output=True, text=True, timeout=300, check=False,
            )
            found = [SETUP_LINE.match(line) for line in done.stdout.splitlines()]
            found = [m for m in found if m]
            if done.returncode != 0 or not found:
                raise RuntimeError(f"inner pytest failed:\n{done.stdout}\n{done.stderr}")
            times.append(float(found[0].group(1)))
    return times


def first_record_time(delay_ms: str) -> float:
    """A producer writes one record, then a new group consumer subscribes: seconds to it."""
    from confluent_kafka import Consumer, Producer

    import kafkette.testing

    configs = {"group.initial.rebalance.delay.ms": delay_ms}
    with kafkette.testing.broker(configs=configs) as kafka:
        topic = kafka.create_topic()
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, b"first")
        producer.flush(10)
        del producer  # closes its connections before the broker stops
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap,
                             "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                             "auto.offset.reset": "earliest"})
        started = time.perf_counter()
        try:
            consumer.subscribe([topic])
            while time.perf_counter() - started < 60:
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    return time.perf_counter() - started
        finally:
            consumer.close()
    raise RuntimeError("no record within 60 s")


def timed_section(title: str, body: Callable[[], None]) -> None:
    print(f"\n{title}  [{load()}]")
    body()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20, help="in-process starts (default 20)")
    parser.add_argument("--imports", type=int, default=7, help="fresh-interpreter imports")
    parser.add_argument("--pytest-runs", type=int, default=5, help="fresh pytest runs")
    parser.add_argument("--skip-group", action="store_true", help="skip the first-record figure")
    args = parser.parse_args(argv)

    def imports() -> None:
        for label, module, before in (
            ("import kafkette.pytest_plugin (after pytest)", "kafkette.pytest_plugin", "pytest"),
            ("import kafkette.broker.embedded (first use)", "kafkette.broker.embedded", ""),
        ):
            wall, cpu = import_times(module, args.imports, before)
            print(summary(label, wall))
            print(summary("  CPU", cpu))

    def starts() -> None:
        bound, answered, cpu, stopped = start_stop_times(args.starts)
        print(summary("testing.broker(): port bound", bound))
        print(summary("testing.broker(): first Metadata answered", answered))
        print(summary("  CPU (all threads) to that answer", cpu))
        print(summary("exit: graceful stop + data dir removed", stopped))
        print(f"goal: start under 300 ms -> median {statistics.median(answered) * 1000:.1f} ms")

    def fixture() -> None:
        print(summary("kafka_broker setup in fresh pytest (+import)",
                      fixture_setup_times(args.pytest_runs)))

    def group() -> None:
        for delay in ("0", "3000"):
            seconds = first_record_time(delay)
            print(f"{'group.initial.rebalance.delay.ms=' + delay:<44} {seconds * 1000:8.1f} ms")

    timed_section("imports (fresh interpreter each)", imports)
    timed_section("in-process starts (after one warm-up)", starts)
    timed_section("the pytest fixture", fixture)
    if not args.skip_group:
        timed_section("first record to a new group consumer", group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
