"""KIP-848 end to end: confluent-kafka consumers with ``group.protocol=consumer``.

Each consumer is its own process (``group_helpers.py consume``) so one can be
``kill -9``-ed; the broker is ``kafkette serve`` with a 500 ms heartbeat interval and a
4 s consumer session timeout so that joins, leaves and crashes settle in seconds.
Assignments are checked to be disjoint and complete; every produced record is consumed,
and the offsets committed by the members are read back with the admin client.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker import group_helpers as helpers
from tests.broker.consumer_protocol_client import RawClient

ConsumerProcess = helpers.ConsumerProcess
GroupBroker = helpers.GroupBroker
wait_until = helpers.wait_until

PARTITIONS = 4
WAIT = 45.0
BROKER_CONFIGS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "4000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GroupBroker]:
    base = tmp_path_factory.mktemp("cgp")
    (base / "data").mkdir()
    broker = GroupBroker(base / "data", base, BROKER_CONFIGS).start()
    try:
        yield broker
    finally:
        broker.terminate()


@pytest.fixture
def topic(group_broker: GroupBroker) -> str:
    name = "cgp-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(20)
    return name


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


class Consumers:
    def __init__(self, broker: GroupBroker, topic: str, group: str, tmp: Path) -> None:
        self.broker, self.topic, self.group, self.tmp = broker, topic, group, tmp
        self.running: list[ConsumerProcess] = []

    def start(self, name: str, **extra: str) -> ConsumerProcess:
        consumer = ConsumerProcess.start(
            name, self.tmp, bootstrap=self.broker.bootstrap, group=self.group, topic=self.topic,
            client="confluent", auto_commit=True, session_timeout_ms=0,
            heartbeat_interval_ms=0, max_poll_interval_ms=20000,
            extra={"group.protocol": "consumer", **extra},
            unset=["session.timeout.ms", "heartbeat.interval.ms"],
        )
        self.running.append(consumer)
        return consumer

    def describe(self) -> str:
        return "; ".join(c.describe() for c in self.running)

    def close(self) -> None:
        for consumer in self.running:
            consumer.kill()


@pytest.fixture
def consumers(group_broker, topic, tmp_path) -> Iterator[Consumers]:
    group = "cgp-group-" + uuid.uuid4().hex[:6]
    made = Consumers(group_broker, topic, group, tmp_path)
    try:
        yield made
    finally:
        made.close()


def _split(a: ConsumerProcess, b: ConsumerProcess) -> bool:
    pa, pb = a.partitions(), b.partitions()
    return len(pa) == len(pb) == PARTITIONS // 2 and sorted(pa + pb) == list(range(PARTITIONS))


def test_share_then_rebalance_on_leave_and_crash(consumers: Consumers) -> None:
    bootstrap = consumers.broker.bootstrap
    values = [f"v{i}" for i in range(40)]
    produce(bootstrap, consumers.topic, values)
    first = consumers.start("first")
    wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, consumers.describe)
    second = consumers.start("second")
    wait_until(lambda: _split(first, second), WAIT, consumers.describe)
    wait_until(lambda: set(first.values()) | set(second.values()) >= set(values), WAIT,
               consumers.describe)

    # Kafka's admin view of the group while both are in it.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(20)
    assert consumers.group in {g.group_id for g in listed.valid}
    (description,) = admin.describe_consumer_groups([consumers.group]).values()
    description = description.result(20)
    assert description.state == ConsumerGroupState.STABLE
    assert description.type == ConsumerGroupType.CONSUMER
    assert sorted(tp.partition for m in description.members
                  for tp in m.assignment.topic_partitions) == list(range(PARTITIONS))

    second.stop()  # graceful: leaves the group (epoch -1)
    wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, consumers.describe)

    third = consumers.start("third")
    wait_until(lambda: _split(first, third), WAIT, consumers.describe)
    third.kill()  # no leave: the 4 s session timeout removes it
    wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, consumers.describe)

    more = [f"w{i}" for i in range(8)]
    produce(bootstrap, consumers.topic, more)
    wait_until(lambda: set(more) <= set(first.values()), WAIT, consumers.describe)
    first.stop()  # commits what it consumed, then leaves
    assert not first.errors, first.errors

    request = ConsumerGroupTopicPartitions(
        consumers.group, [TopicPartition(consumers.topic, p) for p in range(PARTITIONS)]
    )
    (offsets,) = admin.list_consumer_group_offsets([request]).values()
    committed = {tp.partition: tp.offset for tp in offsets.result(20).topic_partitions}
    assert committed == dict.fromkeys(range(PARTITIONS), (len(values) + len(more)) // PARTITIONS)
    (description,) = admin.describe_consumer_groups([consumers.group]).values()
    assert description.result(20).state == ConsumerGroupState.EMPTY


def _described(bootstrap: str, group: str) -> dict:
    """ConsumerGroupDescribe v1 of ``group``, raw (epochs are not in the admin API)."""
    with RawClient(bootstrap) as client:
        return client.request(69, 1, {"group_ids": [group],
                                      "include_authorized_operations": False})["groups"][0]


def test_static_member_restart_keeps_its_partitions(consumers: Consumers) -> None:
    first = consumers.start("static-a", **{"group.instance.id": "a"})
    other = consumers.start("static-b", **{"group.instance.id": "b"})
    wait_until(lambda: _split(first, other), WAIT, consumers.describe)
    bootstrap = consumers.broker.bootstrap
    wait_until(lambda: _described(bootstrap, consumers.group)["group_state"] == "Stable",
               WAIT, consumers.describe)
    before = _described(bootstrap, consumers.group)
    epochs = {m["instance_id"]: (m["member_id"], m["member_epoch"]) for m in before["members"]}
    partitions = first.partitions()
    first.stop()  # a static member leaves with epoch -2: its partitions wait for it
    again = consumers.start("static-a2", **{"group.instance.id": "a"})
    wait_until(lambda: again.partitions() == partitions, WAIT, consumers.describe)
    after = _described(bootstrap, consumers.group)
    # No rebalance: the group epoch did not move, the new process took the old member's
    # epoch under its own member id, and b was never asked to change anything.
    assert after["group_epoch"] == before["group_epoch"]
    members = {m["instance_id"]: (m["member_id"], m["member_epoch"]) for m in after["members"]}
    assert members["a"][1] == epochs["a"][1] and members["a"][0] != epochs["a"][0]
    assert members["b"] == epochs["b"]
    assert sorted(other.partitions() + again.partitions()) == list(range(PARTITIONS))


def test_classic_group_upgraded_online_and_side_by_side(consumers: Consumers, tmp_path) -> None:
    """A classic consumer commits, leaves (its group is now empty), and a consumer-protocol
    member takes the same group id over, resuming from the committed offsets; meanwhile a
    classic group and a consumer group read the same topic side by side."""
    bootstrap = consumers.broker.bootstrap
    first_half = [f"a{i}" for i in range(12)]
    produce(bootstrap, consumers.topic, first_half)
    classic_spec = dict(
        bootstrap=bootstrap, topic=consumers.topic, client="confluent", auto_commit=True,
        session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=20000,
        extra={"group.protocol": "classic"},
    )
    classic = ConsumerProcess.start("classic", tmp_path, group=consumers.group, **classic_spec)
    consumers.running.append(classic)
    wait_until(lambda: set(first_half) <= set(classic.values()), WAIT, consumers.describe)
    classic.stop()  # commits, leaves: an empty classic group with offsets

    # A classic group of its own reads the same topic while the upgraded group runs.
    beside = ConsumerProcess.start(
        "beside", tmp_path, group=consumers.group + "-classic", **classic_spec
    )
    consumers.running.append(beside)
    upgraded = consumers.start("upgraded")
    wait_until(lambda: upgraded.partitions() == list(range(PARTITIONS)), WAIT,
               consumers.describe)
    second_half = [f"b{i}" for i in range(8)]
    produce(bootstrap, consumers.topic, second_half)
    wait_until(lambda: set(second_half) <= set(upgraded.values()), WAIT, consumers.describe)
    wait_until(lambda: set(first_half + second_half) <= set(beside.values()), WAIT,
               consumers.describe)
    assert not set(first_half) & set(upgraded.values())  # resumed from the classic commits

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(20).valid
    types = {g.group_id: g.type for g in listed}
    assert types[consumers.group] == ConsumerGroupType.CONSUMER
    assert types[consumers.group + "-classic"] == ConsumerGroupType.CLASSIC


def test_broker_restart_members_rejoin(tmp_path) -> None:
    """Membership is not persisted: after a restart the members are told to rejoin
    (UNKNOWN_MEMBER_ID, not Kafka's fatal GROUP_ID_NOT_FOUND) and share the topic again."""
    (tmp_path / "data").mkdir()
    broker = GroupBroker(tmp_path / "data", tmp_path, BROKER_CONFIGS).start()
    made = None
    try:
        topic = "cgp-restart"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
        made = Consumers(broker, topic, "cgp-restart-group", tmp_path)
        first = made.start("before-restart")
        wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, made.describe)
        broker.terminate()
        broker.start()
        second = made.start("after-restart")
        wait_until(lambda: _split(first, second), WAIT, made.describe)
        assert not first.errors, first.errors
    finally:
        if made is not None:
            made.close()
        broker.terminate()


def test_regex_subscription(group_broker: GroupBroker, tmp_path) -> None:
    """librdkafka sends a ``^`` subscription as SubscribedTopicRegex (v1): the broker
    resolves it, and a topic created later that matches joins the assignment."""
    prefix = "cgp-re-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    admin.create_topics([NewTopic(prefix + "-a", 2, 1)])[prefix + "-a"].result(20)
    made = Consumers(group_broker, f"^{prefix}-.*", "cgp-re-group-" + uuid.uuid4().hex[:6],
                     tmp_path)
    try:
        consumer = made.start("regex")
        wait_until(lambda: consumer.partitions() == [0, 1], WAIT, made.describe)
        admin.create_topics([NewTopic(prefix + "-b", 1, 1)])[prefix + "-b"].result(20)
        produce_to = Producer({"bootstrap.servers": group_broker.bootstrap})
        produce_to.produce(prefix + "-b", b"late", partition=0)
        assert produce_to.flush(20) == 0
        wait_until(lambda: "late" in consumer.values(), WAIT, made.describe)
    finally:
        made.close()


def test_transactional_offsets_of_a_consumer_protocol_member(group_broker, topic) -> None:
    """Exactly-once read-process-write: a producer commits a consumer-protocol member's
    offsets in its transaction (TxnOffsetCommit carries the member id and epoch)."""
    from confluent_kafka import Consumer

    bootstrap = group_broker.bootstrap
    produce(bootstrap, topic, [f"t{i}" for i in range(8)])
    group = "cgp-txn-" + uuid.uuid4().hex[:6]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": group})
    try:
        consumer.subscribe([topic])
        seen = []
        deadline = time.monotonic() + WAIT
        while len(seen) < 8 and time.monotonic() < deadline:
            seen += [m for m in consumer.consume(10, 0.5) if m.error() is None]
        assert len(seen) == 8
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        committed = consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30
        )
        assert {tp.partition: tp.offset for tp in committed} == dict.fromkeys(
            range(PARTITIONS), 2)
    finally:
        consumer.close()


def test_transactional_offsets_by_group_id_only(group_broker, topic) -> None:
    """A producer given only the group id (TxnOffsetCommit with epoch -1, member id "" and
    no instance id) commits into a consumer group that has members, as Kafka's
    ConsumerGroup.validateOffsetCommit allows."""
    from confluent_kafka import Consumer
    from kafka import KafkaProducer, OffsetAndMetadata
    from kafka import TopicPartition as KafkaTopicPartition

    bootstrap = group_broker.bootstrap
    group = "cgp-txn-id-" + uuid.uuid4().hex[:6]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": "consumer", "enable.auto.commit": False})
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=group)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()  # the group has a member now
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            {KafkaTopicPartition(topic, 0): OffsetAndMetadata(5, "", -1)}, group)
        producer.commit_transaction()
        (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert committed.offset == 5
    finally:
        producer.close()
        consumer.close()


def test_non_empty_classic_group_upgraded_online(consumers: Consumers, tmp_path) -> None:
    """Kafka 4.0's online upgrade: two classic consumers share the topic; a
    consumer-protocol member joins the running group, which becomes a consumer group
    with the classic members inside (JoinGroup/SyncGroup/Heartbeat); the three split the
    partitions without overlap and every record is consumed. When the consumer-protocol
    member leaves, the group is downgraded to a classic group and rebalances."""
    bootstrap = consumers.broker.bootstrap
    classic_spec = dict(
        bootstrap=bootstrap, topic=consumers.topic, auto_commit=True,
        session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=20000,
    )
    first = ConsumerProcess.start("classic-kp", tmp_path, group=consumers.group,
                                  client="kafka-python", **classic_spec)
    consumers.running.append(first)
    second = ConsumerProcess.start("classic-ck", tmp_path, group=consumers.group,
                                   client="confluent", extra={"group.protocol": "classic"},
                                   **classic_spec)
    consumers.running.append(second)
    wait_until(lambda: _split(first, second), WAIT, consumers.describe)
    third = consumers.start("consumer-protocol")
    members = (first, second, third)

    def shared() -> bool:
        owned = [p for m in members for p in m.partitions()]
        return sorted(owned) == list(range(PARTITIONS)) and all(m.partitions() for m in members)

    wait_until(shared, WAIT, consumers.describe)
    described = _described(bootstrap, consumers.group)
    assert described["error_code"] == 0 and len(described["members"]) == 3
    assert sorted(m["member_type"] for m in described["members"]) == [0, 0, 1]
    values = [f"u{i}" for i in range(16)]
    produce(bootstrap, consumers.topic, values)
    wait_until(lambda: set(values) <= {v for m in members for v in m.values()}, WAIT,
               consumers.describe)
    # The last consumer-protocol member leaves: a classic group again, which rebalances.
    third.stop()
    wait_until(lambda: _split(first, second), WAIT, consumers.describe)
    after = _described(bootstrap, consumers.group)
    assert (after["error_code"], after["error_message"]) == (
        69, f"Group {consumers.group} is not a consumer group.")  # GROUP_ID_NOT_FOUND
    more = [f"w{i}" for i in range(8)]
    produce(bootstrap, consumers.topic, more)
    wait_until(lambda: set(more) <= set(first.values()) | set(second.values()), WAIT,
               consumers.describe)
    for m in members:
        assert not m.errors, m.errors
