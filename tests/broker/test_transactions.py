"""Transactions with real clients against an in-process broker: the coordinator's protocol.

confluent-kafka (librdkafka) drives InitProducerId, AddPartitionsToTxn, Produce
and EndTxn; the assertions read the partition logs themselves for the COMMIT
and ABORT control batches the coordinator writes, and ask the admin APIs
(ListTransactions, DescribeTransactions, DescribeProducers) over the wire.
Whether read_committed consumers skip aborted data is the log's part (LSO,
abort index) and is tested with it.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaException, Producer
from kafka.protocol.admin import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.producer import ProduceRequest

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    decode_batches,
    parse_control_record,
)

TIMEOUT = 30


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory):
    """A broker whose timed-out transactions are aborted within about a second."""
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("txn-data"),
        configs={
            "num.partitions": "3",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
        },
    )
    try:
        yield embedded
    finally:
        embedded.stop(timeout=30)


def _producer(bootstrap: str, transactional_id: str, **extra: object) -> Producer:
    config = {
        "bootstrap.servers": bootstrap,
        "transactional.id": transactional_id,
        "linger.ms": 5,
    }
    config.update(extra)
    return Producer(config)


def _batches(embedded: EmbeddedBroker, topic: str, index: int) -> list:
    """(header, records) of every batch in one partition's log."""
    partition = embedded.broker.topics.partition(topic, index)
    assert partition is not None
    data = partition.log.read(0, 64 * 1024 * 1024).to_bytes()
    return decode_batches(data)


def _markers(embedded: EmbeddedBroker, topic: str, index: int) -> list[tuple[int, int, int]]:
    """(marker type, producer id, producer epoch) of each control batch, in log order."""
    found = []
    for header, records in _batches(embedded, topic, index):
        if header.is_control:
            kind, _epoch = parse_control_record(records[0])
            found.append((int(kind), header.producer_id, header.producer_epoch))
    return found


def _settled_markers(embedded: EmbeddedBroker, topic: str, index: int, count: int) -> list:
    """The markers once ``count`` are there: EndTxn is answered when the Prepare state is
    persisted; the markers follow (Kafka's order), so readers wait for them."""
    _wait_for(lambda: len(_markers(embedded, topic, index)) >= count, f"{count} markers")
    return _markers(embedded, topic, index)


def _data_values(embedded: EmbeddedBroker, topic: str, index: int) -> list[bytes]:
    return [
        r.value
        for header, records in _batches(embedded, topic, index)
        if not header.is_control
        for r in records
    ]


def _wait_for(predicate, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _open_transaction(
    bootstrap: str, transactional_id: str, topic: str, value: bytes, partition: int,
    **extra: object,
) -> Producer:
    """A transactional producer whose transaction is open with ``value`` written to
    ``partition`` (flushed, so the broker holds it, uncommitted): the start of every
    test about what ends a transaction (abort, fencing, timeout, admin listing)."""
    producer = _producer(bootstrap, transactional_id, **extra)
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=value, partition=partition)
    producer.flush(TIMEOUT)
    return producer


def _txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:10]}"


def test_commit_writes_a_commit_marker_in_every_partition(txn_broker, create_topic):
    topic = create_topic(txn_broker.bootstrap, partitions=3)
    producer = _producer(txn_broker.bootstrap, _txn_id())
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, value=b"c%d" % i, partition=i % 2)
    producer.commit_transaction(TIMEOUT)

    for index in (0, 1):
        assert sorted(_data_values(txn_broker, topic, index)) == [
            b"c%d" % i for i in range(6) if i % 2 == index
        ]
        markers = _settled_markers(txn_broker, topic, index, 1)
        assert [m[0] for m in markers] == [int(ControlRecordType.COMMIT)]
    assert _batches(txn_broker, topic, 2) == []  # not in the transaction: no marker


def test_abort_then_commit_with_the_same_producer(txn_broker, create_topic):
    topic = create_topic(txn_broker.bootstrap, partitions=1)
    producer = _open_transaction(txn_broker.bootstrap, _txn_id(), topic, b"aborted", 0)
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed", partition=0)
    producer.commit_transaction(TIMEOUT)

    markers = _settled_markers(txn_broker, topic, 0, 2)
    assert [m[0] for m in markers] == [int(ControlRecordType.ABORT), int(ControlRecordType.COMMIT)]
    assert _data_values(txn_broker, topic, 0) == [b"aborted", b"committed"]
    # Both markers from the same producer id and epoch: no fencing on a plain abort.
    assert markers[0][1:] == markers[1][1:]


def test_a_new_instance_fences_the_zombie_and_aborts_its_transaction(txn_broker, create_topic):
    topic = create_topic(txn_broker.bootstrap, partitions=1)
    transactional_id = _txn_id()
    zombie = _open_transaction(txn_broker.bootstrap, transactional_id, topic, b"zombie", 0)

    successor = _producer(txn_broker.bootstrap, transactional_id)
    successor.init_transactions(TIMEOUT)  # fences the zombie, aborts its transaction
    markers = _markers(txn_broker, topic, 0)
    assert [m[0] for m in markers] == [int(ControlRecordType.ABORT)]

    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=0)
    successor.commit_transaction(TIMEOUT)

    zombie.produce(topic, value=b"late", partition=0)
    with pytest.raises(KafkaException) as refused:
        zombie.commit_transaction(TIMEOUT)
    assert refused.value.args[0].fatal() or refused.value.args[0].txn_requires_abort()
    assert b"late" not in _data_values(txn_broker, topic, 0)
    markers = _settled_markers(txn_broker, topic, 0, 2)
    assert [m[0] for m in markers] == [int(ControlRecordType.ABORT), int(ControlRecordType.COMMIT)]
    abort_epoch, commit_epoch = markers[0][2], markers[1][2]
    assert commit_epoch > abort_epoch  # the successor's epoch is above the fenced one


def test_a_transaction_past_its_timeout_is_aborted(txn_broker, create_topic):
    topic = create_topic(txn_broker.bootstrap, partitions=1)
    transactional_id = _txn_id()
    producer = _open_transaction(
        txn_broker.bootstrap, transactional_id, topic, b"slow", 0,
        **{"transaction.timeout.ms": 1000},
    )
    _wait_for(lambda: _markers(txn_broker, topic, 0), "the coordinator's abort marker")
    assert [m[0] for m in _markers(txn_broker, topic, 0)] == [int(ControlRecordType.ABORT)]
    with pytest.raises(KafkaException):
        producer.commit_transaction(TIMEOUT)

    # The coordinator completes the abort once its markers are written: a moment after the
    # marker is readable (PrepareAbort until then, as in Kafka).
    def completed() -> bool:
        metadata = txn_broker.broker.transactions.get(transactional_id)
        return metadata is not None and metadata.state.display_name == "CompleteAbort"

    _wait_for(completed, "the transaction's CompleteAbort")


def test_transactional_produce_to_a_partition_not_in_the_transaction_is_refused(
    txn_broker, create_topic, raw_client
):
    topic = create_topic(txn_broker.bootstrap, partitions=1)
    transactional_id = _txn_id()
    producer = _producer(txn_broker.bootstrap, transactional_id)
    producer.init_transactions(TIMEOUT)
    metadata = txn_broker.broker.transactions.get(transactional_id)
    assert metadata is not None
    client = raw_client(txn_broker.bootstrap)
    batch = build_batch(
        [Record(0, 0, None, b"sneaky")],
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        base_sequence=0,
        transactional=True,
    )
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])
        ],
    )
    response = client.request(request, 9)
    assert response.responses[0].partition_responses[0].error_code == 48  # INVALID_TXN_STATE
    # Without a transactional id, transactional batches are refused outright, as Kafka.
    request.transactional_id = None
    response = client.request(request, 9)
    code = response.responses[0].partition_responses[0].error_code
    assert code == 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert _batches(txn_broker, topic, 0) == []


def test_admin_apis_list_and_describe(txn_broker, create_topic, raw_client):
    topic = create_topic(txn_broker.bootstrap, partitions=2)
    transactional_id = _txn_id()
    producer = _open_transaction(txn_broker.bootstrap, transactional_id, topic, b"x", 1)
    client = raw_client(txn_broker.bootstrap)

    listed = client.request(
        ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[]), 0
    )
    assert listed.error_code == 0
    ongoing = {e.transactional_id: e.transaction_state for e in listed.transaction_states}
    assert ongoing.get(transactional_id) == "Ongoing"

    described = client.request(
        DescribeTransactionsRequest(transactional_ids=[transactional_id, "no-such-id"]), 0
    )
    known, unknown = described.transaction_states
    assert (known.error_code, known.transactional_id, known.transaction_state) == (
        0, transactional_id, "Ongoing",
    )
    assert [(t.topic, list(t.partitions)) for t in known.topics] == [(topic, [1])]
    assert unknown.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND

    producers = client.request(
        DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[1, 7])]
        ),
        0,
    )
    present, missing = producers.topics[0].partitions
    assert missing.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert [(p.producer_id, p.producer_epoch) for p in present.active_producers] == [
        (known.producer_id, known.producer_epoch)
    ]

    producer.commit_transaction(TIMEOUT)
    listed = client.request(
        ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[]), 0
    )
    assert list(listed.unknown_state_filters) == ["Bogus"]
    assert transactional_id not in {e.transactional_id for e in listed.transaction_states}
