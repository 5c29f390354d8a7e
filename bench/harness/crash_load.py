"""Idempotent acks=all load for the kill -9 series, and the checks made after it.

Run for many rounds by ``bench.crash_series`` and for a few in CI by
``tests/broker/test_crash_idempotent.py`` (tests may import bench; bench never imports tests/).
Uses confluent-kafka, and kafka-python's protocol classes for one raw request.

- :class:`ProducerLoad`: one idempotent producer (``enable.idempotence``,
  acks=all, 5 in flight, unbounded retries) sending uniquely numbered values
  from a thread, remembering every acknowledged (partition, offset, value).
- :class:`GroupLoad`: one consumer in a group, committing synchronously every
  few hundred ms, remembering the highest offsets the broker acknowledged.
- :func:`run_series`: kill -9 / restart the broker at seeded random points
  while both run, checking committed offsets after every restart.
- :func:`check`: what the topic holds against what was acknowledged.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench.harness import topic_reader
from bench.harness.raw_wire import raw_request

PARTITIONS = 3
GROUP = "crash-series"
QUIET = 2  # librdkafka log level: no "Connection refused" line per reconnect attempt


def value_of(number: int) -> bytes:
    return b"v%010d" % number


class ProducerLoad(threading.Thread):
    """Produces ``value_of(0), value_of(1), ...`` until stopped; remembers every ack."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int = 4000) -> None:
        super().__init__(daemon=True, name="producer-load")
        self.topic = topic
        self.rate_per_s = rate_per_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "max.in.flight.requests.per.connection": 5,
                "linger.ms": 5,
                # Java's default; librdkafka's (1 MB) would build batches larger
                # than the small segments the tests use after a restart's backlog.
                "batch.size": 16384,
                # A restart takes about a second; nothing may time out meanwhile,
                # or librdkafka reports the message failed instead of retrying it.
                "message.timeout.ms": 300_000,
                "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "topic.metadata.refresh.interval.ms": 1000,
                "log_level": QUIET,
            }
        )
        self.sent = 0
        self.acked: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.failed: list[tuple[bytes, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def _on_delivery(self, err, msg) -> None:
        with self._lock:
            if err is None:
                self.acked.append((msg.partition(), msg.offset(), msg.value()))
            else:
                self.failed.append((msg.value(), str(err)))

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def run(self) -> None:
        burst = max(1, self.rate_per_s // 100)
        while not self._stopping.is_set():
            for _ in range(burst):
                number = self.sent
                try:
                    self.producer.produce(
                        self.topic, key=b"k%d" % (number % 7), value=value_of(number),
                        on_delivery=self._on_delivery,
                    )
                except BufferError:
                    break  # queue full while the broker is down: wait below
                self.sent += 1
            self.producer.poll(0.01)

    def stop(self, flush_timeout: float) -> int:
        """Stop producing and wait for every sent value's outcome; returns how many are left."""
        self._stopping.set()
        self.join(10)
        return self.producer.flush(flush_timeout)


class GroupLoad(threading.Thread):
    """A group member consuming the topic and committing its position synchronously."""

    def __init__(self, bootstrap: str, topic: str, commit_every_s: float = 0.3) -> None:
        super().__init__(daemon=True, name="group-load")
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 30_000,
                "fetch.wait.max.ms": 100,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "log_level": QUIET,
            }
        )
        self.topic = topic
        self.commit_every_s = commit_every_s
        self.consumed = 0
        self.commits_acked = 0
        self._committed: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def committed(self) -> dict[int, int]:
        """Highest offset per partition the broker acknowledged committing."""
        with self._lock:
            return dict(self._committed)

    def _commit(self) -> None:
        try:
            result = self.consumer.commit(asynchronous=False)
        except KafkaException:
            return  # broker down, rebalance, nothing consumed: not acknowledged
        with self._lock:
            for tp in result or []:
                if tp.error is None and tp.offset >= 0:
                    self.commits_acked += 1
                    if tp.offset > self._committed.get(tp.partition, -1):
                        self._committed[tp.partition] = tp.offset

    def run(self) -> None:
        self.consumer.subscribe([self.topic])
        next_commit = time.monotonic() + self.commit_every_s
        try:
            while not self._stopping.is_set():
                for message in self.consumer.consume(500, 0.1):
                    if message.error() is None:
                        self.consumed += 1
                if time.monotonic() >= next_commit:
                    self._commit()
                    next_commit = time.monotonic() + self.commit_every_s
            self._commit()
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def committed_offsets(bootstrap: str, topic: str, timeout: float = 15.0) -> dict[int, int]:
    """The group's committed offsets as the broker answers OffsetFetch (no join)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {
            tp.partition: tp.offset
            for tp in consumer.committed(partitions, timeout=timeout)
            if tp.offset >= 0
        }
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, timeout: float = 60.0) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record below the high watermark."""
    records = topic_reader.read_topic(
        bootstrap, topic, PARTITIONS, timeout, group="crash-series-reader"
    )
    return [(r.partition, r.offset, r.value) for r in records]


@dataclass
class SeriesResult:
    """What a kill -9 series saw; :func:`check` fills in the counts."""

    rounds: int = 0
    produced: int = 0
    acked: int = 0
    failed: list[tuple[bytes, str]] = field(default_factory=list)
    unsettled: int = 0  # values with no delivery report after the final flush
    stored: int = 0
    lost: list[tuple[int, int, bytes]] = field(default_factory=list)
    duplicated: list[bytes] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # (partition, first bad offset)
    commit_regressions: list[str] = field(default_factory=list)
    producer_id_reuse: list[str] = field(default_factory=list)
    stalled: str = ""  # the producer stopped getting acknowledgements

    @property
    def ok(self) -> bool:
        return not (
            self.failed or self.unsettled or self.lost or self.duplicated or self.gaps
            or self.commit_regressions or self.producer_id_reuse or self.stalled
        )

    def summary(self) -> str:
        return (
            f"rounds={self.rounds} produced={self.produced} acked={self.acked} "
            f"stored={self.stored} lost={len(self.lost)} duplicated={len(self.duplicated)} "
            f"gaps={len(self.gaps)} failed={len(self.failed)} unsettled={self.unsettled} "
            f"commit_regressions={len(self.commit_regressions)} "
            f"producer_id_reuse={len(self.producer_id_reuse)}"
            + (" STALLED" if self.stalled else "")
        )


def check(records: list[tuple[int, int, bytes]], load: ProducerLoad, result: SeriesResult) -> None:
    """Compare what the topic holds with what the producer was told."""
    result.produced = load.sent
    result.acked = len(load.acked)
    result.failed = list(load.failed)
    result.stored = len(records)
    counts = Counter(value for _, _, value in records)
    result.duplicated = sorted(value for value, n in counts.items() if n > 1)
    present = set(records)
    result.lost = [record for record in load.acked if record not in present]
    for partition in range(PARTITIONS):
        offsets = sorted(offset for p, offset, _ in records if p == partition)
        for expected, offset in enumerate(offsets):
            if offset != expected:
                result.gaps.append((partition, expected))
                break


def new_producer_id(bootstrap: str) -> int:
    """A fresh producer id: one InitProducerId v4 (no transactional id) on a raw socket.

    librdkafka does not expose the id it gets.
    """
    from kafka.protocol.producer import InitProducerIdRequest

    request = InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
    )
    response = raw_request(bootstrap, request, 4, "crash-series")
    assert response.error_code == 0, response
    return response.producer_id


def _await_acks(load: ProducerLoad, count: int, timeout: float) -> bool:
    target = load.acked_count() + count
    deadline = time.monotonic() + timeout
    while load.acked_count() < target:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def run_series(
    start: Callable[[], str],
    kill: Callable[[], None],
    topic_configs: dict[str, str],
    rounds: int,
    seed: int,
    *,
    check_producer_ids: bool = True,
    progress_per_round: int = 300,
    round_timeout: float = 60.0,
    log: Callable[[str], None] = lambda _line: None,
) -> SeriesResult:
    """Start a broker, load it, kill -9 and restart it ``rounds`` times, then check.

    ``start()`` (re)starts the broker on the same data dir and port and returns
    its bootstrap address; ``kill()`` SIGKILLs it. With ``check_producer_ids``
    a fresh producer id is asked for before each crash and after each restart:
    every id must be larger than all ids handed out before.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = random.Random(seed)
    result = SeriesResult()
    bootstrap = start()
    topic = f"crash-{seed}-{rng.randrange(1 << 30):x}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics(
        [NewTopic(topic, PARTITIONS, 1, config=topic_configs)], operation_timeout=10
    )[topic].result(timeout=15)
    del admin
    load = ProducerLoad(bootstrap, topic)
    group = GroupLoad(bootstrap, topic)
    load.start()
    group.start()
    highest_id = -1
    try:
        for round_number in range(rounds):
            if not _await_acks(load, progress_per_round, round_timeout):
                result.stalled = (
                    f"round {round_number}: fewer than {progress_per_round} acks in "
                    f"{round_timeout}s ({load.acked_count()} in all, failed {load.failed[:3]})"
                )
                break
            if check_producer_ids:
                highest_id = max(highest_id, new_producer_id(bootstrap))
            time.sleep(rng.uniform(0.0, 0.8))
            committed_before = group.committed()
            kill()
            result.rounds += 1
            time.sleep(rng.uniform(0.0, 0.3))
            bootstrap = start()
            after = committed_offsets(bootstrap, topic)
            for partition, offset in committed_before.items():
                if after.get(partition, -1) < offset:
                    result.commit_regressions.append(
                        f"round {round_number} partition {partition}: "
                        f"committed {offset} before the crash, {after.get(partition)} after"
                    )
            if check_producer_ids:
                fresh = new_producer_id(bootstrap)
                if fresh <= highest_id:
                    result.producer_id_reuse.append(
                        f"round {round_number}: got {fresh} after {highest_id} was handed out"
                    )
                highest_id = max(highest_id, fresh)
            log(f"round {round_number}: {load.acked_count()} acked, commits {group.committed()}")
        if not result.stalled and not _await_acks(load, progress_per_round, round_timeout):
            result.stalled = f"after the last restart: fewer than {progress_per_round} acks"
    finally:
        result.unsettled = load.stop(flush_timeout=0 if result.stalled else 60)
        group.stop()
    committed_final = group.committed()
    records = read_topic(bootstrap, topic)
    check(records, load, result)
    final = committed_offsets(bootstrap, topic)
    for partition, offset in committed_final.items():
        if final.get(partition, -1) < offset:
            result.commit_regressions.append(
                f"end partition {partition}: committed {offset}, broker has {final.get(partition)}"
            )
    del load.producer
    return result
