"""A transaction whose commit markers stay pending (issue 34's nemesis run), on one node.

In the nemesis run a partition leader cut off from a follower with ZooKeeper unreachable
held the COMMIT markers of a transaction for 14 s; the librdkafka client had begun the next
transaction meanwhile, got CONCURRENT_TRANSACTIONS for AddPartitionsToTxn/AddOffsetsToTxn,
aborted, and became fatal: its EndTxn(abort) met CompleteCommit (INVALID_TXN_STATE).
Kafka 4.0's coordinator answers each step the same (TransactionCoordinator: a pending
completion is CONCURRENT_TRANSACTIONS, an abort after CompleteCommit INVALID_TXN_STATE);
librdkafka sends that EndTxn because it counts a refused AddPartitionsToTxn as possibly
registered. Here the markers are held by holding the partition's append lock (the lock every
marker is written under), which makes the sequence deterministic: the answers are pinned,
and no state the log records ever goes back (no Ongoing between PrepareCommit and its
CompleteCommit).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise

import pytest
import trio
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.producer import AddOffsetsToTxnRequest

from kafkette.broker.internal_topics import TRANSACTION_STATE_TOPIC, replay_batches
from kafkette.broker.transactions.log_records import decode_key, decode_value
from tests.broker.test_transactions_protocol import (
    CONCURRENT_TRANSACTIONS,
    INVALID_TXN_STATE,
    NONE,
    _add,
    _end,
    _init,
)

DEADLINE_S = 30.0


@contextmanager
def markers_held(broker, topic: str, partition: int = 0) -> Iterator[None]:
    """Hold ``topic``-``partition``'s append lock on the broker's loop (a task that waits
    for the release): every marker for it waits meanwhile, as behind a stalled replica."""
    state: dict[str, trio.Event] = {}

    def spawn() -> None:
        lock = broker.broker.topics.partition(topic, partition).append_lock
        state["release"] = release = trio.Event()

        async def hold() -> None:
            async with lock:
                await release.wait()

        trio.lowlevel.spawn_system_task(hold)

    broker.on_loop(spawn)
    held = broker.broker.topics.partition(topic, partition).append_lock
    _wait(lambda: broker.on_loop(held.locked), "the append lock was not taken")
    try:
        yield
    finally:
        broker.on_loop(state["release"].set)


def _wait(predicate, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _state(broker, transactional_id: str) -> str:
    metadata = broker.on_loop(lambda: broker.broker.transactions.get(transactional_id))
    return metadata.state.display_name


def _history(broker, transactional_id: str) -> list[str]:
    """The states ``__transaction_state`` recorded for the id, in log order."""
    coordinator = broker.broker.transactions
    index = coordinator.partition_for(transactional_id)
    partition = broker.broker.topics.partition(TRANSACTION_STATE_TOPIC, index)
    return [
        decode_value(transactional_id, record.value).state.display_name
        for header, records in replay_batches(partition)
        if not header.is_control
        for record in records
        if record.key is not None
        and record.value is not None
        and decode_key(record.key) == transactional_id
    ]


def _assert_no_regression(history: list[str]) -> None:
    """Every PrepareX is followed by its CompleteX before anything else."""
    for before, after in pairwise(history):
        if before.startswith("Prepare"):
            assert after == before.replace("Prepare", "Complete"), history


def test_requests_during_pending_markers_get_kafkas_answers(
    broker, raw_client, create_topic
) -> None:
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    txn_id = f"held-{uuid.uuid4().hex[:10]}"
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}
    with markers_held(broker, topic):
        assert _end(client, txn_id, producer_id, epoch, True) == NONE  # PrepareCommit written
        assert _state(broker, txn_id) == "PrepareCommit"
        # The next transaction waits (Kafka: pendingState CompleteCommit, retried by clients).
        assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {
            (topic, 0): CONCURRENT_TRANSACTIONS
        }
        offsets = client.request(
            AddOffsetsToTxnRequest(
                transactional_id=txn_id, producer_id=producer_id, producer_epoch=epoch,
                group_id="held-group",
            ),
            3,
        )  # fmt: skip
        assert offsets.error_code == CONCURRENT_TRANSACTIONS
        assert _end(client, txn_id, producer_id, epoch, False) == CONCURRENT_TRANSACTIONS
        assert _end(client, txn_id, producer_id, epoch, True) == CONCURRENT_TRANSACTIONS
        time.sleep(0.3)  # the marker stays pending: nothing above changed the state
        assert _state(broker, txn_id) == "PrepareCommit"
    _wait(lambda: _state(broker, txn_id) == "CompleteCommit", "the commit did not complete")
    # An abort of a transaction that never began (the client's AddPartitionsToTxn was
    # refused) after the commit completed: INVALID_TXN_STATE, as Kafka 4.0 answers.
    assert _end(client, txn_id, producer_id, epoch, False) == INVALID_TXN_STATE
    assert _end(client, txn_id, producer_id, epoch, True) == NONE  # the commit's retry
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}
    assert _end(client, txn_id, producer_id, epoch, False) == NONE
    _wait(lambda: _state(broker, txn_id) == "CompleteAbort", "the abort did not complete")
    assert _history(broker, txn_id) == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit",
        "Ongoing", "PrepareAbort", "CompleteAbort",
    ]  # fmt: skip


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({
        "bootstrap.servers": bootstrap, "transactional.id": transactional_id,
        "transaction.timeout.ms": 10_000, "linger.ms": 0,
    })  # fmt: skip
    producer.init_transactions(DEADLINE_S)
    return producer


def test_librdkafka_abort_after_refused_adds_meets_complete_commit(
    broker, create_topic, read_all
) -> None:
    """The nemesis client's sequence with confluent-kafka: commit (markers held), the next
    transaction's send_offsets_to_transaction fails retriably, abort_transaction waits
    while the markers are pending and then gets the coordinator's INVALID_TXN_STATE (fatal
    to librdkafka, as against Kafka 4.0). Nothing of that transaction reaches a log, the
    coordinator's states never go back, and a new instance of the id goes on."""
    topic = create_topic(broker.bootstrap, partitions=1)
    txn_id = f"held-rdk-{uuid.uuid4().hex[:10]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{txn_id}"})
    producer = _producer(broker.bootstrap, txn_id)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed", partition=0)
    assert producer.flush(DEADLINE_S) == 0
    outcome = "aborted"
    with markers_held(broker, topic):
        producer.commit_transaction(DEADLINE_S)  # answered once PrepareCommit is written
        producer.begin_transaction()
        producer.produce(topic, value=b"never", partition=0)
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction(
                [TopicPartition("input", 0, 1)], consumer.consumer_group_metadata(), 1
            )
        assert refused.value.args[0].retriable(), refused.value
        with pytest.raises(KafkaException) as waiting:
            producer.abort_transaction(1)  # EndTxn(abort): CONCURRENT_TRANSACTIONS, retried
        assert waiting.value.args[0].retriable(), waiting.value
    _wait(lambda: _state(broker, txn_id) == "CompleteCommit", "the commit did not complete")
    try:
        producer.abort_transaction(DEADLINE_S)
    except KafkaException as exc:  # librdkafka sent EndTxn(abort) for refused adds
        error = exc.args[0]
        assert error.fatal() and error.name() == "INVALID_TXN_STATE", error
        outcome = "fatal"
    del producer
    consumer.close()
    successor = _producer(broker.bootstrap, txn_id)
    successor.begin_transaction()
    successor.produce(topic, value=b"after", partition=0)
    successor.commit_transaction(DEADLINE_S)
    assert [r.value for r in read_all(broker.bootstrap, topic, 1)] == [b"committed", b"after"]
    history = _history(broker, txn_id)
    _assert_no_regression(history)
    assert history.count("PrepareCommit") == 2 and "PrepareAbort" not in history, (
        outcome, history,
    )  # fmt: skip
