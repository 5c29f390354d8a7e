"""Replication on a real three-broker cluster: acks=all, byte-identical replicas, failover.

Real ZooKeeper, real ``kafkette serve`` processes (the ``cluster`` fixture of
conftest.py), real clients (confluent-kafka, kafka-python) and, where a test needs
one exact request to one broker, raw requests through ``ClientConnection``.
Replicas are compared by their segment files' bytes: followers append the
leader's batches unchanged, so every replica's log is the same file content.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import WireConnection
from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import Response
from kafkette.wire.records import decode_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TIMEOUT = 60.0


# --- helpers ---------------------------------------------------------------------


def create_topic(bootstrap: str, partitions: int, rf: int, configs: dict[str, str]) -> str:
    topic = "repl-" + uuid.uuid4().hex[:10]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, partitions, rf, config=configs)], request_timeout=30
    )
    futures[topic].result(TIMEOUT)
    return topic


def partition_info(bootstrap: str, topic: str) -> dict[int, Any]:
    """Partition id -> confluent's PartitionMetadata (leader, replicas, isrs)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10)
    return dict(meta.topics[topic].partitions)


def wait_full_isr(wait_until, cluster, topic: str, size: int) -> dict[int, Any]:
    """Every partition has a leader and an ISR of ``size``, as the leader itself says (a
    broker answers Metadata only from a snapshot its roles already follow, but another
    broker may have seen the snapshot first)."""

    def ready() -> dict[int, Any] | None:
        try:
            parts = partition_info(cluster.bootstrap, topic)
            ok = parts and all(p.leader >= 0 and len(p.isrs) == size for p in parts.values())
            if not ok:
                return None
            for index, part in parts.items():
                own = partition_info(cluster.brokers[part.leader].address, topic)[index]
                if own.leader != part.leader or len(own.isrs) != size:
                    return None
        except Exception:
            return None
        return parts

    return wait_until(ready, timeout=TIMEOUT, what=f"{topic}: leaders and ISR of {size}")


def log_bytes(data_dir: Path, topic: str, partition: int) -> bytes:
    """The partition's records as stored: its segment files, in offset order."""
    directory = data_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def checkpointed_hw(data_dir: Path, topic: str, partition: int) -> int | None:
    """The HW a broker wrote for a partition in replication-offset-checkpoint (Kafka's format:
    version, count, then ``topic partition hw`` lines)."""
    path = data_dir / "replication-offset-checkpoint"
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, lines[:2]
    for line in lines[2:]:
        name, index, hw = line.rsplit(" ", 2)
        if (name, int(index)) == (topic, partition):
            return int(hw)
    return None


def log_start(data_dir: Path, topic: str, partition: int) -> int:
    """The log start offset a replica has persisted (its offsets.checkpoint)."""
    path = data_dir / f"{topic}-{partition}" / "offsets.checkpoint"
    if not path.exists():
        return 0
    for line in path.read_text().splitlines():
        if line.startswith("log-start-offset "):
            return int(line.split()[1])
    return 0


def replicas_identical(cluster, broker_ids, topic: str, partition: int) -> bytes | None:
    contents = {i: log_bytes(cluster.brokers[i].data_dir, topic, partition) for i in broker_ids}
    first = contents[broker_ids[0]]
    if first and all(c == first for c in contents.values()):
        return first
    return None


def raw_call(address: str, api_key: int, version: int, body: dict) -> Response:
    """One request to one broker through our own client connection."""
    with WireConnection(address, "replication-test", timeout=30) as connection:
        connection.send(api_key, version, body)
        return connection.receive()


def acks_0_closes(address: str, topic: str) -> bool:
    body = {
        "acks": 0,
        "timeout_ms": 10000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": one_batch([b"z"])}]}
        ],
    }
    with WireConnection(address, "replication-test", timeout=30) as connection:
        connection.send(ApiKey.PRODUCE, 8, body)
        return connection.sock.recv(1) == b""


def one_batch(values: list[bytes]) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(builder.build())


def produce_raw(
    address: str,
    topic: str,
    partition: int,
    acks: int,
    values: list[bytes],
    timeout_ms: int = 10000,
) -> dict:
    response = raw_call(
        address,
        ApiKey.PRODUCE,
        8,
        {
            "acks": acks,
            "timeout_ms": timeout_ms,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": partition, "records": one_batch(values)}],
                }
            ],
        },
    )
    return response.body["responses"][0]["partition_responses"][0]


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every committed record of the topic, read by a consumer (up to each HW)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check-" + uuid.uuid4().hex[:6],
            "enable.auto.commit": False,
        }
    )
    try:
        ends = {}
        for p in range(partitions):
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        positions = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + TIMEOUT
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"read {positions} of {ends}"
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
            positions[message.partition()] = message.offset() + 1
        return values
    finally:
        consumer.close()


# --- tests -----------------------------------------------------------------------


def test_acks_all_from_two_clients_is_replicated_byte_for_byte(cluster, wait_until) -> None:
    c = cluster(3)
    topic = create_topic(c.bootstrap, 2, 3, {"min.insync.replicas": "2"})
    wait_full_isr(wait_until, c, topic, 3)

    errors: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": c.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    expected = set()
    for i in range(400):
        value = b"confluent-%d" % i
        expected.add(value)
        producer.produce(
            topic,
            value,
            partition=i % 2,
            on_delivery=lambda err, msg: errors.append(err) if err is not None else None,
        )
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    assert errors == []

    from kafka import KafkaProducer

    kp = KafkaProducer(bootstrap_servers=c.bootstrap.split(","), acks="all", linger_ms=5)
    futures = []
    for i in range(400):
        value = b"kafka-python-%d" % i
        expected.add(value)
        futures.append(kp.send(topic, value=value, partition=i % 2))
    for future in futures:
        future.get(timeout=TIMEOUT)
    kp.close(timeout=10)

    values = consume_all(c.bootstrap, topic, 2)
    assert len(values) == len(set(values)) == 800
    assert set(values) == expected
    for partition in (0, 1):
        stored = wait_until(
            lambda p=partition: replicas_identical(c, [1, 2, 3], topic, p),
            timeout=TIMEOUT,
            what=f"three identical replicas of {topic}-{partition}",
        )
        assert len(stored) > 400 * 10

    # Every replica checkpoints its HW (replica.high.watermark.checkpoint.interval.ms, 5 s).
    # 400 records in each partition (i % 2 from each client).
    wait_until(
        lambda: all(
            checkpointed_hw(c.brokers[i].data_dir, topic, p) == 400
            for i in (1, 2, 3)
            for p in (0, 1)
        ),
        timeout=TIMEOUT,
        what="every replica's replication-offset-checkpoint at the HW",
    )

    # DeleteRecords on the leader: the followers' log start follows (from their fetches).
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 100)], request_timeout=30)
    for future in futures.values():
        assert future.result(TIMEOUT).low_watermark == 100
    wait_until(
        lambda: all(log_start(c.brokers[i].data_dir, topic, 0) == 100 for i in (1, 2, 3)),
        timeout=TIMEOUT,
        what="every replica's log start at 100",
    )


def test_min_insync_replicas_refuses_acks_all_and_leader_only_serves(cluster, wait_until) -> None:
    c = cluster(3)
    topic = create_topic(c.bootstrap, 1, 3, {"min.insync.replicas": "2"})
    parts = wait_full_isr(wait_until, c, topic, 3)
    leader = parts[0].leader
    followers = [i for i in (1, 2, 3) if i != leader]
    leader_address = c.brokers[leader].address

    # A follower answers NOT_LEADER_OR_FOLLOWER (6) to produce and consumer fetch alike.
    answer = produce_raw(c.brokers[followers[0]].address, topic, 0, -1, [b"x"])
    assert answer["error_code"] == 6
    # acks=0 cannot be answered: the follower closes the connection (Kafka does), so the
    # client refreshes its metadata instead of losing records silently.
    assert acks_0_closes(c.brokers[followers[0]].address, topic)
    # A future leader epoch is unknown to the leader (75).
    epoch = partition_leader_epoch(leader_address, topic)
    assert fetch_error(leader_address, topic, epoch + 1) == 75
    assert fetch_error(leader_address, topic, epoch) == 0

    assert produce_raw(leader_address, topic, 0, -1, [b"a", b"b"])["error_code"] == 0
    # Two followers gone: the ISR falls to the leader alone, below min.insync.replicas.
    for follower in followers:
        c.kill(follower)
    wait_until(
        lambda: partition_info(leader_address, topic)[0].isrs == [leader],
        timeout=TIMEOUT,
        what="the ISR shrinks to the leader",
    )
    # The controller bumped the epoch when it removed them: the old one is fenced (74).
    assert partition_leader_epoch(leader_address, topic) > epoch
    assert fetch_error(leader_address, topic, epoch) == 74
    refused = produce_raw(leader_address, topic, 0, -1, [b"c"])
    assert refused["error_code"] == 19  # NOT_ENOUGH_REPLICAS
    accepted = produce_raw(leader_address, topic, 0, 1, [b"d"])
    assert (accepted["error_code"], accepted["base_offset"]) == (0, 2)
    # A follower comes back, truncates, catches up and rejoins: acks=all works again.
    c.start(followers[0])
    wait_until(
        lambda: (
            sorted(partition_info(leader_address, topic)[0].isrs) == sorted([leader, followers[0]])
        ),
        timeout=TIMEOUT,
        what="the restarted follower rejoins the ISR",
    )
    assert produce_raw(leader_address, topic, 0, -1, [b"e"])["error_code"] == 0
    assert wait_until(
        lambda: replicas_identical(c, [leader, followers[0]], topic, 0),
        timeout=TIMEOUT,
        what="leader and returning follower identical",
    )


def partition_leader_epoch(address: str, topic: str) -> int:
    response = raw_call(address, ApiKey.METADATA, 9, {"topics": [{"name": topic}]})
    return response.body["topics"][0]["partitions"][0]["leader_epoch"]


def list_latest(address: str, topic: str) -> int:
    response = raw_call(
        address,
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    answer = response.body["topics"][0]["partitions"][0]
    assert answer["error_code"] == 0
    return answer["offset"]


def fetch_error(address: str, topic: str, current_leader_epoch: int) -> int:
    fetched = raw_call(address, ApiKey.FETCH, 12, fetch_body(topic, 0, current_leader_epoch))
    return fetched.body["responses"][0]["partitions"][0]["error_code"]


def fetch_body(topic: str, partition: int, current_leader_epoch: int) -> dict:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": current_leader_epoch,
                        "fetch_offset": 0,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
    }


class _Load:
    """A client producing numbered values on a thread, remembering the acknowledged ones."""

    def __init__(self, name: str, send: Callable[[bytes], None]) -> None:
        self.name = name
        self.acked: set[bytes] = set()
        self.errors: list[str] = []
        self.sent = 0
        self._send = send
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def ack(self, value: bytes) -> None:
        self.acked.add(value)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            value = b"%s-%d" % (self.name.encode(), self.sent)
            self.sent += 1
            self._send(value)
            time.sleep(0.002)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def test_kill_9_leader_under_idempotent_acks_all_load_loses_and_duplicates_nothing(
    cluster, wait_until
) -> None:
    c = cluster(3)
    topic = create_topic(c.bootstrap, 1, 3, {"min.insync.replicas": "2"})
    parts = wait_full_isr(wait_until, c, topic, 3)
    leader = parts[0].leader

    confluent = Producer(
        {
            "bootstrap.servers": c.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 120000,
            "retry.backoff.ms": 100,
        }
    )

    def confluent_send(value: bytes) -> None:
        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                load_c.ack(msg.value())
            else:
                load_c.errors.append(str(err))

        while True:
            try:
                confluent.produce(topic, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                confluent.poll(0.1)
        confluent.poll(0)

    load_c = _Load("confluent", confluent_send)

    from kafka import KafkaProducer

    kp = KafkaProducer(
        bootstrap_servers=c.bootstrap.split(","),
        acks="all",
        enable_idempotence=True,
        linger_ms=2,
        retries=2**31 - 1,
        retry_backoff_ms=100,
        request_timeout_ms=30000,
        delivery_timeout_ms=120000,
    )

    def kafka_python_send(value: bytes) -> None:
        future = kp.send(topic, value=value, partition=0)
        future.add_callback(lambda _meta, v=value: load_k.ack(v))
        future.add_errback(lambda exc: load_k.errors.append(repr(exc)))

    load_k = _Load("kafka-python", kafka_python_send)

    loads = (load_c, load_k)
    for load in loads:
        load.start()
    wait_until(
        lambda: all(len(x.acked) >= 200 for x in loads),
        timeout=TIMEOUT,
        what="200 acknowledged records from each client before the kill",
    )
    before = {x.name: len(x.acked) for x in loads}
    c.kill(leader)
    survivors = [i for i in (1, 2, 3) if i != leader]
    survivors_bootstrap = c.bootstrap_of(*survivors)
    wait_until(
        lambda: partition_info(survivors_bootstrap, topic)[0].leader in survivors,
        timeout=TIMEOUT,
        what="a new leader among the survivors",
    )
    wait_until(
        lambda: all(len(x.acked) >= before[x.name] + 200 for x in loads),
        timeout=TIMEOUT,
        what="200 more acknowledged records from each client after the leader change",
    )
    for load in loads:
        load.stop()
    assert confluent.flush(TIMEOUT) == 0
    kp.flush(timeout=TIMEOUT)
    kp.close(timeout=10)
    assert load_c.errors == [] and load_k.errors == []

    values = consume_all(survivors_bootstrap, topic, 1)
    duplicates = len(values) - len(set(values))
    assert duplicates == 0
    lost = (load_c.acked | load_k.acked) - set(values)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    wait_until(
        lambda: replicas_identical(c, survivors, topic, 0),
        timeout=TIMEOUT,
        what="the two survivors identical",
    )
    # The killed leader comes back: it truncates what it never replicated and catches up.
    c.start(leader)
    wait_until(
        lambda: replicas_identical(c, [1, 2, 3], topic, 0),
        timeout=TIMEOUT,
        what="all three replicas identical after the old leader returns",
    )


def test_leader_shrinks_the_isr_of_a_stalled_follower_and_takes_it_back(
    cluster, wait_until
) -> None:
    """A follower frozen (SIGSTOP) but still registered: acks=all times out while it is in
    the ISR (and consumers do not see that batch), the leader drops it after
    replica.lag.time.max.ms, then acks=all works with
    the two left; thawed, it catches up and the leader puts it back."""
    c = cluster(
        3, configs={"zookeeper.session.timeout.ms": "30000", "replica.lag.time.max.ms": "6000"}
    )
    topic = create_topic(c.bootstrap, 1, 3, {"min.insync.replicas": "2"})
    leader = wait_full_isr(wait_until, c, topic, 3)[0].leader
    stalled, other = [i for i in (1, 2, 3) if i != leader]
    leader_address = c.brokers[leader].address
    assert produce_raw(leader_address, topic, 0, -1, [b"a"])["error_code"] == 0

    c.freeze(stalled)
    try:
        # Still in the ISR (its lag is not yet 4 s): the HW cannot pass the new batch.
        timed_out = produce_raw(leader_address, topic, 0, -1, [b"b"], timeout_ms=1000)
        assert timed_out["error_code"] == 7  # REQUEST_TIMED_OUT
        # A fetch in the stalled follower's name past the leader's log end is out of
        # range and must not count it as caught up (the HW stays below "b").
        forged = fetch_body(topic, 0, -1)
        forged["replica_id"] = stalled
        forged["topics"][0]["partitions"][0]["fetch_offset"] = 100
        answer = raw_call(leader_address, ApiKey.FETCH, 12, forged).body["responses"][0]
        assert answer["partitions"][0]["error_code"] == 1  # OFFSET_OUT_OF_RANGE
        # The batch is in the leader's log, above the HW: consumers do not see it.
        fetched = raw_call(leader_address, ApiKey.FETCH, 12, fetch_body(topic, 0, -1))
        answer = fetched.body["responses"][0]["partitions"][0]
        assert (answer["error_code"], answer["high_watermark"]) == (0, 1)
        values = [r.value for _, rs in decode_batches(bytes(answer["records"])) for r in rs]
        assert values == [b"a"]
        assert list_latest(leader_address, topic) == 1
        wait_until(
            lambda: (
                sorted(partition_info(leader_address, topic)[0].isrs) == sorted([leader, other])
            ),
            timeout=TIMEOUT,
            what="the leader drops the stalled follower from the ISR",
        )
        zk = c.zk()
        assert str(stalled) in zk.get_children(
            "/brokers/ids"
        )  # the leader's doing, not the controller's
        assert produce_raw(leader_address, topic, 0, -1, [b"c"])["error_code"] == 0
    finally:
        c.thaw(stalled)
    wait_until(
        lambda: len(partition_info(leader_address, topic)[0].isrs) == 3,
        timeout=TIMEOUT,
        what="the thawed follower rejoins the ISR",
    )
    assert wait_until(
        lambda: replicas_identical(c, [1, 2, 3], topic, 0),
        timeout=TIMEOUT,
        what="three identical replicas",
    )
    assert consume_all(c.bootstrap, topic, 1) == [b"a", b"b", b"c"]


def test_returning_leader_truncates_the_tail_it_never_replicated(cluster, wait_until) -> None:
    """KIP-101: the leader takes acks=1 records its followers never fetch (they are paused),
    then dies. A follower leads in the next epoch and takes new records; the old leader
    comes back as a follower, cuts its tail at the end of the epoch the new leader knows,
    and ends byte-identical to it. The unreplicated records are gone, as in Kafka."""
    c = cluster(3)
    topic = create_topic(c.bootstrap, 1, 3, {"min.insync.replicas": "2"})
    old_leader = wait_full_isr(wait_until, c, topic, 3)[0].leader
    followers = [i for i in (1, 2, 3) if i != old_leader]
    old_address = c.brokers[old_leader].address
    assert produce_raw(old_address, topic, 0, -1, [b"committed"])["error_code"] == 0

    for follower in followers:
        c.freeze(follower)
    try:
        # A follower's Fetch parked at the leader (replica.fetch.wait.max.ms, 500 ms) would be
        # answered with the tail into the frozen follower's socket, to be read at the thaw:
        # let the parked fetches expire (answered empty) first.
        time.sleep(1.0)
        tail = produce_raw(old_address, topic, 0, 1, [b"unreplicated-1", b"unreplicated-2"])
        assert (tail["error_code"], tail["base_offset"]) == (0, 1)
        c.kill(old_leader)
    finally:
        for follower in followers:
            c.thaw(follower)

    survivors = c.bootstrap_of(*followers)
    new_leader = wait_until(
        lambda: (lead := partition_info(survivors, topic)[0].leader) in followers and lead,
        timeout=TIMEOUT,
        what="a new leader among the followers",
    )
    new_address = c.brokers[new_leader].address
    answer = wait_until(
        lambda: (
            (r := produce_raw(new_address, topic, 0, -1, [b"new-1", b"new-2"]))["error_code"] == 0
            and r
        ),
        timeout=TIMEOUT,
        what="acks=all accepted by the new leader",
    )
    assert answer["base_offset"] == 1  # the old leader's tail never reached it

    c.start(old_leader)
    wait_until(
        lambda: replicas_identical(c, [1, 2, 3], topic, 0),
        timeout=TIMEOUT,
        what="the old leader truncated and caught up",
    )
    assert consume_all(c.bootstrap, topic, 1) == [b"committed", b"new-1", b"new-2"]
    log_text = c.brokers[old_leader].log_path.read_text()
    assert f"truncating {topic}-0 from 3 to 1" in log_text
