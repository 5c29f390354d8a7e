"""Produce latency through the broker while its log cleaner compacts a big topic, cleaner on vs off.

Run ``python -m bench.cleaner_produce_bench`` from the repository root (``--quick`` for a short
run; ``--brokers kafkette,kafka`` adds Apache Kafka when ``KAFKA_HOME`` points at one).

``bench/cleaner_bench.py`` times the cleaner and appends inside one process; this script asks
the question a user asks: does produce through a real socket stay flat while the broker cleans?
Per round and broker, two freshly started brokers, ``log.cleaner.enable=true`` then ``false``,
both with ``log.cleaner.backoff.ms=200``, take exactly the same load:

1. Topic ``changelog`` (``cleanup.policy=compact``, ``segment.bytes`` 4 MiB,
   ``min.compaction.lag.ms`` one day, so nothing is cleanable yet) is filled with ``--mb`` MB of
   keyed records: ``--keys`` keys overwritten round after round, ``--value-size`` B values.
2. Topic ``latency`` takes ``--rate`` records/s of 1 KiB from one confluent-kafka producer
   (acks=all, linger.ms=0). A record's produce latency is its delivery report's time minus its
   *scheduled* send time (a stalled producer cannot hide latency); a consumer reads the topic
   at the same time for produce-to-consume latency (the fetch path).
3. After ``--warmup`` s, ``min.compaction.lag.ms`` of ``changelog`` is altered to 0 (in both
   runs): the whole topic becomes cleanable and an enabled cleaner starts within its backoff.
   The produce goes on for ``--seconds``.
4. The ``*.log`` bytes of ``changelog-0`` on disk are watched: the clean ends at their last
   shrink. Cleaner throughput = bytes of the closed segments before / (last shrink - alter).

Latency percentiles cover the records scheduled while the cleaner ran (alter to last shrink,
at most ``--seconds``); the cleaner-off run takes the same interval from its own alter. MB are
10^6 bytes, as in the harness. Figures are medians over ``--rounds``, printed as the harness's
table (``bench/harness/report.py``) and as Markdown. A script, not a test: figures depend on the
machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from .harness.brokers import ApacheKafka, Broker, Kafkette, RunningBroker
from .harness.metrics import percentile
from .harness.processes import ProcessRegistry, RssSampler
from .harness.report import markdown, print_report, summarize
from .harness.workloads import (
    QUICK,
    Context,
    WorkloadError,
    _await_drained,
    _client_config,
    _LatencyConsumer,
    _produce_confluent,
    _require_alive,
    _send_due,
    create_topic,
)

MB = 1_000_000
COMPACTED = "changelog"
LATENCY = "latency"
RECORD_SIZE = 1024
BACKOFF_MS = 200
SEGMENT_BYTES = 4 * 1024 * 1024
HOLD_MS = 86_400_000  # min.compaction.lag.ms while filling: nothing cleanable until the alter
SETTLE_S = 3.0  # no shrink for this long after the last one: the clean is over


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cleaner_produce_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true",
                        help="--mb 24 --seconds 8 --warmup 1 (25-40 s per broker)")
    parser.add_argument("--brokers", default="kafkette",
                        help="comma-separated, from: kafkette, kafka (needs KAFKA_HOME)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mb", type=int, default=256,
                        help="MB of keyed records in the compacted topic (default 256)")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--value-size", type=int, default=200)
    parser.add_argument("--batch-bytes", type=int, default=16_384,
                        help="producer batch.size while filling the compacted topic (default "
                             "16384, the Java producer's, as Kafka Streams writes changelogs)")
    parser.add_argument("--rate", type=int, default=1000, help="latency records/s (1 KiB)")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="produce this long after the alter (default 30)")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--clean-timeout", type=float, default=600.0,
                        help="seconds a clean may take before the run fails")
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--kafkette-config", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to kafkette serve as --config KEY=VALUE (repeatable), "
                             "e.g. log.cleaner.io.max.bytes.per.second=5000000")
    parser.add_argument("--trace", type=Path, default=None, metavar="DIR",
                        help="keep, per run, every record's (scheduled time, produce latency) "
                             "and the broker's log in DIR, to line slow answers up with the "
                             "cleaner's log lines (times are CLOCK_MONOTONIC seconds)")
    args = parser.parse_args(argv)
    if args.quick:
        args.mb, args.seconds, args.warmup = 24, 8.0, 1.0
    args.broker_names = [name.strip() for name in args.brokers.split(",") if name.strip()]
    unknown = set(args.broker_names) - {"kafkette", "kafka"}
    if unknown or not args.broker_names:
        parser.error(f"unknown or empty --brokers {sorted(unknown)}; choose kafkette, kafka")
    return args


def make_broker(name: str, cleaner_on: bool, kafkette_configs: list[str]) -> Broker:
    enable = "true" if cleaner_on else "false"
    configs = {"log.cleaner.enable": enable, "log.cleaner.backoff.ms": str(BACKOFF_MS)}
    if name == "kafka":
        return ApacheKafka(configs)
    return Kafkette([f"{key}={value}" for key, value in configs.items()] + kafkette_configs)


def log_bytes(directory: Path) -> tuple[int, int]:
    """(bytes of every ``*.log`` file, bytes of all but the newest) of a partition directory.

    Only ``*.log``: Kafka renames replaced segments to ``*.log.deleted`` and removes them a
    minute later; files being written by a clean (``*.cleaned``, ``*.swap``) are not the log yet.
    """
    sizes = []
    try:
        for entry in os.scandir(directory):
            if entry.name.endswith(".log"):
                try:
                    sizes.append((entry.name, entry.stat().st_size))
                except FileNotFoundError:  # swapped out between scandir and stat
                    continue
    except FileNotFoundError:
        return 0, 0
    sizes.sort()
    total = sum(size for _, size in sizes)
    return total, total - (sizes[-1][1] if sizes else 0)


class SizeWatcher(threading.Thread):
    """Samples the compacted partition's log bytes every 50 ms; keeps the moments they changed."""

    def __init__(self, directory: Path) -> None:
        super().__init__(name="size-watcher", daemon=True)
        self.directory = directory
        self.changes: list[tuple[int, int]] = [(time.monotonic_ns(), log_bytes(directory)[0])]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            size = log_bytes(self.directory)[0]
            if size != self.changes[-1][1]:
                self.changes.append((time.monotonic_ns(), size))

    def last_shrink_ns(self, since_ns: int) -> int | None:
        shrinks = [
            at for (at, size), (_, before) in zip(self.changes[1:], self.changes, strict=False)
            if at >= since_ns and size < before
        ]
        return shrinks[-1] if shrinks else None


def fill_compacted(ctx: Context, args: argparse.Namespace) -> None:
    """``--mb`` MB of keyed records (key + value bytes), acks=1, values half random.

    Batches are ``--batch-bytes`` at most: the cleaner decodes a whole batch between two
    hand-overs of the GIL, so the batch size it finds in the log matters to produce latency.
    """
    rnd = random.Random(1)
    half = args.value_size // 2
    text = b"kafkette bench value " * (args.value_size // 20 + 1)
    values = [rnd.randbytes(half) + text[: args.value_size - half] for _ in range(61)]
    keys = [b"key-%08d" % index for index in range(args.keys)]
    count = args.mb * MB // (args.value_size + len(keys[0]))
    config = {"acks": "1", "linger.ms": 20, "batch.size": args.batch_bytes}
    sent, _ = _produce_confluent(ctx, COMPACTED, args.value_size, count, config, 600.0,
                                 values=values, keys=keys)
    if sent != count:
        raise WorkloadError(f"filled only {sent} of {count} records in 600 s")


def alter_lag(admin: AdminClient, value: str, failures: list[str]) -> None:
    """IncrementalAlterConfigs of the compacted topic's lag; a failure goes to ``failures``."""
    resource = ConfigResource(
        ResourceType.TOPIC, COMPACTED,
        incremental_configs=[ConfigEntry("min.compaction.lag.ms", value,
                                         incremental_operation=AlterConfigOpType.SET)],
    )
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)
    except Exception as error:  # handed to the produce loop, which stops on it
        failures.append(f"alter min.compaction.lag.ms: {error}")


def measured_produce(
    ctx: Context, args: argparse.Namespace, admin: AdminClient
) -> tuple[int, list[tuple[int, float]], _LatencyConsumer]:
    """Produce at ``--rate`` for warm-up + ``--seconds``, altering the lag after the warm-up.

    Returns (alter time, [(scheduled ns, produce latency ms)], the finished consumer).
    """
    results: list[tuple[int, float]] = []
    failures: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        done = time.monotonic_ns()
        if err is not None:
            failures.append(str(err))
            return
        scheduled = int.from_bytes(msg.value()[:8], "big")  # type: ignore[attr-defined]
        results.append((scheduled, (done - scheduled) / 1e6))

    padding = bytes(RECORD_SIZE - 8)
    producer = Producer(_client_config(ctx, acks="all", **{"linger.ms": 0}),
                        on_delivery=on_delivery)
    producer.list_topics(LATENCY, timeout=10)
    consumer = _LatencyConsumer(ctx, LATENCY, 0)
    consumer.start()
    time.sleep(0.5)  # the consumer's first fetch is parked before the clock runs
    rate = args.rate
    started_ns = time.monotonic_ns()
    alter_at_ns = started_ns + int(args.warmup * 1e9)
    total_ns = int((args.warmup + args.seconds) * 1e9)
    altered_ns = 0
    alter: threading.Thread | None = None
    sent = 0
    try:
        while True:
            now_ns = time.monotonic_ns()
            if now_ns - started_ns >= total_ns or failures:
                break
            if alter is None and now_ns >= alter_at_ns:
                # In a thread: this loop must not stall for the admin round trip.
                alter = threading.Thread(target=alter_lag, args=(admin, "0", failures),
                                         daemon=True)
                alter.start()
                altered_ns = now_ns
            sent = _send_due(
                producer, LATENCY, padding, started_ns, rate, sent, now_ns - started_ns
            )
            _require_alive(ctx)
            time.sleep(0.0005)
        if alter is None:
            raise WorkloadError("the produce ended before the alter")
        alter.join(timeout=30)
        if producer.flush(60):
            raise WorkloadError("latency producer could not flush in 60 s")
        _await_drained(consumer, sent)
    finally:
        consumer.stop.set()
        consumer.join(timeout=10)
    if failures:
        raise WorkloadError(f"{len(failures)} failures, first: {failures[0]}")
    if len(results) != sent:
        raise WorkloadError(f"{len(results)} of {sent} records acknowledged")
    if consumer.error or consumer.received != sent:
        raise WorkloadError(f"consumer got {consumer.received} of {sent} ({consumer.error})")
    return altered_ns, results, consumer


def latency_figures(
    state: str, results: list[tuple[int, float]], consumer: _LatencyConsumer,
    start_ns: int, end_ns: int,
) -> dict[str, float]:
    produce = [ms for scheduled, ms in results if start_ns <= scheduled < end_ns]
    e2e = [
        ms for scheduled, ms in zip(consumer.scheduled_ns, consumer.latencies_ms, strict=True)
        if start_ns <= scheduled < end_ns
    ]
    figures = {
        f"cleaner.{state}.produce_{name}_ms": percentile(produce, fraction)
        for name, fraction in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))
    }
    figures[f"cleaner.{state}.e2e_p50_ms"] = percentile(e2e, 0.5)
    figures[f"cleaner.{state}.e2e_p99_ms"] = percentile(e2e, 0.99)
    return figures


def one_run(
    registry: ProcessRegistry, workdir: Path, name: str, cleaner_on: bool,
    args: argparse.Namespace, window_ns: int | None,
) -> tuple[dict[str, float], int, str]:
    """One fresh broker, filled and loaded. Returns (figures, window used in ns, a summary line)."""
    state = "on" if cleaner_on else "off"
    broker: RunningBroker = make_broker(name, cleaner_on, args.kafkette_config).start(
        registry, workdir, args.start_timeout
    )
    try:
        with RssSampler(broker.proc.pid) as sampler:
            ctx = Context(broker, QUICK, sampler, lambda _text: None)
            create_topic(ctx, COMPACTED, config={
                "cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES),
                "min.compaction.lag.ms": str(HOLD_MS),
            })
            create_topic(ctx, LATENCY)
            filled = time.perf_counter()
            fill_compacted(ctx, args)
            fill_s = time.perf_counter() - filled
            partition = workdir / "data" / f"{COMPACTED}-0"
            total, closed = log_bytes(partition)
            if not closed:
                raise WorkloadError(f"no closed segment in {partition}")
            watcher = SizeWatcher(partition)
            watcher.start()
            sampler.reset_peak()
            admin = AdminClient(_client_config(ctx))
            try:
                altered_ns, results, consumer = measured_produce(ctx, args, admin)
                figures: dict[str, float] = {f"cleaner.{state}.peak_rss_mb": sampler.peak}
                end_ns = altered_ns + int(args.seconds * 1e9)
                line = f"{total / MB:.0f} MB compacted topic filled in {fill_s:.1f} s"
                if cleaner_on:
                    shrink_ns = wait_for_clean(watcher, altered_ns, args.clean_timeout, ctx)
                    clean_s = (shrink_ns - altered_ns) / 1e9
                    after = log_bytes(partition)[0]
                    figures.update({
                        "cleaner.clean_s": clean_s, "cleaner.mb_per_s": closed / MB / clean_s,
                        "cleaner.after_mb": after / MB,
                    })
                    end_ns = min(end_ns, shrink_ns)
                    line += (f"; cleaned {closed / MB:.0f} MB in {clean_s:.1f} s "
                             f"({closed / MB / clean_s:.1f} MB/s), {after / MB:.1f} MB after")
                else:
                    time.sleep(SETTLE_S)
                    if watcher.last_shrink_ns(altered_ns) is not None:
                        raise WorkloadError("the log shrank with log.cleaner.enable=false")
                    if window_ns is not None:
                        end_ns = min(end_ns, altered_ns + window_ns)
                    line += "; no clean (as configured)"
            finally:
                watcher.stop.set()
                watcher.join(timeout=5)
            figures.update(latency_figures(state, results, consumer, altered_ns, end_ns))
            if args.trace is not None:
                save_trace(args.trace / workdir.name, workdir, results, altered_ns, end_ns)
            samples = sum(1 for scheduled, _ in results if altered_ns <= scheduled < end_ns)
            # A backlog already there at the alter (the machine was busy) spills into a
            # short window: the warm-up's p99 says whether it did.
            warmup = [ms for scheduled, ms in results if scheduled < altered_ns]
            line += (
                f"; over {(end_ns - altered_ns) / 1e9:.1f} s ({samples} records) produce "
                f"p50 {figures[f'cleaner.{state}.produce_p50_ms']:.1f} ms, "
                f"p99 {figures[f'cleaner.{state}.produce_p99_ms']:.1f} ms "
                f"(warm-up before the alter: p99 {percentile(warmup, 0.99):.1f} ms)"
            )
            _require_alive(ctx)
            return figures, end_ns - altered_ns, line
    finally:
        broker.stop()


def save_trace(
    target: Path, workdir: Path, results: list[tuple[int, float]], altered_ns: int, end_ns: int
) -> None:
    """``--trace``: latencies.txt (monotonic s, ms; the window on its first line) and broker.log."""
    target.mkdir(parents=True, exist_ok=True)
    lines = [f"# window {altered_ns / 1e9:.6f} {end_ns / 1e9:.6f}"]
    lines += [f"{scheduled / 1e9:.6f} {ms:.3f}" for scheduled, ms in sorted(results)]
    (target / "latencies.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("broker.log", "server.log"):
        if (workdir / name).exists():
            shutil.copy(workdir / name, target / name)


def wait_for_clean(watcher: SizeWatcher, since_ns: int, timeout_s: float, ctx: Context) -> int:
    """The last shrink's time, once nothing has shrunk for SETTLE_S (the clean is over)."""
    deadline = time.monotonic_ns() + int(timeout_s * 1e9)
    while time.monotonic_ns() < deadline:
        _require_alive(ctx)
        last = watcher.last_shrink_ns(since_ns)
        if last is not None and time.monotonic_ns() - last > SETTLE_S * 1e9:
            return last
        time.sleep(0.1)
    raise WorkloadError(f"the compacted topic was not cleaned within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    args = parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 150)
    labels = {"kafkette": "kafkette", "kafka": "Apache Kafka"}
    notes: list[str] = []
    names = []
    for name in args.broker_names:
        reason = make_broker(name, True, []).unavailable_reason()
        if reason:
            notes.append(f"{labels[name]}: skipped, {reason}")
            console.print(f"[yellow]{notes[-1]}[/yellow]")
        else:
            names.append(name)
    if not names:
        return 2
    load = os.getloadavg()[0]
    notes.append(
        f"{args.mb} MB compacted ({args.keys:,} keys, {args.value_size} B values, batches of "
        f"<= {args.batch_bytes:,} B, 4 MiB segments); {args.rate:,} records/s of 1 KiB, "
        f"acks=all; 1-minute load at start {load:.1f} on {os.cpu_count()} CPUs"
    )
    registry = ProcessRegistry()
    scratch = Path(tempfile.mkdtemp(prefix="kafkette-cleaner-bench-"))
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    runs: list[dict] = []
    try:
        for round_no in range(1, args.rounds + 1):
            for name in names:
                window_ns = None
                for cleaner_on in (True, False):
                    state = "on" if cleaner_on else "off"
                    prefix = f"round {round_no} {labels[name]} cleaner {state}"
                    console.print(f"{prefix} ...")
                    workdir = scratch / f"r{round_no}-{name}-{state}"
                    run: dict = {"round": round_no, "broker": name, "metrics": {}, "error": None}
                    try:
                        figures, used_ns, line = one_run(
                            registry, workdir, name, cleaner_on, args, window_ns
                        )
                        run["metrics"] = figures
                        window_ns = window_ns or used_ns
                        console.print(f"  {line}")
                    except (WorkloadError, RuntimeError, TimeoutError, KafkaException) as error:
                        run["error"] = f"{type(error).__name__}: {error}"
                        notes.append(f"{prefix} failed: {str(error).splitlines()[0]}")
                        console.print(f"[red]  {run['error']}[/red]")
                    finally:
                        shutil.rmtree(workdir, ignore_errors=True)
                    runs.append(run)
    except KeyboardInterrupt:
        notes.append("interrupted")
    finally:
        registry.stop_all()
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    summary = summarize(runs)
    print_report(console, summary, names, labels, [], notes)
    console.print()
    console.print(markdown(summary, names, labels, [], notes), markup=False, highlight=False)
    return 1 if any(run["error"] for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
