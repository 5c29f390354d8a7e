"""End-to-end latency probe: produce at a fixed rate, consume with a long-polling fetch.

    python -m bench.latency_probe [--rate 10000] [--seconds 10] [--mixed] [--stall-ms 5]
    python -m bench.latency_probe --bootstrap 127.0.0.1:9092   # any running broker (Kafka)

Without ``--bootstrap`` it starts kafkette in a child process whose trio loop
carries a stall meter: every task step longer than ``--stall-ms`` (wall time,
so a step that waited for the GIL held by a worker thread counts too) and
every garbage collection longer than 1 ms is recorded, with the task's name,
and summarised at the end. That is how the causes of the tail were found
(docs/performance.md, "Tail latency and partition creation (issue 16)").

The latency pair is the one of ``bench/harness/workloads.py:end_to_end_latency``:
confluent-kafka producer (acks=all, linger.ms=1, 1 KiB records) -> broker ->
confluent-kafka consumer blocked in ``poll``; latency = receive time -
*scheduled* send time (open loop, no coordinated omission). ``--mixed`` adds
one producer at full speed (acks=1, 100 B records) to another topic.

Also ``--create N``: time CreateTopics of an N-partition topic (answer, then
every partition led in Metadata), the issue's partition-creation figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HOST = "127.0.0.1"


# --- the child: kafkette with a stall meter ---------------------------------------------


class _StallMeter:
    """A trio instrument: task steps and GC pauses longer than a threshold, in memory."""

    def __init__(self, threshold_ms: float, cpu: bool) -> None:
        self.threshold_ns = int(threshold_ms * 1e6)
        self.cpu = cpu
        self.steps: list[tuple[float, float, str, float]] = []  # (at s, ms, task, CPU ms)
        self.gcs: list[tuple[float, float, int, int]] = []  # (at s, ms, generation, collected)
        self.step_count = 0
        self._started = 0
        self._cpu_started = 0
        self._gc_started = 0
        self._origin = time.perf_counter_ns()

    def before_task_step(self, task: object) -> None:
        self._started = time.perf_counter_ns()
        if self.cpu:  # a system call per step (CLOCK_THREAD_CPUTIME_ID is no vDSO clock)
            self._cpu_started = time.thread_time_ns()

    def after_task_step(self, task: object) -> None:
        self.step_count += 1
        took = time.perf_counter_ns() - self._started
        if took >= self.threshold_ns:
            # Wall time far above the thread's CPU time: the loop was not running
            # (descheduled by the OS, or waiting for the GIL), not busy.
            cpu = (time.thread_time_ns() - self._cpu_started) / 1e6 if self.cpu else -1.0
            at = (self._started - self._origin) / 1e9
            self.steps.append((at, took / 1e6, getattr(task, "name", "?"), cpu))

    def on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter_ns()
            return
        took = time.perf_counter_ns() - self._gc_started
        if took >= 1_000_000:
            at = (self._gc_started - self._origin) / 1e9
            self.gcs.append((at, took / 1e6, info["generation"], info["collected"]))

    def report(self) -> dict:
        return {"steps": self.steps, "gcs": self.gcs, "step_count": self.step_count}


def serve_with_meter(
    data_dir: str, stall_ms: float, report_path: str, configs: list[str], cpu: bool
) -> int:
    import trio
    import trio.abc

    from kafkette.broker.cli import _serve
    from kafkette.broker.config import load_config, parse_assignments
    from kafkette.broker.server import Broker, Endpoint

    meter = _StallMeter(stall_ms, cpu)

    class Instrument(trio.abc.Instrument):
        before_task_step = staticmethod(meter.before_task_step)
        after_task_step = staticmethod(meter.after_task_step)

    gc.callbacks.append(meter.on_gc)
    if os.environ.get("PROBE_SWITCH_INTERVAL"):  # experiments: the GIL's switch interval
        sys.setswitchinterval(float(os.environ["PROBE_SWITCH_INTERVAL"]))
    config = load_config(parse_assignments(configs), data_dir=Path(data_dir))
    broker = Broker(config, Endpoint(HOST, 0))
    try:
        trio.run(_serve, broker, instruments=[Instrument()])
    finally:
        Path(report_path).write_text(json.dumps(meter.report()))
    return 0


# --- the parent: clients and figures --------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _start_child(args: argparse.Namespace, workdir: Path) -> tuple[subprocess.Popen, str, Path]:
    report = workdir / "stalls.json"
    log_path = workdir / "broker.log"
    argv = [
        sys.executable, "-m", "bench.latency_probe", "--serve", str(workdir / "data"),
        "--stall-ms", str(args.stall_ms), "--stall-report", str(report),
        *(["--stall-cpu"] if args.stall_cpu else []),
    ]
    for config in args.config:
        argv += ["--config", config]
    log_file = open(log_path, "wb")  # the child keeps it; closed when the child exits
    proc = subprocess.Popen(
        argv, stdout=log_file, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=Path(__file__).parent.parent,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("kafkette ready on "):
                port = line.rsplit(":", 1)[1].strip()
                return proc, f"{HOST}:{port}", report
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.kill()
    raise SystemExit(f"kafkette did not start:\n{log_path.read_text(errors='replace')[-2000:]}")


def _create(bootstrap: str, name: str, partitions: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
    admin.list_topics(timeout=10)
    started = time.perf_counter()
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)],
        request_timeout=120, operation_timeout=120,
    )
    futures[name].result(timeout=120)
    answered = time.perf_counter() - started
    while True:
        topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            if all(p.leader >= 0 for p in topic.partitions.values()):
                break
        time.sleep(0.005)
    led = time.perf_counter() - started
    print(f"create {partitions} partitions: answered {answered:.3f} s, all led {led:.3f} s")
    return led


def _full_speed(bootstrap: str, topic: str, stop: object, counter: object) -> None:
    """A child process (its own GIL: a Python loop here must not delay the latency pair's
    client threads): produce 100 B records as fast as the broker takes them."""
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": 1,
        "linger.ms": 5, "queue.buffering.max.messages": 200_000,
    })
    value = bytes(100)
    while not stop.is_set():
        for _ in range(1000):
            try:
                producer.produce(topic, value)
                counter.value += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    producer.flush(30)


def run_throughput(bootstrap: str, records: int, size: int) -> tuple[float, float]:
    """Produce ``records`` of ``size`` bytes at full speed (acks=1, linger.ms=5);
    returns (seconds, records/s). The caller reads the broker's CPU around it."""
    from confluent_kafka import Producer

    topic = f"throughput-{int(time.time())}"
    _create(bootstrap, topic, 1)
    producer = Producer({
        "bootstrap.servers": bootstrap, "broker.address.family": "v4", "acks": 1,
        "linger.ms": 5, "queue.buffering.max.messages": 500_000,
    })
    value = bytes(size)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(120):
        raise SystemExit("throughput producer could not flush")
    seconds = time.perf_counter() - started
    return seconds, records / seconds


def run_latency(bootstrap: str, args: argparse.Namespace) -> dict[str, float]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"latency-{int(time.time())}"
    _create(bootstrap, topic, 1)
    if args.mixed:
        _create(args.load_bootstrap or bootstrap, topic + "-load", 1)
    common = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
    producer = Producer({**common, "acks": "all", "linger.ms": 1})
    producer.list_topics(topic, timeout=10)
    consumer = Consumer({**common, "group.id": "latency-probe", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    latencies: list[float] = []
    received = [0]
    stop = threading.Event()
    measure_from = [1 << 62]

    def consume() -> None:
        while not stop.is_set():
            first = consumer.poll(0.05)
            if first is None:
                continue
            now = time.monotonic_ns()
            for message in [first, *consumer.consume(num_messages=1000, timeout=0)]:
                if message.error():
                    raise SystemExit(f"consumer error {message.error()}")
                scheduled = int.from_bytes(message.value()[:8], "big")
                received[0] += 1
                if scheduled >= measure_from[0]:
                    latencies.append((now - scheduled) / 1e6)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    spawn = multiprocessing.get_context("spawn")
    load_count = spawn.Value("q", 0, lock=False)
    load_stop = spawn.Event()
    loader = None
    load_started = time.monotonic_ns()
    if args.mixed:
        loader = spawn.Process(
            target=_full_speed,
            args=(args.load_bootstrap or bootstrap, topic + "-load", load_stop, load_count),
            daemon=True,
        )
        loader.start()
        time.sleep(1.0)  # its client connected and producing
    time.sleep(0.5)
    padding = bytes(args.size - 8)
    rate = args.rate
    started = time.monotonic_ns()
    measure_from[0] = started + int(args.warmup * 1e9)
    total_ns = int((args.warmup + args.seconds) * 1e9)
    sent = 0
    while True:
        elapsed = time.monotonic_ns() - started
        if elapsed >= total_ns:
            break
        due = elapsed * rate // 1_000_000_000
        while sent < due:
            scheduled = started + sent * 1_000_000_000 // rate
            try:
                producer.produce(topic, scheduled.to_bytes(8, "big") + padding, partition=0)
                sent += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
        time.sleep(0.0005)
    producer.flush(30)
    deadline = time.monotonic() + 30
    while received[0] < sent and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    load_stop.set()
    reader.join(10)
    if loader is not None:
        loader.join(30)
    consumer.close()
    if received[0] != sent:
        raise SystemExit(f"received {received[0]} of {sent}")
    figures = {
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
        "p99.9_ms": _percentile(latencies, 0.999),
        "max_ms": max(latencies),
        "samples": len(latencies),
    }
    if args.mixed:
        figures["load_records_per_s"] = load_count.value / (
            (time.monotonic_ns() - load_started) / 1e9
        )
    return figures


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _print_stalls(report: Path, threshold: float) -> None:
    data = json.loads(report.read_text())
    steps, gcs = data["steps"], data["gcs"]
    print(f"task steps: {data['step_count']:,}; over {threshold} ms: {len(steps)}")
    by_task: dict[str, list[tuple[float, float]]] = {}
    for _at, ms, name, cpu in steps:
        by_task.setdefault(name.rsplit(".", 1)[-1], []).append((ms, cpu))
    for name, values in sorted(by_task.items(), key=lambda kv: -sum(v[0] for v in kv[1]))[:12]:
        wall = [v[0] for v in values]
        cpu = sum(v[1] for v in values)
        print(f"  {name:<40} n={len(values):>4} max={max(wall):7.1f} ms sum={sum(wall):8.1f} ms"
              + (f" (on CPU {cpu:7.1f} ms)" if cpu >= 0 else ""))
    for at, ms, name, cpu in sorted(steps, key=lambda step: -step[1])[:5]:
        print(f"    longest: at {at:7.3f} s {ms:6.1f} ms {name.rsplit('.', 1)[-1]}"
              + (f" (on CPU {cpu:.1f} ms)" if cpu >= 0 else ""))
    print(f"gc pauses over 1 ms: {len(gcs)}"
          + (f", max {max(g[1] for g in gcs):.1f} ms"
             f" (gen2: {sum(1 for g in gcs if g[2] == 2)})" if gcs else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="measure this broker instead of starting kafkette")
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--mixed", action="store_true", help="one full-speed producer beside")
    parser.add_argument("--load-bootstrap", help="--mixed: load this broker instead")
    parser.add_argument("--create", type=int, default=0, help="time an N-partition CreateTopics")
    parser.add_argument("--no-latency", action="store_true", help="only --create/--throughput")
    parser.add_argument("--throughput", type=int, default=0,
                        help="first produce N records at full speed: rate, broker CPU")
    parser.add_argument("--throughput-size", type=int, default=100)
    parser.add_argument("--stall-ms", type=float, default=5.0)
    parser.add_argument("--stall-cpu", action="store_true",
                        help="also each long step's CPU time (a clock call per step)")
    parser.add_argument("--config", action="append", default=[], help="broker KEY=VALUE")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # child mode: data dir
    parser.add_argument("--stall-report", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve_with_meter(
            args.serve, args.stall_ms, args.stall_report, args.config, args.stall_cpu
        )
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if args.bootstrap:
        if args.create:
            _create(args.bootstrap, f"create-{int(time.time())}", args.create)
        if not args.no_latency:
            print(json.dumps(run_latency(args.bootstrap, args)))
        return 0
    with tempfile.TemporaryDirectory(prefix="latency-probe-") as tmp:
        proc, bootstrap, report = _start_child(args, Path(tmp))
        try:
            cpu_before = _cpu_seconds(proc.pid)
            if args.create:
                _create(bootstrap, "create-probe", args.create)
            if args.throughput:
                cpu = _cpu_seconds(proc.pid)
                _, rate = run_throughput(bootstrap, args.throughput, args.throughput_size)
                cpu = _cpu_seconds(proc.pid) - cpu
                print(f"produce {args.throughput:,} x {args.throughput_size} B: {rate:,.0f} rec/s,"
                      f" broker CPU {cpu / args.throughput * 1e6:.2f} s per million records")
            if not args.no_latency:
                print(json.dumps(run_latency(bootstrap, args)))
            print(f"broker CPU: {_cpu_seconds(proc.pid) - cpu_before:.2f} s")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if report.exists():
            _print_stalls(report, args.stall_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
