"""Transactions v2 (KIP-890 part 2): what Kafka 4.x serves with transaction.version 2.

kafkette finalizes transaction.version 2, as Kafka 4.0 does by default, so Kafka's Java
clients 4.x end every transaction with EndTxn v5 (the coordinator bumps the epoch and
answers it) and send no AddPartitionsToTxn/AddOffsetsToTxn: Produce 12+ and
TxnOffsetCommit 5 have the partitions added. Checked here:

- the Java client 4.0 (the reference distribution's jars) and 4.3 (``tests/kafka_clients_43``)
  over sockets (``tests/java_txn_loop``: ``tests/java/TxnLoop.java`` in the JVM's source-file
  launcher): commits
  and aborts with ``sendOffsetsToTransaction``; a read_committed consumer sees exactly the
  committed records, the group offset is the last commit's, the epoch goes up by one per
  transaction (DescribeTransactions, DescribeProducers), and the broker saw the TV2
  requests only;
- EndTxn v5 and Produce 12 on the raw wire, for the answers to retries, late and fenced
  requests, as the reference Kafka 4.0.0 answers the same requests.

The v1 clients (librdkafka, kafka-python, aiokafka) keep their protocol: the other
``test_transactions*.py`` files.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator

import pytest

from bench.harness.raw_wire import WireConnection
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.apis import ApiKey
from kafkette.wire.records import Record, build_batch
from tests.java_txn_loop import committed_offset, java_classpath, read_committed, run_txn_loop

TRANSACTIONS = 7  # aborts at 2 and 5, the last one commits (markers in every partition)
PER_TRANSACTION = 5

NONE = 0
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
CONCURRENT_TRANSACTIONS = 51
PRODUCER_FENCED = 90
TRANSACTION_ABORTABLE = 120


@pytest.fixture(scope="module")
def tv2_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """A broker of its own, with request counters on (which versions clients used)."""
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("tv2-data"),
        configs={"num.partitions": "3", "transaction.state.log.num.partitions": "5",
                 "offsets.topic.num.partitions": "5"},
    )  # fmt: skip
    embedded.broker.request_observer.enable_metrics()
    try:
        yield embedded
    finally:
        embedded.stop(timeout=30)


def _wait_complete(bootstrap: str, txn_id: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    with WireConnection(bootstrap) as connection:
        while _describe(connection, txn_id)["transaction_state"] not in (
            "CompleteCommit",
            "CompleteAbort",
        ):
            assert time.monotonic() < deadline, f"{txn_id}: markers not written in time"
            time.sleep(0.05)


def _producers(bootstrap: str, topic: str, partition: int) -> list[dict]:
    with WireConnection(bootstrap) as connection:
        body = {"topics": [{"name": topic, "partition_indexes": [partition]}]}
        answer = connection.request(ApiKey.DESCRIBE_PRODUCERS, 0, body)
    [part] = answer["topics"][0]["partitions"]
    assert part["error_code"] == NONE
    return part["active_producers"]


@pytest.mark.parametrize("client", ["4.0", "4.3"])
def test_java_client_commits_and_aborts_with_an_epoch_bump_each(
    tv2_broker, create_topic, client
) -> None:
    classpath = java_classpath(client)
    bootstrap = tv2_broker.bootstrap
    topic = create_topic(bootstrap, partitions=3)
    txn_id = f"tv2-{client}-{uuid.uuid4().hex[:8]}"
    group = f"tv2-group-{uuid.uuid4().hex[:8]}"
    stats = tv2_broker.broker.request_observer.stats
    assert stats is not None
    before = dict(stats.requests)

    ends = run_txn_loop(classpath, bootstrap, topic, txn_id, group, TRANSACTIONS, PER_TRANSACTION)
    _wait_complete(bootstrap, txn_id)  # the last end's markers are written after its answer

    assert [e["txn"] for e in ends] == list(range(TRANSACTIONS))
    # One epoch bump per transaction (InitProducerId gave epoch 0), one producer id.
    assert [e["epoch"] for e in ends] == list(range(1, TRANSACTIONS + 1))
    assert len({e["producer_id"] for e in ends}) == 1
    committed = [e["txn"] for e in ends if e["committed"]]
    expected = sorted(f"t{i}-{j}" for i in committed for j in range(PER_TRANSACTION))
    assert sorted(read_committed(bootstrap, topic, 3)) == expected
    assert committed_offset(bootstrap, group, topic) == committed[-1] + 1
    # Each partition's producer state carries the last marker's (bumped) epoch.
    for partition in range(3):
        [producer] = [
            p
            for p in _producers(bootstrap, topic, partition)
            if p["producer_id"] == ends[0]["producer_id"]
        ]
        assert producer["producer_epoch"] == TRANSACTIONS
        assert producer["current_txn_start_offset"] == -1

    used = {
        key: n - before.get(key, 0) for key, n in stats.requests.items() if n != before.get(key, 0)
    }
    assert used.get(("EndTxn", 5)) == TRANSACTIONS
    assert used.get(("TxnOffsetCommit", 5), 0) >= TRANSACTIONS
    assert not [key for key in used if key[0] in ("AddPartitionsToTxn", "AddOffsetsToTxn")]
    produce_version = 12 if client == "4.0" else 13
    assert used.get(("Produce", produce_version), 0) >= len(committed)
    assert not [key for key in used if key[0] == "Produce" and key[1] < 12]


# --- the raw wire: EndTxn v5 and Produce 12 answers -----------------------------------------


def _init(connection: WireConnection, txn_id: str) -> tuple[int, int]:
    body = {"transactional_id": txn_id, "transaction_timeout_ms": 60_000,
            "producer_id": -1, "producer_epoch": -1}  # fmt: skip
    answer = connection.request(ApiKey.INIT_PRODUCER_ID, 5, body)
    assert answer["error_code"] == NONE
    return answer["producer_id"], answer["producer_epoch"]


def _end(
    connection: WireConnection, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 5
) -> tuple[int, int, int]:
    body = {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
            "committed": commit}  # fmt: skip
    for _ in range(100):
        answer = connection.request(ApiKey.END_TXN, version, body)
        if answer["error_code"] != CONCURRENT_TRANSACTIONS:
            break
    return answer["error_code"], answer["producer_id"], answer["producer_epoch"]


def _produce(
    connection: WireConnection,
    txn_id: str,
    topic: str,
    pid: int,
    epoch: int,
    sequence: int,
    version: int = 12,
) -> int:
    batch = build_batch([Record(0, 0, None, b"v")], producer_id=pid, producer_epoch=epoch,
                        base_sequence=sequence, transactional=True)  # fmt: skip
    body = {"transactional_id": txn_id, "acks": -1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
    answer = connection.request(ApiKey.PRODUCE, version, body)
    return answer["responses"][0]["partition_responses"][0]["error_code"]


def _describe(connection: WireConnection, txn_id: str) -> dict:
    answer = connection.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [txn_id]})
    return answer["transaction_states"][0]


def check_end_txn_v5_answers(bootstrap: str, topic: str) -> None:
    """The sequence, with the answers the reference Kafka 4.0.0 gives (measured with this
    very function against ``kafka-ref``)."""
    txn_id = f"raw-tv2-{uuid.uuid4().hex[:8]}"
    with WireConnection(bootstrap) as c:
        pid, epoch = _init(c, txn_id)
        assert epoch == 0
        # An idle id: commit is refused, abort bumps (TV2 clients always end).
        assert _end(c, txn_id, pid, 0, commit=True) == (INVALID_TXN_STATE, -1, -1)
        assert _end(c, txn_id, pid, 0, commit=False) == (NONE, pid, 1)
        # A retry (the epoch before the bump) of that abort: answered again, no bump.
        assert _end(c, txn_id, pid, 0, commit=False) == (NONE, pid, 1)
        assert _end(c, txn_id, pid, 0, commit=True) == (INVALID_TXN_STATE, -1, -1)
        assert _end(c, txn_id, pid, 1, commit=True) == (INVALID_TXN_STATE, -1, -1)
        assert _end(c, txn_id, pid, 7, commit=False) == (PRODUCER_FENCED, -1, -1)
        assert _end(c, txn_id, pid + 1000, 1, commit=False) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)
        # Produce 12 adds the partition (no AddPartitionsToTxn); the old epoch is fenced.
        assert _produce(c, txn_id, topic, pid, 0, 0) == INVALID_PRODUCER_EPOCH
        assert _produce(c, txn_id, topic, pid, 1, 0) == NONE
        state = _describe(c, txn_id)
        assert (state["transaction_state"], state["producer_epoch"]) == ("Ongoing", 1)
        assert state["topics"] == [{"topic": topic, "partitions": [0]}]
        # Produce 11 is a v1 client's: a partition not added is TRANSACTION_ABORTABLE.
        assert _produce(c, txn_id, topic, pid, 1, 1, version=11) == NONE  # added already
        assert _end(c, txn_id, pid, 1, commit=True) == (NONE, pid, 2)
        assert _end(c, txn_id, pid, 1, commit=True) == (NONE, pid, 2)  # retried
        assert _end(c, txn_id, pid, 2, commit=True) == (INVALID_TXN_STATE, -1, -1)
        state = _describe(c, txn_id)
        assert (state["transaction_state"], state["producer_epoch"]) == ("CompleteCommit", 2)
        # The epoch of the last transaction is fenced where its marker was written.
        assert _produce(c, txn_id, topic, pid, 1, 2) == INVALID_PRODUCER_EPOCH
        # A v1 client's Produce (11) to a partition it did not add: TRANSACTION_ABORTABLE
        # (INVALID_TXN_STATE below 11), as Kafka's verification answers it.
        assert _produce(c, txn_id, topic, pid, 2, 0, version=11) == TRANSACTION_ABORTABLE
        assert _produce(c, txn_id, topic, pid, 2, 0, version=10) == INVALID_TXN_STATE


def test_end_txn_v5_and_produce_12_answer_as_kafka(tv2_broker, create_topic) -> None:
    topic = create_topic(tv2_broker.bootstrap, partitions=1)
    check_end_txn_v5_answers(tv2_broker.bootstrap, topic)


def _init_again(connection: WireConnection, txn_id: str) -> tuple[int, int, int]:
    """InitProducerId without the current producer (a new instance), retried while the
    abort it started completes; (first answer's error, producer id, epoch)."""
    body = {"transactional_id": txn_id, "transaction_timeout_ms": 60_000,
            "producer_id": -1, "producer_epoch": -1}  # fmt: skip
    first = None
    for _ in range(100):
        answer = connection.request(ApiKey.INIT_PRODUCER_ID, 5, body)
        first = answer["error_code"] if first is None else first
        if answer["error_code"] != CONCURRENT_TRANSACTIONS:
            break
        time.sleep(0.05)
    return first, answer["producer_id"], answer["producer_epoch"]


def test_fencing_an_open_tv2_transaction_bumps_once_then_init_bumps(
    tv2_broker, create_topic
) -> None:
    """InitProducerId finding a transaction Ongoing aborts it with the finalized version:
    one epoch bump in the abort (KAFKA-19367: the reference 4.0.0 bumps twice, aborting at
    epoch 2 and answering 3; 4.0.1 and later as here), one more for the new producer."""
    topic = create_topic(tv2_broker.bootstrap, partitions=1)
    txn_id = f"fence-{uuid.uuid4().hex[:8]}"
    with WireConnection(tv2_broker.bootstrap) as c:
        pid, epoch = _init(c, txn_id)
        assert _produce(c, txn_id, topic, pid, epoch, 0) == NONE
        assert _init_again(c, txn_id) == (CONCURRENT_TRANSACTIONS, pid, 2)
        state = _describe(c, txn_id)
        assert (state["transaction_state"], state["producer_epoch"]) == ("Empty", 2)
        # The old producer's epoch is fenced where the abort's marker (epoch 1) went.
        assert _produce(c, txn_id, topic, pid, 0, 1) == INVALID_PRODUCER_EPOCH
        assert _end(c, txn_id, pid, 0, commit=True) == (PRODUCER_FENCED, -1, -1)


def test_tv2_end_at_an_exhausted_epoch_moves_to_a_new_producer_id(tv2_broker, create_topic) -> None:
    """EndTxn v5 at epoch 32766 (Short.MAX_VALUE - 1): the markers carry 32767, the answer
    a new producer id at epoch 0, which the transaction moves to; a retry with the old id
    and epoch is answered the new ones (Kafka's retryOnOverflow)."""
    from dataclasses import replace

    topic = create_topic(tv2_broker.bootstrap, partitions=1)
    txn_id = f"overflow-{uuid.uuid4().hex[:8]}"
    coordinator = tv2_broker.broker.transactions
    with WireConnection(tv2_broker.bootstrap) as c:
        pid, _ = _init(c, txn_id)
        # 32766 transactions take too long: start this id at that epoch (it is idle).
        coordinator._txns[txn_id] = replace(coordinator.get(txn_id), producer_epoch=32766)
        assert _produce(c, txn_id, topic, pid, 32766, 0) == NONE
        error, new_pid, new_epoch = _end(c, txn_id, pid, 32766, commit=True)
        assert (error, new_epoch) == (NONE, 0) and new_pid != pid
        _wait_complete(tv2_broker.bootstrap, txn_id)
        assert _end(c, txn_id, pid, 32766, commit=True) == (NONE, new_pid, 0)
        state = _describe(c, txn_id)
        assert (state["producer_id"], state["producer_epoch"]) == (new_pid, 0)
        [producer] = [p for p in _producers(tv2_broker.bootstrap, topic, 0)
                      if p["producer_id"] == pid]  # fmt: skip
        assert producer["producer_epoch"] == 32767  # the marker's
        assert _produce(c, txn_id, topic, new_pid, 0, 0) == NONE
        assert _end(c, txn_id, new_pid, 0, commit=False) == (NONE, new_pid, 1)


def test_produce_12_answered_concurrent_transactions_logs_no_warning(
    tv2_broker, create_topic, caplog
) -> None:
    """CONCURRENT_TRANSACTIONS is a TV2 Produce's normal answer while the previous
    transaction's markers are written (the client retries): no request-log WARNING and no
    INFO line per refusal. A single node writes its markers within the broker's own
    100 ms retry, so the test holds the coordinator's write open (``_pending``)."""
    from kafkette.broker.transactions.coordinator import TxnState

    topic = create_topic(tv2_broker.bootstrap, partitions=2)
    txn_id = f"busy-{uuid.uuid4().hex[:8]}"
    coordinator = tv2_broker.broker.transactions
    caplog.set_level(logging.INFO, logger="kafkette.request")
    caplog.set_level(logging.DEBUG, logger="kafkette.produce")  # the handler's level: last
    with WireConnection(tv2_broker.bootstrap) as c:
        pid, epoch = _init(c, txn_id)
        tv2_broker.on_loop(
            lambda: coordinator._pending.__setitem__(txn_id, TxnState.PREPARE_COMMIT)
        )
        try:
            assert _produce(c, txn_id, topic, pid, epoch, 0) == CONCURRENT_TRANSACTIONS
        finally:
            tv2_broker.on_loop(lambda: coordinator._pending.pop(txn_id, None))
        assert _produce(c, txn_id, topic, pid, epoch, 0) == NONE  # the client's retry
        assert _end(c, txn_id, pid, epoch, commit=False) == (NONE, pid, epoch + 1)
    refused = [r for r in caplog.records if "CONCURRENT_TRANSACTIONS" in r.getMessage()]
    assert refused, "the refusal is still logged, at DEBUG"
    assert [(r.name, r.levelname) for r in refused] == [("kafkette.produce", "DEBUG")]
