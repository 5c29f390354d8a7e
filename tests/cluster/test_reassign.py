"""Partition reassignments (AlterPartitionReassignments / ListPartitionReassignments).

A real three-broker cluster on a real ZooKeeper; kafka-python's admin client
(the one Python client with these APIs) talks to the controller, records go
in and out through confluent-kafka. A partition of an RF 2 topic with records
in it moves from brokers [1, 2] to [2, 3]: broker 3 must end with byte-identical
batches, broker 1 with none, consumers must read every record. Then an
in-flight move (its new replica frozen, so it cannot catch up) is listed and
cancelled, and Kafka's errors (and NOT_CONTROLLER elsewhere) are checked on
the same cluster.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kafka import errors as kafka_errors

from tests.cluster import zk_wire

RECORDS = 300
# No preferred-leader moves behind the test's back.
CONFIGS = {"auto.leader.rebalance.enable": "false"}


def _create(bootstrap: str, name: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)],
        request_timeout=60,
    ).values():
        future.result(timeout=60)


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"value-%06d" % i, partition=0)
    assert producer.flush(60) == 0


def _consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def _segments(data_dir: Path, topic: str, partition: int) -> bytes:
    """The partition's record batches as they lie on disk, segment after segment."""
    directory = data_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


class _LiveProducer(threading.Thread):
    """Produces ``live-N`` records to partition 0 until stopped; counts acknowledgements."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.acked = 0
        self.failed: list[str] = []
        self._halt = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5})

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.failed.append(str(error))
        else:
            self.acked += 1

    def run(self) -> None:
        sent = 0
        while not self._halt.is_set():
            self._producer.produce(self.topic, value=b"live-%06d" % sent, partition=0,
                                   on_delivery=self._delivered)
            sent += 1
            self._producer.poll(0.005)
        self._producer.flush(60)

    def stop(self) -> None:
        self._halt.set()
        self.join(90)


def _log_start(data_dir: Path, topic: str, partition: int) -> int:
    """The log start offset a replica has persisted (its offsets.checkpoint)."""
    path = data_dir / f"{topic}-{partition}" / "offsets.checkpoint"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("log-start-offset "):
                return int(line.split()[1])
    return 0


def _view(built, topic: str) -> dict | None:
    """Partition 0 as every running broker's Metadata shows it, if they all agree."""
    views = [zk_wire.metadata(b.address, [topic])["topics"][topic]["partitions"][0]
             for b in built.brokers.values() if b.running and not b.frozen]
    return views[0] if all(v == views[0] for v in views) else None


def _codes(result: dict) -> dict:
    return {tp: 0 if error is None else error.errno for tp, error in result.items()}


def _admin(built) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=built.bootstrap, request_timeout_ms=30000)


def test_move_a_replicated_partition_with_records(cluster, wait_until) -> None:
    built = cluster(3, configs=CONFIGS)
    _create(built.bootstrap, "moving", [[1, 2]])
    _produce(built.bootstrap, "moving", RECORDS)
    # A second partition whose log start moved (DeleteRecords): the new replica starts
    # below it and must restart its log at the leader's log start, as Kafka's does.
    _create(built.bootstrap, "trimmed", [[1, 2]])
    _produce(built.bootstrap, "trimmed", 100)
    trimmer = AdminClient({"bootstrap.servers": built.bootstrap})
    deleted = trimmer.delete_records(
        [ConfluentTopicPartition("trimmed", 0, 60)], request_timeout=30)
    for future in deleted.values():
        assert future.result(timeout=30).low_watermark == 60
    # The follower takes the leader's log start from its fetches (up to its HW).
    wait_until(lambda: _log_start(built.brokers[2].data_dir, "trimmed", 0) == 60,
               what="broker 2's log start at 60")
    before = wait_until(lambda: (v := _view(built, "moving")) and v["isr"] == [1, 2] and v)
    # Idempotent acks=all producing goes on through the move and its leader change.
    live = _LiveProducer(built.bootstrap, "moving")
    live.start()
    admin = _admin(built)
    try:
        wait_until(lambda: live.acked >= 20, what="live records acknowledged before the move")
        result = admin.alter_partition_reassignments({
            TopicPartition("moving", 0): [2, 3], TopicPartition("trimmed", 0): [2, 3],
        })
        assert result == {TopicPartition("moving", 0): None, TopicPartition("trimmed", 0): None}

        def done():
            view = _view(built, "moving")
            trimmed = _view(built, "trimmed")
            if view and trimmed and view["replicas"] == trimmed["replicas"] == [2, 3]:
                return view
            return None

        after = wait_until(done, timeout=30, what="the moves to [2, 3]")
        assert admin.list_partition_reassignments() == {}
        acked_at_move = live.acked
        wait_until(lambda: live.acked >= acked_at_move + 20,
                   what="live records acknowledged by the new leader")
    finally:
        admin.close()
        live.stop()
    assert live.failed == []
    # Broker 1 led: leadership moved to the target's first replica with the next epoch.
    assert after["leader"] == 2 and after["leader_epoch"] > before["leader_epoch"]
    assert sorted(after["isr"]) == [2, 3]
    topic_znode = json.loads(built.zk().get("/brokers/topics/moving")[0])
    assert topic_znode["partitions"] == {"0": [2, 3]}
    assert topic_znode["adding_replicas"] == {} and topic_znode["removing_replicas"] == {}

    data = {i: built.brokers[i].data_dir for i in (1, 2, 3)}
    wait_until(lambda: _segments(data[3], "moving", 0) == _segments(data[2], "moving", 0),
               what="broker 3's copy byte-identical to broker 2's")
    assert len(_segments(data[3], "moving", 0)) > RECORDS * 10
    wait_until(lambda: not (data[1] / "moving-0").exists(),
               what="broker 1 deleting its replica's directory")
    total = RECORDS + live.acked
    values = _consume_all(built.bootstrap, "moving", total)
    # Nothing acknowledged lost or duplicated, in order.
    assert values == [b"value-%06d" % i for i in range(RECORDS)] + [
        b"live-%06d" % i for i in range(live.acked)
    ]
    # Broker 3's copy of the trimmed partition: the leader's batches from the one holding
    # its log start (60) on, byte for byte.
    copy = _segments(data[3], "trimmed", 0)
    assert copy and _segments(data[2], "trimmed", 0).endswith(copy)
    wait_until(lambda: _log_start(data[3], "trimmed", 0) == 60, what="broker 3's log start")
    wait_until(lambda: not (data[1] / "trimmed-0").exists())
    values = _consume_all(built.bootstrap, "trimmed", 40)
    assert values == [b"value-%06d" % i for i in range(60, 100)]


def test_in_flight_reassignment_is_listed_and_cancelled(cluster, wait_until) -> None:
    built = cluster(3, configs=CONFIGS)
    controller = zk_wire.metadata(built.bootstrap_of(1), [])["controller_id"]
    # The new replica is a broker that is not the controller: it gets frozen.
    frozen = max(i for i in (1, 2, 3) if i != controller)
    first, second = sorted(i for i in (1, 2, 3) if i != frozen)
    _create(built.bootstrap, "stuck", [[first, second]])
    _produce(built.bootstrap, "stuck", 50)
    wait_until(lambda: (v := _view(built, "stuck")) and v["isr"] == [first, second])
    tp = TopicPartition("stuck", 0)
    admin = KafkaAdminClient(bootstrap_servers=built.bootstrap_of(first, second),
                             request_timeout_ms=30000)
    try:
        assert admin.list_partition_reassignments() == {}  # finds the controller first
        # Still registered but frozen: it cannot catch up, the move stays open.
        built.freeze(frozen)
        assert admin.alter_partition_reassignments({tp: [second, frozen]}) == {tp: None}
        listed = admin.list_partition_reassignments()
        assert listed == {tp: {"replicas": [second, frozen, first],
                               "adding_replicas": [frozen], "removing_replicas": [first]}}
        assert admin.list_partition_reassignments([tp]) == listed
        during = _view(built, "stuck")  # Metadata lists the full replica set meanwhile
        assert during is not None and during["replicas"] == [second, frozen, first]
        assert during["leader"] == first and during["isr"] == [first, second]
        topic_znode = json.loads(built.zk().get("/brokers/topics/stuck")[0])
        assert topic_znode["adding_replicas"] == {"0": [frozen]}
        assert topic_znode["removing_replicas"] == {"0": [first]}

        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        # Back to the original brokers, in the order the move left them (Kafka's
        # originReplicas = replicas minus adding).
        wait_until(lambda: (v := _view(built, "stuck")) and v["replicas"] == [second, first],
                   what="the cancelled move reverted")
        assert admin.list_partition_reassignments() == {}
        again = admin.alter_partition_reassignments({tp: None})
        assert again == {tp: kafka_errors.NoReassignmentInProgressError}
        view = _view(built, "stuck")
        assert view["leader"] == first and view["isr"] == [first, second]
    finally:
        built.thaw(frozen)
        admin.close()
    values = _consume_all(built.bootstrap, "stuck", 50)
    assert values == [b"value-%06d" % i for i in range(50)]
    before = json.loads(built.zk().get("/brokers/topics/stuck")[0])["partitions"]
    _check_errors_and_not_controller(built, controller)
    assert json.loads(built.zk().get("/brokers/topics/stuck")[0])["partitions"] == before


def _check_errors_and_not_controller(built, controller: int) -> None:
    """Kafka's per-partition errors, and NOT_CONTROLLER from any other broker."""
    admin = _admin(built)
    try:
        result = admin.alter_partition_reassignments({
            TopicPartition("stuck", 0): [2, 2],
            TopicPartition("stuck", 5): [1, 2],
            TopicPartition("nope", 0): [1, 2],
        })
        assert _codes(result) == {
            TopicPartition("stuck", 0): 39,  # INVALID_REPLICA_ASSIGNMENT (duplicates)
            TopicPartition("stuck", 5): 3,  # UNKNOWN_TOPIC_OR_PARTITION
            TopicPartition("nope", 0): 3,
        }
        not_alive = admin.alter_partition_reassignments({TopicPartition("stuck", 0): [2, 9]})
        assert _codes(not_alive) == {TopicPartition("stuck", 0): 39}
    finally:
        admin.close()

    from kafka.protocol.admin.topics import (
        AlterPartitionReassignmentsRequest,
        ListPartitionReassignmentsRequest,
    )

    other = next(b for i, b in built.brokers.items() if i != controller)
    topic = AlterPartitionReassignmentsRequest.ReassignableTopic
    alter = AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[topic(
        name="stuck", partitions=[topic.ReassignablePartition(partition_index=0, replicas=[2, 3])],
    )])
    answer = zk_wire.request(other.address, alter, 0)
    assert answer.error_code == 41  # NOT_CONTROLLER: the client asks the controller
    listing = zk_wire.request(other.address, ListPartitionReassignmentsRequest(
        timeout_ms=5000, topics=None), 0)
    assert listing.error_code == 41


def test_a_new_controller_completes_a_move_the_old_one_started(cluster, wait_until) -> None:
    """The move lives in the topic znode: when the controller dies mid-move, the next
    controller completes it once the new replica is in sync."""
    built = cluster(3, configs=CONFIGS)
    controller = zk_wire.metadata(built.bootstrap_of(1), [])["controller_id"]
    frozen, other = sorted(i for i in (1, 2, 3) if i != controller)
    _create(built.bootstrap, "handover", [[controller, other]])
    _produce(built.bootstrap, "handover", 100)
    wait_until(lambda: (v := _view(built, "handover")) and v["isr"] == [controller, other])
    tp = TopicPartition("handover", 0)
    admin = KafkaAdminClient(bootstrap_servers=built.bootstrap_of(controller, other),
                             request_timeout_ms=30000)
    try:
        assert admin.list_partition_reassignments() == {}
        built.freeze(frozen)  # the new replica cannot catch up while the old controller lives
        assert admin.alter_partition_reassignments({tp: [other, frozen]}) == {tp: None}
    finally:
        admin.close()
    built.kill(controller)
    built.thaw(frozen)

    def completed():
        views = [zk_wire.metadata(built.brokers[i].address, ["handover"]) for i in (frozen, other)]
        parts = [v["topics"]["handover"]["partitions"][0] for v in views]
        if all(v["controller_id"] in (frozen, other) for v in views) and all(
            p["replicas"] == [other, frozen] and sorted(p["isr"]) == sorted([other, frozen])
            for p in parts
        ):
            return parts[0]
        return None

    done = wait_until(completed, timeout=45, interval=0.5, what="the new controller's completion")
    assert done["leader"] == other
    data = {i: built.brokers[i].data_dir for i in (frozen, other)}
    wait_until(lambda: _segments(data[frozen], "handover", 0)
               == _segments(data[other], "handover", 0) != b"")
    values = _consume_all(built.bootstrap_of(frozen, other), "handover", 100)
    assert values == [b"value-%06d" % i for i in range(100)]
