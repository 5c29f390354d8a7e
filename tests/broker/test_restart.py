"""A restarted broker serves every record it acknowledged, at the same offsets.

Both stops are real: ``kafkette serve`` in a subprocess gets SIGTERM (graceful:
flush, clean-shutdown marker) or SIGKILL (a crash; with
``log.flush.interval.messages=1`` every acknowledged batch was fsynced first).
The second broker opens the same data dir; offsets then continue where they were.
"""

from __future__ import annotations

import gc
import threading
import time

from confluent_kafka import Producer

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
PARTITIONS = 3

# (partition, offset, key, value)
Acked = tuple[int, int, bytes, bytes]


class AckingProducer:
    """A confluent producer that remembers every acknowledged record."""

    def __init__(self, bootstrap: str, **extra: object) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 10_000,
                **extra,
            }
        )
        self.acked: list[Acked] = []
        self.failed = 0
        self._lock = threading.Lock()

    def _on_delivery(self, err, msg) -> None:
        with self._lock:
            if err is None:
                self.acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
            else:
                self.failed += 1

    def send(self, topic: str, start: int, count: int) -> None:
        for i in range(start, start + count):
            self.producer.produce(
                topic, key=b"k%d" % (i % 13), value=b"v%d" % i, on_delivery=self._on_delivery
            )
            self.producer.poll(0)

    def flush(self, timeout: float = 30.0) -> int:
        return self.producer.flush(timeout)

    def close(self) -> None:
        """Drop the client so its connections close (a stopping broker waits for them)."""
        self.producer.flush(5)
        del self.producer
        gc.collect()

    def snapshot(self) -> list[Acked]:
        with self._lock:
            return list(self.acked)


def stored(read_all, bootstrap: str, topic: str) -> list[Acked]:
    """The topic's records sorted by (partition, offset)."""
    records = read_all(bootstrap, topic, PARTITIONS)
    return sorted((r.partition, r.offset, r.key, r.value) for r in records)


def assert_contiguous(records: list[Acked]) -> dict[int, int]:
    """Every partition holds offsets 0..n-1; returns each partition's end offset."""
    ends = {}
    for partition in range(PARTITIONS):
        offsets = [r[1] for r in records if r[0] == partition]
        assert offsets == list(range(len(offsets))), partition
        ends[partition] = len(offsets)
    return ends


def test_graceful_restart_keeps_every_record(
    tmp_path, broker_process, create_topic, read_all
) -> None:
    data_dir = tmp_path / "data"
    first = broker_process(data_dir, "--config", "num.partitions=3")
    topic = create_topic(first.bootstrap, PARTITIONS, configs={"retention.ms": "-1"})
    producer = AckingProducer(first.bootstrap)
    producer.send(topic, 0, 3000)
    assert producer.flush() == 0 and producer.failed == 0
    before = stored(read_all, first.bootstrap, topic)
    assert sorted(before) == sorted(producer.snapshot())
    producer.close()

    assert first.terminate() == 0
    assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()

    second = broker_process(data_dir, "--config", "num.partitions=3")
    # The marker is consumed at start: a crash from here on must be detected.
    assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()
    after = stored(read_all, second.bootstrap, topic)
    assert after == before
    ends = assert_contiguous(after)

    # Offsets continue after the restart, and the topic kept its configs.
    more = AckingProducer(second.bootstrap)
    more.send(topic, 3000, 300)
    assert more.flush() == 0 and more.failed == 0
    for partition, offset, _, _ in more.snapshot():
        assert offset >= ends[partition]
    final = stored(read_all, second.bootstrap, topic)
    assert sorted(final) == sorted(before + more.snapshot())
    assert_contiguous(final)
    more.close()
    assert second.terminate() == 0


def test_kill_9_keeps_everything_acknowledged(
    tmp_path, broker_process, create_topic, read_all
) -> None:
    data_dir = tmp_path / "data"
    args = ("--config", "num.partitions=3", "--config", "log.flush.interval.messages=1")
    first = broker_process(data_dir, *args)
    topic = create_topic(first.bootstrap, PARTITIONS)
    producer = AckingProducer(first.bootstrap, **{"message.timeout.ms": 3000, "retries": 0})
    producer.send(topic, 0, 2000)
    assert producer.flush() == 0 and producer.failed == 0

    # Keep producing while the broker dies, so some requests are in flight at the kill.
    stop = threading.Event()

    def keep_producing() -> None:
        i = 2000
        while not stop.is_set():
            producer.send(topic, i, 50)
            i += 50
            time.sleep(0.002)

    writer = threading.Thread(target=keep_producing, daemon=True)
    writer.start()
    deadline = time.monotonic() + 20
    while len(producer.snapshot()) < 3000 and time.monotonic() < deadline:
        producer.producer.poll(0.01)
    first.kill()
    stop.set()
    writer.join(10)
    producer.producer.purge()
    producer.flush(10)
    acknowledged = producer.snapshot()
    assert len(acknowledged) >= 3000
    assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()

    second = broker_process(data_dir, *args)
    after = stored(read_all, second.bootstrap, topic)
    ends = assert_contiguous(after)
    present = set(after)
    missing = [record for record in acknowledged if record not in present]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"

    # Offsets continue from the recovered end of each partition.
    more = AckingProducer(second.bootstrap)
    more.send(topic, 10_000_000, 300)
    assert more.flush() == 0 and more.failed == 0
    for partition, offset, _, _ in more.snapshot():
        assert offset >= ends[partition]
    final = stored(read_all, second.bootstrap, topic)
    assert_contiguous(final)
    assert set(more.snapshot()) <= set(final)
    more.close()
    assert second.terminate() == 0
