"""Compaction end to end with confluent-kafka: latest value per key at the original offsets."""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.log.cleaner_checkpoint import CLEANER_CHECKPOINT_FILE, read_cleaner_checkpoint
from kafkette.wire.records import decode_batches

CLEANER = {
    "num.partitions": "1",
    "log.cleaner.backoff.ms": "100",
    "log.cleaner.min.cleanable.ratio": "0.01",
}
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "4096"}


@pytest.fixture(scope="module")
def compacting_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    data_dir = tmp_path_factory.mktemp("compaction-data")
    embedded = EmbeddedBroker.start(data_dir=data_dir, configs=CLEANER)
    embedded.test_data_dir = data_dir  # type: ignore[attr-defined]
    try:
        yield embedded
    finally:
        gc.collect()
        embedded.stop(timeout=30)


def produce(bootstrap: str, topic: str, items: list[tuple[bytes, bytes | None]]) -> dict:
    """Produce in order (one partition); returns offset -> (key, value) as acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 600})
    acked: dict[int, tuple[bytes, bytes | None]] = {}

    def on_delivery(err, message) -> None:
        assert err is None, err
        acked[message.offset()] = (message.key(), message.value())

    for key, value in items:
        producer.produce(topic, value, key, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert len(acked) == len(items)
    return acked


def wait_for_clean(data_dir: Path, topic: str, at_least: int, timeout: float = 120.0) -> int:
    """Until the cleaner checkpoint of partition 0 reaches ``at_least``. The cleaner
    process runs at niceness 19 by design (log/cleaner_process.py): on a machine whose
    cores are all taken it gets ~1.5% of one, so a 2 s clean can take a minute (seen
    in a clean-clone run with the load at 10 on 2 cores); the bound allows for that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = read_cleaner_checkpoint(data_dir / CLEANER_CHECKPOINT_FILE).get((topic, 0), 0)
        if entry >= at_least:
            return entry
        time.sleep(0.1)
    raise AssertionError(f"{topic} not cleaned up to {at_least} within {timeout}s")


def active_segment_base(data_dir: Path, topic: str) -> int:
    """Base offset of partition 0's newest segment: what the cleaner cleans up to."""
    return max(int(log.stem) for log in (data_dir / f"{topic}-0").glob("*.log"))


def consume_from(bootstrap: str, topic: str, offset: int, end: int) -> list[tuple]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "compaction-reader",
        "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 100,
    })
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        records = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                if message.offset() >= end:
                    return records
                continue
            records.append((message.offset(), message.key(), message.value()))
            if message.offset() + 1 >= end:
                return records
        raise AssertionError("consumer did not reach the log end")
    finally:
        consumer.close()


def latest(records) -> dict:
    out = {}
    for offset, key, value in records:
        out[key] = (offset, value)
    return out


@contextlib.contextmanager
def restarted_without_cleaner(data_dir: Path) -> Iterator[EmbeddedBroker]:
    """A broker restarted on ``data_dir`` with the cleaner off, so that what the test
    reads is what recovery left of an interrupted clean, not a fresh clean's output."""
    embedded = EmbeddedBroker.start(
        data_dir=data_dir, configs={**CLEANER, "log.cleaner.enable": "false"}
    )
    try:
        yield embedded
    finally:
        gc.collect()
        embedded.stop(timeout=30)


def assert_latest_of_acked(bootstrap: str, topic: str, acked: dict) -> None:
    """Partition 0 holds the latest acknowledged value of every key, each record at the
    offset it was acknowledged at: an interrupted clean lost and changed nothing."""
    records = consume_from(bootstrap, topic, 0, max(acked) + 1)
    assert latest(records) == latest((o, k, v) for o, (k, v) in sorted(acked.items()))
    for offset, key, value in records:
        assert acked[offset] == (key, value)


def test_compacted_topic_keeps_latest_value_per_key(compacting_broker, create_topic):
    bootstrap = compacting_broker.bootstrap
    topic = create_topic(bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    items = [
        (f"key-{k}".encode(), f"value-{k}-{r}".encode() * 4) for r in range(25) for k in range(20)
    ]
    acked = produce(bootstrap, topic, items)
    end = max(acked) + 1
    # Cleaned up to the active segment: the cleaner has nothing left to do, so both reads
    # below see the same log (a pass still running between them would remove more).
    wait_for_clean(compacting_broker.test_data_dir, topic, at_least=active_segment_base(
        compacting_broker.test_data_dir, topic))
    records = consume_from(bootstrap, topic, 0, end)
    expected = latest((o, k, v) for o, (k, v) in sorted(acked.items()))
    assert latest(records) == expected
    assert len(records) < len(items) // 2  # old values are gone
    for offset, key, value in records:
        assert acked[offset] == (key, value)  # same record at its original offset
    # A consumer positioned inside a removed range continues at the next offset.
    kept = sorted(o for o, _, _ in records)
    removed = sorted(set(range(end)) - set(kept))
    gap = removed[len(removed) // 2]
    resumed = consume_from(bootstrap, topic, gap, end)
    assert resumed[0][0] == min(o for o in kept if o >= gap)


def test_segments_cleaned_down_to_empty_batches_are_read_past(
    compacting_broker, create_topic, raw_client
):
    """Keys overwritten in every round leave whole cleaned segments holding only their
    kept empty batch (a header). A fetch inside one must go on to the next segment, as
    Kafka's read moves past a segment with nothing to return: answered with only
    empty batches, librdkafka reports MSG_SIZE_TOO_LARGE (consume_from fails on any
    error but end-of-partition)."""
    bootstrap = compacting_broker.bootstrap
    topic = create_topic(bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    items = [(f"key-{k}".encode(), b"v%d-" % r * 20) for r in range(30) for k in range(30)]
    acked = produce(bootstrap, topic, items)
    end = max(acked) + 1
    wait_for_clean(compacting_broker.test_data_dir, topic, at_least=end // 2)
    directory = compacting_broker.test_data_dir / f"{topic}-0"
    header_only = [
        path for path in directory.glob("*.log")
        if 0 < path.stat().st_size <= 64 * 61 and path.stat().st_size % 61 == 0
    ]
    assert header_only, "the clean left no segment of empty batches: the test is moot"
    records = consume_from(bootstrap, topic, 0, end)
    assert latest(records) == latest((o, k, v) for o, (k, v) in sorted(acked.items()))
    first_empty = min(int(path.stem) for path in header_only)
    answer = raw_client(bootstrap).fetch(topic, 0, first_empty)
    batches = decode_batches(answer.records)
    assert batches and any(records for _, records in batches), (
        f"a fetch at {first_empty} was answered with empty batches only"
    )
    resumed = consume_from(bootstrap, topic, first_empty, end)
    assert resumed and resumed[0][0] > first_empty


def test_tombstones_removed_after_delete_retention(compacting_broker, create_topic):
    bootstrap = compacting_broker.bootstrap
    topic = create_topic(
        bootstrap, partitions=1, configs={**TOPIC_CONFIGS, "delete.retention.ms": "0"}
    )
    items = [(f"key-{k}".encode(), b"x" * 100) for r in range(5) for k in range(10)]
    items += [(b"key-3", None)]  # tombstone
    items += [(f"filler-{i}".encode(), b"y" * 100) for i in range(120)]
    acked = produce(bootstrap, topic, items)
    end = max(acked) + 1
    deadline = time.monotonic() + 30
    while True:
        records = consume_from(bootstrap, topic, 0, end)
        if all(k != b"key-3" for _, k, _ in records):
            break
        assert time.monotonic() < deadline, "tombstone still there"
        time.sleep(0.3)
    assert {k for _, k, _ in records} >= {f"key-{k}".encode() for k in range(10) if k != 3}


def test_null_key_refused_on_compacted_topic(compacting_broker, create_topic):
    bootstrap = compacting_broker.bootstrap
    topic = create_topic(bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    errors: list = []
    producer.produce(topic, b"no key", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(30) == 0  # its own batch: Kafka refuses a batch as a whole
    producer.produce(topic, b"keyed", b"k", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(30) == 0
    assert [e.code() if e is not None else None for e in errors] == [
        KafkaError.INVALID_RECORD, None,
    ]
    # The same record is fine on a delete topic.
    plain = create_topic(bootstrap, partitions=1)
    ok: list = []
    producer.produce(plain, b"no key", partition=0, on_delivery=lambda e, m: ok.append(e))
    assert producer.flush(30) == 0 and ok == [None]


def test_consumer_offsets_is_compacted_and_reloads_with_gaps(tmp_path, create_topic):
    configs = {
        **CLEANER, "offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "2048",
    }
    first = EmbeddedBroker.start(data_dir=tmp_path, configs=configs)
    try:
        topic = create_topic(first.bootstrap, partitions=1)
        consumer = Consumer({
            "bootstrap.servers": first.bootstrap, "group.id": "compacted-commits",
            "enable.auto.commit": False,
        })
        for offset in range(1, 151):
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        consumer.close()
        wait_for_clean(tmp_path, "__consumer_offsets", at_least=50)
    finally:
        gc.collect()
        first.stop(timeout=30)
    second = EmbeddedBroker.start(data_dir=tmp_path, configs=configs)
    try:
        consumer = Consumer({
            "bootstrap.servers": second.bootstrap, "group.id": "compacted-commits",
            "enable.auto.commit": False,
        })
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=15)
        assert committed[0].offset == 150
        consumer.close()
    finally:
        gc.collect()
        second.stop(timeout=30)


def test_shutdown_abandons_a_clean_in_progress_safely(tmp_path, create_topic):
    configs = {**CLEANER, "log.cleaner.io.max.bytes.per.second": "20000"}
    first = EmbeddedBroker.start(data_dir=tmp_path, configs=configs)
    try:
        topic = create_topic(first.bootstrap, partitions=1, configs=TOPIC_CONFIGS)
        items = [(f"key-{k}".encode(), b"v%d-" % r * 20) for r in range(40) for k in range(30)]
        acked = produce(first.bootstrap, topic, items)
        directory = tmp_path / f"{topic}-0"
        deadline = time.monotonic() + 30
        while not list(directory.glob("*.cleaned")):  # throttled: a clean takes seconds
            assert time.monotonic() < deadline, "no clean started"
            time.sleep(0.02)
    finally:
        gc.collect()
        started = time.monotonic()
        first.stop(timeout=30)
    assert time.monotonic() - started < 15
    assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))
    with restarted_without_cleaner(tmp_path) as second:
        assert_latest_of_acked(second.bootstrap, topic, acked)


def test_kafka_python_and_aiokafka_read_a_compacted_log_with_empty_batches(
    compacting_broker, create_topic
):
    """An idempotent producer's emptied batches stay as headers: every client skips them."""
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    bootstrap = compacting_broker.bootstrap
    topic = create_topic(bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    producer = Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 600,
        "enable.idempotence": True,
    })
    for r in range(25):
        for k in range(20):
            producer.produce(topic, b"v%d-%d" % (k, r) * 4, b"k%d" % k, partition=0)
    assert producer.flush(30) == 0
    end = 500
    wait_for_clean(compacting_broker.test_data_dir, topic, at_least=end // 2)
    expected = latest(consume_from(bootstrap, topic, 0, end))
    assert {v for _, v in expected.values()} == {b"v%d-24" % k * 4 for k in range(20)}
    directory = compacting_broker.test_data_dir / f"{topic}-0"
    headers = [
        header
        for path in sorted(directory.glob("*.log"))
        for header, _ in decode_batches(path.read_bytes())
    ]
    assert any(h.records_count == 0 for h in headers)  # the case under test is there

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
    )
    tp = KpTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    seen = [(m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    assert latest(seen) == expected

    async def read_with_aiokafka() -> list:
        aio = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await aio.start()
        try:
            atp = AioTopicPartition(topic, 0)
            aio.assign([atp])
            aio.seek(atp, 0)
            out: list = []
            while not out or out[-1][0] < end - 1:
                batches = await aio.getmany(timeout_ms=5000)
                assert batches, "aiokafka stopped before the log end"
                for messages in batches.values():
                    out.extend((m.offset, m.key, m.value) for m in messages)
            return out
        finally:
            await aio.stop()

    assert latest(asyncio.run(read_with_aiokafka())) == expected


# --- the cleaner process -----------------------------------------------------------

CHILD_MODULE = "kafkette.log.cleaner_process"


def cleaner_children(parent: int) -> list[int]:
    """Pids of the cleaner processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and CHILD_MODULE.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def bytes_read_by(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/pid/io")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def keyed_rounds(rounds: int, keys: int, width: int = 20) -> list[tuple[bytes, bytes]]:
    """``keys`` keys overwritten ``rounds`` times, and every tenth record a key written once
    (so every cleaned segment keeps records; segments cleaned down to empty batches have
    their own test above)."""
    items = []
    for r in range(rounds):
        for k in range(keys):
            items.append((f"key-{k}".encode(), b"v%d-" % r * width))
            if k % 10 == 0:
                items.append((f"once-{r}-{k}".encode(), b"kept"))
    return items


def config_args(configs: dict[str, str]) -> list[str]:
    return [arg for key, value in configs.items() for arg in ("--config", f"{key}={value}")]


def test_the_clean_runs_in_a_child_process_of_the_broker(
    tmp_path, broker_process, create_topic
):
    broker = broker_process(tmp_path / "data", *config_args(CLEANER))
    topic = create_topic(broker.bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    acked = produce(broker.bootstrap, topic, keyed_rounds(30, 30))
    end = max(acked) + 1
    wait_for_clean(tmp_path / "data", topic, at_least=end // 2)
    children = cleaner_children(broker.proc.pid)
    assert len(children) == 1, children  # log.cleaner.threads=1
    assert children[0] != broker.proc.pid
    # The child, not the broker, read the segments: its reads cover what was produced.
    produced = sum(len(k) + len(v) for k, v in acked.values())
    assert bytes_read_by(children[0]) > produced // 2
    records = consume_from(broker.bootstrap, topic, 0, end)
    assert latest(records) == latest((o, k, v) for o, (k, v) in sorted(acked.items()))
    assert len(records) < len(acked)  # cleaned
    broker.terminate()
    assert wait_gone(children[0])


def test_kill_9_of_the_broker_mid_clean_ends_its_cleaner_and_loses_nothing(
    tmp_path, broker_process, create_topic
):
    data_dir = tmp_path / "data"
    throttled = {**CLEANER, "log.cleaner.io.max.bytes.per.second": "20000"}
    broker = broker_process(data_dir, *config_args(throttled))
    topic = create_topic(broker.bootstrap, partitions=1, configs=TOPIC_CONFIGS)
    acked = produce(broker.bootstrap, topic, keyed_rounds(40, 30))
    directory = data_dir / f"{topic}-0"
    deadline = time.monotonic() + 30
    while not list(directory.glob("*.cleaned")):  # throttled: a clean takes seconds
        assert time.monotonic() < deadline, "no clean started"
        time.sleep(0.02)
    children = cleaner_children(broker.proc.pid)
    assert len(children) == 1
    broker.kill()
    # The orphan must not go on writing .cleaned files into a directory a restarted
    # broker recovers: it exits as soon as the broker's end of its pipe closes.
    assert wait_gone(children[0], timeout=10)
    with restarted_without_cleaner(data_dir) as second:
        assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))
        assert_latest_of_acked(second.bootstrap, topic, acked)


def test_shutdown_mid_clean_stops_the_cleaner_process_promptly(tmp_path, create_topic):
    throttled = {**CLEANER, "log.cleaner.io.max.bytes.per.second": "10000"}
    others = set(cleaner_children(os.getpid()))  # the module's other broker has its own
    broker = EmbeddedBroker.start(data_dir=tmp_path, configs=throttled)
    try:
        topic = create_topic(broker.bootstrap, partitions=1, configs=TOPIC_CONFIGS)
        produce(broker.bootstrap, topic, keyed_rounds(60, 30))
        deadline = time.monotonic() + 30
        while not (children := set(cleaner_children(os.getpid())) - others):
            assert time.monotonic() < deadline, "no clean started"
            time.sleep(0.02)
        time.sleep(1.0)  # well into the clean: at 10,000 B/s it takes many seconds
    finally:
        gc.collect()
        started = time.monotonic()
        broker.stop(timeout=30)
    assert time.monotonic() - started < 8
    (child,) = children
    assert wait_gone(child, timeout=5)
    # The clean was stopped, not finished: no checkpoint, nothing half-done left.
    assert read_cleaner_checkpoint(tmp_path / CLEANER_CHECKPOINT_FILE).get((topic, 0)) is None
    directory = tmp_path / f"{topic}-0"
    assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))
