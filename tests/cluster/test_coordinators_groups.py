"""The group coordinator moves with leadership: a consumer group survives its death.

Three brokers, ``__consumer_offsets`` with replication factor 3. A consumer
(kafka-python, then confluent-kafka) consumes a replicated topic in batches and
commits each batch synchronously before it takes the next; after a third of
the records its group coordinator (the leader of the group's offsets partition,
as FindCoordinator names it) is killed with SIGKILL. The offsets partition gets
a new leader, which loads the group and its committed offsets from its replica
of the log; the consumer finds it and goes on. Counting only batches whose
commit succeeded, every record is consumed exactly once: none skipped (the
offsets committed before the kill were replicated and loaded) and none twice
(no committed offset lost, so the group does not re-read committed work).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import raw_wire
from tests.cluster import zk_wire

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RECORDS = 300
PARTITIONS = 2
BATCH = 20
KILL_AFTER = RECORDS // 3
# Small internal topics: 50 partitions x RF 3 would only slow the start.
CONFIGS = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
}
# Session expiry (6 s), the election and the load, on a loaded machine.
RUN_TIMEOUT_S = 60.0


def _prepare(cluster) -> tuple[str, list[bytes]]:
    topic = "coord-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
        request_timeout=30,
    )
    futures[topic].result(30)
    values = [f"record-{i:05d}".encode() for i in range(RECORDS)]
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True}
    )
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % PARTITIONS)
    assert producer.flush(60) == 0
    return topic, values


def _coordinator(cluster, group: str) -> int:
    """The group's coordinator as the brokers answer FindCoordinator."""

    def found() -> int | None:
        for broker_id in cluster.running():
            try:
                error, node = zk_wire.find_coordinator(cluster.brokers[broker_id].address, group)
            except OSError:
                continue
            if error == 0 and node >= 0:
                return node
        return None

    deadline = time.monotonic() + 30
    while (node := found()) is None:
        assert time.monotonic() < deadline, "no group coordinator found"
        time.sleep(0.2)
    return node


def _check_exactly_once(consumed: list[bytes], values: list[bytes]) -> None:
    assert len(consumed) == len(set(consumed)), "a committed record was consumed twice"
    missing = set(values) - set(consumed)
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing)[:3]}"
    assert sorted(consumed) == sorted(values)


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_kafka_python_group_survives_coordinator_loss(cluster, wait_until, how) -> None:
    """``kill``: SIGKILL (found dead at the session timeout); ``stop``: SIGTERM, a
    controlled shutdown (the coordinator unloads while still serving, answering
    NOT_COORDINATOR). Then the old coordinator comes back and a preferred-leader
    election gives it its offsets partition again: it loads the group once more, with
    the offsets committed while it was away."""
    from kafka import KafkaConsumer
    from kafka.errors import CommitFailedError

    built = cluster(3, configs=CONFIGS)
    topic, values = _prepare(built)
    group = "g-" + uuid.uuid4().hex[:8]
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=built.bootstrap.split(","),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",  # a lost commit would show as records read twice
        max_poll_records=BATCH,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
        request_timeout_ms=15000,
        retry_backoff_ms=200,
    )
    consumed: list[bytes] = []
    killed = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while len(consumed) < RECORDS:
            assert time.monotonic() < deadline, (
                f"consumed {len(consumed)} of {RECORDS} (coordinator {killed} killed)"
            )
            polled = consumer.poll(timeout_ms=1000)
            batch = [r.value for records in polled.values() for r in records]
            if not batch:
                continue
            try:
                consumer.commit()  # synchronous; retries retriable errors itself
            except CommitFailedError:
                continue  # a rebalance: the batch was not committed and comes again
            consumed.extend(batch)
            if killed is None and len(consumed) >= KILL_AFTER:
                killed = _coordinator(built, group)
                if how == "kill":
                    built.kill(killed)
                else:
                    stopper = threading.Thread(target=built.stop, args=(killed,))
                    stopper.start()
    finally:
        consumer.close(autocommit=False)
    assert killed is not None
    _check_exactly_once(consumed, values)
    assert _coordinator(built, group) != killed
    if how == "stop":
        stopper.join(60)
    _regain_and_check(built, wait_until, group, topic, killed)


def _regain_and_check(built, wait_until, group: str, topic: str, old: int) -> None:
    """Restart ``old``, give it the group's offsets partition back, and read the group's
    committed offsets from it: the end of every partition."""
    from confluent_kafka import ElectionType

    from kafkette.broker.groups.partitioning import partition_for_group

    index = partition_for_group(group, int(CONFIGS["offsets.topic.num.partitions"]))
    built.start(old)
    wait_until(
        lambda: old in (built.partition_state("__consumer_offsets", index) or {}).get("isr", []),
        timeout=30,
        what=f"broker {old} back in the ISR of __consumer_offsets-{index}",
    )
    admin = AdminClient({"bootstrap.servers": built.bootstrap})

    def elected() -> bool:
        if (built.partition_state("__consumer_offsets", index) or {}).get("leader") != old:
            try:
                admin.elect_leaders(
                    ElectionType.PREFERRED, [CTopicPartition("__consumer_offsets", index)]
                ).result(15)
            except KafkaException:
                pass  # not in the ISR yet everywhere, or already elected: asked again
            return False
        return _coordinator(built, group) == old

    # ``old`` led the partition since its creation (all brokers alive then): it is the
    # first replica of the assignment, the preferred leader.
    wait_until(elected, timeout=30, what=f"broker {old} coordinator of {group} again")
    reader = Consumer({"bootstrap.servers": built.bootstrap_of(old), "group.id": group})
    try:

        def committed() -> list[int] | None:
            try:
                found = reader.committed(
                    [CTopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
                )
            except KafkaException:
                return None
            return [tp.offset for tp in found]

        offsets = wait_until(committed, timeout=30, what="the group's offsets from its coordinator")
    finally:
        reader.close()
    assert offsets == [RECORDS // PARTITIONS] * PARTITIONS


def test_confluent_group_survives_coordinator_kill(cluster) -> None:
    built = cluster(3, configs=CONFIGS)
    topic, values = _prepare(built)
    group = "g-" + uuid.uuid4().hex[:8]
    consumer = Consumer(
        {
            "bootstrap.servers": built.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",  # a lost commit would show as records read twice
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
        }
    )
    consumer.subscribe([topic])
    consumed: list[bytes] = []
    killed = None
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while len(consumed) < RECORDS:
            assert time.monotonic() < deadline, (
                f"consumed {len(consumed)} of {RECORDS} (coordinator {killed} killed)"
            )
            messages = [m for m in consumer.consume(BATCH, timeout=1.0) if m.error() is None]
            if not messages:
                continue
            ends: dict[int, int] = {}
            for message in messages:
                ends[message.partition()] = message.offset() + 1
            offsets = [CTopicPartition(topic, p, o) for p, o in sorted(ends.items())]
            if not _commit_confluent(consumer, offsets, deadline):
                continue  # not committed (a rebalance): the batch comes again
            consumed.extend(m.value() for m in messages)
            if killed is None and len(consumed) >= KILL_AFTER:
                killed = _coordinator(built, group)
                built.kill(killed)
    finally:
        consumer.close()
    assert killed is not None
    _check_exactly_once(consumed, values)
    assert _coordinator(built, group) != killed


def _commit_confluent(consumer: Consumer, offsets: list, deadline: float) -> bool:
    """Commit synchronously, retrying what librdkafka calls retriable; False when the
    group moved on without this member's batch (it is consumed again)."""
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in (
                # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS: fenced
                22,
                25,
                27,
            ):
                return False
            assert time.monotonic() < deadline, f"commit kept failing: {error}"
            time.sleep(0.2)


def test_other_brokers_answer_not_coordinator(cluster) -> None:
    """Group and transactional requests to a broker that does not lead the key's
    partition get NOT_COORDINATOR (16); the coordinator itself serves them."""
    from kafkette.wire.apis import ApiKey

    built = cluster(3, configs=CONFIGS)
    topic, _values = _prepare(built)
    group = "g-" + uuid.uuid4().hex[:8]
    transactional_id = "tx-" + uuid.uuid4().hex[:8]
    group_coordinator = _coordinator(built, group)
    deadline = time.monotonic() + 30
    while True:  # FindCoordinator creates __transaction_state; then it names a leader
        error, txn_coordinator = zk_wire.find_coordinator(
            built.brokers[1].address, transactional_id, 1
        )
        if error == 0 and txn_coordinator >= 0:
            break
        assert time.monotonic() < deadline, "no transaction coordinator found"
        time.sleep(0.2)

    def commit(broker_id: int) -> int:
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 5,
                            "committed_leader_epoch": -1,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        }
        answer = raw_wire.call(
            built.brokers[broker_id].address, ApiKey.OFFSET_COMMIT, 8, body, "coordinator-test"
        )
        return answer["topics"][0]["partitions"][0]["error_code"]

    def init_producer_id(broker_id: int) -> int:
        body = {
            "transactional_id": transactional_id,
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        answer = raw_wire.call(
            built.brokers[broker_id].address, ApiKey.INIT_PRODUCER_ID, 3, body, "coordinator-test"
        )
        return answer["error_code"]

    for broker_id in (1, 2, 3):
        if broker_id != group_coordinator:
            assert commit(broker_id) == 16
        if broker_id != txn_coordinator:
            assert init_producer_id(broker_id) == 16
    # The coordinators answer once their partition is loaded (14 until then: a moment).
    for call, broker_id in ((commit, group_coordinator), (init_producer_id, txn_coordinator)):
        deadline = time.monotonic() + 15
        while (error := call(broker_id)) == 14 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert error == 0
    # Share groups are served in a cluster (their state at the share coordinators, the
    # leaders of __share_group_state): the client APIs and the inter-broker state APIs
    # are advertised, share.version finalized (docs/share-groups.md).
    versions = raw_wire.call(
        built.brokers[1].address, ApiKey.API_VERSIONS, 3,
        {"client_software_name": "coordinator-test", "client_software_version": "1"},
    )
    advertised = {k["api_key"] for k in versions["api_keys"]}
    assert ApiKey.OFFSET_COMMIT in advertised
    assert advertised >= {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}
    assert "share.version" in {f["name"] for f in versions["finalized_features"]}
