"""The workloads: each drives one freshly started broker and returns figures keyed as in metrics.

Clients run in this process: confluent-kafka (librdkafka, C threads) is the main load generator,
kafka-python the second, slower one. Every loop is bounded by a record count *and* a deadline; a
run that hits its deadline reports what was delivered in the time taken. Any delivery error,
lost record or timeout raises ``WorkloadError``: a broker that drops data gets no figure.
Workloads are not thread-safe and must run one at a time against a broker that runs alone.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import logging
import math
import random
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .brokers import RunningBroker
from .load_client import ClientGroup
from .metrics import percentile
from .probe import ProbeError, api_versions, open_idle_connections
from .processes import CpuWindow, RssSampler

MB = 1_000_000
SIZE_NAMES = {100: "100B", 1024: "1KiB"}

# librdkafka logs every failed reconnect to stderr, which buries the progress display when a
# broker dies; failures surface as WorkloadError instead, with the broker's log tail.
_CLIENT_LOG = logging.getLogger("bench.librdkafka")
_CLIENT_LOG.addHandler(logging.NullHandler())
_CLIENT_LOG.propagate = False


class WorkloadError(Exception):
    """The broker misbehaved (error, lost record, timeout); the figure would be meaningless."""


@dataclass(frozen=True)
class Sizes:
    """How much work each workload does. Byte totals are payload bytes (MB = 10^6)."""

    produce_bytes: dict[int, int]
    kafka_python_bytes: dict[int, int]
    consume_bytes: dict[int, int]
    cap_s: float
    e2e_rate: int
    e2e_warmup_s: float
    e2e_seconds: float
    partitions: int
    connections: int
    latency_samples: int
    java_perf_records: int = 1_000_000
    scaling_seconds: float = 3.0  # per phase (produce, consume) of each scaling cell
    idle_partitions: int = 10_000


QUICK = Sizes(
    produce_bytes={100: 5 * MB, 1024: 20 * MB},
    kafka_python_bytes={100: 1 * MB, 1024: 4 * MB},
    consume_bytes={100: 30 * MB, 1024: 50 * MB},
    cap_s=15.0,
    e2e_rate=10_000,
    e2e_warmup_s=1.0,
    e2e_seconds=4.0,
    partitions=1000,
    connections=1000,
    latency_samples=200,
    java_perf_records=200_000,
    scaling_seconds=1.5,
    idle_partitions=2_000,
)

FULL = Sizes(
    produce_bytes={100: 100 * MB, 1024: 400 * MB},
    kafka_python_bytes={100: 10 * MB, 1024: 50 * MB},
    consume_bytes={100: 100 * MB, 1024: 400 * MB},
    cap_s=60.0,
    e2e_rate=10_000,
    e2e_warmup_s=2.0,
    e2e_seconds=20.0,
    partitions=1000,
    connections=1000,
    latency_samples=1000,
)


@dataclass
class Context:
    """What a workload gets: the broker, the sizes, an RSS sampler and a progress note sink."""

    broker: RunningBroker
    sizes: Sizes
    sampler: RssSampler
    note: Callable[[str], None]
    consumer_config: dict[str, str] = field(default_factory=lambda: dict(CONSUMER_QUEUE_DEFAULTS))


def _require_alive(ctx: Context) -> None:
    """Fail fast when the broker died, instead of waiting out client timeouts."""
    if not ctx.broker.alive():
        raise WorkloadError(f"broker exited with code {ctx.broker.proc.returncode}")


def _client_config(ctx: Context, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": ctx.broker.bootstrap,
        "client.id": "kafkette-bench",
        "broker.address.family": "v4",
        "logger": _CLIENT_LOG,
        **extra,
    }


def create_topic(
    ctx: Context, name: str, partitions: int = 1, timeout_s: float = 120.0,
    config: dict[str, str] | None = None,
) -> float:
    """Create ``name`` (topic ``config`` if given) and wait until every partition has a leader.

    Returns seconds from the CreateTopics call to that moment.
    """
    admin = AdminClient(_client_config(ctx))
    started = time.perf_counter()
    deadline = started + timeout_s
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        request_timeout=timeout_s, operation_timeout=timeout_s,
    )
    answered = False
    while not answered:
        try:
            futures[name].result(timeout=0.5)
            answered = True
        except concurrent.futures.TimeoutError:
            _require_alive(ctx)
        except KafkaException as error:
            raise WorkloadError(f"CreateTopics {name}: {error}") from None
        if not answered and time.perf_counter() > deadline:
            raise WorkloadError(f"CreateTopics {name}: no answer in {timeout_s:.0f} s")
    while time.perf_counter() < deadline:
        try:
            topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
        except KafkaException:
            topic = None
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            if all(p.leader >= 0 and p.error is None for p in topic.partitions.values()):
                return time.perf_counter() - started
        time.sleep(0.02)
    raise WorkloadError(f"topic {name} not fully led after {timeout_s:.0f} s")


def _produce_confluent(
    ctx: Context,
    topic: str,
    size: int,
    count: int,
    config: dict[str, object],
    cap_s: float,
    values: list[bytes] | None = None,
    keys: list[bytes] | None = None,
) -> tuple[int, float]:
    """Produce ``count`` records of ``size`` bytes; returns (delivered, seconds to last ack).

    Values are zeros unless ``values`` is given (cycled through, for codecs to have work);
    keys are null unless ``keys`` is given (cycled through, e.g. for a compacted topic).
    """
    failures: list[str] = []

    def on_error(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer(
        _client_config(
            ctx, **config, **{"delivery.report.only.error": True,
                              "queue.buffering.max.messages": 1_000_000},
        ),
        on_delivery=on_error,
    )
    next_value = itertools.cycle(values or [bytes(size)]).__next__
    next_key = itertools.cycle(keys).__next__ if keys else None
    started = time.perf_counter()
    deadline = started + cap_s
    sent = 0
    while sent < count:
        if sent % 1000 == 0:
            producer.poll(0)
            if time.perf_counter() > deadline or failures:
                break
            if sent % 50_000 == 0:
                _require_alive(ctx)
        try:
            if next_key is None:
                producer.produce(topic, next_value(), partition=0)
            else:
                producer.produce(topic, next_value(), next_key(), partition=0)
            sent += 1
        except BufferError:
            producer.poll(0.001)
    left = producer.flush(max(30.0, cap_s))
    elapsed = time.perf_counter() - started
    stats = config.get("stats_cb")
    if isinstance(stats, _Stats):  # counters up to date, including the last requests
        stats.fresh(producer)
    if failures:
        raise WorkloadError(f"{len(failures)} delivery failures, first: {failures[0]}")
    if left:
        raise WorkloadError(f"{left} records still unacknowledged after flush")
    return sent, elapsed


def _throughput(prefix: str, records: int, size: int, seconds: float) -> dict[str, float]:
    return {
        f"{prefix}.records_per_s": records / seconds,
        f"{prefix}.mb_per_s": records * size / seconds / MB,
    }


def produce_confluent(ctx: Context) -> dict[str, float]:
    """Produce throughput with confluent-kafka at 100 B and 1 KiB, acks=1 and acks=all."""
    figures: dict[str, float] = {}
    ctx.sampler.reset_peak()
    for size in (100, 1024):
        for acks in ("1", "all"):
            name = f"produce.confluent.{SIZE_NAMES[size]}.acks={acks}"
            ctx.note(name)
            topic = f"produce-confluent-{size}-{acks}"
            create_topic(ctx, topic)
            config = {"acks": acks, "linger.ms": 5}
            _produce_confluent(ctx, topic, size, 2000, config, ctx.sizes.cap_s)  # warm-up
            count = ctx.sizes.produce_bytes[size] // size
            records, seconds = _produce_confluent(ctx, topic, size, count, config, ctx.sizes.cap_s)
            figures.update(_throughput(name, records, size, seconds))
    figures["loaded_rss_mb"] = ctx.sampler.peak
    return figures


def _compressible_values(size: int, count: int = 256) -> list[bytes]:
    """Half random bytes, half repeated text: a codec's work and ratio (~2x) are realistic,
    unlike all-zero values, which every codec shrinks to almost nothing."""
    rnd = random.Random(size)
    text = b"kafkette bench value " * (size // 20 + 1)
    return [rnd.randbytes(size // 2) + text[: size - size // 2] for _ in range(count)]


def produce_compressed(ctx: Context) -> dict[str, float]:
    """Produce throughput with confluent-kafka, acks=1, for each codec at 100 B and 1 KiB.

    The broker decompresses every compressed batch to validate its records (as Kafka's
    LogValidator does), so this is where validation costs most.
    """
    figures: dict[str, float] = {}
    for codec in ("lz4", "zstd", "snappy", "gzip"):
        for size in (100, 1024):
            name = f"produce.confluent.{SIZE_NAMES[size]}.{codec}"
            ctx.note(name)
            topic = f"produce-{codec}-{size}"
            create_topic(ctx, topic)
            config = {"acks": "1", "linger.ms": 5, "compression.type": codec}
            values = _compressible_values(size)
            _produce_confluent(ctx, topic, size, 2000, config, ctx.sizes.cap_s, values)
            count = ctx.sizes.produce_bytes[size] // size
            records, seconds = _produce_confluent(
                ctx, topic, size, count, config, ctx.sizes.cap_s, values
            )
            figures.update(_throughput(name, records, size, seconds))
    return figures


def produce_kafka_python(ctx: Context) -> dict[str, float]:
    """Produce throughput with kafka-python (pure Python client) at the same four points."""
    from kafka import KafkaProducer

    figures: dict[str, float] = {}
    for size in (100, 1024):
        for acks in ("1", "all"):
            name = f"produce.kafka-python.{SIZE_NAMES[size]}.acks={acks}"
            ctx.note(name)
            topic = f"produce-kafka-python-{size}-{acks}"
            create_topic(ctx, topic)
            producer = KafkaProducer(
                bootstrap_servers=ctx.broker.bootstrap, client_id="kafkette-bench",
                acks=1 if acks == "1" else "all", linger_ms=5, max_block_ms=20_000,
            )
            try:
                failures: list[BaseException] = []
                value = bytes(size)
                for _ in range(500):  # warm-up: connection, metadata, first batches
                    producer.send(topic, value, partition=0)
                producer.flush(timeout=30)
                count = ctx.sizes.kafka_python_bytes[size] // size
                started = time.perf_counter()
                deadline = started + ctx.sizes.cap_s
                sent = 0
                while sent < count:
                    if sent % 1000 == 0 and time.perf_counter() > deadline:
                        break
                    if sent % 20_000 == 0:
                        _require_alive(ctx)
                    producer.send(topic, value, partition=0).add_errback(failures.append)
                    sent += 1
                producer.flush(timeout=max(30.0, ctx.sizes.cap_s))
                seconds = time.perf_counter() - started
            finally:
                producer.close(timeout=5)
            if failures:
                raise WorkloadError(f"{len(failures)} delivery failures, first: {failures[0]!r}")
            figures.update(_throughput(name, sent, size, seconds))
    return figures


# librdkafka's own defaults for the consumer's local queue, written out so that the report says
# what was used; ``--consumer-config KEY=VALUE`` overrides them (and any other consumer setting).
# When the queue holds queued.min.messages records (or queued.max.messages.kbytes), the consumer
# stops fetching that partition for fetch.queue.backoff.ms: at 100 B that caps any broker.
CONSUMER_QUEUE_DEFAULTS = {
    "queued.min.messages": "100000",
    "queued.max.messages.kbytes": "65536",
    "fetch.queue.backoff.ms": "1000",
}
# The topic is filled the same way on every broker: batches cut at a fixed record count
# (16 KiB of values, the Java producer's default batch.size), never by timing, so every broker
# stores, and serves, the same batches.
FILL_BATCH_VALUE_BYTES = 16_384
STATS_INTERVAL_MS = 200


def fill_batch_records(size: int) -> int:
    return max(1, FILL_BATCH_VALUE_BYTES // size)


def fill_config(size: int) -> dict[str, object]:
    """Producer settings of the fill: batches of exactly fill_batch_records(size) records."""
    return {
        "acks": "1",
        "linger.ms": 100,  # far longer than a batch takes to fill: the count cuts batches
        "batch.num.messages": fill_batch_records(size),
        "batch.size": 8_000_000,
        "compression.type": "none",
    }


class _Stats:
    """Keeps the newest librdkafka statistics document (statistics.interval.ms JSON)."""

    def __init__(self) -> None:
        self.latest: dict = {}
        self.count = 0

    def __call__(self, text: str) -> None:
        self.latest = json.loads(text)
        self.count += 1

    def config(self) -> dict[str, object]:
        return {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self}

    def fresh(self, client: Producer | Consumer, timeout_s: float = 3.0) -> dict:
        """Serve callbacks until a document newer than now arrives (counters are cumulative)."""
        seen = self.count
        deadline = time.perf_counter() + timeout_s
        while self.count < seen + 2 and time.perf_counter() < deadline:
            client.poll(0.05)
        return self.latest


def _request_count(stats: dict, request: str) -> int:
    brokers = stats.get("brokers", {}).values()
    return sum(broker.get("req", {}).get(request, 0) for broker in brokers)


def _fill_figures(prefix: str, produced: int, producer_stats: dict) -> dict[str, float]:
    batches = _request_count(producer_stats, "Produce")  # one partition: one batch per request
    sent_bytes = sum(b.get("txbytes", 0) for b in producer_stats.get("brokers", {}).values())
    if not batches:
        return {}
    return {
        f"{prefix}.fill_batches": float(batches),
        f"{prefix}.fill_batch_kb": sent_bytes / batches / 1000,
        f"{prefix}.fill_batch_records": produced / batches,
    }


def _timed_consume(
    consumer: Consumer, topic: str, start_offset: int, wanted: int, cap_s: float,
    alive: Callable[[], None],
) -> tuple[int, int, float]:
    """Read ``wanted`` records of partition 0 from ``start_offset``; (received, counted, s).

    The clock starts when the first batch has arrived (connection set-up, offset lookup and the
    first fetch are start-up costs, not throughput); that batch's records are not counted.
    """
    consumer.assign([TopicPartition(topic, 0, start_offset)])
    received, counted_from, started = 0, 0, 0.0
    deadline = time.perf_counter() + cap_s
    while received < wanted and time.perf_counter() < deadline:
        alive()
        # Never ask for more than is left: consume() would sit out its whole timeout.
        messages = consumer.consume(num_messages=min(10_000, wanted - received), timeout=0.5)
        for message in messages:
            if message.error():
                raise WorkloadError(f"consume error: {message.error()}")
        received += len(messages)
        if messages and not started:
            started, counted_from = time.perf_counter(), received
    return received, received - counted_from, time.perf_counter() - started


# The consume-unpaused workload: the consumer's queue never counts as full, so librdkafka never
# stops fetching for fetch.queue.backoff.ms; the difference from ``consume`` at 100 B is the
# effect of the default queue limits.
UNPAUSED = {
    "queued.min.messages": "10000000",
    "queued.max.messages.kbytes": "2097151",
    "fetch.queue.backoff.ms": "0",
}


def consume_confluent(ctx: Context) -> dict[str, float]:
    """Consume throughput from a pre-filled single-partition topic, from offset 0 to the end.

    Beside records/s: how the fill batched (batches, KB per batch), what each Fetch response
    carried (records, batches, KB: from the consumer's statistics), the broker's CPU seconds per
    million records over the timed phase (/proc/<pid>/stat), the harness's busiest thread's
    share of a core, and the client-bound ceiling (the same consumer reading the same batches
    from librdkafka's in-memory mock broker).
    """
    return _consume(ctx, "consume", (100, 1024))


def consume_unpaused(ctx: Context) -> dict[str, float]:
    """``consume`` at 100 B with the consumer's queue limits lifted (UNPAUSED)."""
    ctx.consumer_config.update(UNPAUSED)
    return _consume(ctx, "consume-unpaused", (100,))


def _consume(ctx: Context, prefix: str, sizes: tuple[int, ...]) -> dict[str, float]:
    figures: dict[str, float] = {}
    for size in sizes:
        name = f"{prefix}.{SIZE_NAMES[size]}"
        topic = f"consume-{size}"
        ctx.note(f"{name} (pre-filling)")
        create_topic(ctx, topic)
        count = ctx.sizes.consume_bytes[size] // size
        fill_stats = _Stats()
        produced, _ = _produce_confluent(
            ctx, topic, size, count, {**fill_config(size), **fill_stats.config()},
            4 * ctx.sizes.cap_s,
        )
        figures.update(_fill_figures(name, produced, fill_stats.latest))
        ctx.note(name)
        stats = _Stats()
        consumer = Consumer(_client_config(ctx, **{
            "group.id": "kafkette-bench", "enable.auto.commit": False,
            **ctx.consumer_config, **stats.config(),
        }))
        window = CpuWindow(ctx.broker.proc.pid)
        try:
            window.start()
            received, counted, seconds = _timed_consume(
                consumer, topic, 0, produced, ctx.sizes.cap_s, lambda: _require_alive(ctx)
            )
            window.stop()
            consumed_stats = stats.fresh(consumer)
        finally:
            consumer.close()
        if received < produced:
            raise WorkloadError(f"consumed only {received} of {produced} records in time")
        if counted < produced // 2:
            raise WorkloadError("first fetch returned most of the topic: too small to measure")
        figures.update(_throughput(name, counted, size, seconds))
        figures.update(_fetch_figures(name, consumed_stats, topic, fill_batch_records(size)))
        figures[f"{name}.broker_cpu_s_per_m"] = window.broker_s / (received / 1e6)
        figures[f"{name}.client_thread_busy_pct"] = 100 * window.busiest_thread[1]
        if size == 100:  # the mock keeps ~5 MB a partition: too few 1 KiB records for a figure
            ctx.note(f"{name} (client-bound ceiling)")
            figures[f"{name}.ceiling_records_per_s"] = _mock_ceiling(ctx, size, produced)
    return figures


def _fetch_figures(prefix: str, stats: dict, topic: str, batch_records: int) -> dict[str, float]:
    fetches = _request_count(stats, "Fetch")
    partition = stats.get("topics", {}).get(topic, {}).get("partitions", {}).get("0", {})
    records, payload = partition.get("rxmsgs", 0), partition.get("rxbytes", 0)
    received = sum(b.get("rxbytes", 0) for b in stats.get("brokers", {}).values())
    if not fetches or not records:
        return {}
    return {
        f"{prefix}.fetch_records": records / fetches,
        f"{prefix}.fetch_batches": records / fetches / batch_records,
        f"{prefix}.fetch_kb": received / fetches / 1000,
        f"{prefix}.fetch_used_pct": 100 * payload / received if received else math.nan,
    }


def _mock_ceiling(ctx: Context, size: int, count: int) -> float:
    """records/s of the same consumer reading the same batches from an in-memory source.

    The source is librdkafka's mock broker (``test.mock.num.brokers``, C threads in this
    process, no GIL), filled with the same fixed batches. It keeps only the newest few MB of a
    partition, so the consumer re-reads that window until it has read ``count`` records (each
    pass restarts fetching: a conservative ceiling).
    """
    producer = Producer({
        "test.mock.num.brokers": 1, "logger": _CLIENT_LOG,
        "queue.buffering.max.messages": 1_000_000, **fill_config(size),
    })
    try:
        broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
        fill = min(count, 20 * MB // size)
        value = bytes(size)
        for _ in range(fill):
            while True:
                try:
                    producer.produce("ceiling", value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.001)
        if producer.flush(30):
            raise WorkloadError("mock broker fill not acknowledged")
        consumer = Consumer({
            "bootstrap.servers": f"{broker.host}:{broker.port}", "logger": _CLIENT_LOG,
            "group.id": "kafkette-bench-ceiling", "enable.auto.commit": False,
            **ctx.consumer_config,
            # At the window's end a fetch would otherwise wait out the default 500 ms for data
            # that never comes before the seek back is served; mid-window it changes nothing.
            "fetch.wait.max.ms": 1,
        })
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition("ceiling", 0), timeout=10)
            consumer.assign([TopicPartition("ceiling", 0, low)])
            counted, in_pass, started = 0, 0, 0.0
            deadline = time.perf_counter() + ctx.sizes.cap_s
            while counted < count and time.perf_counter() < deadline:
                messages = consumer.consume(num_messages=min(10_000, high - low - in_pass),
                                            timeout=0.5)
                if started:
                    counted += len(messages)
                elif messages:
                    started = time.perf_counter()  # as on a broker: the first batch is not timed
                in_pass += len(messages)
                if in_pass >= high - low:  # the end of the window: read it again
                    consumer.seek(TopicPartition("ceiling", 0, low))
                    in_pass = 0
            seconds = time.perf_counter() - started
        finally:
            consumer.close()
    finally:
        producer.flush(1)
    return counted / seconds if started and counted else math.nan


class _LatencyConsumer(threading.Thread):
    """Reads the e2e topic; each value starts with its scheduled send time (monotonic ns)."""

    def __init__(self, ctx: Context, topic: str, measure_from_ns: int) -> None:
        super().__init__(name="e2e-consumer", daemon=True)
        self.consumer = Consumer(
            _client_config(ctx, **{"group.id": "kafkette-bench-e2e", "enable.auto.commit": False})
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.measure_from_ns = measure_from_ns
        self.latencies_ms: list[float] = []
        self.scheduled_ns: list[int] = []  # the scheduled send time of each latency, in order
        self.received = 0
        self.error: str | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                # poll() returns as soon as one record is there; consume(timeout=0) then takes
                # whatever else is queued. (consume(n, t) alone would wait for n records or t,
                # adding its own batching delay to every latency.)
                first = self.consumer.poll(timeout=0.05)
                if first is None:
                    continue
                now = time.monotonic_ns()
                messages = [first, *self.consumer.consume(num_messages=1000, timeout=0)]
                for message in messages:
                    if message.error():
                        self.error = str(message.error())
                        return
                    scheduled = int.from_bytes(message.value()[:8], "big")
                    self.received += 1
                    if scheduled >= self.measure_from_ns:
                        self.latencies_ms.append((now - scheduled) / 1e6)
                        self.scheduled_ns.append(scheduled)
        finally:
            self.consumer.close()


def _send_due(
    producer: Producer,
    topic: str,
    padding: bytes,
    started_ns: int,
    rate: int,
    sent: int,
    elapsed_ns: int,
) -> int:
    """Produce to partition 0 the records due by ``elapsed_ns`` at ``rate`` per second;
    returns the new count sent.

    Open-loop pacing shared by the latency workloads: each value starts with the
    time it was *scheduled* (not sent), so a stall on the client side counts in
    the latency instead of hiding it (coordinated omission). A full local queue
    is waited out with short polls.
    """
    due = elapsed_ns * rate // 1_000_000_000
    while sent < due:
        scheduled = started_ns + sent * 1_000_000_000 // rate
        try:
            producer.produce(topic, scheduled.to_bytes(8, "big") + padding, partition=0)
            sent += 1
        except BufferError:
            producer.poll(0.001)
    producer.poll(0)
    return sent


def _await_drained(consumer: _LatencyConsumer, sent: int, timeout: float = 30) -> None:
    """Until the latency consumer has ``sent`` records, fails or ``timeout`` passes;
    the caller checks which (its error names the workload)."""
    drain_deadline = time.perf_counter() + timeout
    while consumer.received < sent and time.perf_counter() < drain_deadline:
        if consumer.error or not consumer.is_alive():
            break
        time.sleep(0.01)


def end_to_end_latency(ctx: Context) -> dict[str, float]:
    """Produce at a fixed offered rate, consume concurrently; latency = receive - *scheduled* send.

    Measuring from the scheduled time (not the actual send) keeps a stalled producer from hiding
    latency (coordinated omission). Producer: acks=all, linger.ms=1; 1 KiB records.
    """
    return _end_to_end(ctx, "e2e")


def end_to_end_latency_mixed(ctx: Context) -> dict[str, float]:
    """The same latency pair while another producer (its own process) writes 1 KiB records,
    acks=1, as fast as it can to another topic: does bulk traffic delay the latency-sensitive?"""
    create_topic(ctx, "e2e-background")
    seconds = ctx.sizes.e2e_warmup_s + ctx.sizes.e2e_seconds + 2.0
    background = ClientGroup([[
        "produce", "--bootstrap", ctx.broker.bootstrap, "--topic", "e2e-background",
        "--size", "1024", "--acks", "1", "--seconds", f"{seconds}",
    ]])
    with background:
        background.start()
        background.go()
        figures = _end_to_end(ctx, "e2e-mixed")
        (result,) = background.results(timeout_s=90)
    if result["error"]:
        raise WorkloadError(f"background producer: {result['error']}")
    figures["e2e-mixed.background_per_s"] = result["records"] / result["seconds"]
    return figures


def _end_to_end(ctx: Context, prefix: str) -> dict[str, float]:
    sizes = ctx.sizes
    topic = "e2e-latency"
    create_topic(ctx, topic)
    rate, size = sizes.e2e_rate, 1024
    ctx.note(f"e2e latency at {rate:,} records/s")
    padding = bytes(size - 8)
    total_ns = int((sizes.e2e_warmup_s + sizes.e2e_seconds) * 1e9)
    producer = Producer(_client_config(ctx, acks="all", **{"linger.ms": 1}))
    producer.list_topics(topic, timeout=10)  # connected and topic known before the clock runs
    consumer = _LatencyConsumer(ctx, topic, 0)
    consumer.start()
    time.sleep(0.5)  # let the consumer connect and park its first fetch
    started_ns = time.monotonic_ns()
    consumer.measure_from_ns = started_ns + int(sizes.e2e_warmup_s * 1e9)
    sent = 0
    try:
        while True:
            elapsed_ns = time.monotonic_ns() - started_ns
            if elapsed_ns >= total_ns:
                break
            sent = _send_due(producer, topic, padding, started_ns, rate, sent, elapsed_ns)
            _require_alive(ctx)  # one waitpid() per loop: microseconds
            time.sleep(0.0005)
        offered_per_s = sent / ((time.monotonic_ns() - started_ns) / 1e9)
        if producer.flush(30):
            raise WorkloadError("e2e producer could not flush")
        _await_drained(consumer, sent)
    finally:
        consumer.stop.set()
        consumer.join(timeout=10)
    if consumer.error:
        raise WorkloadError(f"e2e consumer error: {consumer.error}")
    if consumer.received != sent:
        raise WorkloadError(f"e2e consumer got {consumer.received} of {sent} records")
    latencies = consumer.latencies_ms
    return {
        f"{prefix}.p50_ms": percentile(latencies, 0.50),
        f"{prefix}.p99_ms": percentile(latencies, 0.99),
        f"{prefix}.p99.9_ms": percentile(latencies, 0.999),
        f"{prefix}.offered_per_s": offered_per_s,
    }


def _produce_latencies(
    ctx: Context, topic: str, partitions: int, samples: int
) -> list[float]:
    """Round trips (ms) of single 100 B records, acks=all, one at a time, spread over partitions."""
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer(_client_config(ctx, acks="all", **{"linger.ms": 0}))
    value = bytes(100)
    latencies: list[float] = []
    for index in range(-20, samples):  # 20 warm-up round trips are not recorded
        partition = (index * 7919) % partitions
        started = time.perf_counter()
        producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
        if producer.flush(30):  # generous: a JVM on a loaded 2-core machine can stall seconds
            raise WorkloadError(f"produce to {topic}[{partition}] not acknowledged in 30 s")
        if index >= 0:
            latencies.append((time.perf_counter() - started) * 1e3)
    if failures:
        raise WorkloadError(f"{len(failures)} delivery failures, first: {failures[0]}")
    return latencies


def many_partitions(ctx: Context) -> dict[str, float]:
    """Create a topic with many partitions; memory and produce latency while it exists."""
    count = ctx.sizes.partitions
    ctx.note(f"create {count:,}-partition topic")
    create_s = create_topic(ctx, "many-partitions", partitions=count)
    time.sleep(1.0)
    rss = ctx.broker.rss_mb()
    ctx.note(f"produce latency across {count:,} partitions")
    latencies = _produce_latencies(ctx, "many-partitions", count, ctx.sizes.latency_samples)
    return {
        "partitions.create_s": create_s,
        "partitions.rss_mb": rss,
        "partitions.produce_p50_ms": percentile(latencies, 0.50),
        "partitions.produce_p99_ms": percentile(latencies, 0.99),
    }


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = hard if hard == resource.RLIM_INFINITY else min(hard, max(needed, soft))
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < needed:
            raise WorkloadError(f"file descriptor limit {hard} is below the {needed} needed")


def idle_connections(ctx: Context) -> dict[str, float]:
    """Open many idle (ApiVersions-then-silent) connections; time, memory, produce latency."""
    count = ctx.sizes.connections
    create_topic(ctx, "idle-connections")
    ctx.note("produce latency baseline")
    baseline = _produce_latencies(ctx, "idle-connections", 1, ctx.sizes.latency_samples)
    _raise_fd_limit(count + 512)
    ctx.note(f"open {count:,} idle connections")
    started = time.perf_counter()
    sockets = open_idle_connections(
        ctx.broker.host, ctx.broker.port, count, deadline=started + 120
    )
    try:
        open_s = time.perf_counter() - started
        time.sleep(1.0)
        rss = ctx.broker.rss_mb()
        ctx.note(f"produce latency with {count:,} idle connections")
        latencies = _produce_latencies(ctx, "idle-connections", 1, ctx.sizes.latency_samples)
        # The idle connections must still be served, not silently dropped.
        for position, index in enumerate((0, count // 2, count - 1)):
            try:
                api_versions(sockets[index], correlation_id=1_000_000 + position)
            except (OSError, ProbeError) as error:
                raise WorkloadError(f"idle connection {index} no longer served: {error}") from None
    finally:
        for sock in sockets:
            sock.close()
    return {
        "connections.open_s": open_s,
        "connections.rss_mb": rss,
        "connections.baseline_p50_ms": percentile(baseline, 0.50),
        "connections.produce_p50_ms": percentile(latencies, 0.50),
        "connections.produce_p99_ms": percentile(latencies, 0.99),
    }


def start_only(ctx: Context) -> dict[str, float]:
    """Nothing beyond the launch itself: start time and idle RSS are taken for every launch."""
    return {}


WORKLOADS: dict[str, Callable[[Context], dict[str, float]]] = {
    "start": start_only,
    "produce": produce_confluent,
    "produce-compressed": produce_compressed,
    "produce-kafka-python": produce_kafka_python,
    "consume": consume_confluent,
    "consume-unpaused": consume_unpaused,
    "latency": end_to_end_latency,
    "latency-mixed": end_to_end_latency_mixed,
    "partitions": many_partitions,
    "connections": idle_connections,
}
