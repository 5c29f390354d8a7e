"""Producers under acks=all idempotent load and checks, for the failover tests.

A plain module (no pytest, no fixtures), loaded by path from the ``test_failover_*``
files (``--import-mode=importlib`` puts no test folder on ``sys.path``; see the
``load`` fixture there). Each load produces distinct values (``<name>-<n>``) to one
partition on a thread until stopped and remembers the values the client saw
acknowledged: a value acknowledged is a promise, which ``check_exactly_once`` then
holds the topic to (each one there exactly once). Every producer retries through
leader changes on its own (that is what the tests prove); none is told about them.

The Java load runs Kafka's own ``kafka-verifiable-producer.sh`` (reference
distribution), which prints one JSON line per acknowledged record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.raw_wire import WireConnection

# Long enough to ride out a leader change (session timeout + election + metadata refresh)
# on a loaded two-core machine.
DELIVERY_TIMEOUT_MS = 120_000
TIMEOUT = 60.0
# ../shared/reference-kafka beside the checkout (or beside the folder of worktrees).
_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_KAFKA = next(
    (p / "shared" / "reference-kafka" / "kafka-ref" for p in (_ROOT.parent, _ROOT.parent.parent)
     if (p / "shared" / "reference-kafka" / "kafka-ref").exists()),
    _ROOT.parent / "shared" / "reference-kafka" / "kafka-ref",
)


# --- loads -----------------------------------------------------------------------


class Load:
    """One client producing ``<name>-<n>`` on a thread until ``stop``; ``acked`` holds the
    values acknowledged, ``errors`` any delivery that failed (the tests expect none)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.acked: list[str] = []
        self.errors: list[str] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{name}", daemon=True)

    def ack(self, value: str) -> None:
        with self._lock:
            self.acked.append(value)

    def fail(self, what: str) -> None:
        with self._lock:
            self.errors.append(what)

    @property
    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def start(self) -> Load:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.send(f"{self.name}-{self.sent}")
            self.sent += 1
            time.sleep(0.003)  # paced: the run spans the failure, the CPU is shared

    def send(self, value: str) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Wait for every outstanding delivery (acknowledged or failed)."""

    def stop(self) -> list[str]:
        """Stop sending, wait for the outstanding deliveries, return the acknowledged values."""
        self._stop.set()
        self._thread.join(30)
        self.finish()
        with self._lock:
            return list(self.acked)


class ConfluentLoad(Load):
    """librdkafka: enable.idempotence, acks=all."""

    def __init__(
        self, bootstrap: str, topic: str, name: str = "confluent", **overrides: Any
    ) -> None:
        super().__init__(name)
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                "retry.backoff.ms": 100,
                "topic.metadata.refresh.interval.ms": 1000,
                **overrides,
            }
        )

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.ack(message.value().decode())
        else:
            self.fail(f"{message.value().decode()}: {error}")

    def send(self, value: str) -> None:
        while True:
            try:
                self.producer.produce(
                    self.topic, value.encode(), partition=0, on_delivery=self._delivered
                )
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)

    def finish(self) -> None:
        left = self.producer.flush(DELIVERY_TIMEOUT_MS / 1000 + 30)
        if left:
            self.fail(f"{left} deliveries still outstanding after flush")


class KafkaPythonLoad(Load):
    """kafka-python: enable_idempotence, acks=all, unlimited retries within the delivery timeout."""

    def __init__(self, bootstrap: str, topic: str, name: str = "kafka-python") -> None:
        super().__init__(name)
        from kafka import KafkaProducer

        self.topic = topic
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap.split(","),
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            retries=2**31 - 1,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            request_timeout_ms=30_000,
            metadata_max_age_ms=1000,
            retry_backoff_ms=100,
        )

    def send(self, value: str) -> None:
        future = self.producer.send(self.topic, value.encode(), partition=0)
        future.add_callback(lambda _metadata, v=value: self.ack(v))
        future.add_errback(lambda exc, v=value: self.fail(f"{v}: {exc!r}"))

    def finish(self) -> None:
        try:
            self.producer.flush(timeout=DELIVERY_TIMEOUT_MS / 1000 + 30)
        finally:
            self.producer.close(timeout=10)


class JavaLoad(Load):
    """Kafka's own VerifiableProducer (the Java client of the reference distribution),
    idempotent, acks=-1, throttled by ``--throughput``; its values are ``<n>`` (no name: one
    Java load per topic)."""

    def __init__(
        self, kafka_home: Path, bootstrap: str, topic: str, count: int, throughput: int = 300,
        name: str = "java",
    ) -> None:
        super().__init__(name)
        self.kafka_home = kafka_home
        self.bootstrap = bootstrap
        self.topic = topic
        self.count = count
        self.throughput = throughput
        self.process: subprocess.Popen[str] | None = None
        self._props = ""

    def start(self) -> Load:
        with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as props:
            props.write(
                "enable.idempotence=true\n"
                "retries=2147483647\n"  # VerifiableProducer defaults to 0
                f"delivery.timeout.ms={DELIVERY_TIMEOUT_MS}\n"
                "request.timeout.ms=30000\n"
                "metadata.max.age.ms=1000\n"
                "retry.backoff.ms=100\n"
                "linger.ms=5\n"
            )
        self._props = props.name
        command = [
            str(self.kafka_home / "bin" / "kafka-verifiable-producer.sh"),
            "--bootstrap-server", self.bootstrap,
            "--topic", self.topic,
            "--max-messages", str(self.count),
            "--throughput", str(self.throughput),
            "--acks", "-1",
            "--producer.config", self._props,
        ]
        env = dict(os.environ, KAFKA_HEAP_OPTS="-Xmx256m")
        # Its warnings (retries, disconnections) go to a file, for a failing test's message.
        self.stderr = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env
        )
        return super().start()

    def _run(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            if name == "producer_send_success":
                self.ack(str(event["value"]))
            elif name == "producer_send_error":
                self.fail(f"{event.get('value')}: {event.get('exception')} {event.get('message')}")

    def wait_done(self, timeout: float = DELIVERY_TIMEOUT_MS / 1000 + 60) -> None:
        """Until the producer has sent all ``count`` records and exited."""
        assert self.process is not None
        self.process.wait(timeout)

    def stop(self) -> list[str]:
        assert self.process is not None
        try:
            self.process.wait(DELIVERY_TIMEOUT_MS / 1000 + 60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._thread.join(30)
            os.unlink(self._props)
        with self._lock:
            return list(self.acked)

    def stderr_tail(self, lines: int = 30) -> str:
        self.stderr.seek(0)
        return "".join(self.stderr.readlines()[-lines:])


def kafka_home() -> Path | None:
    """KAFKA_HOME of the reference Apache Kafka 4.0, or None without it or java."""
    if not REFERENCE_KAFKA.exists() or shutil.which("java") is None:
        return None
    out = subprocess.run(
        [str(REFERENCE_KAFKA), "home"], capture_output=True, text=True, timeout=600
    )
    home = Path(out.stdout.strip()) if out.returncode == 0 else None
    return home if home is not None and (home / "bin").is_dir() else None


# --- topics, metadata ------------------------------------------------------------


def create_topic(
    bootstrap: str,
    rf: int = 3,
    configs: dict[str, str] | None = None,
    assignment: list[int] | None = None,
    partitions: int = 1,
) -> str:
    """A fresh topic; with ``assignment`` (replica list of partition 0, preferred leader
    first) the leader is chosen by the test."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "failover-" + uuid.uuid4().hex[:10]
    if assignment is not None:
        new = NewTopic(
            topic, num_partitions=1, replica_assignment=[assignment], config=configs or {}
        )
    else:
        new = NewTopic(topic, partitions, rf, config=configs or {})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([new], request_timeout=30)[topic].result(TIMEOUT)
    return topic


def partition_meta(address: str, topic: str, partition: int = 0) -> Any | None:
    """confluent's PartitionMetadata (leader, replicas, isrs) as ``address`` answers it."""
    from confluent_kafka.admin import AdminClient

    try:
        meta = AdminClient({"bootstrap.servers": address}).list_topics(topic, timeout=10)
    except Exception:
        return None
    info = meta.topics.get(topic)
    if info is None or info.error is not None:
        return None
    return info.partitions.get(partition)


def full_isr(cluster: Any, topic: str, members: list[int], partition: int = 0) -> int | None:
    """The leader when ZooKeeper and the leader itself both say the ISR is ``members``."""
    state = cluster.partition_state(topic, partition)
    if state is None or state["leader"] < 0 or sorted(state["isr"]) != sorted(members):
        return None
    own = partition_meta(cluster.brokers[state["leader"]].address, topic, partition)
    if own is None or own.leader != state["leader"] or sorted(own.isrs) != sorted(members):
        return None
    return int(state["leader"])


def wait_full_isr(cluster: Any, wait_until: Any, topic: str, members: list[int]) -> int:
    return wait_until(
        lambda: full_isr(cluster, topic, members),
        timeout=TIMEOUT,
        what=f"{topic}-0 led with ISR {sorted(members)}",
    )


def wait_acked(wait_until: Any, loads: list[Load], more: int, what: str) -> None:
    """Until each load has ``more`` acknowledgements beyond its count now."""
    base = {load.name: load.acked_count for load in loads}
    wait_until(
        lambda: all(load.acked_count >= base[load.name] + more for load in loads),
        timeout=TIMEOUT + DELIVERY_TIMEOUT_MS / 1000,
        what=f"{more} more acknowledged records from {[x.name for x in loads]} {what}",
    )


# --- replicas and contents ---------------------------------------------------------


def replica_batches(data_dir: Path, topic: str, partition: int = 0) -> list[bytes]:
    """One replica's batches in offset order (whatever its segment boundaries)."""
    directory = data_dir / f"{topic}-{partition}"
    batches: list[bytes] = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 12 <= len(data):
            length = int.from_bytes(data[position + 8 : position + 12], "big")
            if length <= 0 or position + 12 + length > len(data):
                break
            batches.append(data[position : position + 12 + length])
            position += 12 + length
    return batches


def identical_replicas(cluster: Any, topic: str, members: list[int]) -> list[bytes] | None:
    copies = [replica_batches(cluster.brokers[i].data_dir, topic) for i in members]
    if copies[0] and all(copy == copies[0] for copy in copies):
        return copies[0]
    return None


def wait_converged(cluster: Any, wait_until: Any, topic: str, members: list[int]) -> list[bytes]:
    """Every member back in the ISR (ZooKeeper and the leader agree) and every replica
    holding the same batches, byte for byte."""
    wait_full_isr(cluster, wait_until, topic, members)
    return wait_until(
        lambda: identical_replicas(cluster, topic, members),
        timeout=TIMEOUT,
        what=f"replicas {members} of {topic}-0 byte-identical",
    )


def read_values(bootstrap: str, topic: str) -> list[str]:
    """Every committed record value of partition 0 (up to the HW), in offset order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check-" + uuid.uuid4().hex[:6],
         "enable.auto.commit": False}
    )
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[str] = []
        position = 0
        deadline = time.monotonic() + TIMEOUT
        while position < end:
            assert time.monotonic() < deadline, f"read {position} of {end} records"
            for message in consumer.consume(500, 1.0):
                assert message.error() is None, message.error()
                values.append(message.value().decode())
                position = message.offset() + 1
        return values
    finally:
        consumer.close()


def check_exactly_once(values: list[str], acked: list[str]) -> None:
    """Every acknowledged value is in ``values`` exactly once, and nothing is duplicated."""
    seen: dict[str, int] = {}
    for value in values:
        seen[value] = seen.get(value, 0) + 1
    duplicates = sorted(v for v, n in seen.items() if n > 1)
    assert not duplicates, f"{len(duplicates)} values duplicated, e.g. {duplicates[:5]}"
    lost = sorted(set(acked) - seen.keys())
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"


# --- one raw request to one broker ---------------------------------------------------


def one_batch(values: list[bytes]) -> bytes:
    """A plain (non-idempotent) v2 batch, built by kafka-python's record builder."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(builder.build())


def produce_body(topic: str, acks: int, values: list[bytes], timeout_ms: int = 10000) -> dict:
    return {
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": one_batch(values)}]}
        ],
    }


class RawConnection(WireConnection):
    """A connection to one broker through kafkette's own sans-I/O client codec, opened
    ahead of time: a request written while the broker is frozen waits in its socket
    buffer and is the first thing it reads when it resumes."""

    def __init__(self, address: str) -> None:
        super().__init__(address, "failover-test", TIMEOUT)


def produce_raw(address: str, topic: str, acks: int, values: list[bytes]) -> dict:
    """One Produce v8 to one broker; its answer for partition 0."""
    from kafkette.wire.apis import ApiKey

    connection = RawConnection(address)
    try:
        connection.send(ApiKey.PRODUCE, 8, produce_body(topic, acks, values))
        response = connection.receive()
    finally:
        connection.close()
    return response.body["responses"][0]["partition_responses"][0]


def new_loads(bootstrap: str, topic: str, families: list[str], home: Path | None = None,
              count: int = 0) -> list[Load]:
    """Started loads by family name (``confluent``, ``kafka-python``, ``java``)."""
    loads: list[Load] = []
    for family in families:
        if family == "confluent":
            loads.append(ConfluentLoad(bootstrap, topic))
        elif family == "kafka-python":
            loads.append(KafkaPythonLoad(bootstrap, topic))
        elif family == "java":
            assert home is not None
            loads.append(JavaLoad(home, bootstrap, topic, count))
        else:
            raise ValueError(family)
    return [load.start() for load in loads]

