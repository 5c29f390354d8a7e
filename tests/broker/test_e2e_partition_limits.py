"""Partition counts: absurd ones refused before any file, big ones served under ``ulimit -n 1024``,
and a create that fails half-way leaving nothing behind. Real clients, real sockets."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.harness.serve_process import ServeProcess, serve_args

EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


def errors_of(futures: dict) -> dict[str, tuple[int, str]]:
    """topic -> (error code, message); (0, "") for success."""
    outcome = {}
    for name, future in futures.items():
        try:
            future.result(timeout=60)
            outcome[name] = (0, "")
        except Exception as exc:  # the KafkaException carrying the broker's error
            error = exc.args[0]
            outcome[name] = (error.code(), error.str())
    return outcome


def persisted_topics(data_dir: Path) -> dict[str, int]:
    document = json.loads((data_dir / "topics.json").read_text())
    return {t["name"]: t["partitions"] for t in document["topics"]}


def partition_dirs(data_dir: Path) -> dict[str, int]:
    """topic -> number of partition directories (real directories only)."""
    counts: dict[str, int] = {}
    for child in data_dir.iterdir():
        topic, dash, number = child.name.rpartition("-")
        if dash and number.isdigit() and child.is_dir() and not child.is_symlink():
            counts[topic] = counts.get(topic, 0) + 1
    return counts


def test_absurd_partition_counts_are_refused_before_any_file(broker, unique_name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    data_dir = Path(broker.broker.config.data_dir)
    admin.create_topics([NewTopic(unique_name, 2, 1)])[unique_name].result(30)
    before = sorted(os.listdir(data_dir))
    big, records, pair_a, pair_b = (f"{unique_name}-{s}" for s in ("big", "rec", "a", "b"))

    assert errors_of(admin.create_topics([NewTopic(big, 65538, 1)])) == {
        big: (KafkaError.POLICY_VIOLATION, EXCESSIVE_PARTITIONS)
    }
    # One topic record plus 10,000 partition records: over KRaft's 10,000 per operation.
    assert errors_of(admin.create_topics([NewTopic(records, 10_000, 1)])) == {
        records: (KafkaError.POLICY_VIOLATION, EXCESSIVE_BATCH)
    }
    # The request-wide bound refuses every topic in the request.
    pair = [NewTopic(pair_a, 6000, 1), NewTopic(pair_b, 6000, 1)]
    assert errors_of(admin.create_topics(pair)) == {
        pair_a: (KafkaError.POLICY_VIOLATION, EXCESSIVE_PARTITIONS),
        pair_b: (KafkaError.POLICY_VIOLATION, EXCESSIVE_PARTITIONS),
    }
    for total in (65538, 10_003):
        assert errors_of(admin.create_partitions([NewPartitions(unique_name, total)])) == {
            unique_name: (KafkaError.POLICY_VIOLATION, EXCESSIVE_BATCH)
        }
    assert sorted(os.listdir(data_dir)) == before
    assert persisted_topics(data_dir)[unique_name] == 2
    metadata = admin.list_topics(timeout=30)
    assert len(metadata.topics[unique_name].partitions) == 2
    assert big not in metadata.topics and pair_a not in metadata.topics


class LimitedBroker(ServeProcess):
    """``kafkette serve`` in a child process whose RLIMIT_NOFILE is ``nofile`` (``ulimit -n``)."""

    def __init__(self, data_dir: Path, nofile: int, log_path: Path) -> None:
        super().__init__(serve_args(data_dir), log_path, append_log=True, nofile=nofile)
        self.wait_ready(120)

    def open_fds(self) -> int:
        return self.fds()

    def terminate(self, timeout: float = 120.0) -> int:
        return super().terminate(timeout)


@pytest.fixture
def limited_broker(tmp_path):
    started: list[LimitedBroker] = []

    def start(data_dir: Path, nofile: int = 1024) -> LimitedBroker:
        broker = LimitedBroker(data_dir, nofile, tmp_path / f"broker-{len(started)}.log")
        started.append(broker)
        return broker

    yield start
    for broker in started:
        if broker.proc.poll() is None:
            broker.kill()


class MetadataPoller:
    """Asks for one topic's metadata in a loop on its own connection; records when answers came.

    Naming a topic makes the broker look it up in the data dir's topic table.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._topic = topic
        self._stop = threading.Event()
        self.answers: list[tuple[float, float]] = []  # (asked, answered)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            asked = time.monotonic()
            metadata = self._admin.list_topics(self._topic, timeout=30)
            assert metadata.topics[self._topic].error is None
            self.answers.append((asked, time.monotonic()))
            time.sleep(0.01)

    def __enter__(self) -> MetadataPoller:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.answers:  # connected and answered once before the test goes on
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def answered_between(self, start: float, end: float) -> int:
        return sum(1 for asked, answered in self.answers if asked >= start and answered < end)


def produce_sample(bootstrap: str, topic: str, sample: list[int], tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failures: list[object] = []
    for p in sample:
        producer.produce(
            topic, f"{tag}-{p}".encode(), partition=p,
            on_delivery=lambda err, _msg: err and failures.append(err),
        )
    assert producer.flush(60) == 0
    assert failures == []


def consume_sample(bootstrap: str, topic: str, sample: list[int], per_partition: int) -> dict:
    """partition -> values, read from offset 0 until ``per_partition`` each (bounded wait)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in sample])
    got: dict[int, list[bytes]] = {p: [] for p in sample}
    deadline = time.monotonic() + 60
    while sum(map(len, got.values())) < per_partition * len(sample):
        assert time.monotonic() < deadline, f"read {got}"
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got[message.partition()].append(message.value())
    consumer.close()
    return got


PARTITIONS = 3000  # bench/many_partitions.py runs 10,000
GROWN = 3500


def test_thousands_of_partitions_under_ulimit_1024(tmp_path, limited_broker):
    data_dir = tmp_path / "data"
    broker = limited_broker(data_dir)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert errors_of(admin.create_topics([NewTopic("small", 1, 1)])) == {"small": (0, "")}
    with MetadataPoller(broker.bootstrap, "small") as poller:
        started = time.monotonic()
        created = admin.create_topics([NewTopic("many", PARTITIONS, 1)], operation_timeout=120)
        assert errors_of(created) == {"many": (0, "")}
        finished = time.monotonic()
    # The event loop kept answering while a worker thread made 3,000 partitions: answers
    # came in the first half of the create (a blocked loop answers only once it is done).
    assert poller.answered_between(started, (started + finished) / 2) > 0
    grown = admin.create_partitions([NewPartitions("many", GROWN)], operation_timeout=120)
    assert errors_of(grown) == {"many": (0, "")}
    sample = sorted({*range(0, GROWN, 173), PARTITIONS - 1, PARTITIONS, GROWN - 1})
    produce_sample(broker.bootstrap, "many", sample, "a")
    expected = {p: [f"a-{p}".encode()] for p in sample}
    assert consume_sample(broker.bootstrap, "many", sample, 1) == expected
    assert broker.open_fds() < 1024 - 256  # sockets still have room
    assert broker.terminate() == 0
    assert persisted_topics(data_dir) == {"many": GROWN, "small": 1} == partition_dirs(data_dir)

    broker = limited_broker(data_dir)  # a clean restart under the same limit
    assert broker.open_fds() < 256  # opening 3,500 partitions opened almost none
    assert consume_sample(broker.bootstrap, "many", sample, 1) == expected
    produce_sample(broker.bootstrap, "many", sample, "b")
    broker.kill()  # and a crash: recovery of 3,500 partitions under the limit

    broker = limited_broker(data_dir)
    both = {p: [f"a-{p}".encode(), f"b-{p}".encode()] for p in sample}
    assert consume_sample(broker.bootstrap, "many", sample, 2) == both
    assert broker.terminate() == 0
    assert persisted_topics(data_dir) == {"many": GROWN, "small": 1} == partition_dirs(data_dir)


def test_a_create_that_fails_half_way_leaves_nothing_and_restarts(tmp_path, broker_process):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    # A dangling symlink where partition 3's directory must go: its mkdir fails.
    os.symlink(tmp_path / "nowhere", data_dir / "half-3")
    os.symlink(tmp_path / "nowhere", data_dir / "grown-4")
    process = broker_process(data_dir)
    admin = AdminClient({"bootstrap.servers": process.bootstrap})
    assert errors_of(admin.create_topics([NewTopic("kept", 1, 1)])) == {"kept": (0, "")}
    code, message = errors_of(admin.create_topics([NewTopic("half", 6, 1)]))["half"]
    assert code == KafkaError.KAFKA_STORAGE_ERROR and "half" in message
    assert errors_of(admin.create_topics([NewTopic("grown", 2, 1)])) == {"grown": (0, "")}
    code, _ = errors_of(admin.create_partitions([NewPartitions("grown", 6)]))["grown"]
    assert code == KafkaError.KAFKA_STORAGE_ERROR
    assert persisted_topics(data_dir) == {"kept": 1, "grown": 2} == partition_dirs(data_dir)
    metadata = admin.list_topics(timeout=30)  # still answering
    assert "half" not in metadata.topics and len(metadata.topics["grown"].partitions) == 2
    assert process.terminate() == 0

    restarted = broker_process(data_dir)
    admin = AdminClient({"bootstrap.servers": restarted.bootstrap})
    (data_dir / "half-3").unlink()
    assert errors_of(admin.create_topics([NewTopic("half", 6, 1)])) == {"half": (0, "")}
    assert persisted_topics(data_dir) == {"kept": 1, "grown": 2, "half": 6} == partition_dirs(
        data_dir
    )
    assert "Traceback" not in process.stderr_text() + restarted.stderr_text()
    assert restarted.terminate() == 0
