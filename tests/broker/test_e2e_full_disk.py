"""A full disk under a real broker and real clients: Kafka's error codes, a quiet log,
no temp files, and full service again once space is freed, without a restart.

The data dir lives on a small tmpfs (``small_filesystem``, tests/conftest.py);
a filler file takes every free byte, then is deleted. Real clients
(confluent-kafka producer and group consumer) keep working against the broker
the whole time; the raw client checks the exact error codes:

- Produce: KAFKA_STORAGE_ERROR;
- OffsetCommit and SyncGroup (group writes): NOT_COORDINATOR, Kafka's mapping of
  a storage error in its group coordinator; the commit is not visible to
  OffsetFetch;
- group requests while ``__consumer_offsets`` cannot even be created:
  COORDINATOR_NOT_AVAILABLE, CreateTopics: KAFKA_STORAGE_ERROR, InitProducerId
  (a producer id block to persist): COORDINATOR_LOAD_IN_PROGRESS (checked
  on a second broker whose disk fills before any group exists).
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import (
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.producer import InitProducerIdRequest

from kafkette.broker.groups import partition_for_group
from kafkette.wire.records import Record, build_batch

KAFKA_STORAGE_ERROR = 56
NOT_COORDINATOR = 16
COORDINATOR_NOT_AVAILABLE = 15
MEMBER_ID_REQUIRED = 79
COORDINATOR_LOAD_IN_PROGRESS = 14
BROKER_CONFIGS = (
    "--config",
    "group.initial.rebalance.delay.ms=0",
    "--config",
    "offsets.topic.num.partitions=3",
    # Housekeeping (flush, offsets checkpoints) every 200 ms: while the disk is
    # full every checkpoint write fails, which must not flood the log either.
    "--config",
    "log.flush.scheduler.interval.ms=200",
    "--config",
    "log.flush.interval.ms=200",
)
# Lines the broker may log while the disk is full, however many requests fail:
# one per kind of failure per minute, plus the odd info line.
MAX_LINES_WHILE_FULL = 12
# A commit record larger than the free tail of the last page of its segment
# (what tmpfs can still write into once the filler took every free page).
BIG_METADATA = "m" * 4000


def big_batch(value_size: int = 20_000) -> bytes:
    """One record larger than a memory page, so it cannot fit in a file's last page."""
    return build_batch([Record(0, 0, None, b"x" * value_size)])


def commit(client, group: str, topic: str, offset: int, metadata: str = "") -> int:
    """A "simple" OffsetCommit v8 (no generation) of one partition; its error code."""
    topic_class = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            topic_class(
                name=topic,
                partitions=[
                    topic_class.OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata=metadata,
                    )
                ],
            )
        ],
    )
    response = client.request(request, 8)
    return response.topics[0].partitions[0].error_code


def committed(client, group: str, topic: str) -> int:
    """OffsetFetch v6 of partition 0: the committed offset (-1 if none)."""
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=False,
    )
    response = client.request(request, 6)
    assert response.error_code == 0
    partition = response.topics[0].partitions[0]
    assert partition.error_code == 0
    return partition.committed_offset


def init_producer_id(client) -> tuple[int, int]:
    """InitProducerId v4 for an idempotent producer: (error code, producer id)."""
    request = InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
    )
    response = client.request(request, 4)
    return response.error_code, response.producer_id


def join(client, group: str, member_id: str = "") -> object:
    request = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    return client.request(request, 5)


def join_and_sync(client, group: str) -> tuple[int, int]:
    """JoinGroup v5 (twice: MEMBER_ID_REQUIRED first) then SyncGroup as leader.

    Returns (join error, sync error); sync error is -1 if the join failed.
    """
    first = join(client, group)
    assert first.error_code == MEMBER_ID_REQUIRED
    joined = join(client, group, first.member_id)
    if joined.error_code:
        return joined.error_code, -1
    request = SyncGroupRequest(
        group_id=group,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"")
        ],
    )
    return 0, client.request(request, 3).error_code


class Acks:
    """A confluent producer recording every acknowledged value."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 60_000,
            }
        )
        self.acked: list[bytes] = []
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def _report(self, error, message) -> None:
        with self._lock:
            if error is None:
                self.acked.append(message.value())
            else:
                self.failed.append(str(error))

    def send(self, topic: str, values: list[bytes]) -> None:
        for value in values:
            self.producer.produce(topic, value, partition=0, on_delivery=self._report)
        self.producer.poll(0)

    def flush(self, timeout: float) -> int:
        return self.producer.flush(timeout)


def group_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10_000,
            "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def consume_values(consumer: Consumer, want: int, timeout: float) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < want and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error() is not None:
            assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
            continue
        values.append(message.value())
    return values


def log_lines(broker) -> list[str]:
    return broker.stderr_text().splitlines()


def test_full_disk_fails_requests_quietly_and_service_resumes_when_space_is_freed(
    small_filesystem, broker_process, raw_client, create_topic, read_all
):
    fs = small_filesystem(4096)
    data_dir = fs.path / "data"
    broker = broker_process(data_dir, *BROKER_CONFIGS)
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)

    producer = Acks(broker.bootstrap)
    producer.send(topic, [b"before-%d" % i for i in range(20)])
    assert producer.flush(15) == 0 and len(producer.acked) == 20
    assert commit(client, "simple", topic, 5) == 0  # makes __consumer_offsets
    # The groups below write to an offsets partition that is still empty (no page
    # to write into once the disk is full); "simple" writes records > a page.
    assert partition_for_group("simple", 3) != partition_for_group("raw-group", 3)
    assert partition_for_group("simple", 3) != partition_for_group("real-group", 3)
    segment = next((data_dir / f"{topic}-0").glob("*.log"))
    segment_size = segment.stat().st_size

    # --- the disk fills up ---------------------------------------------------
    lines_before = len(log_lines(broker))
    fs.fill()
    assert client.produce(topic, 0, big_batch()).error_code == KAFKA_STORAGE_ERROR
    assert segment.stat().st_size == segment_size  # a partial write was cut back
    assert commit(client, "simple", topic, 9, BIG_METADATA) == NOT_COORDINATOR
    assert committed(client, "simple", topic) == 5  # what is on disk, not what failed
    assert join_and_sync(client, "raw-group") == (0, NOT_COORDINATOR)

    # Real clients keep retrying against the full disk for a while.
    during = [b"during-%d" % i + b"." * 8000 for i in range(5)]
    producer.send(topic, during)
    consumer = group_consumer(broker.bootstrap, "real-group")
    consumer.subscribe([topic])
    assert consume_values(consumer, 1, timeout=4) == []  # its SyncGroup cannot be written
    for _ in range(20):
        assert client.produce(topic, 0, big_batch()).error_code == KAFKA_STORAGE_ERROR
        assert commit(client, "simple", topic, 9, BIG_METADATA) == NOT_COORDINATOR

    full_lines = log_lines(broker)[lines_before:]
    assert not [line for line in full_lines if "Traceback" in line or "internal error" in line]
    assert len(full_lines) <= MAX_LINES_WHILE_FULL, "\n".join(full_lines)
    assert any("No space left on device" in line for line in full_lines)
    assert sorted(p.name for p in fs.path.rglob("*.tmp")) == []

    # --- space is freed: the same broker, the same clients ----------------------
    fs.free()
    assert producer.flush(30) == 0
    assert producer.failed == []
    producer.send(topic, [b"after-%d" % i for i in range(20)])
    assert producer.flush(15) == 0 and producer.failed == []
    everything = producer.acked
    assert len(everything) == 20 + len(during) + 20

    values = consume_values(consumer, len(everything), timeout=30)
    assert Counter(values) == Counter(everything)
    consumer.commit(asynchronous=False)
    real_committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    consumer.close()
    assert commit(client, "simple", topic, 9) == 0
    assert committed(client, "simple", topic) == 9
    assert join_and_sync(client, "raw-group-2") == (0, 0)
    assert sorted(p.name for p in fs.path.rglob("*.tmp")) == []

    # --- a restart finds everything acknowledged, once, in order ----------------
    assert broker.terminate() == 0
    again = broker_process(data_dir, *BROKER_CONFIGS)
    stored = read_all(again.bootstrap, topic, 1)
    assert [r.offset for r in stored] == list(range(len(stored)))
    assert Counter(r.value for r in stored) == Counter(everything)
    client = raw_client(again.bootstrap)
    assert committed(client, "simple", topic) == 9
    assert committed(client, "real-group", topic) == real_committed == len(everything)
    assert "Traceback" not in again.stderr_text()


def test_group_requests_before_the_offsets_topic_exists_get_coordinator_not_available(
    small_filesystem, broker_process, raw_client, create_topic
):
    fs = small_filesystem(1024)
    data_dir = fs.path / "data"
    broker = broker_process(data_dir, *BROKER_CONFIGS)
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    fs.fill()
    # The first group write creates __consumer_offsets, whose topics.json entry
    # cannot be written: Kafka's answer for a missing offsets partition.
    assert commit(client, "early", topic, 1) == COORDINATOR_NOT_AVAILABLE
    assert committed(client, "early", topic) == -1
    assert join_and_sync(client, "early") in {
        (COORDINATOR_NOT_AVAILABLE, -1),
        (0, COORDINATOR_NOT_AVAILABLE),
    }
    assert sorted(p.name for p in fs.path.rglob("*.tmp")) == []
    assert "__consumer_offsets" not in (data_dir / "topics.json").read_text()
    # The first producer id block cannot be persisted: no id is handed out.
    assert init_producer_id(client) == (COORDINATOR_LOAD_IN_PROGRESS, -1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    refused = admin.create_topics([NewTopic("made-when-full", 2, 1)], operation_timeout=10)
    error = refused["made-when-full"].exception(timeout=15)
    assert error is not None and error.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR
    assert "made-when-full" not in (data_dir / "topics.json").read_text()
    fs.free()
    created = admin.create_topics([NewTopic("made-when-full", 2, 1)], operation_timeout=10)
    assert created["made-when-full"].result(timeout=15) is None
    assert commit(client, "early", topic, 1) == 0
    assert committed(client, "early", topic) == 1
    assert join_and_sync(client, "early-2") == (0, 0)
    assert init_producer_id(client) == (0, 0)
    assert "Traceback" not in broker.stderr_text()


OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def test_pipelined_batches_after_a_failed_append_get_storage_errors_not_out_of_order(
    small_filesystem, broker_process, raw_client, create_topic
):
    """An idempotent producer pipelines its batches: when batch N fails on a full disk,
    N+1 (already in flight) must get KAFKA_STORAGE_ERROR too, as from Kafka's offline log
    dir, so the producer retries both in order once space is back. OUT_OF_ORDER_SEQUENCE
    would make librdkafka bump its epoch and re-send, under new sequences, records of other
    partitions whose outcome it does not know: duplicates (found by bench.nemesis)."""
    fs = small_filesystem(4096)
    broker = broker_process(fs.path / "data", *BROKER_CONFIGS)
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    error, producer_id = init_producer_id(client)
    assert error == 0

    def batch(sequence: int, size: int = 20_000) -> bytes:
        record = Record(0, 0, None, b"%d" % sequence + b"." * size)
        return build_batch([record], producer_id=producer_id, producer_epoch=0,
                           base_sequence=sequence)  # fmt: skip

    assert client.produce(topic, 0, batch(0, 10)).error_code == 0
    fs.fill()
    assert client.produce(topic, 0, batch(1)).error_code == KAFKA_STORAGE_ERROR
    assert client.produce(topic, 0, batch(2)).error_code == KAFKA_STORAGE_ERROR
    fs.free()
    answers = [client.produce(topic, 0, batch(sequence)) for sequence in (1, 2)]
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 1), (0, 2)]
    # Once appends succeed again, a real gap is the client's: out of order, as before.
    assert client.produce(topic, 0, batch(4, 10)).error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "Traceback" not in broker.stderr_text()
