"""The transaction coordinator moves with leadership: transactions survive its death.

Three brokers, ``__transaction_state`` with replication factor 3. A
transactional producer (confluent-kafka) runs transactions over a replicated
two-partition topic (each fourth one aborted); after a third of them its
transaction coordinator (the leader of the id's ``__transaction_state``
partition) is killed with SIGKILL. The new leader of that partition loads the
id (completing a transaction found prepared by writing its markers, to
partitions it may not lead: WriteTxnMarkers to their leaders), the producer
finds it and finishes its transactions. A read_committed consumer then sees
every committed transaction exactly once, and nothing of an aborted one.
"""

from __future__ import annotations

import threading
import time
import uuid
from functools import partial

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import raw_wire
from tests.cluster import zk_wire

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TRANSACTIONS = 30
PER_TRANSACTION = 6
PARTITIONS = 2
KILL_AFTER = TRANSACTIONS // 3
CONFIGS = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
}
RUN_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 30.0
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


def _coordinator(cluster, key: str, key_type: int = KEY_TYPE_TRANSACTION) -> int:
    deadline = time.monotonic() + 30
    while True:
        for broker_id in cluster.running():
            try:
                error, node = zk_wire.find_coordinator(
                    cluster.brokers[broker_id].address, key, key_type
                )
            except OSError:
                continue
            if error == 0 and node >= 0:
                return node
        assert time.monotonic() < deadline, f"no coordinator found for {key!r}"
        time.sleep(0.2)


def _group_coordinated_elsewhere(cluster, transactional_id: str) -> str:
    """A group id whose coordinator is not ``transactional_id``'s.

    librdkafka (2.16) cannot survive the death of the group coordinator it has cached
    for ``send_offsets_to_transaction``: its coordinator request waits for that broker
    to come back up, is re-run only when some connection goes to or from UP, and never
    checks its timeout (``creq_ts_timeout`` is set, never read), so the call can block
    until an idle connection is closed ten minutes later, against Apache Kafka too.
    Killing only the transaction coordinator keeps the test about the broker; the
    group's offsets partition, led elsewhere, still gets its marker by WriteTxnMarkers.
    """
    transaction_coordinator = _coordinator(cluster, transactional_id)
    for _ in range(50):
        group = "eos-" + uuid.uuid4().hex[:8]
        if _coordinator(cluster, group, KEY_TYPE_GROUP) != transaction_coordinator:
            return group
    raise AssertionError("every group id landed on the transaction coordinator")


def _close(consumer: Consumer) -> None:
    """``Consumer.close`` has no timeout: a stalled close fails the test, never hangs it."""
    closing = threading.Thread(target=consumer.close, daemon=True)
    closing.start()
    closing.join(CLOSE_TIMEOUT_S)
    assert not closing.is_alive(), f"consumer.close() took more than {CLOSE_TIMEOUT_S} s"


def _run_transaction(
    producer: Producer, topic: str, values: list[bytes], commit: bool, deadline: float
) -> bool:
    """One transaction, retried from the start when the client says it must abort;
    True once it committed (``commit``), False once it aborted."""
    while True:
        assert time.monotonic() < deadline, "the transaction did not finish in time"
        try:
            producer.begin_transaction()
            for i, value in enumerate(values):
                producer.produce(topic, value, partition=i % PARTITIONS)
            if commit:
                _retrying(producer.commit_transaction, deadline)
            else:
                _retrying(producer.abort_transaction, deadline)
            return commit
        except KafkaException as exc:
            error = exc.args[0]
            assert not error.fatal(), f"fatal transactional error: {error}"
            assert error.txn_requires_abort(), f"unexpected transactional error: {error}"
            _retrying(producer.abort_transaction, deadline)  # then run it again


def _retrying(call, deadline: float) -> None:
    while True:
        try:
            call(15)
            return
        except KafkaException as exc:
            error = exc.args[0]
            if not error.retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_transactions_survive_coordinator_kill(cluster) -> None:
    built = cluster(3, configs=CONFIGS)
    topic = "txn-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
        request_timeout=30,
    )[topic].result(30)
    transactional_id = "tx-" + uuid.uuid4().hex[:8]
    producer = Producer(
        {
            "bootstrap.servers": built.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60000,
            "message.timeout.ms": 30000,
        }
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    _retrying(producer.init_transactions, deadline)
    committed: list[bytes] = []
    aborted: list[bytes] = []
    killed = None
    for n in range(TRANSACTIONS):
        values = [f"t{n:03d}-r{i}".encode() for i in range(PER_TRANSACTION)]
        if _run_transaction(producer, topic, values, commit=n % 4 != 3, deadline=deadline):
            committed.extend(values)
        else:
            aborted.extend(values)
        if n == KILL_AFTER:
            killed = _coordinator(built, transactional_id)
            built.kill(killed)
    producer.flush(10)
    assert killed is not None
    assert _coordinator(built, transactional_id) != killed

    consumer = Consumer(
        {
            "bootstrap.servers": built.bootstrap,
            "group.id": "check-" + uuid.uuid4().hex[:8],
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        read_deadline = time.monotonic() + 30
        while len(seen) < len(committed) and time.monotonic() < read_deadline:
            for message in consumer.consume(100, timeout=1.0):
                if message.error() is None:
                    seen.append(message.value())
        # Anything after the last committed record would show here (an aborted tail).
        for message in consumer.consume(100, timeout=2.0):
            if message.error() is None:
                seen.append(message.value())
    finally:
        consumer.close()
    assert not set(seen) & set(aborted), "a read_committed consumer saw aborted records"
    assert len(seen) == len(set(seen)), "a committed record was read twice"
    assert sorted(seen) == sorted(committed)

    _check_stale_coordinator_fenced(built, topic, transactional_id)


def _check_stale_coordinator_fenced(built, topic: str, transactional_id: str) -> None:
    """The killed coordinator's epoch is stale: a marker carrying it (what it would send
    had it only been frozen) is refused TRANSACTION_COORDINATOR_FENCED (52) by a
    partition that took the new coordinator's markers."""
    from kafkette.wire.apis import ApiKey

    coordinator = _coordinator(built, transactional_id)
    described = raw_wire.call(
        built.brokers[coordinator].address,
        ApiKey.DESCRIBE_TRANSACTIONS,
        0,
        {"transactional_ids": [transactional_id]},
        "coordinator-test",
    )["transaction_states"][0]
    assert described["error_code"] == 0
    leader = built.wait_leader(topic, 0)
    marker = {
        "producer_id": described["producer_id"],
        "producer_epoch": described["producer_epoch"],
        "transaction_result": False,
        "topics": [{"name": topic, "partition_indexes": [0]}],
        "coordinator_epoch": 0,  # the first coordinator's: __transaction_state's epoch 0
    }
    answer = raw_wire.call(
        built.brokers[leader].address, ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [marker]},
        "coordinator-test",
    )
    assert answer["markers"][0]["topics"][0]["partitions"][0]["error_code"] == 52


def test_consume_transform_produce_survives_coordinator_kill(cluster) -> None:
    """Exactly-once processing (read_committed input, transactional output, the group's
    offsets committed inside each transaction) across a kill -9 of the transaction
    coordinator: its markers reach the output partitions' leaders and the group's
    ``__consumer_offsets`` partition (on other brokers: WriteTxnMarkers), so every input
    record appears exactly once in the committed output."""
    built = cluster(3, configs=CONFIGS)
    source = "in-" + uuid.uuid4().hex[:8]
    sink = "out-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    for future in admin.create_topics(
        [NewTopic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"}) for t in (source, sink)],
        request_timeout=30,
    ).values():
        future.result(30)
    inputs = [f"in-{i:04d}".encode() for i in range(120)]
    seed = Producer({"bootstrap.servers": built.bootstrap, "acks": "all"})
    for i, value in enumerate(inputs):
        seed.produce(source, value, partition=i % PARTITIONS)
    assert seed.flush(30) == 0

    transactional_id = "eos-tx-" + uuid.uuid4().hex[:8]
    group = _group_coordinated_elsewhere(built, transactional_id)
    consumer = Consumer(
        {
            "bootstrap.servers": built.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 10000,
        }
    )
    consumer.subscribe([source])
    producer = Producer(
        {
            "bootstrap.servers": built.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60000,
        }
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    _retrying(producer.init_transactions, deadline)
    done = 0
    killed = None
    try:
        while done < len(inputs):
            assert time.monotonic() < deadline, f"processed {done} of {len(inputs)}"
            messages = [m for m in consumer.consume(10, timeout=1.0) if m.error() is None]
            if not messages:
                continue
            try:
                producer.begin_transaction()
                for message in messages:
                    producer.produce(sink, b"out-" + message.value(), partition=message.partition())
                positions = consumer.position(consumer.assignment())
                send_offsets = partial(
                    producer.send_offsets_to_transaction,
                    positions,
                    consumer.consumer_group_metadata(),
                )
                _retrying(send_offsets, deadline)
                _retrying(producer.commit_transaction, deadline)
                done += len(messages)
            except KafkaException as exc:
                error = exc.args[0]
                assert not error.fatal(), f"fatal transactional error: {error}"
                assert error.txn_requires_abort(), f"unexpected transactional error: {error}"
                _retrying(producer.abort_transaction, deadline)
                # Back to the group's committed offsets: the batch is processed again.
                for tp in consumer.committed(consumer.assignment(), timeout=15):
                    if tp.offset >= 0:
                        consumer.seek(tp)
                continue
            if killed is None and done >= len(inputs) // 3:
                killed = _coordinator(built, transactional_id)
                built.kill(killed)
    finally:
        _close(consumer)
    assert killed is not None

    reader = Consumer(
        {
            "bootstrap.servers": built.bootstrap,
            "group.id": "check-" + uuid.uuid4().hex[:8],
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    reader.subscribe([sink])
    outputs: list[bytes] = []
    try:
        read_deadline = time.monotonic() + 30
        while len(outputs) < len(inputs) and time.monotonic() < read_deadline:
            outputs.extend(m.value() for m in reader.consume(100, timeout=1.0) if m.error() is None)
        outputs.extend(m.value() for m in reader.consume(100, timeout=2.0) if m.error() is None)
    finally:
        _close(reader)
    assert len(outputs) == len(set(outputs)), "an input record was processed twice"
    assert sorted(outputs) == sorted(b"out-" + v for v in inputs)
