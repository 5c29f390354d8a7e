"""The transaction APIs on a raw socket: Kafka's error codes for each wrong request.

Real clients never send most of these; the Java client and the admin tools
rely on the exact codes (PRODUCER_FENCED is fatal, CONCURRENT_TRANSACTIONS is
retried, INVALID_PRODUCER_ID_MAPPING makes it re-init), so they are pinned here.
"""

from __future__ import annotations

import time
import uuid

import pytest
from kafka.protocol.admin import ListTransactionsRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    WriteTxnMarkersRequest,
)

from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    decode_batches,
    parse_control_record,
)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_ABORTABLE = 120
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90


def _init(client, transactional_id: str, producer_id: int = -1, epoch: int = -1,
          timeout_ms: int = 60000, version: int = 4) -> tuple[int, int, int]:
    response = client.request(
        InitProducerIdRequest(
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            producer_id=producer_id,
            producer_epoch=epoch,
        ),
        version,
    )
    return response.error_code, response.producer_id, response.producer_epoch


def _add(client, transactional_id: str, producer_id: int, epoch: int,
         topics: dict[str, list[int]], version: int = 3) -> dict[tuple[str, int], int]:
    topic_class = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    response = client.request(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer_id,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[
                topic_class(name=name, partitions=indexes) for name, indexes in topics.items()
            ],
        ),
        version,
    )
    return {
        (topic.name, p.partition_index): p.partition_error_code
        for topic in response.results_by_topic_v3_and_below
        for p in topic.results_by_partition
    }


def _end(client, transactional_id: str, producer_id: int, epoch: int, commit: bool,
         version: int = 3) -> int:
    response = client.request(
        EndTxnRequest(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=epoch,
            committed=commit,
        ),
        version,
    )
    return response.error_code


@pytest.fixture
def client(broker, raw_client):
    return raw_client(broker.bootstrap)


@pytest.fixture
def txn_id() -> str:
    return f"raw-{uuid.uuid4().hex[:10]}"


def test_find_coordinator_for_transactions(broker, client, txn_id):
    response = client.request(
        FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id, ""]), 4
    )
    found, empty = response.coordinators
    assert (found.error_code, found.node_id, found.port) == (
        NONE, broker.broker.node_id, broker.broker.advertised.port,
    )
    assert empty.error_code == INVALID_REQUEST
    assert broker.broker.topics.metadata("__transaction_state").partitions == 50


def test_init_producer_id_refuses_bad_requests(client):
    assert _init(client, "")[0] == INVALID_REQUEST
    assert _init(client, "t", timeout_ms=0)[0] == INVALID_TRANSACTION_TIMEOUT
    assert _init(client, "t", timeout_ms=900_001)[0] == INVALID_TRANSACTION_TIMEOUT


def test_init_producer_id_bumps_fences_and_answers_retries(client, txn_id):
    error, producer_id, epoch = _init(client, txn_id)
    assert (error, epoch) == (NONE, 0)
    assert _init(client, txn_id, producer_id, 0) == (NONE, producer_id, 1)  # KIP-360 bump
    assert _init(client, txn_id, producer_id, 0) == (NONE, producer_id, 1)  # its retry
    assert _init(client, txn_id, producer_id, 7)[0] == PRODUCER_FENCED
    assert _init(client, txn_id, producer_id + 1000, 1)[0] == PRODUCER_FENCED
    assert _init(client, txn_id) == (NONE, producer_id, 2)  # a new instance: bump


def test_add_partitions_and_end_txn_errors(client, txn_id, create_topic, broker):
    topic = create_topic(broker.bootstrap, partitions=2)
    assert _add(client, txn_id, 1, 0, {topic: [0]}) == {(topic, 0): INVALID_PRODUCER_ID_MAPPING}
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _end(client, txn_id, producer_id, epoch, True) == INVALID_TXN_STATE  # nothing open
    assert _add(client, txn_id, producer_id, epoch + 1, {topic: [0]}) == {
        (topic, 0): PRODUCER_FENCED
    }
    assert _add(client, txn_id, producer_id + 1, epoch, {topic: [0]}) == {
        (topic, 0): INVALID_PRODUCER_ID_MAPPING
    }
    assert _add(client, txn_id, producer_id, epoch, {topic: [0], "no-such-topic": [0]}) == {
        (topic, 0): OPERATION_NOT_ATTEMPTED,
        ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert _add(client, txn_id, producer_id, epoch, {topic: [0, 1]}) == {
        (topic, 0): NONE, (topic, 1): NONE,
    }
    assert _add(client, txn_id, producer_id, epoch, {topic: [1]}) == {(topic, 1): NONE}
    assert _end(client, txn_id, producer_id, epoch + 1, True) == PRODUCER_FENCED
    assert _end(client, txn_id, producer_id, epoch, True) == NONE
    deadline = time.monotonic() + 30
    coordinator = broker.broker.transactions
    while broker.on_loop(lambda: coordinator.get(txn_id)).state.display_name != "CompleteCommit":
        assert time.monotonic() < deadline, "the commit did not complete"
        time.sleep(0.05)
    assert _end(client, txn_id, producer_id, epoch, True) == NONE  # a retry of the commit
    assert _end(client, txn_id, producer_id, epoch, False) == INVALID_TXN_STATE


def test_versions_before_kip_588_hear_invalid_producer_epoch(client, txn_id, create_topic, broker):
    """PRODUCER_FENCED exists from InitProducerId v4 and AddPartitionsToTxn/EndTxn v2;
    older requests get INVALID_PRODUCER_EPOCH, as Kafka answers them (aiokafka speaks
    EndTxn v1 and fails with UnknownError on a code it does not know)."""
    topic = create_topic(broker.bootstrap, partitions=1)
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _init(client, txn_id, producer_id, epoch + 5, version=3)[0] == INVALID_PRODUCER_EPOCH
    assert _init(client, txn_id, producer_id, epoch + 5, version=4)[0] == PRODUCER_FENCED
    fenced = epoch + 1
    assert _add(client, txn_id, producer_id, fenced, {topic: [0]}, version=1) == {
        (topic, 0): INVALID_PRODUCER_EPOCH
    }
    assert _add(client, txn_id, producer_id, fenced, {topic: [0]}, version=2) == {
        (topic, 0): PRODUCER_FENCED
    }
    assert _end(client, txn_id, producer_id, fenced, True, version=1) == INVALID_PRODUCER_EPOCH
    assert _end(client, txn_id, producer_id, fenced, True, version=2) == PRODUCER_FENCED


def test_verify_only_answers_per_partition(client, txn_id, create_topic, broker):
    topic = create_topic(broker.bootstrap, partitions=2)
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}
    transaction = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    response = client.request(
        AddPartitionsToTxnRequest(
            transactions=[
                transaction(
                    transactional_id=txn_id,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    verify_only=True,
                    topics=[transaction.AddPartitionsToTxnTopic(name=topic, partitions=[0, 1])],
                )
            ]
        ),
        4,
    )
    (result,) = response.results_by_transaction
    codes = {
        p.partition_index: p.partition_error_code
        for t in result.topic_results
        for p in t.results_by_partition
    }
    # Kafka's coordinator: a partition the transaction did not add is TRANSACTION_ABORTABLE
    # (the leader turns it into INVALID_TXN_STATE for clients older than Produce 11).
    assert codes == {0: NONE, 1: TRANSACTION_ABORTABLE}
    assert _end(client, txn_id, producer_id, epoch, False) == NONE


def test_write_txn_markers_appends_a_marker_per_partition(client, create_topic, broker):
    """What ``kafka-transactions.sh abort`` sends for a hanging transaction."""
    topic = create_topic(broker.bootstrap, partitions=1)
    marker = WriteTxnMarkersRequest.WritableTxnMarker
    response = client.request(
        WriteTxnMarkersRequest(
            markers=[
                marker(
                    producer_id=4242,
                    producer_epoch=3,
                    transaction_result=False,
                    coordinator_epoch=0,
                    topics=[
                        marker.WritableTxnMarkerTopic(name=topic, partition_indexes=[0, 5])
                    ],
                )
            ]
        ),
        1,
    )
    (result,) = response.markers
    assert result.producer_id == 4242
    codes = {p.partition_index: p.error_code for p in result.topics[0].partitions}
    assert codes == {0: NONE, 5: UNKNOWN_TOPIC_OR_PARTITION}
    log = broker.broker.topics.partition(topic, 0).log
    ((header, records),) = decode_batches(log.read(0, 1 << 20).to_bytes())
    assert header.is_control and (header.producer_id, header.producer_epoch) == (4242, 3)
    assert parse_control_record(records[0]) == (ControlRecordType.ABORT, 0)


def test_markers_from_a_coordinator_epoch_above_ours_are_refused(
    client, txn_id, create_topic, broker, raw_client
):
    """A WriteTxnMarkers with a coordinator epoch no coordinator here has would be
    remembered by the partition and fence the real coordinator's markers: the committed
    transaction would stay invisible to read_committed for ever. It is refused, and the
    producer's next transaction commits and moves the LSO."""
    topic = create_topic(broker.bootstrap, partitions=1)
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    marker = WriteTxnMarkersRequest.WritableTxnMarker
    response = client.request(
        WriteTxnMarkersRequest(
            markers=[
                marker(
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    transaction_result=False,
                    coordinator_epoch=5,
                    topics=[marker.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                )
            ]
        ),
        1,
    )
    assert response.markers[0].topics[0].partitions[0].error_code == INVALID_REQUEST
    log = broker.broker.topics.partition(topic, 0).log
    assert log.log_end_offset == 0
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}
    batch = build_batch(
        [Record(0, 0, b"k", b"v")], producer_id=producer_id, producer_epoch=epoch,
        base_sequence=0, transactional=True,
    )
    data = ProduceRequest.TopicProduceData
    produced = client.request(
        ProduceRequest(
            transactional_id=txn_id, acks=-1, timeout_ms=10_000,
            topic_data=[
                data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])
            ],
        ),
        9,
    )
    assert produced.responses[0].partition_responses[0].error_code == NONE
    assert _end(client, txn_id, producer_id, epoch, True) == NONE
    deadline = time.monotonic() + 30
    while broker.on_loop(lambda: log.last_stable_offset) != 2:
        assert time.monotonic() < deadline, "the commit marker never moved the LSO"
        time.sleep(0.05)


def test_idempotent_init_producer_id_never_hands_out_a_sent_id(client, txn_id):
    """Without a transactional id, InitProducerId always allocates a new producer id (as
    Kafka's coordinator does), even when the request names an existing id and epoch: a
    client must not be able to take over (and fence) a transactional producer's id."""
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    response = client.request(
        InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=-1,
            producer_id=producer_id, producer_epoch=epoch,
        ),
        4,
    )
    assert response.error_code == NONE
    assert response.producer_id not in (-1, producer_id)
    assert response.producer_epoch == 0


def test_a_new_instance_fences_an_ongoing_transaction(client, txn_id, create_topic, broker):
    """InitProducerId during a transaction: answered CONCURRENT_TRANSACTIONS while the old
    epoch's transaction is aborted, then the next epoch but one; the old epoch's produce is
    INVALID_PRODUCER_EPOCH (Kafka's translation of the coordinator's PRODUCER_FENCED)."""
    topic = create_topic(broker.bootstrap, partitions=1)
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}
    assert _init(client, txn_id)[0] == CONCURRENT_TRANSACTIONS
    deadline = time.monotonic() + 30
    while (answer := _init(client, txn_id))[0] == CONCURRENT_TRANSACTIONS:
        assert time.monotonic() < deadline, "the fencing abort did not complete"
        time.sleep(0.05)
    assert answer == (NONE, producer_id, epoch + 2)
    batch = build_batch(
        [Record(0, 0, None, b"zombie")],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0,
        transactional=True,
    )
    data = ProduceRequest.TopicProduceData
    response = client.request(
        ProduceRequest(
            transactional_id=txn_id,
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])
            ],
        ),
        9,
    )
    assert response.responses[0].partition_responses[0].error_code == INVALID_PRODUCER_EPOCH
    log = broker.broker.topics.partition(topic, 0).log
    ((header, records),) = decode_batches(log.read(0, 1 << 20).to_bytes())
    assert (header.is_control, header.producer_epoch) == (True, epoch + 1)
    assert parse_control_record(records[0])[0] == ControlRecordType.ABORT


def test_list_transactions_duration_filter(client, txn_id, create_topic, broker):
    topic = create_topic(broker.bootstrap, partitions=1)
    error, producer_id, epoch = _init(client, txn_id)
    assert error == NONE
    assert _add(client, txn_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): NONE}

    def listed(duration_ms: int) -> set[str]:
        response = client.request(
            ListTransactionsRequest(
                state_filters=["Ongoing"], producer_id_filters=[producer_id],
                duration_filter=duration_ms,
            ),
            1,
        )
        assert response.error_code == NONE
        return {s.transactional_id for s in response.transaction_states}

    assert listed(0) == {txn_id}
    assert listed(3_600_000) == set()  # open for less than an hour
    assert listed(-1) == {txn_id}
    assert _end(client, txn_id, producer_id, epoch, False) == NONE
